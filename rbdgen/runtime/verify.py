"""Compare a generated module with the NumPy reference at random states.

Every C function of the module is checked, whatever its name: the function table that
generated it also runs it on numbers (`FunctionSpec.run` with NumericOps, the reference),
on one batch of states through the module's batch path and on single states through its
direct entry points. The task-space functions the module assembles from those (frames,
points, contacts) are checked against `rbdgen.reference` too. Any NaN or infinity, in the
module's answer or in the reference, is a failure: a number that cannot be checked is not
a verified number.

Agreement within 100 eps (normwise, relative, per output part and state) passes. Where the
two disagree by more, both are correct only if they round differently on an ill-conditioned
robot; extended precision arbitrates (rbdgen.runtime.accuracy): the generated function passes
if its own error is within the budget of its table algorithm's error on the same states.
So a build never fails because two correct programs round differently, and never passes a
program that lost digits the reference keeps. The functions assembled in NumPy have no
extended-precision run; a solve among them may differ by 100 eps times the condition of its
solves (cond(M), and for the contact functions also that of the damped Delassus matrix).
"""

import functools

import numpy as np

from ..algorithms import constrained
from ..algorithms.frames import REFERENCE_FRAMES, placement_entries
from ..table import functions as fn_table
from ..table.frames import POINTS
from ..table.inputs import INPUTS, VERIFY_DAMPING
from . import reference
from ..model.states import random_state
from .accuracy import EPS, FLOOR, budget, double_values, extended_values, forward_errors, part_slices

SINGLE_CALLS = 2       # states also called one at a time (the direct C entry points)
_GLUE_FRAMES = 4       # frames checked per state for placements and Jacobians



