"""The NumPy reference backend: the algorithms run on numbers.

Each function takes the model first, then arrays. A leading batch dimension is accepted:
q of shape (B, nq) etc. returns (B, ...), computed vectorised (each scalar of the algorithm
becomes an array of B values). Spatial vectors at this boundary are Pinocchio's
[linear; angular]; internally they are [angular; linear].
"""

import math

import numpy as np

from ..algorithms import aba as _aba
from ..algorithms import christoffel as _christoffel
from ..algorithms import contact as _contact
from ..algorithms import coriolis as _coriolis
from ..algorithms import crba as _crba
from ..algorithms import energy as _energy
from ..algorithms import fd_crba as _fd_crba
from ..algorithms import jacobians as _jacobians
from ..algorithms import kinematics as _kinematics
from ..algorithms import minv as _minv
from ..algorithms import momentum as _momentum
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


def _call(algorithm, model, f_ext=None, **arrays):
    """Run `algorithm` on checked arrays (q sized nq, every other nv), batch or not; f_ext,
    when given, is passed last as one Force per body."""
    x = _Inputs()
    args = [x.vector(value, model.nq if name == "q" else model.nv, name) for name, value in arrays.items()]
    if f_ext is not None:
        args.append(x.external_forces(f_ext, model))
    return x.output(algorithm(model, OPS, *args))


def _frame(model, frame):
    return model.frame(frame) if isinstance(frame, str) else frame


def rnea(model, q, v, a, f_ext=None):
    """Inverse dynamics tau = M a + C v + g - sum J^T f_ext (seed 000 Algorithm 1)."""
    return _call(_rnea.rnea, model, f_ext, q=q, v=v, a=a)


def nle(model, q, v):
    """Nonlinear effects C(q, v) v + g(q)."""
    return _call(_rnea.nle, model, q=q, v=v)


def gravity(model, q):
    """Generalized gravity g(q)."""
    return _call(_rnea.gravity, model, q=q)


def crba(model, q):
    """Joint-space inertia matrix M(q), full and symmetric (seed 000 Algorithm 2)."""
    return _call(_crba.crba, model, q=q)


def aba(model, q, v, tau, f_ext=None):
    """Forward dynamics a = M^-1 (tau - C v - g + sum J^T f_ext) (seed 000 Algorithm 3)."""
    return _call(_aba.aba, model, f_ext, q=q, v=v, tau=tau)


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
    return _call(_energy.com, model, q=q)


def kinetic_energy(model, q, v):
    """1/2 v^T M v."""
    return _call(_energy.kinetic_energy, model, q=q, v=v)[..., 0]


def potential_energy(model, q):
    """-m g . c, zero with the centre of mass at the world origin (as Pinocchio)."""
    return _call(_energy.potential_energy, model, q=q)[..., 0]


def total_mass(model):
    return model.total_mass


def coriolis(model, q, v):
    """Christoffel-consistent Coriolis matrix C(q, v): C v = nle - g, M-dot - 2C skew (seed 002 Alg. 1)."""
    return _call(_coriolis.coriolis, model, q=q, v=v)


def christoffel(model, q):
    """Christoffel symbols of the first kind Gamma[i, j, k], C[i, j] = sum_k Gamma[i, j, k] v[k] (seed 002 Alg. 2)."""
    return _call(_christoffel.christoffel, model, q=q)


def minv(model, q):
    """M(q)^-1 by articulated-body impulses (seed 001 Alg. 1 and 2)."""
    return _call(_minv.minv, model, q=q)


def minv_times(model, q, tau):
    """M(q)^-1 tau in O(n)."""
    return _call(_minv.minv_times, model, q=q, tau=tau)


def fd_crba(model, q, v, tau):
    """Forward dynamics through CRBA and a sparse L^T D L factorization of M."""
    return _call(_fd_crba.fd_crba, model, q=q, v=v, tau=tau)


def com_velocity(model, q, v):
    return _call(_momentum.com_velocity, model, q=q, v=v)


def spatial_momentum(model, q, v):
    """[linear; angular] momentum about the world origin, world axes."""
    return _call(_momentum.spatial_momentum, model, q=q, v=v)


def centroidal_momentum(model, q, v):
    """h_G = [linear; angular about the centre of mass]."""
    x = _Inputs()
    return x.output(_momentum.centroidal_momentum(model, OPS, x.vector(q, model.nq, "q"),
                                                  x.vector(v, model.nv, "v")))


