"""The model every stage reads: parent array, joint models, placements X_T, inertias.

A Model is frozen. Build it from a URDF (`rbdgen.load_urdf`) or in Python with
`ModelBuilder`, in RBDL's `AddBody` style (RBDL paper Alg. 4, seed 000). Body i is moved by
joint i; `parent[i]` is the body it hangs from, -1 for the world. Fixed joints add no body:
the child's inertia is merged into its moving parent and the child stays a frame (RBDL joints
docs, seed 003).
"""

import math
import numbers
from dataclasses import dataclass, field

from ..errors import ModelError, did_you_mean
from ..spatial import Inertia, Transform
from .joints import JointModel, snap_orthonormal

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


@dataclass(frozen=True)
class Joint:
    """A moving joint: its model and its slices of q and v."""

    name: str
    model: JointModel
    idx_q: int
    idx_v: int

    @property
    def type(self):
        return self.model.type

    @property
    def nq(self):
        return self.model.nq

    @property
    def nv(self):
        return self.model.nv


@dataclass(frozen=True)
class Frame:
    """A named frame fixed on a moving body (-1: the world) at `placement` (body -> frame)."""

    name: str
    body: int
    placement: Transform


@dataclass(frozen=True)
class Loop:
    """A loop closure: frames `a` and `b` (on two bodies) held together, their origins ("3d")
    or the frames themselves ("6d") (rbdgen.algorithms.loops)."""

    name: str
    a: str
    b: str
    kind: str


@dataclass(frozen=True)
class Model:
    name: str
    joints: tuple
    body_names: tuple
    parent: tuple
    X_T: tuple
    inertia: tuple
    frames: tuple
    gravity: tuple = DEFAULT_GRAVITY
    # Per velocity coordinate (nv numbers each, or empty for none): the rotor inertia added to
    # M's diagonal (Pinocchio's model.armature, MuJoCo's dof_armature) and the viscous damping
    # d of the passive torque -d v (URDF <dynamics damping>, MuJoCo's dof_damping).
    armature: tuple = ()
    damping: tuple = ()
    # Entries taken as run-time inputs of the generated functions (SPEC strings of
    # rbdgen.model.parameters: inertia:LINK, payload:FRAME, gravity, ...): every function then
    # takes their values, `params`, after its own inputs. Empty: the model's numbers are constants.
    parameters: tuple = ()
    # Loop closures (Loop rows): a closed chain's joints that the spanning tree leaves out
    loops: tuple = ()
    _frame_index: dict = field(default=None, repr=False, compare=False)
    _full: "Model" = field(default=None, repr=False, compare=False)   # set by model.mimic.with_mimic

    @property
    def full(self):
        """The model with every joint independent: what the algorithms run on. A model with
        mimic joints (rbdgen.model.mimic) has fewer coordinates than its tree; without them,
        the model itself."""
        return self if self._full is None else self._full

    @property
    def has_mimic(self):
        return self._full is not None

    @property
    def nq(self):
        return sum(j.nq for j in self.joints)

    @property
    def nv(self):
        return sum(j.nv for j in self.joints)

    @property
    def nbodies(self):
        return len(self.joints)

    def joint_armature(self, joint):
        """The armature of a joint's velocity coordinates (zeros when the model has none)."""
        return list(self.armature[joint.idx_v:joint.idx_v + joint.nv]) if self.armature else [0] * joint.nv

    def frame(self, name):
        """The frame called `name` (a URDF link, or a body of the builder)."""
        try:
            return self.frames[self._frame_index[name]]
        except (KeyError, TypeError):
            known = ", ".join(f.name for f in self.frames[:8])
            raise ModelError(f"unknown frame {name!r}; known frames include {known}") from None

    def support(self, body):
        """Bodies from the root down to `body`, inclusive."""
        chain = []
        while body >= 0:
            chain.append(body)
            body = self.parent[body]
        return chain[::-1]

    def children(self, body):
        return [i for i, p in enumerate(self.parent) if p == body]

    def massless_joints(self):
        """Joints that move no mass and no rotational inertia: M is singular with them, so
        forward dynamics (ABA) is undefined. Found from the structure, not from a state."""
        carries = [_may_be_nonzero(I.m) or any(_may_be_nonzero(x) for row in I.I for x in row) for I in self.inertia]
        for i in reversed(range(self.nbodies)):
            if carries[i] and self.parent[i] >= 0:
                carries[self.parent[i]] = True
        # A mimic joint moves its master's coordinate (idx_v): the coordinate moves mass if any of its joints does.
        moves = {}
        for joint, c in zip(self.joints, carries):
            moves[joint.idx_v] = moves.get(joint.idx_v, False) or c
        return [j.name for j in self.joints if not moves[j.idx_v]]

    @property
    def total_mass(self):
        """A float (a sum of symbols when the masses are model parameters)."""
        total = sum(I.m for I in self.inertia)
        return float(total) if isinstance(total, numbers.Real) else total

    def neutral_configuration(self):
        q = []
        for joint in self.joints:
            q += joint.model.neutral()
        return q


