#!/usr/bin/env python3
"""The CasADi bridge's cost: one rbdgen function inside CasADi, its Jacobian against CasADi's own
AD on adam's expression of the same function, and IPOPT's time per iteration on a trajectory
optimization through each.

1. Call overhead: module.casadi("aba") mapped over 4096 states inside one CasADi call
   (Function.map, serial), per state, minus the C time of the module's batch call on one thread
   (per state): what CasADi's external-function call adds.
2. Jacobian: rbdgen's jacobian() (aba_derivatives) against jacobian() of adam's fixed-base
   forward dynamics M^-1 (tau - h) (CasADi's AD, evaluated by CasADi's virtual machine, as IPOPT
   uses it), each mapped over the same states. On a free-flyer (quaternions in q) the rbdgen
   function has no Jacobian in q's coordinates: aba_derivatives itself is timed there, against
   adam's Jacobian with respect to its joint positions, base velocity, joint velocities, torques.
3. rbdgen.optimal_control.minimum_effort_transfer (fixed-base robots): IPOPT's wall time per
   iteration with rbdgen's aba and with adam's, and their iteration counts and distance.

    python benchmarks/bench_casadi.py panda solo12 --transfer ur5

A script, not a test: pytest never collects it. Needs casadi and adam-robotics[casadi].
"""

import os
import platform
import statistics
import time
import warnings

import numpy as np

import rbdgen
from casadi_side import kin_dyn
from common import cpu_name, log, robot_parser, robot_spec
from rbdgen.model.states import random_state

warnings.filterwarnings("ignore", message=".*<mimic> is ignored.*")
DEFAULT_ROBOTS = ("panda", "solo12")
STATES = 4096
OVERHEAD_TARGET_NS = 2000     # issue 18


def median_seconds(call, rounds):
    call()
    runs = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        call()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def adam_aba(kd, n, floating):
    """adam's forward dynamics as a CasADi Function of (q, v, tau) in rbdgen's layout for a fixed
    base, or of (s, v_b, s_dot, tau) at an identity base placement for a free-flyer."""
    import casadi as cs
    s, s_dot, tau = (cs.SX.sym(name, n) for name in ("s", "s_dot", "tau"))
    if not floating:
        M = kd.mass_matrix_fun()(cs.DM.eye(4), s)[6:, 6:]
        h = kd.bias_force_fun()(cs.DM.eye(4), s, cs.DM.zeros(6), s_dot)[6:]
        return cs.Function("adam_aba", [s, s_dot, tau], [cs.solve(M, tau - h)])
    v_b = cs.SX.sym("v_b", 6)
    M = kd.mass_matrix_fun()(cs.DM.eye(4), s)
    h = kd.bias_force_fun()(cs.DM.eye(4), s, v_b, s_dot)
    rhs = cs.vertcat(cs.DM.zeros(6), tau) - h
    return cs.Function("adam_aba", [s, v_b, s_dot, tau], [cs.solve(M, rhs)])


def bench_robot(name, urdf, floating, args):
    import casadi as cs
    log(f"== {name}: building (or reusing) the module in {args.out} ...")
    module = rbdgen.build(urdf, out_dir=args.out, floating_base=floating, algorithms=["aba", "aba_derivatives"])
    model = rbdgen.load_urdf(urdf, floating_base=floating)
    rng = np.random.default_rng(args.seed)
    states = [random_state(model, rng) for _ in range(STATES)]
    Q, V = (np.array([s[k] for s in states]) for k in range(2))
    T = rng.normal(size=(STATES, model.nv))
    runs = {}
    # the C time per state: the module's batch call on one thread
    runs["c"] = median_seconds(lambda: module.aba(Q, V, T, threads=1), args.rounds) / STATES
    aba = module.casadi("aba")
    mapped = aba.map(STATES, "serial")
    inputs = [cs.DM(Q.T), cs.DM(V.T), cs.DM(T.T)]
    runs["casadi"] = median_seconds(lambda: mapped(*inputs), args.rounds) / STATES
    kd, _ = kin_dyn(urdf, list(module.joint_names) if not floating else list(module.joint_names[1:]),
                    (0.0, 0.0, -9.81))
    n = model.nv - (6 if floating else 0)
    theirs = adam_aba(kd, n, floating)
    if floating:
        ours_jacobian = module.casadi("aba_derivatives").map(STATES, "serial")
        what = "aba_derivatives (no Jacobian in q's coordinates)"
        their_inputs = [cs.DM(Q[:, 7:].T), cs.DM(V[:, :6].T), cs.DM(V[:, 6:].T), cs.DM(T[:, 6:].T)]
        their_jacobian = cs.Function("adam_jac", theirs.sx_in(), [cs.jacobian(theirs.call(theirs.sx_in())[0],
                                                                               cs.vertcat(*theirs.sx_in()))])
    else:
        jac = aba.jacobian()
        zero = cs.DM.zeros(model.nv, STATES)
        ours_jacobian = lambda *x: jac_map(*x, zero)   # noqa: E731
        jac_map = jac.map(STATES, "serial")
        what = "jacobian() from aba_derivatives"
        their_inputs = inputs
        their_jacobian = theirs.jacobian()
    their_map = their_jacobian.map(STATES, "serial")
    extra = [cs.DM.zeros(model.nv, STATES)] if not floating else []
    runs["ours_jacobian"] = median_seconds(lambda: ours_jacobian(*inputs), args.rounds) / STATES
    runs["adam_jacobian"] = median_seconds(lambda: their_map(*their_inputs, *extra), args.rounds) / STATES
    return {"robot": name, "nv": model.nv, "runs": runs, "what": what}


