"""MJCF (MuJoCo's format) through MuJoCo's own compiler: includes, defaults, childclass, angle
units, fromto and inertias from geoms are MuJoCo's business; this reads the compiled MjModel.

Each MuJoCo body becomes a frame of its name. A body without joints is fixed to its parent (its
inertia joins the moving body above it). A body with joints gets one rbdgen body per joint, in
MuJoCo's order: joint k turns about (or slides along) its axis through its anchor `pos` in the
body frame, so its rbdgen body frame sits at the anchor with the MuJoCo body's axes; the
intermediate ones are massless, named "<body>.<joint>", and the last one carries the body's
inertia (named after the body when its anchor is the body origin). A joint's `ref` (the angle
or offset at which the body has its XML pose) is folded into the placement, so q is MuJoCo's
qpos for hinges and slides. MuJoCo's bodies come depth-first in XML order, so v has MuJoCo's
dof order; q and v follow Pinocchio's conventions (module.to_mujoco / from_mujoco convert):
a free joint is q = [x y z qx qy qz qw], v = [linear; angular] in the body frame (MuJoCo:
[x y z qw qx qy qz], linear velocity in the world frame), a ball joint q = [qx qy qz qw].

Armature and damping come from dof_armature and dof_damping; gravity from opt.gravity (zero
where the model disables it).
An active <equality connect> between two bodies is a loop closure (Model.loops, 3d: rbdgen.
algorithms.loops), an active <equality weld> between two bodies a 6d one (3d when its
torquescale is 0). Left out, with one line saying so: actuators, tendons, the other equality
constraints (joint, tendon, flex; connect and weld of sites), contacts, joint
limits, friction loss, springs, fluid forces and gravity compensation (simulation, not rigid-body
dynamics).
"""

import math
import os
import warnings
import xml.etree.ElementTree as ET

from ..errors import ModelError
from ..spatial import Inertia, Transform, axis_rotation, matmul3, quaternion_to_rotation, transpose3
from .joints import FreeFlyer, Prismatic, Revolute, Spherical
from .model import ModelBuilder, with_joint_dynamics

IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


class MJCFWarning(UserWarning):
    """What an MJCF model has that rigid-body dynamics leaves out (one line per model)."""


def load_mjcf(path):
    """Load an MJCF file into a Model through mujoco.MjModel.from_xml_path."""
    try:
        import mujoco  # noqa: F401  (only whether it is there)
    except ImportError:
        raise ModelError("reading MJCF needs the mujoco package: pip install mujoco (or rbdgen[mujoco])") from None
    compiled = compile_mjcf(path)
    return model_from_mujoco(compiled, os.path.splitext(os.path.basename(path))[0])


def compile_mjcf(path):
    """mujoco.MjModel.from_xml_path, its refusal a one-line ModelError and its compiler warnings
    Python warnings (rather than lines of a MUJOCO_LOG.TXT in the current folder)."""
    import mujoco
    heard = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(heard.append)
    try:
        compiled = mujoco.MjModel.from_xml_path(os.fspath(path))
    except ValueError as exc:   # MuJoCo's compiler error
        first = " ".join(str(exc).split())
        raise ModelError(f"{path}: MuJoCo refuses this MJCF: {first}") from None
    finally:
        mujoco.set_mju_user_warning(previous)
    for message in heard:
        warnings.warn(f"MuJoCo: {' '.join(str(message).split())}", MJCFWarning, stacklevel=3)
    return compiled


def files_read(path, _seen=None):
    """The absolute paths of the files besides `path` that the MJCF's dynamics depend on: its
    <include>s at any depth, the MJCF files of its <asset><model>s (with theirs), and the mesh
    and height-field files of the geoms whose bodies take their inertias from geoms (MuJoCo's
    compiler inertiafromgeom, "auto" by default: the bodies without an <inertial>). Textures and
    skins only draw."""
    top = os.path.abspath(os.fspath(path))
    seen = {top} if _seen is None else _seen
    found, models = [], []
    _references(top, os.path.dirname(top), found, models, seen)
    for model in models:
        found.extend(files_read(model, seen))
    for asset in _inertia_assets(top):
        if asset not in seen:
            seen.add(asset)
            found.append(asset)
    return found


def _references(including, model_dir, found, models, seen):
    """Append to `found` the files that `including` pulls in by <include file> (MuJoCo looks
    for them in the main file's folder first, then in the including file's), and to `models`
    too those of <asset><model file> (models of their own, with their own folder)."""
    try:
        root = ET.parse(including).getroot()
    except (ET.ParseError, OSError):
        return   # MuJoCo compiled the model: what ElementTree refuses here is MuJoCo's to judge
    for element in root.iter():
        name = element.get("file")
        if name is None or element.tag not in ("include", "model"):
            continue
        candidates = [os.path.join(model_dir, name), os.path.join(os.path.dirname(including), name)]
        target = os.path.abspath(next((c for c in candidates if os.path.isfile(c)), candidates[0]))
        if target in seen:
            continue
        seen.add(target)
        found.append(target)
        if element.tag == "include":
            _references(target, model_dir, found, models, seen)
        else:
            models.append(target)


