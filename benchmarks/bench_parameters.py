#!/usr/bin/env python3
"""What run-time model parameters cost: for each robot, the module built with --parameters next
to the module built without them, in one run.

- cold builds (fresh folders, no compiled-object cache) of the same functions, with and without;
- batches in C on one thread (B states through the Python function, whose overhead is a few
  microseconds per call): no parameters, one params vector for the whole batch (the C batch
  reads it for every state: params_shared), and one set per state (random physical values), medians of --rounds alternations;
- operation counts of each function, with and without.

The single-call speed against Pinocchio is bench_c.py --parameters.

    python benchmarks/bench_parameters.py                     # panda, inertia:all payload:panda_hand gravity
    python benchmarks/bench_parameters.py ur5 --parameters gravity --parameters armature

A script, not a test: pytest never collects it.
"""

import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

import rbdgen
from common import cpu_name, log, robot_parser, robot_spec
from rbdgen.model.parameters import parameters_of, with_parameters
from rbdgen.model.states import random_state

warnings.filterwarnings("ignore", message=".*<mimic> is ignored.*")
DEFAULT_PARAMETERS = {"panda": ["inertia:all", "payload:panda_hand", "gravity"]}
FUNCTIONS = "rnea,crba,aba,minv,rnea_derivatives,aba_derivatives"


def build(urdf, floating, functions, parameters, folder):
    t0 = time.perf_counter()
    module = rbdgen.build(urdf, out_dir=folder, floating_base=floating, algorithms=functions, parameters=parameters)
    return module, time.perf_counter() - t0


def batch_times(module, plain, model, functions, batch, rounds, seed):
    """{function: (ns per state without parameters, with one shared vector, with one per state)}."""
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng, batch)
    per_state = parameters_of(with_parameters(model, module._META["params"]["specs"])).sample(rng, batch)
    shared = per_state[0].copy()
    times = {}
    for fn in functions:
        args = (q,) if fn in ("crba", "minv") else (q, v, a)
        calls = [lambda: getattr(plain, fn)(*args, threads=1),
                 lambda: getattr(module, fn)(*args, params=shared, threads=1),
                 lambda: getattr(module, fn)(*args, params=per_state, threads=1)]
        samples = [[] for _ in calls]
        for _ in range(rounds):
            for k, call in enumerate(calls):
                t0 = time.perf_counter()
                call()
                samples[k].append((time.perf_counter() - t0) / batch * 1e9)
        times[fn] = tuple(statistics.median(s) for s in samples)
    return times


def main(argv=None):
    parser = robot_parser(__doc__, ["panda"])
    parser.add_argument("--parameters", action="append", metavar="SPEC", help="default: " +
                        "; ".join(f"{k}: {' '.join(v)}" for k, v in DEFAULT_PARAMETERS.items()))
    parser.add_argument("--functions", default=FUNCTIONS, help=f"comma-separated (default: {FUNCTIONS})")
    parser.add_argument("--batch", type=int, default=10000, help="states per batch call (default: 10000)")
    parser.add_argument("--rounds", type=int, default=7, help="alternated batch calls, median (default: 7)")
    args = parser.parse_args(argv)
    functions = [f.strip() for f in args.functions.split(",") if f.strip()]
    print(f"CPU: {cpu_name()}")
    for robot in args.robots:
        name, urdf, floating = robot_spec(robot, args.floating_base, "bench_parameters")
        parameters = args.parameters or DEFAULT_PARAMETERS.get(name, ["inertia:all", "gravity"])
        log(f"== {name}: cold builds with and without {' '.join(parameters)} ...")
        with tempfile.TemporaryDirectory() as without, tempfile.TemporaryDirectory() as with_:
            plain, t_plain = build(urdf, floating, functions, None, without)
            module, t_params = build(urdf, floating, functions, parameters, with_)
            model = rbdgen.load_urdf(urdf, floating_base=floating)
            times = batch_times(module, plain, model, functions, args.batch, args.rounds, args.seed)
        print(f"\n{name}, parameters {' '.join(parameters)} ({len(module.param_names)}): cold build "
              f"{t_params:.1f} s with, {t_plain:.1f} s without ({t_params / t_plain:.2f}x)")
        print(f"{'function':18s} {'ops without':>11s} {'ops with':>9s}  batch ns/state: {'none':>7s} "
              f"{'shared':>7s} {'per state':>9s}  per state / none")
        for fn in functions:
            none, shared, per_state = times[fn]
            print(f"{fn:18s} {plain.operation_counts[fn]:11d} {module.operation_counts[fn]:9d}  "
                  f"{'':15s} {none:7.0f} {shared:7.0f} {per_state:9.0f}  {per_state / none:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