def bench_transfer(name, urdf, args):
    from rbdgen.optimal_control import minimum_effort_transfer
    module = rbdgen.build(urdf, out_dir=args.out, algorithms=["aba", "aba_derivatives"])
    kd, _ = kin_dyn(urdf, list(module.joint_names), (0.0, 0.0, -9.81))
    theirs = adam_aba(kd, module.nv, False)
    goal = np.random.default_rng(args.seed).uniform(-0.6, 0.6, module.nv)
    solved = {}
    for side, aba in (("rbdgen", module.casadi("aba")), ("adam", theirs)):
        solved[side] = minimum_effort_transfer(aba, module.nv, np.zeros(module.nv), goal)
    distance = max(float(np.abs(solved["rbdgen"][k] - solved["adam"][k]).max()) for k in ("q", "v", "tau"))
    print(f"\n{name}: minimum-effort transfer, 20 intervals of RK4, IPOPT with L-BFGS (rbdgen.optimal_control)")
    for side, r in solved.items():
        print(f"  {side:7} {r['status']:18} {r['iterations']:4d} iterations  "
              f"{1e3 * r['seconds'] / max(1, r['iterations']):8.3f} ms per iteration  cost {r['cost']:.9g}")
    ratio = solved["adam"]["seconds"] / solved["adam"]["iterations"] / (
        solved["rbdgen"]["seconds"] / solved["rbdgen"]["iterations"])
    print(f"  per iteration adam / rbdgen {ratio:.1f}; largest difference of states and torques {distance:.1e}")


def main(argv=None):
    parser = robot_parser(__doc__, DEFAULT_ROBOTS)
    parser.add_argument("--rounds", type=int, default=7, help="timed repetitions, median (default: 7)")
    parser.add_argument("--transfer", nargs="*", default=["ur5"], help="fixed-base robots of part 3 (default: ur5)")
    args = parser.parse_args(argv)
    import casadi
    print(f"Python {platform.python_version()}, casadi {casadi.__version__}, {cpu_name()}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"\naba inside CasADi, ns per state over {STATES} states (Function.map, serial):")
    print(f"{'robot':8} {'C':>8} {'in CasADi':>10} {'overhead':>9}   {'rbdgen Jacobian':>16} {'adam AD':>9} "
          f"{'ratio':>6}  (what rbdgen's side is)")
    for arg in args.robots:
        name, urdf, floating = robot_spec(arg, args.floating_base, "bench_casadi")
        r = bench_robot(name, urdf, floating, args)
        c, inside = r["runs"]["c"] * 1e9, r["runs"]["casadi"] * 1e9
        ours, theirs = r["runs"]["ours_jacobian"] * 1e9, r["runs"]["adam_jacobian"] * 1e9
        over = inside - c
        print(f"{name:8} {c:8.0f} {inside:10.0f} {over:8.0f}{'' if over <= OVERHEAD_TARGET_NS else '!'}   "
              f"{ours:16.0f} {theirs:9.0f} {theirs / ours:6.1f}  ({r['what']})")
    for arg in args.transfer:
        name, urdf, floating = robot_spec(arg, False, "bench_casadi")
        if floating:
            log(f"{name}: skipped in the transfer (a free-flyer's q is not its own tangent space)")
            continue
        bench_transfer(name, urdf, args)


if __name__ == "__main__":
    main()
