"""Frames and points (RBDL paper §6.1-6.4, seed 000): placement, Jacobian, velocity and
acceleration of a frame fixed on one body, walking only the joints that move that body.

A frame is given by its body b and its placement X_bf on the body (body -> frame, as twelve
numbers: E row-major, then r), which is an argument like q: the generator records each body's functions once, with X_bf as twelve
input symbols, so that every frame and every point on that body (a point is a frame with
an offset) shares the body's code. The reference runs the same functions on numbers.

Pinocchio's three reference frames, for a motion m of the frame:
- "local": the frame's own axes, at its origin;
- "world": world axes, at the world origin (the spatial quantity);
- "local_world_aligned": world axes, at the frame's origin.
The classical acceleration of the frame's origin is the spatial one plus w x v (in the same
reference), as Pinocchio's getFrameClassicalAcceleration.

Rows of every result are [linear; angular], as Pinocchio's.
"""

from ..spatial import Motion, Transform, add3, cross3, matTvec3, matvec3, sub3
from .kinematics import (acceleration_step, joint_kinematics_of, joint_slices, placement_as_rotation_translation,
                         velocity_step)

REFERENCE_FRAMES = ("local", "world", "local_world_aligned")


def check_reference(reference):
    """ValueError (a bad argument) for a reference frame other than Pinocchio's three."""
    if reference not in REFERENCE_FRAMES:
        raise ValueError(f"reference {reference!r} is unknown; use one of {', '.join(REFERENCE_FRAMES)}")


def placement_from_entries(x):
    """Twelve numbers (E row-major, then r) -> the Transform body -> frame."""
    return Transform((x[0:3], x[3:6], x[6:9]), x[9:12])


def placement_entries(X):
    return [e for row in X.E for e in row] + list(X.r)


class PathKinematics:
    """The joints on the path from the root to one body, and what the forward pass along that
    path gives: the body's placement X_0b, its velocity and acceleration (body coordinates,
    no gravity), and each joint's axes in world coordinates (Jacobian columns)."""

    def __init__(self, model, ops, body, q, v=None, a=None, *, axes=False):
        self.body = body
        self.path = model.support(body) if body >= 0 else []
        qs = joint_slices(model, q, "q")
        vs = joint_slices(model, v, "v") if v is not None else None
        as_ = joint_slices(model, a, "v") if a is not None else None
        X_0, vel, acc, self.columns = None, None, Motion(), []   # no velocity above the root
        for i in self.path:
            k = joint_kinematics_of(model, ops, i, qs[i], vs[i] if vs else None)
            X_0 = k.X_up if X_0 is None else ops.let("X0_", i, k.X_up.compose(X_0))
            if axes:   # (column, the joint's placement X_0j, its motion subspace column)
                self.columns += [(col, X_0, s) for col, s in enumerate(k.S, start=model.joints[i].idx_v)]
            if vs is not None:
                vel = ops.let("v", i, velocity_step(k, vel, vs[i]))
                if as_ is not None:
                    acc = ops.let("a", i, acceleration_step(k, acc, vel, vs[i], as_[i]))
        self.X_0b = X_0 if X_0 is not None else Transform()
        self.velocity, self.acceleration = vel if vel is not None else Motion(), acc


def frame_transform(ops, path, X_bf):
    """X_0f = X_bf X_0b: world -> frame."""
    return ops.let("X0f", path.body, X_bf.compose(path.X_0b))


def express(m_body, X_bf, path, X_0f, reference):
    """A motion of the body (body coordinates) as the frame's, in `reference`."""
    if reference == "world":
        return path.X_0b.inv_apply_motion(m_body)            # rigid: the same spatial motion
    m_frame = X_bf.apply_motion(m_body)                      # frame axes, at the frame origin
    if reference == "local":
        return m_frame
    return Motion(matTvec3(X_0f.E, m_frame.ang), matTvec3(X_0f.E, m_frame.lin))   # world axes


def _rows(m):
    return list(m.lin) + list(m.ang)


# ----------------------------------------------------------------- the functions ----------

def frame_placement(model, ops, frame, q):
    """(R, p) of the frame (body, placement on it) as 12 numbers: R row-major (frame -> world
    axes), then the origin.

    Only the product X_bf X_up[b] ... X_up[root] is needed, not the placements of the bodies on
    the way, so it is multiplied pairwise: the chain of dependent products is log2(depth) long
    instead of depth (the same operations; a short function like this one is bound by latency)."""
    body, placement = frame
    qs = joint_slices(model, q, "q")
    path = model.support(body) if body >= 0 else []
    factors = [joint_kinematics_of(model, ops, i, qs[i]).X_up for i in path] + [placement_from_entries(placement)]
    while len(factors) > 1:   # factors[0] acts first
        factors = [ops.let("Xp", k, factors[k + 1].compose(factors[k])) if k + 1 < len(factors) else factors[k]
                   for k in range(0, len(factors), 2)]
    R, p = placement_as_rotation_translation(factors[0])
    return [x for row in R for x in row] + p


def frame_jacobian(model, ops, frame, q, *, reference):
    """6 x nv, J v = the frame's velocity in `reference`; zero outside the body's path."""
    body, placement = frame
    check_reference(reference)
    X_bf = placement_from_entries(placement)
    path = PathKinematics(model, ops, body, q, axes=True)
    X_0f = frame_transform(ops, path, X_bf)
    J = [[0] * model.nv for _ in range(6)]
    offsets = {}
    for col, X_0j, s in path.columns:
        if reference == "world":             # the joint's motion at the world origin
            axis = ops.let("Jw", col, X_0j.inv_apply_motion(s))
        else:                                # at the frame origin p: (w, E^T s_lin + w x (p - r_j))
            w = ops.let("Jw", col, matTvec3(X_0j.E, s.ang))
            if id(X_0j) not in offsets:      # p - r_j, once per joint
                offsets[id(X_0j)] = ops.let("dp", col, sub3(X_0f.r, X_0j.r))
            axis = Motion(w, add3(matTvec3(X_0j.E, s.lin), cross3(w, offsets[id(X_0j)])))
            if reference == "local":         # in the frame's axes
                axis = Motion(matvec3(X_0f.E, axis.ang), matvec3(X_0f.E, axis.lin))
        for row, value in enumerate(_rows(axis)):
            J[row][col] = value
    return J


def frame_velocity(model, ops, frame, q, v, *, reference):
    """The frame's spatial velocity in `reference`, rows [linear; angular]."""
    body, placement = frame
    check_reference(reference)
    X_bf = placement_from_entries(placement)
    path = PathKinematics(model, ops, body, q, v)
    X_0f = frame_transform(ops, path, X_bf)
    return _rows(express(path.velocity, X_bf, path, X_0f, reference))


def frame_acceleration(model, ops, frame, q, v, a, *, reference, classical=False):
    """The frame's spatial acceleration (no gravity) in `reference`; with classical=True the
    classical acceleration of its origin (spatial + w x v in the same reference)."""
    body, placement = frame
    check_reference(reference)
    X_bf = placement_from_entries(placement)
    path = PathKinematics(model, ops, body, q, v, a)
    X_0f = frame_transform(ops, path, X_bf)
    acc = express(path.acceleration, X_bf, path, X_0f, reference)
    if classical:
        vel = express(path.velocity, X_bf, path, X_0f, reference)
        acc = Motion(acc.ang, add3(acc.lin, cross3(vel.ang, vel.lin)))
    return _rows(acc)
