"""Random robot states (for verification and benchmarks): valid q, any v."""

import numpy as np


def random_configuration(model, rng, batch=None):
    """Random q: angles and positions uniform in [-pi, pi] (free-flyer positions in [-1, 1]),
    quaternions uniform unit quaternions."""
    shape = (model.nq,) if batch is None else (batch, model.nq)
    q = rng.uniform(-np.pi, np.pi, shape)
    for joint in model.joints:
        if joint.type in ("spherical", "free_flyer"):
            start = joint.idx_q + (3 if joint.type == "free_flyer" else 0)
            quat = rng.normal(size=shape[:-1] + (4,))
            q[..., start:start + 4] = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
            if joint.type == "free_flyer":
                q[..., joint.idx_q:joint.idx_q + 3] = rng.uniform(-1, 1, shape[:-1] + (3,))
    return q


def random_state(model, rng, batch=None):
    """(q, v, a) with v and a standard normal."""
    shape = (model.nv,) if batch is None else (batch, model.nv)
    return random_configuration(model, rng, batch), rng.normal(size=shape), rng.normal(size=shape)
