"""Contacts declared at build time held by a closed chain's solves (rbdgen/algorithms/loops.py):
constrained dynamics against Pinocchio's constraintDynamics with both kinds of constraint,
the projections and constrained inverse dynamics on the generated module, and the derivatives
(with the contacts' rows) against central differences."""

import numpy as np
import pytest

import rbdgen
from rbdgen import reference
from rbdgen.algorithms import constrained, loops
from rbdgen.runtime.accuracy import OPS
from rbdgen.runtime.pinocchio_bridge import pinocchio_of
from rbdgen.table.factored import loop_derivatives_factored
from helpers import robot_path
from test_loops import FD_STEP, REL_TOL_PINOCCHIO

LOOPS, CONTACTS = ["FL_FOOT:FR_FOOT@0,0.3,0"], ["HL_FOOT:3d", "HR_FOOT:3d"]   # Solo12: 3 + 6 rows


def test_loops_and_declared_contacts_in_one_solve(tmp_path):
    """Contacts declared at build time are held by the closed chain's solves too, their rows
    after the loops': Solo12 with a loop between two feet and its hind feet in contact equals
    Pinocchio's constraintDynamics with the same constraints (the loop in LOCAL_WORLD_ALIGNED,
    the contacts in LOCAL, Baumgarte gains on both; the contacts' reference placements where
    they are, so that kp acts on the loop alone); project_velocity stops all of them, and
    constrained inverse dynamics inverts constrained dynamics."""
    pin = pytest.importorskip("pinocchio")
    loops, contacts = LOOPS, CONTACTS
    module = rbdgen.build(robot_path("solo12"), out_dir=str(tmp_path), floating_base=True, loops=loops,
                          contacts=contacts, algorithms=["constrained_dynamics", "project_velocity", "loop_jacobian",
                                                         "loop_gamma", "contact_jacobian", "contact_gamma", "rnea"])
    model = rbdgen.load_model(robot_path("solo12"), floating_base=True, loops=loops)
    pm, constraints = pinocchio_of(model)
    pd = pm.createData()
    rng = np.random.default_rng(41)
    q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v, tau = rng.normal(size=(2, model.nv))
    pin.forwardKinematics(pm, pd, q)
    for name in ("HL_FOOT", "HR_FOOT"):
        f = model.frame(name)
        at = pin.SE3(np.array(f.placement.E, dtype=float).T, np.array(f.placement.r, dtype=float))
        constraints.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, f.body + 1, at, pin.WORLD,
                                                    pd.oMi[f.body + 1] * at, pin.LOCAL))
    for c in constraints:
        gains = c.m_baumgarte_parameters
        gains.Kp, gains.Kd = 5.0, 3.0
        c.m_baumgarte_parameters = gains
    datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
    pin.initConstraintDynamics(pm, pd, constraints, datas)
    qdd, lam, pivots = module.constrained_dynamics(q, v, tau, kp=5.0, kd=3.0)
    want = pin.constraintDynamics(pm, pd, q, v, tau, constraints, datas, pin.ProximalSettings(1e-14, 0.0, 1))
    np.testing.assert_allclose(qdd, want, rtol=0, atol=REL_TOL_PINOCCHIO * np.abs(want).max())
    assert lam.shape == pivots.shape == (9,) and (pivots > 0).all()
    G = np.vstack([module.loop_jacobian(q), module.contact_jacobian(q)])
    v_plus, impulses, _ = module.project_velocity(q, v)
    np.testing.assert_allclose(G @ v_plus, 0, atol=1e-12 * np.abs(v).max())
    gamma = np.concatenate([module.loop_gamma(q, v_plus), module.contact_gamma(q, v_plus)])
    a = rng.normal(size=model.nv)
    a += np.linalg.pinv(G) @ (gamma - G @ a)                  # an acceleration they all allow
    legs = [j.name for j in model.joints[1:]]
    tau, lam = module.constrained_inverse_dynamics(q, v_plus, a, legs)
    np.testing.assert_allclose(tau + G.T @ lam, module.rnea(q, v_plus, a), rtol=0, atol=1e-9 * np.abs(tau).max())
    np.testing.assert_allclose(module.constrained_dynamics(q, v_plus, tau)[0], a, rtol=0,
                               atol=1e-8 * max(1, np.abs(a).max()))


