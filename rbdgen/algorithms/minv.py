"""The inverse inertia matrix M^-1 in Theta(n^2) by articulated-body impulses (seed 001,
Algorithms 1 and 2), and M^-1 tau in O(n) (RBDL's CalcMInvTimesTau, seed 000 §5.3).

Column c of M^-1 is the joint acceleration that a unit impulse on coordinate c produces
from rest, without gravity: ABA with tau = e_c and v = 0, all columns at once. The
backward pass carries, per body, the impulses F_i[c] that the subtree passes to its
parent (non-zero only for columns c inside the subtree); the forward pass carries the
accelerations P_i[c] of the body for columns c from its own on (the upper triangle; the
rest follows by symmetry). The articulated inertias are ABA's. A floating base is just
a 6-DoF root joint here, which is seed 001's Algorithm 2.
"""

from ..spatial import combine, project
from .aba import aba, articulated_inertias, check_invertible
from .kinematics import joint_kinematics
from .linalg import matvec


def minv(model, ops, q):
    """M(q)^-1, nv x nv, full and symmetric."""
    check_invertible(model)
    kin = joint_kinematics(model, ops, q)
    IA, U, Dinv, Ia = articulated_inertias(model, ops, kin)
    n, nv = model.nbodies, model.nv
    subtree_end = _subtree_ends(model)
    Minv = [[0] * nv for _ in range(nv)]
    F = [dict() for _ in range(n)]            # impulses passed up, by column
    for i in reversed(range(n)):
        joint, k = model.joints[i], kin[i]
        rows = range(joint.idx_v, joint.idx_v + joint.nv)
        columns = range(joint.idx_v, subtree_end[i])
        for c in columns:
            unit = [1 if r == c else 0 for r in rows]
            f = F[i].get(c)
            u = unit if f is None else [e - x for e, x in zip(unit, project(k.S, f))]
            x = ops.let("Mb", i, matvec(Dinv[i], u))
            for r, value in zip(rows, x):
                Minv[r][c] = value
            p = model.parent[i]
            if p >= 0:
                impulse = combine(U[i], x) if f is None else f + combine(U[i], x)
                up = ops.let("Fi", i, k.X_up.inv_apply_force(impulse))
                F[p][c] = up if c not in F[p] else F[p][c] + up
    P = [dict() for _ in range(n)]            # accelerations of the body, by column
    for i in range(n):
        joint, k = model.joints[i], kin[i]
        rows = range(joint.idx_v, joint.idx_v + joint.nv)
        p = model.parent[i]
        for c in range(joint.idx_v, nv):
            if p >= 0:
                a = k.X_up.apply_motion(P[p][c])
                correction = matvec(Dinv[i], [a.dot(Uk) for Uk in U[i]])
                for r, value in zip(rows, correction):
                    Minv[r][c] = Minv[r][c] - value
            column = ops.let("Mf", i, [Minv[r][c] for r in rows])
            for r, value in zip(rows, column):
                Minv[r][c] = value
            if _has_children(model, i):
                acc = combine(k.S, column)
                P[i][c] = ops.let("P", i, acc if p < 0 else a + acc)
    for r in range(nv):
        for c in range(r):
            Minv[r][c] = Minv[c][r]
    return Minv


def minv_times(model, ops, q, tau):
    """M(q)^-1 tau in O(n): ABA from rest without gravity, on ABA's articulated inertias."""
    return aba(model, ops, q, [0] * model.nv, tau, gravity=False)


def _subtree_ends(model):
    """For each body, one past the last velocity index of its subtree (DFS order)."""
    end = [j.idx_v + j.nv for j in model.joints]
    for i in reversed(range(model.nbodies)):
        p = model.parent[i]
        if p >= 0:
            end[p] = max(end[p], end[i])
    return end


def _has_children(model, i):
    return any(p == i for p in model.parent)

