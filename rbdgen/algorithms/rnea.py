"""Recursive Newton-Euler inverse dynamics (seed 000 Algorithm 1), with external forces.

tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T f_ext_i. `nle` is rnea with a = 0 and
`gravity` with v = a = 0: the zeros are literal, so the generator prunes their terms.

The forward pass carries each body's angular velocity w, angular acceleration w-dot and
the classical acceleration of its origin (gravity folded in as the base's, -g) rather
than spatial velocities and accelerations: that is the same recursion (`classical_step`
derives it), but the linear velocity of a body is never needed where the joints are
revolute, so it is never formed.
"""

from ..spatial import Force, add3, combine, cross3, matTvec3, matvec3, neg3, project, scale3, sub3
from .kinematics import joint_kinematics, joint_slices


def rnea(model, ops, q, v, a, f_ext=None):
    """Joint forces tau (length nv). f_ext[i] is a Force on body i in body coordinates."""
    kin = joint_kinematics(model, ops, q, v)
    vs, as_ = joint_slices(model, v, "v"), joint_slices(model, a, "v")
    motion = []   # (w, w-dot, classical acceleration of the origin, W) per body
    forces = []
    for i, inertia in enumerate(model.inertia):
        p = model.parent[i]
        zero = ((0, 0, 0),) * 3
        parent = ((0, 0, 0), (0, 0, 0), neg3(model.gravity), zero) if p < 0 else motion[p]
        w, wd, acc = ops.let("a", i, classical_step(kin[i], parent, vs[i], as_[i]))
        W = ops.let("W", i, tangential(w, wd))
        motion.append((w, wd, acc, W))
        f = Force(add3(add3(matvec3(inertia.I, wd), cross3(w, matvec3(inertia.I, w))), cross3(inertia.h, acc)),
                  add3(scale3(inertia.m, acc), matvec3(W, inertia.h)))
        if f_ext is not None:
            f = f - f_ext[i]
        forces.append(ops.let("f", i, f))
    tau = [0] * model.nv
    for i in reversed(range(model.nbodies)):
        joint = model.joints[i]
        tau[joint.idx_v:joint.idx_v + joint.nv] = ops.let("tau", i, project(kin[i].S, forces[i]))
        p = model.parent[i]
        if p >= 0:
            forces[p] = ops.let("f", p, forces[p] + force_to_parent(ops, i, kin[i].X_up, forces[i]))
    return tau


def tangential(w, wd):
    """W = wd~ + w~ w~, so that W r = wd x r + w x (w x r)."""
    def entry(i, j):
        if i == j:
            return -(w[(i + 1) % 3] ** 2 + w[(i + 2) % 3] ** 2)
        k = 3 - i - j
        sign = 1 if (j - i) % 3 == 2 else -1
        return w[i] * w[j] + sign * wd[k]
    return tuple(tuple(entry(i, j) for j in range(3)) for i in range(3))


def force_to_parent(ops, i, X, f):
    """X^T f = (E^T n + r x E^T f_lin, E^T f_lin), the rotated linear force bound first."""
    lin = ops.let("F", i, matTvec3(X.E, f.lin))
    return Force(add3(matTvec3(X.E, f.ang), cross3(X.r, lin)), lin)


def classical_step(k, parent, v_i, a_i):
    w_p, wd_p, acc_p, W_p = parent
    E, r = k.X_up.E, k.X_up.r
    vJ = combine(k.S, v_i)
    aJ = combine(k.S, a_i) + k.c_J
    Ew = matvec3(E, w_p)
    w = add3(Ew, vJ.ang)
    w_dot = add3(add3(matvec3(E, wd_p), aJ.ang), cross3(w, vJ.ang))
    origin = add3(acc_p, matvec3(W_p, r))
    acc = add3(add3(matvec3(E, origin), aJ.lin), cross3(add3(w, Ew), vJ.lin))
    return w, w_dot, acc


def nle(model, ops, q, v):
    """Nonlinear effects C(q, v) v + g(q): rnea with zero acceleration."""
    return rnea(model, ops, q, v, [0] * model.nv)


def gravity(model, ops, q):
    """Generalized gravity g(q): rnea at rest."""
    zero = [0] * model.nv
    return rnea(model, ops, q, zero, zero)