def _relative_error(actual, expected):
    """Normwise relative error max |actual - expected| / max |expected|; infinite for any
    non-finite value or a shape mismatch."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    if actual.shape != expected.shape:
        return float("inf")
    return float(forward_errors(actual.reshape(1, -1), expected.reshape(1, -1))[0])


def random_inputs(model, rng, batch):
    """Arrays of shape (batch, size) for every input a generated function can take, each drawn
    by its row of the input table (one random state serves q, v and a)."""
    drawn = []

    def draw(k):
        while len(drawn) <= k:
            drawn.append(random_state(model, rng, batch))
        return drawn[k]
    return {name: row.sample(model, rng, batch, draw) for name, row in INPUTS.items() if row.sample}


def reference_values(model, spec, inputs, body=None):
    """The function of the table run on numbers: (B, *shape) for the batch `inputs` (for a
    function of a frame, the frame on `body` whose placement is inputs["placement"])."""
    return double_values(model, spec, {name: np.asarray(inputs[name]) for name in spec.arguments(model)}, body)


def _frames_to_check(frame_names, model, rng):
    """A few of the frames served, on different bodies where possible (and the world's)."""
    served = [model.frame(name) for name in frame_names]
    by_body = {}
    for frame in served:
        by_body.setdefault(frame.body, frame)
    picks = list(by_body.values())
    if len(picks) > _GLUE_FRAMES:
        picks = [picks[k] for k in sorted(rng.choice(len(picks), size=_GLUE_FRAMES, replace=False))]
    return picks


class Check:
    """One comparison: the module's values and the reference's, (B, ...) over states, with
    the output parts, and `truth(states)` (extended precision at those state indices) or,
    for the functions assembled in NumPy, None and the condition number `kappa` that scales
    their tolerance."""

    def __init__(self, name, actual, expected, parts=(slice(None),), truth=None, kappa=1.0):
        # kappa: a number, or a function of the state indices (cond(M) is computed only if needed)
        self.name, self.parts, self.truth, self.kappa = name, parts, truth, kappa
        expected = np.asarray(expected, dtype=float)
        self.expected = expected.reshape(expected.shape[0], -1)
        actual = np.asarray(actual, dtype=float)
        self.actual = actual.reshape(actual.shape[0], -1) if actual.size == expected.size else None


def _function_calls(model, names, contacts, inputs, frames):
    """(name, spec, its batch of inputs, frame) of each C function's check: a function of a frame
    once for each frame checked (its placement as an input), any other once (frame None)."""
    for name in names:
        spec = fn_table.lookup(name, contacts)
        if spec.per_body:
            for frame in frames:
                placement = np.array(placement_entries(frame.placement), dtype=float)
                yield name, spec, dict(inputs, placement=np.broadcast_to(placement, (len(inputs["q"]), 12))), frame
        else:
            yield name, spec, inputs, None


def verification_draws(model, frame_names, states=16, seed=0):
    """The seeded random states and frames of a verification: (rng, inputs, frames), the
    generator left where the task-space checks draw on."""
    rng = np.random.default_rng(seed)
    inputs = random_inputs(model, rng, max(1, states))
    return rng, inputs, _frames_to_check(frame_names, model, rng)


def reference_table(model, names, frame_names, contacts, states=16, seed=0):
    """{(function, frame name or None): the reference's values} that verify_module compares the C functions
    with, computed before the module exists: a build runs it in a worker beside the
    compilation, since it is most of verification's time (docs/performance.md, Cold builds).
    contacts: the declared ones, parsed."""
    _, inputs, frames = verification_draws(model, frame_names, states, seed)
    return {_key(name, frame): reference_values(model, spec, batch, None if frame is None else frame.body)
            for name, spec, batch, frame in _function_calls(model, names, contacts, inputs, frames)}


def _key(name, frame):
    return name, None if frame is None else frame.name


def generated_checks(module, model, inputs, frames, expected):
    """A Check for every C function, batched and single (the reference's values from
    `expected` where it has them)."""
    contacts = constrained.parse_contacts(model, getattr(module, "contacts", ()))
    for name, spec, batch, frame in _function_calls(model, module.operation_counts, contacts, inputs, frames):
        body = None if frame is None else frame.body
        if frame is not None:
            function = functools.partial(getattr(module, "_" + name), body)
        else:
            function = getattr(module, ("_declared_" if spec.declared else "") + name)
            if model.parameters:   # by keyword: rnea and aba take f_ext before it
                function = functools.partial(_params_last, function)
        args = [batch[arg][0] if INPUTS[arg].shared else batch[arg] for arg in spec.arguments(model)]
        yield from _calls(name, function, args, model, spec, batch, body=body, expected=expected.get(_key(name, frame)))


def _params_last(function, *args):
    return function(*args[:-1], params=args[-1])


def _calls(name, function, args, model, spec, inputs, *, body=None, expected=None):
    """The function called on the batch, then on its first states one at a time."""
    if expected is None:
        expected = reference_values(model, spec, inputs, body)
    parts = part_slices(model, spec)
    states = {k: np.asarray(v) for k, v in inputs.items() if k in spec.arguments(model)}

    def truth(indices, offset=0):
        return extended_values(model, spec, states, [offset + k for k in indices], body)

    def condition(indices, offset=0):
        if not spec.solves:
            return 1.0
        return max(float(np.linalg.cond(reference.crba(model, states["q"][offset + k]))) for k in indices)
    yield Check(name, _flat(function(*args), expected.shape), expected, parts, truth, condition)
    shared = [INPUTS[arg].shared for arg in spec.arguments(model)]
    for k in range(min(SINGLE_CALLS, expected.shape[0])):
        single = function(*[x if s else x[k] for x, s in zip(args, shared)])
        yield Check(name, _flat(single, expected.shape[1:])[None], expected[k:k + 1], parts,
                    functools.partial(truth, offset=k), functools.partial(condition, offset=k))


def judged(model, spec, values, inputs, margin=1.0):
    """judge() of the values (B, ...) that a program of `spec` gave on verification's states
    (`inputs`, verification_draws'), within `margin` times less than verify_module allows (the
    compiled function rounds a little differently from the program run in NumPy). The
    generator asks before it keeps a variant measured on fewer states."""
    verdict = judge(next(_calls(spec.name, lambda *args: values, [], model, spec, inputs)), FLOOR / margin)
    if "truth_error" in verdict:
        verdict["ok"] = verdict["truth_error"] <= verdict["bound"] / margin
    return verdict


def _flat(result, shape):
    """A function's result as one array of `shape` (a tuple of parts is concatenated)."""
    if isinstance(result, tuple):
        lead = len(shape) - 1
        result = np.concatenate([np.reshape(p, np.shape(p)[:lead] + (-1,)) for p in result], axis=-1)
    return np.asarray(result, dtype=float).reshape(shape)


def task_space_checks(module, model, inputs, rng):
    """A Check for each frame, point and contact function the module assembles in NumPy."""
    have = set(dir(module))
    frames = _frames_to_check(module.frames, model, rng) if "frames" in have else []
    if not frames:
        return
    q, v, a, tau = (inputs[k][0] for k in ("q", "v", "a", "tau"))
    one = lambda name, actual, expected, kappa=1.0: Check(name, np.ravel(actual)[None], np.ravel(expected)[None],
                                                        kappa=kappa)
    for frame in frames:
        if "frame_placement" in have:
            (R, p), (R_ref, p_ref) = module.frame_placement(q, frame.name), reference.frame_placement(model, q, frame)
            yield one("frame_placement", np.concatenate([np.ravel(R), p]), np.concatenate([np.ravel(R_ref), p_ref]))
        for ref in REFERENCE_FRAMES:
            if f"frame_jacobian_{ref}" in module.operation_counts:
                yield one("frame_jacobian", module.frame_jacobian(q, frame.name, ref),
                          reference.frame_jacobian(model, q, frame, ref))
    frame, point = frames[0].name, rng.normal(size=3) * 0.1
    states = {"q": q, "v": v, "a": a}
    for name, row in POINTS.items():
        args = [states[s] for s in row.states]
        if name in have:
            yield one(name, getattr(module, name)(*args, frame, point), getattr(reference, name)(model, *args, frame, point))
    # One 3-D contact on the deepest moving body, damped: a robot that cannot move the point in
    # every direction makes the exact solve singular, and the check is of the assembly anyway.
    moving = [f for f in frames if f.body >= 0]
    if moving and "point_gamma" in have and {"minv", "nle"} <= set(module.operation_counts):
        contacts = [(max(moving, key=lambda f: len(model.support(f.body))).name, point, None)]
        kappa = _contact_condition(model, q, contacts)
        yield one("contact_dynamics (call-time contacts)",
                  np.concatenate(module.contact_dynamics(q, v, tau, contacts, damping=VERIFY_DAMPING)),
                  np.concatenate(reference.contact_dynamics(model, q, v, tau, contacts, damping=VERIFY_DAMPING)), kappa)
        yield one("impulse_dynamics (call-time contacts)",
                  np.concatenate(module.impulse_dynamics(q, v, contacts, 0.5, damping=VERIFY_DAMPING)),
                  np.concatenate(reference.impulse_dynamics(model, q, v, contacts, 0.5, damping=VERIFY_DAMPING)), kappa)
        yield one("contact_inertia (call-time contacts)", module.contact_inertia(q, contacts),
                  reference.contact_inertia(model, q, contacts), kappa)


def _contact_condition(model, q, contacts):
    """cond(M) x cond(G M^-1 G^T + damping I): the solves behind a contact function. A point a
    robot can move in one direction only leaves the damped Delassus matrix with a condition
    near 1 / damping even where M is the identity (iris: rotors)."""
    delassus = reference.contact_inertia(model, q, contacts)
    return float(np.linalg.cond(reference.crba(model, q)) *
                 np.linalg.cond(delassus + VERIFY_DAMPING * np.eye(len(delassus))))


def judge(check, close=FLOOR):
    """{"error": worst disagreement with the reference, "ok", and where extended precision
    arbitrated: "truth_error" (the module's), "reference_error" and "bound"}."""
    if check.actual is None:
        return {"error": float("inf"), "ok": False}
    disagreement = forward_errors(check.actual, check.expected, check.parts)
    result = {"error": float(disagreement.max())}
    apart = [int(k) for k in np.flatnonzero(~(disagreement <= close))]
    if not apart:
        return dict(result, ok=True)
    if check.truth is None or not np.isfinite(disagreement[apart]).all():
        bound = close * (check.kappa(apart) if callable(check.kappa) else check.kappa)
        return dict(result, ok=bool(disagreement.max() <= bound), bound=bound)
    truth = check.truth(apart)
    own = float(forward_errors(check.actual[apart], truth, check.parts).max())
    theirs = float(forward_errors(check.expected[apart], truth, check.parts).max())
    kappa = check.kappa(apart) if callable(check.kappa) else check.kappa
    bound = budget(theirs, kappa)
    return dict(result, ok=bool(own <= bound), truth_error=own, reference_error=theirs, bound=bound, kappa=kappa)


def verify_module(module, model, states=16, seed=0, rel_tol=None, expected=None):
    """{function: judge(...)}, the worst check of each: every C function over one batch of
    `states` random states (and the first states singly), the task-space functions at the
    first state. `rel_tol` replaces 100 eps as the agreement that needs no arbitration;
    `expected`, reference_table's answer for the same states, spares computing it again."""
    rng, inputs, frames = verification_draws(model, module.frames, states, seed)
    close = FLOOR if rel_tol is None else rel_tol
    report = {}
    for checks in (generated_checks(module, model, inputs, frames, expected or {}),
                   task_space_checks(module, model, inputs, rng)):
        for check in checks:
            verdict = judge(check, close)
            old = report.get(check.name)
            if old is None or (old["ok"], -old["error"]) > (verdict["ok"], -verdict["error"]):
                report[check.name] = verdict
    return report


def failure_line(name, verdict):
    """What was compared, the error and the bound, in one line."""
    if "truth_error" in verdict:
        return (f"generated {name} lost digits: its error against extended precision is "
                f"{verdict['truth_error']:.1e}, over the bound {verdict['bound']:.1e} (the largest of 10 x the "
                f"reference's {verdict['reference_error']:.1e}, 100 eps and eps cond(M) = "
                f"{EPS * verdict['kappa']:.1e})")
    if "bound" in verdict and np.isfinite(verdict["error"]):
        return (f"{name} differs from the reference by {verdict['error']:.1e} (relative), over the bound "
                f"{verdict['bound']:.1e} (100 eps x the condition of its solves)")
    if np.isfinite(verdict["error"]):
        return f"generated {name} disagrees with the reference (relative error {verdict['error']:.1e})"
    return f"generated {name} disagrees with the reference: non-finite values or the wrong shape"
