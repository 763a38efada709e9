"""The checks and conversions of a generated module's arguments (states, batches, numbers,
threads, out=): the same file in every module (a copy of rbdgen/bindings/arguments.py, as
_arguments.py), used by its binding (runtime.py). Errors are one line naming the argument."""

import os as _os

import numpy as _np

from . import _contact  # the same file as rbdgen/bindings/contact.py
from . import _physical  # the same file as rbdgen/model/physical.py

_empty = _np.empty
_FLOAT = _np.dtype(_np.float64)
# OpenMP starts as many threads as asked, and dies (SIGSEGV) when it cannot.
MAX_THREADS = max(256, _os.cpu_count() or 1)


def vector(x, n, what):
    a = x if type(x) is _np.ndarray and x.dtype is _FLOAT else _contact.real_array(x, what)
    if a.shape != (n,):
        raise ValueError(f"{what}: expected ({n},), got {a.shape}")
    if not a.flags.c_contiguous:
        a = _np.ascontiguousarray(a)
    return a


def one_number(x, what):
    """A parameter of a call (dt, damping): one real number, as the (1,) array C reads."""
    a = _contact.real_array(x, what)
    if a.size != 1:
        raise ValueError(f"{what}: expected one number, got shape {a.shape}")
    return _np.ascontiguousarray(a.reshape(1))


def batch(x, n, what, count=None):
    a = _np.ascontiguousarray(_contact.real_array(x, what))
    if a.ndim != 2 or a.shape[1] != n or (count is not None and a.shape[0] != count):
        expected = f"({'B' if count is None else count}, {n})"
        raise ValueError(f"{what}: expected {expected} for a batch, got {a.shape}")
    return a


def is_batch(x, n, what):
    """True for a batch (B, n) of states, False for one state; ValueError beyond 2 dimensions."""
    ndim = x.ndim if type(x) is _np.ndarray else _contact.real_array(x, what).ndim
    if ndim > 2:
        raise ValueError(f"{what}: expected ({n},) or a batch (B, {n}), got {_np.shape(x)}")
    return ndim == 2


def threads(threads):
    """The OpenMP thread count of a batch: 0 (OMP_NUM_THREADS, else all cores) or 1 .. MAX_THREADS."""
    if type(threads) is int and 0 <= threads <= MAX_THREADS:
        return threads
    if isinstance(threads, (bool, _np.bool_)) or not isinstance(threads, (int, _np.integer)):
        raise TypeError(f"threads: expected an integer from 0 to {MAX_THREADS}, got {type(threads).__name__}")
    if not 0 <= threads <= MAX_THREADS:
        raise ValueError(f"threads: expected 0 (OMP_NUM_THREADS, else all cores) or 1 to {MAX_THREADS}, "
                         f"got {threads}")
    return int(threads)


def output(out, shape, inputs):
    """(result, target): the array to return and the one the C code writes into. They differ
    only when the caller's out= shares memory with an input: the C arrays are `restrict`, so
    the C code then writes into a temporary that is copied into out afterwards."""
    if out is None:
        out = _empty(shape)
        return out, out
    if type(out) is not _np.ndarray:
        problem = f"a {type(out).__name__}"
    elif out.dtype != _FLOAT or out.shape != shape:
        problem = f"{out.dtype} of shape {out.shape}"
    elif not out.flags.c_contiguous:
        problem = "a non-contiguous array"
    elif not out.flags.writeable:
        problem = "a read-only array"
    else:
        problem = None
    if problem:
        raise ValueError(f"out: expected a writable C-contiguous float64 array of shape {shape}, got {problem}")
    # Every array here is C-contiguous, so overlapping bounds (all that may_share_memory
    # checks, in constant time) are shared memory.
    if any(_np.may_share_memory(out, x) for x in inputs):
        return out, _empty(shape)
    return out, out


def settled(out, target):
    """out, holding the result (copied from the temporary when out= overlapped an input)."""
    if target is not out:
        out[...] = target
    return out


def forces(f_ext, q, njoints, nq):
    """f_ext (rows [force; torque] per joint) as the C functions take it: (6 njoints,), or
    (B, 6 njoints) when q (of nq) is a batch of B states."""
    f = _contact.real_array(f_ext, "f_ext")
    n = njoints
    expected = (_np.shape(q)[0], n, 6) if is_batch(q, nq, "q") else (n, 6)
    if f.shape != expected:
        batch = " for the batch q" if len(expected) == 3 else ""
        raise ValueError(f"f_ext: expected {expected}{batch} (rows [force; torque] per joint), got {f.shape}")
    return _np.ascontiguousarray(f).reshape(f.shape[:-2] + (6 * n,))


