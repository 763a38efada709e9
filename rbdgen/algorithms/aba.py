"""Articulated-body algorithm (RBDL paper Alg. 3, seed 000): forward dynamics in O(n).

Returns a = M^-1 (tau - nle + sum J^T f_ext). Multi-DoF joints (spherical, free-flyer)
invert their small D = S^T I^A S with one LDL^T factorization each.
"""

from ..errors import ModelError
from ..spatial import Motion, add66, combine, matrix_apply, project, sum_terms
from .kinematics import gravity_acceleration, joint_kinematics, joint_slices
from .linalg import matvec, symmetric_inverse, symmetric_solve


def aba(model, ops, q, v, tau, f_ext=None, *, gravity=True):
    """Forward dynamics; with gravity=False and v = 0 this is M^-1 tau (minv_times)."""
    check_invertible(model)
    kin = joint_kinematics(model, ops, q, v)
    vs, taus = joint_slices(model, v, "v"), joint_slices(model, tau, "v")
    n = model.nbodies
    velocities, bias, pA = [None] * n, [None] * n, [None] * n
    for i, k in enumerate(kin):
        p = model.parent[i]
        vJ = combine(k.S, vs[i])
        velocities[i] = ops.let("v", i, vJ if p < 0 else k.X_up.apply_motion(velocities[p]) + vJ)
        bias[i] = ops.let("c", i, k.c_J + velocities[i].cross_motion(vJ))
        p_i = model.inertia[i].bias_force(velocities[i])
        pA[i] = p_i - f_ext[i] if f_ext is not None else p_i

    IA, U, Dinv, Ia = articulated_inertias(model, ops, kin)
    u = [None] * n
    for i in reversed(range(n)):
        k = kin[i]
        pA[i] = ops.let("pA", i, pA[i])
        u[i] = ops.let("u", i, [t - x for t, x in zip(taus[i], project(k.S, pA[i]))])
        p = model.parent[i]
        if p >= 0:
            pa = pA[i] + matrix_apply(Ia[i], bias[i]) + combine(U[i], matvec(Dinv[i], u[i]))
            pA[p] = pA[p] + k.X_up.inv_apply_force(ops.let("pa", i, pa))

    accelerations = [None] * n
    qdd = [0] * model.nv
    a_root = gravity_acceleration(model) if gravity else Motion()
    for i, k in enumerate(kin):
        p = model.parent[i]
        a_prime = k.X_up.apply_motion(a_root if p < 0 else accelerations[p]) + bias[i]
        rhs = [u_k - a_prime.dot(U_k) for u_k, U_k in zip(u[i], U[i])]
        if p < 0 and len(rhs) > 1:
            # a root of several coordinates (free-flyer, spherical) passes nothing to a parent, so
            # nothing else needs its D^-1 (articulated_inertias' is dead code, removed): one solve
            # with D's factors, fewer operations and a faster call (docs/performance.md, ABA: its
            # exact zeros, and the free-flyer root's solve)
            D = joint_inertia(model, i, k.S, U[i])
            qdd_i = ops.let("qdd", i, symmetric_solve(D, rhs, lambda name, value: ops.let(name, i, value)))
        else:
            qdd_i = ops.let("qdd", i, matvec(Dinv[i], rhs))
        accelerations[i] = ops.let("a", i, a_prime + combine(k.S, qdd_i))
        joint = model.joints[i]
        qdd[joint.idx_v:joint.idx_v + joint.nv] = qdd_i
    return qdd


