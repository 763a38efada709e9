#!/usr/bin/env bash
# Builds pin_extra (pin_extra.cpp) with the flags of ../shared/bench/build_pin_bench.sh, which
# builds pin_bench: the `pin` wheel of the active Python, Debian's Eigen and urdfdom headers.
# usage: build.sh OUT [SOURCE.cpp]   (default: pin_extra.cpp; pin_loops.cpp for bench_loops.py)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT [SOURCE.cpp]}
source=${2:-$here/pin_extra.cpp}
prefix=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/cmeel.prefix
[ -d "$prefix/include/pinocchio" ] || { echo "pin is not installed in this Python: pip install pin" >&2; exit 2; }
if [ ! -d /usr/include/eigen3 ] || [ ! -d /usr/include/urdf_model ]; then
  (apt-get update -qq && apt-get install -y -qq libeigen3-dev liburdfdom-headers-dev) >/dev/null
fi
g++ -O3 -DNDEBUG -std=c++17 \
  -DBOOST_MPL_LIMIT_LIST_SIZE=30 -DBOOST_MPL_LIMIT_VECTOR_SIZE=30 -DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS \
  -DBOOST_FUSION_INVOKE_MAX_ARITY=12 -DPINOCCHIO_WITH_URDFDOM -DPINOCCHIO_URDFDOM_HEADERS_MAJOR_VERSION=3 \
  -DPINOCCHIO_URDFDOM_HEADERS_MINOR_VERSION=0 -DPINOCCHIO_URDFDOM_HEADERS_PATCH_VERSION=0 \
  "$source" -I"$prefix/include" -I"$prefix/include/urdfdom" -I/usr/include/eigen3 \
  -L"$prefix/lib" -lpinocchio_default -lpinocchio_parsers -lurdfdom_model -Wl,-rpath,"$prefix/lib" -o "$out"
echo "built $out"
