"""The C compiler that builds a module, its flags, and what identifies it in a build key.

CC chooses the compiler. Without CC, rbdgen takes clang when it is installed with an OpenMP
runtime, and `cc` otherwise. Measured on this project's machine (AMD EPYC with AVX-512,
clang 14 against gcc 12, benchmarks/bench_c.py, the same sources): clang's code is faster on
Panda and Talos, every function we timed. Talos' crba was 740 against 784 ns, its coriolis 2.47
against 2.87 µs, its regressor 3.94 against 4.53 µs, and Panda's crba 73 against 101 ns. Solo12's
smallest functions are slower (rnea 199 against 164 ns: the README says why), its aba and M^-1
faster. clang also compiles Panda's functions in 18.3 s of CPU against gcc's 23.9 s. gcc's
programs on vectors of states (batches) are 5-15 % faster than clang's.
"""

import functools
import os
import shutil
import subprocess

from ..errors import BuildError

# Floating-point contraction (a*b + c fused into one FMA) stays at the compiler's default:
# every expression is computed once (hash-consing and CSE), and an output equal to an earlier
# one is copied from it in the C (M[j, i] from M[i, j]), so one build gives one answer per
# expression and M is exactly symmetric on any CPU. gcc contracts across statements, and
# -ffp-contract=off measured 7-15 % slower with it (Panda rnea, crba, aba). clang contracts
# only within a statement, and -ffp-contract=fast measured slower with it (Talos rnea 693
# against 484 ns, minv 3.55 against 3.32 µs).
OPT_FLAGS = ["-O3", "-fno-math-errno", "-fPIC", "-std=gnu11"]
# gcc's time on a long straight-line program goes to its memory passes: walking the alias
# oracle over thousands of stores (the workspace, the output) and RTL's global CSE, which finds
# nothing after ours. Bounding the walks and leaving out RTL's global CSE compiles Talos'
# regressor in 10.1 s instead of 18.4 s and Panda's aba_derivatives in 4.5 s instead of 5.1 s;
# the code runs as fast (bench_c.py, median over every function: 0.99x on Panda, 1.00x on Talos).
GCC_FLAGS = ["-fno-gcse", "--param=sccvn-max-alias-queries-per-access=50",
             "--param=dse-max-alias-queries-per-store=32"]
# LLVM's own options, each taken only where this clang knows it (they change between versions).
# The post-RA scheduler reorders the machine code of a long basic block a second time, for
# in-order CPUs: a third of the compilation of Panda's christoffel (4.6 s -> 3.3 s without it).
# The code runs as fast without it (bench_c.py on Panda and Talos, every function within noise:
# Talos coriolis 2.47 against 2.46 us, Panda's 366 against 327 ns); without the scheduler before
# register allocation too, it did not (Panda aba 266 -> 293 ns, regressor 327 -> 387 ns).
# Dead-store elimination walks MemorySSA from each of the thousands of stores (workspace,
# outputs) and finds nothing after our dead-code elimination; bounding its walk (as gcc's
# dse-max-alias-queries-per-store above) compiles Talos' functions 10 % faster, Panda's and
# Solo12's too, into the very same object files (clang 14, every function's file compared).
CLANG_FLAGS = [["-mllvm", "-post-RA-scheduler=false"], ["-mllvm", "-dse-memoryssa-walklimit=10"]]
# A long program (LONG_PROGRAM_OPERATIONS and more) compiles without the scheduler before
# register allocation too: in a straight line already ordered by the generator it is 10-22 %
# of clang's time (Talos: M^-1 3.55 -> 2.78 s, coriolis 3.89 -> 3.22, regressor 3.49 -> 3.13)
# and the code runs as fast (in-process A/B, one call: Talos M^-1 2 417 / 2 448 ns, coriolis 2 434 / 2 410, regressor 3 304 / 3 287,
# Solo12 aba_derivatives 3 009 / 3 006; 8 states: Talos M^-1 14.0 / 12.7 us, coriolis 10.8 /
# 10.6). Shorter ones lose by it (Panda aba, above; Talos aba, 13 462 operations, 1 606 / 1 640
# ns; crba 591 / 617 ns).
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
