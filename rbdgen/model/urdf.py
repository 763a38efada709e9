"""URDF -> Model (the modeling blog, seed 004): joint origins become X_T, <inertial> becomes
spatial inertia.

The joint order and the q/v layout are those of Pinocchio's URDF parser: a depth-first walk
from the root, the children of a link taken in the order of their joints' names. Fixed
joints are merged into their moving parent. Every error is one line naming the element.
"""

import math
import os
import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import InertiaWarning, ModelError, URDFError
from ..spatial import Inertia, Transform, matmul3, transpose3
from .joints import FreeFlyer, Planar, Prismatic, Revolute
from .mimic import with_mimic
from .model import ModelBuilder, with_joint_dynamics

MOVING_TYPES = ("revolute", "continuous", "prismatic", "floating", "planar")

# A URDF number is a plain ASCII decimal: float() alone also takes '1_000', Arabic-Indic and
# full-width digits. inf and nan pass here so that they are refused as non-finite.
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)",
                     re.ASCII | re.IGNORECASE)
_SEPARATOR = re.compile(r"[ \t\r\n]+")
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([^"']{0,100})["']""")
_HOW_MANY = {1: "one finite number", 3: "three finite numbers"}


def _show(text, limit=100):
    """`text` quoted with its control characters escaped, so that a message stays one line
    whatever a URDF names; cut after `limit` characters."""
    text = str(text)
    return repr(text[:limit]) + (f"... ({len(text)} characters)" if len(text) > limit else "")


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
    """`count` numbers separated by spaces, each a plain ASCII decimal, all finite."""
    text = element.get(attribute) if element is not None else None
    if text is None:
        return default
    words = _SEPARATOR.split(text.strip(" \t\r\n"))
    if len(words) == count and all(_NUMBER.fullmatch(word) for word in words):
        values = tuple(float(word) for word in words)
        if all(math.isfinite(x) for x in values):
            return values
    raise URDFError(f"{where}: {attribute}={_show(text)} must be {_HOW_MANY.get(count, f'{count} finite numbers')} "
                    "(plain ASCII decimals such as -0.25 or 1e-3)")


def _only(element, tag, owner):
    """The one <tag> inside `element`, or None; a second one is an error rather than ignored."""
    found = element.findall(tag)
    if len(found) > 1:
        count = "two" if len(found) == 2 else len(found)
        raise URDFError(f"{owner} has {count} <{tag}> elements; keep one")
    return found[0] if found else None


def _origin(element, where):
    """Transform from the parent frame to the frame an <origin> places (E = R^T, r = xyz)."""
    origin = _only(element, "origin", where)
    xyz = _numbers(origin, "xyz", (0.0, 0.0, 0.0), 3, f"{where} <origin>")
    rpy = _numbers(origin, "rpy", (0.0, 0.0, 0.0), 3, f"{where} <origin>")
    return Transform(transpose3(rpy_to_rotation(*rpy)), xyz)


def _inertia(link, invalid):
    """The link's spatial inertia in the link frame, or None without <inertial>. A tensor that
    no rigid body has is loaded as given (Pinocchio does too) and noted in `invalid`."""
    name = link.get("name")
    inertial = _only(link, "inertial", f"link {_show(name)}")
    if inertial is None:
        return None
    where = f"link {_show(name)} <inertial>"
    mass = _numbers(_only(inertial, "mass", where), "value", (0.0,), 1, where + " <mass>")[0]
    if not mass >= 0:
        raise URDFError(f"{where}: mass {mass:g} is negative; give a mass >= 0")
    origin = _origin(inertial, where)
    el = _only(inertial, "inertia", where)
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    xx, xy, xz, yy, yz, zz = (_numbers(el, key, (0.0,), 1, where + " <inertia>")[0] for key in keys)
    I_com = ((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))
    problem = _inertia_problem(I_com)
    if problem:
        invalid.append((name, f"{where}: inertia (ixx {xx:g} iyy {yy:g} izz {zz:g} ixy {xy:g} ixz {xz:g} iyz {yz:g}) "
                       f"{problem}"))
    R = transpose3(origin.E)          # <inertial><origin> rotates the tensor's axes into the link frame
    I_link_axes = matmul3(matmul3(R, I_com), transpose3(R))
    return Inertia.from_com(mass, origin.r, I_link_axes)


def _inertia_problem(I_com):
    """Why no rigid body has this inertia about its center of mass, or None: the principal
    moments must be >= 0 and each at most the sum of the other two. Rounding is forgiven:
    1e-9 of the largest moment, and anything below 1e-12 kg m^2 (iCub writes 4e-18 for 0)."""
    scale = max(abs(x) for row in I_com for x in row)
    if scale == 0:
        return None
    low, mid, high = np.linalg.eigvalsh(np.array(I_com) / scale)  # scaled: huge entries do not overflow
    tol = max(1e-9 * max(abs(low), abs(high)), 1e-12 / scale)
    moments = ", ".join(f"{x * scale:.3g}" for x in (low, mid, high))
    if low < -tol:
        return f"is not positive semi-definite (principal moments {moments})"
    if high > low + mid + tol:
        return (f"breaks the triangle inequality of its principal moments "
                f"({high * scale:.3g} > {low * scale:.3g} + {mid * scale:.3g})")
    return None


def _joint_model(joint, name, jtype):
    where = f"joint {_show(name)}"
    axis = _numbers(_only(joint, "axis", where), "xyz", (1.0, 0.0, 0.0), 3, f"{where} <axis>")
    norm = math.hypot(*axis)
    if jtype in ("revolute", "continuous", "prismatic", "planar") and not norm > 1e-12:
        raise URDFError(f"{where}: axis ({' '.join(f'{a:g}' for a in axis)}) has zero length; "
                        "give a non-zero <axis xyz>")
    if not math.isfinite(sum(a * a for a in axis)):  # the joint model's own normalization would overflow
        axis = tuple(a / norm for a in axis)
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
    """The XML tree; text that is not XML or that Python's parser cannot decode is a URDFError."""
    try:
        with warnings.catch_warnings():  # codecs such as unicode_escape warn about backslashes in the text
            warnings.simplefilter("ignore", DeprecationWarning)
            return ET.fromstring(text)
    except ET.ParseError as exc:
        raise URDFError(f"{_show(source, 1000)}: malformed XML ({exc}); fix the file") from None
    except (LookupError, ValueError) as exc:  # unknown or multi-byte encodings, undecodable text
        declared = _XML_ENCODING.match(text) if isinstance(text, bytes) else None
        encoding = f" in encoding {_show(declared.group(1).decode('latin-1'))}" if declared else ""
        raise URDFError(f"{_show(source, 1000)}: the XML{encoding} cannot be decoded ({_show(exc, 80)}); "
                        "save the file as UTF-8") from None


def load_urdf(path, floating_base=False, gravity=None, strict=False, mimic=False, armature=None):
    """Load a URDF file into a Model (see the module docstring for the conventions).

    With `floating_base=True` a free-flyer joint named `root_joint` moves the root link,
    q = [x y z qx qy qz qw] and v = [linear; angular] in the base frame, as Pinocchio's
    JointModelFreeFlyer.

    With `mimic=True` a joint with <mimic joint="master" multiplier="m" offset="o"/> has no
    coordinate of its own: it moves by m q_master + o, as Pinocchio's mimic=True (see
    rbdgen.model.mimic). Without it, such joints are independent and a warning says so.

    A joint's <dynamics damping="d"> is its viscous damping (passive torque -d v; friction is
    not modelled). armature: {joint name: rotor inertia} added to M's diagonal (Pinocchio's
    model.armature; URDF has no element for it).
    """
    path = os.fsdecode(os.fspath(path))
    if not os.path.isfile(path):
        raise URDFError(f"URDF file {_show(path, 1000)} not found; check the path")
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as exc:
        raise URDFError(f"URDF file {_show(path, 1000)} cannot be read ({exc.strerror}); "
                        "check its permissions") from None
    return model_from_urdf_string(text, source=path, floating_base=floating_base, gravity=gravity, strict=strict,
                                  mimic=mimic, armature=armature)


def model_from_urdf_string(text, source="<string>", floating_base=False, *, gravity=None, strict=False, mimic=False,
                           armature=None):
    root_el = parse_urdf(text, source)
    src = _show(source, 1000)
    if root_el.tag != "robot":
        raise URDFError(f"{src}: the top element is {_show(f'<{root_el.tag}>')}, not <robot>; is this a URDF?")
    robot_name = root_el.get("name") or os.path.splitext(os.path.basename(source))[0] or "robot"

    links = {}
    for link in root_el.findall("link"):
        name = link.get("name")
        if not name:
            raise URDFError(f"{src}: a <link> has no name; give every link a name")
        if name in links:
            raise URDFError(f"link {_show(name)} is defined twice; give every link its own name")
        links[name] = link
    if not links:
        raise URDFError(f"{src}: no <link>; a robot needs at least one link")

    joints, parent_of, mimics = {}, {}, []
    for joint in root_el.findall("joint"):
        name = joint.get("name")
        if not name:
            raise URDFError(f"{src}: a <joint> has no name; give every joint a name")
        where = f"joint {_show(name)}"
        if name in joints:
            raise URDFError(f"{where} is defined twice; give every joint its own name")
        jtype = joint.get("type")
        if jtype not in MOVING_TYPES + ("fixed",):
            raise URDFError(f"{where}: unknown type {_show(jtype)}; use one of revolute, continuous, "
                            "prismatic, fixed, floating, planar")
        ends = {}
        for end in ("parent", "child"):
            el = _only(joint, end, where)
            link = el.get("link") if el is not None else None
            if link is None:
                raise URDFError(f"{where}: no <{end} link=...>; name the {end} link")
            if link not in links:
                raise URDFError(f"{where}: {end} link {_show(link)} does not exist; define <link name={_show(link)}>")
            ends[end] = link
        child = ends["child"]
        if child in parent_of:
            raise URDFError(f"link {_show(child)} has two parents (joints {_show(parent_of[child])} and "
                            f"{_show(name)}); a URDF must be a tree")
        if joint.find("mimic") is not None:
            mimics.append(name)
        parent_of[child] = name
        joints[name] = (joint, jtype, ends["parent"], child)

    if mimics and not mimic:
        listed = ", ".join(f"'{m}'" for m in mimics[:4]) + (f" and {len(mimics) - 4} more" if len(mimics) > 4 else "")
        warnings.warn(f"joint {listed}: <mimic> is ignored; the joint is treated as independent", stacklevel=3)
    roots = [name for name in links if name not in parent_of]
    if not roots:
        raise URDFError(f"{src}: every link has a parent, so the joints form a loop; a URDF must be a tree")
    if len(roots) > 1:
        raise URDFError(f"{src}: several root links ({_listed(roots)}); connect them with joints "
                        "so that exactly one link has no parent")

    children = {name: [] for name in links}
    for jname in sorted(joints):  # Pinocchio (through urdfdom) visits children by joint name
        children[joints[jname][2]].append(jname)

    builder = ModelBuilder(robot_name, gravity if gravity is not None else (0.0, 0.0, -9.81))
    root = roots[0]
    invalid = []  # (link, what is wrong) for inertias no rigid body has
    try:
        if floating_base:
            builder.add_body(-1, FreeFlyer(), "root_joint", root, inertia=_inertia(links[root], invalid))
        else:
            builder.add_fixed_body(-1, root)  # a fixed base's own inertia moves nothing
        _add_subtree(builder, root, children, joints, links, invalid)
        visited = builder.frame_names()
        unreached = [name for name in links if name not in visited]
        if unreached:
            raise URDFError(f"links {_listed(unreached)} are not reachable from root {_show(root)}: "
                            "their joints form a loop; a URDF must be a tree")
        model = builder.finish()  # refuses inertias and placements that overflowed when merged
        if mimic:
            model = with_mimic(model, _mimic_joints(mimics, joints))
        damping = _damping(joints)
        if damping or armature:
            model = with_joint_dynamics(model, armature=armature, damping=damping)
    except ModelError as exc:
        raise URDFError(str(exc)) from None
    _check_inertias(invalid, strict)
    return model


def _listed(names, shown=5):
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(_show(name) for name in names[:shown]) + more


def _check_inertias(invalid, strict):
    """Physically impossible inertias: refused with `strict`, else one warning for the whole URDF."""
    if not invalid:
        return
    problem = invalid[0][1]
    if strict:
        raise URDFError(f"{problem}; fix the tensor (principal moments >= 0, each at most the sum of the other two)")
    also = f"; so are the inertias of links {_listed([name for name, _ in invalid[1:]])}" if len(invalid) > 1 else ""
    warnings.warn(f"{problem}{also}; loaded as given, as Pinocchio does (strict=True or --strict refuses it)",
                  InertiaWarning, stacklevel=4)


def _add_subtree(builder, root, children, joints, links, invalid):
    """Depth-first from the root, children in name order (an explicit stack: URDF chains can be deep)."""
    stack = list(reversed(children[root]))
    while stack:
        jname = stack.pop()
        joint, jtype, parent, child = joints[jname]
        X_T = _origin(joint, f"joint {_show(jname)}")
        inertia = _inertia(links[child], invalid)
        if jtype == "fixed":
            builder.add_fixed_body(parent, child, X_T, inertia)
        else:
            builder.add_body(parent, _joint_model(joint, jname, jtype), jname, child, X_T, inertia)
        stack.extend(reversed(children[child]))


def _damping(joints):
    """{joint: d} of the moving joints with <dynamics damping="d"> (d > 0)."""
    damping = {}
    for name, (joint, jtype, _, _) in joints.items():
        element = joint.find("dynamics")
        if jtype == "fixed" or element is None:
            continue
        d = _numbers(element, "damping", (0.0,), 1, f"joint {_show(name)} <dynamics>")[0]
        if d != 0:
            damping[name] = d
    return damping


def _mimic_joints(names, joints):
    """{joint: (master, multiplier, offset)} from the <mimic> of each moving joint in `names`
    (on a fixed joint it means nothing and is ignored, as by Pinocchio)."""
    mimics = {}
    for name in names:
        joint, jtype = joints[name][:2]
        if jtype == "fixed":
            continue
        where = f"joint {_show(name)} <mimic>"
        element = _only(joint, "mimic", f"joint {_show(name)}")
        master = element.get("joint")
        if not master:
            raise URDFError(f"{where}: no joint=\"...\"; name the joint it follows")
        if master in joints and joints[master][1] == "fixed":
            raise URDFError(f"{where}: joint {_show(master)} is fixed, so there is no coordinate to follow; "
                            "mimic a revolute, continuous or prismatic joint")
        multiplier = _numbers(element, "multiplier", (1.0,), 1, where)[0]
        offset = _numbers(element, "offset", (0.0,), 1, where)[0]
        mimics[name] = (master, multiplier, offset)
    return mimics
