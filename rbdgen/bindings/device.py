"""A module's functions on device arrays: PyTorch CUDA tensors, CuPy arrays and JAX GPU arrays
in, the same kind out, on the same device and the caller's stream, with no copy of a state
through the host (the same file in every module, as _device.py; the kernels: _cuda.py).

Inputs are read as the C batch reads them: states (B, n) one after another, or one state (n,);
a frame's placement and the settings may be numbers or host arrays (a few numbers, copied to
the device); the model parameters one set (np,) or one per state (B, np), default nominal. Results
are not checked on the host (that would wait for the GPU): a state a solve fails on is NaN, and so
is one whose contacts or loops are redundant (undamped)."""

import numpy as _np

from . import _contact, _cuda

_CLEAR = _contact.PIVOT_CLEAR


class _Torch:
    def __init__(self, x):
        import torch
        self.torch, self.device = torch, x.device

    def ordinal(self):
        return self.device.index or 0

    def stream(self):
        # (PyTorch's own raw handle, as its compiled kernels launch; else through a Stream object)
        raw = getattr(self.torch._C, "_cuda_getCurrentRawStream", None)
        return raw(self.ordinal()) if raw is not None else self.torch.cuda.current_stream(self.device).cuda_stream

    def is_float64(self, x):
        return x.dtype == self.torch.float64

    def dtype(self, x):
        return str(x.dtype).replace("torch.", "")

    def contiguous(self, x):
        return x.contiguous()

    def pointer(self, x):
        return x.data_ptr()

    def empty(self, shape):
        return self.torch.empty(shape, dtype=self.torch.float64, device=self.device)

    def from_host(self, value):
        return self.torch.as_tensor(_np.asarray(value, dtype=float), device=self.device)

    def same(self, x):
        return isinstance(x, self.torch.Tensor) and x.device == self.device

    def where(self, x):
        return str(x.device) if isinstance(x, self.torch.Tensor) else "the host"

    def unclear(self, pivots, clear):
        return ~(pivots > clear * pivots.abs().amax(-1, keepdim=True)).all(-1)

    def blank(self, rows, bad):
        rows.masked_fill_(bad[:, None], float("nan"))


class _CuPy:
    def __init__(self, x):
        import cupy
        self.cupy, self.device = cupy, x.device

    def ordinal(self):
        return self.device.id

    def stream(self):
        return self.cupy.cuda.get_current_stream().ptr

    def is_float64(self, x):
        return x.dtype == _np.float64

    def dtype(self, x):
        return str(x.dtype)

    def contiguous(self, x):
        return self.cupy.ascontiguousarray(x)

    def pointer(self, x):
        return x.data.ptr

    def empty(self, shape):
        with self.device:
            return self.cupy.empty(shape)

    def from_host(self, value):
        with self.device:
            return self.cupy.asarray(_np.asarray(value, dtype=float))

    def same(self, x):
        return isinstance(x, self.cupy.ndarray) and x.device == self.device

    def where(self, x):
        return f"cuda:{x.device.id}" if isinstance(x, self.cupy.ndarray) else "the host"

    def unclear(self, pivots, clear):
        return ~(pivots > clear * self.cupy.abs(pivots).max(axis=-1, keepdims=True)).all(axis=-1)

    def blank(self, rows, bad):
        self.cupy.copyto(rows, _np.nan, where=bad[:, None])


def kind_of(x):
    """The device kind of an array (_Torch, _CuPy), "jax" for a JAX GPU array, or None for a
    host array (a NumPy array, a list, a number)."""
    top = type(x).__module__.partition(".")[0]
    if top == "torch":
        return _Torch(x) if getattr(x, "is_cuda", False) else None
    if top == "cupy":
        return _CuPy(x)
    if top in ("jax", "jaxlib"):
        try:
            return "jax" if any(d.platform == "gpu" for d in x.devices()) else None
        except AttributeError:   # a tracer: under jax.jit, module.jax(name) is the way
            return None
    if hasattr(x, "__cuda_array_interface__") or _contact.dlpack_on_gpu(x):
        raise TypeError(f"{type(x).__name__}: a CUDA array of a kind rbdgen does not hold; pass a PyTorch tensor, "
                        "a CuPy array or a JAX array (DLPack converts the others without a copy)")
    return None


def on_device(args, out):
    """Whether a call has a device array among its inputs or out=."""
    return any(kind_of(x) is not None for x in (*args, out))


