"""Mimic joints as Pinocchio 3 models them (`mimic=True`): a joint without a coordinate of its own.

A mimic joint follows its master: its angle (or displacement) is multiplier * q_master + offset.
The model keeps its tree with every joint independent (`model.full`), which is what the
algorithms run on; the mimic model is the constant affine map from its own coordinates to the
tree's,

    v_full = P v,    a_full = P a,    q_full: each joint's own coordinates, and
                                      multiplier * q[master] + offset for a mimic joint,

where P has one row per velocity coordinate of the tree (a unit row for a joint's own
coordinate, the multiplier in the master's column for a mimic joint). As in Pinocchio,
a mimic joint stays in the joint list with nq = nv = 0 and its master's idx_q and idx_v, so
nq and nv are those of the mimic model; bodies, frames and external forces (one per joint)
are the tree's.

Generalized forces of the tree become P^T tau_full, matrices P^T M P, Jacobians J P; the
functions here do this on scalars of any type (floats, NumPy batches, symbolic expressions), and do nothing
for a model without mimic joints. rbdgen.algorithms.mimic applies them to every algorithm.
"""

import dataclasses
import math

from ..errors import ModelError
from ..spatial import sum_terms
from .joints import JointModel
from .model import Joint


class Mimic(JointModel):
    """The joint model of a mimic joint: no coordinate of its own. Its own joint model (the
    one the tree moves it with) is in model.full; here it is kept as plain data so that the
    model's fingerprint covers it."""

    type = "mimic"
    nq = nv = 0

    def __init__(self, joint, master, multiplier, offset):
        self.master = master
        self.multiplier = _exact(multiplier)
        self.offset = _exact(offset)
        self.joint = (joint.type,) + tuple(sorted(vars(joint).items()))

    def calc(self, ops, q, v):
        raise ModelError(f"a joint mimicking {self.master!r} has no coordinate of its own; run the algorithms "
                         "on model.full, or through rbdgen.algorithms.mimic")

    def describe(self):
        return f"mimic of {self.master!r}: {self.multiplier} q + {self.offset}, {self.joint[0]}"


