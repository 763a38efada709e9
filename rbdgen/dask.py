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
    states, lazily. Dask arrays, and NumPy arrays of two dimensions, are batches of inputs
    (B, n), cut into chunks along B only (all as the first one's); every other argument (a
    frame's name, a point, dt, reference=...) is the same for every state. Returns what the
    function returns for a batch, as Dask arrays: an array, a tuple of them, or (B,) for a
    number. threads: OpenMP threads of each chunk's call (1: Dask's workers are the parallelism)."""
    import dask.array as da
    batched = [k for k, x in enumerate(args) if isinstance(x, da.Array) or (isinstance(x, np.ndarray) and x.ndim == 2)]
    if not batched:
        raise ValueError("rbdgen.dask.map: no batch of states among the arguments; give (B, n) Dask or NumPy arrays")
    arrays = [args[k] if isinstance(args[k], da.Array) else da.from_array(args[k]) for k in batched]
    for k, x in zip(batched, arrays):
        if x.ndim != 2:
            raise ValueError(f"rbdgen.dask.map: argument {k} has shape {x.shape}; a batch of states is (B, n)")
        if x.shape[0] != arrays[0].shape[0]:
            raise ValueError(f"rbdgen.dask.map: argument {k} has {x.shape[0]} states, argument {batched[0]} "
                             f"{arrays[0].shape[0]}")
    import dask
    rows = arrays[0].chunks[0]
    arrays = [x.rechunk((rows, -1)) for x in arrays]
    call = _Chunk(function, args, batched, kwargs, threads)
    # what one state gives (the first), to lay the chunks' results out
    first = call(*(x[:1].compute() for x in arrays))
    shapes = [np.shape(p)[1:] for p in (first if isinstance(first, tuple) else (first,))]
    # one task a chunk; its result's parts are taken out of it without a copy
    chunks = [dask.delayed(call, pure=True)(*blocks) for blocks in zip(*(x.to_delayed().ravel() for x in arrays))]
    parts = [da.concatenate([da.from_delayed(chunk[k] if isinstance(first, tuple) else chunk, (count,) + shape, float)
                             for chunk, count in zip(chunks, rows)]) for k, shape in enumerate(shapes)]
    return tuple(parts) if isinstance(first, tuple) else parts[0]


class _Chunk:
    """The call of one chunk: the function with the chunk's inputs in their places."""

    def __init__(self, function, args, batched, kwargs, threads):
        self.function, self.args, self.batched, self.kwargs = function, list(args), batched, dict(kwargs)
        for k in batched:
            self.args[k] = None   # the chunk's, at each call (and not shipped with every task)
        self.kwargs["threads"] = threads

    def __call__(self, *chunks):
        args = list(self.args)
        for k, chunk in zip(self.batched, chunks):
            args[k] = chunk
        return self.function(*args, **self.kwargs)
