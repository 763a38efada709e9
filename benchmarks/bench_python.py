#!/usr/bin/env python3
"""Per-call time from Python: the generated module against Pinocchio's Python bindings.

Same 64 random states for both (continuous joints converted to Pinocchio's cos/sin q),
timed in interleaved blocks (ours, Pinocchio, ours, ... with the order flipped every
round), each block a timeit-like loop of --calls calls with the garbage collector off;
the median per call over --rounds rounds is reported. Besides the public wrapper
(`module.rnea(q, v, a)`), two cheaper ways of calling the same C function are timed:
the wrapper with a preallocated `out=` and the bare cffi call through `module._lib` with
preallocated buffers (the floor of any Python call into the module).

The module is built with the robot's declared contacts (common.CONTACTS, as bench_c.py), and
two task-space calls are compared as well: `module.frame_jacobian(q, frame)` (the first
contact's frame) against `pinocchio.computeFrameJacobian(..., LOCAL_WORLD_ALIGNED)`, and
`module.contact_dynamics(q, v, tau)` against `pinocchio.constraintDynamics` with the same
contacts (exact ProximalSettings). Then batches: `module.frame_jacobian(Q, frame, out=...,
threads=1)` and `module.contact_dynamics(Q, V, TAU, out=..., threads=1)` on --batch states
(default 10 000), ns per state.

    python benchmarks/bench_python.py ur5 panda
    python benchmarks/bench_python.py panda --c-json c.json   # adds bench_c.py's C times

A script, not a test: pytest never collects it.
"""

import functools
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
from common import block, log, robot_contacts, robot_parser, robot_spec, timed
from rbdgen.algorithms.constrained import parse_contacts
from rbdgen.runtime.pinocchio_bridge import pinocchio_constraints, pinocchio_model, to_pinocchio_q
from rbdgen.model.states import random_state
from rbdgen.table.functions import BY_NAME

warnings.filterwarnings("ignore", message=".*<mimic> is ignored.*")
DEFAULT_ROBOTS = ("ur5", "panda")
K = 64
TARGET = 0.7     # ours / Pinocchio, per call from Python
TARGETS = {"frame_jacobian": 0.7, "contact_dynamics": 0.5}   # issue 8; the rest: TARGET
FUNCTIONS = ("rnea", "nle", "crba", "aba", "gravity", "rnea_derivatives", "aba_derivatives")
TARGETS.update({"rnea_derivatives": 0.5})      # issue 17: UR5's, from Python
OVERHEAD_TARGET = 400.0   # ns a Python call may add to the C time (issue 17)
OVERHEAD_BATCH = 4096     # states of the batch call whose time per state stands for the C time
# The public functions written by hand in the binding (the rest come from model.json's table),
# with their arguments: a state's q, v, a, tau (v_minus is v), the benchmark frame, a point.
TASK_SPACE = {"frame_placement": ("q", "frame"), "frame_jacobian": ("q", "frame"),
              "frame_velocity": ("q", "v", "frame"), "frame_acceleration": ("q", "v", "a", "frame"),
              "frame_velocity_derivatives": ("q", "v", "frame"),
              "frame_acceleration_derivatives": ("q", "v", "a", "frame"),
              "frame_classical_acceleration": ("q", "v", "a", "frame"), "point_jacobian": ("q", "frame", "point"),
              "point_velocity": ("q", "v", "frame", "point"), "point_acceleration": ("q", "v", "a", "frame", "point"),
              "point_gamma": ("q", "v", "frame", "point"), "contact_dynamics": ("q", "v", "tau"),
              "impulse_dynamics": ("q", "v"), "contact_inertia": ("q",)}
BATCH_ROUNDS = 7  # batch calls timed, median




def loop_overhead(args_list, calls):
    """ns per iteration of the same loop calling a do-nothing Python function (printed for
    reference, not subtracted)."""
    def nothing(*args):
        return None
    return min(block(nothing, args_list, calls) for _ in range(5))


def make_row(function, c_function, times, c_times):
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"function": function, "c_function": c_function, "ours_ns": med["ours"], "ours_out_ns": med["ours_out"],
            "cffi_ns": med["cffi"], "pinocchio_ns": med["pinocchio"], "ratio": med["ours"] / med["pinocchio"],
            "target": TARGETS.get(function, TARGET), "c_ns": (c_times or {}).get(c_function), "runs": times}


def pinocchio_contacts(pmodel, contacts):
    """Pinocchio's rigid constraints for our declared contacts (pinocchio_bridge, as the tests
    set them up); None when one is 1d (Pinocchio's constraintDynamics has no such contact)."""
    if any(c.kind not in ("3d", "6d") for c in contacts):
        return None
    return pinocchio_constraints(pmodel, contacts)


