"""A module's functions over Dask arrays of states: chunk by chunk, each chunk one batch call in
C, on whatever runs the Dask graph (threads, processes, a distributed cluster).

    import dask.array as da, rbdgen.dask
    Q, V, TAU = (da.from_array(x, chunks=(100_000, -1)) for x in (q, v, tau))   # (B, n) each
    dq, dv, dtau = rbdgen.dask.map(robot.aba_derivatives, Q, V, TAU)            # lazy, (B, nv, nv) each
    dq.compute()

map() computes nothing: it learns the shapes of the results from one call on a made-up state,
and the inputs are read only when the results are computed. An error of a chunk names the state
by its row in the whole batch.

The module travels to the workers by pickling (its folder and build key): on a cluster, the
module folder must be on storage every worker sees, or the robot's file at the same path.
"""

import re
import sys

import numpy as np


def map(function, *args, threads=1, **kwargs):
    """`function` (a module's function: robot.rnea, robot.frame_jacobian, ...) over batches of
    states, lazily. Dask arrays are batches of inputs (B, n) (f_ext: (B, njoints, 6)), cut into
    chunks along B only (all as the first one's), and so are NumPy arrays of two or more
    dimensions with B rows (without a Dask array: any NumPy array of two), given by position or
    by keyword (params=: one set of model parameters per state, (B, np)); every other argument
    (a frame's name, a point, dt, reference=, params= of one vector) is the same for every state.
    Returns what the function returns for a batch, as Dask arrays: an array, a tuple of them, or
    (B,) for a number. threads: OpenMP threads of each chunk's call (1: Dask's workers are the
    parallelism)."""
    import dask
    import dask.array as da
    from dask.base import tokenize
    if "out" in kwargs:
        raise ValueError("rbdgen.dask.map returns new Dask arrays: it takes no out= (store them with to_zarr, "
                         "store or compute)")
    given = {**dict(enumerate(args)), **kwargs}   # an argument's position, or its keyword -> its value
    lazy = [k for k, x in given.items() if isinstance(x, da.Array)]
    count = given[lazy[0]].shape[0] if lazy else None
    batched = [k for k, x in given.items() if k in lazy or (
        isinstance(x, np.ndarray) and (x.ndim == 2 if count is None else x.ndim >= 2 and len(x) == count))]
    if not batched:
        raise ValueError("rbdgen.dask.map: no batch of states among the arguments; give (B, n) Dask or NumPy arrays")
    arrays = [given[k] if isinstance(given[k], da.Array) else da.from_array(given[k]) for k in batched]
    for k, x in zip(batched, arrays):
        if x.ndim < 2:
            raise ValueError(f"rbdgen.dask.map: argument {k} has shape {x.shape}; a batch of states is (B, n)")
        if any(np.isnan(c) for c in x.chunks[0]):
            raise ValueError(f"rbdgen.dask.map: argument {k} has chunks of unknown sizes (a boolean mask made it); "
                             "call its compute_chunk_sizes() first")
        if x.shape[0] != arrays[0].shape[0]:
            raise ValueError(f"rbdgen.dask.map: argument {k} has {x.shape[0]} states, argument {batched[0]} "
                             f"{arrays[0].shape[0]}")
    rows = arrays[0].chunks[0]
    arrays = [x.rechunk((rows,) + (-1,) * (x.ndim - 1)) for x in arrays]
    call = _Chunk(function, args, batched, kwargs, threads)
    call.learn_shapes(_made_up_state(function, args, batched, [x.shape[1:] for x in arrays]), arrays[0].shape[0])
    # one task a chunk, named after the function; its result's parts are taken out of it without a copy
    name = f"rbdgen-{getattr(function, '__name__', 'function')}-{tokenize(call.token(), *arrays)}"
    starts = np.cumsum((0,) + rows[:-1]).tolist()
    # the inputs' chunks under their own keys (not each input's graph optimized apart, renamed):
    # inputs made from one upstream array share its chunks, computed once
    blocks = zip(*(x.to_delayed(optimize_graph=False).ravel() for x in arrays))
    chunks = [dask.delayed(call, pure=True)(start, *chunk, dask_key_name=(name, k))
              for k, (start, chunk) in enumerate(zip(starts, blocks))]
    parts = [da.concatenate([da.from_delayed(chunk[k] if call.in_parts else chunk, (count,) + shape, float)
                             for chunk, count in zip(chunks, rows)]) for k, shape in enumerate(call.shapes)]
    return tuple(parts) if call.in_parts else parts[0]


