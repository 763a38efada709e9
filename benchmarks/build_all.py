"""Every URDF of example-robot-data that Pinocchio loads, built with default options, and the
digits of each function: against Pinocchio, and against extended precision next to Pinocchio's own.

    python benchmarks/build_all.py                      # every robot, fixed base (rbdgen build's default)
    python benchmarks/build_all.py --floating-base      # every robot on a free-flyer
    python benchmarks/build_all.py xarm7 so101 icub     # robots whose file name contains a word
    python benchmarks/build_all.py --json all.json      # also the figures, for the README's summary
    python benchmarks/build_all.py --after icub_description/robots/icub_reduced.urdf   # resume

Per robot: nq, nv, cond(M) (worst of the states), the cold build time (a fresh folder), and
per function of the module that is not a function of a frame, at STATES seeded states:
  ours~pin   our generated function against Pinocchio's (normwise relative, worst state);
  ours       its forward error against the extended-precision truth (rbdgen.runtime.accuracy:
             the table's algorithm in 40 digits, on rbdgen's model of the URDF);
  pin        Pinocchio's forward error against the same truth ('-' where Pinocchio has no
             such function); ours/pin their ratio.
A build that fails prints its one-line error and the script goes on. The closing summary
counts the robots built and the functions over max(10 x Pinocchio's error, 1e-13).
"""

import argparse
import json
import os
import sys
import tempfile
import time
import warnings

import numpy as np

import rbdgen
from rbdgen.table import functions as fn_table
from rbdgen.errors import RbdgenError
from rbdgen.examples import robots_dir
from rbdgen.runtime.accuracy import extended_values, forward_errors, part_slices
from rbdgen.runtime.pinocchio_bridge import PinocchioRefused, pinocchio_model, to_pinocchio_q
from rbdgen.runtime.verify import random_inputs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_name, log  # noqa: E402

STATES = 3
TARGET = 1e-13     # the issue's: within max(10 x Pinocchio's error, 1e-13)


def measure(path, floating, out_dir):
    """(row, [function rows]) for one URDF, or (row with 'error', [])."""
    import pinocchio as pin
    row = {"robot": os.path.relpath(path, robots_dir()), "floating": floating}
    try:
        pm = pinocchio_model(path, floating)
    except PinocchioRefused as exc:
        return dict(row, skipped=str(exc)), []
    if pm.nv == 0:   # rbdgen build refuses it in one line: no coordinates, nothing to compute
        return dict(row, skipped="no joints (nv = 0) with a fixed base"), []
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = rbdgen.load_urdf(path, floating_base=floating)
            module = rbdgen.build(path, out_dir=out_dir, floating_base=floating)
    except RbdgenError as exc:
        return dict(row, error=str(exc), build_s=time.perf_counter() - t0), []
    row.update(build_s=time.perf_counter() - t0, nq=model.nq, nv=model.nv)
    inputs = random_inputs(model, np.random.default_rng(0), STATES)
    qs = [to_pinocchio_q(model, q) for q in inputs["q"]]
    try:
        row["cond"] = max(float(np.linalg.cond(module.crba(q))) for q in inputs["q"])
    except np.linalg.LinAlgError:
        row["cond"] = float("inf")
    results = []
    for name in module.operation_counts:
        spec = fn_table.BY_NAME.get(name)
        if spec is None or spec.per_body or spec.declared or not hasattr(module, name):
            continue
        truth = extended_values(model, spec, {n: inputs[n] for n in spec.inputs})
        parts = part_slices(model, spec)
        args = [float(inputs[n][0, 0]) if n == "dt" else inputs[n] for n in spec.inputs]
        ours = np.asarray(_flat(getattr(module, name)(*args)), dtype=float).reshape(truth.shape)
        result = {"function": name, "ours": float(forward_errors(ours, truth, parts).max())}
        if spec.pinocchio:   # the function table's counterpart
            try:
                theirs = np.array([spec.pinocchio.values(pin, pm, pm.createData(), q, {k: inputs[k][s] for k in inputs})
                                   for s, q in enumerate(qs)]).reshape(truth.shape)
            except RuntimeError as exc:
                result["pin_note"] = str(exc).splitlines()[0]
            else:
                result["pin"] = float(forward_errors(theirs, truth, parts).max())
                result["ours_vs_pin"] = float(forward_errors(ours, theirs, parts).max())
        results.append(result)
    return row, results