def test_derivatives_with_contacts_against_differences():
    """d (q-ddot, lambda) / d (q, v, tau, kp, kd) with the contacts' rows after the loop's: the
    analytic derivatives and their factored form (its right-hand sides solved here with the
    KKT matrix) against central differences (q along the tangent space)."""
    model = rbdgen.load_model(robot_path("solo12"), floating_base=True, loops=LOOPS)
    contacts = constrained.parse_contacts(model, CONTACTS)
    rng = np.random.default_rng(3)
    n, m = model.nv, 9
    q = reference.integrate(model, np.r_[0, 0, 0.3, 0, 0, 0, 1, np.zeros(12)], 0.3 * rng.normal(size=n))
    v, tau = rng.normal(size=(2, n))
    settings = dict(kp=[4.0], kd=[2.0], damping=[0.0], contacts=contacts)

    def solved(q_, v_, tau_, kp, kd):
        out = loops.constrained_dynamics(model, OPS, list(q_), list(v_), list(tau_), **dict(settings, kp=[kp], kd=[kd]))
        return np.array(out[:n + m], dtype=float)

    D = np.array(loops.constrained_dynamics_derivatives(model, OPS, list(q), list(v), list(tau), **settings), dtype=float)
    base, columns = (q, v, tau, 4.0, 2.0), []
    for k in range(5):
        for j in range(n if k < 3 else 1):
            plus, minus = list(base), list(base)
            step = np.eye(n)[j] * FD_STEP if k < 3 else FD_STEP
            if k == 0:
                plus[0], minus[0] = reference.integrate(model, q, step), reference.integrate(model, q, -step)
            else:
                plus[k], minus[k] = base[k] + step, base[k] - step
            columns.append((solved(*plus) - solved(*minus)) / (2 * FD_STEP))
    want = np.array(columns).T                      # (n + m) x (3 n + 2)

    got = np.vstack([np.hstack(blocks) for blocks in _blocks(D, n, m)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.abs(want).max())
    factored = np.array([loops.constrained_dynamics_derivatives_factored(model, OPS, list(q), list(v), list(tau),
                                                                         **settings)], dtype=float)
    loop_derivatives_factored(contacts).solve(model).apply(factored)
    np.testing.assert_allclose(factored[0], D, rtol=0, atol=1e-12 * np.abs(D).max())


def _blocks(D, n, m):
    """The flat derivatives as [[q-ddot's five blocks], [lambda's five blocks]]."""
    at, rows = 0, []
    for height in (n, m):
        row = []
        for width in (n, n, n, 1, 1):
            row.append(D[at:at + height * width].reshape(height, width))
            at += height * width
        rows.append(row)
    return rows


def test_constraint_forces_derivatives_equal_forward_mode(monkeypatch):
    """The residuals' d/dq and d/dv with rnea's analytic derivatives less those of G^T lambda
    (constraint_forces: a loop's forces fixed in the world, a contact's in its body) equal
    forward mode through the residuals, on Solo12 with the loop and contacts above, a 6d loop
    too, at random multipliers."""
    from rbdgen.algorithms import rnea_derivatives
    model = rbdgen.load_model(robot_path("solo12"), floating_base=True,
                              loops=LOOPS + ["FL_FOOT:HL_FOOT@0,0.1,0:6d"])
    contacts = constrained.parse_contacts(model, CONTACTS + ["HR_FOOT:1d/0,0.6,0.8"])
    rng = np.random.default_rng(7)
    q = reference.integrate(model, np.r_[0, 0, 0.3, 0, 0, 0, 1, np.zeros(12)], 0.3 * rng.normal(size=model.nv))
    v, qdd = rng.normal(size=(2, model.nv))
    lam = rng.normal(size=loops.rows(model, contacts))
    held = dict(qdd=list(qdd), lam=list(lam), kp=[1.5], kd=[2.5], contacts=contacts)
    analytic = np.array(loops._residual_derivatives(model, OPS, list(q), list(v), **held), dtype=float)
    monkeypatch.setattr(rnea_derivatives, "applies", lambda model: False)
    forward = np.array(loops._residual_derivatives(model, OPS, list(q), list(v), **held), dtype=float)
    np.testing.assert_allclose(analytic, forward, rtol=0, atol=1e-12 * np.abs(forward).max())


@pytest.mark.parametrize("robot, loop, floating", [("solo12", "FL_FOOT:FR_FOOT@0,0.3,0", True),
                                                   ("ur5", "tool0@0,0,0.1:world@0.3,0.2,0.5", False)])
def test_point_derivatives_equal_forward_mode(monkeypatch, robot, loop, floating):
    """With 3d loops only, the second residuals' derivatives come from the points' analytic
    motion derivatives (point_derivatives): equal to forward mode, on a floating base and on
    a loop closed on the world."""
    from rbdgen.algorithms import rnea_derivatives
    model = rbdgen.load_model(robot_path(robot), floating_base=floating, loops=[loop])
    rng = np.random.default_rng(8)
    q0 = np.zeros(model.nq)
    if floating:
        q0[6] = 1.0
    q = reference.integrate(model, q0, 0.3 * rng.normal(size=model.nv))
    v, qdd = rng.normal(size=(2, model.nv))
    held = dict(qdd=list(qdd), lam=list(rng.normal(size=3)), kp=[1.5], kd=[2.5], contacts=())
    analytic = np.array(loops._residual_derivatives(model, OPS, list(q), list(v), **held), dtype=float)
    monkeypatch.setattr(rnea_derivatives, "applies", lambda model: False)
    forward = np.array(loops._residual_derivatives(model, OPS, list(q), list(v), **held), dtype=float)
    np.testing.assert_allclose(analytic, forward, rtol=0, atol=1e-12 * np.abs(forward).max())
