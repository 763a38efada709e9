"""Which C compiler builds a module (rbdgen/codegen/compiler.py): CC when set, else clang when
it has an OpenMP runtime, else cc; and the one-line error when clang has none. A module built
by gcc, whose code paths the rest of the suite (built by clang) does not reach."""

import os
import shutil

import pytest

from rbdgen.codegen import compiler
from rbdgen.errors import BuildError


def fake_clang(folder, runtime):
    """A `clang` on PATH that answers --version as clang does and finds `runtime` (a library
    file name, or None) with -print-file-name, as clang answers for one it cannot find."""
    folder.mkdir(exist_ok=True)
    found = f"/usr/lib/fake/{runtime}" if runtime else ""
    script = folder / "clang"
    script.write_text(f"""#!/bin/sh
case "$1" in
  --version) echo "fake clang version 99.0.0"; exit 0 ;;
  -print-file-name=*) name="${{1#-print-file-name=}}"
                      if [ "$name" = "{runtime}" ] && [ -n "{found}" ]; then echo "{found}"; else echo "$name"; fi
                      exit 0 ;;
esac
exit 1
""")
    script.chmod(0o755)
    return str(script)


@pytest.fixture
def fresh(monkeypatch):
    """compiler's answers are cached per process: forget them before and after."""
    def clear():
        for cached in (compiler._output, compiler._clang_openmp, compiler._default_compiler, compiler._accepts):
            cached.cache_clear()
    clear()
    monkeypatch.delenv("CC", raising=False)
    yield monkeypatch
    clear()


def test_cc_decides_when_set(fresh):
    fresh.setenv("CC", "gcc")
    assert compiler.c_compiler() == "gcc"
    assert compiler.is_gcc("gcc")
    assert compiler.openmp_flags() == ["-fopenmp"]
    assert all(flag in compiler.compile_flags(False) for flag in compiler.GCC_FLAGS)


@pytest.mark.parametrize("runtime, flag", [("libomp.so", "-fopenmp"), ("libgomp.so", "-fopenmp=libgomp")])
def test_clang_with_an_openmp_runtime_is_the_default(fresh, tmp_path, runtime, flag):
    fake_clang(tmp_path / "bin", runtime)
    fresh.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert compiler.c_compiler() == "clang"
    assert compiler.openmp_flags() == [flag]


def test_clang_without_openmp_is_passed_over_and_named_in_the_error(fresh, tmp_path):
    clang = fake_clang(tmp_path / "bin", None)
    fresh.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert compiler.c_compiler() == "cc"
    fresh.setenv("CC", clang)
    with pytest.raises(BuildError) as info:
        compiler.openmp_flags()
    message = str(info.value)
    assert len(message.splitlines()) == 1
    assert clang in message and "install libomp-dev, or set CC=gcc" in message


def test_a_compiler_that_cannot_run_is_named(fresh, tmp_path):
    fresh.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(BuildError, match="cannot be run .*install gcc or set CC"):
        compiler.compile_flags(native=False)


def test_the_default_compiler_gets_its_own_flags(fresh):
    """Whichever compiler builds modules here by default gets its flags: clang (CI installs it
    and sets RBDGEN_REQUIRE_CLANG) takes LLVM's options and an OpenMP runtime, never gcc's
    flags; gcc takes its own and -fopenmp."""
    cc = compiler.c_compiler()
    if os.environ.get("RBDGEN_REQUIRE_CLANG"):
        assert cc == "clang", f"RBDGEN_REQUIRE_CLANG is set and the default compiler is {cc}"
    flags = compiler.compile_flags(native=True)
    assert flags[:len(compiler.OPT_FLAGS)] == compiler.OPT_FLAGS and "-march=native" in flags
    if cc == "clang":
        # Debian's clang finds gcc's libgomp when libomp is not installed
        assert compiler.openmp_flags() in (["-fopenmp"], ["-fopenmp=libgomp"])
        assert not set(compiler.GCC_FLAGS) & set(flags)
        for option in compiler.CLANG_FLAGS:   # LLVM's options this clang knows, each where it sits
            if compiler._accepts(cc, *option):
                assert flags[flags.index(option[1]) - 1] == "-mllvm"
            else:
                assert option[1] not in flags
    else:
        assert compiler.is_gcc(cc), f"the default compiler {cc} is neither clang nor gcc"
        assert compiler.openmp_flags() == ["-fopenmp"]
        assert set(compiler.GCC_FLAGS) <= set(flags) and "-mllvm" not in flags
    # a long program's file compiles without clang's scheduler before register allocation
    short = compiler.long_program_flags(flags, compiler.LONG_PROGRAM_OPERATIONS - 1)
    long = compiler.long_program_flags(flags, compiler.LONG_PROGRAM_OPERATIONS)
    assert short == flags and long[:len(flags)] == flags
    if cc == "clang" and compiler._accepts(cc, "-mllvm", "-enable-misched=false"):
        assert long[len(flags):] == ["-mllvm", "-enable-misched=false"]
    else:
        assert long == flags


