"""The task space chosen at call time: frames by name, points fixed in them, and contacts and
impacts (RBDL paper §2.2, §2.3, seed 000; Drumwright §6.3, seed 001).

The public functions of frames and points are written here once, from the function table's
rows, for the generated module, the reference and JAX alike: each gives the computation of a
frame quantity (its C, the algorithm on numbers, the XLA FFI). A call-time contact list is
assembled from the point functions: each contact's rows of the constraint Jacobian G come from
its point's Jacobian, and its rows of gamma = -G-dot v from the point's acceleration at zero
joint acceleration. The small dense solves that follow run on NumPy. This file imports
nothing from rbdgen: the build copies it into every generated package, so the reference and
the generated module share one implementation.
"""

import inspect
import numbers

import numpy as np


def _vector3(x, what):
    x = real_array(x, what)
    if x.shape != (3,):
        raise ValueError(f"{what}: expected (3,), got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{what}: expected finite numbers, got {x}")
    return x


def dlpack_on_gpu(x):
    """Whether x says through DLPack that it lives on a CUDA GPU (kDLCUDA)."""
    try:
        return int(x.__dlpack_device__()[0]) == 2
    except Exception:   # (none, or a broken answer)
        return False


def _among_host_arrays(x, what):
    return TypeError(f"{what}: a GPU array ({type(x).__name__}) among host arrays; pass every state on the GPU as "
                     "PyTorch, CuPy or JAX arrays, or every one on the host")


def real_array(x, what):
    """x as a float64 array; TypeError for anything but real numbers (complex, strings, bool,
    other objects), which numpy would convert with at most a warning (complex: dropping the
    imaginary part). Object arrays of real numbers (huge ints, Fractions) are converted."""
    try:
        a = np.asarray(x)
    except ValueError:   # nested lists of unequal lengths
        raise ValueError(f"{what}: expected an array of one shape, got nested lists of unequal lengths") from None
    except TypeError:   # (PyTorch's CUDA tensors, CuPy's arrays: no implicit copy to the host)
        if hasattr(x, "__cuda_array_interface__") or dlpack_on_gpu(x):
            raise _among_host_arrays(x, what) from None
        raise
    if a.dtype.kind in "fiu":
        return a.astype(np.float64, copy=False)
    shown = a.dtype
    if a.dtype.kind == "O":
        bad = [e for e in a.flat if not isinstance(e, numbers.Real) or isinstance(e, bool)]
        if not bad:
            try:
                return a.astype(np.float64)
            except OverflowError:
                raise ValueError(f"{what}: a number is too large for float64") from None
        shown = type(bad[0]).__name__
    if hasattr(x, "__cuda_array_interface__") or dlpack_on_gpu(x):
        raise _among_host_arrays(x, what)
    raise TypeError(f"{what}: expected real numbers (float or integer), got {shown}")


def point_placement(placement, point):
    """The placement on its body of a point fixed in a frame (given in frame coordinates): the
    frame's placement (12 numbers: E row-major, then r) moved to the point, r + E^T point."""
    placement = np.asarray(placement, dtype=float)
    moved = placement.copy()
    moved[9:] += placement[:9].reshape(3, 3).T @ _vector3(point, "point")
    return moved


def parse_contacts(contacts):
    """[(frame, point, normal or None)] -> list of (frame, point (3,), unit normal or None)."""
    parsed = []
    for k, contact in enumerate(contacts):
        if len(contact) == 2:
            frame, point, normal = contact[0], contact[1], None
        elif len(contact) == 3:
            frame, point, normal = contact
        else:
            raise ValueError(f"contact {k}: expected (frame, point) or (frame, point, normal), got {contact!r}")
        point = _vector3(point, f"contact {k} point")
        if normal is not None:
            normal = _vector3(normal, f"contact {k} normal")
            largest = np.abs(normal).max()
            if not largest > 0:
                raise ValueError(f"contact {k}: normal {normal} has zero length; give a non-zero normal")
            normal = normal / largest   # (a direction of any size: no square overflows or underflows)
            normal = normal / np.linalg.norm(normal)
        parsed.append((frame, point, normal))
    if not parsed:
        raise ValueError("contacts: expected at least one (frame, point[, normal])")
    return parsed


