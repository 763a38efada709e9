"""Articulated-body algorithm (seed 000 Algorithm 3): forward dynamics in O(n).

Returns a = M^-1 (tau - nle + sum J^T f_ext). Multi-DoF joints (spherical, free-flyer)
invert their small D = S^T I^A S with one LDL^T factorization each.
"""

from ..errors import ModelError
from ..spatial import Inertia, add66, combine, matrix_apply, project, sum_terms
from .kinematics import gravity_acceleration, joint_kinematics, joint_slices
from .linalg import matvec, symmetric_inverse


def aba(model, ops, q, v, tau, f_ext=None):
    check_invertible(model)
    kin = joint_kinematics(model, ops, q, v)
    vs, taus = joint_slices(model, v, "v"), joint_slices(model, tau, "v")
    n = model.nbodies
    velocities, bias, IA, pA = [None] * n, [None] * n, [None] * n, [None] * n
    for i, k in enumerate(kin):
        p = model.parent[i]
        vJ = combine(k.S, vs[i])
        velocities[i] = ops.let("v", i, vJ if p < 0 else k.X_up.apply_motion(velocities[p]) + vJ)
        bias[i] = ops.let("c", i, k.c_J + velocities[i].cross_motion(vJ))
        inertia: Inertia = model.inertia[i]
        IA[i] = inertia.matrix()
        p_i = inertia.bias_force(velocities[i])
        pA[i] = p_i - f_ext[i] if f_ext is not None else p_i

    U, Dinv, u = [None] * n, [None] * n, [None] * n
    for i in reversed(range(n)):
        k = kin[i]
        IA[i], pA[i] = ops.let("IA", i, IA[i]), ops.let("pA", i, pA[i])
        U[i] = ops.let("U", i, [matrix_apply(IA[i], s) for s in k.S])
        D = [[s.dot(Uc) for Uc in U[i]] for s in k.S]
        Dinv[i] = ops.let("Dinv", i, symmetric_inverse(D, lambda name, value: ops.let(name, i, value)))
        u[i] = ops.let("u", i, [t - x for t, x in zip(taus[i], project(k.S, pA[i]))])
        p = model.parent[i]
        if p >= 0:
            Ia, pa = _articulated_update(IA[i], pA[i], bias[i], U[i], Dinv[i], u[i])
            IA[p] = add66(IA[p], k.X_up.matrix_to_parent(ops.let("Ia", i, Ia)))
            pA[p] = pA[p] + k.X_up.inv_apply_force(ops.let("pa", i, pa))

    accelerations = [None] * n
    qdd = [0] * model.nv
    a_root = gravity_acceleration(model)
    for i, k in enumerate(kin):
        p = model.parent[i]
        a_prime = k.X_up.apply_motion(a_root if p < 0 else accelerations[p]) + bias[i]
        rhs = [u_k - a_prime.dot(U_k) for u_k, U_k in zip(u[i], U[i])]
        qdd_i = ops.let("qdd", i, matvec(Dinv[i], rhs))
        accelerations[i] = ops.let("a", i, a_prime + combine(k.S, qdd_i))
        joint = model.joints[i]
        qdd[joint.idx_v:joint.idx_v + joint.nv] = qdd_i
    return qdd


def check_invertible(model):
    """Forward dynamics needs a non-singular M: every joint must move some inertia."""
    massless = model.massless_joints()
    if massless:
        raise ModelError(f"joint {massless[0]!r} moves no mass or inertia, so M is singular and forward "
                         f"dynamics is undefined; give its links an <inertial> ({len(massless)} such joints)")


def _articulated_update(IA, pA, c, U, Dinv, u):
    """I^a = I^A - U D^-1 U^T and p^a = p^A + I^a c + U D^-1 u: what body i passes up."""
    W = [combine(U, column) for column in zip(*Dinv)]   # U D^-1, one Force per column
    Ue = [Uk.entries() for Uk in U]
    We = [Wk.entries() for Wk in W]
    upper = {(r, col): IA[r][col] - sum_terms(w[r] * ue[col] for w, ue in zip(We, Ue))
             for r in range(6) for col in range(r, 6)}
    Ia = tuple(tuple(upper[min(r, col), max(r, col)] for col in range(6)) for r in range(6))
    pa = pA + matrix_apply(Ia, c) + combine(W, u)
    return Ia, pa
