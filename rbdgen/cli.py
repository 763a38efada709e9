"""rbdgen build | info | verify | bench.

User mistakes (missing file, bad URDF, unknown algorithm) print one line and exit 2;
a mismatch found by `verify` exits 1.
"""

import argparse
import os
import sys
import time
import warnings

from .errors import RbdgenError


def _progress(start):
    def report(message):
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=sys.stderr, flush=True)
    return report


def _algorithms(text):
    return [a.strip() for a in text.split(",") if a.strip()] if text else None


def cmd_build(args):
    from .codegen.build import build
    report = _progress(time.perf_counter())
    module = build(args.urdf, out_dir=args.output, floating_base=args.floating_base, name=args.name,
                   algorithms=_algorithms(args.algorithms), native=not args.no_native, progress=report)
    path = os.path.dirname(module.__file__)
    print(f"built {path}")
    for name, ops in module.operation_counts.items():
        print(f"  {name:18s} {ops:8d} operations")
    return 0


def cmd_info(args):
    from .model.urdf import load_urdf
    model = load_urdf(args.urdf, floating_base=args.floating_base)
    print(f"robot {model.name}: nq={model.nq} nv={model.nv} bodies={model.nbodies} "
          f"total mass={model.total_mass:.6g} kg")
    depth = {}
    print(f"{'joint':32s} {'type':12s} {'parent body':24s} idx_q nq idx_v nv")
    for i, joint in enumerate(model.joints):
        p = model.parent[i]
        depth[i] = 0 if p < 0 else depth[p] + 1
        parent = model.body_names[p] if p >= 0 else "(world)"
        print(f"{'  ' * depth[i] + joint.name:32s} {joint.type:12s} {parent:24s} "
              f"{joint.idx_q:5d} {joint.nq:2d} {joint.idx_v:5d} {joint.nv:2d}")
    fixed = [f.name for f in model.frames if f.name not in model.body_names]
    if fixed:
        print(f"fixed frames: {', '.join(fixed)}")
    return 0


def cmd_verify(args):
    from .codegen.build import build, load
    from .model.urdf import load_urdf
    from .runtime.verify import verify_module
    if os.path.isdir(args.target):
        module = load(args.target)
        urdf, floating = _source_of(args)
        model = load_urdf(urdf, floating_base=floating)
    else:
        model = load_urdf(args.target, floating_base=args.floating_base)
        module = build(args.target, out_dir=args.output, floating_base=args.floating_base,
                       progress=_progress(time.perf_counter()))
    report = verify_module(module, model, states=args.states, seed=args.seed, rel_tol=args.tol)
    ok = all(r["ok"] for r in report.values())
    print(f"{'function':18s} worst relative error vs reference ({args.states} states, tol {args.tol:g})")
    for name, r in report.items():
        print(f"  {name:18s} {r['error']:.2e}  {'ok' if r['ok'] else 'MISMATCH'}")
    pin_report = _verify_pinocchio(module, model, args)
    if pin_report is not None:
        print("function           worst relative error vs Pinocchio")
        for name, err in pin_report.items():
            good = err <= 1e-9
            ok = ok and good
            print(f"  {name:18s} {err:.2e}  {'ok' if good else 'MISMATCH'}")
    return 0 if ok else 1


def _source_of(args):
    """(URDF path, floating base) of the verify target: for a module, what it was built from."""
    if not os.path.isdir(args.target):
        return args.target, args.floating_base
    import json
    with open(os.path.join(args.target, "model.json"), encoding="utf-8") as f:
        source = json.load(f).get("source") or {}
    urdf = source.get("urdf")
    if not urdf or not os.path.isfile(urdf):
        raise RbdgenError(f"{args.target}: the URDF it was built from ({urdf}) is gone; verify the URDF instead")
    return urdf, bool(source.get("floating_base"))


def _verify_pinocchio(module, model, args):
    """Worst errors against Pinocchio for rnea, crba, aba (those the module has), or None
    without Pinocchio."""
    try:
        import pinocchio as pin
    except ImportError:
        return None
    import numpy as np
    from .runtime.pinocchio_bridge import pinocchio_model, to_pinocchio_q
    from .runtime.states import random_state
    urdf, floating = _source_of(args)
    pm = pinocchio_model(urdf, floating)
    pd = pm.createData()
    rng = np.random.default_rng(args.seed)
    worst = {}
    for _ in range(args.states):
        q, v, a = random_state(model, rng)
        pq = to_pinocchio_q(model, q)
        pairs = {"rnea": lambda: (module.rnea(q, v, a), pin.rnea(pm, pd, pq, v, a)),
                 "crba": lambda: (module.crba(q), _symmetric(pin.crba(pm, pd, pq))),
                 "aba": lambda: (module.aba(q, v, a), pin.aba(pm, pd, pq, v, a))}
        for name, pair in pairs.items():
            if name not in module.operation_counts:
                continue
            x, y = pair()
            err = float(np.abs(x - y).max()) / max(1.0, float(np.abs(y).max()))
            worst[name] = max(worst.get(name, 0.0), err)
    return worst


def cmd_bench(args):
    from .bench import bench
    from .codegen.build import build
    from .model.urdf import load_urdf
    model = load_urdf(args.urdf, floating_base=args.floating_base)
    module = build(args.urdf, out_dir=args.output, floating_base=args.floating_base,
                   algorithms=_algorithms(args.algorithms), progress=_progress(time.perf_counter()))
    bench(module, model, args.urdf, args.floating_base, pin_bench=args.pin_bench)
    return 0


def _symmetric(M):
    import numpy as np
    return np.triu(M) + np.triu(M, 1).T


def main(argv=None):
    parser = argparse.ArgumentParser(prog="rbdgen", description="Generate fast, verified rigid-body dynamics from a URDF.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="generate and compile the module for a URDF")
    p.add_argument("urdf")
    p.add_argument("-o", "--output", default="generated", help="output folder (default: generated)")
    p.add_argument("--name", help="module name (default: the robot's name, sanitized)")
    p.add_argument("--floating-base", action="store_true", help="add a free-flyer root joint")
    p.add_argument("--algorithms", help="comma-separated functions to generate (default: all)")
    p.add_argument("--no-native", action="store_true", help="do not compile with -march=native")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("info", help="print the kinematic tree, joints and their q/v indices")
    p.add_argument("urdf")
    p.add_argument("--floating-base", action="store_true")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("verify", help="compare a module with the reference (and Pinocchio)")
    p.add_argument("target", help="a URDF (built or reused) or a generated module folder")
    p.add_argument("-o", "--output", default="generated")
    p.add_argument("--floating-base", action="store_true")
    p.add_argument("--states", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tol", type=float, default=1e-10)
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("bench", help="time every function against Pinocchio, in one run")
    p.add_argument("urdf")
    p.add_argument("-o", "--output", default="generated")
    p.add_argument("--floating-base", action="store_true")
    p.add_argument("--algorithms", help="comma-separated functions to build and time (default: all)")
    p.add_argument("--pin-bench", help="Pinocchio's C++ timing tool (../shared/bench/build_pin_bench.sh builds it)")
    p.set_defaults(func=cmd_bench)

    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            try:
                return args.func(args)
            finally:
                for w in caught:
                    print(f"rbdgen: warning: {w.message}", file=sys.stderr)
    except RbdgenError as exc:
        print(f"rbdgen: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        if getattr(exc, "output", ""):
            print(exc.output, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rbdgen: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
