"""Compare a generated module with the NumPy reference at random states.

Every C function of the module is checked, whatever its name: the function table that
generated it also runs it on numbers (`FunctionSpec.run` with NumericOps, the reference),
on one batch of states through the module's batch path and on single states through its
direct entry points. The task-space functions the module assembles from those (frames,
points, contacts) are checked against `rbdgen.reference` too. Any NaN or infinity, in the
module's answer or in the reference, is a failure: a number that cannot be checked is not
a verified number.
"""

import functools

import numpy as np

from ..algorithms import constrained
from ..algorithms.frames import placement_entries
from ..codegen import functions as fn_table
from ..codegen.render import SHARED_INPUTS
from . import reference
from .reference import OPS, _shape_and_entries
from .states import random_state

SINGLE_CALLS = 2       # states also called one at a time (the direct C entry points)
_GLUE_FRAMES = 4       # frames checked per state for placements and Jacobians
_REFERENCES = ("local", "world", "local_world_aligned")
_DAMPING = 1e-2


def _relative_error(actual, expected):
    """max |actual - expected| / max(1, max |expected|); infinite for any non-finite value or
    a shape mismatch."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    if actual.shape != expected.shape or not (np.isfinite(actual).all() and np.isfinite(expected).all()):
        return float("inf")
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    return float(np.abs(actual - expected).max(initial=0.0)) / scale


def random_inputs(model, rng, batch):
    """Arrays of shape (batch, size) for every input name a generated function can take."""
    q, v, a = random_state(model, rng, batch)
    return {"q": q, "v": v, "a": a, "tau": rng.normal(size=(batch, model.nv)),
            "fext": rng.normal(size=(batch, 6 * model.nbodies)),
            # damped: declared contacts that happen to be redundant still give numbers to compare
            "damping": np.full((batch, 1), _DAMPING), "restitution": np.full((batch, 1), 0.5),
            "q1": random_state(model, rng, batch)[0], "dt": np.full((batch, 1), 0.37)}


def reference_values(model, spec, inputs, body=None):
    """The function of the table run on numbers: (B, *shape) for the batch `inputs` (for a
    function of a frame, the frame on `body` whose placement is inputs["placement"])."""
    batch = next(iter(inputs.values())).shape[0]
    args = [[np.ascontiguousarray(inputs[name][:, k]) for k in range(inputs[name].shape[1])]
            for name in spec.inputs]
    values = spec.run(model, OPS, body, *args) if spec.per_body else spec.run(model, OPS, *args)
    _, flat = _shape_and_entries(values)
    columns = [np.broadcast_to(np.asarray(x, dtype=float), (batch,)) for x in flat]
    return np.stack(columns, axis=-1).reshape((batch,) + tuple(spec.output(model)))


def _frames_to_check(module, model, rng):
    """A few of the module's frames, on different bodies where possible (and the world's)."""
    served = [model.frame(name) for name in module.frames]
    by_body = {}
    for frame in served:
        by_body.setdefault(frame.body, frame)
    picks = list(by_body.values())
    if len(picks) > _GLUE_FRAMES:
        picks = [picks[k] for k in sorted(rng.choice(len(picks), size=_GLUE_FRAMES, replace=False))]
    return picks


def generated_checks(module, model, inputs, rng):
    """(name, generated, reference) for every C function, batched and single."""
    frames = _frames_to_check(module, model, rng)
    contacts = constrained.parse_contacts(model, getattr(module, "contacts", ()))
    for name in module.operation_counts:
        spec = fn_table.lookup(name, contacts)
        if spec.per_body:
            for frame in frames:
                placement = np.array(placement_entries(frame.placement), dtype=float)
                batch = dict(inputs, placement=np.broadcast_to(placement, (len(inputs["q"]), 12)))
                expected = reference_values(model, spec, batch, frame.body)
                function = functools.partial(getattr(module, "_" + name), frame.body)
                args = [placement if arg == "placement" else inputs[arg] for arg in spec.inputs]
                yield from _calls(name, function, args, spec, expected)
        else:
            function = getattr(module, ("_declared_" if spec.declared else "") + name)
            args = [inputs[arg][0] if arg in SHARED_INPUTS else inputs[arg] for arg in spec.inputs]
            yield from _calls(name, function, args, spec, reference_values(model, spec, inputs))


def _calls(name, function, args, spec, expected):
    """The function called on the batch, then on its first states one at a time."""
    yield name, _flat(function(*args), expected.shape), expected
    shared = [arg in SHARED_INPUTS for arg in spec.inputs]
    for k in range(min(SINGLE_CALLS, expected.shape[0])):
        single = function(*[x if s else x[k] for x, s in zip(args, shared)])
        yield name, _flat(single, expected.shape[1:]), expected[k]


def _flat(result, shape):
    """A function's result as one array of `shape` (a tuple of parts is concatenated)."""
    if isinstance(result, tuple):
        lead = len(shape) - 1
        result = np.concatenate([np.reshape(p, np.shape(p)[:lead] + (-1,)) for p in result], axis=-1)
    return np.asarray(result, dtype=float).reshape(shape)