def with_mimic(model, mimics):
    """The model in which each joint named in `mimics` follows its master.

    mimics: {joint name: (master name, multiplier, offset)}. Master and mimic must be joints
    with one coordinate (revolute, continuous, prismatic, helical); a master cannot itself be
    a mimic joint (Pinocchio refuses chains too). Errors are one-line ModelErrors.
    """
    if model.has_mimic:
        raise ModelError(f"model {model.name!r} already has mimic joints; give all of them in one call")
    if not mimics:
        return model
    index = {joint.name: i for i, joint in enumerate(model.joints)}
    for name, (master, multiplier, offset) in mimics.items():
        where = f"joint {_name(name)} <mimic joint={_name(master)}>"
        if name not in index:
            raise ModelError(f"{where}: the robot has no moving joint {_name(name)}; put <mimic> on a moving joint")
        if master not in index:
            raise ModelError(f"{where}: the robot has no moving joint of that name; name the joint it follows")
        if master == name:
            raise ModelError(f"{where}: a joint cannot mimic itself; name the joint it follows")
        if master in mimics:
            grand = _name(mimics[master][0])
            raise ModelError(f"{where}: {_name(master)} is itself a mimic joint (of {grand}); mimic {grand} "
                             "directly, with the multipliers and offsets composed")
        for role, joint in (("mimic", model.joints[index[name]]), ("master", model.joints[index[master]])):
            if not joint.nq == joint.nv == 1:
                raise ModelError(f"{where}: the {role} joint {_name(joint.name)} is {joint.type} with nq={joint.nq}, "
                                 f"nv={joint.nv}; mimic joints and their masters need one coordinate "
                                 "(revolute, continuous, prismatic)")
        for what, value in (("multiplier", multiplier), ("offset", offset)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ModelError(f"{where}: {what} {value!r} is not a finite number; give a finite {what}")
    own, nq, nv = {}, 0, 0
    for joint in model.joints:
        if joint.name not in mimics:
            own[joint.name] = Joint(joint.name, joint.model, nq, nv)
            nq, nv = nq + joint.nq, nv + joint.nv
    joints = []
    for joint in model.joints:
        if joint.name in own:
            joints.append(own[joint.name])
        else:
            master, multiplier, offset = mimics[joint.name]
            m = own[master]
            joints.append(Joint(joint.name, Mimic(joint.model, master, multiplier, offset), m.idx_q, m.idx_v))
    return dataclasses.replace(model, joints=tuple(joints), _full=model)


def _name(text, limit=100):
    """A name quoted with its control characters escaped (one line whatever it holds), cut after `limit`."""
    text = str(text)
    return repr(text[:limit]) + (f"... ({len(text)} characters)" if len(text) > limit else "")


def _exact(x):
    """Exact ints for 0 and +-1, so that the symbolic run folds a multiplier of 1 and an offset of 0 away."""
    x = float(x)
    return int(x) if x in (0.0, 1.0, -1.0) else x


def _scaled(weight, x):
    return x if weight == 1 else -x if weight == -1 else weight * x


def expand_q(model, q):
    """q_full = P q + o: the tree's configuration (a list of scalars) from the model's."""
    if not model.has_mimic:
        return q
    out = []
    for joint in model.joints:
        if isinstance(joint.model, Mimic):
            out.append(_scaled(joint.model.multiplier, q[joint.idx_q]) + joint.model.offset)
        else:
            out.extend(q[joint.idx_q:joint.idx_q + joint.nq])
    return out


def expand_v(model, v):
    """v_full = P v (also for accelerations)."""
    if not model.has_mimic:
        return v
    out = []
    for joint in model.joints:
        if isinstance(joint.model, Mimic):
            out.append(_scaled(joint.model.multiplier, v[joint.idx_v]))
        else:
            out.extend(v[joint.idx_v:joint.idx_v + joint.nv])
    return out


def coordinate_groups(model):
    """For each of the model's velocity coordinates, the tree's coordinates it drives with
    their weights (the nonzero entries of its column of P): [(full index, weight)]."""
    groups = [[] for _ in range(model.nv)]
    for joint, tree_joint in zip(model.joints, model.full.joints):
        if isinstance(joint.model, Mimic):
            groups[joint.idx_v].append((tree_joint.idx_v, joint.model.multiplier))
        else:
            for k in range(joint.nv):
                groups[joint.idx_v + k].append((tree_joint.idx_v + k, 1))
    return groups


def reduce_force(model, f):
    """P^T f: a generalized force of the tree (nv_full scalars) in the model's coordinates."""
    if not model.has_mimic:
        return f
    return [sum_terms(_scaled(w, f[a]) for a, w in group) for group in coordinate_groups(model)]


def reduce_columns(model, rows):
    """J P: each row (nv_full scalars) of a matrix acting on the tree's velocities."""
    if not model.has_mimic:
        return rows
    groups = coordinate_groups(model)
    return [[sum_terms(_scaled(w, row[a]) for a, w in group) for group in groups] for row in rows]


def reduce_matrix(model, M, symmetric=False):
    """P^T M P. With `symmetric`, the upper triangle is computed and mirrored, so the result
    is exactly symmetric whatever the rounding."""
    if not model.has_mimic:
        return M
    groups = coordinate_groups(model)

    def entry(gi, gj):
        return sum_terms(_scaled(wa * wb, M[a][b]) for a, wa in gi for b, wb in gj)
    if symmetric:
        upper = {(i, j): entry(groups[i], groups[j]) for i in range(model.nv) for j in range(i, model.nv)}
        return [[upper[min(i, j), max(i, j)] for j in range(model.nv)] for i in range(model.nv)]
    return [[entry(gi, gj) for gj in groups] for gi in groups]


def reduce_christoffel(model, G):
    """Gamma[i][j][k] reduced on all three indices: sum of P_ai P_bj P_ck Gamma_full[a][b][c]."""
    if not model.has_mimic:
        return G
    groups = coordinate_groups(model)
    return [[[sum_terms(_scaled(wa * wb * wc, G[a][b][c]) for a, wa in gi for b, wb in gj for c, wc in gk)
              for gk in groups] for gj in groups] for gi in groups]


def velocity_map(model):
    """P as nested lists of floats (nv_full rows, nv columns), or None without mimic joints."""
    if not model.has_mimic:
        return None
    P = [[0.0] * model.nv for _ in range(model.full.nv)]
    for column, group in enumerate(coordinate_groups(model)):
        for a, w in group:
            P[a][column] = float(w)
    return P