def _inertia_assets(path):
    """The mesh and height-field files used by geoms that give a moving body its inertia."""
    import mujoco
    try:
        spec = mujoco.MjSpec.from_file(path)
    except ValueError:
        return []
    mode = spec.compiler.inertiafromgeom
    if mode == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE:
        return []
    every = mode == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_TRUE   # else "auto"
    low, high = (int(x) for x in spec.compiler.inertiagrouprange)
    used = set()
    for geom in spec.geoms:
        body = geom.parent
        if body.name != spec.worldbody.name and low <= geom.group <= high and (every or not body.explicitinertial):
            used.update(filter(None, (geom.meshname, geom.hfieldname)))
    files = []
    for asset in list(spec.meshes) + list(spec.hfields):
        name = asset.name or os.path.splitext(os.path.basename(asset.file))[0]
        if asset.file and name in used:
            folder = getattr(getattr(asset, "compiler", None), "meshdir", None) or spec.meshdir or ""
            files.append(os.path.abspath(os.path.join(spec.modelfiledir or os.path.dirname(path), folder,
                                                      asset.file)))
    return files


def model_from_mujoco(m, default_name="robot"):
    """A Model from a compiled mujoco.MjModel (see the module docstring)."""
    import mujoco

    def name_of(kind, index, fallback):
        return mujoco.mj_id2name(m, kind, index) or fallback

    name = m.names[:m.names.index(b"\0")].decode() if m.names else ""
    gravity_off = m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)   # <flag gravity="disable"/>
    builder = ModelBuilder(name or default_name, (0.0, 0.0, 0.0) if gravity_off else tuple(float(g) for g in m.opt.gravity))
    frame_of = {0: -1}          # MuJoCo body -> the name of its frame in the builder (-1: the world)
    joint_names = []
    for b in range(1, m.nbody):
        body = name_of(mujoco.mjtObj.mjOBJ_BODY, b, f"body{b}")
        parent = frame_of[int(m.body_parentid[b])]
        placement = Transform(transpose3(_rotation(m.body_quat[b])), tuple(float(x) for x in m.body_pos[b]))
        inertia = _inertia(m, b)
        first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
        if count == 0:
            builder.add_fixed_body(parent, body, placement, inertia)
            frame_of[b] = body
            continue
        previous = None
        for j in range(first, first + count):
            joint = name_of(mujoco.mjtObj.mjOBJ_JOINT, j, f"joint{j}")
            kind = int(m.jnt_type[j])
            axis = tuple(float(x) for x in m.jnt_axis[j])
            anchor = (0.0, 0.0, 0.0) if kind == mujoco.mjtJoint.mjJNT_FREE else tuple(float(x) for x in m.jnt_pos[j])
            if kind == mujoco.mjtJoint.mjJNT_FREE:
                if m.body_parentid[b] != 0:
                    raise ModelError(f"body {body!r}: a free joint below another body; MuJoCo allows it only "
                                     "on bodies of the world")
                X_T = Transform()   # its q is the body's placement in the world itself
            elif previous is None:
                X_T = Transform(IDENTITY, anchor).compose(placement)
            else:
                X_T = Transform(IDENTITY, tuple(a - p for a, p in zip(anchor, previous)))
            X_T = _reference(m, j, kind, axis).compose(X_T)
            last = j == first + count - 1
            at_origin = all(x == 0 for x in anchor)
            label = body if last and at_origin else f"{body}.{joint}"
            parent = builder.add_body(parent, _joint_model(kind, axis, joint, mujoco), joint, label, X_T,
                                      inertia if last and at_origin else None)
            joint_names.append((joint, kind))
            previous = anchor
        if not at_origin:   # the MuJoCo body frame, and its inertia, off the last joint's anchor
            builder.add_fixed_body(parent, body, Transform(IDENTITY, tuple(-x for x in anchor)), inertia)
        frame_of[b] = body
    loops = _connections(m, builder, frame_of, name_of)
    model = builder.finish()
    model = with_joint_dynamics(model, armature=_per_joint(m, model, "dof_armature", joint_names),
                                damping=_per_joint(m, model, "dof_damping", joint_names))
    _note_left_out(m, model.name, m.neq - loops)
    return model


