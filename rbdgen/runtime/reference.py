"""The NumPy reference backend: the algorithms run on numbers.

Each function takes the model first, then arrays. A leading batch dimension is accepted:
q of shape (B, nq) etc. returns (B, ...), computed vectorised (each scalar of the algorithm
becomes an array of B values). Spatial vectors at this boundary are Pinocchio's
[linear; angular]; internally they are [angular; linear]. The algorithms are called through
rbdgen.algorithms.mimic, as the generator calls them: in the model's own coordinates when it
has mimic joints.

The functions of states are made from the function table that generates the C
(rbdgen.table.functions): the same inputs, algorithm, shapes and documentation. Written
here are what a module assembles around its C: frames and points by name and contacts chosen
at call time.
"""

import math

import numpy as np

from ..algorithms import NumericOps
from ..bindings import contact as _contact
from ..algorithms import derivatives as _derivatives
from ..algorithms import frames as _frames
from ..algorithms import regressor as _regressor
from ..table import functions as _table
from ..table.description import STATE, apply_overloads, public_doc, public_keywords
from ..table.frames import POINTS
from ..table.inputs import INPUTS as _INPUTS
from ..errors import ModelError
from ..model import conventions as _conventions
from ..model import parameters as _parameters


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


# ------------------------------------------------------------ the functions of states -----

def _values(model, spec, arrays, body=None):
    """The table's algorithm for `spec` run on numbers (one state, or a batch with a leading B;
    for a function of a frame, on `body`, the placement the last of `arrays`), the result in the
    generated module's shapes: a float for a scalar, a tuple of arrays for a result with parts."""
    x = _Inputs()
    args = []
    *arrays, params = arrays
    if model.parameters:
        arrays.append(_parameters.parameters_of(model).nominal if params is None else params)
    elif params is not None:
        raise ValueError("params: this model has no parameters; load it with rbdgen.model.parameters.with_parameters")
    for (name, size), value in zip(spec.input_sizes(model), arrays):
        row = _INPUTS[name]
        if row.shared or (row.broadcast and np.ndim(value) == 1):   # one value for every state
            args.append([_one_number(value, name)] if size == 1 else [float(e) for e in _shared_vector(value, size, name)])
        else:
            args.append(x.vector(value, size, name))
    values = x.output(spec.evaluate(model, OPS, body, *args))
    lead = () if x.batch is None else (x.batch,)
    values = values.reshape(lead + tuple(spec.output(model)))
    if spec.scalar:
        return values[..., 0]
    if not spec.parts:
        return values
    parts, start = [], 0
    for _, shape in spec.parts(model):
        stop = start + math.prod(shape)
        parts.append(values[..., start:stop].reshape(lead + tuple(shape)))
        start = stop
    return tuple(parts)


def _from_table(spec):
    """The reference's function for a function of states of the table (rbdgen.table.functions):
    the same inputs, defaults, overloads (table.description), algorithm, shapes and
    documentation, with the model first and params last."""
    inputs = [_INPUTS[n] for n in spec.inputs]
    states = [x.name for x in inputs if x.role == STATE]
    parameters = [("model", _contact.REQUIRED)] + [(n, _contact.REQUIRED) for n in states] \
        + list(public_keywords(inputs, spec.overloads)) + [("params", None)]
    names = [n for n, _ in parameters]

    def call(model, *values):
        given = dict(zip(names[1:], values))
        of = lambda name: _values(model, _table.BY_NAME[name], tuple(given[n] for n in _table.BY_NAME[name].inputs)
                                  + (given["params"],))
        name = apply_overloads(spec.overloads, given, added=of, forces=lambda overload, value: _forces(model, value))
        return of(spec.name if name is None else name)
    return _contact.public_function(spec.name, parameters, call, public_doc(spec.doc, spec.overloads), __name__)


def _shared_vector(value, n, what):
    array = _contact.real_array(value, what)
    if array.shape != (n,):
        raise ValueError(f"{what}: expected ({n},), got {array.shape}")
    return array


def _one_number(value, what):
    """A parameter of a call (dt, damping): one real number."""
    array = _contact.real_array(value, what)
    if array.size != 1:
        raise ValueError(f"{what}: expected one number, got shape {array.shape}")
    return float(array.reshape(-1)[0])


_TABLE = {spec.name: _from_table(spec) for spec in _table.FUNCTIONS if not spec.per_body}
globals().update(_TABLE)


def project_configuration(model, q, tol=1e-9, iterations=20, params=None):
    """q moved onto the loops of a closed chain, as the module's project_configuration."""
    return _contact.project_configuration(q, lambda x: loop_newton_step(model, x, params=params), tol=tol,
                                          iterations=iterations)


def constrained_inverse_dynamics(model, q, v, a, actuated, *, params=None, tol=1e-9):
    """(tau, lambda), as the module's constrained_inverse_dynamics; `actuated`: joint names or
    a mask of nv booleans."""
    mask = _contact.actuated_mask(actuated, [(j.name, j.idx_v, j.nv) for j in model.joints], model.nv)
    G = loop_jacobian(model, q, params=params)
    drift = np.einsum("...ij,...j->...i", G, a) - loop_gamma(model, q, v, params=params)
    return _contact.constrained_inverse_dynamics(rnea(model, q, v, a, params=params), G, mask, drift=drift, tol=tol)


def to_mujoco(model, q, v=None):
    """(qpos, qvel) in MuJoCo's layout (rbdgen.model.conventions), as module.to_mujoco."""
    return _conventions.mujoco_layout(_joint_kinds(model), model.nq, model.nv, q, v, to=True)


