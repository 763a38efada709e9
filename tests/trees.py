"""Seeded random kinematic trees for the tests, and a configuration integrator.

`random_tree(seed, nbodies, joint_types, floating_base, branched)` builds a Model with
rbdgen.ModelBuilder: random parents (or a chain), joints drawn from `joint_types`, random
placements X_T, physically valid random inertias, fixed bodies carrying inertia (some
bodies hang from them by name) and a few extra frames.

`integrate(model, q, dv)` moves q along the joint velocity dv with each joint's own rule,
so that d/dt q(t) at t = 0 for q(t) = integrate(model, q, t v) is the motion the
algorithms attribute to the velocity v (v is not q-dot for quaternion and planar joints).
"""

import numpy as np

from helpers import random_configuration
from rbdgen import ModelBuilder
from rbdgen.model.joints import (EulerXYZ, EulerZYX, FreeFlyer, Helical, Planar, Prismatic,
                                 Revolute, Spherical, TranslationXYZ)
from rbdgen.spatial import Inertia, Transform

# Joint kinds random_tree can draw ("revolute" has a random unit axis, "revolute_aligned" an
# axis-aligned one). The free-flyer is added as the root by floating_base=True.
ALL_JOINT_TYPES = ("revolute", "revolute_aligned", "continuous", "prismatic", "helical",
                   "spherical", "euler_zyx", "euler_xyz", "translation", "planar")

# Joints whose q-dot equals v (so d/dq and the v-directions coincide).
QDOT_IS_V = ("revolute", "continuous", "prismatic", "helical", "euler_zyx", "euler_xyz",
             "translation")

_AXES = ((1, 0, 0), (0, 1, 0), (0, 0, 1), (-1, 0, 0), (0, -1, 0), (0, 0, -1))


# ---------------------------------------------------------------- random ingredients ----

def random_unit_vector(rng):
    x = rng.normal(size=3)
    return x / np.linalg.norm(x)


def random_quaternion(rng):
    """A uniformly random unit quaternion (x, y, z, w)."""
    x = rng.normal(size=4)
    return x / np.linalg.norm(x)


def quaternion_matrix(quat):
    """Rotation matrix of the unit quaternion (x, y, z, w) (Hamilton convention)."""
    x, y, z, w = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def random_rotation(rng):
    return quaternion_matrix(random_quaternion(rng))


def random_transform(rng, scale=0.5):
    """Random Plücker transform: rotation from a random unit quaternion, translation in a box."""
    E = random_rotation(rng)
    r = rng.uniform(-scale, scale, 3)
    return Transform(tuple(map(tuple, E)), tuple(r))


def random_inertia(rng):
    """A physically valid rigid-body inertia: mass in [0.5, 3], random COM, and a positive
    definite rotational inertia at the COM that satisfies the triangle inequality."""
    mass = rng.uniform(0.5, 3.0)
    # I_c = tr(S) 1 - S for a positive second-moment matrix S: principal moments
    # s2 + s3, s1 + s3, s1 + s2 always satisfy the (strict) triangle inequality.
    s = mass * rng.uniform(0.005, 0.05, 3)
    R = random_rotation(rng)
    Ic = R @ (np.sum(s) * np.eye(3) - np.diag(s)) @ R.T
    Ic = (Ic + Ic.T) / 2
    com = rng.uniform(-0.2, 0.2, 3)
    return Inertia.from_com(mass, tuple(com), tuple(map(tuple, Ic)))


def make_joint(kind, rng):
    """A joint model of the given kind with random parameters."""
    if kind == "revolute":
        return Revolute(tuple(random_unit_vector(rng)))
    if kind == "revolute_aligned":
        return Revolute(_AXES[rng.integers(len(_AXES))])
    if kind == "continuous":
        return Revolute(tuple(random_unit_vector(rng)), continuous=True)
    if kind == "prismatic":
        return Prismatic(tuple(random_unit_vector(rng)))
    if kind == "helical":
        return Helical(tuple(random_unit_vector(rng)), rng.uniform(-0.3, 0.3))
    if kind == "spherical":
        return Spherical()
    if kind == "euler_zyx":
        return EulerZYX()
    if kind == "euler_xyz":
        return EulerXYZ()
    if kind == "translation":
        return TranslationXYZ()
    if kind == "planar":
        # half the time the default normal z, else a random one
        return Planar() if rng.random() < 0.5 else Planar(tuple(random_unit_vector(rng)))
    if kind == "free_flyer":
        return FreeFlyer()
    raise ValueError(f"unknown joint kind {kind!r}")


# ---------------------------------------------------------------- random trees ----------

