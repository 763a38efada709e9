"""SDFormat -> Model: one <model>'s links, joints, inertials, axes and frames (SDFormat 1.4 to
1.11), with its frame semantics: a link's <pose> in the model frame, a joint's in its child
link's, a <frame>'s in the frame it is attached to, unless `relative_to` (1.7 on; `frame` in
1.5 and 1.6) names another; an axis in the joint frame unless `expressed_in` (1.7 on) or
`use_parent_model_frame` (up to 1.6) says otherwise. Poses are x y z roll pitch yaw (radians,
or degrees with degrees="true"), or x y z qx qy qz qw with rotation_format="quat_xyzw".

SDFormat can state a closed chain: a joint whose child already has a parent. The spanning tree
keeps the first such joint in document order; each later one becomes a loop closure
(Model.loops), between a frame on its parent link and a frame on its child link at the joint
(named <joint>_parent and <joint>_child): a ball joint keeps the two points together ("3d"),
a fixed joint the frames ("6d"). A model attached to the world by a joint is fixed there;
otherwise its root link floats (a free-flyer named root_joint, as Gazebo simulates it).

The joint order and the q and v layout are those of a URDF of the same tree (Pinocchio's URDF
parser): depth-first from the root, a link's children in the order of their joints' names.
Every error is one line naming the element.
"""

import math
import os
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import ModelError
from ..spatial import Inertia, Transform, quaternion_to_rotation
from .joints import FreeFlyer, Prismatic, Revolute, Spherical
from .model import ModelBuilder, with_joint_dynamics
from .urdf import _inertia_problem, _show, rpy_to_rotation

# Joint types read, and those refused with the reason.
_MOVING = {"revolute": 1, "continuous": 1, "prismatic": 1, "ball": 3}
_REFUSED = {"gearbox": "a gearbox couples two joints, which rbdgen does not model",
            "screw": "its thread_pitch has had two meanings across SDFormat versions",
            "revolute2": "give it as two revolute joints with a massless link between them",
            "universal": "give it as two revolute joints with a massless link between them"}
# The loop closures a joint can state: what it keeps together.
_LOOP_KINDS = {"ball": "3d", "fixed": "6d"}
WORLD = "world"
MODEL = "__model__"


class SDFError(ModelError):
    """An SDFormat file rbdgen cannot read (a ModelError: one line naming the element)."""


def load_sdf(path):
    """The Model of the one <model> of an SDFormat file (see the module docstring)."""
    path = os.fsdecode(os.fspath(path))
    if not os.path.isfile(path):
        raise SDFError(f"SDFormat file {_show(path, 1000)} not found; check the path")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise SDFError(f"{_show(path, 1000)}: malformed XML ({exc}); fix the file") from None
    except OSError as exc:
        raise SDFError(f"SDFormat file {_show(path, 1000)} cannot be read ({exc.strerror})") from None
    return model_from_sdf(root, source=path)


def model_from_sdf(root, source="<string>"):
    if isinstance(root, (str, bytes)):
        try:
            root = ET.fromstring(root)
        except ET.ParseError as exc:
            raise SDFError(f"{_show(source, 1000)}: malformed XML ({exc}); fix the file") from None
    if root.tag != "sdf":
        raise SDFError(f"{_show(source, 1000)}: the top element is <{root.tag}>, not <sdf>; is this SDFormat?")
    version = _version(root.get("version"), source)
    models = root.findall("model")
    if root.find("world") is not None or len(models) != 1:
        raise SDFError(f"{_show(source, 1000)}: rbdgen reads one <model> directly under <sdf> (found "
                       f"{len(models)} and {len(root.findall('world'))} <world>); keep the robot's model alone")
    return _Reader(models[0], version, source).model()


def _version(text, source):
    if text is None:
        raise SDFError(f"{_show(source, 1000)}: <sdf> has no version; give it one, such as <sdf version=\"1.9\">")
    try:
        major, minor = (int(x) for x in (text or "").split("."))
    except ValueError:
        raise SDFError(f"{_show(source, 1000)}: <sdf version={_show(text)}> is not a version such as 1.7") from None
    if major != 1 or not 4 <= minor <= 11:
        raise SDFError(f"{_show(source, 1000)}: SDFormat {text} is not one rbdgen reads (1.4 to 1.11)")
    return minor


