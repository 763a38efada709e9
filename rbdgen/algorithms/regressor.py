"""The inertial-parameter regressor: tau = Y(q, v, a) pi, and the base parameters.

pi holds ten numbers per body in Pinocchio's order: m, m c (3), and the rotational inertia
about the body origin Ixx, Ixy, Iyy, Ixz, Iyz, Izz. A body's force f_i = I_i a_i + v_i x* I_i v_i
is linear in them: f_i = A_i pi_i, where A_i's columns come from running that one formula
on parameters seeded as duals (derivatives.Dual), so the formula is not written again.
Joint k's torque gets body i's share through the body-frame Jacobian of i:
Y[k, block i] = (X_ik S_k) . A_i for every ancestor coordinate k, which transforms one
motion per pair instead of ten forces per pair (Pinocchio's way); for a joint with many
coordinates (WIDE) the ten forces are carried up instead.

The base parameters are the identifiable combinations: a QR factorization with column
pivoting of Y stacked over random states selects independent columns Y_b, and every other
column is a fixed combination of them, Y_d = Y_b R_b^-1 R_d, so tau = Y_b (pi_b + R_b^-1 R_d pi_d).
"""

import weakref

import numpy as np

from ..spatial import Force
from ..model import mimic
from ..model.parameters import INERTIA_ENTRIES, inertia_entries, inertia_from_entries  # noqa: F401  (INERTIA_ENTRIES: the tests')
from . import NumericOps
from .derivatives import Dual
from .kinematics import tree_motion

PER_BODY = 10
# A joint with more coordinates than this (the free-flyer) gets its rows from the ten forces
# carried up to it (ten force transforms per body below it) rather than from its axes carried
# down (one motion transform and ten dot products per axis): fewer operations for six axes
# (docs/performance.md, Choices in the generated programs).
WIDE = 3


def parameters(model):
    """pi of the model's bodies (the tree's, with mimic joints), as a NumPy array."""
    out = []
    for inertia in model.full.inertia:
        out += [float(x) for x in inertia_entries(inertia)]
    return np.array(out)


def _seeded_inertia():
    """An inertia whose ten parameters are the directions 0..9 (their values do not matter:
    forces are linear in them)."""
    return inertia_from_entries([Dual(0, {k: 1}) for k in range(PER_BODY)])


def _columns(x):
    return [x.d.get(k, 0) if isinstance(x, Dual) else 0 for k in range(PER_BODY)]


def body_regressor(velocity, acceleration):
    """A_i: the force as ten Forces, one per parameter."""
    f = _seeded_inertia().force(acceleration, velocity)
    ang = [_columns(x) for x in f.ang]
    lin = [_columns(x) for x in f.lin]
    return [Force([ang[r][c] for r in range(3)], [lin[r][c] for r in range(3)]) for c in range(PER_BODY)]


def regressor(model, ops, q, v, a):
    """Y (nv x 10 nbodies) with Y pi = rnea(q, v, a)."""
    tree, kin, velocities, accelerations = tree_motion(model, ops, q, v, a)
    Y = [[0] * (PER_BODY * tree.nbodies) for _ in range(tree.nv)]
    axes = [None] * tree.nbodies     # body i's Jacobian in its own frame: coordinate -> Motion
    wide = [None] * tree.nbodies     # body i's transform from each wide joint's body above it
    for i, k in enumerate(kin):
        p = tree.parent[i]
        joint = tree.joints[i]
        axes[i] = {} if p < 0 else {c: ops.let("Jb", i, k.X_up.apply_motion(s)) for c, s in axes[p].items()}
        wide[i] = {} if p < 0 else {j: ops.let("Xw", i, k.X_up if X is None else k.X_up.compose(X))
                                    for j, X in wide[p].items()}
        A = ops.let("A", i, body_regressor(velocities[i], accelerations[i]))
        if joint.nv > WIDE:
            wide[i][i] = None
        else:
            axes[i].update((joint.idx_v + n, s) for n, s in enumerate(k.S))
        for coordinate, s in axes[i].items():
            Y[coordinate][PER_BODY * i:PER_BODY * (i + 1)] = [s.dot(f) for f in A]
        for j, X in wide[i].items():
            # the ten forces carried to body j, then projected on its axes
            forces = A if X is None else ops.let("Aw", i, [X.inv_apply_force(f) for f in A])
            for n, s in enumerate(kin[j].S):
                Y[tree.joints[j].idx_v + n][PER_BODY * i:PER_BODY * (i + 1)] = [s.dot(f) for f in forces]
    columns = [mimic.reduce_force(model, [row[c] for row in Y]) for c in range(len(Y[0]))]
    return [[column[r] for column in columns] for r in range(model.nv)]


