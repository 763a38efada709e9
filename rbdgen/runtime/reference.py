"""The NumPy reference backend: the algorithms run on numbers.

Each function takes the model first, then arrays. A leading batch dimension is accepted:
q of shape (B, nq) etc. returns (B, ...), computed vectorised (each scalar of the algorithm
becomes an array of B values). Spatial vectors at this boundary are Pinocchio's
[linear; angular]; internally they are [angular; linear]. The algorithms are called through
rbdgen.algorithms.mimic, as the generator calls them: in the model's own coordinates when it
has mimic joints.
"""

import math

import numpy as np

from ..algorithms import configuration as _configuration
from ..algorithms import contact as _contact
from ..algorithms import derivatives as _derivatives
from ..algorithms import frames as _frames
from ..algorithms import mimic as _algorithms
from ..algorithms import regressor as _regressor
from ..errors import ModelError
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
        arr = _contact.real_array(x, what)
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
        arr = _contact.real_array(f_ext, "f_ext")
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
    """A frame given by name (ValueError for an unknown one: a bad argument) or as a Frame."""
    if not isinstance(frame, str):
        return frame
    try:
        return model.frame(frame)
    except ModelError as exc:
        raise ValueError(str(exc)) from None


def rnea(model, q, v, a, f_ext=None):
    """Inverse dynamics tau = M a + C v + g - sum J^T f_ext (seed 000 Algorithm 1)."""
    return _call(_algorithms.rnea, model, f_ext, q=q, v=v, a=a)


def nle(model, q, v):
    """Nonlinear effects C(q, v) v + g(q)."""
    return _call(_algorithms.nle, model, q=q, v=v)


def gravity(model, q):
    """Generalized gravity g(q)."""
    return _call(_algorithms.gravity, model, q=q)


def crba(model, q):
    """Joint-space inertia matrix M(q), full and symmetric (seed 000 Algorithm 2)."""
    return _call(_algorithms.crba, model, q=q)


def aba(model, q, v, tau, f_ext=None):
    """Forward dynamics a = M^-1 (tau - C v - g + sum J^T f_ext) (seed 000 Algorithm 3)."""
    return _call(_algorithms.aba, model, f_ext, q=q, v=v, tau=tau)


def _of_frame(function, model, frame, arrays, *extra, point=None):
    """A function of a frame (rbdgen.algorithms.frames) on numbers: the frame's body and
    placement (moved to `point`, given in frame coordinates, if any) and the checked arrays."""
    f = _frame(model, frame)
    placement = _frames.placement_entries(f.placement)
    if point is not None:
        placement = [float(x) for x in _contact.point_placement(placement, point)]
    x = _Inputs()
    args = [x.vector(value, model.nq if name == "q" else model.nv, name) for name, value in arrays.items()]
    return x.output(function(model, OPS, f.body, placement, *args, *extra))


def frame_placement(model, q, frame):
    """(R, p): the frame's orientation (frame -> world) and origin in world coordinates."""
    X = _of_frame(_algorithms.frame_placement, model, frame, {"q": q})
    return X[..., :9].reshape(X.shape[:-1] + (3, 3)), X[..., 9:]


def frame_jacobian(model, q, frame, reference="local_world_aligned"):
    """6 x nv Jacobian of the frame, rows [linear; angular] (see algorithms.frames)."""
    return _of_frame(_algorithms.frame_jacobian_of_body, model, frame, {"q": q}, reference)


def frame_velocity(model, q, v, frame, reference="local"):
    """The frame's spatial velocity [linear; angular] in `reference` (Pinocchio's getFrameVelocity)."""
    return _of_frame(_algorithms.frame_velocity, model, frame, {"q": q, "v": v}, reference)


def frame_acceleration(model, q, v, a, frame, reference="local"):
    """The frame's spatial acceleration (no gravity) in `reference` (getFrameAcceleration)."""
    return _of_frame(_algorithms.frame_acceleration, model, frame, {"q": q, "v": v, "a": a}, reference)


def frame_classical_acceleration(model, q, v, a, frame, reference="local"):
    """The classical acceleration of the frame's origin, and the angular acceleration
    (getFrameClassicalAcceleration)."""
    return _of_frame(_algorithms.frame_acceleration, model, frame, {"q": q, "v": v, "a": a}, reference, True)


def com(model, q):
    """Centre of mass in world coordinates."""
    return _call(_algorithms.com, model, q=q)


def kinetic_energy(model, q, v):
    """1/2 v^T M v."""
    return _call(_algorithms.kinetic_energy, model, q=q, v=v)[..., 0]


def potential_energy(model, q):
    """-m g . c, zero with the centre of mass at the world origin (as Pinocchio)."""
    return _call(_algorithms.potential_energy, model, q=q)[..., 0]


def total_mass(model):
    return model.total_mass


