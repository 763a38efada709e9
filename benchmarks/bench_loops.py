#!/usr/bin/env python3
"""Closed chains: the generated constrained_dynamics against Pinocchio's constraintDynamics
(RigidConstraintModels between two joints, LOCAL_WORLD_ALIGNED, exact ProximalSettings), both
called from Python on the same 64 random states, in interleaved rounds (ours, Pinocchio, ours,
...); medians per call, and our batch of --batch states on one thread per state.

    python benchmarks/bench_loops.py                 # Cassie (cassie_v2.sdf, 4 loops), UR5 with a loop

Pinocchio's PyPI wheel reads no SDFormat: its model is rebuilt from rbdgen's
(rbdgen.runtime.pinocchio_bridge.pinocchio_of), and both answers are compared before timing.

A script, not a test: pytest never collects it.
"""

import argparse
import gc
import os
import platform
import statistics
import time

import numpy as np

import rbdgen
from rbdgen.examples import robot_path, robots_dir
from rbdgen.runtime.pinocchio_bridge import pinocchio_of

ROBOTS = {
    "cassie": (lambda: os.path.join(robots_dir(), "cassie_description", "robots", "cassie_v2.sdf"), None),
    "ur5_loop": (lambda: robot_path("ur5"), ["tool0@0,0,0.1:world@0.3,0.2,0.5"]),
}
ALGORITHMS = ["constrained_dynamics", "loop_jacobian", "loop_gamma", "loop_residual"]


def timed(call, states, calls):
    """ns per call: `calls` calls cycling over the states, the garbage collector off."""
    gc.disable()
    try:
        t0 = time.perf_counter()
        for k in range(calls):
            call(*states[k % len(states)])
        return (time.perf_counter() - t0) / calls * 1e9
    finally:
        gc.enable()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robots", nargs="*", default=list(ROBOTS), help="among: " + ", ".join(ROBOTS))
    parser.add_argument("--out", default="generated", help="where modules are built or reused")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--batch", type=int, default=10000)
    args = parser.parse_args()
    import pinocchio as pin
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; Pinocchio {pin.__version__}; "
          f"medians of {args.rounds} rounds of {args.calls} calls")
    print(f"{'robot':10} {'nv':>3} {'rows':>4} {'ours ns':>9} {'pinocchio ns':>13} {'ratio':>6} {'ours batch ns/state':>20}")
    for name in args.robots:
        path, loops = ROBOTS[name]
        module = rbdgen.build(path(), out_dir=args.out, loops=loops, algorithms=ALGORITHMS)
        model = rbdgen.load_model(path(), loops=loops)
        pm, constraints = pinocchio_of(model)
        pd = pm.createData()
        datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
        pin.initConstraintDynamics(pm, pd, constraints, datas)
        exact = pin.ProximalSettings(1e-14, 0.0, 1)
        rng = np.random.default_rng(0)
        states = []
        for _ in range(64):
            q = rng.normal(size=model.nq) * 0.3
            if model.joints[0].type == "free_flyer":
                q[3:7] /= np.linalg.norm(q[3:7])
            states.append((q, rng.normal(size=model.nv), rng.normal(size=model.nv)))
        for q, v, tau in states[:4]:   # the same numbers before timing
            ours = module.constrained_dynamics(q, v, tau)[0]
            theirs = pin.constraintDynamics(pm, pd, q, v, tau, constraints, datas, exact)
            assert np.allclose(ours, theirs, rtol=0, atol=1e-8 * max(1, np.abs(theirs).max())), name
        ours_call = lambda q, v, tau: module.constrained_dynamics(q, v, tau)
        pin_call = lambda q, v, tau: pin.constraintDynamics(pm, pd, q, v, tau, constraints, datas, exact)
        ours, theirs = [], []
        for r in range(args.rounds):
            order = ((ours, ours_call), (theirs, pin_call))
            for times, call in (order if r % 2 == 0 else order[::-1]):
                times.append(timed(call, states, args.calls))
        Q, V, TAU = (np.array([s[k] for s in states] * (args.batch // 64 + 1))[:args.batch] for k in range(3))
        batch = []
        for _ in range(5):
            t0 = time.perf_counter()
            module.constrained_dynamics(Q, V, TAU, threads=1)
            batch.append((time.perf_counter() - t0) / args.batch * 1e9)
        a, b = statistics.median(ours), statistics.median(theirs)
        rows = sum(3 if loop.kind == "3d" else 6 for loop in model.loops)
        print(f"{name:10} {model.nv:3d} {rows:4d} {a:9.0f} {b:13.0f} {b / a:5.1f}x {statistics.median(batch):20.0f}")


if __name__ == "__main__":
    main()
