"""Christoffel symbols of the first kind Gamma(q) (seed 002, Algorithm 2).

Index order: Gamma[i, j, k], with C[i, j] = sum_k Gamma[i, j, k] v[k]; where v = q-dot,
Gamma[i, j, k] = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i), symmetric in (j, k).

C (see coriolis.py) is linear in v, so Gamma[:, :, k] is its partial derivative along v_k:
S-dot_j = v_j x S_j + (rate of S in the body) has the partial S_k x S_j for k on the path
to j (plus dS_j/dq_k for k a coordinate of joint j itself), and B^C_j = sum over the subtree
of B(I_m, v_m) has the partial B(I^C_{deeper of j, k}, S_k) when j and k lie on one path,
B being linear in the inertia too. Only triples (i, j, k) on one root-to-leaf path are
non-zero, so the work is O(N d^2) and a branched tree costs less than a chain.

Where v is not q-dot (free-flyer, spherical, planar joints), Gamma is the same
partial derivative of the admissible C for those generalized speeds: sum_k Gamma v_k = C
still holds, the symmetry in (j, k) does not (the speeds are not derivatives of
coordinates).
"""

from ..spatial import coriolis_factor, matrix_apply, transpose66
from .kinematics import body_placements, joint_kinematics
from .momentum import world_composite_inertias


def christoffel(model, ops, q):
    """Gamma, nv x nv x nv, as nested lists Gamma[i][j][k]."""
    kin = joint_kinematics(model, ops, q)
    X_0 = body_placements(model, ops, kin)
    nv = model.nv
    body_of = [i for i, joint in enumerate(model.joints) for _ in range(joint.nv)]
    S, S_rate = [None] * nv, {}
    for i, joint in enumerate(model.joints):
        for c, s in enumerate(kin[i].S):
            S[joint.idx_v + c] = ops.let("Sw", i, X_0[i].inv_apply_motion(s))
        # dS/dq_k of a configuration-dependent S (Euler joints), in world coordinates
        for k in range(joint.nv):
            unit = [1 if m == k else 0 for m in range(joint.nv)]
            S_dot = joint.model.calc(ops, _q_of(model, q, joint), unit)[2]
            if S_dot is not None:
                for c in range(joint.nv):
                    S_rate[joint.idx_v + c, joint.idx_v + k] = ops.let("dS", i, X_0[i].inv_apply_motion(S_dot[c]))
    IC = world_composite_inertias(model, ops, X_0)

    def on_path(a, b):
        """The deeper of bodies a and b if one is an ancestor of the other, else None."""
        if a in model.support(b):
            return b
        if b in model.support(a):
            return a
        return None

    def S_dot_partial(j, k):
        """d(S-dot_j)/dv_k in world coordinates (0 where it vanishes)."""
        term = S[k].cross_motion(S[j]) if body_of[k] in model.support(body_of[j]) else None
        extra = S_rate.get((j, k))
        if extra is not None:
            term = extra if term is None else term + extra
        return term

    B_cache = {}

    def B(body, k):
        """B(I^C_body, S_k): the partial of the composite factorization along v_k."""
        if (body, k) not in B_cache:
            B_cache[body, k] = ops.let("B", body, coriolis_factor(IC[body], S[k]))
        return B_cache[body, k]

    Gamma = [[[0] * nv for _ in range(nv)] for _ in range(nv)]
    for j in range(nv):
        bj = body_of[j]
        for k in range(nv):
            bk = body_of[k]
            deep = on_path(bj, bk)
            if deep is None:
                continue
            dS = S_dot_partial(j, k)
            # F = I^C_j dS_j/dv_k + B(I^C_deep, S_k) S_j, the force whose projections give Gamma
            F = matrix_apply(B(deep, k), S[j])
            if dS is not None:
                F = F + IC[bj].apply(dS)
            F = ops.let("G", bj, F)
            for i in range(nv):
                bi = body_of[i]
                if bi in model.support(bj):            # i an ancestor of j (or the same body)
                    Gamma[i][j][k] = S[i].dot(F)
                elif bj in model.support(bi):          # j a strict ancestor of i
                    deep_i = on_path(bi, bk)
                    value = 0
                    if dS is not None:
                        value = dS.dot(IC[bi].apply(S[i]))
                    if deep_i is not None:
                        value = value + S[j].dot(matrix_apply(transpose66(B(deep_i, k)), S[i]))
                    Gamma[i][j][k] = value
    return Gamma


def _q_of(model, q, joint):
    return q[joint.idx_q:joint.idx_q + joint.nq]

