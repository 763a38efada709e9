#!/usr/bin/env python3
"""Per-call time from Python: the generated module against Pinocchio's Python bindings.

Same 64 random states for both (continuous joints converted to Pinocchio's cos/sin q),
timed in interleaved blocks (ours, Pinocchio, ours, ... with the order flipped every
round), each block a timeit-like loop of --calls calls with the garbage collector off;
the median per call over --rounds rounds is reported. Besides the public wrapper
(`module.rnea(q, v, a)`), two cheaper ways of calling the same C function are timed:
the wrapper with a preallocated `out=` and the bare cffi call through `module._lib` with
preallocated buffers (the floor of any Python call into the module).

    python benchmarks/bench_python.py ur5 panda
    python benchmarks/bench_python.py panda --c-json c.json   # adds bench_c.py's C times

A script, not a test: pytest never collects it.
"""

import functools
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

import rbdgen
from common import log, robot_parser, robot_spec
from rbdgen.runtime.pinocchio_bridge import pinocchio_model, to_pinocchio_q
from rbdgen.runtime.states import random_state

warnings.filterwarnings("ignore", message=".*<mimic> is ignored.*")
DEFAULT_ROBOTS = ("ur5", "panda")
K = 64
TARGET = 0.7     # ours / Pinocchio, per call from Python
FUNCTIONS = ("rnea", "nle", "crba", "aba", "gravity")
INPUTS = {"rnea": ("q", "v", "a"), "nle": ("q", "v"), "crba": ("q",), "aba": ("q", "v", "tau"),
          "gravity": ("q",)}




def block(fn, args_list, calls):
    """ns per call of fn(*args) cycling over args_list, `calls` calls, GC off (as timeit)."""
    n = len(args_list)
    items = [args_list[i % n] for i in range(calls)]
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        for args in items:
            fn(*args)
        t1 = time.perf_counter_ns()
    finally:
        if gc_was:
            gc.enable()
    return (t1 - t0) / calls


def loop_overhead(args_list, calls):
    """ns per iteration of the same loop calling a do-nothing Python function (printed for
    reference, not subtracted)."""
    def nothing(*args):
        return None
    return min(block(nothing, args_list, calls) for _ in range(5))


def bench_robot(name, urdf, floating, args, c_times):
    import pinocchio as pin
    log(f"== {name}: building (or reusing) the module in {args.out} ...")
    module = rbdgen.build(urdf, out_dir=args.out, floating_base=floating)
    model = rbdgen.load_urdf(urdf, floating_base=floating)
    pmodel = pinocchio_model(urdf, floating)
    pdata = pmodel.createData()
    rng = np.random.default_rng(args.seed)
    states = []
    for _ in range(K):
        q, v, a = random_state(model, rng)
        tau = rng.normal(size=model.nv)
        states.append({"q": q, "v": v, "a": a, "tau": tau, "pq": to_pinocchio_q(model, q)})
    # sanity: both compute the same thing on these inputs
    s = states[0]
    assert np.allclose(module.rnea(s["q"], s["v"], s["a"]), pin.rnea(pmodel, pdata, s["pq"], s["v"], s["a"]))

    ffi, lib = module._ffi, module._lib
    with open(os.path.join(os.path.dirname(module.__file__), "model.json"), encoding="utf-8") as f:
        meta_module = json.load(f)["module"]
    # Call Pinocchio's bound functions directly (no lambda) so its Python overhead is not inflated.
    pin_direct = {"rnea": pin.rnea, "nle": pin.nonLinearEffects, "crba": pin.crba, "aba": pin.aba,
                  "gravity": pin.computeGeneralizedGravity}
    fns = [f for f in FUNCTIONS if f in module.operation_counts]
    rows = []
    for fn in fns:
        names = INPUTS[fn]
        ours = getattr(module, fn)
        out = np.empty((model.nv, model.nv) if fn == "crba" else (model.nv,))
        ours_args = [tuple(st[n] for n in names) for st in states]
        ours_out = functools.partial(ours, out=out)
        cfn = getattr(lib, f"rbdgen_{meta_module}_{fn}")
        pout = ffi.from_buffer("double[]", out)
        raw_args = [tuple(ffi.from_buffer("double[]", st[n]) for n in names) + (pout,) for st in states]
        pin_args = [(pmodel, pdata) + tuple(st["pq"] if n == "q" else st[n] for n in names) for st in states]
        pfn = pin_direct[fn]
        # warm-up
        for f_, a_ in ((ours, ours_args), (ours_out, ours_args), (cfn, raw_args), (pfn, pin_args)):
            block(f_, a_, 200)
        times = {"ours": [], "ours_out": [], "cffi": [], "pinocchio": []}
        for r in range(args.rounds):
            order = [("ours", ours, ours_args), ("ours_out", ours_out, ours_args),
                     ("cffi", cfn, raw_args), ("pinocchio", pfn, pin_args)]
            if r % 2:
                order.reverse()
            for key, f_, a_ in order:
                times[key].append(block(f_, a_, args.calls))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"function": fn, "ours_ns": med["ours"], "ours_out_ns": med["ours_out"],
                     "cffi_ns": med["cffi"], "pinocchio_ns": med["pinocchio"],
                     "ratio": med["ours"] / med["pinocchio"],
                     "c_ns": (c_times or {}).get(fn), "runs": times})
    return {"robot": name, "nq": module.nq, "nv": module.nv, "floating_base": floating, "calls": args.calls,
            "rounds": args.rounds, "loop_ns": loop_overhead([(st["q"],) for st in states], args.calls),
            "rows": rows}


