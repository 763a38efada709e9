#!/usr/bin/env bash
# The GPU check of issue 47, in two steps.
#   bash benchmarks/gpu_check.sh prepare   # here, on the CPU: the URDFs and wheels the GPU machine lacks, in .gpu/
#   bash benchmarks/gpu_check.sh run       # on the GPU machine (the device tool, carry .gpu): tests, then bench_gpu.py
# The GPU machine has no network and no example-robot-data, cffi or MuJoCo: they travel in .gpu/.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
prepare)
    grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo /.gpu/ >> .git/info/exclude
    robots=$(python -c "from rbdgen.examples import robots_dir; print(robots_dir())")
    for robot in ur5 panda solo12 talos; do
        rel=$(python -c "from rbdgen.examples import ROBOTS; print(ROBOTS['$robot'][0])")
        mkdir -p ".gpu/robots/$(dirname "$rel")"
        cp "$robots/$rel" ".gpu/robots/$rel"
    done
    # (for Python 3.12, the GPU machine's): cffi and its parser, MuJoCo and MJX for the MJX columns
    python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .gpu/wheels cffi pycparser mujoco mujoco-core mujoco-mjx glfw absl-py etils
    du -sh .gpu ;;
run)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu/wheels/*.whl
    export PYTHONPATH="/tmp/site:$PWD" RBDGEN_ROBOTS_DIR="$PWD/.gpu/robots"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    python3 -m pytest -q -x tests/test_cuda.py tests/test_torch.py -p no:cacheprovider 2>&1 | tail -15
    python3 benchmarks/bench_gpu.py --robots panda,talos ;;
*)
    echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