def bench_robot(name, urdf, floating, args, c_times):
    import pinocchio as pin
    contacts, frame = robot_contacts(name, args)
    log(f"== {name}: building (or reusing) the module in {args.out}"
        f"{' with contacts ' + ' '.join(contacts) if contacts else ''} ...")
    module = rbdgen.build(urdf, out_dir=args.out, floating_base=floating, contacts=list(contacts) or None)
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
        meta = json.load(f)
    prefix = f"rbdgen_{meta['module']}_"
    buf = functools.partial(ffi.from_buffer, "double[]")
    # Call Pinocchio's bound functions directly (no lambda) so its Python overhead is not inflated.
    pin_direct = {fn: getattr(pin, BY_NAME[fn].pinocchio.call) for fn in FUNCTIONS}   # the table's counterparts
    fns = [f for f in FUNCTIONS if f in module.operation_counts]
    rows = []
    for fn in fns:
        names = BY_NAME[fn].inputs
        ours = getattr(module, fn)
        out = np.empty(tuple(meta["functions"][fn]["shape"]))
        ours_args = [tuple(st[n] for n in names) for st in states]
        pout = buf(out)
        raw_args = [tuple(buf(st[n]) for n in names) + (pout,) for st in states]
        pin_args = [(pmodel, pdata) + tuple(st["pq"] if n == "q" else st[n] for n in names) for st in states]
        times = timed([("ours", ours, ours_args), ("ours_out", functools.partial(ours, out=out), ours_args),
                       ("cffi", getattr(lib, prefix + fn), raw_args), ("pinocchio", pin_direct[fn], pin_args)],
                      args.rounds, args.calls)
        rows.append(make_row(fn, fn, times, c_times))

    batch = []
    if frame is not None and hasattr(module, "frame_jacobian"):
        rows.append(bench_frame_jacobian(pin, module, meta, pmodel, pdata, states, frame, args, c_times))
        if args.batch > 0:
            batch.append(bench_batch("frame_jacobian", "frame_jacobian_local_world_aligned",
                                     lambda Q, V, T, out: module.frame_jacobian(Q, frame, out=out, threads=1),
                                     (6, model.nv), states, args, c_times))
    if contacts and "contact_dynamics" in module.operation_counts:
        declared = parse_contacts(model, contacts)
        pin_contacts = pinocchio_contacts(pmodel, declared)
        if pin_contacts is None:
            log("   Pinocchio has no 1d contacts: contact_dynamics is not compared")
        else:
            rows.append(bench_contact_dynamics(pin, module, meta, pmodel, pdata, states, pin_contacts, args, c_times))
        m = sum(c.rows for c in declared)
        if args.batch > 0:
            batch.append(bench_batch("contact_dynamics", "contact_dynamics",
                                     lambda Q, V, T, out: module.contact_dynamics(Q, V, T, out=out, threads=1),
                                     (model.nv + 2 * m,), states, args, c_times))
    overhead = bench_overhead(module, meta, model, states, frame, args)
    return {"robot": name, "nq": module.nq, "nv": module.nv, "floating_base": floating, "contacts": list(contacts),
            "frame": frame, "calls": args.calls, "rounds": args.rounds, "overhead": overhead,
            "loop_ns": loop_overhead([(st["q"],) for st in states], args.calls), "rows": rows,
            "batch": batch, "batch_size": args.batch}


def public_functions(module, meta, frame):
    """(name, argument names) of every public function of one state: the table's (model.json)
    and the task-space functions written in the binding (those of a frame when there is one)."""
    table = [(fn, tuple(x["name"] for x in row["inputs"])) for fn, row in meta["functions"].items()
             if row["kind"] != "frame" and not row["declared"] and hasattr(module, fn)]
    task = [(fn, names) for fn, names in TASK_SPACE.items()
            if hasattr(module, fn) and (frame is not None or "frame" not in names)]
    return table + [(fn, names) for fn, names in task if fn not in dict(table)]


