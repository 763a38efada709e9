"""How many digits a function keeps: forward error against a truth with more digits.

The truth is the function's own algorithm (the function table's `run`) on mpmath numbers of
40 significant digits: the algorithms are written for any scalar, so this costs one line
(`ExtendedOps`). Rounding in 40 digits is 1e-40, far below anything double precision can
see, so the truth is exact for our purposes on the model as loaded (whose numbers are
doubles). What it measures is what a program loses to rounding: a formulation that
expresses every inertia about a far point (M^-1 in one fixed frame on xarm7: 7e-14 against
1e-17 in body coordinates), an optimizer pass that reassociates, an ill-conditioned solve.

Errors are normwise and relative, per output part (M and nle of `eom` each on their own
scale) and per state: max |x - t| / max |t|, the worst over parts and states.

The budget a program must meet (variant choice in rbdgen.codegen.build, verification in
rbdgen.runtime.verify): no more than ten times the error of the table's own algorithm run
in double precision on the same states, and never asked for better than 100 eps (2.2e-14)
(nor, when verifying a solve, better than eps cond(M)).
The first term follows conditioning by itself: on an ill-conditioned robot (iCub, cond(M)
3e5) the table's ABA loses digits to the problem, not to the program, and its error sets
the scale.
"""

import numpy as np

from ..algorithms import LibraryOps
from ..spatial import map_scalars
from .reference import OPS, _shape_and_entries

EPS = float(np.finfo(float).eps)
FLOOR = 100 * EPS          # below this, a difference is rounding whatever the formulation
FACTOR = 10                # how much worse than the table's own algorithm a program may be
DIGITS = 40                # of the extended-precision truth


def budget(reference_error, kappa=1.0):
    """The error a program of the function may have, given its table algorithm's error in
    double precision on the same states. Verification also passes `kappa` = cond(M) for the
    functions that solve with M: no solve is asked for better than eps cond(M), what a
    backward-stable one guarantees (the generator's choice between variants is stricter)."""
    return max(FACTOR * reference_error, FLOOR, EPS * kappa)


class ExtendedOps(LibraryOps):
    """The `ops` the algorithms receive for the truth: `let` is the identity, `select` a
    branch, sin, cos, sqrt and atan2 are mpmath's at the working precision."""
    LIBRARY = "mpmath"


def extended_values(model, spec, inputs, states=None, body=None):
    """The function of the table in extended precision, rounded to double: (len(states),
    *shape) for the batch `inputs` (name -> (B, size) arrays) at the given state indices
    (all by default). For a function of a frame, `body` carries the frame."""
    import mpmath
    batch = next(iter(inputs.values())).shape[0]
    states = range(batch) if states is None else states
    rows = []
    with mpmath.workdps(DIGITS):
        for s in states:
            args = [[mpmath.mpf(float(x)) for x in inputs[name][s]] for name in spec.arguments(model)]
            values = spec.evaluate(model, ExtendedOps, body, *args)
            _, flat = _shape_and_entries(map_scalars(values, float))
            rows.append(flat)
    return np.array(rows, dtype=float).reshape((len(rows),) + tuple(spec.output(model)))


def double_values(model, spec, inputs, body=None):
    """The function of the table run in double precision (the reference): (B, *shape)."""
    batch = next(iter(inputs.values())).shape[0]
    args = [[np.ascontiguousarray(inputs[name][:, k]) for k in range(inputs[name].shape[1])] for name in spec.arguments(model)]
    values = spec.evaluate(model, OPS, body, *args)
    _, flat = _shape_and_entries(values)
    columns = [np.broadcast_to(np.asarray(x, dtype=float), (batch,)) for x in flat]
    return np.stack(columns, axis=-1).reshape((batch,) + tuple(spec.output(model)))


def part_slices(model, spec):
    """The flat ranges of a function's output parts (the whole output when it has none)."""
    if not spec.parts:
        return [slice(None)]
    slices, start = [], 0
    for _, shape in spec.parts(model):
        size = int(np.prod(shape))
        slices.append(slice(start, start + size))
        start += size
    return slices


def forward_errors(actual, truth, parts=(slice(None),)):
    """Per state (leading dimension), the normwise relative error of `actual` against
    `truth`, worst over the output parts; infinite where a value is not finite."""
    actual, truth = np.asarray(actual, dtype=float), np.asarray(truth, dtype=float)
    batch = truth.shape[0]
    actual, truth = actual.reshape(batch, -1), truth.reshape(batch, -1)
    errors = np.zeros(batch)
    for part in parts:
        a, t = actual[:, part], truth[:, part]
        scale = np.abs(t).max(axis=1, initial=0.0)
        scale = np.where(scale > 0, scale, 1.0)
        errors = np.maximum(errors, np.abs(a - t).max(axis=1, initial=0.0) / scale)
    finite = np.isfinite(actual).all(axis=1) & np.isfinite(truth).all(axis=1)
    return np.where(finite, errors, np.inf)


class Yardstick:
    """A function's truth and its table algorithm's double-precision error on some states:
    what a program of it is measured against (`error`) and the budget it must meet."""

    def __init__(self, model, spec, inputs, body=None):
        self.parts = part_slices(model, spec)
        self.truth = extended_values(model, spec, inputs, body=body)
        self.reference_error = float(forward_errors(double_values(model, spec, inputs, body), self.truth,
                                                    self.parts).max())
        self.budget = budget(self.reference_error)

    def error(self, values):
        return float(forward_errors(values, self.truth, self.parts).max())
