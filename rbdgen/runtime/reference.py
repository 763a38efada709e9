"""The NumPy reference backend: the algorithms run on numbers.

Each function takes the model first, then arrays. A leading batch dimension is accepted:
q of shape (B, nq) etc. returns (B, ...), computed vectorised (each scalar of the algorithm
becomes an array of B values). Spatial vectors at this boundary are Pinocchio's
[linear; angular]; internally they are [angular; linear].
"""

import math

import numpy as np

from ..algorithms import aba as _aba
from ..algorithms import crba as _crba
from ..algorithms import energy as _energy
from ..algorithms import jacobians as _jacobians
from ..algorithms import kinematics as _kinematics
from ..algorithms import rnea as _rnea
from ..spatial import forces_from_rows


class NumericOps:
    """`let` is the identity on numbers; sincos works on floats and arrays alike."""

    @staticmethod
    def let(name, index, value):
        return value

    @staticmethod
    def sincos(x):
        if isinstance(x, float):
            return math.sin(x), math.cos(x)
        return np.sin(x), np.cos(x)


OPS = NumericOps()


class _Inputs:
    """Checks shapes and splits arrays into per-coordinate scalars (or batch columns)."""

    def __init__(self):
        self.batch = None
        self._seen = False

    def vector(self, x, n, what):
        arr = np.asarray(x, dtype=float)
        if arr.ndim == 1 and arr.shape[0] == n:
            return self._agree(None, what, arr.shape, n) or [float(e) for e in arr]
        if arr.ndim == 2 and arr.shape[1] == n:
            self._agree(arr.shape[0], what, arr.shape, n)
            return [np.ascontiguousarray(arr[:, k]) for k in range(n)]
        raise ValueError(f"{what}: expected ({n},) or (B, {n}), got {arr.shape}")

    def _agree(self, batch, what, shape, n):
        if self._seen and self.batch != batch:
            raise ValueError(f"{what}: batch dimensions disagree: expected {self.batch_shape(n)}, got {shape}")
        self.batch, self._seen = batch, True

    def batch_shape(self, n):
        return (n,) if self.batch in (None, False) else (self.batch, n)

    def external_forces(self, f_ext, model):
        """f_ext rows [force; torque] in each joint's frame -> one Force per body."""
        if f_ext is None:
            return None
        arr = np.asarray(f_ext, dtype=float)
        nb = model.nbodies
        if arr.shape[-2:] != (nb, 6) or arr.ndim not in (2, 3):
            raise ValueError(f"f_ext: expected ({nb}, 6) or (B, {nb}, 6), got {arr.shape}")
        if arr.ndim == 3:
            self._agree(arr.shape[0], "f_ext", arr.shape, nb)
            rows = [[arr[:, i, k] for k in range(6)] for i in range(nb)]
        else:
            self._agree(None, "f_ext", arr.shape, nb)
            rows = [[float(x) for x in arr[i]] for i in range(nb)]
        return forces_from_rows(rows)

    def output(self, values):
        """Nested lists of scalars -> an array, with the batch dimension first."""
        shape, flat = _shape_and_entries(values)
        if self.batch is None:
            return np.array(flat, dtype=float).reshape(shape)
        columns = [np.broadcast_to(np.asarray(x, dtype=float), (self.batch,)) for x in flat]
        return np.stack(columns, axis=-1).reshape((self.batch,) + shape)


def _shape_and_entries(values):
    """Shape and row-major scalars of nested lists whose leaves are scalars or batch arrays."""
    if isinstance(values, (list, tuple)):
        parts = [_shape_and_entries(v) for v in values]
        inner = parts[0][0] if parts else ()
        return (len(values),) + inner, [x for _, entries in parts for x in entries]
    return (), [values]


def _frame(model, frame):
    return model.frame(frame) if isinstance(frame, str) else frame


def rnea(model, q, v, a, f_ext=None):
    """Inverse dynamics tau = M a + C v + g - sum J^T f_ext (seed 000 Algorithm 1)."""
    x = _Inputs()
    args = (x.vector(q, model.nq, "q"), x.vector(v, model.nv, "v"), x.vector(a, model.nv, "a"))
    return x.output(_rnea.rnea(model, OPS, *args, x.external_forces(f_ext, model)))


def nle(model, q, v):
    """Nonlinear effects C(q, v) v + g(q)."""
    x = _Inputs()
    return x.output(_rnea.nle(model, OPS, x.vector(q, model.nq, "q"), x.vector(v, model.nv, "v")))


def gravity(model, q):
    """Generalized gravity g(q)."""
    x = _Inputs()
    return x.output(_rnea.gravity(model, OPS, x.vector(q, model.nq, "q")))


def crba(model, q):
    """Joint-space inertia matrix M(q), full and symmetric (seed 000 Algorithm 2)."""
    x = _Inputs()
    return x.output(_crba.crba(model, OPS, x.vector(q, model.nq, "q")))


def aba(model, q, v, tau, f_ext=None):
    """Forward dynamics a = M^-1 (tau - C v - g + sum J^T f_ext) (seed 000 Algorithm 3)."""
    x = _Inputs()
    args = (x.vector(q, model.nq, "q"), x.vector(v, model.nv, "v"), x.vector(tau, model.nv, "tau"))
    return x.output(_aba.aba(model, OPS, *args, x.external_forces(f_ext, model)))


def frame_placement(model, q, frame):
    """(R, p): the frame's orientation (frame -> world) and origin in world coordinates."""
    x = _Inputs()
    qs = x.vector(q, model.nq, "q")
    X_0 = _kinematics.body_placements(model, OPS, _kinematics.joint_kinematics(model, OPS, qs))
    X = _kinematics.frame_placement_transform(model, OPS, X_0, _frame(model, frame))
    R, p = _kinematics.placement_as_rotation_translation(X)
    return x.output(R), x.output(p)


def frame_jacobian(model, q, frame, reference="local_world_aligned"):
    """6 x nv Jacobian of the frame, rows [linear; angular] (see algorithms.jacobians)."""
    x = _Inputs()
    return x.output(_jacobians.frame_jacobian(model, OPS, x.vector(q, model.nq, "q"),
                                              _frame(model, frame), reference))


def com(model, q):
    """Centre of mass in world coordinates."""
    x = _Inputs()
    return x.output(_energy.com(model, OPS, x.vector(q, model.nq, "q")))


def kinetic_energy(model, q, v):
    x = _Inputs()
    return x.output(_energy.kinetic_energy(model, OPS, x.vector(q, model.nq, "q"), x.vector(v, model.nv, "v")))[..., 0]


def potential_energy(model, q):
    """-m g . c, zero with the centre of mass at the world origin (as Pinocchio)."""
    x = _Inputs()
    return x.output(_energy.potential_energy(model, OPS, x.vector(q, model.nq, "q")))[..., 0]


def total_mass(model):
    return model.total_mass
