"""Recursive Newton-Euler inverse dynamics (RBDL paper Alg. 1, seed 000), with external forces.

tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T f_ext_i, M with the joints' armature on its
diagonal. `nle` is rnea with a = 0 and
`gravity` with v = a = 0: the zeros are literal, so the generator prunes their terms.

The forward pass carries, for each body, its angular velocity w, angular acceleration
w-dot and the classical acceleration of its origin (gravity folded in as the base's, -g)
instead of the spatial velocity and acceleration. It is the same recursion rewritten
(`classical_step`), but a body's linear velocity is never needed where the joints are
revolute, so it is never formed; and the matrix W = w-dot~ + w~ w~, bound once per body,
serves both its own force (W h) and the origins of its children (W r).
"""

from ..spatial import Force, add3, combine, cross3, matTvec3, matvec3, neg3, project, tangential_matrix
from .kinematics import joint_kinematics, joint_slices

_ZERO33 = ((0, 0, 0), (0, 0, 0), (0, 0, 0))


def rnea(model, ops, q, v, a, f_ext=None):
    """Joint forces tau (length nv). f_ext[i] is a Force on body i in body coordinates."""
    kin = joint_kinematics(model, ops, q, v)
    vs, as_ = joint_slices(model, v, "v"), joint_slices(model, a, "v")
    base = ((0, 0, 0), (0, 0, 0), neg3(model.gravity), _ZERO33)
    motion = []   # per body: (w, w-dot, classical acceleration of the origin, W)
    forces = []
    for i, inertia in enumerate(model.inertia):
        p = model.parent[i]
        w, w_dot, acc = ops.let("a", i, classical_step(kin[i], base if p < 0 else motion[p], vs[i], as_[i]))
        W = ops.let("W", i, tangential_matrix(w, w_dot))
        motion.append((w, w_dot, acc, W))
        f = inertia.newton_euler_force(w, w_dot, acc, W)
        if f_ext is not None:
            f = f - f_ext[i]
        forces.append(ops.let("f", i, f))
    tau = [0] * model.nv
    for i in reversed(range(model.nbodies)):
        joint = model.joints[i]
        rotor = [d * x for d, x in zip(model.joint_armature(joint), as_[i])]   # armature: M's diagonal
        tau[joint.idx_v:joint.idx_v + joint.nv] = ops.let("tau", i, [t + r for t, r in
                                                                    zip(project(kin[i].S, forces[i]), rotor)])
        p = model.parent[i]
        if p >= 0:
            forces[p] = ops.let("f", p, forces[p] + force_to_parent(ops, i, kin[i].X_up, forces[i]))
    return tau


def classical_step(k, parent, v_i, a_i):
    """A body's (w, w-dot, classical acceleration of its origin) from its parent's
    (w_p, w-dot_p, acc_p, W_p).

    With X_up = (E, r), the joint's velocity S v_i = (w_J, u_J) and a_J = S a_i + c_J, the
    spatial step a = X_up a_p + a_J + v x (S v_i) and acc = a_lin + w x v_lin give (the
    w_J terms cancel, and so does the parent's linear velocity)
        w     = E w_p + w_J
        w-dot = E w-dot_p + a_J,ang + w x w_J
        acc   = E (acc_p + W_p r) + a_J,lin + (w + E w_p) x u_J.
    """
    w_p, wd_p, acc_p, W_p = parent
    E, r = k.X_up.E, k.X_up.r
    vJ = combine(k.S, v_i)
    aJ = combine(k.S, a_i) + k.c_J
    Ew = matvec3(E, w_p)
    w = add3(Ew, vJ.ang)
    w_dot = add3(add3(matvec3(E, wd_p), aJ.ang), cross3(w, vJ.ang))
    acc = add3(add3(matvec3(E, add3(acc_p, matvec3(W_p, r))), aJ.lin), cross3(add3(w, Ew), vJ.lin))
    return w, w_dot, acc


def force_to_parent(ops, i, X, f):
    """X^T f = (E^T n + r x F, F) with F = E^T f_lin bound first: the sum of F's terms is
    then formed once, not spread over the products r x F."""
    lin = ops.let("F", i, matTvec3(X.E, f.lin))
    return Force(add3(matTvec3(X.E, f.ang), cross3(X.r, lin)), lin)


def nle(model, ops, q, v):
    """Nonlinear effects C(q, v) v + g(q): rnea with zero acceleration."""
    return rnea(model, ops, q, v, [0] * model.nv)


def gravity(model, ops, q):
    """Generalized gravity g(q): rnea at rest."""
    zero = [0] * model.nv
    return rnea(model, ops, q, zero, zero)
