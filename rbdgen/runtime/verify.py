"""Compare a generated module with the NumPy reference at random states.

Every C function of the module is checked, whatever its name: the function table that
generated it also runs it on numbers (`FunctionSpec.run` with NumericOps, the reference),
on one batch of states through the module's batch path and on single states through its
direct entry points. The task-space functions the module assembles from those (frames,
points, contacts) are checked against `rbdgen.reference` too. Any NaN or infinity, in the
module's answer or in the reference, is a failure: a number that cannot be checked is not
a verified number.
"""

import numpy as np

from ..codegen import functions as fn_table
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
            "fext": rng.normal(size=(batch, 6 * model.nbodies))}


def reference_values(model, spec, inputs):
    """The function of the table run on numbers: (B, *shape) for the batch `inputs`."""
    batch = next(iter(inputs.values())).shape[0]
    args = [[np.ascontiguousarray(inputs[name][:, k]) for k in range(inputs[name].shape[1])]
            for name in spec.inputs]
    shape, flat = _shape_and_entries(spec.run(model, OPS, *args))
    columns = [np.broadcast_to(np.asarray(x, dtype=float), (batch,)) for x in flat]
    return np.stack(columns, axis=-1).reshape((batch,) + shape)


def generated_checks(module, model, inputs):
    """(name, generated, reference) for every C function, batched and single."""
    for name in module.operation_counts:
        spec = fn_table.BY_NAME[name]
        function = getattr(module, name)
        expected = reference_values(model, spec, inputs)
        args = [inputs[arg] for arg in spec.inputs]
        batched = np.asarray(function(*args), dtype=float)
        yield name, batched.reshape(expected.shape), expected
        for k in range(min(SINGLE_CALLS, expected.shape[0])):
            single = np.asarray(function(*[x[k] for x in args]), dtype=float)
            yield name, single.reshape(expected.shape[1:]), expected[k]


def task_space_checks(module, model, inputs, rng):
    """(name, module value, reference value) for the frame, point and contact functions."""
    have = set(dir(module))
    if not model.frames:
        return
    q, v, a, tau = (inputs[k][0] for k in ("q", "v", "a", "tau"))
    picks = rng.choice(len(model.frames), size=min(_GLUE_FRAMES, len(model.frames)), replace=False)
    frames = [model.frames[k] for k in picks]
    for frame in frames:
        if "frame_placement" in have:
            (R, p), (R_ref, p_ref) = module.frame_placement(q, frame.name), reference.frame_placement(model, q, frame)
            yield "frame_placement", np.concatenate([np.ravel(R), p]), np.concatenate([np.ravel(R_ref), p_ref])
        if "frame_jacobian" in have:
            for ref in _REFERENCES:
                yield "frame_jacobian", module.frame_jacobian(q, frame.name, ref), \
                    reference.frame_jacobian(model, q, frame, ref)
    frame, point = frames[0].name, rng.normal(size=3) * 0.1
    for name, args in (("point_jacobian", (q,)), ("point_velocity", (q, v)), ("point_acceleration", (q, v, a)),
                       ("point_gamma", (q, v))):
        if name in have:
            yield name, getattr(module, name)(*args, frame, point), getattr(reference, name)(model, *args, frame, point)
    # One 3-D contact on the deepest moving body, damped: a robot that cannot move the point in
    # every direction makes the exact solve singular, and the check is of the assembly anyway.
    moving = [f for f in model.frames if f.body >= 0]
    if moving and "contact_dynamics" in have:
        contacts = [(max(moving, key=lambda f: len(model.support(f.body))).name, point, None)]
        yield "contact_dynamics", np.concatenate(module.contact_dynamics(q, v, tau, contacts, damping=_DAMPING)), \
            np.concatenate(reference.contact_dynamics(model, q, v, tau, contacts, damping=_DAMPING))
        if "impulse_dynamics" in have:
            yield "impulse_dynamics", np.concatenate(module.impulse_dynamics(q, v, contacts, 0.5, damping=_DAMPING)), \
                np.concatenate(reference.impulse_dynamics(model, q, v, contacts, 0.5, damping=_DAMPING))
        if "contact_inertia" in have:
            yield "contact_inertia", module.contact_inertia(q, contacts), reference.contact_inertia(model, q, contacts)


def verify_module(module, model, states=16, seed=0, rel_tol=1e-10):
    """{function: {"error": worst relative error, "ok": error <= rel_tol}}: every C function
    over one batch of `states` random states (and the first states singly), the task-space
    functions at the first state. Non-finite values count as an infinite error."""
    rng = np.random.default_rng(seed)
    inputs = random_inputs(model, rng, max(1, states))
    worst = {}
    for checks in (generated_checks(module, model, inputs), task_space_checks(module, model, inputs, rng)):
        for name, actual, expected in checks:
            error = _relative_error(actual, expected)
            worst[name] = max(worst.get(name, 0.0), error)
    return {name: {"error": err, "ok": bool(err <= rel_tol)} for name, err in worst.items()}
