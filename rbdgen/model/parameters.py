"""Model parameters as inputs: entries of a Model that a function takes as symbols (or as numbers
given later) instead of the robot description's constants.

A SPEC names a group of entries:

    inertia:LINK   the moving link's ten dynamic parameters in Pinocchio's order: m, m c (3), and
                   the rotational inertia about the link frame's origin Ixx Ixy Iyy Ixz Iyz Izz
                   (rbdgen.algorithms.regressor's order); a link fixed to a moving one has its
                   inertia merged into that link's, so name that link
    inertia:all    every moving link's
    gravity        the gravity vector (3)
    armature       the rotor inertia of every velocity coordinate (nv)
    damping        the viscous damping of every velocity coordinate (nv)
    origin:JOINT   the translation of a joint's placement in its moving parent link (3): the
                   URDF joint's <origin xyz> when its parent link is moved by a joint

(`payload:FRAME` is not one yet: a payload is an inertia added on a frame, inertia:LINK of
the frame's link covers it.) Names, one per entry, sanitized to identifiers: m_LINK,
mcx_LINK, mcy_LINK, mcz_LINK, Ixx_LINK, Ixy_LINK, Iyy_LINK, Ixz_LINK, Iyz_LINK, Izz_LINK;
g_x, g_y, g_z; armature_1 .. armature_nv and damping_1 .. damping_nv (1-based, as the
coordinates' symbols v1 .. vn of rbdgen.symbolic); origin_x_JOINT, origin_y_JOINT, origin_z_JOINT.

`model_parameters(model, specs)` gives their names, nominal values (the model's own) and
`model_with(values)`: a copy of the model with those entries replaced by any scalars (the
code generator's symbols, SymPy's, or numbers: the nominal values give the model back). A model
with mimic joints has them on its tree, what the algorithms run on (armature_k and damping_k
count the tree's coordinates).
"""

import dataclasses
import re
from dataclasses import dataclass

from ..errors import ModelError, did_you_mean
from ..spatial import Inertia, Transform

# Pinocchio's order of the rotational inertia's six entries, and their names
INERTIA_ENTRIES = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))
INERTIA_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
SPECS = "inertia:LINK, inertia:all, gravity, armature, damping, origin:JOINT"


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
        vectors = {"gravity": list(full.gravity), "armature": list(full.armature) or [0] * full.nv,
                   "damping": list(full.damping) or [0] * full.nv}
        for (group, index, component), value in zip(self.entries, values):
            if group == "inertia":
                inertia.setdefault(index, inertia_entries(full.inertia[index]))[component] = value
            elif group == "origin":
                origin.setdefault(index, list(full.X_T[index].r))[component] = value
            else:
                vectors[group][component] = value
        changed = {group: tuple(vectors[group]) for group in ("armature", "damping")
                   if any(g == group for g, _, _ in self.entries)}
        replaced = dataclasses.replace(
            full, gravity=tuple(vectors["gravity"]), **changed,
            inertia=tuple(inertia_from_entries(inertia[i]) if i in inertia else I for i, I in enumerate(full.inertia)),
            X_T=tuple(Transform(X.E, origin[i]) if i in origin else X for i, X in enumerate(full.X_T)))
        return dataclasses.replace(self.model, _full=replaced) if self.model.has_mimic else replaced


def model_parameters(model, specs=()):
    """The Parameters of `model` that `specs` (SPEC strings, see the module, or one string of
    them separated by commas) name, in the order given (an entry named twice is taken once)."""
    if isinstance(specs, str):
        specs = [spec for spec in specs.split(",") if spec.strip()]
    full = model.full
    entries, names, seen = [], [], set()

    def add(entry, name):
        if entry not in seen:
            seen.add(entry)
            entries.append(entry)
            names.append(name)

    for spec in specs:
        group, _, target = str(spec).partition(":")
        group = group.strip()
        target = target.strip()
        if group == "inertia":
            bodies = range(full.nbodies) if target == "all" else [_link(full, target, spec)]
            for i in bodies:
                for k, what in enumerate(INERTIA_NAMES):
                    add(("inertia", i, k), f"{what}_{full.body_names[i]}")
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


def _nominal(full, entry):
    group, index, component = entry
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
