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
Its per-body work (world inertias, B) is heavier than forward mode's and its per-pair work
lighter, so neither wins everywhere (operations: UR5 4 900 against forward mode's 3 500,
Panda 8 500 against 12 300, Solo12 even, Talos 49 000 against 85 500): the generator records
both and keeps the shorter program (FunctionSpec.variants); the reference uses forward mode.
"""

from ..model import mimic
from . import derivatives
from ..spatial import Force, Motion, sum_terms
from .kinematics import body_accelerations, body_placements, body_velocities, gravity_acceleration, joint_kinematics

_UNIT = [Motion(tuple(1 if k == c else 0 for k in range(3)), (0, 0, 0)) for c in range(3)] + \
        [Motion((0, 0, 0), tuple(1 if k == c else 0 for k in range(3))) for c in range(3)]


def applies(model):
    """Whether every joint of the tree has a motion subspace fixed in its body."""
    return all(j.model.constant_subspace for j in model.full.joints)


def _B_columns(Y, V, h):
    """B e_k for the six unit motions: B x = Y (x x V) + x x* h + V x* (Y x)."""
    return [Y.apply(e.cross_motion(V)) + e.cross_force(h) + V.cross_force(Y.apply(e)) for e in _UNIT]


def _apply_columns(columns, x):
    """sum_k x_k columns[k] for a motion x ([ang; lin] entries against the unit motions)."""
    return _sum_forces([c.scale(s) for c, s in zip(columns, x.entries())])


def _sum_forces(forces):
    return Force([sum_terms(f.ang[k] for f in forces) for k in range(3)],
                 [sum_terms(f.lin[k] for f in forces) for k in range(3)])


def _dot6(row, x):
    return sum_terms(r * e for r, e in zip(row, x.entries()))


def _variant(function):
    """A variant of the function table (rbdgen.codegen.functions): it has `applies`."""
    function.applies = applies
    return function


@_variant
def analytic_rnea_derivatives(model, ops, q, v, a):
    """(d tau / dq, d tau / dv), q in the tangent space, in the model's own coordinates."""
    tree = model.full
    q_full, v_full, a_full = mimic.expand_q(model, q), mimic.expand_v(model, v), mimic.expand_v(model, a)
    kin = joint_kinematics(tree, ops, q_full, v_full)
    body_v = body_velocities(tree, ops, kin, v_full)
    body_a = body_accelerations(tree, ops, kin, body_v, v_full, a_full, gravity_acceleration(tree))
    X_0 = body_placements(tree, ops, kin)
    n, nv = tree.nbodies, tree.nv
    V, A, J = [None] * n, [None] * n, [None] * n
    Yc, Bc, Fc = [None] * n, [None] * n, [None] * n
    dVdq, dAdq, dAdv = {}, {}, {}           # per coordinate
    for i in range(n):
        p = tree.parent[i]
        V[i] = ops.let("Vw", i, X_0[i].inv_apply_motion(body_v[i]))
        A[i] = ops.let("Aw", i, X_0[i].inv_apply_motion(body_a[i]))
        V_p = V[p] if p >= 0 else Motion()
        A_p = A[p] if p >= 0 else gravity_acceleration(tree)
        J[i] = ops.let("Jw", i, [X_0[i].inv_apply_motion(s) for s in kin[i].S])
        for c, column in enumerate(J[i]):
            k = tree.joints[i].idx_v + c
            dVdq[k] = ops.let("dVdq", k, V_p.cross_motion(column))
            dAdq[k] = ops.let("dAdq", k, A_p.cross_motion(column) + V_p.cross_motion(dVdq[k]))
            dAdv[k] = ops.let("dAdv", k, (V[i] + V_p).cross_motion(column))
        Y = ops.let("Yw", i, X_0[i].inertia_to_parent(tree.inertia[i]))
        h = ops.let("hw", i, Y.apply(V[i]))
        Yc[i], Bc[i] = Y, ops.let("B", i, _B_columns(Y, V[i], h))
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
            fq = ops.let("dFdq", k, _apply_columns(Bc[i], dVdq[k]) + Yc[i].apply(dAdq[k]))
            fv = ops.let("dFdv", k, _apply_columns(Bc[i], axes[k]) + Yc[i].apply(dAdv[k]))
            for r in own:
                dq[r][k], dv[r][k] = axes[r].dot(fq), axes[r].dot(fv)
            for d in below:
                dq[d][k] = dAdq[k].dot(P[d]) + _dot6(Q[d], dVdq[k])
                dv[d][k] = dAdv[k].dot(P[d]) + _dot6(Q[d], axes[k])
                dq[k][d], dv[k][d] = axes[k].dot(dFdq[d]), axes[k].dot(dFdv[d])
            dFdq[k], dFdv[k] = ops.let("dFdq", k, fq + axes[k].cross_force(Fc[i])), fv
            P[k] = ops.let("P", k, Yc[i].apply(axes[k]))
            Q[k] = ops.let("Q", k, [axes[k].dot(column) for column in Bc[i]])
        p = tree.parent[i]
        if p >= 0:
            Yc[p] = Yc[p] + Yc[i]
            Bc[p] = [x + y for x, y in zip(Bc[p], Bc[i])]
            Fc[p] = Fc[p] + Fc[i]
    return [_reduce(model, dq), _reduce(model, dv)]


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


@_variant
def analytic_nle_derivatives(model, ops, q, v):
    return analytic_rnea_derivatives(model, ops, q, v, [0] * model.nv)


@_variant
def analytic_gravity_derivatives(model, ops, q):
    zero = [0] * model.nv
    return analytic_rnea_derivatives(model, ops, q, zero, zero)[0]


@_variant
def analytic_aba_derivatives(model, ops, q, v, tau):
    return derivatives.aba_derivatives(model, ops, q, v, tau, analytic_rnea_derivatives)
