#!/usr/bin/env python3
"""Christoffel symbols (and the Coriolis matrix) of 20-DoF chains and trees: operations and
time per call of the generated C, against the numeric times of seed 002 (Table 1).

Two seeded random models of revolute joints (random unit axes, random placements, physically
valid random inertias): a serial chain (body i hangs from body i-1) and a binary tree (body i
hangs from body (i-1)//2). Each is built with only `christoffel` and `coriolis` into a fresh
temporary folder, then timed three ways:

- batched: module.christoffel(Q, out=OUT, threads=1) with Q of shape (B, nq), the loop over
  the B states running in C on one thread; median of --rounds calls, divided by B. The output
  is B x nv^3 doubles (64 KB per state at nv = 20), written to memory once per state;
- driver: bench_c.py's C driver (the module's C files compiled with a timing loop, 64 states
  cycled, one output buffer that stays in cache), median ns per call;
- Python: module.christoffel(q) for one state at a time (a timeit-like block), median.

    python benchmarks/bench_christoffel.py
    python benchmarks/bench_christoffel.py --nv 20 --batch 2000 --rounds 7 --json out.json

A script, not a test: pytest never collects it.
"""

import argparse
import gc
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

import rbdgen
from rbdgen.model import Revolute
from rbdgen.model.states import random_configuration
from rbdgen.spatial import Inertia, Transform

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_c  # noqa: E402  (its C driver)

# seed 002 (Echeverri et al.), Table 1: numeric evaluation in C/C++ on an i7 at 3.2 GHz, µs
SEED_002_US = {"chain": {"christoffel": 122.0, "coriolis": 18.0},
               "tree": {"christoffel": 33.0, "coriolis": 10.0}}
GOAL_US = {"chain": 10.0, "tree": 4.0}        # christoffel, µs per call of the generated C
FUNCTIONS = ("christoffel", "coriolis")


def log(message):
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- models ------------------

def random_rotation(rng):
    x, y, z, w = (lambda u: u / np.linalg.norm(u))(rng.normal(size=4))
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def random_inertia(rng):
    """Mass in [0.5, 3], COM in a box, rotational inertia at the COM tr(S) 1 - S (S > 0
    diagonal in a random frame: the triangle inequality holds)."""
    mass = rng.uniform(0.5, 3.0)
    s = mass * rng.uniform(0.005, 0.05, 3)
    R = random_rotation(rng)
    Ic = R @ (np.sum(s) * np.eye(3) - np.diag(s)) @ R.T
    Ic = (Ic + Ic.T) / 2
    return Inertia.from_com(mass, tuple(rng.uniform(-0.2, 0.2, 3)), tuple(map(tuple, Ic)))


