"""Analytical derivatives of inverse dynamics in the world frame (Carpentier & Mansard 2018).

Forward mode (derivatives.py) pays, for every joint j and every body i it moves, the
derivative of i's whole force; here those pairs cost dot products. In world coordinates a
change of q_j moves the bodies of j's subtree rigidly about the axis s = J_j, so every
world quantity attached to them (inertias Y, axes J, composite forces F) changes by s x
itself, and these rigid parts cancel in tau_k = J_k^T F_k. What remains, with V, A the world
velocity and acceleration (gravity included) and lambda the parent of j:

    dV/dq_j = dVdq_j = V_lambda x J_j      dA/dq_j = dAdq_j + dVdq_j x V (+ rigid)
    dAdq_j = A_lambda x J_j + V_lambda x dVdq_j
    dV/dv_j = J_j                           dA/dv_j = dAdv_j + J_j x V,
    dAdv_j = (V_j + V_lambda) x J_j

and a body's force f = Y A + V x* Y V changes by Y dA' + B dV' with B x = Y (x x V) +
x x* (Y V) + V x* (Y x). Summed over subtrees (composites Yc, Bc, Fc), for a joint i and a
coordinate j of i or of its ancestors,
    d tau_i / dq_j = J_i^T (Bc_i dVdq_j + Yc_i dAdq_j),
and for j in i's strict subtree
    d tau_i / dq_j = J_i^T (Bc_j dVdq_j + Yc_j dAdq_j + J_j x* Fc_j),
the same with dAdv_j and J_j for v. Each pair is a few 6-vector dot products.

This needs each joint's motion subspace to be constant in its body (true of every URDF
joint and of the quaternion, planar and translation joints); `applies` says whether it is.
Its per-body work (inertias in a common frame, B) is heavier than forward mode's and its
per-pair work lighter. On the benchmark robots it is shorter (operations: UR5 2 247 against
forward mode's 3 535, Panda 5 825 against 12 338, Solo12 8 423 against 15 965, Talos 32 513
against 85 502), so it is a preferred variant (FunctionSpec.variants): where it applies, the
generator records it alone. The reference runs forward mode, so every build compares the two.
"""

from ..model import mimic
from ..spatial import Force, Motion, add3, combine, cross3, dot3, scale3, skew, sum_terms
from . import derivatives
from .kinematics import (body_placements, gravity_acceleration, joint_kinematics, joint_slices, root_frame_placements,
                         tree_state)


def applies(model):
    """Whether every joint of the tree has a motion subspace fixed in its body."""
    return all(j.model.constant_subspace for j in model.full.joints)


def _B(Y, V, hV):
    """B x = Y (x x V) + x x* (Y V) + V x* (Y x) depends on x's angular part w_x only:
    B x = (B_aa w_x, -2 l x w_x), with l the linear momentum and
    B_aa = [w]x I - I [w]x - (u h^T + h u^T - 2 (h . u) 1) - [k]x
    for V = (w, u), Y = (m, h, I) and angular momentum k (expanding the three terms, the
    linear columns cancel by the Jacobi identity). Returned as (B_aa, l): summing over a
    subtree sums both."""
    w, u = V.ang, V.lin
    k, l = hV.ang, hV.lin
    I, h = Y.I, Y.h
    wx, kx = skew(w), skew(k)
    Iw = [[sum_terms(I[r][j] * wx[j][c] for j in range(3)) for c in range(3)] for r in range(3)]
    hu = dot3(h, u)
    Baa = [[-Iw[c][r] - Iw[r][c] - (u[r] * h[c] + h[r] * u[c]) + (2 * hu if r == c else 0) - kx[r][c]
            for c in range(3)] for r in range(3)]
    return Baa, l


def _apply_B(B, x):
    """B x for a motion x (see _B)."""
    Baa, l = B
    wx = x.ang
    return Force([sum_terms(Baa[r][c] * wx[c] for c in range(3)) for r in range(3)], scale3(-2, cross3(l, wx)))


def _B_transpose(B, J):
    """B^T J: only its angular part is not zero; as a motion-like triple (dotted with an angular part)."""
    Baa, l = B
    t = cross3(l, J.lin)
    return [sum_terms(Baa[c][r] * J.ang[c] for c in range(3)) + 2 * t[r] for r in range(3)]


def _add_B(A, B):
    return ([[x + y for x, y in zip(ra, rb)] for ra, rb in zip(A[0], B[0])], add3(A[1], B[1]))