def constraint_jacobian(contacts, point_jacobian):
    """G: one row per constrained direction (3 for a point, 1 along a world normal), from
    point_jacobian(frame, point) -> the point's 3 x nv world Jacobian (or B of them, (B, 3, nv),
    for a batch of states: then G is (B, rows, nv))."""
    rows = []
    for frame, point, normal in contacts:
        J = point_jacobian(frame, point)
        rows.append(J if normal is None else normal[None, :] @ J)
    return np.concatenate(rows, axis=-2)


def constraint_bias(contacts, point_gamma):
    """gamma = -G-dot v, from point_gamma(frame, point) -> minus the point's world acceleration
    at zero joint acceleration ((3,), or (B, 3) for a batch)."""
    rows = []
    for frame, point, normal in contacts:
        gamma = point_gamma(frame, point)
        rows.append(gamma if normal is None else (gamma @ normal)[..., None])
    return np.concatenate(rows, axis=-1)


def _number(value, what, high):
    """value as a float in [0, high]: TypeError for what is not a real number, ValueError for
    NaN, infinity and values outside."""
    x = np.asarray(value)
    if x.shape != () or x.dtype.kind not in "fiu":
        shape = f" of shape {x.shape}" if x.shape else ""
        raise TypeError(f"{what}: expected a real number, got {type(value).__name__}{shape}")
    x = float(x)
    if not (np.isfinite(x) and 0.0 <= x <= high):
        allowed = "a finite number >= 0" if high == np.inf else f"a number from 0 to {high:g}"
        raise ValueError(f"{what}: expected {allowed}, got {x!r}")
    return x


def check_damping(damping):
    """damping >= 0 and finite (0: no damping; redundant contacts then raise ValueError)."""
    return _number(damping, "damping", np.inf)


def check_restitution(restitution):
    """The coefficient of restitution, from 0 (plastic impact) to 1 (elastic)."""
    return _number(restitution, "restitution", 1.0)


# A pivot of G M^-1 G^T is clearly positive above this fraction of the largest (below: redundant
# constraints). The module's C entry points, this file and JAX read this one number.
PIVOT_CLEAR = 1e-12


def unclear_pivots(pivots):
    """Per state (rows of `pivots`), whether a pivot of G M^-1 G^T is not clearly positive
    (redundant contacts; NaN is not clear either)."""
    pivots = np.atleast_2d(pivots)
    return ~(pivots > PIVOT_CLEAR * np.abs(pivots).max(axis=-1, keepdims=True)).all(axis=-1)


def refuse_redundant(pivots, damping, contacts, what="contacts"):
    """ValueError when the contact-space matrix of `contacts` (or of the loops, with
    what="loops") had a pivot that is not clearly positive (the C computed the numbers
    regardless; they are not returned)."""
    if damping > 0:
        return
    if pivots.ndim == 1:   # one state: plain floats are quicker than NumPy on a few numbers
        values = pivots.tolist()
        limit = PIVOT_CLEAR * max(values)
        if all(x > limit for x in values):   # NaN is not good either
            return
    unclear = unclear_pivots(pivots)
    if unclear.any():
        state = int(np.argmax(unclear))
        where = f" (state {state} of the batch)" if pivots.ndim == 2 and len(pivots) > 1 else ""
        raise ValueError(f"{what} are redundant: {', '.join(contacts)} give a singular G M^-1 G^T{where}; "
                         "pass damping > 0 for a damped least-squares solve")


def project_configuration(q, step, *, tol, iterations):
    """q (one state or a batch) moved onto the loops of a closed chain by Newton's steps
    (`step`: q -> (the next q, the residual at q), loop_newton_step), until every residual is at
    most `tol`. ValueError when `iterations` steps do not get there."""
    q = np.array(q, dtype=float)
    for _ in range(iterations + 1):
        following, residual = step(q)
        worst = float(np.abs(residual).max(initial=0.0))
        if worst <= tol:
            return q
        q = following
    raise ValueError(f"project_configuration: the loops' residual is still {worst:.3g} after {iterations} Newton "
                     "steps; start nearer a closed configuration, or allow more iterations")


