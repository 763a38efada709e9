"""The inverse inertia matrix M^-1 in Theta(n^2) by articulated-body impulses (Drumwright,
Alg. 1 and 2, seed 001), and M^-1 tau in O(n) (RBDL's CalcMInvTimesTau: RBDL paper §5.3,
seed 000).

Column c of M^-1 is the joint acceleration that a unit impulse on coordinate c produces
from rest, without gravity: ABA with tau = e_c and v = 0, all columns at once. The
backward pass carries, per body, the impulses F_i[c] that the subtree passes to its
parent (non-zero only for columns c inside the subtree); the forward pass carries the
accelerations P_i[c] of the body for columns c from its own on (the upper triangle; the
rest follows by symmetry). The articulated inertias are ABA's. A floating base is just
a 6-DoF root joint here, which is Drumwright's Alg. 2 (seed 001).
"""

from ..spatial import combine, project
from .aba import aba, articulated_inertias, check_invertible
from .kinematics import body_placements, joint_kinematics, root_frame_placements
from .linalg import matvec


def minv(model, ops, q):
    """M(q)^-1, nv x nv, full and symmetric (articulated inertias in body coordinates)."""
    check_invertible(model)
    kin = joint_kinematics(model, ops, q)
    _, U, Dinv, _ = articulated_inertias(model, ops, kin)
    return _impulse_passes(model, ops, [k.S for k in kin], U, Dinv,
                           force_to_parent=lambda i, f: kin[i].X_up.inv_apply_force(f),
                           motion_from_parent=lambda i, m: kin[i].X_up.apply_motion(m))


def minv_in_fixed_frame(model, ops, q):
    """M(q)^-1 with everything in one frame fixed at this instant, as Drumwright (seed 001) works
    in the global frame (here the root body's: kinematics.root_frame_placements). The
    Theta(n^2) passes then need no transform, while S, U and D lose the zeros that body
    coordinates give them: fewer operations on some robots (floating bases, UR5), more on others
    (Panda: docs/performance.md, Choices in the generated programs). The generator keeps the
    shorter of the two programs."""
    check_invertible(model)
    kin = joint_kinematics(model, ops, q)
    X = root_frame_placements(model, ops, kin) or body_placements(model, ops, kin)
    S = [ops.let("Sw", i, [X[i].inv_apply_motion(s) for s in k.S]) for i, k in enumerate(kin)]
    _, U, Dinv, _ = articulated_inertias(model, ops, kin, (X, S))
    return _impulse_passes(model, ops, S, U, Dinv, force_to_parent=lambda i, f: f, motion_from_parent=lambda i, m: m)


def minv_across_branches(model, ops, q):
    """M(q)^-1 as `minv` (body coordinates), the entries between two branches of the tree
    each one dot product: see _impulse_passes_across."""
    check_invertible(model)
    kin = joint_kinematics(model, ops, q)
    _, U, Dinv, _ = articulated_inertias(model, ops, kin)
    return _impulse_passes(model, ops, [k.S for k in kin], U, Dinv,
                           force_to_parent=lambda i, f: kin[i].X_up.inv_apply_force(f),
                           motion_from_parent=lambda i, m: kin[i].X_up.apply_motion(m), across=True)


def minv_across_branches_in_fixed_frame(model, ops, q):
    """M(q)^-1 as `minv_in_fixed_frame`, the entries between two branches each one dot product."""
    check_invertible(model)
    kin = joint_kinematics(model, ops, q)
    X = root_frame_placements(model, ops, kin) or body_placements(model, ops, kin)
    S = [ops.let("Sw", i, [X[i].inv_apply_motion(s) for s in k.S]) for i, k in enumerate(kin)]
    _, U, Dinv, _ = articulated_inertias(model, ops, kin, (X, S))
    return _impulse_passes(model, ops, S, U, Dinv, force_to_parent=lambda i, f: f, motion_from_parent=lambda i, m: m,
                           across=True)


def has_branches(model):
    """Whether minv_across_branches differs from minv: a body with two children (no mimic
    joints: those take mimic.minv's own path)."""
    children = [p for p in model.parent if p >= 0]
    return not model.has_mimic and len(children) != len(set(children))


def _common_ancestor(model, i, j):
    """The deepest body above both i and j, or -1 (the world) when they are in two trees of a
    forest (a fixed base with several bodies on it)."""
    ancestors = {-1}
    while i >= 0:
        ancestors.add(i)
        i = model.parent[i]
    while j not in ancestors:
        j = model.parent[j]
    return j



