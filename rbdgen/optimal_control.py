"""A trajectory optimization on CasADi and IPOPT, the worked example of the CasADi bridge: a
robot moves from rest at one configuration to rest at another in fixed time with the least
effort, its dynamics a forward-dynamics function aba(q, v, tau) (rbdgen's module.casadi("aba"),
or any CasADi function or expression of the same shapes, such as adam's).

Direct multiple shooting: N intervals of one RK4 step each, states x_k = (q_k, v_k) and torques
tau_k (constant on an interval) as decision variables, continuity x_{k+1} = RK4(x_k, tau_k) as
constraints, |tau_k| <= the limits, cost h sum_k |tau_k|^2. IPOPT takes the constraints'
Jacobian from the function's jacobian() (rbdgen's: the generated aba_derivatives) and
approximates the Hessian (L-BFGS, which needs only first derivatives; a memory of 20 pairs
rather than IPOPT's 6 converges in fewer iterations: 84 rather than 118 on UR5).

Needs casadi (pip install "rbdgen[casadi]"). For robots whose q is its own tangent space.
"""

import time

import numpy as np


def minimum_effort_transfer(aba, nv, start, goal, *, duration=1.0, intervals=20, torque_limit=None, tol=1e-9,
                            max_iter=500, ipopt=None):
    """Solve the transfer; returns {"q": (N+1, nv), "v": (N+1, nv), "tau": (N, nv), "cost",
    "iterations", "seconds" (IPOPT's wall time), "status"}.

    aba: a callable of CasADi MX (q, v, tau) -> qdd, nv entries each. torque_limit: nv
    positive numbers (None: no limit). ipopt: more IPOPT options ({"ipopt.name": value})."""
    import casadi as cs
    start, goal = np.asarray(start, dtype=float), np.asarray(goal, dtype=float)
    h = duration / intervals
    x, u = cs.MX.sym("x", 2 * nv), cs.MX.sym("u", nv)
    rate = cs.Function("rate", [x, u], [cs.vertcat(x[nv:], aba(x[:nv], x[nv:], u))])
    k1 = rate(x, u)
    k2 = rate(x + h / 2 * k1, u)
    k3 = rate(x + h / 2 * k2, u)
    k4 = rate(x + h * k3, u)
    step = cs.Function("rk4", [x, u], [x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)])

    X = [cs.MX.sym(f"x{k}", 2 * nv) for k in range(intervals + 1)]
    U = [cs.MX.sym(f"u{k}", nv) for k in range(intervals)]
    gaps = [X[k + 1] - step(X[k], U[k]) for k in range(intervals)]
    cost = h * sum(cs.sumsqr(tau) for tau in U)
    # variables in time order: x0, u0, x1, u1, ..., xN
    variables = cs.vertcat(*[z for k in range(intervals) for z in (X[k], U[k])], X[-1])
    limit = np.full(nv, np.inf) if torque_limit is None else np.asarray(torque_limit, dtype=float)
    rest = np.zeros(nv)
    lower, upper, guess = [], [], []
    for k in range(intervals + 1):
        s = k / intervals
        q = (1 - s) * start + s * goal
        v = (goal - start) / duration
        fixed = np.concatenate([start, rest]) if k == 0 else np.concatenate([goal, rest]) if k == intervals else None
        lower.append(fixed if fixed is not None else np.full(2 * nv, -np.inf))
        upper.append(fixed if fixed is not None else np.full(2 * nv, np.inf))
        guess.append(fixed if fixed is not None else np.concatenate([q, v]))
        if k < intervals:
            lower.append(-limit)
            upper.append(limit)
            guess.append(np.zeros(nv))
    problem = {"x": variables, "f": cost, "g": cs.vertcat(*gaps)}
    options = {"ipopt.hessian_approximation": "limited-memory", "ipopt.limited_memory_max_history": 20,
               "ipopt.tol": tol, "ipopt.max_iter": max_iter,
               "ipopt.acceptable_iter": 0, **(ipopt or {}), "ipopt.print_level": 0, "ipopt.sb": "yes",
               "print_time": False}
    solver = cs.nlpsol("transfer", "ipopt", problem, options)
    t0 = time.perf_counter()
    found = solver(x0=np.concatenate(guess), lbx=np.concatenate(lower), ubx=np.concatenate(upper),
                   lbg=0, ubg=0)
    seconds = time.perf_counter() - t0
    z = found["x"].full().ravel()
    period = 3 * nv
    states = np.array([z[k * period:k * period + 2 * nv] for k in range(intervals)] + [z[-2 * nv:]])
    torques = np.array([z[k * period + 2 * nv:(k + 1) * period] for k in range(intervals)])
    stats = solver.stats()
    return {"q": states[:, :nv], "v": states[:, nv:], "tau": torques, "cost": float(found["f"]),
            "iterations": int(stats["iter_count"]), "seconds": seconds, "status": stats["return_status"]}
