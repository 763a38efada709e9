#!/usr/bin/env python3
"""Closed chains: the generated constrained_dynamics (and its derivatives) against Pinocchio's
constraintDynamics (and computeConstraintDynamicsDerivatives): RigidConstraintModels between two
joints, LOCAL_WORLD_ALIGNED, exact ProximalSettings, the same Baumgarte gains.

Two levels, each in interleaved rounds (ours, Pinocchio, ours, ...), medians:
- C: our C driver (benchmarks/bench_c.py's, 64 random states, 7 repetitions, median ns per
  call) against pin_loops (benchmarks/pin_extra/pin_loops.cpp, timed the same way, built beside
  pin_bench the first time), the issue's yardstick;
- Python: both called from Python on the same 64 states, and our batch of --batch states on one
  thread per state.

    python benchmarks/bench_loops.py                 # Cassie (cassie_v2.sdf, 4 loops), UR5 with a loop
    python benchmarks/bench_loops.py cassie --rounds 5 --no-python

Pinocchio's PyPI wheel reads no SDFormat: its model is rebuilt from rbdgen's
(rbdgen.runtime.pinocchio_bridge.pinocchio_of), both answers are compared before timing, and
pin_loops reads that model as text.

A script, not a test: pytest never collects it.
"""

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import rbdgen
from rbdgen.examples import robot_path, robots_dir
from rbdgen.runtime.pinocchio_bridge import pinocchio_of

import bench_c
from common import cpu_name, log

ROBOTS = {
    "cassie": (lambda: os.path.join(robots_dir(), "cassie_description", "robots", "cassie_v2.sdf"), None),
    "ur5_loop": (lambda: robot_path("ur5"), ["tool0@0,0,0.1:world@0.3,0.2,0.5"]),
}
ALGORITHMS = ["constrained_dynamics", "constrained_dynamics_derivatives", "loop_jacobian", "loop_gamma", "loop_residual"]
C_LEVEL = ("constrained_dynamics", "constrained_dynamics_derivatives")   # pin_loops' lines, the same names
TARGETS = {"constrained_dynamics": 5.0, "constrained_dynamics_derivatives": 3.0}   # issue 49, cassie
PIN_LOOPS_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pin_extra", "pin_loops.cpp")
JOINT_KINDS = {"JointModelRevoluteUnaligned": "R", "JointModelPrismaticUnaligned": "P", "JointModelSpherical": "S",
               "JointModelFreeFlyer": "F"}


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


def numbers(values):
    return " ".join(repr(float(x)) for x in values)


def pin_loops_text(pin, pm, constraints):
    """pin_loops' model file: Pinocchio's model and its constraints as numbers (pin_loops.cpp)."""
    placement = lambda M: numbers(list(M.rotation.ravel()) + list(M.translation))
    lines = [str(pm.njoints - 1)]
    for j in range(1, pm.njoints):
        kind = JOINT_KINDS[pm.joints[j].shortname()]
        axis = list(pm.joints[j].extract().axis) if kind in "RP" else []
        inertia = pm.inertias[j]
        lines.append(f"{pm.parents[j]} {kind} {numbers(axis)} {placement(pm.jointPlacements[j])} "
                     f"{numbers([inertia.mass, *inertia.lever, *inertia.inertia.ravel()])}")
    lines.append(str(len(constraints)))
    for c in constraints:
        kind = 6 if c.type == pin.ContactType.CONTACT_6D else 3
        lines.append(f"{kind} {c.joint1_id} {placement(c.joint1_placement)} {c.joint2_id} {placement(c.joint2_placement)}")
    return "\n".join(lines) + "\n"


def resolve_pin_loops(path):
    """--pin-loops, else pin_loops beside pin_bench (../shared/bench/), built there once."""
    if path:
        return path
    beside = os.path.join(os.path.dirname(bench_c.BUILD_PIN_BENCH), "pin_loops")
    if not os.access(beside, os.X_OK):
        log(f"building pin_loops into {beside} (about 2 minutes) ...")
        subprocess.run(["bash", bench_c.BUILD_PIN_EXTRA, beside, PIN_LOOPS_SOURCE], check=True)
    return beside


