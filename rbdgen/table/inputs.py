"""The inputs a generated function may take: one row each, read by the generator (sizes), the
reference and the module's binding (defaults, batching, through model.json) and verification
(the random values it calls with)."""

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..model.parameters import parameters_of
from .description import BROADCAST, DAMPING, PARAMETERS, PER_STATE, PLACEMENT, SETTING, SHARED, STATE, Batched

# Verification's damping of declared contacts: contacts that happen to be redundant still give
# numbers to compare.
VERIFY_DAMPING = 1e-2


@dataclass(frozen=True)
class Input(Batched):
    name: str
    size: Callable           # model -> how many numbers
    meaning: str
    role: str = STATE        # what it is (rbdgen.table.description: STATE, SETTING, DAMPING, PLACEMENT, PARAMETERS)
    batching: str = PER_STATE   # how a batch takes it: one per state, SHARED (one for a whole batch) or
                                # BROADCAST (either; the public functions copy it)
    default: float = None    # the public function's default, where it has one
    sample: Callable = None  # (model, rng, batch, draw) -> (batch, size): what verification calls
                             # with; draw(k) is the k-th random (q, v, a) batch, drawn once for all inputs


def _normal(size):
    return lambda model, rng, batch, draw: rng.normal(size=(batch, size(model)))


def _constant(value):
    return lambda model, rng, batch, draw: np.full((batch, 1), value)


INPUTS = {row.name: row for row in (
    Input("q", lambda m: m.nq, "the configuration (Pinocchio's layout: a free-flyer's [x y z qx qy qz qw])",
          sample=lambda model, rng, batch, draw: draw(0)[0]),
    Input("v", lambda m: m.nv, "the velocity (a free-flyer's [linear, angular] in the base frame)",
          sample=lambda model, rng, batch, draw: draw(0)[1]),
    Input("a", lambda m: m.nv, "the acceleration", sample=lambda model, rng, batch, draw: draw(0)[2]),
    Input("tau", lambda m: m.nv, "the joint torques", sample=_normal(lambda m: m.nv)),
    Input("fext", lambda m: 6 * m.nbodies, "external forces, rows [force; torque] on each body in its frame",
          sample=_normal(lambda m: 6 * m.nbodies)),
    Input("placement", lambda m: 12, "a frame's placement on its body: E row-major, then r", PLACEMENT, SHARED),
    Input("damping", lambda m: 1, "the contacts' or loops' damping (0: rigid)", DAMPING, SHARED, default=0.0,
          sample=_constant(VERIFY_DAMPING)),
    Input("restitution", lambda m: 1, "the coefficient of restitution of an impact", SETTING, SHARED, default=0.0,
          sample=_constant(0.5)),
    Input("q1", lambda m: m.nq, "a second configuration", sample=lambda model, rng, batch, draw: draw(1)[0]),
    Input("dt", lambda m: 1, "a time step", SETTING, SHARED, default=1.0, sample=_constant(0.37)),
    # Baumgarte's gains of constrained dynamics: G q-ddot = gamma - kd G v - kp residual
    Input("kp", lambda m: 1, "the loops' position gain (Baumgarte)", SETTING, SHARED, default=0.0,
          sample=_constant(9.0)),
    Input("kd", lambda m: 1, "the loops' velocity gain (Baumgarte)", SETTING, SHARED, default=0.0,
          sample=_constant(4.0)),
    # Taken by every function of a model with parameters (FunctionSpec.arguments), last. One set
    # per state in C; the binding also takes one vector for a whole batch, and none (nominal).
    Input("params", lambda m: len(parameters_of(m)), "the model parameters (param_names; default nominal_params)",
          PARAMETERS, BROADCAST,
          sample=lambda model, rng, batch, draw: parameters_of(model).sample(rng, batch)),
)}