def test_a_module_built_by_gcc_is_verified_and_streams_its_batches(fresh, tmp_path):
    """Every other module of the suite is built by clang where clang is installed (CI's case):
    this one by gcc (CC=gcc), with gcc's own code paths (GCC_FLAGS, the movntpd builtins that
    stream a batch beyond 16 MB of output). The build verifies it against the reference; a
    streamed batch of M equals the same batch in chunks (ordinary stores) bit for bit, and single
    calls within 8 ulp of M's largest entry (gcc fuses multiply-adds differently in the program
    for one state and the one on vectors)."""
    import subprocess
    import numpy as np
    import rbdgen
    from trees import random_state, random_tree
    fresh.setenv("CC", "gcc")
    model = random_tree(7, 4)
    module = rbdgen.build_model(model, out_dir=str(tmp_path), algorithms=["rnea", "crba", "aba"])
    comment = subprocess.run(["readelf", "-p", ".comment", module._ext.__file__], capture_output=True, text=True)
    assert "GCC" in comment.stdout and "clang" not in comment.stdout, comment.stdout
    rng = np.random.default_rng(7)
    states = np.array([random_state(model, rng)[0] for _ in range(64)])
    count = (16 << 20) // (8 * model.nv ** 2) + 100
    q = np.resize(states, (count, model.nq))
    streamed = module.crba(q, threads=1)
    assert np.array_equal(streamed, np.concatenate([module.crba(q[k:k + 4096], threads=1)
                                                    for k in range(0, count, 4096)]))
    for k in range(64):
        one = module.crba(q[k])
        assert np.abs(streamed[k] - one).max() <= 8 * np.finfo(float).eps * np.abs(one).max()


def test_function_files_build_under_every_compiler_at_every_optimization(tmp_path):
    """A program's sin/cos loop is unrolled in full under clang (rbdgen_sincos_state): a frame
    function whose chains take different numbers of angles builds without a warning at -Oz and
    without inlining too (a copy of the loop of its own, called with several counts, could not be
    unrolled, and clang said so: an error under -Werror, where an export's user compiles). gcc,
    which keeps the plain loop, is held to the same; clang is required where CI installs it."""
    import glob
    import subprocess
    from rbdgen.codegen.build import build_model
    from trees import ALL_JOINT_TYPES, random_tree
    assert shutil.which("clang") or not os.environ.get("RBDGEN_REQUIRE_CLANG"), \
        "RBDGEN_REQUIRE_CLANG is set and clang is not installed"
    compilers = [(cc, smallest) for cc, smallest in (("clang", "-Oz"), ("gcc", "-Os")) if shutil.which(cc)]
    assert compilers, "neither clang nor gcc is installed"
    tree = random_tree(901, len(ALL_JOINT_TYPES) + 1, ALL_JOINT_TYPES, branched=True)   # chains of several lengths
    build_model(tree, out_dir=str(tmp_path), algorithms=["frame_jacobian_local", "rnea"])
    folder = glob.glob(str(tmp_path / "*" / "rbdgen_*_kernels.h"))[0].rsplit("/", 1)[0]
    sources = [f for f in glob.glob(folder + "/rbdgen_*.c") if f.endswith(("_frame_jacobian_local.c", "_rnea.c"))]
    assert len(sources) == 2
    for cc, smallest in compilers:
        for flags in ([smallest], ["-O2", "-fno-inline"], ["-O0"]):
            for source in sources:
                result = subprocess.run([cc, *flags, "-std=c99", "-fPIC", "-Wall", "-Wextra", "-Werror", "-c", source,
                                         "-o", os.devnull, "-I", folder], capture_output=True, text=True)
                assert result.returncode == 0, f"{cc} {' '.join(flags)} {os.path.basename(source)}: {result.stderr[:600]}"