def _impulse_passes(model, ops, S, U, Dinv, *, force_to_parent, motion_from_parent, across=False):
    """Drumwright's two passes (seed 001); `force_to_parent(i, f)` and `motion_from_parent(i, m)`
    carry a vector across joint i (identities when everything is in one frame).

    across: the forward pass cut to the subtrees. Let r be a coordinate of body i and c >= r
    one outside i's subtree (a later branch), g the deepest common ancestor of their bodies and
    h g's child above i. The impulse on c reaches i's branch only through g's acceleration
    P[g][c], to which h's subtree (at rest, no other impulse) responds with r's acceleration
    K_r P[g][c]. The backward pass already holds K_r: the impulse F[g][r] that a unit impulse
    on r passes to g with g held is -K_r^T (the subtree's inertia [[M_gg, M_gq], [M_qg, M_qq]]
    gives K = -M_qq^-1 M_qg for the one and M_gq M_qq^-1 e_r for the other). So M^-1[r, c] =
    -F[g][r] . P[g][c]: 11 operations instead of a motion carried down the whole branch, and
    the forward pass carries P[i][c] only for the columns c of i's children's subtrees. On a
    chain nothing changes; a floating base's legs and arms are branches. The joint's own
    columns then use W = X^T U, the joint's U in its parent's coordinates, once per body in
    both passes (no impulse or acceleration of theirs is carried across the joint one by one)."""
    n, nv = model.nbodies, model.nv
    subtree_end = _subtree_ends(model)
    body_of = [i for i, j in enumerate(model.joints) for _ in range(j.nv)]   # by velocity coordinate
    Minv = [[0] * nv for _ in range(nv)]
    W = [ops.let("W", i, [force_to_parent(i, Uk) for Uk in U[i]]) if across and model.parent[i] >= 0 else None
         for i in range(n)]
    F = [dict() for _ in range(n)]            # impulses passed up, by column
    for i in reversed(range(n)):
        joint = model.joints[i]
        rows = range(joint.idx_v, joint.idx_v + joint.nv)
        for c in range(joint.idx_v, subtree_end[i]):
            unit = [1 if r == c else 0 for r in rows]
            f = F[i].get(c)
            u = unit if f is None else [e - x for e, x in zip(unit, project(S[i], f))]
            x = ops.let("Mb", i, matvec(Dinv[i], u))
            for r, value in zip(rows, x):
                Minv[r][c] = value
            p = model.parent[i]
            if p >= 0:
                if W[i] is not None and f is None:   # a column of the joint's own: U x carried across is W x
                    up = combine(W[i], x)
                else:
                    up = force_to_parent(i, combine(U[i], x) if f is None else f + combine(U[i], x))
                up = ops.let("Fi", i, up)
                F[p][c] = up if c not in F[p] else F[p][c] + up
    P = [dict() for _ in range(n)]            # accelerations of the body, by column
    for i in range(n):
        joint = model.joints[i]
        rows = range(joint.idx_v, joint.idx_v + joint.nv)
        own = joint.idx_v + joint.nv
        p = model.parent[i]
        for c in range(joint.idx_v, subtree_end[i] if across else nv):
            if p >= 0:
                if across and c < own:               # U^T X P = W^T P
                    correction = matvec(Dinv[i], [P[p][c].dot(Wk) for Wk in W[i]])
                else:
                    a = motion_from_parent(i, P[p][c])
                    correction = matvec(Dinv[i], [a.dot(Uk) for Uk in U[i]])
                for r, value in zip(rows, correction):
                    Minv[r][c] = Minv[r][c] - value
            column = ops.let("Mf", i, [Minv[r][c] for r in rows])
            for r, value in zip(rows, column):
                Minv[r][c] = value
            if c >= own if across else _has_children(model, i):
                acc = combine(S[i], column)
                P[i][c] = ops.let("P", i, acc if p < 0 else a + acc)
        for c in range(subtree_end[i], nv if across else 0):   # the later branches'
            g = _common_ancestor(model, i, body_of[c])
            for r in rows:   # two trees of a forest: M is block diagonal, and so is M^-1
                Minv[r][c] = 0 if g < 0 else ops.let("Mx", i, -P[g][c].dot(F[g][r]))
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