def random_tree(seed, nbodies, joint_types=ALL_JOINT_TYPES, floating_base=False, branched=True, roots=1):
    """A random Model with `nbodies` moving bodies (the free-flyer root counts as one).

    The first `roots` bodies hang from the world (a forest: several roots, fixed base only).

    Every kind in `joint_types` occurs at least once when there are enough bodies.
    Body k (k >= 1) hangs from a random earlier body (branched) or from body k-1 (chain);
    sometimes the parent is given by the name of a fixed body attached to that body, so
    placements compose through it. Fixed bodies carry inertia; extra frames carry none.
    """
    rng = np.random.default_rng(seed)
    joint_types = tuple(joint_types)
    builder = ModelBuilder(f"tree{seed}")
    fixed_on = {}        # moving body -> names of fixed bodies attached to it
    nfixed = nframes = 0
    # joint kinds of the non-free-flyer bodies: every kind once if there is room, the rest
    # drawn at random, in random order
    nmoving = nbodies - (1 if floating_base else 0)
    kinds = list(joint_types) if nmoving >= len(joint_types) else []
    kinds += [joint_types[rng.integers(len(joint_types))] for _ in range(nmoving - len(kinds))]
    kinds = [kinds[i] for i in rng.permutation(len(kinds))]
    for k in range(nbodies):
        if k < roots:
            parent_body = -1
        elif branched:
            parent_body = int(rng.integers(k))
        else:
            parent_body = k - 1
        parent = parent_body
        if fixed_on.get(parent_body) and rng.random() < 0.5:
            names = fixed_on[parent_body]
            parent = names[rng.integers(len(names))]
        kind = "free_flyer" if (k == 0 and floating_base) else kinds.pop()
        builder.add_body(parent, make_joint(kind, rng), f"j{k}_{kind}", f"body{k}",
                         X_T=random_transform(rng), inertia=random_inertia(rng))
        # a fixed body carrying inertia on about a third of the bodies
        if rng.random() < 0.35:
            name = f"fixed{nfixed}"
            nfixed += 1
            builder.add_fixed_body(f"body{k}", name, X_T=random_transform(rng), inertia=random_inertia(rng))
            fixed_on.setdefault(k, []).append(name)
    # a few frames on random bodies or fixed bodies
    names = sorted(builder.frame_names())
    for _ in range(3):
        base = names[rng.integers(len(names))]
        builder.add_frame(f"frame{nframes}", base, random_transform(rng))
        nframes += 1
    # a frame fixed to the world (no moving body: zero Jacobian, constant placement)
    builder.add_frame("world_frame", -1, random_transform(rng))
    # one fixed body on a fixed body (composed placements, merged inertia), if any exist
    if nfixed:
        builder.add_fixed_body("fixed0", f"fixed{nfixed}", X_T=random_transform(rng),
                               inertia=random_inertia(rng))
    return builder.finish()


def random_state(model, rng):
    """(q, v, a): random configuration (unit quaternions), velocity and acceleration."""
    q = random_configuration(model, rng)
    v = rng.uniform(-2, 2, model.nv)
    a = rng.uniform(-2, 2, model.nv)
    return q, v, a


# ---------------------------------------------------------------- integration -----------

def quaternion_multiply(a, b):
    """Hamilton product a * b of quaternions (x, y, z, w): R(a b) = R(a) R(b)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def quaternion_exp(w):
    """Unit quaternion of the rotation vector w (exp(w~) as a quaternion)."""
    w = np.asarray(w, dtype=float)
    angle = np.linalg.norm(w)
    if angle < 1e-300:
        return np.array([0.0, 0.0, 0.0, 1.0])
    axis = w / angle
    return np.concatenate([np.sin(angle / 2) * axis, [np.cos(angle / 2)]])


def integrate(model, q, dv):
    """q moved along the joint velocity dv (each joint's own rule; first order is what
    matters for the finite differences, the rules below are exact for constant dv where
    cheap):

    - q-dot = v joints: q + dv;
    - spherical: R exp(dw~), dw in the child frame;
    - free-flyer: position + R dv_linear, orientation R exp(dw~) (body-frame velocity);
    - planar: (x, y) + rot(theta) (dvx, dvy), theta + domega (body-frame velocity).
    """
    q = np.array(q, dtype=float)
    dv = np.asarray(dv, dtype=float)
    out = q.copy()
    for joint in model.joints:
        iq, iv = joint.idx_q, joint.idx_v
        qj, dj = q[iq:iq + joint.nq], dv[iv:iv + joint.nv]
        if joint.type == "spherical":
            out[iq:iq + 4] = quaternion_multiply(qj, quaternion_exp(dj))
        elif joint.type == "free_flyer":
            R = quaternion_matrix(qj[3:7])
            out[iq:iq + 3] = qj[0:3] + R @ dj[0:3]
            out[iq + 3:iq + 7] = quaternion_multiply(qj[3:7], quaternion_exp(dj[3:6]))
        elif joint.type == "planar":
            c, s = np.cos(qj[2]), np.sin(qj[2])
            out[iq] = qj[0] + c * dj[0] - s * dj[1]
            out[iq + 1] = qj[1] + s * dj[0] + c * dj[1]
            out[iq + 2] = qj[2] + dj[2]
        else:
            assert joint.nq == joint.nv, joint.type
            out[iq:iq + joint.nq] = qj + dj
    return out
