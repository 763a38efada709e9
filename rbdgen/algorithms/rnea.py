"""Recursive Newton-Euler inverse dynamics (seed 000 Algorithm 1), with external forces.

tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T f_ext_i. `nle` is rnea with a = 0 and
`gravity` with v = a = 0: the zeros are literal, so the generator prunes their terms.
"""

from ..spatial import project
from .kinematics import body_accelerations, body_velocities, gravity_acceleration, joint_kinematics


def rnea(model, ops, q, v, a, f_ext=None):
    """Joint forces tau (length nv). f_ext[i] is a Force on body i in body coordinates."""
    kin = joint_kinematics(model, ops, q, v)
    velocities = body_velocities(model, ops, kin, v)
    accelerations = body_accelerations(model, ops, kin, velocities, v, a, gravity_acceleration(model))
    forces = []
    for i, inertia in enumerate(model.inertia):
        f = inertia.force(accelerations[i], velocities[i])
        if f_ext is not None:
            f = f - f_ext[i]
        forces.append(ops.let("f", i, f))
    tau = [0] * model.nv
    for i in reversed(range(model.nbodies)):
        joint = model.joints[i]
        tau[joint.idx_v:joint.idx_v + joint.nv] = ops.let("tau", i, project(kin[i].S, forces[i]))
        p = model.parent[i]
        if p >= 0:
            forces[p] = ops.let("f", p, forces[p] + kin[i].X_up.inv_apply_force(forces[i]))
    return tau


def nle(model, ops, q, v):
    """Nonlinear effects C(q, v) v + g(q): rnea with zero acceleration."""
    return rnea(model, ops, q, v, [0] * model.nv)


def gravity(model, ops, q):
    """Generalized gravity g(q): rnea at rest."""
    zero = [0] * model.nv
    return rnea(model, ops, q, zero, zero)
