"""URDF -> Model (seed 004): joint origins become X_T, <inertial> becomes spatial inertia.

The joint order and the q/v layout are those of Pinocchio's URDF parser: a depth-first walk
from the root, the children of a link taken in the order of their joints' names. Fixed
joints are merged into their moving parent. Every error is one line naming the element.
"""

import math
import os
import warnings
import xml.etree.ElementTree as ET

from ..errors import ModelError, URDFError
from ..spatial import Inertia, Transform, matmul3, transpose3
from .joints import FreeFlyer, Planar, Prismatic, Revolute
from .model import ModelBuilder

MOVING_TYPES = ("revolute", "continuous", "prismatic", "floating", "planar")


def rpy_to_rotation(roll, pitch, yaw):
    """URDF's fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    sr, cr = math.sin(roll), math.cos(roll)
    sp, cp = math.sin(pitch), math.cos(pitch)
    sy, cy = math.sin(yaw), math.cos(yaw)
    Rz = ((cy, -sy, 0.0), (sy, cy, 0.0), (0.0, 0.0, 1.0))
    Ry = ((cp, 0.0, sp), (0.0, 1.0, 0.0), (-sp, 0.0, cp))
    Rx = ((1.0, 0.0, 0.0), (0.0, cr, -sr), (0.0, sr, cr))
    return matmul3(matmul3(Rz, Ry), Rx)


def _numbers(element, attribute, default, count, where):
    text = element.get(attribute) if element is not None else None
    if text is None:
        return default
    try:
        values = tuple(float(x) for x in text.split())
    except ValueError:
        values = ()
    if len(values) != count or not all(math.isfinite(x) for x in values):
        raise URDFError(f"{where}: {attribute}=\"{text}\" must be {count} finite numbers")
    return values


def _origin(element, where):
    """Transform from the parent frame to the frame an <origin> places (E = R^T, r = xyz)."""
    origin = element.find("origin")
    xyz = _numbers(origin, "xyz", (0.0, 0.0, 0.0), 3, f"{where} <origin>")
    rpy = _numbers(origin, "rpy", (0.0, 0.0, 0.0), 3, f"{where} <origin>")
    return Transform(transpose3(rpy_to_rotation(*rpy)), xyz)


def _inertia(link):
    """The link's spatial inertia in the link frame, or None without <inertial>."""
    name = link.get("name")
    inertial = link.find("inertial")
    if inertial is None:
        return None
    where = f"link '{name}' <inertial>"
    mass_el = inertial.find("mass")
    mass = _numbers(mass_el, "value", (0.0,), 1, where + " <mass>")[0]
    if not (mass >= 0):  # also catches NaN
        raise URDFError(f"{where}: mass {mass} is negative or NaN; give a mass >= 0")
    origin = _origin(inertial, where)
    el = inertial.find("inertia")
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    values = {}
    for key in keys:
        values[key] = _numbers(el, key, (0.0,), 1, where + " <inertia>")[0]
    xx, xy, xz, yy, yz, zz = (values[k] for k in keys)
    I_com = ((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))
    if not _positive_semidefinite(I_com):
        raise URDFError(f"{where}: inertia (ixx {xx} iyy {yy} izz {zz} ixy {xy} ixz {xz} iyz {yz}) "
                        "is not positive definite; fix the tensor (each principal moment <= sum of the other two)")
    R = transpose3(origin.E)          # <inertial><origin> rotates the tensor's axes into the link frame
    I_link_axes = matmul3(matmul3(R, I_com), transpose3(R))
    return Inertia.from_com(mass, origin.r, I_link_axes)


def _positive_semidefinite(A):
    """Sylvester-style check with a tolerance: principal minors of A + eps 1 are positive."""
    scale = max(1.0, abs(A[0][0]) + abs(A[1][1]) + abs(A[2][2]))
    eps = 1e-9 * scale
    B = [[A[i][j] + (eps if i == j else 0.0) for j in range(3)] for i in range(3)]
    m1 = B[0][0]
    m2 = B[0][0] * B[1][1] - B[0][1] * B[1][0]
    m3 = (B[0][0] * (B[1][1] * B[2][2] - B[1][2] * B[2][1])
          - B[0][1] * (B[1][0] * B[2][2] - B[1][2] * B[2][0])
          + B[0][2] * (B[1][0] * B[2][1] - B[1][1] * B[2][0]))
    return m1 > 0 and m2 > 0 and m3 > 0


def _joint_model(joint, name, jtype):
    axis = _numbers(joint.find("axis"), "xyz", (1.0, 0.0, 0.0), 3, f"joint '{name}' <axis>")
    if jtype in ("revolute", "continuous", "prismatic", "planar") and not math.sqrt(sum(a * a for a in axis)) > 1e-12:
        raise URDFError(f"joint '{name}': axis ({' '.join(f'{a:g}' for a in axis)}) has zero length; "
                        "give a non-zero <axis xyz>")
    if jtype == "revolute":
        return Revolute(axis)
    if jtype == "continuous":
        return Revolute(axis, continuous=True)
    if jtype == "prismatic":
        return Prismatic(axis)
    if jtype == "planar":
        return Planar(axis)
    return FreeFlyer()  # floating