def base_regressor(model, ops, q, v, a):
    """Y_b: the regressor's base columns (the model's BaseParameters, found on numbers)."""
    columns = base_parameters(model).columns
    return [[row[c] for c in columns] for row in regressor(model, ops, q, v, a)]


# ------------------------------------------------------------ base parameters ------------

BASE_STATES = 40          # random states stacked (each gives nv rows)
BASE_SEED = 20260101
RANK_TOL = 1e-9           # a pivot below this times the largest is a dependent column
SNAP_TOL = 1e-10          # entries of R_b^-1 R_d this close to a round value are taken as exact


class BaseParameters:
    """The identifiable combinations of pi: beta = K pi, tau = Y[:, columns] beta."""

    def __init__(self, columns, K):
        self.columns = tuple(int(c) for c in columns)
        self.K = K

    def to_json(self):
        return {"columns": list(self.columns), "K": self.K.tolist()}

    @classmethod
    def from_json(cls, data):
        return cls(data["columns"], np.array(data["K"], dtype=float).reshape(len(data["columns"]), -1))


# id(model) -> (the model, weakly; its BaseParameters) for as long as the model lives: a
# model is frozen, and the search costs a regressor on BASE_STATES states and a QR, so a build
# finds them once, not once per use
_FOUND = {}


def base_parameters(model):
    """The model's BaseParameters, from its regressor on seeded random states."""
    held = _FOUND.get(id(model))
    if held is not None and held[0]() is model:
        return held[1]
    found = _base_parameters(model)
    _FOUND[id(model)] = (weakref.ref(model), found)
    weakref.finalize(model, _FOUND.pop, id(model), None)
    return found


def _base_parameters(model):
    from ..model.states import random_state
    rng = np.random.default_rng(BASE_SEED)
    q, v, a = random_state(model, rng, BASE_STATES)
    columns = [np.ascontiguousarray(x.T) for x in (q, v, a)]
    Y = regressor(model, NumericOps, *[list(c) for c in columns])
    W = np.stack([np.stack([np.broadcast_to(np.asarray(x, dtype=float), (BASE_STATES,)) for x in row], axis=-1)
                  for row in Y], axis=1).reshape(-1, PER_BODY * model.full.nbodies)
    R, order = _pivoted_r(W)
    diagonal = np.abs(np.diag(R))
    rank = int(np.sum(diagonal > RANK_TOL * max(diagonal[0], 1e-300)))
    independent, dependent = order[:rank], order[rank:]
    relation = np.linalg.solve(R[:rank, :rank], R[:rank, rank:])
    relation = np.where(np.abs(relation - np.round(relation)) < SNAP_TOL, np.round(relation), relation)
    K = np.zeros((rank, W.shape[1]))
    K[np.arange(rank), independent] = 1.0
    K[:, dependent] = relation
    keep = np.argsort(independent)       # base columns in the regressor's order
    return BaseParameters(independent[keep], K[keep])


def _pivoted_r(W):
    """R and the column order of a Householder QR with column pivoting (Businger-Golub):
    at each step the remaining column of largest norm goes next."""
    A = np.array(W, dtype=float)
    m, n = A.shape
    order = np.arange(n)
    for k in range(min(m, n)):
        norms = np.einsum("ij,ij->j", A[k:, k:], A[k:, k:])
        j = k + int(np.argmax(norms))
        A[:, [k, j]], order[[k, j]] = A[:, [j, k]], order[[j, k]]
        x = A[k:, k]
        alpha = -np.copysign(np.linalg.norm(x), x[0])
        u = x.copy()
        u[0] -= alpha
        norm_u = np.linalg.norm(u)
        if norm_u > 0:
            u /= norm_u
            A[k:, k:] -= 2.0 * np.outer(u, u @ A[k:, k:])
    return np.triu(A[:min(m, n)]), order