def actuated_mask(actuated, joints, nv):
    """The velocity coordinates of `actuated` (joint names, or a mask of nv booleans) as a mask;
    joints: (name, first velocity coordinate, count) of each joint."""
    if not isinstance(actuated, str) and len(actuated) and all(isinstance(x, str) for x in actuated):
        names = [name for name, _, _ in joints]
        mask = np.zeros(nv, dtype=bool)
        for name in actuated:
            if name not in names:
                raise ValueError(f"actuated: unknown joint {name!r}; {close_names(name, names)}joint_names lists them")
            _, first, count = joints[names.index(name)]
            mask[first:first + count] = True
        return mask
    mask = np.asarray(actuated)
    if mask.shape != (nv,) or mask.dtype.kind not in "bi":
        raise ValueError(f"actuated: expected joint names or a mask of {nv} booleans, got {actuated!r}")
    return mask.astype(bool)


def constrained_inverse_dynamics(tau_free, G, actuated, *, drift, tol):
    """(tau, lambda) with tau_free = tau + G^T lambda and tau zero off the `actuated` velocity
    coordinates (a boolean mask): the torques, of least norm with the multipliers, that
    produce a motion whose inverse dynamics is tau_free (rnea(q, v, a)), one state or a batch.
    drift: G a - gamma, zero for a motion the loops allow. ValueError when the motion breaks
    the loops, or no such torques exist (more of it than the actuators and loops can hold: a
    floating base without contacts, a passive joint's acceleration)."""
    tau_free, G, drift = np.asarray(tau_free, dtype=float), np.asarray(G, dtype=float), np.asarray(drift)
    broken = np.abs(drift).max(axis=-1, initial=0.0) > tol * np.maximum(np.abs(tau_free).max(axis=-1, initial=0.0), 1)
    if np.any(broken):
        raise ValueError(f"constrained_inverse_dynamics: the acceleration breaks the loops (G a - gamma = "
                         f"{float(np.abs(drift).max()):.3g}); give one with G a = gamma (loop_jacobian, loop_gamma)")
    columns = np.concatenate([np.broadcast_to(np.diag(actuated.astype(float)), G.shape[:-2] + (len(actuated),) * 2),
                              _transposed(G)], axis=-1)   # [S  G^T]
    solution = (np.linalg.pinv(columns, rcond=1e-10) @ tau_free[..., None])[..., 0]
    residual = np.abs((columns @ solution[..., None])[..., 0] - tau_free).max(axis=-1, initial=0.0)
    scale = np.maximum(np.abs(tau_free).max(axis=-1, initial=0.0), 1.0)
    if np.any(residual > tol * scale):
        state = int(np.argmax(residual / scale)) if residual.ndim else 0
        where = f" (state {state} of the batch)" if residual.ndim else ""
        raise ValueError(f"constrained_inverse_dynamics: no torques on the actuated coordinates give this motion{where} "
                         f"(a residual of {float(np.max(residual)):.3g} N or N m): the motion is not consistent with "
                         "the loops, or it needs force where there is no actuator (a floating base, a passive joint)")
    n = len(actuated)
    return solution[..., :n] * actuated, solution[..., n:]


def _times(A, x):
    """A x, for one matrix and vector or for stacks of them (a batch of states)."""
    return (A @ x[..., None])[..., 0]


def _transposed(A):
    return np.swapaxes(A, -1, -2)


def _contact_space_inverse(G, Minv, damping):
    """(G M^-1 G^T + damping 1)^-1, refusing redundant constraints unless damped (for one
    state, or a stack of them)."""
    Lambda_inv = G @ Minv @ _transposed(G)
    m = G.shape[-2]
    if damping > 0:
        return np.linalg.inv(Lambda_inv + damping * np.eye(m))
    rank = np.atleast_1d(np.linalg.matrix_rank(G, tol=1e-9 * np.maximum(1.0, np.abs(G).max(axis=(-2, -1)))))
    if (rank < m).any():
        state = int(np.argmax(rank < m))
        where = f" (state {state} of the batch)" if G.ndim == 3 else ""
        raise ValueError(f"contacts are redundant: the constraint Jacobian has rank {rank[state]} < {m} rows{where}; "
                         "remove a constraint or pass damping > 0 for a damped least-squares solve")
    return np.linalg.inv(Lambda_inv)