def analytic_rnea_derivatives(model, ops, q, v, a):
    """(d tau / dq, d tau / dv), q in the tangent space, in the model's own coordinates."""
    tree, q_full, v_full, a_full = tree_state(model, q, v, a)
    kin = joint_kinematics(tree, ops, q_full)   # (a constant subspace has no bias c_J)
    X_0, a_root = _placements_in_root_frame(tree, ops, kin)
    V, A, J, dVdq, dAdq, dAdv = world_motion(tree, ops, kin, X_0, v_full, a_full, a_root=a_root)
    n, nv = tree.nbodies, tree.nv
    Yc, Bc, Fc = [None] * n, [None] * n, [None] * n
    for i in range(n):
        Y = ops.let("Yw", i, X_0[i].inertia_to_parent(tree.inertia[i]))
        h = ops.let("hw", i, Y.apply(V[i]))
        Yc[i], Bc[i] = Y, ops.let("B", i, _B(Y, V[i], h))
        Fc[i] = ops.let("fw", i, Y.apply(A[i]) + V[i].cross_force(h))

    dq = [[0] * nv for _ in range(nv)]
    dv = [[0] * nv for _ in range(nv)]
    P, Q, dFdq, dFdv = {}, {}, {}, {}       # per coordinate, for its ancestors
    for i in reversed(range(n)):
        Yc[i], Bc[i], Fc[i] = ops.let("Yc", i, Yc[i]), ops.let("Bc", i, Bc[i]), ops.let("Fc", i, Fc[i])
        own = [tree.joints[i].idx_v + c for c in range(len(J[i]))]
        below = [k for k in _subtree_coordinates(tree, i) if k not in own]
        axes = dict(zip(own, J[i]))
        for k in own:
            fq = ops.let("dFdq", k, _apply_B(Bc[i], dVdq[k]) + Yc[i].apply(dAdq[k]))
            fv = ops.let("dFdv", k, _apply_B(Bc[i], axes[k]) + Yc[i].apply(dAdv[k]))
            for r in own:
                dq[r][k], dv[r][k] = axes[r].dot(fq), axes[r].dot(fv)
            for d in below:
                dq[d][k] = dAdq[k].dot(P[d]) + dot3(Q[d], dVdq[k].ang)
                dv[d][k] = dAdv[k].dot(P[d]) + dot3(Q[d], axes[k].ang)
                dq[k][d], dv[k][d] = axes[k].dot(dFdq[d]), axes[k].dot(dFdv[d])
            dFdq[k], dFdv[k] = ops.let("dFdq", k, fq + axes[k].cross_force(Fc[i])), fv
            P[k] = ops.let("P", k, Yc[i].apply(axes[k]))
            Q[k] = ops.let("Q", k, _B_transpose(Bc[i], axes[k]))
        p = tree.parent[i]
        if p >= 0:
            Yc[p] = Yc[p] + Yc[i]
            Bc[p] = _add_B(Bc[p], Bc[i])
            Fc[p] = Fc[p] + Fc[i]
    return [_reduce(model, dq), _reduce(model, dv)]


def world_motion(tree, ops, kin, X, v, a, *, a_root):
    """Per body, in the fixed frame of the placements X: the velocity V, the acceleration A (the
    root's parent accelerating by a_root: -g folds gravity in, zero leaves it out) and the
    joint's axes J; per coordinate, dVdq, dAdq and dAdv (the module docstring)."""
    v_of, a_of = joint_slices(tree, v, "v"), joint_slices(tree, a, "v")
    n = tree.nbodies
    V, A, J = [None] * n, [None] * n, [None] * n
    dVdq, dAdq, dAdv = {}, {}, {}           # per coordinate
    for i in range(n):
        p = tree.parent[i]
        V_p = V[p] if p >= 0 else Motion()
        A_p = A[p] if p >= 0 else a_root
        J[i] = ops.let("Jw", i, [X[i].inv_apply_motion(s) for s in kin[i].S])
        own = [tree.joints[i].idx_v + c for c in range(len(J[i]))]
        for k, column in zip(own, J[i]):
            dVdq[k] = ops.let("dVdq", k, V_p.cross_motion(column))
        # The recursion itself in these coordinates, where velocities add: V = V_p + J v and
        # A = A_p + J a + V x (J v) = A_p + J a + V_p x (J v) (J v x J v = 0), the last term
        # sum v_k dVdq_k: fewer operations than body-frame recursions turned into these
        # coordinates (docs/performance.md, dtau with the recursion in the root frame).
        V[i] = ops.let("Vw", i, V_p + combine(J[i], v_of[i]))
        A[i] = ops.let("Aw", i, A_p + combine(J[i], a_of[i]) + combine([dVdq[k] for k in own], v_of[i]))
        for k, column in zip(own, J[i]):
            dAdq[k] = ops.let("dAdq", k, A_p.cross_motion(column) + V_p.cross_motion(dVdq[k]))
            dAdv[k] = ops.let("dAdv", k, (V[i] + V_p).cross_motion(column))
    return V, A, J, dVdq, dAdq, dAdv


def _placements_in_root_frame(tree, ops, kin):
    """Each body's placement, and the root's parent acceleration -g, in the coordinates that
    are the root body's at this instant rather than the world's (kinematics.root_frame_placements),
    which saves operations on floating bases (docs/performance.md, Choices in the generated
    programs). A tree with several roots stays in world coordinates."""
    X = root_frame_placements(tree, ops, kin)
    if X is None:
        return body_placements(tree, ops, kin), gravity_acceleration(tree)
    return X, ops.let("gF", 0, kin[0].X_up.apply_motion(gravity_acceleration(tree)))


def _subtree_coordinates(tree, i):
    """The velocity coordinates of body i and of every body below it."""
    bodies = {i}
    for k in range(i + 1, tree.nbodies):
        if tree.parent[k] in bodies:
            bodies.add(k)
    return [joint.idx_v + c for b in sorted(bodies) for joint in (tree.joints[b],) for c in range(joint.nv)]


def _reduce(model, D):
    """P^T D P: rows are generalized forces, columns directions of the tree's coordinates."""
    if not model.has_mimic:
        return D
    columns = mimic.reduce_columns(model, D)
    return [list(row) for row in zip(*(mimic.reduce_force(model, list(col)) for col in zip(*columns)))]


def analytic_nle_derivatives(model, ops, q, v):
    return analytic_rnea_derivatives(model, ops, q, v, [0] * model.nv)


def analytic_gravity_derivatives(model, ops, q):
    zero = [0] * model.nv
    return analytic_rnea_derivatives(model, ops, q, zero, zero)[0]


def analytic_aba_derivatives(model, ops, q, v, tau):
    return derivatives.aba_derivatives(model, ops, q, v, tau, analytic_rnea_derivatives)


def analytic_aba_derivatives_factored(model, ops, q, v, tau):
    return derivatives.aba_derivatives_factored(model, ops, q, v, tau, analytic_rnea_derivatives)