def c_level(name, module, model, pin, pm, constraints, args):
    """{function: (ours ns, Pinocchio's ns)}: medians of --c-rounds alternated runs of our
    driver and pin_loops (Baumgarte gains 0 on both sides)."""
    package = os.path.dirname(os.path.abspath(module.__file__))
    with open(os.path.join(package, "model.json"), encoding="utf-8") as f:
        meta = json.load(f)
    order = [fn for fn in C_LEVEL if fn in meta["functions"]]
    pin_loops = resolve_pin_loops(args.pin_loops)
    with tempfile.TemporaryDirectory(prefix=f"rbdgen-loops-{name}-") as folder:
        exe, _, _, _ = bench_c.build_driver(package, meta, folder, order, model, 0, None)
        text = os.path.join(folder, "pinocchio.txt")
        with open(text, "w") as f:
            f.write(pin_loops_text(pin, pm, constraints))
        ours, theirs, lcaba = [], [], []
        for r in range(args.c_rounds):
            log(f"   {name}: round {r + 1}/{args.c_rounds}")
            ours.append(bench_c.run([exe, os.path.join(folder, "inputs.bin"), str(args.c_calls)]))
            output = bench_c.run_text([pin_loops, text, str(args.c_calls), "0", "0"])
            theirs.append(bench_c.parse(output))
            lcaba.append(float(output.split("lcaba_difference")[1].split()[0]))
    times = {fn: (bench_c.median_of(ours, fn), bench_c.median_of(theirs, fn)) for fn in order}
    return times, bench_c.median_of(theirs, "lcaba"), max(lcaba)


def accuracy(model, pin, pm, constraints, states):
    """The worst forward error of q-ddot, ours (the reference's program: the module's is verified
    against it at build) and Pinocchio's constraintDynamics, against extended precision, over
    the states; relative to the largest |q-ddot| of each state."""
    from rbdgen.runtime.accuracy import extended_values, forward_errors
    from rbdgen.table.functions import BY_NAME
    spec = BY_NAME["constrained_dynamics"]
    inputs = {"q": np.array([s[0] for s in states]), "v": np.array([s[1] for s in states]),
              "tau": np.array([s[2] for s in states]), "kp": np.zeros((len(states), 1)),
              "kd": np.zeros((len(states), 1)), "damping": np.zeros((len(states), 1))}
    truth = extended_values(model, spec, inputs)[:, :model.nv]
    ours = np.array([rbdgen.reference.constrained_dynamics(model, *state)[0] for state in states])
    pd = pm.createData()
    datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
    pin.initConstraintDynamics(pm, pd, constraints, datas)
    exact = pin.ProximalSettings(1e-14, 0.0, 1)
    theirs = np.array([pin.constraintDynamics(pm, pd, *state, constraints, datas, exact) for state in states])
    return float(forward_errors(ours, truth).max()), float(forward_errors(theirs, truth).max())