class Parameters:
    """The module's model parameters (model.json's params): names, nominal values, and the
    checks of the values a call gives. problem_in_c: the extension's rbdgen_<m>_params_problem
    (params, n, first, strict) -> the first state from `first` on whose params are not
    physical, -1 for none (rbdgen/bindings/physical.c); buffer: cffi's from_buffer."""

    def __init__(self, meta, problem_in_c, buffer):
        self.names = tuple(meta["names"])
        self.nominal = _np.array(meta["nominal"], dtype=_FLOAT)
        self.nominal.flags.writeable = False
        self.bodies, self.nonnegative = meta["bodies"], meta["nonnegative"]
        self.problem_in_c, self.buffer = problem_in_c, buffer
        self.checked = {}   # strict -> the bytes of the last vector found physical: a loop with the same one checks once

    def take(self, args, solves):
        """Put the nominal values in for params=None (the last of `args`); True when params were
        given: then they have been checked (size, finite; for a solve with M, physical but for
        the triangle inequality), and the caller checks a solve's result with `solved`."""
        if args[-1] is None:
            args[-1] = self.nominal
            return False
        values = self.shaped(args[-1])
        if solves or not _np.isfinite(values).all():   # M positive definite: spatial inertias positive semidefinite
            self.checked_values(values, strict=False)
        args[-1] = values
        return True

    def shaped(self, values):
        values = _contact.real_array(values, "params")
        if values.shape[-1:] != self.nominal.shape or values.ndim > 2:
            raise ValueError(f"params: expected ({len(self.names)},) or a batch (B, {len(self.names)}), got {values.shape}")
        return values

    def check(self, values, strict):
        """ValueError (rbdgen.model.physical's line) unless `values` are physical; strict: with
        the triangle inequality. The states are tested in C; physical.py says what fails."""
        self.checked_values(self.shaped(values), strict)

    def checked_values(self, values, strict):
        """check, for values already shaped."""
        key = values.tobytes() if values.ndim == 1 else None   # (a batch's bytes cost more than its check)
        if key is not None and self.checked.get(strict) == key:
            return
        rows = _np.ascontiguousarray(values.reshape(-1, len(self.names)))
        state = -1
        while True:
            state = self.problem_in_c(self.buffer("double[]", rows), len(rows), state + 1, int(strict))
            if state < 0:
                break
            problem = _physical.problem(rows[state], self.bodies, self.nonnegative, self.names, strict)
            if problem:   # (else the two differ by a rounding at the tolerance: physical.py decides)
                raise ValueError((f"state {state} of the batch: " if values.ndim == 2 else "") + problem)
        if key is not None:
            self.checked[strict] = key


# An input this large overflows the dynamics' products (velocities squared, masses times
# lengths squared) on their way to the result: a non-finite result is then the input's doing.
OVERFLOWING = 1e150


def solved(rows, inputs, params_given=False, param_names=()):
    """ValueError, one line, for a solve with M whose result is not finite, naming the cause:
    an input that is not finite, one so large that the result overflows, else M singular (with
    params given: a joint that moves no mass with them). rows: (B, size), one per state;
    inputs: (name, array), an array of two dimensions holding one row per state."""
    finite = _np.isfinite(rows).all(axis=-1)
    if finite.all():
        return
    state = int(_np.argmin(finite))
    where = f"state {state} of the batch: " if len(rows) > 1 else ""
    raise ValueError(where + _cause(inputs, state, params_given, param_names))


def refuse_input(count, state, inputs, param_names=()):
    """ValueError (naming the state of a batch of `count`) when an input at `state` is not
    finite, or so large that a result overflows; nothing otherwise."""
    problem = _input_problem(inputs, state, param_names)[0]
    if problem:
        raise ValueError((f"state {state} of the batch: " if count > 1 else "") + problem)


def _cause(inputs, state, params_given, param_names):
    problem, largest = _input_problem(inputs, state, param_names)
    if problem:
        return problem
    if params_given:
        return "params: M is singular (a joint moves no mass with these parameters); give the links it moves a mass"
    return (f"the result is not finite although every input is (the largest: {largest}): M is singular at this state, "
            "or an input is too large for float64's range")


def _input_problem(inputs, state, param_names):
    """(what is wrong with an input at `state`: not finite, or too large; None) and the largest
    input entry, as text. inputs: (name, array), two dimensions for one row per state."""
    largest, named = -1.0, ""
    for name, value in inputs:
        x = _np.asarray(value, dtype=_FLOAT)
        x = (x[state] if x.ndim == 2 else x).reshape(-1)
        if not x.size:
            continue
        bad = ~_np.isfinite(x)
        k = int(_np.argmax(bad)) if bad.any() else int(_np.argmax(_np.abs(x)))
        label = _label(name, k, param_names)
        if bad.any():
            return f"{label} is not finite ({float(x[k])!r}); give finite values", None
        if abs(x[k]) > largest:
            largest, named = float(abs(x[k])), f"{label} = {x[k]:.3g}"
    if largest > OVERFLOWING:
        return f"{named} is too large: the result overflows float64", named
    return None, named


def _label(name, k, param_names):
    """An input's entry k as the caller names it: params[k] (its name), f_ext[joint, row]."""
    if name == "params" and k < len(param_names):
        return f"params[{k}] ({param_names[k]})"
    if name == "fext":
        return f"f_ext[{k // 6}, {k % 6}]"
    return f"{name}[{k}]"
