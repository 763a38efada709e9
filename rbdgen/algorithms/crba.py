"""Composite rigid-body algorithm (RBDL paper Alg. 2, seed 000): the joint-space inertia matrix M(q).

Only ancestors couple, so on a branched tree the entries between different branches stay
literal zeros and cost nothing. M is returned full and symmetric.
"""

from ..spatial import project
from .kinematics import joint_kinematics


def composite_inertias(model, ops, kin):
    """I^c_i: the inertia of the subtree rooted at body i, in body i's frame."""
    Ic = list(model.inertia)
    for i in reversed(range(model.nbodies)):
        Ic[i] = ops.let("Ic", i, Ic[i])
        p = model.parent[i]
        if p >= 0:
            Ic[p] = Ic[p] + kin[i].X_up.inertia_to_parent(Ic[i])
    return Ic


def crba(model, ops, q):
    """M(q), nv x nv, with M v-dot + nle = tau."""
    kin = joint_kinematics(model, ops, q)
    Ic = composite_inertias(model, ops, kin)
    M = [[0] * model.nv for _ in range(model.nv)]
    for i, joint in enumerate(model.joints):
        F = ops.let("F", i, [Ic[i].apply(s) for s in kin[i].S])
        block = [project(kin[i].S, f) for f in F]
        for k, rotor in enumerate(model.joint_armature(joint)):   # armature: on the diagonal
            block[k][k] = block[k][k] + rotor
        _set_block(M, joint, joint, block)
        j = i
        while model.parent[j] >= 0:
            F = ops.let("F", i, [kin[j].X_up.inv_apply_force(f) for f in F])
            j = model.parent[j]
            _set_block(M, model.joints[j], joint, [project(kin[j].S, f) for f in F])
    return M


def _set_block(M, row_joint, col_joint, columns):
    """M[rows, cols] and its mirror M[cols, rows] from per-column projections."""
    for c, column in enumerate(columns):
        for r, value in enumerate(column):
            M[row_joint.idx_v + r][col_joint.idx_v + c] = value
            M[col_joint.idx_v + c][row_joint.idx_v + r] = value