def task_space_checks(module, model, inputs, rng):
    """(name, module value, reference value) for the frame, point and contact functions."""
    have = set(dir(module))
    frames = _frames_to_check(module, model, rng) if "frames" in have else []
    if not frames:
        return
    q, v, a, tau = (inputs[k][0] for k in ("q", "v", "a", "tau"))
    for frame in frames:
        if "frame_placement" in have:
            (R, p), (R_ref, p_ref) = module.frame_placement(q, frame.name), reference.frame_placement(model, q, frame)
            yield "frame_placement", np.concatenate([np.ravel(R), p]), np.concatenate([np.ravel(R_ref), p_ref])
        for ref in _REFERENCES:
            if f"frame_jacobian_{ref}" in module.operation_counts:
                yield "frame_jacobian", module.frame_jacobian(q, frame.name, ref), \
                    reference.frame_jacobian(model, q, frame, ref)
    frame, point = frames[0].name, rng.normal(size=3) * 0.1
    for name, args in (("point_jacobian", (q,)), ("point_velocity", (q, v)), ("point_acceleration", (q, v, a)),
                       ("point_gamma", (q, v))):
        if name in have:
            yield name, getattr(module, name)(*args, frame, point), getattr(reference, name)(model, *args, frame, point)
    # One 3-D contact on the deepest moving body, damped: a robot that cannot move the point in
    # every direction makes the exact solve singular, and the check is of the assembly anyway.
    moving = [f for f in frames if f.body >= 0]
    if moving and "point_gamma" in have and {"minv", "nle"} <= set(module.operation_counts):
        contacts = [(max(moving, key=lambda f: len(model.support(f.body))).name, point, None)]
        yield "contact_dynamics (call-time contacts)", \
            np.concatenate(module.contact_dynamics(q, v, tau, contacts, damping=_DAMPING)), \
            np.concatenate(reference.contact_dynamics(model, q, v, tau, contacts, damping=_DAMPING))
        yield "impulse_dynamics (call-time contacts)", \
            np.concatenate(module.impulse_dynamics(q, v, contacts, 0.5, damping=_DAMPING)), \
            np.concatenate(reference.impulse_dynamics(model, q, v, contacts, 0.5, damping=_DAMPING))
        yield "contact_inertia (call-time contacts)", module.contact_inertia(q, contacts), \
            reference.contact_inertia(model, q, contacts)


def verify_module(module, model, states=16, seed=0, rel_tol=1e-10):
    """{function: {"error": worst relative error, "ok": error <= rel_tol}}: every C function
    over one batch of `states` random states (and the first states singly), the task-space
    functions at the first state. Non-finite values count as an infinite error."""
    rng = np.random.default_rng(seed)
    inputs = random_inputs(model, rng, max(1, states))
    worst = {}
    for checks in (generated_checks(module, model, inputs, rng), task_space_checks(module, model, inputs, rng)):
        for name, actual, expected in checks:
            error = _relative_error(actual, expected)
            worst[name] = max(worst.get(name, 0.0), error)
    return {name: {"error": err, "ok": bool(err <= rel_tol)} for name, err in worst.items()}