class _Reader:
    def __init__(self, model, minor, source):
        self.element, self.minor, self.source = model, minor, source
        self.name = model.get("name") or os.path.splitext(os.path.basename(source))[0] or "robot"
        for tag in ("model", "include"):
            nested = model.find(tag)
            if nested is not None:
                raise SDFError(f"model {_show(self.name)}: nested <{tag} name={_show(nested.get('name'))}> is not read; "
                               "merge its links and joints into the robot's model")
        if (model.findtext("static") or "").strip() in ("1", "true"):
            raise SDFError(f"model {_show(self.name)} is <static>: it has no dynamics to generate")
        self.links = self._named("link")
        self.joints = self._named("joint")
        self.frames = self._named("frame")
        if not self.links:
            raise SDFError(f"model {_show(self.name)}: no <link>; a robot needs at least one link")
        taken = set(self.links)
        for kind, named in (("joint", self.joints), ("frame", self.frames)):
            clash = taken & set(named)
            if clash:
                raise SDFError(f"model {_show(self.name)}: {_show(sorted(clash)[0])} names a {kind} and another "
                               "element; SDFormat frames need unique names")
            taken |= set(named)
        self.canonical = model.get("canonical_link") or next(iter(self.links))
        if self.canonical not in self.links:
            raise SDFError(f"model {_show(self.name)}: canonical_link {_show(self.canonical)} is not a link of it")
        self.resolved = {WORLD: np.eye(4)}
        self.resolved[MODEL] = self.resolved[WORLD] @ self._pose(model, None)[1]
        self.resolving = []

    def _named(self, tag):
        found = {}
        for element in self.element.findall(tag):
            name = element.get("name")
            if not name:
                raise SDFError(f"model {_show(self.name)}: a <{tag}> has no name; name it")
            if name in found:
                raise SDFError(f"{tag} {_show(name)} is defined twice; give every {tag} its own name")
            if name in (WORLD, MODEL):
                raise SDFError(f"{tag} {_show(name)}: that name is reserved by SDFormat; rename it")
            found[name] = element
        return found

    # ------------------------------------------------------------------ poses and frames ---

    def _pose(self, element, default):
        """(the frame a <pose> of `element` is relative to, the pose as a 4 x 4 matrix)."""
        pose = element.find("pose")
        where = f"<{element.tag} name={_show(element.get('name'))}> <pose>"
        if pose is None:
            return default, np.eye(4)
        relative = pose.get("relative_to") if self.minor >= 7 else pose.get("frame")
        words = (pose.text or "").split()
        try:
            values = [float(w) for w in words]
        except ValueError:
            values = []
        quaternion = pose.get("rotation_format", "euler_rpy") == "quat_xyzw"
        if len(values) != (7 if quaternion else 6) or not all(math.isfinite(x) for x in values):
            raise SDFError(f"{where}: {_show(pose.text)} must be {'7' if quaternion else '6'} finite numbers "
                           f"({'x y z qx qy qz qw' if quaternion else 'x y z roll pitch yaw'})")
        matrix = np.eye(4)
        matrix[:3, 3] = values[:3]
        if quaternion:
            x, y, z, w = values[3:]
            norm = math.sqrt(x * x + y * y + z * z + w * w)
            if norm < 1e-12:
                raise SDFError(f"{where}: the quaternion is zero; give a unit quaternion qx qy qz qw")
            matrix[:3, :3] = quaternion_to_rotation(x / norm, y / norm, z / norm, w / norm)
        else:
            angles = [math.radians(a) for a in values[3:]] if pose.get("degrees") == "true" else values[3:]
            matrix[:3, :3] = rpy_to_rotation(*angles)
        return (relative or default), matrix

    def world(self, name, asking="pose"):
        """The pose of the frame `name` (a link, joint, <frame>, world or the model) in the world."""
        if name in self.resolved:
            return self.resolved[name]
        if name in self.resolving:
            cycle = " -> ".join(self.resolving[self.resolving.index(name):] + [name])
            raise SDFError(f"model {_show(self.name)}: the poses form a cycle ({cycle}); break it with relative_to")
        if name in self.links:
            element, default = self.links[name], MODEL
        elif name in self.joints:
            element, default = self.joints[name], self._end(self.joints[name], "child")
        elif name in self.frames:
            element = self.frames[name]
            default = element.get("attached_to") or MODEL
        else:
            raise SDFError(f"model {_show(self.name)}: {asking} names frame {_show(name)}, which it does not define")
        self.resolving.append(name)
        relative, pose = self._pose(element, default)
        self.resolved[name] = self.world(relative, f"<{element.tag} name={_show(name)}> <pose>") @ pose
        self.resolving.pop()
        return self.resolved[name]

    def link_of(self, name, seen=()):
        """The link a frame is fixed to (None: the world)."""
        if name == WORLD:
            return None
        if name == MODEL:
            return self.canonical
        if name in self.links:
            return name
        if name in seen:
            raise SDFError(f"model {_show(self.name)}: frame {_show(name)} is attached to itself through "
                           f"{', '.join(map(_show, seen))}")
        if name in self.joints:
            return self._end(self.joints[name], "child")
        if name in self.frames:
            return self.link_of(self.frames[name].get("attached_to") or MODEL, seen + (name,))
        raise SDFError(f"model {_show(self.name)}: a frame is attached to {_show(name)}, which it does not define")

    def _end(self, joint, end):
        text = (joint.findtext(end) or "").strip()
        where = f"joint {_show(joint.get('name'))}"
        if not text:
            raise SDFError(f"{where}: no <{end}>; name the {end} link")
        if text != WORLD and text not in self.links and text not in self.frames:
            raise SDFError(f"{where}: {end} {_show(text)} is not a link of model {_show(self.name)}")
        return text

    # ------------------------------------------------------------------ the tree and its loops ---

    def model(self):
        tree, loops, parent_of = {}, [], {}
        for name, joint in self.joints.items():   # document order: the first joint to a child keeps it
            kind = joint.get("type")
            where = f"joint {_show(name)}"
            if kind in _REFUSED:
                raise SDFError(f"{where}: type {kind} is not read ({_REFUSED[kind]})")
            if kind not in _MOVING and kind != "fixed":
                raise SDFError(f"{where}: unknown type {_show(kind)}; use revolute, continuous, prismatic, ball or fixed")
            parent, child = self.link_of(self._end(joint, "parent")), self.link_of(self._end(joint, "child"))
            if child is None:
                raise SDFError(f"{where}: its child is the world; make the world its parent")
            if child == parent:
                raise SDFError(f"{where}: parent and child are both link {_show(child)}")
            if child in parent_of:
                if kind not in _LOOP_KINDS:
                    raise SDFError(f"{where} closes a loop (link {_show(child)} already hangs from joint "
                                   f"{_show(parent_of[child])}) and is {kind}: a loop is closed by a ball joint "
                                   "(3d) or a fixed joint (6d)")
                loops.append((name, parent, child, _LOOP_KINDS[kind]))
            else:
                parent_of[child] = name
                tree[name] = (joint, kind, parent, child)
        roots = [link for link in self.links if link not in parent_of]
        grounded = [name for name, (_, _, parent, _) in tree.items() if parent is None]
        if len(roots) != 1 and not grounded:
            raise SDFError(f"model {_show(self.name)}: {len(roots)} links hang from no joint ({', '.join(map(_show, roots[:5]))}); "
                           "connect them so that one root link remains")
        builder = ModelBuilder(self.name)
        bodies = self.bodies = {None: -1}           # link -> the body it is fixed to
        body_pose = self.body_pose = {-1: np.eye(4)}   # body -> its frame in the world at q = 0
        children = {}
        for name in sorted(tree):     # Pinocchio (through urdfdom) visits children by joint name
            children.setdefault(tree[name][2], []).append(name)
        try:
            stack = []
            if not grounded:
                root = roots[0]
                index = builder.add_body(-1, FreeFlyer(), "root_joint", root,   # q places the root link
                                         inertia=self._inertia(root, self.world(root)))
                bodies[root], body_pose[index] = index, self.world(root)
                stack = list(reversed(children.get(root, [])))
            if grounded and roots:   # a link of a model fixed to the world that hangs from nothing
                raise SDFError(f"model {_show(self.name)}: link {_show(roots[0])} hangs from no joint; attach it")
            stack += list(reversed(children.get(None, [])))
            while stack:
                name = stack.pop()
                joint, kind, parent, child = tree[name]
                self._add(builder, name, joint, kind, parent, child)
                stack.extend(reversed(children.get(child, [])))
            unreached = [link for link in self.links if link not in bodies]
            if unreached:
                raise SDFError(f"model {_show(self.name)}: links {', '.join(map(_show, unreached[:5]))} are not "
                               "reached from the root; their joints form a loop with no way in")
            for name, element in self.frames.items():
                body = bodies[self.link_of(name)]
                builder.add_frame(name, body, _transform(np.linalg.solve(body_pose[body], self.world(name))))
            for name, parent, child, kind in loops:
                at = self.world(name)
                ends = [(f"{name}_{side}", bodies[link], _transform(np.linalg.solve(body_pose[bodies[link]], at)))
                        for side, link in (("parent", parent), ("child", child))]
                builder.add_loop(name, ends, kind, f"joint {_show(name)} closes a loop")
            model = builder.finish()
            damping = {name: d for name, (joint, kind, _, _) in tree.items() if (d := self._damping(joint)) != 0}
            return with_joint_dynamics(model, damping=damping) if damping else model
        except ModelError as exc:
            if isinstance(exc, SDFError):
                raise
            raise SDFError(str(exc)) from None

    def _add(self, builder, name, joint, kind, parent, child):
        """The body `child` moved by joint `name` under link `parent`'s body (or fixed to it)."""
        bodies, body_pose = self.bodies, self.body_pose
        parent_body = bodies[parent]
        at = self.world(name)
        X_T = _transform(np.linalg.solve(body_pose[parent_body], at))
        link_pose = self.world(child)
        if kind == "fixed":
            placement = _transform(np.linalg.solve(body_pose[parent_body], link_pose))
            inertia = self._inertia(child, link_pose)
            builder.add_fixed_body(parent_body, child, placement, inertia)
            bodies[child] = parent_body
            return
        if kind == "ball":
            model = Spherical()
        else:
            axis = self._axis(joint, name, at)
            model = Prismatic(axis) if kind == "prismatic" else Revolute(axis, continuous=kind == "continuous")
        index = builder.add_body(parent_body, model, name, child, X_T=X_T, inertia=self._inertia(child, at),
                                 frame=_transform(np.linalg.solve(at, link_pose)))
        bodies[child], body_pose[index] = index, at

    def _axis(self, joint, name, at):
        where = f"joint {_show(name)} <axis>"
        axis = joint.find("axis")
        xyz = axis.find("xyz") if axis is not None else None
        if xyz is None:
            raise SDFError(f"{where}: no <xyz>; give the joint's axis")
        try:
            values = np.array([float(w) for w in (xyz.text or "").split()])
        except ValueError:
            values = np.zeros(0)
        if values.shape != (3,) or not np.isfinite(values).all() or np.linalg.norm(values) < 1e-12:
            raise SDFError(f"{where} <xyz>: {_show(xyz.text)} must be three finite numbers, not all zero")
        if self.minor >= 7:
            frame = xyz.get("expressed_in")
            R = self.world(frame, f"{where} expressed_in")[:3, :3] if frame else at[:3, :3]
        else:
            in_model = (axis.findtext("use_parent_model_frame") or "").strip() in ("1", "true")
            R = self.resolved[MODEL][:3, :3] if in_model else at[:3, :3]
        local = at[:3, :3].T @ R @ (values / np.linalg.norm(values))
        return tuple(float(x) for x in local)

    def _damping(self, joint):
        text = joint.findtext("axis/dynamics/damping")
        if text is None:
            return 0.0
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= 0):
            raise SDFError(f"joint {_show(joint.get('name'))} <dynamics><damping>: {_show(text)} must be a finite "
                           "number >= 0")
        return value

    def _inertia(self, link, frame):
        """The link's spatial inertia about `frame` (a world pose); SDFormat's defaults (mass 1,
        inertia the identity at the link origin) for what its <inertial> leaves out."""
        inertial = self.links[link].find("inertial")
        if inertial is None:
            inertial = ET.Element("inertial")
        where = f"link {_show(link)} <inertial>"
        numbers = {}
        for key, default in (("mass", "1"), ("inertia/ixx", "1"), ("inertia/iyy", "1"), ("inertia/izz", "1"),
                             ("inertia/ixy", "0"), ("inertia/ixz", "0"), ("inertia/iyz", "0")):
            text = inertial.findtext(key, default)
            try:
                numbers[key] = float(text)
            except ValueError:
                numbers[key] = math.nan
            if not math.isfinite(numbers[key]):
                raise SDFError(f"{where} <{key}>: {_show(text)} must be a finite number")
        mass = numbers["mass"]
        if mass < 0:
            raise SDFError(f"{where}: mass {mass:g} is negative; give a mass >= 0")
        xx, yy, zz = numbers["inertia/ixx"], numbers["inertia/iyy"], numbers["inertia/izz"]
        xy, xz, yz = numbers["inertia/ixy"], numbers["inertia/ixz"], numbers["inertia/iyz"]
        I_com = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        problem = _inertia_problem(I_com.tolist())
        if problem:
            raise SDFError(f"{where}: inertia {problem}; fix the tensor")
        relative, pose = self._pose(inertial, link) if inertial.find("pose") is not None else (link, np.eye(4))
        com = np.linalg.solve(frame, self.world(relative, f"{where} <pose>") @ pose)
        R = com[:3, :3]
        return Inertia.from_com(mass, tuple(float(x) for x in com[:3, 3]), tuple(map(tuple, R @ I_com @ R.T)))


def _transform(matrix):
    """The Transform from a frame to one whose pose in it is `matrix` (E = R^T, r = p)."""
    return Transform(tuple(map(tuple, matrix[:3, :3].T.tolist())), tuple(matrix[:3, 3].tolist()))