def call(function, body, args, out, flat=False):
    """function (a _function.Function) on device arrays: the kernel of its CUDA dialect. flat
    (PyTorch's op, out None): the result as (states, size), its parts not split."""
    d = function.description
    names, first = function.names, function.first
    kind = kind_of(args[first])
    if kind == "jax":
        return _through_dlpack(function, body, args, out)
    if kind is None:
        found = next(n for n, x in zip(names, (*args, out)) if kind_of(x) is not None)
        raise TypeError(f"{d.name}: {found} is a GPU array but {names[first]} is not; pass every state on the GPU")
    kernels = function.module.kernels()
    if not kernels.built:
        raise _cuda.CudaError(f"{d.name}: {names[first]} is a GPU array, but this module was built without CUDA; "
                              "rebuild it with rbdgen build --cuda")
    head = args[first]
    batch = head.ndim == 2
    count = head.shape[0] if batch else 1
    pointers, keep = [], []
    for port, x in zip(d.inputs, args):
        if port.per_state or (port.broadcast and x is not None and getattr(x, "ndim", 1) == 2):
            x = _state(kind, port, x, count if batch else None, d.name)
            shared = 0
        else:   # one value for the batch: a setting, a placement, one set of parameters
            if x is None:
                x = function.parameters.nominal
            x = x if kind.same(x) else kind.from_host(_np.ravel(_np.asarray(x, dtype=float)))
            x = x.reshape(1) if x.ndim == 0 else x   # (one number as a 0-d array, as on the host)
            x = _state(kind, port, x, None, d.name)
            shared = 1
        keep.append(x)
        pointers.append(_cuda.ctypes.c_void_p(kind.pointer(x)))
        if not port.per_state:
            pointers.append(_cuda.ctypes.c_int(shared))
    shape = ((count,) if batch else ()) + (() if function.scalar else tuple(d.shape))
    if out is None:
        out = kind.empty((count, d.size) if flat else shape)
    elif not _fits(kind, out, shape):
        raise ValueError(f"{d.name}: out= must be a contiguous float64 array of shape {shape} on {kind.where(head)}")
    lead = [_cuda.ctypes.c_long(body)] if function.per_body else []
    if count:
        kernels.launch(kind.ordinal(), d.cname, kind.stream(), lead + pointers + [_cuda.ctypes.c_void_p(kind.pointer(out))],
                       count)
        if d.pivots is not None:
            _redundant_as_nan(kind, d, out.reshape(count, d.size), None if d.damping is None else args[d.damping])
    if function.parts and not flat:
        lead_shape = tuple(out.shape[:1]) if batch else ()
        return tuple(out[..., start:stop].reshape(lead_shape + shape_) for start, stop, shape_ in function.parts)
    return out


def _fits(kind, out, shape):
    """Whether out= can take a result of `shape` as it is: contiguous float64 on the same device."""
    return kind.same(out) and kind.is_float64(out) and tuple(out.shape) == shape and kind.contiguous(out) is out


def settled(part, out):
    """A slice of a device result (a point's rows of a frame quantity) as a contiguous array of
    its kind, or copied into out= (a contiguous float64 array of its shape, on its device)."""
    kind = kind_of(part)
    if kind == "jax":
        if out is not None:
            raise ValueError("JAX arrays are immutable; out= is not for them")
        return part
    if out is None:
        return kind.contiguous(part)
    shape = tuple(part.shape)
    if not _fits(kind, out, shape):
        raise ValueError(f"out= must be a contiguous float64 array of shape {shape} on {kind.where(part)}")
    out[...] = part
    return out


def _redundant_as_nan(kind, d, rows, damping):
    """A contact or loop solve's states whose pivots are not clearly positive (redundant
    constraints): NaN but the pivots, unless damped. The host raises there (_contact); on the
    device that would wait for the GPU, so the rows say it."""
    if damping is not None and not kind.same(damping) and float(_np.ravel(damping)[0]) > 0:
        return
    pivots = rows[:, d.pivots.offset:d.pivots.stop]
    bad = kind.unclear(pivots, _CLEAR)
    if damping is not None and kind.same(damping):   # (given on the device: one for the batch)
        bad = bad & (damping.reshape(-1)[0] <= 0)
    kind.blank(rows[:, :d.pivots.offset], bad)   # (by a mask, not an index: no wait for the GPU, a CUDA graph captures it)


def _state(kind, port, x, count, name):
    """A device input as the kernel reads it: float64, contiguous, (count, size) or (size,)."""
    if not kind.same(x):
        raise TypeError(f"{name}: {port.name} is on {kind.where(x)}; pass it on the same GPU as the states "
                        "(no copy through the host is made)")
    if not kind.is_float64(x):
        raise TypeError(f"{name}: {port.name} is {kind.dtype(x)}; rbdgen's GPU functions take float64 "
                        "(docs/gpu.md says why not float32): convert it with .double() or .astype('float64')")
    want = (port.size,) if count is None else (count, port.size)
    if tuple(x.shape) != want:
        raise ValueError(f"{name}: {port.name} has shape {tuple(x.shape)}, expected {want}")
    return kind.contiguous(x)


def _through_dlpack(function, body, args, out):
    """JAX GPU arrays: viewed as CuPy (else PyTorch) arrays through DLPack, without a copy, and
    the result viewed back as JAX arrays."""
    import jax
    try:
        import cupy as bridge
        to, back = bridge.from_dlpack, jax.dlpack.from_dlpack
    except ImportError:
        try:
            import torch as bridge
            to, back = bridge.utils.dlpack.from_dlpack, jax.dlpack.from_dlpack
        except ImportError:
            raise ImportError("JAX GPU arrays in a module's functions pass through CuPy or PyTorch (DLPack): install "
                              "one, or use module.jax(name) under jax.jit") from None
    if out is not None:
        raise ValueError(f"{function.name}: JAX arrays are immutable; out= is not for them")
    converted = [to(x) if kind_of(x) == "jax" else x for x in args]
    result = call(function, body, converted, None)
    return tuple(back(r) for r in result) if isinstance(result, tuple) else back(result)
