#!/usr/bin/env python3
"""C-level speed of generated modules against Pinocchio's C++ (pin_bench), in one run.

For each robot: build (or reuse) its module with the robot's declared contacts
(common.CONTACTS), compile a small C driver together with the module's own C files (same
flags as rbdgen: compile_flags(native=True)), and time every generated function the way
pin_bench times Pinocchio: 64 precomputed random states, 7 repetitions of N calls, median
ns/call; the functions of a frame on the first contact's frame. The same driver times
adam + CasADi's generated C for the functions adam provides (casadi_side.py; --no-casadi
leaves it out). The driver and pin_bench (given the same contacts) are run alternately
(--rounds times) and the median of each is reported; contact_dynamics_derivatives is compared
with pin_extra (benchmarks/pin_extra: constraintDynamics + computeConstraintDynamicsDerivatives, and
computeJointJacobiansTimeVariation + getFrameJacobianTimeVariation; built beside pin_bench the first
time it is needed).

    python benchmarks/bench_c.py                       # ur5 panda solo12 talos
    python benchmarks/bench_c.py ur5 panda --json out.json
    python benchmarks/bench_c.py solo12 --contact FL_FOOT:3d --contact HR_FOOT:3d
    python benchmarks/bench_c.py panda --export        # and the exported CMake library's speed

A script, not a test: pytest never collects it.
"""

import concurrent.futures
import re
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

import casadi_side
import rbdgen
from casadi_side import CHECK_STATES
from common import cpu_name, log, robot_contacts, robot_parser, robot_spec, split_contact
from rbdgen.codegen.compiler import c_compiler, compile_flags
from rbdgen.table.functions import BY_NAME
from rbdgen.table.inputs import INPUTS
from rbdgen.model.parameters import parameters_of, with_parameters
from rbdgen.model.states import random_state

SHARED = tuple(name for name, row in INPUTS.items() if row.shared)   # one value for a whole batch

HERE = os.path.dirname(os.path.abspath(__file__))
# ../shared/bench/ beside the repository (its parent folder holds shared/)
BUILD_PIN_BENCH = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "bench", "build_pin_bench.sh")
# What pin_bench does not time (constraintDynamics + computeConstraintDynamicsDerivatives): our
# own pin_extra.cpp, built the same way, beside pin_bench
BUILD_PIN_EXTRA = os.path.join(HERE, "pin_extra", "build.sh")
warnings.filterwarnings("ignore", message=".*<mimic> is ignored.*")
DEFAULT_ROBOTS = ("ur5", "panda", "solo12", "talos")
FLAGS = compile_flags(native=True)     # rbdgen's, for our C, the driver and adam's C alike
K = 64                        # states cycled through, as pin_bench
REPETITIONS = 7               # median of 7, as pin_bench
MAIN = ("rnea", "nle", "crba", "aba")
TARGETS = {"ur5": 6.0, "panda": 6.0, "solo12": 4.0, "talos": 4.0}
# Goals of the task-space functions (issue 8), for every robot; contact and impulse dynamics
# only where seed 000 benchmarks them (four 3-D feet, two 6-D soles).
TASK_TARGETS = {"frame_placement": 5.0, "frame_jacobian_local_world_aligned": 5.0, "eom": 4.0,
                "frame_jacobian_time_variation_local_world_aligned": 5.0}
CONTACT_TARGETS = {"solo12": 4.0, "talos": 4.0}
CONTACT_DERIVATIVE_TARGETS = {"solo12": 2.0}     # issue 20
# Goals of the derivatives and the regressor (issue 9)
DERIVATIVE_TARGETS = {"ur5": 4.0, "panda": 4.0, "solo12": 2.5, "talos": 2.5}
DERIVATIVE_NAMES = ("rnea_derivatives", "aba_derivatives")
# pin_bench's line names for our functions (ours -> "<theirs>_ns"): the function table's
# counterparts (rnea, crba, aba, minv, the derivatives, ...), and what pin_bench and pin_extra
# time beyond one Pinocchio call: the first frame's placement (forwardKinematics +
# updateFramePlacement), computeFrameJacobian and getFrameClassicalAcceleration (after
# forwardKinematics), both in LOCAL_WORLD_ALIGNED; constraintDynamics and impulseDynamics (exact,
# mu = 0) and their derivatives; crba + nonLinearEffects; the Jacobian's time variation
PIN_NAMES = {name: spec.pinocchio.bench for name, spec in BY_NAME.items() if spec.pinocchio and spec.pinocchio.bench}
PIN_NAMES.update({"frame_placement": "frame_placement", "frame_jacobian_local_world_aligned": "frame_jacobian",
                  "frame_classical_acceleration_local_world_aligned": "frame_classical_acceleration",
                  "contact_dynamics": "contact_dynamics", "impulse_dynamics": "impulse_dynamics", "eom": "crba_nle",
                  "contact_dynamics_derivatives": "contact_dynamics_derivs",
                  "frame_jacobian_time_variation_local_world_aligned": "frame_jacobian_time_variation"})
