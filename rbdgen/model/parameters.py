"""Model parameters as inputs: entries of a Model that a function takes as symbols (or as numbers
given later) instead of the robot description's constants.

A SPEC names a group of entries:

    inertia:LINK   the moving link's ten dynamic parameters in Pinocchio's order: m, m c (3), and
                   the rotational inertia about the link frame's origin Ixx Ixy Iyy Ixz Iyz Izz
                   (rbdgen.algorithms.regressor's order); a link fixed to a moving one has its
                   inertia merged into that link's, so name that link
    inertia:all    every moving link's
    payload:FRAME  a rigid body of ten parameters (as inertia:LINK's, in the frame's axes about its
                   origin; nominally nothing) fixed at a frame, added to its link's inertia
    gravity        the gravity vector (3)
    armature       the rotor inertia of every velocity coordinate (nv)
    damping        the viscous damping of every velocity coordinate (nv)
    origin:JOINT   the translation of a joint's placement in its moving parent link (3): the
                   URDF joint's <origin xyz> when its parent link is moved by a joint

Names, one per entry, sanitized to identifiers: m_LINK, mcx_LINK, mcy_LINK, mcz_LINK,
Ixx_LINK, Ixy_LINK, Iyy_LINK, Ixz_LINK, Iyz_LINK, Izz_LINK; m_payload_FRAME, ...; g_x, g_y, g_z; armature_1 .. armature_nv and damping_1 .. damping_nv (1-based, as the
coordinates' symbols v1 .. vn of rbdgen.symbolic); origin_x_JOINT, origin_y_JOINT, origin_z_JOINT.

`model_parameters(model, specs)` gives their names, nominal values (the model's own) and
`model_with(values)`: a copy of the model with those entries replaced by any scalars (the
code generator's symbols, SymPy's, or numbers: the nominal values give the model back).
`with_parameters(model, specs)` is the model whose generated functions take them as an input
(Model.parameters); `parameters_of(model)` its Parameters. A model
with mimic joints has them on its tree, what the algorithms run on (armature_k and damping_k
count the tree's coordinates).
"""

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError, did_you_mean
from ..spatial import Inertia, Transform
from . import physical

# Pinocchio's order of the rotational inertia's six entries, and their names
INERTIA_ENTRIES = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))
INERTIA_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
SPECS = "inertia:LINK, inertia:all, payload:FRAME, gravity, armature, damping, origin:JOINT"
SPECS_CHOICE = "inertia:LINK, inertia:all, payload:FRAME, gravity, armature, damping or origin:JOINT"
# The groups that name an element of the model: what, and the SPECs that name it
TARGETS = {"inertia": ("link", "inertia:LINK or inertia:all"), "payload": ("frame", "payload:FRAME"),
           "origin": ("joint", "origin:JOINT")}


def inertia_entries(inertia):
    """The ten dynamic parameters of an Inertia, in Pinocchio's order."""
    return [inertia.m, *inertia.h] + [inertia.I[r][c] for r, c in INERTIA_ENTRIES]


def inertia_from_entries(p):
    """The Inertia of ten dynamic parameters in Pinocchio's order."""
    entry = {rc: x for rc, x in zip(INERTIA_ENTRIES, p[4:])}
    return Inertia(p[0], p[1:4], [[entry[min(r, c), max(r, c)] for c in range(3)] for r in range(3)])


