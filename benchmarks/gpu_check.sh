#!/usr/bin/env bash
# The GPU check of issue 47: prepared here, run where a GPU is lent.
#   bash benchmarks/gpu_check.sh prepare      # here, on the CPU: what the GPU machine lacks, in .gpu/
#   bash benchmarks/gpu_check.sh run tests    # there (the device tool, carry .gpu): the GPU tests
#   bash benchmarks/gpu_check.sh run bench    # Panda's table, parameters per state, register caps, part sizes
#   bash benchmarks/gpu_check.sh run peers    # GRiD and adam on GRiD's iiwa
#   bash benchmarks/gpu_check.sh run talos    # Talos's table, the build's cost with CUDA
#   bash benchmarks/gpu_check.sh run all      # the four in one device call, each cut at its share
#                                             # (the GPU tests only, fewer variants, Talos at 131 072)
# In that order of worth. Each `run` is one device call, cut at 9 minutes (a call may take 10;
# a session has 15 minutes of device time, start-up included: `run all` fits one call);
# results also go to $OUT when set.
# The GPU machine has no network and no example-robot-data, cffi, MuJoCo or adam: they travel in
# .gpu/. GRiD's header is generated here from GRiD's sources, when GRID_SOURCE names a checkout
# of robot-acceleration/GRiD with its submodules and GRID_URDF the iiwa.urdf of GRiDBenchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/gpu_check}"
case "${1:-}" in
prepare)
    grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo /.gpu/ >> .git/info/exclude
    robots=$(python -c "from rbdgen.examples import robots_dir; print(robots_dir())")
    for robot in ur5 panda solo12 talos; do
        rel=$(python -c "from rbdgen.examples import ROBOTS; print(ROBOTS['$robot'][0])")
        mkdir -p ".gpu/robots/$(dirname "$rel")"
        cp "$robots/$rel" ".gpu/robots/$rel"
    done
    # (for Python 3.12, the GPU machine's): cffi and its parser, MuJoCo and MJX for the MJX
    # columns, adam and what it imports for adam's
    python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .gpu/wheels cffi pycparser mujoco mujoco-core mujoco-mjx glfw absl-py etils \
        adam-robotics array-api-compat urdfdom-py lxml pyyaml
    if [ -n "${GRID_SOURCE:-}" ]; then
        generator=$(mktemp -d)
        python -m pip install -q --target "$generator" beautifulsoup4 lxml
        mkdir -p .gpu/grid
        cp "$GRID_URDF" .gpu/grid/iiwa.urdf
        (cd .gpu/grid && PYTHONPATH="$generator" python "$GRID_SOURCE/generateGRiD.py" iiwa.urdf > generate.log)
        rm -rf "$generator"
        if command -v nvcc > /dev/null; then   # (that the harness compiles against this header)
            nvcc -std=c++17 -O3 -arch=sm_90 -DGRID_REAL=double -I .gpu/grid benchmarks/grid_timing.cu -o /tmp/grid_timing_check
        fi
    fi
    du -sh .gpu ;;
run)
    [ -d /tmp/site ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
        .gpu/wheels/*.whl 2>&1 | tail -3
    export PYTHONPATH="/tmp/site:$PWD" RBDGEN_ROBOTS_DIR="$PWD/.gpu/robots"
    mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | tee "$out/gpu.txt" || true
    limit="timeout ${GPU_CHECK_SECONDS:-540}"
    case "${2:-}" in
    all)   # one device call (no start-up between the parts), each part cut at its share: the GPU
           # tests only (the CPU ones ran in CI), fewer kernel variants, Talos at one size
        GPU_CHECK_SECONDS=150 TESTS="-k test_gpu" bash "$0" run tests || echo "(tests: exit $?)"
        GPU_CHECK_SECONDS=200 VARIANTS=128,parts300 bash "$0" run bench || echo "(bench: exit $?)"
        GPU_CHECK_SECONDS=90 bash "$0" run peers || echo "(peers: exit $?)"
        GPU_CHECK_SECONDS=130 TALOS_SIZES=131072 bash "$0" run talos || echo "(talos: exit $?)" ;;
    tests)
        # shellcheck disable=SC2086
        $limit python3 -m pytest -q tests/test_cuda.py tests/test_torch.py ${TESTS:-} -p no:cacheprovider 2>&1 \
            | tail -25 | tee "$out/tests.txt" ;;
    bench)
        $limit python3 benchmarks/bench_gpu.py --robots panda --parameters \
            --registers "${VARIANTS:-64,128,inline,parts300,parts150}" 2>&1 | tee "$out/bench_panda.txt" ;;
    peers)
        [ -f .gpu/grid/grid.cuh ] || { echo "no GRiD header: prepare with GRID_SOURCE and GRID_URDF" >&2; exit 2; }
        arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
        for real in float double; do
            nvcc -std=c++17 -O3 -arch="sm_$arch" -DGRID_REAL=$real -I .gpu/grid benchmarks/grid_timing.cu -o "/tmp/grid_$real"
        done
        /tmp/grid_double 1024,16384,131072,1048576 11 "$out/grid_check.txt" | tee "$out/grid_double.txt"
        /tmp/grid_float 1024,16384,131072,1048576 11 | tee "$out/grid_float.txt"
        $limit python3 benchmarks/bench_gpu.py --robots "" --peers .gpu/grid/iiwa.urdf \
            --grid-results "$out/grid_float.txt,$out/grid_double.txt" --grid-check "$out/grid_check.txt" 2>&1 \
            | tee "$out/bench_peers.txt" ;;
    talos)
        $limit python3 benchmarks/bench_gpu.py --robots talos --sizes "${TALOS_SIZES:-16384,131072}" --build --registers 128 2>&1 \
            | tee "$out/bench_talos.txt" ;;
    *)
        echo "usage: $0 run tests|bench|peers|talos|all" >&2; exit 2 ;;
    esac ;;
*)
    echo "usage: $0 prepare | run tests|bench|peers|talos|all" >&2; exit 2 ;;
esac