def test_programs_in_small_parts_are_verified_and_compile_without_warnings(tmp_path, monkeypatch):
    """Programs cut into parts of 30 statements (600 by default), so that UR5's have several: each
    output entry is stored by the part that computes it, by an output function (constants, inputs)
    or copied after the barrier; the build's verification checks every value, and gcc with -Wall
    -Wextra -Werror the C (an output function left with constants alone once left w unused)."""
    import glob
    import subprocess
    import rbdgen
    from rbdgen.codegen import render
    from rbdgen.codegen.build import build_model
    from rbdgen.examples import robot_path
    monkeypatch.setattr(render.function_data, "__defaults__", (30,))   # the build's workers fork
    build_model(rbdgen.load_urdf(robot_path("ur5")), out_dir=str(tmp_path),
                algorithms=["crba", "minv", "eom", "regressor", "aba_derivatives"])
    folder = glob.glob(str(tmp_path / "*" / "rbdgen_*_kernels.h"))[0].rsplit("/", 1)[0]
    sources = [f for f in glob.glob(folder + "/rbdgen_*.c")
               if f.endswith(("_crba.c", "_minv.c", "_eom.c", "_regressor.c", "_aba_derivatives.c"))]
    assert len(sources) == 5
    for source in sources:
        with open(source) as f:
            assert "_part1(" in f.read(), f"{os.path.basename(source)}: one part only"
        result = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", source,
                                 "-I", folder], capture_output=True, text=True)
        assert result.returncode == 0, f"{os.path.basename(source)}: {result.stderr[:600]}"


# The kernels' sine and cosine against extended precision (NumPy's long double, 64-bit mantissa):
# units in the last place of the double result, as the kernels header says.
SINCOS_ULP = {3.2: 1.5, 1e5: 2.5}


def test_sine_and_cosine_kernels_against_extended_precision(tmp_path):
    """rbdgen_sincos (one angle), rbdgen_sincos_n (the loop over a program's angles) and
    rbdgen_sincos_state agree bit for bit, within SINCOS_ULP of sinl/cosl for angles up to 3.2
    and 1e5 rad, and beyond 1e6 rad (the C library's sincos there) within one ulp; compiled with
    the modules' flags by the modules' compiler."""
    import subprocess
    import numpy as np
    from rbdgen.codegen.render import render_kernels_header
    (tmp_path / "t.h").write_text("/* nothing */\n")
    (tmp_path / "k.h").write_text(render_kernels_header("t", "t.h"))
    (tmp_path / "t.c").write_text("""#define _GNU_SOURCE
#include <stdio.h>
#include "k.h"
#define N 4096
int main(void)
{
    static double x[N], s[3][N], c[3][N];
    if (fread(x, sizeof(double), N, stdin) != N) return 2;
    for (int i = 0; i < N; ++i) rbdgen_sincos(x[i], &s[0][i], &c[0][i]);
    rbdgen_sincos_n(N, x, s[1], c[1]);
    for (int i = 0; i < N; i += 8) rbdgen_sincos_state(8, x + i, s[2] + i, c[2] + i);
    fwrite(s, sizeof(double), 3 * N, stdout);
    fwrite(c, sizeof(double), 3 * N, stdout);
    return 0;
}
""")
    cc = compiler.c_compiler()
    program = str(tmp_path / "t")
    subprocess.run([cc, *compiler.compile_flags(True), "-I", str(tmp_path), str(tmp_path / "t.c"), "-o", program,
                    "-lm"], check=True, capture_output=True)
    rng = np.random.default_rng(42)
    cases = {**{bound: rng.uniform(-bound, bound, 4096) for bound in SINCOS_ULP},
             "beyond": rng.uniform(1e6, 1e9, 4096) * rng.choice([-1, 1], 4096)}
    for bound, x in cases.items():
        done = subprocess.run([program], input=x.tobytes(), capture_output=True, check=True).stdout
        s, c = np.frombuffer(done, dtype=np.float64).reshape(2, 3, -1)
        for got in (s, c):
            assert np.array_equal(got[0], got[1]) and np.array_equal(got[0], got[2]), bound
        truth = [np.sin(x.astype(np.longdouble)), np.cos(x.astype(np.longdouble))]
        for got, exact in zip((s[0], c[0]), truth):
            ulp = np.spacing(np.abs(exact.astype(np.float64)))
            worst = float(np.max(np.abs(got.astype(np.longdouble) - exact) / ulp))
            assert worst <= SINCOS_ULP.get(bound, 1.0), f"angles up to {bound}: {worst:.2f} ulp"