CONTACT_PIN_NAMES = ("contact_dynamics", "impulse_dynamics", "contact_dynamics_derivatives")
# Pinocchio's code generator (Pinocchio + CppADCodeGen, ../shared/bench/pin_cg/build.sh): its
# algorithm for each of ours; the generated C is compiled as ours, -O3 -march=native (by gcc)
PIN_CG_NAMES = {"rnea": "rnea", "crba": "crba", "aba": "aba", "minv": "minv",
                "rnea_derivatives": "rnea_derivs", "aba_derivatives": "aba_derivs"}
PIN_CG_CFLAGS = "-O3 -march=native"
# issue 35: a cold build of the six functions in at most half the time of their code generation by CG
CG_BUILD_TARGET = 0.5
PIN_EXTRA_NAMES = ("contact_dynamics_derivatives", "frame_jacobian_time_variation_local_world_aligned")   # by pin_extra


def target_of(robot, fn):
    """The speed-up over Pinocchio that `fn` should reach on `robot` (None: no goal)."""
    if fn in MAIN:
        return TARGETS.get(robot)
    if fn == "contact_dynamics_derivatives":
        return CONTACT_DERIVATIVE_TARGETS.get(robot)
    if fn in CONTACT_PIN_NAMES:
        return CONTACT_TARGETS.get(robot)
    if fn in DERIVATIVE_NAMES:
        return DERIVATIVE_TARGETS.get(robot)
    if fn == "regressor":
        return 4.0
    return TASK_TARGETS.get(fn)



def resolve_pin_bench(path):
    """--pin-bench, else pin_bench beside build_pin_bench.sh (../shared/bench/ next to the
    repository), built there once (outside the repository) when missing."""
    if path:
        if not os.access(path, os.X_OK):
            sys.exit(f"bench_c: --pin-bench {path} is not an executable")
        return path
    beside = os.path.join(os.path.dirname(BUILD_PIN_BENCH), "pin_bench")
    if not os.access(beside, os.X_OK):
        log(f"building pin_bench into {beside} (about 5 minutes) ...")
        subprocess.run(["bash", BUILD_PIN_BENCH, beside], check=True)
    return beside


def resolve_pin_extra(pin_bench):
    """pin_extra beside pin_bench, built there once from benchmarks/pin_extra when missing."""
    beside = os.path.join(os.path.dirname(os.path.abspath(pin_bench)), "pin_extra")
    if not os.access(beside, os.X_OK):
        log(f"building pin_extra into {beside} (about 3 minutes) ...")
        subprocess.run(["bash", BUILD_PIN_EXTRA, beside], check=True)
    return beside


def function_order(names):
    """rnea, nle, crba, aba first, then the rest in the module's order."""
    return [n for n in MAIN if n in names] + [n for n in names if n not in MAIN]


def write_inputs(model, meta, path, seed, side=None):
    """Binary file: for every distinct input name (sorted) that changes with the state, K rows
    of its size, float64 (placement, damping, restitution and dt are one value for all states),
    and adam's base placements H when `side` needs them. Returns the sizes and the arrays."""
    rng = np.random.default_rng(seed)
    qs, vs, acc = [], [], []
    for _ in range(K):
        q, v, a = random_state(model, rng)
        qs.append(q), vs.append(v), acc.append(a)
    sizes = {}
    for fn in meta["functions"].values():
        for name, size in ((x["name"], x["size"]) for x in fn["inputs"]):
            if name not in SHARED:
                sizes[name] = size
    arrays = {}
    for name, size in sorted(sizes.items()):
        if name == "q":
            arrays[name] = np.array(qs)
        elif name == "v":
            arrays[name] = np.array(vs)
        elif name == "a":
            arrays[name] = np.array(acc)
        elif name == "q1":                      # difference(q, q1): the next state's q
            arrays[name] = np.roll(np.array(qs), -1, axis=0)
        elif name == "params":                  # model parameters: random physical ones near the robot's
            arrays[name] = parameters_of(with_parameters(model, meta["params"]["specs"])).sample(rng, K)
        else:                                   # tau, fext: standard normal
            arrays[name] = rng.normal(size=(K, size))
        assert arrays[name].shape == (K, size), (name, arrays[name].shape, size)
    for name, array in (side.extra_inputs(qs) if side else {}).items():
        arrays[name], sizes[name] = array, array.shape[1]
    with open(path, "wb") as f:
        for name in sorted(arrays):
            f.write(np.ascontiguousarray(arrays[name], dtype=np.float64).tobytes())
    return sizes, arrays


