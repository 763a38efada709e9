"""Momentum (seed 000 §6.5): spatial momentum at the world origin, centroidal momentum and
the centroidal momentum matrix A_G (A_G v = h_G), centre-of-mass velocity.

In world coordinates the momentum of the robot is the sum of I_k v_k, and the column of
joint coordinate c in the momentum matrix is I^C_j S_c: the composite inertia of the
subtree the joint moves, times the joint's world axis. Moving the reference point from the
world origin to the centre of mass c changes only the angular part: k_G = k_O - c x p.
Public results are [linear; angular].
"""

from ..spatial import Force, cross3, scale3, sub3
from .energy import mass_moment
from .kinematics import body_placements, body_velocities, joint_kinematics


def world_composite_inertias(model, ops, X_0, inertias=None):
    """I^C of every subtree, in world coordinates (plain sums: no transforms up the tree).
    `inertias`: the bodies' own world inertias, when the caller has them already."""
    IC = list(inertias) if inertias else [X_0[i].inertia_to_parent(model.inertia[i]) for i in range(model.nbodies)]
    for i in reversed(range(model.nbodies)):
        IC[i] = ops.let("ICw", i, IC[i])
        if model.parent[i] >= 0:
            IC[model.parent[i]] = IC[model.parent[i]] + IC[i]
    return IC


def _world_momentum(model, ops, q, v):
    kin = joint_kinematics(model, ops, q, v)
    X_0 = body_placements(model, ops, kin)
    velocities = body_velocities(model, ops, kin, v)
    h = Force()
    for i, inertia in enumerate(model.inertia):
        h = h + X_0[i].inv_apply_force(inertia.apply(velocities[i]))
    return ops.let("h", 0, h), X_0


def _com(model, ops, X_0):
    return ops.let("c", 0, scale3(1 / model.total_mass, mass_moment(model, ops, X_0)))


def _to_com(f, com):
    """A world-origin force (momentum) taken about the centre of mass."""
    return Force(sub3(f.ang, cross3(com, f.lin)), f.lin)


def spatial_momentum(model, ops, q, v):
    """[p; k_O]: linear momentum and angular momentum about the world origin, world axes."""
    h, _ = _world_momentum(model, ops, q, v)
    return list(h.lin + h.ang)


def centroidal_momentum(model, ops, q, v):
    """h_G = [p; k_G]: linear momentum and angular momentum about the centre of mass."""
    h, X_0 = _world_momentum(model, ops, q, v)
    hG = _to_com(h, _com(model, ops, X_0))
    return list(hG.lin + hG.ang)


def com_velocity(model, ops, q, v):
    """The centre of mass's velocity p / m."""
    h, _ = _world_momentum(model, ops, q, v)
    return list(scale3(1 / model.total_mass, h.lin))


def centroidal_map(model, ops, q):
    """A_G, 6 x nv, rows [linear; angular], with A_G v = h_G (Pinocchio's ccrba Ag)."""
    kin = joint_kinematics(model, ops, q)
    X_0 = body_placements(model, ops, kin)
    IC = world_composite_inertias(model, ops, X_0)
    com = _com(model, ops, X_0)
    A = [[0] * model.nv for _ in range(6)]
    for j, joint in enumerate(model.joints):
        for k, s in enumerate(kin[j].S):
            column = ops.let("AG", j, _to_com(IC[j].apply(X_0[j].inv_apply_motion(s)), com))
            for row, value in enumerate(column.lin + column.ang):
                A[row][joint.idx_v + k] = value
    return A