class _Chunk:
    """The call of one chunk: the function with the chunk's inputs in their places."""

    def __init__(self, function, args, batched, kwargs, threads):
        self.function, self.args, self.batched, self.kwargs = function, list(args), batched, dict(kwargs)
        for k in batched:   # the chunk's, at each call (and not shipped with every task)
            if isinstance(k, int):
                self.args[k] = None
            else:
                del self.kwargs[k]
        if _takes_threads(function):
            self.kwargs["threads"] = threads
        self.shapes, self.in_parts, self.states = None, False, 0

    def token(self):
        """What makes two calls the same: the function (its module's folder and build key, by
        pickling) and the arguments every state shares."""
        import pickle
        return pickle.dumps(self.function), self.args, sorted(self.kwargs.items())

    def learn_shapes(self, state, states):
        """The shape of each result's part for one state (and whether the function returns parts),
        from a call on `state` (one row of each batched input); states: B, for its errors."""
        try:
            result = self.call(*state)
        except ValueError as error:   # the made-up state has one row where the caller's batch has B
            text = re.sub(r"\(1, ", f"({states}, ", str(error))
            raise ValueError(text).with_traceback(error.__traceback__) from None
        self.in_parts = isinstance(result, tuple)
        self.shapes = [np.shape(p)[1:] for p in (result if self.in_parts else (result,))]
        self.states = states

    def call(self, *chunks):
        args, kwargs = list(self.args), dict(self.kwargs)
        for k, chunk in zip(self.batched, chunks):
            if isinstance(k, int):
                args[k] = chunk
            else:
                kwargs[k] = chunk
        return self.function(*args, **kwargs)

    def __call__(self, start, *chunks):
        """The chunk whose first state is row `start` of the whole batch."""
        size = len(chunks[0])
        if size == 0:   # (an empty batch, or an empty chunk of a sliced one): nothing to compute
            empty = tuple(np.empty((0,) + shape) for shape in self.shapes)
            return empty if self.in_parts else empty[0]
        try:
            return self.call(*chunks)
        except ValueError as error:
            text = _renumbered(str(error), start, size, self.states)
            if text is None:
                raise
            raise ValueError(text).with_traceback(error.__traceback__) from None


def _renumbered(text, start, size, states):
    """A module's error for a chunk (size states from row `start`) with the state it names
    ("state 17 of the batch") numbered in the whole batch (of `states`); a chunk of one state, of
    which the module names none, gets "state N of the batch: " first. None: nothing to change."""
    if re.search(r"\bstate \d+ of the batch\b", text):
        return re.sub(r"\bstate (\d+) of the batch\b", lambda m: f"state {start + int(m[1])} of the batch", text)
    if size == 1 and states > 1:
        return f"state {start} of the batch: {text}"
    return None


def _made_up_state(function, args, batched, shapes):
    """One state, a row of each batched input of its inner shape, that the function accepts
    whatever it computes, to learn its results' shapes without reading the caller's inputs (a
    module's metadata would serve only the functions that have a row of their own there, not
    frame_jacobian, the points' or the contacts' functions). Its values are what a module may
    check: the module's nominal params (params=), a configuration away from singularities (q
    of zeros has null quaternions, NaN where a function normalizes them, and stretches an arm,
    where contacts are redundant and a solve that checks them refuses), and zeros for the rest."""
    python = _python_function(function)
    module = sys.modules.get(getattr(python, "__module__", None) or "")
    if not (hasattr(module, "nq") and hasattr(module, "_META")):   # not a generated module's function
        return [np.zeros((1,) + shape) for shape in shapes]
    names = _argument_names(python, len(args))
    nominal = getattr(module, "nominal_params", np.zeros(0))
    state = []
    for k, shape in zip(batched, shapes):
        if names.get(k, k) == "params" and shape == nominal.shape:
            state.append(np.array(nominal)[None])
        elif shape == (module.nq,):
            state.append(_configuration(module)[None])
        else:
            state.append(np.zeros((1,) + shape))
    return state


def _configuration(module):
    """A configuration of a module's robot with no special angle (seeded): each quaternion a unit
    one, every other coordinate in [-1, 1]."""
    rng = np.random.default_rng(0)
    q = rng.uniform(-1.0, 1.0, module.nq)
    for joint in module._META["joints"]:
        if joint["type"] in ("free_flyer", "spherical"):
            at = joint["idx_q"] + (3 if joint["type"] == "free_flyer" else 0)
            q[at:at + 4] /= np.linalg.norm(q[at:at + 4])
    return q


def _argument_names(python, given):
    """The names of the first `given` positional arguments of `python` ({} where it has no signature)."""
    import inspect
    try:
        parameters = list(inspect.signature(python).parameters.values())
    except (TypeError, ValueError):
        return {}
    names = {}
    for k, parameter in enumerate(parameters[:given]):
        if parameter.kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            break   # (*args: the rest have no names)
        names[k] = parameter.name
    return names


def _python_function(function):
    """The Python function behind a module's function (or one that wraps it, by functools.wraps):
    a public function written in Python wraps it; a C entry point's self is (it, its row)."""
    import inspect
    function = inspect.unwrap(function)
    owner = getattr(function, "__self__", None)
    if isinstance(owner, tuple) and owner and callable(owner[0]):
        return owner[0]
    return function


def _takes_threads(function):
    """Whether a module's function takes threads= (the batch functions do; to_mujoco and the
    like, written in Python, may not)."""
    import inspect
    try:
        return "threads" in inspect.signature(_python_function(function)).parameters
    except (TypeError, ValueError):   # a function in C with no Python function behind it: a module's take threads
        return True