def centroidal_map(model, q):
    """A_G (6 x nv) with A_G v = h_G."""
    return _call(_momentum.centroidal_map, model, q=q)


def body_motion(model, q, v, a):
    """Each body's [w, v_O, w-dot, a_O] in body coordinates (no gravity), shape (nbodies, 12)."""
    return _call(_kinematics.body_motion, model, q=q, v=v, a=a)


def kinematics(model, q, v=None, a=None):
    """The per-body quantities points and contacts are made of, at one state (see algorithms.contact)."""
    qs = _Inputs().vector(q, model.nq, "q")
    kin = _kinematics.joint_kinematics(model, OPS, qs)
    X_0 = _kinematics.body_placements(model, OPS, kin)
    R = [np.array(_kinematics.placement_as_rotation_translation(X)[0], dtype=float) for X in X_0]
    p = [np.array(X.r, dtype=float) for X in X_0]
    J = np.array(_jacobians.joint_jacobians(model, OPS, qs)[0], dtype=float)
    motion = None
    if v is not None:
        a = np.zeros(model.nv) if a is None else a
        motion = body_motion(model, q, v, a)
    return _contact.Kinematics(frame_table(model), support_masks(model), R, p, J, motion)


def frame_table(model):
    """name -> (body, R_bf, p_bf) for every frame."""
    table = {}
    for f in model.frames:
        R, p = _kinematics.placement_as_rotation_translation(f.placement)
        table[f.name] = (f.body, np.array(R, dtype=float), np.array(p, dtype=float))
    return table


def support_masks(model):
    """For each body, the boolean mask of the velocity coordinates that move it."""
    masks = []
    for b in range(model.nbodies):
        mask = np.zeros(model.nv, dtype=bool)
        for j in model.support(b):
            joint = model.joints[j]
            mask[joint.idx_v:joint.idx_v + joint.nv] = True
        masks.append(mask)
    return masks


def point_jacobian(model, q, frame, point):
    """3 x nv: world velocity of a point fixed in `frame` (frame coordinates) = J v."""
    return kinematics(model, q).point_jacobian(_frame_name(frame), point)


def point_velocity(model, q, v, frame, point):
    return kinematics(model, q, v).point_velocity(_frame_name(frame), point)


def point_acceleration(model, q, v, a, frame, point):
    """World acceleration of the point: J a + J-dot v."""
    return kinematics(model, q, v, a).point_acceleration(_frame_name(frame), point)


def point_gamma(model, q, v, frame, point):
    """The contact Hessian term -J-dot v (seed 000 §6.4)."""
    return -kinematics(model, q, v).point_acceleration(_frame_name(frame), point)


def _frame_name(frame):
    return frame if isinstance(frame, str) else frame.name


def _contact_terms(model, q, v, contacts):
    contacts = _contact.parse_contacts([(_frame_name(c[0]),) + tuple(c[1:]) for c in contacts])
    kin = kinematics(model, q, v)
    return contacts, _contact.constraint_jacobian(kin, contacts), _contact.constraint_bias(kin, contacts)


def contact_dynamics(model, q, v, tau, contacts, damping=0.0):
    """Seed 000 eq. (7): (q-ddot, lambda) with M q-ddot = tau - nle + G^T lambda and
    G q-ddot + G-dot v = 0. contacts: [(frame, point, normal or None)], a normal (world
    axes) for a 1-D constraint, None for the 3-D point constraint."""
    _, G, gamma = _contact_terms(model, q, v, contacts)
    return _contact.contact_dynamics(minv(model, q), nle(model, q, v), np.asarray(tau, dtype=float), G, gamma, damping)


def impulse_dynamics(model, q, v_minus, contacts, restitution=0.0, damping=0.0):
    """Seed 000 eq. (10): (v+, impulses) with G v+ = -restitution G v-."""
    _, G, _ = _contact_terms(model, q, v_minus, contacts)
    return _contact.impulse_dynamics(minv(model, q), np.asarray(v_minus, dtype=float), G, restitution, damping)


def contact_inertia(model, q, contacts):
    """The contact-space inverse inertia G M^-1 G^T (seed 001 §6.3)."""
    contacts = _contact.parse_contacts([(_frame_name(c[0]),) + tuple(c[1:]) for c in contacts])
    G = _contact.constraint_jacobian(kinematics(model, q), contacts)
    return G @ minv(model, q) @ G.T