def coriolis(model, q, v):
    """Christoffel-consistent Coriolis matrix C(q, v): C v = nle - g, M-dot - 2C skew (seed 002 Alg. 1)."""
    return _call(_algorithms.coriolis, model, q=q, v=v)


def christoffel(model, q):
    """Christoffel symbols of the first kind Gamma[i, j, k], C[i, j] = sum_k Gamma[i, j, k] v[k] (seed 002 Alg. 2)."""
    return _call(_algorithms.christoffel, model, q=q)


def minv(model, q):
    """M(q)^-1 by articulated-body impulses (seed 001 Alg. 1 and 2)."""
    return _call(_algorithms.minv, model, q=q)


def minv_times(model, q, tau):
    """M(q)^-1 tau in O(n)."""
    return _call(_algorithms.minv_times, model, q=q, tau=tau)


def fd_crba(model, q, v, tau):
    """Forward dynamics through CRBA and a sparse L^T D L factorization of M."""
    return _call(_algorithms.fd_crba, model, q=q, v=v, tau=tau)


def com_velocity(model, q, v):
    return _call(_algorithms.com_velocity, model, q=q, v=v)


def spatial_momentum(model, q, v):
    """[linear; angular] momentum about the world origin, world axes."""
    return _call(_algorithms.spatial_momentum, model, q=q, v=v)


def centroidal_momentum(model, q, v):
    """h_G = [linear; angular about the centre of mass]."""
    x = _Inputs()
    return x.output(_algorithms.centroidal_momentum(model, OPS, x.vector(q, model.nq, "q"),
                                                  x.vector(v, model.nv, "v")))


def centroidal_map(model, q):
    """A_G (6 x nv) with A_G v = h_G."""
    return _call(_algorithms.centroidal_map, model, q=q)


def body_motion(model, q, v, a):
    """Each body's [w, v_O, w-dot, a_O] in body coordinates (no gravity), shape (nbodies, 12)."""
    return _call(_algorithms.body_motion, model, q=q, v=v, a=a)


def point_jacobian(model, q, frame, point):
    """3 x nv: world velocity of a point fixed in `frame` (frame coordinates) = J v."""
    J = _of_frame(_algorithms.frame_jacobian_of_body, model, frame, {"q": q}, "local_world_aligned", point=point)
    return J[..., :3, :]


def point_velocity(model, q, v, frame, point):
    """World velocity of the point."""
    return _of_frame(_algorithms.frame_velocity, model, frame, {"q": q, "v": v}, "local_world_aligned",
                     point=point)[..., :3]


def point_acceleration(model, q, v, a, frame, point):
    """World acceleration of the point: J a + J-dot v."""
    return _of_frame(_algorithms.frame_acceleration, model, frame, {"q": q, "v": v, "a": a}, "local_world_aligned",
                     True, point=point)[..., :3]


def point_gamma(model, q, v, frame, point):
    """The contact Hessian term -J-dot v (seed 000 §6.4)."""
    return -point_acceleration(model, q, v, np.zeros(np.shape(v)), frame, point)


def _frame_name(frame):
    return frame if isinstance(frame, str) else frame.name


def _contact_terms(model, q, v, contacts, gamma=True):
    """The parsed contacts, G and (with gamma) gamma, assembled from the point functions."""
    contacts = _contact.parse_contacts([(_frame_name(c[0]),) + tuple(c[1:]) for c in contacts])
    G = _contact.constraint_jacobian(contacts, lambda frame, point: point_jacobian(model, q, frame, point))
    if not gamma:
        return contacts, G, None
    return contacts, G, _contact.constraint_bias(contacts, lambda frame, point: point_gamma(model, q, v, frame, point))


def contact_dynamics(model, q, v, tau, contacts, damping=0.0):
    """Seed 000 eq. (7): (q-ddot, lambda) with M q-ddot = tau - nle + G^T lambda and
    G q-ddot + G-dot v = 0. contacts: [(frame, point, normal or None)], a normal (world
    axes) for a 1-D constraint, None for the 3-D point constraint."""
    _, G, gamma = _contact_terms(model, q, v, contacts)
    return _contact.contact_dynamics(minv(model, q), nle(model, q, v), np.asarray(tau, dtype=float), G, gamma, damping)


def impulse_dynamics(model, q, v_minus, contacts, restitution=0.0, damping=0.0):
    """Seed 000 eq. (10): (v+, impulses) with G v+ = -restitution G v-."""
    _, G, _ = _contact_terms(model, q, v_minus, contacts, gamma=False)
    return _contact.impulse_dynamics(minv(model, q), np.asarray(v_minus, dtype=float), G, restitution, damping)


def contact_inertia(model, q, contacts):
    """The contact-space inverse inertia G M^-1 G^T (seed 001 §6.3)."""
    _, G, _ = _contact_terms(model, q, None, contacts, gamma=False)
    return G @ minv(model, q) @ G.T


