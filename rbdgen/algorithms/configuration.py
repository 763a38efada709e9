"""Configuration-space operations on a whole model: Pinocchio's integrate (q (+) v) and
difference (q1 (-) q0), joint by joint.

Each joint model supplies its own pair (JointModel.integrate / difference, rbdgen/model/
joints.py), from its Lie group's operations (rbdgen/model/groups.py, which describes them).
Identities: integrate(q, difference(q, q1)) = q1 (the same rotation; angles modulo 2 pi) and
difference(q, integrate(q, v)) = v while every rotation angle in v stays below pi.
"""


def integrate(model, ops, q, v, dt):
    """q (+) v dt for every joint (Pinocchio's integrate); dt is a one-element sequence."""
    dt = dt[0]
    out = list(q)
    for i, joint in enumerate(model.joints):
        q_i = q[joint.idx_q:joint.idx_q + joint.nq]
        v_i = ops.let("dv", i, [x * dt for x in v[joint.idx_v:joint.idx_v + joint.nv]])
        out[joint.idx_q:joint.idx_q + joint.nq] = ops.let("qn", i, joint.model.integrate(ops, q_i, v_i))
    return out


def difference(model, ops, q0, q1):
    """The velocity v with q0 (+) v = q1, the shortest one (Pinocchio's difference)."""
    out = [0] * model.nv
    for i, joint in enumerate(model.joints):
        a = q0[joint.idx_q:joint.idx_q + joint.nq]
        b = q1[joint.idx_q:joint.idx_q + joint.nq]
        out[joint.idx_v:joint.idx_v + joint.nv] = ops.let("dq", i, joint.model.difference(ops, a, b))
    return out