def random_model(kind, nbodies, seed):
    """kind "chain": parent of body i is i-1; "tree": (i-1)//2 (a binary tree)."""
    rng = np.random.default_rng(seed)
    builder = rbdgen.ModelBuilder(f"christoffel_{kind}{nbodies}")
    for i in range(nbodies):
        parent = -1 if i == 0 else (i - 1 if kind == "chain" else (i - 1) // 2)
        axis = rng.normal(size=3)
        X_T = Transform(tuple(map(tuple, random_rotation(rng))), tuple(rng.uniform(-0.5, 0.5, 3)))
        builder.add_body(parent, Revolute(tuple(axis / np.linalg.norm(axis))), f"joint{i}", f"body{i}",
                         X_T=X_T, inertia=random_inertia(rng))
    return builder.finish()


# ---------------------------------------------------------------- timing ------------------

def time_batched(fn, inputs, out, rounds):
    """Median seconds of fn(*inputs, out=out, threads=1) over `rounds` calls (one warm-up)."""
    fn(*inputs, out=out, threads=1)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(*inputs, out=out, threads=1)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def time_python(fn, states, calls, rounds):
    """Median ns per call of fn(*state) cycling over states, blocks of `calls` calls, GC off."""
    items = [states[i % len(states)] for i in range(calls)]
    for args in items[:200]:
        fn(*args)
    per_call = []
    gc.disable()
    try:
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            for args in items:
                fn(*args)
            per_call.append((time.perf_counter_ns() - t0) / calls)
    finally:
        gc.enable()
    return statistics.median(per_call)


def time_driver(module, model, functions, seed, rounds, out_dir):
    """bench_c.py's C driver on the module's own C files: median ns per call per function.

    The driver is built in `out_dir` next to the module and reused while the module's C files,
    the flags and the seed are unchanged (compiling the chain's christoffel takes minutes):
    with --keep, a second run does not compile it again."""
    package = os.path.dirname(os.path.abspath(module.__file__))
    with open(os.path.join(package, "model.json"), encoding="utf-8") as f:
        meta = json.load(f)
    order = [fn for fn in functions if fn in meta["functions"]]
    h = hashlib.sha256(repr((bench_c.FLAGS, seed, order)).encode())
    for name in [f"rbdgen_{meta['module']}.h"] + [f"rbdgen_{meta['module']}_{fn}.c" for fn in meta["functions"]]:
        with open(os.path.join(package, name), "rb") as f:
            h.update(f.read())
    folder = os.path.join(out_dir, f".driver-{meta['module']}-{h.hexdigest()[:16]}")
    exe = os.path.join(folder, "bench_driver")
    if not os.access(exe, os.X_OK):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        log("   compiling the C driver ...")
        exe, _ = bench_c.build_driver(package, meta, folder, order, model, seed)
    runs = [bench_c.run([exe, os.path.join(folder, "inputs.bin"), "20000"]) for _ in range(rounds)]
    return {fn: statistics.median(r[fn] for r in runs) for fn in order}


def bench_model(kind, args, out_dir):
    model = random_model(kind, args.nv, args.seed)
    log(f"== {kind}: building {model.name} (nv={model.nv}; {', '.join(FUNCTIONS)}) into {out_dir} ...")
    t0 = time.perf_counter()
    module = rbdgen.build_model(model, out_dir=out_dir, algorithms=list(FUNCTIONS),
                                progress=lambda m: log(f"   {m}") if args.verbose else None)
    build_s = time.perf_counter() - t0
    rng = np.random.default_rng(args.seed + 1)
    B = args.batch
    Q = random_configuration(model, rng, batch=B)
    V = rng.normal(size=(B, model.nv))
    inputs = {"christoffel": (Q,), "coriolis": (Q, V)}
    rows = []
    log(f"   timing the batched calls (B={B}, {args.rounds} rounds) ...")
    for fn in FUNCTIONS:
        shape = (B, model.nv, model.nv, model.nv) if fn == "christoffel" else (B, model.nv, model.nv)
        out = np.zeros(shape)                      # touched: no page faults in the timing
        med, times = time_batched(getattr(module, fn), inputs[fn], out, args.rounds)
        single = [tuple(x[k] for x in inputs[fn]) for k in range(min(64, B))]
        py_ns = time_python(getattr(module, fn), single, args.calls, args.rounds)
        rows.append({"function": fn, "operations": module.operation_counts[fn], "batched_us": med / B * 1e6,
                     "batched_runs_s": times, "python_us": py_ns / 1e3,
                     "seed002_us": SEED_002_US[kind][fn],
                     "goal_us": GOAL_US[kind] if fn == "christoffel" else None})
        del out
    driver = {}
    if not args.no_driver:
        driver = time_driver(module, model, FUNCTIONS, args.seed, 3, out_dir)
        log("   timed the C driver")
    for row in rows:
        row["driver_us"] = driver[row["function"]] / 1e3 if driver else None
    return {"model": kind, "name": model.name, "nv": model.nv, "build_s": build_s, "rows": rows}


def print_table(results, args, load):
    print(f"\n{args.nv}-DoF revolute chain and binary tree (seed {args.seed}); batched: B={args.batch} states, "
          f"threads=1, median of {args.rounds} calls / B; driver: bench_c.py's C loop over 64 states; "
          f"Python: one state per call, blocks of {args.calls}; load average {load:.2f}")
    header = (f"{'model':<6} {'nv':>3} {'function':<12} {'operations':>10} {'C batched us':>13} "
              f"{'C driver us':>12} {'Python us':>10} {'seed 002 us':>12} {'vs 002':>7} {'goal us':>8}  met")
    print(header)
    print("-" * len(header))
    for res in results:
        for row in res["rows"]:
            goal = f"< {row['goal_us']:.0f}" if row["goal_us"] else ""
            met = ("yes" if row["batched_us"] < row["goal_us"] else "NO") if row["goal_us"] else ""
            print(f"{res['model']:<6} {res['nv']:>3} {row['function']:<12} {row['operations']:>10} "
                  f"{row['batched_us']:>13.2f} {bench_c.fmt(row['driver_us'], 2):>12} {row['python_us']:>10.2f} "
                  f"{row['seed002_us']:>12.0f} {row['seed002_us'] / row['batched_us']:>6.1f}x {goal:>8}  {met}")
    print("(vs 002 = seed 002's time / C batched; met: C batched < goal; build times: "
          + ", ".join(f"{r['model']} {r['build_s']:.1f} s" for r in results) + ")")
    sys.stdout.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nv", type=int, default=20, help="bodies (= DoF) of each model (default: 20)")
    parser.add_argument("--batch", type=int, default=2000, help="states B of the batched call (default: 2000)")
    parser.add_argument("--rounds", type=int, default=7, help="timed calls / blocks, median (default: 7)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per block from Python (default: 2000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the models and states (default: 0)")
    parser.add_argument("--keep", help="build into this folder (kept; the modules and C drivers are reused "
                                       "while unchanged) instead of a temporary one")
    parser.add_argument("--no-driver", action="store_true", help="skip the C driver column (its compilation "
                                                                 "takes minutes for the chain)")
    parser.add_argument("--json", help="write every number to this JSON file")
    parser.add_argument("-v", "--verbose", action="store_true", help="show rbdgen's build progress")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    print(f"CPU: {bench_c.cpu_name()}, {os.cpu_count()} CPUs, load average {load:.2f}", flush=True)
    out_dir = args.keep or tempfile.mkdtemp(prefix="rbdgen-bench-christoffel-")
    try:
        results = [bench_model(kind, args, out_dir) for kind in ("chain", "tree")]
    finally:
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)
    print_table(results, args, load)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": bench_c.cpu_name(), "load": load, "results": results}, f, indent=1)
        log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