def print_table(result):
    print(f"\n{result['robot']} (nq={result['nq']} nv={result['nv']}"
          f"{', floating base' if result['floating_base'] else ''}; {result['calls']} calls per block, "
          f"median of {result['rounds']} rounds; empty Python loop {result['loop_ns']:.0f} ns/iter)")
    header = (f"{'function':<9} {'ours ns':>9} {'out= ns':>9} {'cffi ns':>9} {'C ns':>7} "
              f"{'Pinocchio ns':>13} {'ours/pin':>9} {'target':>7}  met")
    print(header)
    print("-" * len(header))
    for row in result["rows"]:
        c = "-" if row["c_ns"] is None else f"{row['c_ns']:.0f}"
        met = "yes" if row["ratio"] <= TARGET else "NO"
        print(f"{row['function']:<9} {row['ours_ns']:>9.0f} {row['ours_out_ns']:>9.0f} {row['cffi_ns']:>9.0f} "
              f"{c:>7} {row['pinocchio_ns']:>13.0f} {row['ratio']:>9.2f} {'<=' + str(TARGET):>7}  {met}")
    sys.stdout.flush()


def main(argv=None):
    parser = robot_parser(__doc__, DEFAULT_ROBOTS)
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed block (default: 2000)")
    parser.add_argument("--rounds", type=int, default=31, help="interleaved rounds (default: 31)")
    parser.add_argument("--c-json", help="bench_c.py --json output: adds its C ns/call column")
    parser.add_argument("--json", help="write every number to this JSON file")
    args = parser.parse_args(argv)
    if args.fresh:
        args.out = tempfile.mkdtemp(prefix="rbdgen-bench-modules-")
    try:
        run_all(args)
    finally:
        if args.fresh:
            shutil.rmtree(args.out, ignore_errors=True)


def run_all(args):
    c_by_robot = {}
    if args.c_json:
        with open(args.c_json) as f:
            for res in json.load(f)["results"]:
                c_by_robot[res["robot"]] = {row["function"]: row["generated_ns"] for row in res["rows"]}
    import pinocchio as pin
    print(f"Python {platform.python_version()}, numpy {np.__version__}, pinocchio {pin.__version__}; "
          f"load average {os.getloadavg()[0]:.2f}")
    results = []
    for arg in args.robots:
        name, urdf, floating = robot_spec(arg, args.floating_base, "bench_python")
        result = bench_robot(name, urdf, floating, args, c_by_robot.get(name))
        print_table(result)
        results.append(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results}, f, indent=1)
        log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