def python_level(module, model, pin, pm, constraints, states, args):
    """(ours ns, Pinocchio's ns, our batch ns per state) of constrained_dynamics from Python."""
    pd = pm.createData()
    datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
    pin.initConstraintDynamics(pm, pd, constraints, datas)
    exact = pin.ProximalSettings(1e-14, 0.0, 1)
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
    return statistics.median(ours), statistics.median(theirs), statistics.median(batch)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robots", nargs="*", default=list(ROBOTS), help="among: " + ", ".join(ROBOTS))
    parser.add_argument("--out", default="generated", help="where modules are built or reused")
    parser.add_argument("--calls", type=int, default=2000, help="calls per Python round")
    parser.add_argument("--rounds", type=int, default=21, help="Python rounds")
    parser.add_argument("--batch", type=int, default=10000)
    parser.add_argument("--c-calls", type=int, default=2000, help="calls per repetition of the C drivers")
    parser.add_argument("--c-rounds", type=int, default=5, help="alternated runs of our driver and pin_loops")
    parser.add_argument("--pin-loops", help="pin_loops (default: beside pin_bench, built when missing)")
    parser.add_argument("--no-c", action="store_true", help="leave the C level out")
    parser.add_argument("--no-python", action="store_true", help="leave the Python level out")
    parser.add_argument("--accuracy-states", type=int, default=8,
                        help="states of the accuracy table (extended precision: about a second each on Cassie; 0 leaves it out)")
    args = parser.parse_args()
    import pinocchio as pin
    print(f"{cpu_name()}, {os.cpu_count()} CPUs, {platform.python_implementation()} {platform.python_version()}; "
          f"Pinocchio {pin.__version__}")
    c_rows, python_rows, lcaba_rows, accuracy_rows = [], [], [], []
    for name in args.robots:
        path, loops = ROBOTS[name]
        log(f"== {name}: building (or reusing) the module in {args.out} ...")
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
        rows = sum(3 if loop.kind == "3d" else 6 for loop in model.loops)
        if not args.no_c:
            times, lcaba_ns, lcaba_difference = c_level(name, module, model, pin, pm, constraints, args)
            for fn, (a, b) in times.items():
                c_rows.append((name, model.nv, rows, fn, a, b))
            lcaba_rows.append((name, times["constrained_dynamics"][0], times["constrained_dynamics"][1], lcaba_ns,
                               lcaba_difference))
        if args.accuracy_states:
            accuracy_rows.append((name,) + accuracy(model, pin, pm, constraints, states[:args.accuracy_states]))
        if not args.no_python:
            python_rows.append((name, model.nv, rows) + python_level(module, model, pin, pm, constraints, states, args))
    if c_rows:
        print(f"\nC level: medians of {args.c_rounds} alternated runs (each the median of 7 repetitions of "
              f"{args.c_calls} calls on 64 random states)")
        print(f"{'robot':10} {'nv':>3} {'rows':>4} {'function':34} {'ours ns':>9} {'pinocchio ns':>13} {'ratio':>6} "
              f"{'target':>6}")
        for name, nv, rows, fn, a, b in c_rows:
            target = f"{TARGETS[fn]:.0f}x" if name == "cassie" else "-"
            print(f"{name:10} {nv:3d} {rows:4d} {fn:34} {a:9.0f} {b:13.0f} {b / a:5.1f}x {target:>6}")
    if lcaba_rows:
        print("\nThe constrained ABA (Pinocchio's lcaba: proximal, mu = 1e-9, to 1e-12) against the KKT solves, "
              "C level; its q-ddot's largest difference from constraintDynamics' (relative)")
        print(f"{'robot':10} {'ours KKT ns':>11} {'pin KKT ns':>11} {'pin lcaba ns':>13} {'lcaba - KKT':>12}")
        for name, a, b, c, difference in lcaba_rows:
            print(f"{name:10} {a:11.0f} {b:11.0f} {c:13.0f} {difference:12.1e}")
    if accuracy_rows:
        print(f"\nAccuracy: q-ddot's worst forward error against extended precision over {args.accuracy_states} states")
        print(f"{'robot':10} {'ours':>9} {'pinocchio':>10}")
        for name, a, b in accuracy_rows:
            print(f"{name:10} {a:9.1e} {b:10.1e}")
    if python_rows:
        print(f"\nPython level: constrained_dynamics, medians of {args.rounds} rounds of {args.calls} calls")
        print(f"{'robot':10} {'nv':>3} {'rows':>4} {'ours ns':>9} {'pinocchio ns':>13} {'ratio':>6} "
              f"{'ours batch ns/state':>20}")
        for name, nv, rows, a, b, batch in python_rows:
            print(f"{name:10} {nv:3d} {rows:4d} {a:9.0f} {b:13.0f} {b / a:5.1f}x {batch:20.0f}")


if __name__ == "__main__":
    sys.exit(main())