def _connections(m, builder, frame_of, name_of):
    """The loops of the model's active <equality connect> and <equality weld> between two
    bodies (Model.loops), added to `builder`; returns how many. MuJoCo's compiler stores a
    connect as its anchor on body1 and the point of body2 under it at qpos0 (eq_data[0:3],
    eq_data[3:6]): frames <name>_a and <name>_b there, held together at their origins (3d). A
    weld holds body2's frame at its anchor (eq_data[0:3]) to the frame of body1 at relpose
    (eq_data[3:6], quaternion eq_data[6:10], w first): frames <name>_a on body1 and <name>_b
    on body2, held together whole (6d). Its torquescale only scales MuJoCo's rotation rows,
    the same constraint, unless it is 0: then only the points are held (3d)."""
    import mujoco
    count = 0
    for k in range(m.neq):
        kind = int(m.eq_type[k])
        if kind not in (mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtEq.mjEQ_WELD) \
                or int(m.eq_objtype[k]) != mujoco.mjtObj.mjOBJ_BODY or not m.eq_active0[k]:
            continue
        data = [float(x) for x in m.eq_data[k]]
        body1, body2 = frame_of[int(m.eq_obj1id[k])], frame_of[int(m.eq_obj2id[k])]
        if kind == mujoco.mjtEq.mjEQ_CONNECT:
            label = name_of(mujoco.mjtObj.mjOBJ_EQUALITY, k, f"connect{k}")
            ends = [(f"{label}_a", body1, Transform(IDENTITY, tuple(data[0:3]))),
                    (f"{label}_b", body2, Transform(IDENTITY, tuple(data[3:6])))]
            builder.add_loop(label, ends, "3d", f"<connect name={label!r}>")
        else:
            label = name_of(mujoco.mjtObj.mjOBJ_EQUALITY, k, f"weld{k}")
            ends = [(f"{label}_a", body1, Transform(transpose3(_rotation(data[6:10])), tuple(data[3:6]))),
                    (f"{label}_b", body2, Transform(IDENTITY, tuple(data[0:3])))]
            builder.add_loop(label, ends, "6d" if data[10] != 0 else "3d", f"<weld name={label!r}>")
        count += 1
    return count


def _rotation(wxyz):
    w, x, y, z = (float(c) for c in wxyz)
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    return quaternion_to_rotation(x / norm, y / norm, z / norm, w / norm)


def _inertia(m, b):
    """Body b's spatial inertia in its frame: mass, center of mass body_ipos, principal moments
    body_inertia along the axes of body_iquat."""
    R = _rotation(m.body_iquat[b])
    moments = [float(x) for x in m.body_inertia[b]]
    principal = tuple(tuple(moments[i] if i == k else 0.0 for k in range(3)) for i in range(3))
    I_com = matmul3(matmul3(R, principal), transpose3(R))
    return Inertia.from_com(float(m.body_mass[b]), tuple(float(x) for x in m.body_ipos[b]), I_com)


def _joint_model(kind, axis, name, mujoco):
    if kind == mujoco.mjtJoint.mjJNT_HINGE:
        return Revolute(axis)
    if kind == mujoco.mjtJoint.mjJNT_SLIDE:
        return Prismatic(axis)
    if kind == mujoco.mjtJoint.mjJNT_BALL:
        return Spherical()
    if kind == mujoco.mjtJoint.mjJNT_FREE:
        return FreeFlyer()
    raise ModelError(f"joint {name!r}: MuJoCo joint type {kind} is unknown to rbdgen")


def _reference(m, j, kind, axis):
    """The joint's `ref` folded into its placement: MuJoCo's body has its XML pose at q = ref."""
    ref = float(m.qpos0[m.jnt_qposadr[j]]) if kind in (2, 3) else 0.0   # mjJNT_SLIDE, mjJNT_HINGE
    if ref == 0.0:
        return Transform()
    if kind == 3:
        return Transform(transpose3(axis_rotation(axis, math.sin(-ref), math.cos(-ref))))
    return Transform(IDENTITY, tuple(-ref * a for a in axis))


def _per_joint(m, model, field, joint_names):
    """{joint: per-dof values} of dof_armature or dof_damping, where not zero. A free joint's
    linear dofs are world-axes in MuJoCo and body-axes here: equal values on them are the
    same matrix in either basis; unequal ones are refused."""
    values = getattr(m, field)
    found = {}
    for joint, (name, kind) in zip(model.joints, joint_names):
        per_dof = [float(values[joint.idx_v + k]) for k in range(joint.nv)]
        if kind == 0 and len(set(per_dof[:3])) > 1:
            raise ModelError(f"joint {name!r}: {field[4:]} {per_dof[:3]} differs between the free joint's linear "
                             "dofs, which are world axes in MuJoCo and body axes in rbdgen; give them one value")
        if any(per_dof):
            found[name] = per_dof
    return found


def _note_left_out(m, name, equalities):
    parts = []
    for count, what in ((m.nu, "actuators"), (m.ntendon, "tendons"),
                        (equalities, "equality constraints (but the connects and welds between bodies, loops)")):
        if count:
            parts.append(f"{count} {what}")
    if any(m.jnt_limited):
        parts.append("joint limits")
    if any(m.geom_contype) or any(m.geom_conaffinity):
        parts.append("contacts")
    if any(m.dof_frictionloss):
        parts.append("friction loss")
    if any(m.jnt_stiffness):
        parts.append("joint springs (stiffness)")
    if m.opt.density or m.opt.viscosity:
        parts.append("fluid forces")
    if hasattr(m, "body_gravcomp") and any(m.body_gravcomp):
        parts.append("gravity compensation")
    if parts:
        warnings.warn(f"MJCF {name!r}: left out (simulation, not rigid-body dynamics): {', '.join(parts)}",
                      MJCFWarning, stacklevel=3)