def bench_overhead(module, meta, model, states, frame, args):
    """Per public function: the Python call on one state (as a user writes it, no out=) and the
    C time, taken as the time per state of one batch call of OVERHEAD_BATCH states on one thread
    (the Python cost spread over thousands of states); their difference is what the binding adds."""
    rng = np.random.default_rng(args.seed + 1)
    extra = {"fext": [rng.normal(size=6 * model.nbodies) for _ in states], "q1": [st["q"] for st in states[1:] + states[:1]]}
    shared = {"frame": frame, "point": np.array([0.01, -0.02, 0.03]), "damping": 0.0, "restitution": 0.5, "dt": 0.01}
    if getattr(module, "contacts", ()) == () and frame is not None:
        shared["contacts"] = [(frame, shared["point"], None)]       # call-time contacts
    rows = []
    for fn, names in public_functions(module, meta, frame):
        function = getattr(module, fn)
        keywords = {"contacts": shared["contacts"]} if "contacts" in shared and fn in (
            "contact_dynamics", "impulse_dynamics", "contact_inertia") else {}

        def value(n, k):
            if n in shared:
                return shared[n]
            return extra[n][k] if n in extra else states[k][n]
        singles = [tuple(value(n, k) for n in names) for k in range(K)]
        call = functools.partial(function, **keywords)
        python = statistics.median(timed([("one", call, singles)], max(5, args.rounds // 3), args.calls)["one"])
        picks = [k % K for k in range(OVERHEAD_BATCH)]
        batch = tuple(shared[n] if n in shared else np.array([value(n, k) for k in picks]) for n in names)
        try:
            call(*batch, threads=1)
        except (TypeError, ValueError) as exc:     # no batch form: the C time is not separable
            log(f"   {fn}: no batch call ({exc}); its C time is not measured")
            c_ns = None
        else:
            runs = []
            for _ in range(BATCH_ROUNDS):
                t0 = time.perf_counter_ns()
                call(*batch, threads=1)
                runs.append((time.perf_counter_ns() - t0) / OVERHEAD_BATCH)
            c_ns = statistics.median(runs)
        rows.append({"function": fn, "python_ns": python, "c_ns": c_ns,
                     "overhead_ns": None if c_ns is None else python - c_ns})
    return rows


def bench_frame_jacobian(pin, module, meta, pmodel, pdata, states, frame, args, c_times):
    """module.frame_jacobian(q, frame) against pinocchio.computeFrameJacobian(..., LOCAL_WORLD_ALIGNED)."""
    ffi, lib = module._ffi, module._lib
    cname = "frame_jacobian_local_world_aligned"
    body, placement = meta["frames"][frame]["body"], np.array(meta["frames"][frame]["placement"])
    fid = pmodel.getFrameId(frame)
    s = states[0]
    assert np.allclose(module.frame_jacobian(s["q"], frame),
                       pin.computeFrameJacobian(pmodel, pdata, s["pq"], fid, pin.LOCAL_WORLD_ALIGNED))
    J = np.empty((6, module.nv))
    ours_args = [(st["q"], frame) for st in states]
    pJ, pplacement = ffi.from_buffer("double[]", J), ffi.from_buffer("double[]", placement)
    raw_args = [(body, ffi.from_buffer("double[]", st["q"]), pplacement, pJ) for st in states]
    pin_args = [(pmodel, pdata, st["pq"], fid, pin.LOCAL_WORLD_ALIGNED) for st in states]
    times = timed([("ours", module.frame_jacobian, ours_args),
                   ("ours_out", functools.partial(module.frame_jacobian, out=J), ours_args),
                   ("cffi", getattr(lib, f"rbdgen_{meta['module']}_{cname}"), raw_args),
                   ("pinocchio", pin.computeFrameJacobian, pin_args)], args.rounds, args.calls)
    return make_row("frame_jacobian", cname, times, c_times)


def bench_contact_dynamics(pin, module, meta, pmodel, pdata, states, pin_contacts, args, c_times):
    """module.contact_dynamics(q, v, tau) (declared contacts) against pinocchio.constraintDynamics
    with the same contacts, exact solve (ProximalSettings(1e-12, mu = 0, 1 iteration), as pin_bench)."""
    ffi, lib = module._ffi, module._lib
    models, datas = pin_contacts
    pin.initConstraintDynamics(pmodel, pdata, models, datas)
    exact = pin.ProximalSettings(1e-12, 0.0, 1)
    s = states[0]
    qdd, _ = module.contact_dynamics(s["q"], s["v"], s["tau"])
    assert np.allclose(qdd, pin.constraintDynamics(pmodel, pdata, s["pq"], s["v"], s["tau"], models, datas, exact))
    flat = np.empty(tuple(meta["functions"]["contact_dynamics"]["shape"]))   # [q-ddot, lambda, pivots]
    damping = np.zeros(1)
    ours_args = [(st["q"], st["v"], st["tau"]) for st in states]
    pflat, pdamping = ffi.from_buffer("double[]", flat), ffi.from_buffer("double[]", damping)
    raw_args = [tuple(ffi.from_buffer("double[]", st[n]) for n in ("q", "v", "tau")) + (pdamping, pflat)
                for st in states]
    pin_args = [(pmodel, pdata, st["pq"], st["v"], st["tau"], models, datas, exact) for st in states]
    times = timed([("ours", module.contact_dynamics, ours_args),
                   ("ours_out", functools.partial(module.contact_dynamics, out=flat), ours_args),
                   ("cffi", getattr(lib, f"rbdgen_{meta['module']}_contact_dynamics"), raw_args),
                   ("pinocchio", pin.constraintDynamics, pin_args)], args.rounds, args.calls)
    return make_row("contact_dynamics", "contact_dynamics", times, c_times)


def bench_batch(function, c_function, call, shape, states, args, c_times):
    """ns per state of call(Q, V, TAU, out) on --batch states (the 64 cycled), one thread:
    median of BATCH_ROUNDS calls after one warm-up call (which also touches the output)."""
    n = args.batch
    pick = [states[i % K] for i in range(n)]
    Q, V, TAU = (np.array([st[key] for st in pick]) for key in ("q", "v", "tau"))
    out = np.empty((n,) + shape)
    call(Q, V, TAU, out)
    runs = []
    for _ in range(BATCH_ROUNDS):
        t0 = time.perf_counter_ns()
        call(Q, V, TAU, out)
        runs.append((time.perf_counter_ns() - t0) / n)
    return {"function": function, "c_function": c_function, "batch": n, "threads": 1,
            "ns_per_state": statistics.median(runs), "runs": runs, "c_ns": (c_times or {}).get(c_function)}


def print_table(result):
    print(f"\n{result['robot']} (nq={result['nq']} nv={result['nv']}"
          f"{', floating base' if result['floating_base'] else ''}"
          f"{'; contacts ' + ' '.join(result['contacts']) if result['contacts'] else ''}"
          f"{'; frame ' + result['frame'] if result['frame'] else ''}; {result['calls']} calls per block, "
          f"median of {result['rounds']} rounds; empty Python loop {result['loop_ns']:.0f} ns/iter)")
    w = max(len(row["function"]) for row in result["rows"] + [{"function": "function"}])
    header = (f"{'function':<{w}} {'ours ns':>9} {'out= ns':>9} {'cffi ns':>9} {'C ns':>7} "
              f"{'Pinocchio ns':>13} {'ours/pin':>9} {'target':>7}  met")
    print(header)
    print("-" * len(header))
    for row in result["rows"]:
        c = "-" if row["c_ns"] is None else f"{row['c_ns']:.0f}"
        met = "yes" if row["ratio"] <= row["target"] else "NO"
        print(f"{row['function']:<{w}} {row['ours_ns']:>9.0f} {row['ours_out_ns']:>9.0f} {row['cffi_ns']:>9.0f} "
              f"{c:>7} {row['pinocchio_ns']:>13.0f} {row['ratio']:>9.2f} {'<=' + str(row['target']):>7}  {met}")
    rows = result["overhead"]
    if rows:
        print(f"\nevery public function, one state: Python call (no out=) against the C time (per state of one "
              f"batch of {OVERHEAD_BATCH}, threads=1)")
        w2 = max(len(row["function"]) for row in rows)
        header = f"{'function':<{w2}} {'C ns':>8} {'Python ns':>10} {'difference':>11} {'target':>8}  met"
        print(header)
        print("-" * len(header))
        for row in rows:
            c = "-" if row["c_ns"] is None else f"{row['c_ns']:.0f}"
            d = "-" if row["overhead_ns"] is None else f"{row['overhead_ns']:.0f}"
            met = "" if row["overhead_ns"] is None else "yes" if row["overhead_ns"] <= OVERHEAD_TARGET else "NO"
            print(f"{row['function']:<{w2}} {c:>8} {row['python_ns']:>10.0f} {d:>11} {'<=' + str(int(OVERHEAD_TARGET)):>8}  {met}")
        measured = [row for row in rows if row["overhead_ns"] is not None]
        print(f"{sum(row['overhead_ns'] <= OVERHEAD_TARGET for row in measured)} of {len(measured)} within "
              f"{OVERHEAD_TARGET:.0f} ns; median difference {statistics.median(r['overhead_ns'] for r in measured):.0f} ns")
    if result["batch"]:
        print(f"\nbatches of {result['batch_size']} states, threads=1, median of {BATCH_ROUNDS} calls")
        per_call = {row["function"]: row["ours_ns"] for row in result["rows"]}
        header = f"{'function':<{w}} {'ns/state':>9} {'per call ns':>12} {'C ns':>7}"
        print(header)
        print("-" * len(header))
        for row in result["batch"]:
            one = per_call.get(row["function"])
            one = "-" if one is None else f"{one:.0f}"
            c = "-" if row["c_ns"] is None else f"{row['c_ns']:.0f}"
            print(f"{row['function']:<{w}} {row['ns_per_state']:>9.0f} {one:>12} {c:>7}")
    sys.stdout.flush()


def main(argv=None):
    parser = robot_parser(__doc__, DEFAULT_ROBOTS)
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed block (default: 2000)")
    parser.add_argument("--rounds", type=int, default=31, help="interleaved rounds (default: 31)")
    parser.add_argument("--batch", type=int, default=10000,
                        help="states per batch call (default: 10000; 0: no batches)")
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
