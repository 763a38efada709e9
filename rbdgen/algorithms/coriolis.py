"""The Christoffel-consistent Coriolis matrix C(q, v) (Coriolis paper Alg. 1, seed 002).

Every quantity is expressed in one frame fixed at this instant (the root body's, or the
world's for a tree with several roots), so composites are plain sums: I^C_j and
B^C_j are the inertia and the body-level factorization B(I_k, v_k) summed over the subtree
of body j. With S and S-dot (the rate of change of S in that frame) of each joint, for the
coordinates r of joint i and k of joint j:
    i an ancestor of j (or i = j):  C[r, k] = S_r . (I^C_j S-dot_k + B^C_j S_k)
    j an ancestor of i:             C[r, k] = S-dot_k . (I^C_i S_r) + S_k . (B^C_i^T S_r)
and C = 0 between different branches. C v = nle(q, v) - gravity(q) and M-dot - 2 C is
skew-symmetric. Where v is not q-dot (free-flyer, spherical, planar: v is the body
velocity), the same algorithm gives the admissible factorization of the Coriolis paper §3.3
(seed 002) for those generalized speeds: both properties still hold, with M-dot taken along the
motion.
"""

from ..spatial import add66, coriolis_factor, matrix_apply, transpose66
from .kinematics import body_placements, body_velocities, joint_kinematics, root_frame_placements
from .momentum import world_composite_inertias


def world_joint_quantities(model, ops, kin, X_0, velocities):
    """Per joint: S and S-dot in world coordinates, and the body's world velocity."""
    S, S_dot, v_world = [], [], []
    for i, k in enumerate(kin):
        X = X_0[i]
        v_w = ops.let("vw", i, X.inv_apply_motion(velocities[i]))
        cols = ops.let("Sw", i, [X.inv_apply_motion(s) for s in k.S])
        dcols = [v_w.cross_motion(s) for s in cols]
        if k.S_dot is not None:
            dcols = [d + X.inv_apply_motion(a) for d, a in zip(dcols, k.S_dot)]
        S.append(cols)
        S_dot.append(ops.let("Sdw", i, dcols))
        v_world.append(v_w)
    return S, S_dot, v_world


def coriolis(model, ops, q, v):
    """C(q, v), nv x nv, with C v = nle - g and M-dot - 2C skew-symmetric."""
    kin = joint_kinematics(model, ops, q, v)
    # any frame fixed at this instant will do: the root body's spares the free-flyer's rotation
    X_0 = root_frame_placements(model, ops, kin) or body_placements(model, ops, kin)
    S, S_dot, v_world = world_joint_quantities(model, ops, kin, X_0, body_velocities(model, ops, kin, v))
    inertias = [ops.let("Iw", i, X_0[i].inertia_to_parent(model.inertia[i])) for i in range(model.nbodies)]
    BC = [coriolis_factor(inertias[i], v_world[i]) for i in range(model.nbodies)]
    IC = world_composite_inertias(model, ops, X_0, inertias)
    C = [[0] * model.nv for _ in range(model.nv)]
    for j in reversed(range(model.nbodies)):
        BC[j] = ops.let("BC", j, BC[j])
        BCt = transpose66(BC[j])
        F1 = ops.let("F1", j, [IC[j].apply(d) + matrix_apply(BC[j], s) for s, d in zip(S[j], S_dot[j])])
        F2 = ops.let("F2", j, [IC[j].apply(s) for s in S[j]])
        F3 = ops.let("F3", j, [matrix_apply(BCt, s) for s in S[j]])
        cols = range(model.joints[j].idx_v, model.joints[j].idx_v + model.joints[j].nv)
        for i in model.support(j):
            rows = range(model.joints[i].idx_v, model.joints[i].idx_v + model.joints[i].nv)
            for r, s_r, d_r in zip(rows, S[i], S_dot[i]):
                for c, f1, f2, f3 in zip(cols, F1, F2, F3):
                    C[r][c] = s_r.dot(f1)
                    if i != j:
                        C[c][r] = d_r.dot(f2) + s_r.dot(f3)
        p = model.parent[j]
        if p >= 0:
            BC[p] = add66(BC[p], BC[j])
    return C