# ------------------------------------------------------------ derivatives ----------------

def _split(out, count):
    """(count, n, n) stacked matrices (batch first) -> a tuple of count arrays."""
    return tuple(out[..., k, :, :] for k in range(count))


def rnea_derivatives(model, q, v, a):
    """(d tau / dq, d tau / dv) at (q, v, a); q in the tangent space (Pinocchio's
    computeRNEADerivatives; d tau / da is M)."""
    return _split(_call(_derivatives.rnea_derivatives, model, q=q, v=v, a=a), 2)


def nle_derivatives(model, q, v):
    """(d nle / dq, d nle / dv)."""
    return _split(_call(_derivatives.nle_derivatives, model, q=q, v=v), 2)


def gravity_derivatives(model, q):
    """d g / dq (computeGeneralizedGravityDerivatives)."""
    return _call(_derivatives.gravity_derivatives, model, q=q)


def aba_derivatives(model, q, v, tau):
    """(d qdd / dq, d qdd / dv, d qdd / d tau = M^-1) (computeABADerivatives)."""
    return _split(_call(_derivatives.aba_derivatives, model, q=q, v=v, tau=tau), 3)


def _frame_derivatives(function, model, frame, reference, states):
    f = _frame(model, frame)
    placement = _frames.placement_entries(f.placement)
    x = _Inputs()
    values = [(name, x.vector(value, model.nq if name == "q" else model.nv, name)) for name, value in states.items()]
    run = lambda m, ops, *args: function(m, ops, f.body, placement, *args, reference)
    blocks = _derivatives.derivatives_of(model, OPS, run, values, tuple(states))
    return tuple(x.output(block) for block in blocks)


def frame_velocity_derivatives(model, q, v, frame, reference="local"):
    """(d/dq, d/dv) of the frame's spatial velocity (Pinocchio's getFrameVelocityDerivatives)."""
    return _frame_derivatives(_algorithms.frame_velocity, model, frame, reference, {"q": q, "v": v})


def frame_acceleration_derivatives(model, q, v, a, frame, reference="local"):
    """(d/dq, d/dv, d/da) of the frame's spatial acceleration (getFrameAccelerationDerivatives)."""
    return _frame_derivatives(_algorithms.frame_acceleration, model, frame, reference, {"q": q, "v": v, "a": a})


def contact_dynamics_derivatives(model, q, v, tau, contacts, damping=0.0):
    """(ddq_dq, ddq_dv, ddq_dtau, dlambda_dq, dlambda_dv, dlambda_dtau) of contact_dynamics with
    contacts declared as at build time ("FRAME:3d", ...) (computeConstraintDynamicsDerivatives)."""
    from ..algorithms import constrained
    declared = constrained.parse_contacts(model, contacts)
    x = _Inputs()
    args = [x.vector(q, model.nq, "q"), x.vector(v, model.nv, "v"), x.vector(tau, model.nv, "tau")]
    return tuple(x.output(block) for block in _derivatives.contact_dynamics_derivatives(model, OPS, declared, *args, [float(damping)]))


def integrate(model, q, v, dt=1.0):
    """q (+) v dt (Pinocchio's integrate)."""
    x = _Inputs()
    args = [x.vector(q, model.nq, "q"), x.vector(v, model.nv, "v")]
    return x.output(_configuration.integrate(model, OPS, *args, [float(dt)]))


def difference(model, q0, q1):
    """The velocity v with integrate(q0, v, 1) = q1 (Pinocchio's difference)."""
    x = _Inputs()
    return x.output(_configuration.difference(model, OPS, x.vector(q0, model.nq, "q0"), x.vector(q1, model.nq, "q1")))


# ------------------------------------------------------------ identification -------------

def regressor(model, q, v, a):
    """Y (nv x 10 nbodies) with Y pi = rnea(q, v, a) (computeJointTorqueRegressor)."""
    return _call(_regressor.regressor, model, q=q, v=v, a=a)


def parameters(model):
    """pi: per body m, m c, and the rotational inertia about the body origin (xx xy yy xz yz zz)."""
    return _regressor.parameters(model)


def base_parameters(model):
    """The model's BaseParameters (columns of the base regressor, K with beta = K pi), from
    seeded random states; computed once per model."""
    found = model.__dict__.get("_base_parameters")
    if found is None:
        found = _regressor.base_parameters(model, lambda q, v, a: regressor(model, q, v, a))
        model.__dict__["_base_parameters"] = found
    return found


def base_regressor(model, q, v, a):
    """Y_b = Y[:, base columns]: Y_b K pi = rnea(q, v, a), full column rank."""
    return _call(_regressor.base_regressor, model, q=q, v=v, a=a)