# The drivers' clock and median (bench_batch.py's driver too)
TIMING_C = r"""
static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t)
{
    qsort(t, REPS, sizeof(double), cmp);
    return t[REPS / 2];
}
"""

DRIVER_HEAD = r"""/* Benchmark driver generated by benchmarks/bench_c.py. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "%(header)s"
%(casadi)s
#define K %(K)d
#define REPS %(REPS)d
volatile double sink;
%(decls)s%(shared)s
static double out[%(out_size)d];

%(timing)s"""

DRIVER_FN = r"""
static double bench_%(label)s(long n)
{
    double t[REPS];
    for (int r = 0; r < REPS; ++r) {
        double acc = 0.0;
        double t0 = now_ns();
        for (long i = 0; i < n; ++i) {
            const int k = (int)(i %% K);
            %(call)s;
            acc += out[0];
        }
        double t1 = now_ns();
        if (acc != acc) {  /* NaN: a body the function has no program for, or a failed solve */
            fprintf(stderr, "%(label)s: the outputs are NaN\n");
            exit(3);
        }
        sink = acc;
        t[r] = (t1 - t0) / n;
    }
    return median(t);
}
"""

DRIVER_CHECK = r"""
static void check_%(label)s(void)
{
    for (int k = 0; k < %(states)d; ++k) {
        %(call)s;
        printf("check %(fn)s %%d", k);
        for (int i = 0; i < %(size)d; ++i) printf(" %%.17g", out[i]);
        printf("\n");
    }
}
"""

DRIVER_MAIN = r"""
int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: %%s INPUTS.bin CALLS [check]\n", argv[0]); return 2; }
    long n = atol(argv[2]);
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
%(reads)s    fclose(f);
    if (argc > 3) {  /* check: adam's outputs on the first states */
%(checks)s        return 0;
    }
    /* 0.2 s of work before the first timing: the first function timed (rnea) was otherwise
       up to 1.5x slower than the same code timed later in the run */
    for (double t0 = now_ns(); now_ns() - t0 < 2e8;) sink = sink + 1.0;
%(calls)s    return 0;
}
"""


def write_driver(folder, meta, sizes, order, frame, side=None):
    """The driver's C source: one timing loop per function of `order`, each followed by adam's
    (`side`) where it has one; the functions of a frame are called for `frame` (its body and
    placement from model.json), damping, restitution and the gains kp, kd are 0, dt 1. `check`
    prints adam's outputs."""
    module = meta["module"]
    names = sorted(sizes)
    decls = "".join(f"static double in_{n}[K * {sizes[n]}];\n" for n in names)
    placement = meta["frames"][frame]["placement"] if frame else [0.0] * 12
    shared = ("/* one value for all states: the benchmark frame's placement on its body, damping, restitution, dt,\n"
              "   Baumgarte's gains */\n"
              f"static const double shared_placement[12] = {{{', '.join(repr(float(x)) for x in placement)}}};\n"
              "static const double shared_damping[1] = {0.0};\n"
              "static const double shared_restitution[1] = {0.0};\n"
              "static const double shared_dt[1] = {1.0};\n"
              "static const double shared_kp[1] = {0.0};\n"
              "static const double shared_kd[1] = {0.0};\n")
    reads = "".join(f'    if (fread(in_{n}, sizeof(double), K * {sizes[n]}, f) != (size_t)(K * {sizes[n]})) '
                    f'{{ fprintf(stderr, "short read: {n}\\n"); return 2; }}\n' for n in names)
    theirs = side.functions if side else {}
    out_size = max([int(np.prod(fn["shape"])) for fn in meta["functions"].values()]
                   + [info["nnz"] for info in theirs.values()])
    source = DRIVER_HEAD % {"header": f"rbdgen_{module}.h", "casadi": side.declarations() if theirs else "",
                            "K": K, "REPS": REPETITIONS, "decls": decls, "shared": shared, "out_size": out_size,
                            "timing": TIMING_C}
    calls = checks = ""
    for fn in order:
        inputs = [(x["name"], x["size"]) for x in meta["functions"][fn]["inputs"]]
        args = "".join(f"shared_{name}, " if name in SHARED else f"in_{name} + k * {size}, "
                       for name, size in inputs)
        if meta["functions"][fn].get("bodies") is not None:     # a function of a frame: its body first
            args = f"{meta['frames'][frame]['body']}L, " + args
        timed = [(fn, f"rbdgen_{module}_{fn}({args}out)")]
        if fn in theirs:
            call = side.call(fn, meta["nq"], meta["nv"])
            timed.append((f"casadi_{fn}", call))
            source += DRIVER_CHECK % {"label": f"casadi_{fn}", "fn": fn, "call": call,
                                      "states": CHECK_STATES, "size": theirs[fn]["nnz"]}
            checks += f"        check_casadi_{fn}();\n"
        for label, call in timed:
            source += DRIVER_FN % {"label": label, "call": call}
            calls += f'    printf("{label}_ns %.1f\\n", bench_{label}(n));\n    fflush(stdout);\n'
    source += DRIVER_MAIN % {"reads": reads, "checks": checks, "calls": calls}
    path = os.path.join(folder, "bench_driver.c")
    with open(path, "w") as f:
        f.write(source)
    return path


