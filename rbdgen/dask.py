"""A module's functions over Dask arrays of states: chunk by chunk, each chunk one batch call in
C, on whatever runs the Dask graph (threads, processes, a distributed cluster).

    import dask.array as da, rbdgen.dask
    Q, V, TAU = (da.from_array(x, chunks=(100_000, -1)) for x in (q, v, tau))   # (B, n) each
    dq, dv, dtau = rbdgen.dask.map(robot.aba_derivatives, Q, V, TAU)            # lazy, (B, nv, nv) each
    dq.compute()

The module travels to the workers by pickling (its folder and build key): on a cluster, the
module folder must be on storage every worker sees, or the robot's file at the same path.
"""

import numpy as np


def map(function, *args, threads=1, **kwargs):
    """`function` (a module's function: robot.rnea, robot.frame_jacobian, ...) over batches of
    states, lazily. Dask arrays are batches of inputs (B, n) (f_ext: (B, njoints, 6)), cut into
    chunks along B only (all as the first one's), and so are NumPy arrays of two or more
    dimensions with B rows (without a Dask array: any NumPy array of two); every other argument
    (a frame's name, a point, dt, reference=...) is the same for every state. A keyword argument that
    is a Dask array is a batch too (params=: one set of model parameters per state). Returns what
    the function returns for a batch, as Dask arrays: an array, a tuple of them, or (B,) for a number. threads: OpenMP
    threads of each chunk's call (1: Dask's workers are the parallelism)."""
    import dask
    import dask.array as da
    from dask.base import tokenize
    if "out" in kwargs:
        raise ValueError("rbdgen.dask.map returns new Dask arrays: it takes no out= (store them with to_zarr, "
                         "store or compute)")
    lazy = [k for k, x in enumerate(args) if isinstance(x, da.Array)]
    count = args[lazy[0]].shape[0] if lazy else None
    batched = [k for k, x in enumerate(args) if k in lazy or (
        isinstance(x, np.ndarray) and (x.ndim == 2 if count is None else x.ndim >= 2 and len(x) == count))]
    batched += [name for name, x in kwargs.items() if isinstance(x, da.Array)]   # params=, by keyword
    if not batched:
        raise ValueError("rbdgen.dask.map: no batch of states among the arguments; give (B, n) Dask or NumPy arrays")
    given = lambda k: args[k] if isinstance(k, int) else kwargs[k]
    arrays = [given(k) if isinstance(given(k), da.Array) else da.from_array(given(k)) for k in batched]
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
    # what one state gives (the first), to lay the chunks' results out
    first = call(*(x[:1].compute() for x in arrays))
    shapes = [np.shape(p)[1:] for p in (first if isinstance(first, tuple) else (first,))]
    # one task a chunk, named after the function; its result's parts are taken out of it without a copy
    name = f"rbdgen-{getattr(function, '__name__', 'function')}-{tokenize(call.token(), *arrays)}"
    chunks = [dask.delayed(call, pure=True)(*blocks, dask_key_name=(name, k))
              for k, blocks in enumerate(zip(*(x.to_delayed().ravel() for x in arrays)))]
    parts = [da.concatenate([da.from_delayed(chunk[k] if isinstance(first, tuple) else chunk, (count,) + shape, float)
                             for chunk, count in zip(chunks, rows)]) for k, shape in enumerate(shapes)]
    return tuple(parts) if isinstance(first, tuple) else parts[0]


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

    def token(self):
        """What makes two calls the same: the function (its module's folder and build key, by
        pickling) and the arguments every state shares."""
        import pickle
        return pickle.dumps(self.function), self.args, sorted(self.kwargs.items())

    def __call__(self, *chunks):
        args, kwargs = list(self.args), dict(self.kwargs)
        for k, chunk in zip(self.batched, chunks):
            if isinstance(k, int):
                args[k] = chunk
            else:
                kwargs[k] = chunk
        return self.function(*args, **kwargs)


def _takes_threads(function):
    """Whether a module's function takes threads= (the batch functions do; to_mujoco and the
    like, written in Python, may not)."""
    import inspect
    try:
        return "threads" in inspect.signature(getattr(function, "__wrapped__", function)).parameters
    except (TypeError, ValueError):   # a C entry point: no signature, and it takes threads
        return True
