#!/usr/bin/env python3
"""The symbolic run on the generator's expression graph against the same run on SymPy scalars,
and rbdgen.symbolic's time.

For one function of one robot (default: Panda's crba):

- graph: the algorithm recorded on rbdgen/codegen/expr.py's graph (rbdgen.codegen.recorder.record,
  every line bound to a temporary), then with the optimizer (dead code, CSE) as a build does;
- SymPy: the same algorithm recorded on SymPy scalars (rbdgen.symbolic.SympyOps(record=True):
  every line bound to a fresh SymPy symbol), SymPy's cache cleared before each round;
- rbdgen.symbolic: the graph's optimized program written as SymPy in sympy.cse's form, without
  parameters and with --parameters (default inertia:all).

Each time is the best of --rounds.

    python benchmarks/bench_symbolic.py
    python benchmarks/bench_symbolic.py ur5 rnea --rounds 5 --parameters inertia:all,gravity

A script, not a test: pytest never collects it.
"""

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import robot_spec  # noqa: E402


def best(fn, rounds, before=None):
    times = []
    for _ in range(rounds):
        if before:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("robot", nargs="?", default="panda", help="a name of rbdgen.examples.ROBOTS or a .urdf path")
    parser.add_argument("function", nargs="?", default="crba", help="a function of states (default crba)")
    parser.add_argument("--floating-base", action="store_true")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--parameters", default="inertia:all", help="SPECs for the second rbdgen.symbolic run")
    args = parser.parse_args()

    import sympy
    from sympy.core.cache import clear_cache

    import rbdgen
    from rbdgen.codegen.optimize import optimize
    from rbdgen.codegen.recorder import record
    from rbdgen.model.sources import load_model
    from rbdgen.symbolic import SympyOps, coordinate_names
    from rbdgen.table.functions import BY_NAME

    name, path, floating = robot_spec(args.robot, args.floating_base, "bench_symbolic.py")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(path, floating_base=floating)
    spec = BY_NAME[args.function]
    sizes = spec.input_sizes(model)

    def graph():
        return record(lambda ops, *inputs: spec.run(model, ops, *inputs), sizes, spec.output(model))

    def on_sympy():
        ops = SympyOps(record=True)
        spec.run(model, ops, *[[sympy.Symbol(x) for x in coordinate_names(n, size)] for n, size in sizes])
        return ops

    recorded = graph()
    statements = len(on_sympy().replacements)
    t_graph = best(graph, args.rounds)
    t_optimized = best(lambda: optimize(graph()), args.rounds)
    t_sympy = best(on_sympy, args.rounds, before=clear_cache)
    parameters = [p for p in args.parameters.split(",") if p]
    t_symbolic = best(lambda: rbdgen.symbolic(model, args.function), args.rounds, before=clear_cache)
    t_parameters = best(lambda: rbdgen.symbolic(model, args.function, parameters=parameters), args.rounds,
                        before=clear_cache)
    print(f"{name} {args.function} (nv = {model.nv}), best of {args.rounds}:")
    print(f"  recorded on the graph        {t_graph * 1e3:8.1f} ms  ({len(recorded.statements)} statements)")
    print(f"  ... and optimized            {t_optimized * 1e3:8.1f} ms")
    print(f"  recorded on SymPy scalars    {t_sympy * 1e3:8.1f} ms  ({statements} statements): "
          f"{t_sympy / t_graph:.0f} x the graph's recording")
    print(f"  rbdgen.symbolic              {t_symbolic * 1e3:8.1f} ms")
    print(f"  rbdgen.symbolic, {args.parameters:12s}{t_parameters * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
