#!/usr/bin/env bash
# pin_bench built by clang++ instead of g++: the same source, flags and libraries as
# ../shared/bench/build_pin_bench.sh (which it runs, with its compiler swapped). rbdgen compiles
# modules with clang when it is installed (rbdgen/codegen/compiler.py), and Pinocchio's templates
# compiled by clang++ run faster too; bench_c.py --pin-bench PATH times against this build.
# usage: benchmarks/build_pin_bench_clang.sh [OUT]   (default OUT: ../shared/bench/pin_bench_clang)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared="$here/../../shared/bench"
out=${1:-$shared/pin_bench_clang}
script=$(mktemp -d)
trap 'rm -rf "$script"' EXIT
sed 's/^g++ /clang++ /' "$shared/build_pin_bench.sh" > "$script/build_pin_bench.sh"
grep -q '^clang++ ' "$script/build_pin_bench.sh" || { echo "build_pin_bench.sh no longer starts its compile line with g++" >&2; exit 2; }
cp "$shared/pin_bench.cpp" "$script/"
bash "$script/build_pin_bench.sh" "$out"