def contact_dynamics(Minv, bias, tau, G, gamma, damping=0.0):
    """RBDL paper eq. (7), seed 000: M a = tau - bias + G^T lambda with G a = gamma. Returns (a, lambda),
    for one state or a batch (a leading B on every argument)."""
    damping = check_damping(damping)
    a_free = _times(Minv, tau - bias)
    lam = _times(_contact_space_inverse(G, Minv, damping), gamma - _times(G, a_free))
    return a_free + _times(Minv, _times(_transposed(G), lam)), lam


def impulse_dynamics(Minv, v_minus, G, restitution=0.0, damping=0.0):
    """RBDL paper eq. (10), seed 000: v+ = v- + M^-1 G^T Lambda with G v+ = -e G v-. Returns (v+, Lambda),
    for one state or a batch."""
    restitution, damping = check_restitution(restitution), check_damping(damping)
    Lambda = -(1.0 + restitution) * _times(_contact_space_inverse(G, Minv, damping), _times(G, v_minus))
    return v_minus + _times(Minv, _times(_transposed(G), Lambda)), Lambda


def contact_inertia(Minv, G):
    """G M^-1 G^T, for one state or a batch."""
    return G @ Minv @ _transposed(G)


# ------------------------------------------------------------- frames and points, by name ---
# The public functions of frames and points, written once for the module (bindings/runtime.py),
# the reference (runtime/reference.py) and JAX (bindings/jax.py), from the function table's
# rows: each side gives `evaluate`, which computes a frame quantity its own way (generated C,
# the algorithm on numbers, the XLA FFI); the signatures, the reference frame's check, and the
# points' rows and signs are here.

def close_names(name, choices):
    """'did you mean 'a', 'b'? ' for the choices close to `name`, else ''."""
    import difflib
    close = difflib.get_close_matches(str(name), list(choices), n=3)
    return f"did you mean {', '.join(map(repr, close))}? " if close else ""


def check_reference(reference, references):
    if not isinstance(reference, str) or reference not in references:
        raise ValueError(f"reference {reference!r} is unknown; use one of {', '.join(references)}")


# A public function's parameter without a default, and the entry ("*", None) after which its
# parameters are keyword-only (as table.description's).
REQUIRED = inspect.Parameter.empty
KEYWORD_ONLY = "*"


def public_function(name, parameters, call, doc, module, *, hints=None):
    """The function `name` of `module` taking `parameters` ((name, default) each, REQUIRED for
    none; those after a ("*", None) entry by keyword only), as its signature says: it returns
    call(*values), every parameter's value in order. A call that gives every parameter by
    position is passed on as it is. hints: {keyword it does not take: what to do instead}, for
    the TypeError."""
    named = [(n, d) for n, d in parameters if n != KEYWORD_ONLY]
    names, marks = tuple(n for n, _ in named), [n for n, _ in parameters]
    positional = marks.index(KEYWORD_ONLY) if KEYWORD_ONLY in marks else len(names)
    defaults = {n: d for n, d in named if d is not REQUIRED}
    signature = (names, positional, defaults, hints or {})
    # for k positional arguments: the rest, (name, default) each, and their defaults when none is required
    rests = [named[k:] for k in range(positional + 1)]
    tails = [None if any(d is REQUIRED for _, d in rest) else tuple(d for _, d in rest) for rest in rests]
    known = frozenset(names)

    def function(*args, **keywords):
        k = len(args)
        if k <= positional:
            if not keywords:
                if tails[k] is not None:
                    return call(*args, *tails[k])
            elif keywords.keys() <= known:
                values = args + tuple(keywords.pop(n, d) for n, d in rests[k])
                if not keywords and not any(v is REQUIRED for v in values):   # (none left: none twice, none unknown)
                    return call(*values)
        return call(*_bound(name, signature, args, keywords))
    function.__name__ = function.__qualname__ = name
    function.__module__, function.__doc__ = module, doc
    kinds = [inspect.Parameter.POSITIONAL_OR_KEYWORD] * positional + \
        [inspect.Parameter.KEYWORD_ONLY] * (len(names) - positional)
    function.__signature__ = inspect.Signature([inspect.Parameter(n, kind, default=d)
                                                for (n, d), kind in zip(named, kinds)])
    return function