def parse_urdf(text, source="<string>"):
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise URDFError(f"{source}: malformed XML ({exc}); fix the file") from None


def load_urdf(path, floating_base=False, gravity=None, strict=False, mimic=False):
    """Load a URDF file into a Model (see the module docstring for the conventions).

    With `floating_base=True` a free-flyer joint named `root_joint` moves the root link,
    q = [x y z qx qy qz qw] and v = [linear; angular] in the base frame, as Pinocchio's
    JointModelFreeFlyer.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise URDFError(f"URDF file '{path}' not found; check the path")
    with open(path, "rb") as f:
        text = f.read()
    return model_from_urdf_string(text, source=path, floating_base=floating_base, gravity=gravity, strict=strict,
                                  mimic=mimic)


def model_from_urdf_string(text, source="<string>", floating_base=False, gravity=None, strict=False, mimic=False):
    root_el = parse_urdf(text, source)
    if root_el.tag != "robot":
        raise URDFError(f"{source}: the top element is <{root_el.tag}>, not <robot>; is this a URDF?")
    robot_name = root_el.get("name") or os.path.splitext(os.path.basename(source))[0] or "robot"

    links = {}
    for link in root_el.findall("link"):
        name = link.get("name")
        if not name:
            raise URDFError(f"{source}: a <link> has no name; give every link a name")
        if name in links:
            raise URDFError(f"link '{name}' is defined twice; give every link its own name")
        links[name] = link
    if not links:
        raise URDFError(f"{source}: no <link>; a robot needs at least one link")

    joints, parent_of, mimics = {}, {}, []
    for joint in root_el.findall("joint"):
        name = joint.get("name")
        if not name:
            raise URDFError(f"{source}: a <joint> has no name; give every joint a name")
        if name in joints:
            raise URDFError(f"joint '{name}' is defined twice; give every joint its own name")
        jtype = joint.get("type")
        if jtype not in MOVING_TYPES + ("fixed",):
            raise URDFError(f"joint '{name}': unknown type '{jtype}'; use one of revolute, continuous, "
                            "prismatic, fixed, floating, planar")
        ends = {}
        for end in ("parent", "child"):
            el = joint.find(end)
            link = el.get("link") if el is not None else None
            if link is None:
                raise URDFError(f"joint '{name}': no <{end} link=...>; name the {end} link")
            if link not in links:
                raise URDFError(f"joint '{name}': {end} link '{link}' does not exist; define <link name=\"{link}\">")
            ends[end] = link
        child = ends["child"]
        if child in parent_of:
            raise URDFError(f"link '{child}' has two parents (joints '{parent_of[child]}' and '{name}'); "
                            "a URDF must be a tree")
        if joint.find("mimic") is not None:
            mimics.append(name)
        parent_of[child] = name
        joints[name] = (joint, jtype, ends["parent"], child)

    if mimics:
        listed = ", ".join(f"'{m}'" for m in mimics[:4]) + (f" and {len(mimics) - 4} more" if len(mimics) > 4 else "")
        warnings.warn(f"joint {listed}: <mimic> is ignored; the joint is treated as independent", stacklevel=3)
    roots = [name for name in links if name not in parent_of]
    if not roots:
        raise URDFError(f"{source}: every link has a parent, so the joints form a loop; a URDF must be a tree")
    if len(roots) > 1:
        raise URDFError(f"{source}: several root links ({', '.join(roots[:5])}); connect them with joints "
                        "so that exactly one link has no parent")

    children = {name: [] for name in links}
    for jname in sorted(joints):  # Pinocchio (through urdfdom) visits children by joint name
        children[joints[jname][2]].append(jname)

    builder = ModelBuilder(robot_name, gravity if gravity is not None else (0.0, 0.0, -9.81))
    root = roots[0]
    try:
        if floating_base:
            builder.add_body(-1, FreeFlyer(), "root_joint", root, inertia=_inertia(links[root]))
        else:
            builder.add_fixed_body(-1, root)  # a fixed base's own inertia moves nothing
        _add_subtree(builder, root, children, joints, links)
    except ModelError as exc:
        raise URDFError(str(exc)) from None
    visited = builder.frame_names()
    unreached = [name for name in links if name not in visited]
    if unreached:
        raise URDFError(f"links {', '.join(unreached[:5])} are not reachable from root '{root}': "
                        "their joints form a loop; a URDF must be a tree")
    return builder.finish()


def _add_subtree(builder, root, children, joints, links):
    """Depth-first from the root, children in name order (an explicit stack: URDF chains can be deep)."""
    stack = list(reversed(children[root]))
    while stack:
        jname = stack.pop()
        joint, jtype, parent, child = joints[jname]
        X_T = _origin(joint, f"joint '{jname}'")
        inertia = _inertia(links[child])
        if jtype == "fixed":
            builder.add_fixed_body(parent, child, X_T, inertia)
        else:
            builder.add_body(parent, _joint_model(joint, jname, jtype), jname, child, X_T, inertia)
        stack.extend(reversed(children[child]))