@dataclass(frozen=True)
class Parameters:
    """Entries of `model` taken as inputs: `names[k]` is entry `entries[k]` (group, index,
    component), whose value in the model is `nominal[k]`."""

    model: object
    names: tuple
    nominal: tuple
    entries: tuple

    def __len__(self):
        return len(self.names)

    def model_with(self, values):
        """The model with the parameters' entries replaced by `values` (in `names`' order);
        a model with mimic joints gets them on its tree (what the algorithms run on)."""
        values = list(values)
        if len(values) != len(self.names):
            raise ModelError(f"wrong number of parameter values: expected {len(self.names)}, got {len(values)}")
        full = self.model.full
        inertia = {}
        origin = {}
        payload = {}
        vectors = {"gravity": list(full.gravity), "armature": list(full.armature) or [0] * full.nv,
                   "damping": list(full.damping) or [0] * full.nv}
        for (group, index, component), value in zip(self.entries, values):
            if group == "inertia":
                inertia.setdefault(index, inertia_entries(full.inertia[index]))[component] = value
            elif group == "origin":
                origin.setdefault(index, list(full.X_T[index].r))[component] = value
            elif group == "payload":
                payload.setdefault(index, [0] * 10)[component] = value
            else:
                vectors[group][component] = value
        changed = {group: tuple(vectors[group]) for group in ("armature", "damping")
                   if any(g == group for g, _, _ in self.entries)}
        inertias = [inertia_from_entries(inertia[i]) if i in inertia else I for i, I in enumerate(full.inertia)]
        for index, entries in payload.items():
            frame = full.frames[index]
            inertias[frame.body] = inertias[frame.body] + frame.placement.inertia_to_parent(inertia_from_entries(entries))
        replaced = dataclasses.replace(
            full, gravity=tuple(vectors["gravity"]), **changed, parameters=(), inertia=tuple(inertias),
            X_T=tuple(Transform(X.E, origin[i]) if i in origin else X for i, X in enumerate(full.X_T)))
        if self.model.has_mimic:
            return dataclasses.replace(self.model, _full=replaced, parameters=())
        return replaced

    def bodies(self):
        """[(label, the indices of its ten parameters)]: each link's and payload's."""
        found = {}
        for k, (group, index, component) in enumerate(self.entries):
            if group in ("inertia", "payload"):
                found.setdefault((group, index), [None] * 10)[component] = k
        full = self.model.full
        return [(f"link {full.body_names[index]!r}" if group == "inertia" else f"payload at frame {full.frames[index].name!r}",
                 indices) for (group, index), indices in found.items()]

    def nonnegative(self):
        """The indices of the parameters that must be >= 0 (armature, damping)."""
        return [k for k, (group, _, _) in enumerate(self.entries) if group in ("armature", "damping")]

    def problem(self, values, strict=True):
        """None when `values` ((np,) or a batch (B, np)) describe a physical robot, else one
        line naming the parameter (rbdgen.model.physical; strict: with the triangle inequality)."""
        return physical.problem(values, self.bodies(), self.nonnegative(), self.names, strict)

    def sample(self, rng, batch):
        """(batch, np) random physical values near the nominal ones (verification's): each link
        and payload gets a random small body added, gravity, origins, armature and damping
        random offsets."""
        values = np.tile(np.asarray(self.nominal, dtype=float), (batch, 1))
        for _, indices in self.bodies():
            values[:, indices] += _random_bodies(rng, batch)
        for k, (group, _, _) in enumerate(self.entries):
            spread = {"gravity": 0.5, "origin": 0.02}.get(group)
            if spread:
                values[:, k] += rng.normal(scale=spread, size=batch)
            elif group in ("armature", "damping"):
                values[:, k] += rng.uniform(0.0, 0.1, size=batch)
        return values


def _random_bodies(rng, batch):
    """(batch, 10): rigid bodies of 0.1 to 1 kg, their centre within 0.1 m of the origin, a
    principal inertia of a box of up to 0.2 m sides about it, turned at random."""
    m = rng.uniform(0.1, 1.0, size=batch)
    c = rng.uniform(-0.1, 0.1, size=(batch, 3))
    sides = rng.uniform(0.02, 0.2, size=(batch, 3)) ** 2
    principal = m[:, None] / 12 * (sides.sum(axis=1, keepdims=True) - sides)
    R = np.linalg.qr(rng.normal(size=(batch, 3, 3)))[0]
    Ic = np.einsum("bij,bj,bkj->bik", R, principal, R)
    I = Ic + m[:, None, None] * (np.einsum("bi,bi->b", c, c)[:, None, None] * np.eye(3) - np.einsum("bi,bj->bij", c, c))
    return np.column_stack([m, m[:, None] * c] + [I[:, r, col] for r, col in INERTIA_ENTRIES])