def keyword_names(parameters):
    """The names of `parameters` (as public_function takes them), without the keyword-only mark."""
    return [n for n, _ in parameters if n != KEYWORD_ONLY]


def _bound(name, signature, args, keywords):
    """Every parameter's value in order, as Python binds a call (and its TypeErrors, with the
    `hints` for keywords it does not take); signature: (names, how many of them may be given by
    position, defaults, hints)."""
    names, positional, defaults, hints = signature
    if len(args) > positional:
        raise TypeError(f"{name}() takes {positional} positional arguments but {len(args)} were given")
    twice = [k for k in keywords if k in names[:len(args)]]
    unknown = [k for k in keywords if k not in names]
    if twice or unknown:
        raise TypeError(f"{name}() got multiple values for argument '{twice[0]}'" if twice
                        else f"{name}() got an unexpected keyword argument '{unknown[0]}'"
                        + (f": {hints[unknown[0]]}" if unknown[0] in hints else ""))
    values = list(args)
    for n in names[len(args):]:
        if n in keywords:
            values.append(keywords[n])
        elif n in defaults:
            values.append(defaults[n])
        else:
            raise TypeError(f"{name}() missing required argument: '{n}'")
    return values


def frame_function(family, states, default, doc, evaluate, references, *, lead=(), keywords=(), module=None):
    """The public function `family`(*lead, *states, frame[, reference=default], *keywords): a
    frame quantity by frame name (or index) and reference frame (default None: it takes none).
    evaluate(*lead, family, reference, frame, states, **keywords) computes it; `keywords` are
    passed through with their defaults (out=None, threads=0); the function is `module`'s."""
    parameters = [(x, REQUIRED) for x in (*lead, *states, "frame")] + ([("reference", default)] if default else []) \
        + list(keywords)
    first, count, names = len(lead), len(states), keyword_names(keywords)

    def call(*values):
        reference = values[first + count + 1] if default else None
        if default:
            check_reference(reference, references)
        return evaluate(*values[:first], family, reference, values[first + count],
                        tuple(values[first:first + count]), **dict(zip(names, values[len(values) - len(names):])))
    return public_function(family, parameters, call, doc, module)


def zeros_like(x):
    """Zeros of x's shape and of its kind: on the GPU where x is a PyTorch, CuPy or JAX GPU
    array (NumPy's zeros_like reaches CuPy's through __array_function__), else NumPy's."""
    top = type(x).__module__.partition(".")[0]
    if top == "torch":
        return x.new_zeros(x.shape)
    if top in ("jax", "jaxlib"):
        import jax.numpy
        return jax.numpy.zeros_like(x)
    return np.zeros_like(x, dtype=float) if hasattr(x, "__array_function__") else np.zeros(np.shape(x))


def point_function(name, row, evaluate, *, finish=None, lead=(), keywords=(), module=None):
    """The public function `name`(*lead, *states, frame, point, *keywords) of the function
    table's point `row` (its JSON: family, states, doc, reference, matrix, at_rest): the linear
    rows of the frame quantity `family` in `reference` at `point`, fixed in the frame (frame
    coordinates); at rest (point_gamma, -J-dot v): at zero q-ddot, negated.
    evaluate(*lead, family, reference, frame, states, point=point, **keywords) computes the frame
    quantity; finish(rows, out) returns the result (into out=)."""
    states, source, reference = row["states"], row["family"], row["reference"]
    gamma, matrix = row["at_rest"], row["matrix"]
    parameters = [(x, REQUIRED) for x in (*lead, *states, "frame", "point")] + list(keywords)
    first, count, names = len(lead), len(states), keyword_names(keywords)

    def call(*values):
        state = tuple(values[first:first + count])
        frame, point = values[first + count], values[first + count + 1]
        given = dict(zip(names, values[len(values) - len(names):]))
        out = given.pop("out", None)
        if gamma:   # q-ddot zero: the acceleration's velocity term
            state = state + (zeros_like(state[-1]),)
        value = evaluate(*values[:first], source, reference, frame, state, point=point, **given)
        linear = -value[..., :3] if gamma else value[..., :3, :] if matrix else value[..., :3]
        return finish(linear, out) if finish else linear
    return public_function(name, parameters, call, row["doc"], module)