def articulated_inertias(model, ops, kin, frame=None):
    """The inertia half of ABA's backward pass: for each body I^A, U = I^A S, D^-1 and
    I^a = I^A - U D^-1 U^T (what it passes to its parent). Shared with M^-1 (minv.py).

    In body coordinates by default; with `frame` = (X, S), every body's placement X[i] in
    one frame fixed at this instant and its motion subspace S[i] there, in that frame, where
    I^a is added to the parent's I^A without a transform.

    In body coordinates I^a S = 0 (without armature, which D has and I^A not), so a joint whose
    motion subspace runs along coordinate axes of its body (a revolute or prismatic joint about
    x, y or z) has exact zeros in those rows and columns of I^a; computed as I^A - U D^-1 U^T
    they would be rounding, and cost their operations and those of the transform to the parent
    they enter: fewer operations in ABA and M^-1, errors the same or smaller (docs/performance.md:
    ABA: its exact zeros; M^-1 across branches)."""
    n = model.nbodies
    X, S = frame if frame is not None else (None, [k.S for k in kin])
    IA = [I.matrix() if X is None else X[i].inertia_to_parent(I).matrix() for i, I in enumerate(model.inertia)]
    U, Dinv, Ia = [None] * n, [None] * n, [None] * n
    for i in reversed(range(n)):
        IA[i] = ops.let("IA", i, IA[i])
        U[i] = ops.let("U", i, [matrix_apply(IA[i], s) for s in S[i]])
        D = joint_inertia(model, i, S[i], U[i])
        Dinv[i] = ops.let("Dinv", i, symmetric_inverse(D, lambda name, value: ops.let(name, i, value)))
        p = model.parent[i]
        if p >= 0:
            Ia[i] = _subtract_projection(IA[i], U[i], Dinv[i])
            if X is None:
                Ia[i] = _zero_along_axes(Ia[i], S[i], model.joint_armature(model.joints[i]))
            Ia[i] = ops.let("Ia", i, Ia[i])
            IA[p] = add66(IA[p], Ia[i] if X is not None else kin[i].X_up.matrix_to_parent(Ia[i]))
    return IA, U, Dinv, Ia


def joint_inertia(model, i, S, U):
    """D = S^T I^A S of joint i (U = I^A S), with the joint's armature on its diagonal (as M's)."""
    D = [[s.dot(Uc) for Uc in U] for s in S]
    for k, rotor in enumerate(model.joint_armature(model.joints[i])):
        D[k][k] = D[k][k] + rotor
    return D


def _zero_along_axes(Ia, S, armature):
    """I^a with the rows and columns of S's coordinate axes zero (articulated_inertias in body coordinates)."""
    axes = [k for k in (_unit_axis(s) for s in S) if k is not None]
    if len(axes) != len(S) or not all(isinstance(a, (int, float)) and a == 0 for a in armature):
        return Ia
    return tuple(tuple(0 if r in axes or c in axes else Ia[r][c] for c in range(6)) for r in range(6))


def _unit_axis(s):
    """k when the motion s is the k-th coordinate vector (entries of 6), else None."""
    e = s.entries()
    nonzero = [k for k, x in enumerate(e) if not (isinstance(x, (int, float)) and x == 0)]
    if len(nonzero) == 1 and isinstance(e[nonzero[0]], (int, float)) and e[nonzero[0]] == 1:
        return nonzero[0]
    return None


def check_invertible(model):
    """Forward dynamics needs a non-singular M: every joint must move some inertia."""
    massless = model.massless_joints()
    if massless:
        raise ModelError(f"joint {massless[0]!r} moves no mass or inertia, so M is singular and forward "
                         f"dynamics is undefined; give its links an <inertial> ({len(massless)} such joints)")


def _subtract_projection(IA, U, Dinv):
    """I^A - U D^-1 U^T, symmetric (upper triangle computed)."""
    W = [combine(U, column) for column in zip(*Dinv)]   # U D^-1, one Force per column
    Ue = [Uk.entries() for Uk in U]
    We = [Wk.entries() for Wk in W]
    upper = {(r, col): IA[r][col] - sum_terms(w[r] * ue[col] for w, ue in zip(We, Ue))
             for r in range(6) for col in range(r, 6)}
    return tuple(tuple(upper[min(r, col), max(r, col)] for col in range(6)) for r in range(6))