def _flat(result):
    if isinstance(result, tuple):
        return np.concatenate([np.reshape(p, (np.shape(p)[0], -1)) for p in result], axis=-1)
    return result


def _e(x):
    return "-" if x is None else f"{x:.1e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("robots", nargs="*", help="words that pick robots by file name (default: all)")
    parser.add_argument("--floating-base", action="store_true", help="a free-flyer root for every robot")
    parser.add_argument("--out", help="build folder (default: a fresh temporary one, so builds are cold)")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--after", metavar="PATH", help="resume: only the URDFs sorted after this one (a path "
                                                        "under the robots folder, as printed)")
    args = parser.parse_args()
    root = robots_dir()
    paths = sorted(os.path.join(folder, f) for folder, _, files in os.walk(root) for f in files if f.endswith(".urdf"))
    if args.robots:
        paths = [p for p in paths if any(word in os.path.basename(p) for word in args.robots)]
    if args.after:
        paths = [p for p in paths if os.path.relpath(p, root) > args.after]
    out_dir = args.out or tempfile.mkdtemp(prefix="rbdgen_build_all_")
    print(f"# {len(paths)} URDFs, {'floating' if args.floating_base else 'fixed'} base; CPU {cpu_name()}; "
          f"{STATES} states; errors normwise relative per output part, worst state")
    rows, over = [], []
    for path in paths:
        log(f"building {os.path.relpath(path, root)}")
        row, results = measure(path, args.floating_base, out_dir)
        row["functions"] = results
        rows.append(row)
        if "skipped" in row:
            print(f"\n{row['robot']}: skipped ({row['skipped']})")
            continue
        if "error" in row:
            print(f"\n{row['robot']}: BUILD FAILED after {row['build_s']:.0f} s: {row['error']}")
            continue
        print(f"\n{row['robot']}: nq={row['nq']} nv={row['nv']} cond(M) {row['cond']:.1e}, built in "
              f"{row['build_s']:.1f} s")
        print(f"  {'function':22s} {'ours~pin':>9s} {'ours':>9s} {'pin':>9s} {'ours/pin':>9s}")
        for r in results:
            pin_err = r.get("pin")
            ratio = r["ours"] / pin_err if pin_err else None   # Pinocchio exact: no ratio
            bad = r["ours"] > max(10 * (pin_err if pin_err is not None else 0.0), TARGET)
            if bad:
                over.append((row["robot"], r["function"], r["ours"], pin_err))
            print(f"  {r['function']:22s} {_e(r.get('ours_vs_pin')):>9s} {_e(r['ours']):>9s} {_e(pin_err):>9s} "
                  f"{_e(ratio) if ratio is None else f'{ratio:9.2f}':>9s}{'  OVER' if bad else ''}", flush=True)
    built = [r for r in rows if "nv" in r]
    loaded = [r for r in rows if "skipped" not in r]
    print(f"\n# built {len(built)} of {len(loaded)} URDFs that Pinocchio loads with joints to move "
          f"({len(rows) - len(loaded)} skipped: Pinocchio refuses them, or nv = 0); build time median "
          f"{np.median([r['build_s'] for r in built]):.1f} s, max {max(r['build_s'] for r in built):.1f} s")
    worst_pin = max((f.get("ours_vs_pin", 0.0) for r in built for f in r["functions"]), default=0.0)
    print(f"# worst difference from Pinocchio: {worst_pin:.1e}")
    print(f"# functions over max(10 x Pinocchio's error, {TARGET:g}) against extended precision: {len(over)}")
    for robot, function, ours, theirs in over:
        print(f"#   {robot} {function}: {ours:.1e} (Pinocchio {_e(theirs)})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
