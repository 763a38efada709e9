"""The C compiler that builds a module, its flags, and what identifies it in a build key.

CC chooses the compiler. Without CC, rbdgen takes clang when it is installed with an OpenMP
runtime, and `cc` otherwise: on this project's machine clang's single calls were faster on
Panda and Talos, every function timed, and it compiled them in less time; gcc's programs on
vectors of states (batches) were a little faster (docs/performance.md: The compiler, Batches,
Cold builds).
"""

import functools
import os
import shutil
import subprocess

from ..errors import BuildError

# Floating-point contraction (a*b + c fused into one FMA) stays at the compiler's default:
# every expression is computed once (hash-consing and CSE), and an output equal to an earlier
# one is copied from it in the C (M[j, i] from M[i, j]), so one build gives one answer per
# expression and M is exactly symmetric on any CPU. gcc contracts across statements, clang
# only within a statement; each compiler's code ran slower with the other's setting
# (-ffp-contract=off for gcc, =fast for clang: docs/performance.md, The compiler).
OPT_FLAGS = ["-O3", "-fno-math-errno", "-fPIC", "-std=gnu11"]
# gcc's time on a long straight-line program goes to its memory passes: walking the alias
# oracle over thousands of stores (the workspace, the output) and RTL's global CSE, which finds
# nothing after ours. Bounding the walks and leaving out RTL's global CSE shortens the
# compilation of the long programs, and the code runs as fast (docs/performance.md, The compiler).
GCC_FLAGS = ["-fno-gcse", "--param=sccvn-max-alias-queries-per-access=50",
             "--param=dse-max-alias-queries-per-store=32"]
# LLVM's own options, each taken only where this clang knows it (they change between versions).
# The post-RA scheduler reorders the machine code of a long basic block a second time, for
# in-order CPUs: a large share of the compilation of a long program, and the code runs as fast
# without it (Panda and Talos, every function); without the scheduler before register
# allocation too, short programs run slower (below).
# Dead-store elimination walks MemorySSA from each of the thousands of stores (workspace,
# outputs) and finds nothing after our dead-code elimination; bounding its walk (as gcc's
# dse-max-alias-queries-per-store above) compiles faster into the very same object files
# (clang 14, every function's file compared). Figures: docs/performance.md, Cold builds.
CLANG_FLAGS = [["-mllvm", "-post-RA-scheduler=false"], ["-mllvm", "-dse-memoryssa-walklimit=10"]]
# A long program (LONG_PROGRAM_OPERATIONS and more) compiles without the scheduler before
# register allocation too: in a straight line already ordered by the generator that scheduler
# is a sizeable share of clang's time, and the long programs run as fast without it (one call
# and vectors of states). Shorter ones run slower without it (Panda's aba, and Talos' aba of
# 13 462 operations): the threshold lies above them (docs/performance.md, Cold builds).
LONG_PROGRAM_OPERATIONS = 15000
CLANG_LONG_PROGRAM_FLAGS = [["-mllvm", "-enable-misched=false"]]
# The CasADi interface: thousands of small symbols (one set per function and frame), each a
# thunk its attributes leave unoptimized, and the code they share (casadi_api.h)
GLUE_FLAGS = ["-O2", "-fPIC", "-std=gnu11"]


@functools.lru_cache(maxsize=None)
def _output(cc, *args):
    try:
        result = subprocess.run([cc, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise BuildError(f"the C compiler '{cc}' cannot be run ({exc.strerror}); install gcc or set CC") from None
    return result.stdout + result.stderr


def _is_clang(cc):
    return "clang" in _output(cc, "--version")


@functools.lru_cache(maxsize=None)
def _clang_openmp(cc):
    """The flag that gives clang an OpenMP runtime: its own (libomp) when installed, else
    gcc's (libgomp, which Debian's clang brings along); None without either."""
    for library, flag in (("libomp.so", "-fopenmp"), ("libgomp.so", "-fopenmp=libgomp")):
        # -print-file-name answers the bare name when the library is nowhere on its search path
        if os.path.isabs(_output(cc, f"-print-file-name={library}").strip()):
            return flag
    return None


@functools.lru_cache(maxsize=None)
def _default_compiler():
    clang = shutil.which("clang")
    return "clang" if clang and _clang_openmp("clang") else "cc"


def c_compiler():
    """CC when set, else clang with an OpenMP runtime, else cc."""
    return os.environ.get("CC") or _default_compiler()


def is_gcc(cc):
    """Whether the C compiler is gcc rather than clang, which warns about gcc's own flags."""
    try:
        text = _output(cc, "--version")
    except BuildError:
        return False
    return "Free Software Foundation" in text and "clang" not in text


@functools.lru_cache(maxsize=None)
def _accepts(cc, *flags):
    """Whether the compiler takes these flags (LLVM's own options change between versions)."""
    try:
        result = subprocess.run([cc, *flags, "-x", "c", "-c", os.devnull, "-o", os.devnull],
                                capture_output=True, stdin=subprocess.DEVNULL)
    except OSError:
        return False
    return result.returncode == 0


def compile_flags(native):
    cc = c_compiler()
    if is_gcc(cc):
        own = GCC_FLAGS
    elif _is_clang(cc):
        own = _accepted(cc, CLANG_FLAGS)
    else:
        own = []
    return OPT_FLAGS + own + (["-march=native"] if native else [])


def long_program_flags(flags, operations):
    """The flags of a function's C file: `flags`, and for a long program what spares clang's
    time on it."""
    cc = c_compiler()
    if operations < LONG_PROGRAM_OPERATIONS or not _is_clang(cc):
        return list(flags)
    return list(flags) + _accepted(cc, CLANG_LONG_PROGRAM_FLAGS)


def _accepted(cc, options):
    """The flags of the options (each a list of words) this compiler takes."""
    return [flag for option in options if _accepts(cc, *option) for flag in option]


def openmp_flags():
    """The flag that compiles and links the batch entry points with OpenMP."""
    cc = c_compiler()
    if not _is_clang(cc):
        return ["-fopenmp"]
    flag = _clang_openmp(cc)
    if flag is None:
        raise BuildError(f"the C compiler '{cc}' (clang) finds no OpenMP runtime for the batch entry points; "
                         "install libomp-dev, or set CC=gcc")
    return [flag]


def compiler_identity(flags):
    """The compiler's version line and, with -march=native, the target options it expands to."""
    cc = c_compiler()
    parts = [cc, _output(cc, "--version").splitlines()[0:1], list(flags)]
    if "-march=native" in flags:
        # the compiler proper's command line names the CPU and every feature it enables
        # (gcc's cc1: -march=...; clang's -cc1: -target-cpu ... -target-feature ...)
        expanded = _output(cc, "-march=native", "-E", "-v", "-x", "c", "-")
        parts.append([_target_options(line) for line in expanded.splitlines()
                      if "cc1" in line and ("-march" in line or "-target-cpu" in line)])
    return parts


def _target_options(cc1_line):
    """The CPU and feature options of a compiler-proper command line, without the rest (clang's
    names the working directory, which is no part of what a module can run on)."""
    words = cc1_line.split()
    if "-target-cpu" in words:   # clang: -target-cpu X, -target-feature +Y ...
        return " ".join(f"{word} {value}" for word, value in zip(words, words[1:])
                        if word in ("-target-cpu", "-target-feature", "-tune-cpu"))
    return " ".join(w for w in words if w.startswith("-m"))   # gcc: -march=X -mY -mno-Z ...
