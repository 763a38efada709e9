"""Christoffel symbols of the first kind Gamma(q) (Coriolis paper Alg. 2, seed 002).

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

from ..spatial import coriolis_factor, matrix_apply
from .kinematics import body_placements, joint_kinematics, root_frame_placements
from .momentum import world_composite_inertias


def christoffel(model, ops, q):
    """Gamma, nv x nv x nv, as nested lists Gamma[i][j][k]."""
    kin = joint_kinematics(model, ops, q)
    # any frame fixed at this instant will do (coriolis.py): the root body's spares its joint
    X_0 = root_frame_placements(model, ops, kin) or body_placements(model, ops, kin)
    nv = model.nv
    body_of = [i for i, joint in enumerate(model.joints) for _ in range(joint.nv)]
    S, S_rate = [None] * nv, {}
    for i, joint in enumerate(model.joints):
        for c, s in enumerate(kin[i].S):
            S[joint.idx_v + c] = ops.let("Sw", i, X_0[i].inv_apply_motion(s))
        # dS/dq_k of a configuration-dependent S (Euler joints), in that frame
        for k in range(joint.nv):
            unit = [1 if m == k else 0 for m in range(joint.nv)]
            S_dot = joint.model.calc(ops, _q_of(model, q, joint), unit)[2]
            if S_dot is not None:
                for c in range(joint.nv):
                    S_rate[joint.idx_v + c, joint.idx_v + k] = ops.let("dS", i, X_0[i].inv_apply_motion(S_dot[c]))
    IC = world_composite_inertias(model, ops, X_0)

    ancestors = [set(model.support(b)) for b in range(model.nbodies)]   # including the body itself

    def on_path(a, b):
        """The deeper of bodies a and b if one is an ancestor of the other, else None."""
        if a in ancestors[b]:
            return b
        if b in ancestors[a]:
            return a
        return None

    def S_dot_partial(j, k):
        """d(S-dot_j)/dv_k in that frame (None where it vanishes)."""
        term = S[k].cross_motion(S[j]) if body_of[k] in ancestors[body_of[j]] else None
        extra = S_rate.get((j, k))
        if extra is not None:
            term = extra if term is None else term + extra
        return term

    B_cache, BS_cache = {}, {}

    def BS(body, k, j):
        """B(I^C_body, S_k) S_j: the partial of the composite factorization along v_k, on S_j."""
        if (body, k, j) not in BS_cache:
            if (body, k) not in B_cache:
                B_cache[body, k] = ops.let("B", body, coriolis_factor(IC[body], S[k]))
            BS_cache[body, k, j] = ops.let("BS", body, matrix_apply(B_cache[body, k], S[j]))
        return BS_cache[body, k, j]

    IS = [ops.let("IS", body_of[i], IC[body_of[i]].apply(S[i])) for i in range(nv)]
    Gamma = [[[0] * nv for _ in range(nv)] for _ in range(nv)]
    for j in range(nv):
        bj = body_of[j]
        for k in range(nv):
            deep = on_path(bj, body_of[k])
            if deep is None:
                continue
            dS = S_dot_partial(j, k)
            # i an ancestor of j (or on the same body): S_i . (I^C_j dS_j/dv_k + B(I^C_deep, S_k) S_j)
            F = BS(deep, k, j) if dS is None else ops.let("G", bj, BS(deep, k, j) + IC[bj].apply(dS))
            for i in range(nv):
                bi = body_of[i]
                if bi in ancestors[bj]:
                    Gamma[i][j][k] = S[i].dot(F)
                elif bj in ancestors[bi]:
                    # j a strict ancestor of i: dS_j/dv_k . I^C_i S_i + S_i . B(I^C_deep', S_k) S_j
                    deep_i = on_path(bi, body_of[k])
                    value = dS.dot(IS[i]) if dS is not None else 0
                    if deep_i is not None:
                        value = value + S[i].dot(BS(deep_i, k, j))
                    Gamma[i][j][k] = value
    return Gamma


def _q_of(model, q, joint):
    return q[joint.idx_q:joint.idx_q + joint.nq]