def model_parameters(model, specs=()):
    """The Parameters of `model` that `specs` (SPEC strings, see the module, or one string of
    them separated by commas) name, in the order given (an entry named twice is taken once)."""
    specs = split_specs(specs)
    full = model.full
    entries, names, seen = [], [], set()

    def add(entry, name):
        if entry not in seen:
            seen.add(entry)
            entries.append(entry)
            names.append(name)

    for spec in specs:
        group, _, target = spec.partition(":")
        group = group.strip()
        target = target.strip()
        if group in TARGETS and not target:
            what, forms = TARGETS[group]
            raise ModelError(f"parameter {spec!r} names no {what}; give {forms}")
        if group == "inertia":
            bodies = range(full.nbodies) if target == "all" else [_link(full, target, spec)]
            for i in bodies:
                for k, what in enumerate(INERTIA_NAMES):
                    add(("inertia", i, k), f"{what}_{full.body_names[i]}")
        elif group == "payload":
            k = _frame(full, target, spec)
            for j, what in enumerate(INERTIA_NAMES):
                add(("payload", k, j), f"{what}_payload_{full.frames[k].name}")
        elif group == "origin":
            i = _joint(full, target, spec)
            for k, axis in enumerate("xyz"):
                add(("origin", i, k), f"origin_{axis}_{full.joints[i].name}")
        elif group in ("gravity", "armature", "damping") and not target:
            count = 3 if group == "gravity" else full.nv
            for k in range(count):
                add((group, None, k), f"g_{'xyz'[k]}" if group == "gravity" else f"{group}_{k + 1}")
        else:
            raise ModelError(f"unknown parameter {spec!r}; the parameters are {SPECS}")
    nominal = [_nominal(full, entry) for entry in entries]
    return Parameters(model, tuple(_identifiers(names)), tuple(nominal), tuple(entries))


def split_specs(specs):
    """The SPEC strings of `specs` (a list of them, or one string of them separated by commas),
    stripped; ModelError for an empty one, which would otherwise name nothing silently."""
    out = [str(spec).strip() for spec in (specs.split(",") if isinstance(specs, str) else specs or ())]
    if "" in out:
        raise ModelError(f"empty parameter SPEC in {specs!r}; give {SPECS_CHOICE}")
    return out


def changes_kinematics(specs):
    """Whether parameters `specs` move the robot's kinematics or gravity (gravity, origin:JOINT)
    rather than only its inertias, armature and damping."""
    return any(str(spec).strip().partition(":")[0].strip() in ("gravity", "origin") for spec in specs)


def parameters_of(model):
    """The Parameters a model's generated functions take (Model.parameters; none: empty)."""
    return model_parameters(model, model.parameters)


def with_parameters(model, specs):
    """The model whose generated functions take the parameters `specs` name (SPEC strings or
    one string of them separated by commas) as their last input, `params`; ModelError (one
    line, with close names) for an unknown or empty one."""
    specs = tuple(dict.fromkeys(split_specs(specs)))
    model_parameters(model, specs)   # the errors, now
    return dataclasses.replace(model, parameters=specs)


def _nominal(full, entry):
    group, index, component = entry
    if group == "payload":
        return 0.0
    if group == "inertia":
        return float(inertia_entries(full.inertia[index])[component])
    if group == "origin":
        return float(full.X_T[index].r[component])
    values = getattr(full, group)
    return float(values[component]) if values else 0.0


def _link(full, name, spec):
    if name in full.body_names:
        return full.body_names.index(name)
    frame = next((f for f in full.frames if f.name == name), None)
    if frame is not None and frame.body >= 0:
        owner = full.body_names[frame.body]
        raise ModelError(f"parameter {spec!r}: link {name!r} is fixed to link {owner!r}, which carries its inertia; "
                         f"name inertia:{owner}")
    if frame is not None:
        raise ModelError(f"parameter {spec!r}: link {name!r} is fixed to the world and moves no inertia")
    raise ModelError(f"parameter {spec!r}: the model has no link {name!r}{_hint(name, full.body_names)}")


def _frame(full, name, spec):
    names = [f.name for f in full.frames]
    if name not in names:
        raise ModelError(f"parameter {spec!r}: the model has no frame {name!r}{_hint(name, names)}")
    k = names.index(name)
    if full.frames[k].body < 0:
        raise ModelError(f"parameter {spec!r}: frame {name!r} is fixed to the world, so a payload there moves nothing")
    return k


def _joint(full, name, spec):
    joints = [j.name for j in full.joints]
    if name in joints:
        return joints.index(name)
    raise ModelError(f"parameter {spec!r}: the model has no moving joint {name!r}{_hint(name, joints)}")


def _hint(name, choices):
    """'; did you mean ...?' (errors.did_you_mean) when a choice is close to `name`, else ''."""
    hint = did_you_mean(name, choices)
    return "; " + hint if hint else ""


def _identifiers(names):
    """Each name as an identifier (characters other than letters, digits and _ become _), made
    unique by a suffix where two sanitize alike."""
    out, taken = [], set()
    for name in names:
        base = re.sub(r"\W", "_", name, flags=re.ASCII)
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base}_{n}", n + 1
        taken.add(candidate)
        out.append(candidate)
    return out
