"""Conversions to Pinocchio, the outside oracle (used by `rbdgen verify`, `rbdgen bench` and the tests)."""

import contextlib
import os
import sys
import tempfile

import numpy as np

from ..errors import RbdgenError


class PinocchioRefused(RbdgenError):
    """Pinocchio cannot load a URDF that rbdgen loads (say, a revolute joint without <limit>)."""


def to_pinocchio_q(model, q):
    """rbdgen q -> Pinocchio q: a continuous joint's angle becomes (cos, sin); planar likewise.
    A joint without coordinates of its own (a mimic joint) adds nothing, as in Pinocchio."""
    return np.array([x for joint in model.joints for x in joint_q_to_pinocchio(joint, q)])


def joint_q_to_pinocchio(joint, q):
    """One joint's slice of rbdgen's q as Pinocchio stores it."""
    x = q[joint.idx_q:joint.idx_q + joint.nq]
    if joint.type == "continuous":
        return [np.cos(x[0]), np.sin(x[0])]
    if joint.type == "planar":
        return [x[0], x[1], np.cos(x[2]), np.sin(x[2])]
    return list(x)


def pinocchio_model(urdf_path, floating_base, mimic=False):
    """Pinocchio's model of the same URDF (free-flyer root when `floating_base`; mimic joints
    as JointModelMimic when `mimic`). PinocchioRefused (one line, with urdfdom's reason) when
    Pinocchio cannot load the file."""
    import pinocchio as pin
    args = [str(urdf_path)] + ([pin.JointModelFreeFlyer()] if floating_base else [])
    with _fd2_captured() as captured:
        try:
            return pin.buildModelFromUrdf(*args, mimic=bool(mimic))
        # Boost.Python turns std::invalid_argument into ValueError, other std exceptions into RuntimeError
        except (ValueError, RuntimeError, IndexError) as exc:
            failure = exc
    raise PinocchioRefused(f"Pinocchio cannot load {urdf_path} ({_reason(captured, failure)})") from None


def comparable_model(urdf_path, floating_base, model, mimic=False):
    """(Pinocchio's model, None) when it can be compared with rbdgen's `model`, else (None, why):
    Pinocchio is not installed, refuses the URDF, or sees other nq/nv (`disagrees` True then)."""
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        return None, "Pinocchio is not installed"
    try:
        pm = pinocchio_model(urdf_path, floating_base, mimic=mimic)
    except PinocchioRefused as exc:
        return None, str(exc)
    nq = len(to_pinocchio_q(model, np.zeros(model.nq)))   # rbdgen's nq in Pinocchio's layout
    if (pm.nq, pm.nv) != (nq, model.nv):
        raise PinocchioDisagrees(f"Pinocchio's model has nq={pm.nq} nv={pm.nv}, rbdgen's nq={nq} nv={model.nv}")
    if model.armature:   # rbdgen's armature is Pinocchio's (on M's diagonal)
        pm.armature = np.array(model.armature, dtype=float)
    return pm, None


class PinocchioDisagrees(RbdgenError):
    """Pinocchio's model of a URDF has other sizes than rbdgen's."""


def pinocchio_constraints(pm, contacts):
    """Pinocchio's rigid constraints for rbdgen's declared contacts (rbdgen.algorithms.
    constrained.Contact, 3d or 6d): LOCAL, on the frame's joint at the frame's placement moved
    to the contact point. Returns (models, datas) for constraintDynamics / impulseDynamics."""
    import pinocchio as pin
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in contacts:
        f = pm.frames[pm.getFrameId(c.frame)]
        kind = pin.ContactType.CONTACT_6D if c.kind == "6d" else pin.ContactType.CONTACT_3D
        placement = f.placement * pin.SE3(np.eye(3), np.array(c.point))
        models.append(pin.RigidConstraintModel(kind, pm, f.parentJoint, placement, pin.LOCAL))
        datas.append(models[-1].createData())
    return models, datas


def pinocchio_of(model):
    """Pinocchio's model of an rbdgen model of revolute, prismatic, ball and free-flyer joints
    (any robot file, SDFormat included: Pinocchio's PyPI wheel reads no SDFormat), and the
    model's loops as rigid constraints between the two frames' joints, LOCAL_WORLD_ALIGNED.
    Returns (pinocchio model, StdVec_RigidConstraintModel)."""
    import pinocchio as pin
    se3 = lambda X: pin.SE3(np.array(X.E, dtype=float).T, np.array(X.r, dtype=float))
    kinds = {"revolute": lambda axis: pin.JointModelRevoluteUnaligned(np.array(axis, dtype=float)),
             "prismatic": lambda axis: pin.JointModelPrismaticUnaligned(np.array(axis, dtype=float)),
             "free_flyer": lambda axis: pin.JointModelFreeFlyer(), "spherical": lambda axis: pin.JointModelSpherical()}
    pm = pin.Model()
    for i, joint in enumerate(model.joints):
        if joint.type not in kinds:
            raise RbdgenError(f"joint {joint.name!r}: a {joint.type} joint has no Pinocchio counterpart here")
        index = pm.addJoint(model.parent[i] + 1, kinds[joint.type](getattr(joint.model, "axis", None)),
                            se3(model.X_T[i]), joint.name)
        I = model.inertia[i]
        mass = float(I.m)
        c = np.array(I.h, dtype=float) / mass if mass else np.zeros(3)
        I_com = np.array(I.I, dtype=float) - mass * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
        pm.appendBodyToJoint(index, pin.Inertia(mass, c, I_com), pin.SE3.Identity())
    constraints = pin.StdVec_RigidConstraintModel()
    for loop in model.loops:
        ends = [x for name in (loop.a, loop.b) for x in (model.frame(name).body + 1, se3(model.frame(name).placement))]
        kind = pin.ContactType.CONTACT_3D if loop.kind == "3d" else pin.ContactType.CONTACT_6D
        constraints.append(pin.RigidConstraintModel(kind, pm, *ends, pin.LOCAL_WORLD_ALIGNED))
    return pm, constraints


def _reason(captured, exc):
    """urdfdom's first "Error: ..." line (it says what is wrong), else Pinocchio's message."""
    for line in "".join(captured).splitlines():
        if line.strip().startswith("Error:"):
            return line.strip()[len("Error:"):].strip()
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


@contextlib.contextmanager
def _fd2_captured():
    """Collect what C++ code writes to file descriptor 2 (urdfdom prints its parse errors there,
    several lines each) instead of letting it reach the terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    captured = []
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield captured
            finally:
                os.dup2(saved, 2)
                sink.seek(0)
                captured.append(sink.read().decode(errors="replace"))
    finally:
        os.close(saved)
