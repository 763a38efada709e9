"""Momentum (RBDL paper §6.5, seed 000): spatial momentum at the world origin, centroidal momentum and
the centroidal momentum matrix A_G (A_G v = h_G), centre-of-mass velocity.

In world coordinates the momentum of the robot is the sum of I_k v_k, and the column of
joint coordinate c in the momentum matrix is I^C_j S_c: the composite inertia of the
subtree the joint moves, times the joint's world axis. Moving the reference point from the
world origin to the centre of mass c changes only the angular part: k_G = k_O - c x p.
Public results are [linear; angular].
"""

from ..spatial import Force, add3, cross3, matTvec3, matvec3, scale3, sub3
from .crba import composite_inertias
from .energy import mass_moment
from .kinematics import body_placements, body_velocities, joint_kinematics, root_frame_placements


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
    """A_G, 6 x nv, rows [linear; angular], with A_G v = h_G (Pinocchio's ccrba Ag).

    The column of coordinate c of joint j is the momentum a unit velocity of c gives the
    subtree it moves, I^C_j S_c in body j's frame: crba's force columns before their
    projection. It is carried to the frame of the tree's root body (through j's ancestors
    one by one while they are few, else by j's placement in that frame), taken there about
    the centre of mass, and only then turned to world axes. No body needs its world
    placement, which about halves the operations on floating bases (docs/performance.md,
    Choices in the generated programs).
    """
    kin = joint_kinematics(model, ops, q)
    Ic = composite_inertias(model, ops, kin)
    X_F = root_frame_placements(model, ops, kin)
    roots = [i for i in range(model.nbodies) if model.parent[i] < 0]
    if X_F is not None:
        com_in = {0: ops.let("cr", 0, scale3(1 / model.total_mass, Ic[0].h))}
    else:  # the centre of mass in world coordinates, then in each root's frame: E (c - r)
        first_moment = [0, 0, 0]
        for r in roots:
            first_moment = add3(first_moment, kin[r].X_up.inertia_to_parent(Ic[r]).h)
        com = scale3(1 / model.total_mass, first_moment)
        com_in = {r: ops.let("cr", r, matvec3(kin[r].X_up.E, sub3(com, kin[r].X_up.r))) for r in roots}
    A = [[0] * model.nv for _ in range(6)]
    for j, joint in enumerate(model.joints):
        chain = model.support(j)  # from j's root down to j
        F = [Ic[j].apply(s) for s in kin[j].S]
        if X_F is not None and len(chain) - 1 > CHAIN_DEPTH_MAX:
            F = ops.let("F", j, [X_F[j].inv_apply_force(f) for f in F])
        else:
            for i in reversed(chain[1:]):
                F = ops.let("F", j, [kin[i].X_up.inv_apply_force(f) for f in F])
        root = chain[0]
        E = kin[root].X_up.E
        for k, f in enumerate(F):
            about_com = _to_com(f, com_in[root])
            column = ops.let("AG", j, matTvec3(E, about_com.lin) + matTvec3(E, about_com.ang))
            for row, value in enumerate(column):
                A[row][joint.idx_v + k] = value
    return A


# Up to this many ancestors below the root, a column is carried up joint by joint (sparse
# steps); deeper ones by their placement in the root's frame (operation counts: D = 3 is the
# fewest or within 1 % of it on UR5, Panda, Solo12 and Talos).
CHAIN_DEPTH_MAX = 3