def build_driver(package, meta, folder, order, model, seed, frame, side=None):
    """Copy the module's header and C files into `folder`, compile them with the driver (linked
    with adam's compiled functions, `side`). Returns the executable, the compiler line and the inputs."""
    module = meta["module"]
    for name in os.listdir(package):   # the public header and the kernels' (and CasADi's) headers
        if name.startswith(f"rbdgen_{module}") and name.endswith(".h"):
            shutil.copy(os.path.join(package, name), folder)
    sources = []
    for fn in meta["functions"]:
        src = os.path.join(package, f"rbdgen_{module}_{fn}.c")
        shutil.copy(src, folder)
        sources.append(os.path.join(folder, os.path.basename(src)))
    sizes, arrays = write_inputs(model, meta, os.path.join(folder, "inputs.bin"), seed, side)
    driver = write_driver(folder, meta, sizes, order, frame, side)
    objects = compile_all(sources + [driver], FLAGS, folder, [side.folder] if side else [])
    exe = os.path.join(folder, "bench_driver")
    cc = c_compiler()
    subprocess.run([cc, *FLAGS, *objects, *(side.objects() if side else []), "-o", exe, "-lm"], check=True)
    return exe, " ".join([cc, *FLAGS]), arrays, driver


def build_export_driver(package, model, folder, driver, side=None):
    """The same driver linked against the module's export (rbdgen export's CMake project, built
    with RBDGEN_NATIVE=ON, without OpenMP, as a static library) instead of the module's objects:
    the library a C user gets, timed beside the module's own build of the same sources."""
    from rbdgen.codegen.export import write_library
    export = os.path.join(folder, "export")
    write_library(package, export, model, native=True)
    build = os.path.join(folder, "export-build")
    # the compiler that built the module (rbdgen.codegen.compiler), not CMake's default
    subprocess.run(["cmake", "-S", export, "-B", build, "-DRBDGEN_NATIVE=ON", "-DRBDGEN_OPENMP=OFF",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True,
                   env=dict(os.environ, CC=c_compiler()))
    subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 1)], check=True, capture_output=True)
    static = next(os.path.join(build, n) for n in os.listdir(build) if n.endswith(".a"))
    include = [os.path.join(export, "include")] + ([side.folder] if side else [])
    cc = c_compiler()
    obj = os.path.join(folder, "export_driver.o")
    subprocess.run([cc, *FLAGS, "-c", driver, "-o", obj, *(f"-I{d}" for d in include)], check=True)
    exe = os.path.join(folder, "export_driver")
    subprocess.run([cc, *FLAGS, obj, *(side.objects() if side else []), static, "-o", exe, "-lm"], check=True)
    return exe


def compile_all(sources, flags, folder, include=()):
    """Each C file to an object, in parallel (as rbdgen compiles a module)."""
    cc = c_compiler()

    def one(src):
        obj = src[:-2] + ".o"
        cmd = [cc, *flags, "-c", src, "-o", obj, "-I", folder, *(f"-I{d}" for d in include)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"bench_c: {' '.join(cmd)} failed:\n{result.stdout}{result.stderr}")
        return obj

    with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
        return list(pool.map(one, sources))


def parse(text):
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].endswith("_ns"):
            values[parts[0][:-3]] = float(parts[1])
    return values


def run(cmd):
    return parse(run_text(cmd))