class ModelBuilder:
    """Builds a Model body by body (RBDL's AddBody: RBDL paper Alg. 4, seed 000).

        b = ModelBuilder("arm")
        upper = b.add_body(-1, Revolute((0, 0, 1)), "shoulder", "upper_arm", inertia=...)
        b.add_body(upper, Revolute((0, 1, 0)), "elbow", "forearm", X_T=Transform(r=(0, 0, 0.3)))
        model = b.finish()

    A parent is a body index (-1 is the world) or the name of any frame already added,
    such as a body attached by `add_fixed_body`; placements compose accordingly.
    """

    def __init__(self, name="robot", gravity=DEFAULT_GRAVITY):
        self.name = name
        self.gravity = tuple(float(g) for g in gravity)
        self._joints, self._parent, self._X_T, self._inertia, self._bodies = [], [], [], [], []
        self._frames = {}
        self._loops = []
        self._joint_names = set()   # a name check per joint stays O(1): URDF chains can be long
        self._nq = self._nv = 0

    def _resolve(self, parent, X_T):
        """(moving body, placement from it) for a parent given by index or frame name."""
        if isinstance(parent, str):
            if parent not in self._frames:
                raise ModelError(f"parent {parent!r} is not a known frame; add it before its children")
            frame = self._frames[parent]
            return frame.body, X_T.compose(frame.placement)
        if not -1 <= parent < len(self._joints):
            raise ModelError(f"parent body {parent} does not exist; bodies are 0..{len(self._joints) - 1} and -1 is the world")
        return parent, X_T

    def _check_new_name(self, name, what):
        taken = name in self._joint_names if what == "joint" else name in self._frames
        if taken:
            raise ModelError(f"{what} name {name!r} is used twice; give every {what} its own name")

    def frame_names(self):
        return set(self._frames)

    def add_body(self, parent, joint, joint_name=None, body_name=None, X_T=None, inertia=None, *, frame=None):
        """Add a body moved by `joint` (a JointModel) under `parent`; returns its index. Its
        name is a frame at `frame` on it (default: the joint's frame, the body's)."""
        if not isinstance(joint, JointModel):
            raise ModelError(f"joint {joint_name!r}: {joint!r} is not a joint model; use one of rbdgen.model.joints")
        index = len(self._joints)
        joint_name = joint_name or f"joint{index}"
        body_name = body_name or f"body{index}"
        self._check_new_name(joint_name, "joint")
        self._check_new_name(body_name, "body")
        body, placement = self._resolve(parent, X_T or Transform())
        inertia = inertia or Inertia()
        _check_inertia(inertia, body_name)
        self._joints.append(Joint(joint_name, joint, self._nq, self._nv))
        self._joint_names.add(joint_name)
        self._nq += joint.nq
        self._nv += joint.nv
        self._parent.append(body)
        self._X_T.append(placement)
        self._inertia.append(inertia)
        self._bodies.append(body_name)
        self._frames[body_name] = Frame(body_name, index, frame or Transform())
        return index

    def add_fixed_body(self, parent, body_name, X_T=None, inertia=None):
        """Attach a body rigidly: its inertia joins the moving parent's, its name stays a frame."""
        self._check_new_name(body_name, "body")
        body, placement = self._resolve(parent, X_T or Transform())
        if inertia is not None:
            _check_inertia(inertia, body_name)
            if body >= 0:  # inertia fixed to the world moves nothing
                self._inertia[body] = self._inertia[body] + placement.inertia_to_parent(inertia)
        self._frames[body_name] = Frame(body_name, body, placement)
        return body_name

    def add_frame(self, name, parent, placement=None):
        """A named frame (no inertia) on a body or frame."""
        return self.add_fixed_body(parent, name, placement)

    def add_loop(self, name, ends, kind, where):
        """A loop closure `name` (Loop.kind "3d" or "6d") between two frames it adds: `ends`, two
        (frame name, parent, placement) as add_frame takes them. `where`: how an error names
        the loop's source ("<connect name='c'>")."""
        for frame, _, _ in ends:
            if frame in self._frames:
                raise ModelError(f"{where}: its frame {frame!r} would take the name of another; rename one")
        for frame, parent, placement in ends:
            self.add_frame(frame, parent, placement)
        self._loops.append(Loop(name, ends[0][0], ends[1][0], kind))

    def finish(self, loops=()):
        """The Model; `loops`: Loop rows between frames added before, after those of add_loop."""
        _check_finite(self)
        loops = tuple(self._loops) + tuple(loops)
        for loop in loops:
            for name in (loop.a, loop.b):
                if name not in self._frames:
                    raise ModelError(f"loop {loop.name!r}: frame {name!r} is not a frame of the model; add it first")
        exact_transform = lambda X: Transform(snap_orthonormal(X.E),
                                               tuple(_exact(x) for x in X.r))
        frames = tuple(Frame(f.name, f.body, exact_transform(f.placement)) for f in self._frames.values())
        return Model(
            name=self.name,
            joints=tuple(self._joints),
            body_names=tuple(self._bodies),
            parent=tuple(self._parent),
            X_T=tuple(exact_transform(X) for X in self._X_T),
            inertia=tuple(I.map(_exact) for I in self._inertia),
            frames=frames,
            gravity=tuple(_exact(g) for g in self.gravity),
            loops=tuple(loops),
            _frame_index={f.name: k for k, f in enumerate(frames)},
        )