def from_mujoco(model, qpos, qvel=None):
    """(q, v) from MuJoCo's qpos and qvel, as module.from_mujoco."""
    return _conventions.mujoco_layout(_joint_kinds(model), model.nq, model.nv, qpos, qvel, to=False)


def _joint_kinds(model):
    return tuple((j.type, j.idx_q, j.idx_v) for j in model.joints)


def total_mass(model):
    return model.total_mass


def _forces(model, f_ext):
    """f_ext (nbodies, 6) or (B, nbodies, 6) as the table's functions take it: (..., 6 nbodies)."""
    array = _contact.real_array(f_ext, "f_ext")
    nb = model.nbodies
    if array.shape[-2:] != (nb, 6) or array.ndim not in (2, 3):
        raise ValueError(f"f_ext: expected ({nb}, 6) or (B, {nb}, 6), got {array.shape}")
    return array.reshape(array.shape[:-2] + (6 * nb,))



def _frame(model, frame):
    """A frame given by name (ValueError for an unknown one: a bad argument) or as a Frame."""
    if not isinstance(frame, str):
        return frame
    try:
        return model.frame(frame)
    except ModelError as exc:
        raise ValueError(str(exc)) from None


def _frame_quantity(model, family, reference, frame, states, *, point=None, params=None):
    """A frame quantity of the table on numbers, by frame name (or Frame), at `point` in the
    frame if given."""
    spec = _table.BY_NAME[f"{family}_{reference}" if reference else family]
    f = _frame(model, frame)
    placement = _frames.placement_entries(f.placement)
    if point is not None:
        placement = _contact.point_placement(placement, point)
    return _values(model, spec, tuple(states) + (placement, params), f.body)


# The public functions of frames and points (rbdgen.bindings.contact), as the module's, with
# the model first.
_KEYWORDS = (("params", None),)
for _spec in _table.FUNCTIONS:
    if _spec.per_body and _spec.family not in globals():
        globals()[_spec.family] = _contact.frame_function(
            _spec.family, _spec.inputs[:-1], _spec.default_reference, _spec.family_doc, _frame_quantity,
            _frames.REFERENCE_FRAMES, lead=("model",), keywords=_KEYWORDS, module=__name__)
for _name, _point in POINTS.items():
    globals()[_name] = _contact.point_function(_name, _point.to_json(), _frame_quantity, lead=("model",),
                                               keywords=_KEYWORDS, module=__name__)
del _spec, _name, _point


def _frame_name(frame):
    return frame if isinstance(frame, str) else frame.name


def _contact_terms(model, q, v, contacts, gamma=True, params=None):
    """The parsed contacts, G and (with gamma) gamma, assembled from the point functions."""
    contacts = _contact.parse_contacts([(_frame_name(c[0]),) + tuple(c[1:]) for c in contacts])
    G = _contact.constraint_jacobian(contacts, lambda frame, point: point_jacobian(model, q, frame, point, params=params))
    if not gamma:
        return contacts, G, None
    return contacts, G, _contact.constraint_bias(
        contacts, lambda frame, point: point_gamma(model, q, v, frame, point, params=params))


def contact_dynamics(model, q, v, tau, contacts, damping=0.0, *, params=None):
    """RBDL paper eq. (7), seed 000: (q-ddot, lambda) with M q-ddot = tau - nle + G^T lambda and
    G q-ddot + G-dot v = 0. contacts: [(frame, point, normal or None)], a normal (world
    axes) for a 1-D constraint, None for the 3-D point constraint."""
    _, G, gamma = _contact_terms(model, q, v, contacts, params=params)
    return _contact.contact_dynamics(minv(model, q, params=params), nle(model, q, v, params=params),
                                     np.asarray(tau, dtype=float), G, gamma, damping)


def impulse_dynamics(model, q, v_minus, contacts, restitution=0.0, damping=0.0, *, params=None):
    """RBDL paper eq. (10), seed 000: (v+, impulses) with G v+ = -restitution G v-."""
    _, G, _ = _contact_terms(model, q, v_minus, contacts, gamma=False, params=params)
    return _contact.impulse_dynamics(minv(model, q, params=params), np.asarray(v_minus, dtype=float), G,
                                     restitution, damping)


def contact_inertia(model, q, contacts, params=None):
    """The contact-space inverse inertia G M^-1 G^T (Drumwright §6.3, seed 001)."""
    _, G, _ = _contact_terms(model, q, None, contacts, gamma=False, params=params)
    return G @ minv(model, q, params=params) @ G.T


# ------------------------------------------------------------ derivatives ----------------

def contact_dynamics_derivatives(model, q, v, tau, contacts, damping=0.0):
    """(ddq_dq, ddq_dv, ddq_dtau, dlambda_dq, dlambda_dv, dlambda_dtau) of contact_dynamics with
    contacts declared as at build time ("FRAME:3d", ...) (computeConstraintDynamicsDerivatives)."""
    from ..algorithms import constrained
    declared = constrained.parse_contacts(model, contacts)
    x = _Inputs()
    args = [x.vector(q, model.nq, "q"), x.vector(v, model.nv, "v"), x.vector(tau, model.nv, "tau")]
    return tuple(x.output(block) for block in _derivatives.contact_dynamics_derivatives(model, OPS, declared, *args, damping=[float(damping)]))


# ------------------------------------------------------------ identification -------------

def parameters(model):
    """pi: per body m, m c, and the rotational inertia about the body origin (xx xy yy xz yz zz)."""
    return _regressor.parameters(model)


def base_parameters(model):
    """The model's BaseParameters (columns of the base regressor, K with beta = K pi), from
    seeded random states."""
    return _regressor.base_parameters(model)
