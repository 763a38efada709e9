"""Compare a generated module with the NumPy reference at random states."""

import numpy as np

from . import reference
from .states import random_state

_JACOBIAN_FRAMES = 4   # frames per state for Jacobians: the reference is slow on big robots


def _relative_error(actual, expected):
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    return float(np.abs(actual - expected).max(initial=0.0)) / scale


def checks(module, model, rng):
    """(name, generated value, reference value) for every function the module has, at one state."""
    q, v, a = random_state(model, rng)
    f_ext = rng.normal(size=(model.nbodies, 6))
    have = set(module.operation_counts)
    if "rnea" in have:
        yield "rnea", module.rnea(q, v, a), reference.rnea(model, q, v, a)
    if "rnea_fext" in have:
        yield "rnea_fext", module.rnea(q, v, a, f_ext), reference.rnea(model, q, v, a, f_ext)
    if "nle" in have:
        yield "nle", module.nle(q, v), reference.nle(model, q, v)
    if "gravity" in have:
        yield "gravity", module.gravity(q), reference.gravity(model, q)
    if "crba" in have:
        yield "crba", module.crba(q), reference.crba(model, q)
    if "aba" in have:
        yield "aba", module.aba(q, v, a), reference.aba(model, q, v, a)
    if "aba_fext" in have:
        yield "aba_fext", module.aba(q, v, a, f_ext), reference.aba(model, q, v, a, f_ext)
    for name, args in (("coriolis", (q, v)), ("christoffel", (q,)), ("minv", (q,)), ("minv_times", (q, a)),
                       ("fd_crba", (q, v, a)), ("com_velocity", (q, v)), ("spatial_momentum", (q, v)),
                       ("centroidal_momentum", (q, v)), ("centroidal_map", (q,)), ("body_motion", (q, v, a))):
        if name in have:
            yield name, getattr(module, name)(*args), getattr(reference, name)(model, *args)
    if "placements" in have:
        worst = []
        for frame in model.frames:
            (R, p), (R_ref, p_ref) = module.frame_placement(q, frame.name), reference.frame_placement(model, q, frame)
            worst += [_relative_error(R, R_ref), _relative_error(p, p_ref)]
        yield "placements", np.array([max(worst)]), np.zeros(1)
    if "jacobians" in have and "placements" in have:
        picks = rng.choice(len(model.frames), size=min(_JACOBIAN_FRAMES, len(model.frames)), replace=False)
        for k in picks:
            frame = model.frames[k]
            for ref in ("local", "world", "local_world_aligned"):
                yield "jacobians", module.frame_jacobian(q, frame.name, ref), \
                    reference.frame_jacobian(model, q, frame, ref)
    if "com" in have:
        yield "com", module.com(q), reference.com(model, q)
    if "kinetic_energy" in have:
        yield "kinetic_energy", module.kinetic_energy(q, v), reference.kinetic_energy(model, q, v)
    if "potential_energy" in have:
        yield "potential_energy", module.potential_energy(q), reference.potential_energy(model, q)


def verify_module(module, model, states=5, seed=0, rel_tol=1e-10):
    """{function: {"error": worst relative error, "ok": error <= rel_tol}} over `states` random states."""
    rng = np.random.default_rng(seed)
    worst = {}
    for _ in range(states):
        for name, actual, expected in checks(module, model, rng):
            worst[name] = max(worst.get(name, 0.0), _relative_error(actual, expected))
    return {name: {"error": err, "ok": bool(err <= rel_tol)} for name, err in worst.items()}