def _may_be_nonzero(x):
    """x != 0 for a number; True for a model parameter's value (a symbol, or an array of a batch)."""
    return x != 0 if isinstance(x, numbers.Number) else True


def _exact(x):
    """Exact ints for values that are exactly 0 or ±1, so the symbolic run folds them away."""
    x = float(x)
    return int(x) if x in (0.0, 1.0, -1.0) else x


def _check_inertia(inertia, body_name):
    m = float(inertia.m)
    if not (math.isfinite(m) and m >= 0):
        raise ModelError(f"body {body_name!r}: mass {m} must be finite and >= 0")
    if not _all_finite(inertia.h, *inertia.I):
        raise ModelError(f"body {body_name!r}: its spatial inertia is not finite "
                         f"(mass {m:g}, m c = {_floats(inertia.h)}); "
                         "give a realistic center of mass and inertia (m c^2 must not overflow)")


def _check_finite(builder):
    """Merged inertias and composed placements can overflow although every part was finite
    (two masses of 1e308 on one body); such a model would give NaN for every state."""
    if not _all_finite(builder.gravity):
        raise ModelError(f"gravity {_floats(builder.gravity)} must be three finite numbers")
    for name, I in zip(builder._bodies, builder._inertia):
        if not _all_finite((I.m,), I.h, *I.I):
            raise ModelError(f"body {name!r}: its merged spatial inertia is not finite (mass {float(I.m):g}, "
                             f"m c = {_floats(I.h)}); the masses or inertias fixed to it overflow, "
                             "give realistic values")
    placements = list(zip(builder._bodies, builder._X_T))
    placements += [(f.name, f.placement) for f in builder._frames.values()]
    for name, X in placements:
        if not _all_finite(X.r, *X.E):
            raise ModelError(f"frame {name!r}: its placement is not finite (origin {_floats(X.r)}); "
                             "the offsets (URDF <origin>) on its path overflow, give realistic values")


def _all_finite(*rows):
    return all(math.isfinite(float(x)) for row in rows for x in row)


def _floats(values):
    return "(" + " ".join(f"{float(x):g}" for x in values) + ")"


def with_joint_dynamics(model, armature=None, damping=None):
    """The model with armature and damping set per joint: {joint name: value} (the same value
    for each of a joint's velocity coordinates, or one per coordinate). Joints not named keep
    theirs. Values must be finite and >= 0. A model with mimic joints gets them on its tree's
    joints (what the algorithms run on)."""
    import dataclasses
    full = model.full
    values = {}
    for what, given in (("armature", armature), ("damping", damping)):
        current = list(getattr(full, what)) or [0] * full.nv
        for name, value in (given or {}).items():
            joint = next((j for j in full.joints if j.name == name), None)
            if joint is None:
                hint = did_you_mean(name, [j.name for j in full.joints])
                raise ModelError(f"{what}: the model has no joint {name!r}{'; ' + hint if hint else ''}")
            per_dof = list(value) if isinstance(value, (list, tuple)) else [value] * joint.nv
            if len(per_dof) != joint.nv:
                raise ModelError(f"{what} of joint {name!r}: expected 1 or {joint.nv} values, got {len(per_dof)}")
            for k, x in enumerate(per_dof):
                try:
                    x = float(x)
                except (TypeError, ValueError):
                    x = math.nan
                if not (math.isfinite(x) and x >= 0):
                    raise ModelError(f"{what} of joint {name!r}: {value!r} is not a finite number >= 0")
                current[joint.idx_v + k] = _exact(x)
        values[what] = tuple(current) if any(current) else ()
    if model.has_mimic:   # the algorithms read them on the tree; the reduced model has none of its own
        return dataclasses.replace(model, armature=(), damping=(), _full=dataclasses.replace(full, **values))
    return dataclasses.replace(model, **values)
