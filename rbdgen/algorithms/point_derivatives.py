"""Analytical derivatives of points' motion, in world axes: the classical acceleration, the
velocity and the position of points fixed on bodies, with respect to q (the tangent space)
and v, for the closed chains' derivatives (rbdgen.algorithms.loops) where forward mode would
differentiate every point's path to the root.

In a frame fixed at this instant (the root body's, as rnea_derivatives'), with V = (w, v0) and
A = (w', a0) a body's spatial velocity and acceleration (gravity left out) and p a point of it,
the point moves with v_p = v0 + w x p and a_p = a0 + w' x p + w x v_p. A change of q_j moves
the bodies below j's joint rigidly about its axis s_j = (w_j, v_j), which turns v_p and a_p
(w_j x itself) and moves p (v_j + w_j x p), and changes V and A intrinsically by dVdq_j = V_l x
s_j and dAdq_j + dVdq_j x V, dAdq_j = A_l x s_j + V_l x dVdq_j, l the parent of j's body (the
derivation of rnea_derivatives); a change of v_j, by s_j and dAdv_j + s_j x V, dAdv_j = (V_j +
V_l) x s_j. For each, the point's change is that of v_p and a_p at p held.
"""

from ..spatial import Motion, add3, cross3, sum_terms
from . import rnea_derivatives
from .kinematics import body_placements, joint_kinematics, root_frame_placements


def point_motion_derivatives(model, ops, q, v, a, points):
    """For each point (body, its coordinates in the body; body -1: the world's, all zero), the
    nv columns of (d a_p / dq, d a_p / dv, d v_p / dq, d v_p / dv, d p / dq), each column three
    numbers in world axes. For a tree whose joints' subspaces are fixed in their bodies, without
    mimic joints (rnea_derivatives.applies)."""
    kin = joint_kinematics(model, ops, q)
    X = root_frame_placements(model, ops, kin)
    E = kin[0].X_up.E if X is not None else None          # world -> the root's frame
    X = X if X is not None else body_placements(model, ops, kin)
    V, A, J, dVdq, dAdq, dAdv = rnea_derivatives.world_motion(model, ops, kin, X, v, a, a_root=Motion())
    path = []
    for i, joint in enumerate(model.joints):
        p = model.parent[i]
        path.append((path[p] if p >= 0 else []) + list(range(joint.idx_v, joint.idx_v + joint.nv)))
    axis = {joint.idx_v + c: J[i][c] for i, joint in enumerate(model.joints) for c in range(joint.nv)}
    world = (lambda x: [sum_terms(E[r][c] * x[r] for r in range(3)) for c in range(3)]) if E is not None else list
    result = []
    for body, r in points:
        zero = [[0, 0, 0] for _ in range(model.nv)]
        if body < 0:
            result.append((zero, zero, zero, zero, zero))
            continue
        placement = X[body]
        in_frame = [sum_terms(placement.E[k][c] * r[k] for k in range(3)) for c in range(3)]   # E^T r
        p = ops.let("pp", body, add3(placement.r, in_frame))
        Vb, Ab = V[body], A[body]
        v_p = ops.let("vp", body, add3(Vb.lin, cross3(Vb.ang, p)))
        a_p = ops.let("ap", body, add3(add3(Ab.lin, cross3(Ab.ang, p)), cross3(Vb.ang, v_p)))

        def moved(dV, dA):
            """The change of (a_p, v_p) at p held, for changes dV, dA of the body's V, A."""
            dv_p = add3(dV.lin, cross3(dV.ang, p))
            da_p = add3(add3(add3(dA.lin, cross3(dA.ang, p)), cross3(dV.ang, v_p)), cross3(Vb.ang, dv_p))
            return da_p, dv_p

        columns = [list(zero) for _ in range(5)]
        for k in path[body]:
            s = axis[k]
            at_p = add3(s.lin, cross3(s.ang, p))                   # the axis' velocity at p
            da, dv = moved(dVdq[k], dAdq[k] + dVdq[k].cross_motion(Vb))
            columns[0][k] = world(add3(cross3(s.ang, a_p), da))
            columns[2][k] = world(add3(cross3(s.ang, v_p), dv))
            columns[4][k] = world(at_p)
            columns[1][k] = world(moved(s, dAdv[k] + s.cross_motion(Vb))[0])
            columns[3][k] = world(at_p)
        result.append(tuple(columns))
    return result