def run_text(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"bench_c: {' '.join(cmd)} failed:\n{result.stdout}{result.stderr}")
    return result.stdout


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def pin_bench_frames(contacts, frame):
    """pin_bench's FRAME:KIND arguments, and whether its contact lines time the same contacts as
    ours (it knows 3d and 6d contacts at a frame's origin only). Without contacts, the benchmark
    frame alone, for its frame lines."""
    parts = [split_contact(c) for c in contacts]
    if contacts and all(kind in ("3d", "6d") and not extra for _, kind, extra in parts):
        return [f"{f}:{kind}" for f, kind, _ in parts], True
    return ([f"{frame}:3d"] if frame else []), False


def median_of(runs, key):
    """Median over rounds of one line, None when a round lacks it."""
    if key is None or not all(key in run_ for run_ in runs):
        return None
    return statistics.median(run_[key] for run_ in runs)


def bench_robot(name, urdf, floating, args, pin_bench):
    contacts, frame = robot_contacts(name, args)
    log(f"== {name}: building (or reusing) the module in {args.out}"
        f"{' with contacts ' + ' '.join(contacts) if contacts else ''} ...")
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()] if args.algorithms else None
    before = set(os.listdir(args.out)) if os.path.isdir(args.out) else set()
    started = time.perf_counter()
    module = rbdgen.build(urdf, out_dir=args.out, floating_base=floating, algorithms=algorithms,
                          contacts=list(contacts) or None, parameters=args.parameters,
                          progress=lambda m: log(f"   {m}") if args.verbose else None)
    build_s = time.perf_counter() - started
    package = os.path.dirname(os.path.abspath(module.__file__))
    cold = os.path.basename(package) not in before     # a new folder: built from nothing, not reused
    with open(os.path.join(package, "model.json"), encoding="utf-8") as f:
        meta = json.load(f)
    if frame is not None and (frame not in meta["frames"] or any(
            meta["frames"][frame]["body"] not in fn["bodies"] for fn in meta["functions"].values() if fn.get("bodies"))):
        sys.exit(f"bench_c: {name}: the module serves no frame {frame!r}; give --contact FRAME:3d with a frame "
                 "it serves (rbdgen info lists them)")
    model = rbdgen.load_urdf(urdf, floating_base=floating)
    functions = list(meta["functions"])
    of_frame = [fn for fn in functions if meta["functions"][fn].get("bodies") is not None]
    if frame is None and of_frame:
        log(f"   {name} has no benchmark frame (give --contact FRAME:3d): the functions of a frame are not timed")
        functions = [fn for fn in functions if fn not in of_frame]
    order = function_order(functions)
    pin_frames, same_contacts = pin_bench_frames(contacts, frame)
    if contacts and not same_contacts:
        log("   pin_bench takes plain FRAME:3d / FRAME:6d contacts only: contact dynamics is not compared")
    calls = args.calls or (100000 if model.nv <= 20 else 20000)
    side = side_skipped = None           # adam + CasADi, and why this robot has none
    if not args.casadi_skipped:
        side, side_skipped = casadi_side.prepare(name, urdf, floating, meta, model, module, frame, order, FLAGS)
    with tempfile.TemporaryDirectory(prefix=f"rbdgen-bench-{name}-") as folder:
        theirs = len(side.functions) if side else 0
        log(f"   compiling the C driver ({len(order)} functions{f', {theirs} of adam' if theirs else ''}) ...")
        exe, cc_line, arrays, driver = build_driver(package, meta, folder, order, model, args.seed, frame, side)
        inputs = os.path.join(folder, "inputs.bin")
        if theirs:
            side.check_driver(module, frame, run_text([exe, inputs, "1", "check"]), arrays)
        export_exe = None
        if args.export:
            log("   exporting the module and building its CMake project (RBDGEN_NATIVE=ON) ...")
            export_exe = build_export_driver(package, model, folder, driver, side)
        gen_runs, pin_runs, export_runs = [], [], []
        for r in range(args.rounds):
            log(f"   round {r + 1}/{args.rounds}: generated{' and adam' if theirs else ''} ...")
            gen_runs.append(run([exe, inputs, str(calls)]))
            if export_exe:
                log(f"   round {r + 1}/{args.rounds}: the export's library ...")
                export_runs.append(run([export_exe, inputs, str(calls)]))
            log(f"   round {r + 1}/{args.rounds}: pin_bench ...")
            pin_runs.append(run([pin_bench, urdf, "1" if floating else "0", str(calls), *pin_frames]))
            if same_contacts and contacts and any(fn in PIN_EXTRA_NAMES for fn in order):
                log(f"   round {r + 1}/{args.rounds}: pin_extra ...")
                pin_runs[-1].update(run([resolve_pin_extra(pin_bench), urdf, "1" if floating else "0",
                                         str(max(1, calls // 10)), *pin_frames]))
    cg = pin_cg_columns(args.pin_cg, urdf, floating, calls, [fn for fn in order if fn in PIN_CG_NAMES])
    rows = []
    for fn in order:
        gen = statistics.median(run_[fn] for run_ in gen_runs)
        if fn in cg:
            cg[fn]["cg_speedup"] = cg[fn]["cg_ns"] / gen
        pin_name = PIN_NAMES.get(fn)
        if fn in CONTACT_PIN_NAMES and not same_contacts:
            pin_name = None
        pin = median_of(pin_runs, pin_name)
        adam = median_of(gen_runs, f"casadi_{fn}" if side and fn in side.functions else None)
        rows.append({
            "function": fn, "operations": module.operation_counts[fn], "generated_ns": gen,
            "pinocchio": pin_name if pin else None, "pinocchio_ns": pin, "speedup": pin / gen if pin else None,
            "target": target_of(name, fn) if pin else None,
            "generated_runs": [run_[fn] for run_ in gen_runs],
            "pinocchio_runs": [run_[pin_name] for run_ in pin_runs] if pin else None,
            "casadi_ns": adam, "casadi_speedup": adam / gen if adam else None,
            "casadi_operations": side.functions[fn]["operations"] if adam else None,
            "casadi_runs": [run_[f"casadi_{fn}"] for run_ in gen_runs] if adam else None,
            "export_ns": median_of(export_runs, fn) if export_exe else None,
            **cg.get(fn, {}),
        })
    casadi = None if side is None else {
        "versions": side.record["versions"], "cache": side.folder, "workarounds": side.record["workarounds"],
        "functions": side.functions, "left_out": {fn: side.left_out[fn] for fn in order if fn in side.left_out}}
    return {"robot": name, "urdf": urdf, "floating_base": floating, "nq": module.nq, "nv": module.nv,
            "contacts": list(contacts), "frame": frame, "frame_body": meta["frames"][frame]["body"] if frame else None,
            "calls": calls, "rounds": args.rounds, "compiler": cc_line, "build_s": build_s, "cold_build": cold, "pin_bench": pin_bench,
            "pin_bench_frames": pin_frames, "rows": rows, "comparisons": own_comparisons(rows),
            "casadi": casadi, "casadi_skipped": side_skipped}


def pin_cg_columns(pin_cg, urdf, floating, calls, functions):
    """{function: {cg_ns, cg_codegen_s, cg_operations}}: Pinocchio + CppADCodeGen's generated
    function of each of `functions` (its bare call, pin_cg_bench's <algo>_raw_ns: 64 cycling
    states, median of 7), the seconds its code generation and compilation took, and the
    operations of its generated C (counted in the sources it keeps). One run: generating the
    code is what takes long (minutes on Talos)."""
    if not pin_cg or not functions:
        return {}
    with tempfile.TemporaryDirectory(prefix="rbdgen-pin-cg-") as work:
        algos = ",".join(PIN_CG_NAMES[fn] for fn in functions)
        log(f"   Pinocchio + CppADCodeGen: generating and compiling {algos} ...")
        env = dict(os.environ, PIN_CG_CFLAGS=PIN_CG_CFLAGS, PIN_CG_KEEP="1", PIN_CG_WORKDIR=work)
        result = subprocess.run([pin_cg, urdf, "1" if floating else "0", str(calls), algos], capture_output=True,
                                text=True, env=env)
        if result.returncode != 0:
            sys.exit(f"bench_c: {pin_cg} failed:\n{result.stdout}{result.stderr}")
        values = {}
        for line in result.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                values[parts[0]] = parts[1]
        columns = {}
        for fn in functions:
            algo = PIN_CG_NAMES[fn]
            if f"{algo}_raw_ns" not in values:
                log(f"   Pinocchio + CppADCodeGen has no {algo}: {values.get(algo + '_error', 'no output')}")
                continue
            columns[fn] = {"cg_ns": float(values[f"{algo}_raw_ns"]), "cg_codegen_s": float(values[f"{algo}_codegen_s"]),
                           "cg_maxdiff": float(values[f"{algo}_maxdiff"]), "cg_operations": cg_operations(work, algo)}
        return columns


def cg_operations(work, algo):
    """The arithmetic operations of CppADCodeGen's C for `algo` (its <model>_forward_zero.c among
    the sources pin_cg_bench keeps; the derivatives' model is partial_<algorithm>): the binary
    + - * / of its statements, and the calls of the math library, as our operation counts count
    them. CppADCodeGen keeps operations that fold (0 - x, -1 * x, 1e-12 * x), so this counts
    what its C asks for, not what the compiler leaves."""
    model = "partial_" + algo[:-len("_derivs")] if algo.endswith("_derivs") else algo
    path = os.path.join(work, "cppadcg_sources", f"{model}_forward_zero.c")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        statements = [line.split("=", 1)[1] for line in f if re.match(r"\s*[vy]\[\d+\]\s*=", line)]
    text = re.sub(r"\d\.?\d*e[-+]\d+", "1", "\n".join(statements))   # exponents are not operations
    return (len(re.findall(r"(?<=[\w\])])\s*[-+*/]\s*(?=[-\w(.])", text))
            + len(re.findall(r"\b(?:sin|cos|sqrt|tan|exp|log|atan2|pow|fabs)\s*\(", text)))


def own_comparisons(rows):
    """eom against our own crba and nle called one after the other (goal: faster)."""
    by = {row["function"]: row for row in rows}
    if not {"eom", "crba", "nle"} <= set(by):
        return []
    eom, apart = by["eom"]["generated_ns"], by["crba"]["generated_ns"] + by["nle"]["generated_ns"]
    return [{"name": "eom vs our crba + nle", "generated_ns": eom, "reference_ns": apart,
             "speedup": apart / eom, "target": 1.0}]


def print_table(result):
    frame = f"; frame {result['frame']} (body {result['frame_body']})" if result["frame"] else ""
    contacts = f"; contacts {' '.join(result['contacts'])}" if result["contacts"] else "; no contacts"
    print(f"\n{result['robot']} (nq={result['nq']} nv={result['nv']}"
          f"{', floating base' if result['floating_base'] else ''}{contacts}{frame}; "
          f"{result['calls']} calls x {REPETITIONS} reps, median of {result['rounds']} rounds)")
    casadi = result["casadi"]
    w = max([len("function")] + [len(row["function"]) for row in result["rows"]])
    header = (f"{'function':<{w}} {'operations':>10} {'generated ns':>13} {'Pinocchio ns':>13} "
              f"{'speed-up':>9} {'target':>7}  met")
    cg = any(row.get("cg_ns") for row in result["rows"])
    if cg:
        header += f" {'CG ops':>8} {'CG ns':>9} {'vs CG':>7}"
    export = any(row.get("export_ns") for row in result["rows"])
    if export:
        header += f" {'export ns':>10} {'export/module':>14}"
    if casadi:
        header += f" {'adam ops':>9} {'adam ns':>10} {'vs adam':>9}"
    print(header)
    print("-" * len(header))
    for row in result["rows"]:
        speedup = fmt(row["speedup"], 2) + "x" if row["speedup"] else "-"
        target = f"{row['target']:g}x" if row["target"] else ""
        met = ("yes" if row["speedup"] >= row["target"] else "NO") if row["target"] and row["speedup"] else ""
        line = (f"{row['function']:<{w}} {row['operations']:>10} {fmt(row['generated_ns']):>13} "
                f"{fmt(row['pinocchio_ns']):>13} {speedup:>9} {target:>7}  {met:<3}")
        if cg:
            line += (f" {row.get('cg_operations') or '-':>8} {fmt(row.get('cg_ns')):>9} "
                     f"{(fmt(row['cg_speedup'], 2) + 'x') if row.get('cg_speedup') else '-':>7}")
        if export:
            line += f" {fmt(row['export_ns']):>10} {fmt(row['export_ns'] / row['generated_ns'], 2):>14}"
        if casadi:
            adam_speedup = fmt(row["casadi_speedup"], 2) + "x" if row["casadi_speedup"] else "-"
            line += (f" {row['casadi_operations'] or '-':>9} {fmt(row['casadi_ns']):>10} {adam_speedup:>9}")
        print(line.rstrip())
    for c in result["comparisons"]:
        print(f"{c['name']}: {fmt(c['generated_ns'])} ns vs {fmt(c['reference_ns'])} ns, "
              f"{c['speedup']:.2f}x (target > {c['target']:.0f}x)  {'yes' if c['speedup'] > c['target'] else 'NO'}")
    if casadi:
        print(f"adam {casadi['versions']['adam-robotics']} + CasADi {casadi['versions']['casadi']}: vs adam = "
              "adam ns / generated ns; '-' where adam has no such function")
        for fn, why in casadi["left_out"].items():
            print(f"  adam's {fn} not timed: {why}")
        for text in casadi["workarounds"]:
            print(f"  workaround: {text}")
    elif result["casadi_skipped"]:
        print(f"adam + CasADi column skipped: {result['casadi_skipped']}")
    if cg:
        cgs = [row for row in result["rows"] if row.get("cg_ns")]
        print(f"CG: Pinocchio + CppADCodeGen's generated function, bare call, its C by gcc {PIN_CG_CFLAGS} "
              f"(ours: {result['compiler']}); vs CG = CG ns / generated ns. Its code generation and compilation: "
              + ", ".join(f"{row['function']} {row['cg_codegen_s']:.1f} s" for row in cgs))
        theirs = sum(row["cg_codegen_s"] for row in cgs)
        if result["cold_build"] and len(cgs) == len(result["rows"]):
            print(f"Cold build of the same {len(cgs)} functions: ours {result['build_s']:.1f} s (generation, compilation "
                  f"and verification, wall), CG's {theirs:.1f} s (summed): {result['build_s'] / theirs:.2f} of CG's "
                  f"(target <= {CG_BUILD_TARGET})  {'yes' if result['build_s'] <= CG_BUILD_TARGET * theirs else 'NO'}")
        else:
            print(f"CG's code generation and compilation in all: {theirs:.1f} s (ours not compared: build into a new "
                  f"folder (--fresh) with --algorithms {','.join(row['function'] for row in cgs)} for a cold build of the same functions)")
    sys.stdout.flush()


def main(argv=None):
    parser = robot_parser(__doc__, DEFAULT_ROBOTS)
    parser.add_argument("--pin-bench", help="pin_bench executable (default: ../shared/bench/pin_bench beside "
                                            "the repository, built there when missing)")
    parser.add_argument("--pin-cg", help="pin_cg_bench executable (../shared/bench/pin_cg/build.sh): adds "
                                          "Pinocchio + CppADCodeGen's generated rnea, crba, aba, minv and "
                                          "derivatives as the 'CG ns' column (generating them takes minutes)")
    parser.add_argument("--calls", type=int, help="calls per repetition, for both sides "
                                                  "(default: 100000, 20000 when nv > 20)")
    parser.add_argument("--rounds", type=int, default=3, help="alternations driver/pin_bench (default: 3)")
    parser.add_argument("--algorithms", help="build only these functions, comma-separated (default: "
                                             "rbdgen's default set; a module built with another set is rebuilt)")
    parser.add_argument("--json", help="write every number to this JSON file")
    parser.add_argument("--parameters", action="append", metavar="SPEC",
                        help="build with these model parameters as run-time inputs (rbdgen build --parameters; "
                             "repeat it): every function is timed with random physical params per state")
    parser.add_argument("--no-casadi", action="store_true",
                        help="leave out the adam + CasADi column (benchmarks/casadi_side.py)")
    parser.add_argument("--export", action="store_true",
                        help="also time the same functions through the module's export (rbdgen export, CMake "
                             "with RBDGEN_NATIVE=ON, static library): the 'export ns' column")
    parser.add_argument("-v", "--verbose", action="store_true", help="show rbdgen's build progress")
    args = parser.parse_args(argv)
    if args.fresh:
        args.out = tempfile.mkdtemp(prefix="rbdgen-bench-modules-")
    try:
        run_all(args)
    finally:
        if args.fresh:
            shutil.rmtree(args.out, ignore_errors=True)


def run_all(args):
    pin_bench = resolve_pin_bench(args.pin_bench)
    specs = [robot_spec(r, args.floating_base, "bench_c") for r in args.robots]
    print(f"CPU: {cpu_name()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"pin_bench: {pin_bench}")
    args.casadi_skipped = "--no-casadi" if args.no_casadi else None
    missing = None if args.no_casadi else casadi_side.unavailable()
    if missing:
        args.casadi_skipped = f"adam's CasADi backend is not installed ({missing}); {casadi_side.INSTALL}"
        print(f"adam + CasADi column skipped: {missing}; install it with {casadi_side.INSTALL}")
    results = []
    for name, urdf, floating in specs:
        result = bench_robot(name, urdf, floating, args, pin_bench)
        print_table(result)
        results.append(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_name(), "casadi_skipped": args.casadi_skipped, "results": results}, f, indent=1)
        log(f"wrote {args.json}")



if __name__ == "__main__":
    main()
