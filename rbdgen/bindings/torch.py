"""A module's functions as PyTorch operators (the same file in every module, as _torch.py):
one torch.library custom op per function, rbdgen_<module>_<key>::<name>, whose CPU kernel is
the C batch and whose CUDA kernel is the CUDA dialect's (_device), with a fake kernel for
torch.compile, a vmap rule (the vmapped states become more states of one batch) and autograd
from the generated derivatives: the description's Jacobians, each block a part of another
generated function, itself called as an operator (so the backward runs where the states are).

The op takes (B, n) states and returns the (B, size) flat result; the public function around
it takes one state (n,) or any leading dimensions, and returns the module's shapes and parts."""

import numpy as _np
import torch
import torch.utils._python_dispatch as _dispatch

from . import _description, _device

_F64 = torch.float64
_LIBRARIES = {}   # namespace -> torch.library.Library (one per module build in a process)
_DEFINED = set()  # "namespace::name" of the ops defined (a build loaded twice defines them once)
CONSTANTS = 64    # settings and placements kept on a device, per module (Operators._constant)


class Operators:
    """The custom ops of one module (`m`: the module), made on first use."""

    def __init__(self, m):
        self.m = m
        self.namespace = f"rbdgen_{m._META['module']}_{m._META['build_key'][:10]}"
        self.ops, self.nominal, self.constants = {}, {}, {}

    def op(self, name):
        if name not in self.ops:
            self.ops[name] = self._define(name)
        return self.ops[name]

    def _define(self, name):
        m, ns = self.m, self.namespace
        function = m._FUNCTIONS.table[name]
        d = function.description
        qualified = f"{ns}::{name}"
        library = _LIBRARIES.get(ns)
        if library is None:
            library = _LIBRARIES[ns] = torch.library.Library(ns, "FRAGMENT")
        if qualified not in _DEFINED:
            _DEFINED.add(qualified)
            head = "int body, " if d.per_body else ""
            library.define(f"{name}({head}" + ", ".join(f"Tensor {port.name}" for port in d.inputs) + ") -> Tensor")
            entry = getattr(m, function.public)   # the module's C entry point
            library.impl(name, lambda *a: _run(function, d, a, entry), "CPU")
            library.impl(name, lambda *a: _run(function, d, a, None), "CUDA")
            torch.library.register_fake(qualified)(lambda *a: _fake(function, d, a))
            torch.library.register_autograd(qualified, self._backward(d), setup_context=_setup)
            torch.library.register_vmap(qualified, lambda info, dims, *a: _vmap(self, d, info, dims, a))
        return getattr(getattr(torch.ops, ns), name).default

    def _backward(self, d):
        ports = d.inputs

        def backward(ctx, grad):
            arguments = ctx.saved_tensors[:-1]
            body = ctx.body
            grads = [None] * len(ports)
            outputs = self._outputs(d)
            if None not in outputs:   # a part no derivative is generated for (a contact solve's pivots)
                for part in d.parts:
                    if part.name not in outputs and bool(grad[:, part.offset:part.stop].any()):
                        raise RuntimeError(f"{d.name}: {part.name} has no generated derivative; "
                                           "differentiate the other parts only")
            for k, port in enumerate(ports):
                if not ctx.needs_input_grad[k + (1 if d.per_body else 0)]:
                    continue
                total = None
                for output, (start, stop) in outputs.items():
                    block = self._block(d, output, port.name)
                    if block is None:
                        raise RuntimeError(f"{d.name}: no derivative with respect to {port.name} is generated; "
                                           "build the module with the derivative functions (docs/gpu.md)")
                    source = self.m._DESCRIPTIONS[block.function]
                    values = [_given(arguments, ports, x, grad) for x in source.inputs]
                    flat = self.op(block.function)(*(([body] if source.per_body else []) + values))
                    part = source.part(block.part) if block.part else _description.Part(source.name, source.shape, 0)
                    # (a block is its part read as a matrix of the input's columns: dM/dq's (nv nv) x nv)
                    rows, columns = _np.prod(part.shape[:-1], dtype=int), part.shape[-1]
                    jacobian = flat[:, part.offset:part.stop].reshape(flat.shape[0], rows, columns)[:, block.row:, :]
                    if jacobian.shape[-1] != port.size:
                        raise RuntimeError(f"{d.name}: the derivative with respect to {port.name} is in its tangent "
                                           f"space ({jacobian.shape[-1]} of {port.size} coordinates): use the "
                                           "derivative functions themselves")
                    rows = grad[:, start:stop].reshape(grad.shape[0], stop - start)
                    if block.transform == _description.ROTATION:   # dR = [J_w dq]x R: rows to the angular velocity's
                        R = ctx.saved_tensors[-1][:, start:stop].reshape(-1, 3, 3)
                        A = rows.reshape(-1, 3, 3) @ R.transpose(1, 2)
                        rows = torch.stack([A[:, 2, 1] - A[:, 1, 2], A[:, 0, 2] - A[:, 2, 0], A[:, 1, 0] - A[:, 0, 1]], 1)
                    elif block.transform == _description.INVERSE:   # A = B^-1: <G, -A dB A> = <-A^T G A^T, dB>
                        A = ctx.saved_tensors[-1][:, start:stop].reshape(rows.shape[0], *d.shape).transpose(1, 2)
                        rows = -(A @ rows.reshape(A.shape) @ A).reshape(rows.shape)
                    term = torch.einsum("bi,bij->bj", rows, jacobian[:, :rows.shape[1]])
                    total = term if total is None else total + term
                if total is not None and not port.per_state:   # one value for the batch: summed over it
                    total = total.sum(0) if arguments[k].ndim == 1 else total
                grads[k] = total
            return ((None,) if d.per_body else ()) + tuple(grads)
        return backward

    def _outputs(self, d):
        """{output name (None: the whole result): (start, stop) in the flat result}."""
        names = list(dict.fromkeys(block.output for block in d.jacobians[0])) if d.jacobians else [None]
        return {n: (0, d.size) if n is None else (d.part(n).offset, d.part(n).stop) for n in names}

    def _block(self, d, output, name):
        """The first choice's block d output / d name whose functions this module has."""
        for choice in d.jacobians:
            blocks = [b for b in choice if b.output == output and b.input == name]
            if blocks and blocks[0].function in self.m._DESCRIPTIONS:
                return blocks[0]
        return None

    def _constant(self, device, value):
        """A setting or a frame's placement given as numbers, as a tensor on `device`: made once
        for each value (a copy to the GPU waits for the GPU, and a CUDA graph cannot capture it;
        the op only reads it)."""
        flat = _np.ravel(_np.asarray(value, dtype=float))
        # (traced: a constant of the graph; more numbers than a placement's 12: not one setting, which
        # the checks after refuse, and no key of a cache)
        if torch.compiler.is_compiling() or flat.size > 12:
            return torch.as_tensor(flat, device=device)
        numbers = tuple(flat.tolist())
        key = (device, numbers)
        x = self.constants.get(key)
        if x is None:
            if len(self.constants) >= CONSTANTS:   # (values that change every call: the oldest go)
                self.constants.pop(next(iter(self.constants)))
            x = self.constants[key] = torch.tensor(numbers, dtype=_F64, device=device)
        return x

    def public(self, name):
        """The function with the module's signature on tensors: the states (a function of a frame:
        then the frame, by name or index), the settings, params= by keyword."""
        d = self.m._DESCRIPTIONS[name]
        op = self.op(name)
        function = self.m._FUNCTIONS.table[name]
        kernels = {"cpu": getattr(self.m, function.public), "cuda": None}   # _run's
        # each input: 2 a state (rows of the batch), 1 the parameters (one set, or one a state), 0 else
        ports = [(port, 2 if port.per_state else 1 if port.broadcast else 0) for port in d.inputs]
        matrix, takes_params = len(d.shape) == 1, any(port.broadcast for port in d.inputs)

        def call(*values, params=None, **settings):
            body = None
            if d.per_body:   # the states, then the frame (a name or an index in `frames`)
                values = list(values)
                frame = values.pop(len(d.states))
                body, placement = self.m._frame(frame)
                values.insert(len(d.states), placement)
            head = values[function.first]
            lead = tuple(head.shape[:-1])
            device = head.device
            args = []
            given = list(values) + [None] * (len(d.inputs) - len(values))
            missing = settings or len(values) < len(d.inputs) or any(x is None for x in values)
            for k, port in enumerate(d.inputs if missing else ()):   # a setting not given: its default
                if port.name in settings:                           # (a keyword names it)
                    given[k] = settings.pop(port.name)
                elif given[k] is None and port.broadcast:
                    given[k] = params
                elif given[k] is None and port.default is not None:
                    given[k] = port.default
            if settings:
                raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(settings))!r}")
            if params is not None and not takes_params:
                raise TypeError(f"{name}() got an unexpected keyword argument 'params': this module has no model "
                                "parameters; build it with --parameters")
            for (port, batching), x in zip(ports, given):
                if batching == 2 or (batching and x is not None and x.ndim > 1):
                    x = x if x.ndim == 2 else x.reshape((-1, port.size))   # (the kernel checks the size)
                elif batching and x is None:
                    if device not in self.nominal:
                        self.nominal[device] = torch.tensor(_np.array(self.m._PARAMETERS.nominal), device=device)
                    x = self.nominal[device]
                elif not isinstance(x, torch.Tensor):
                    x = self._constant(device, x)
                args.append(x)
            inputs = ([body] if d.per_body else []) + args
            flat = _run(function, d, inputs, kernels[device.type]) if device.type in kernels and _direct(args) \
                else op(*inputs)
            if d.scalar:
                return flat.reshape(lead)
            if d.parts:
                return tuple(flat[:, p.offset:p.stop].reshape(lead + tuple(p.shape)) for p in d.parts)
            return flat if matrix and len(lead) == 1 else flat.reshape(lead + tuple(d.shape))
        call.__name__, call.__doc__ = name, d.public_doc
        return call


def _direct(tensors):
    """Whether a call may run the op's kernel itself rather than through PyTorch's dispatcher
    (whose autograd layer for an op defined in Python costs more than the kernel on small
    batches): plain tensors that need no gradient, outside torch.compile, torch.func, tracing
    (torch.jit.trace, ONNX export) and PyTorch's modes, each of which must see the op."""
    if _WRAPPED is None or torch.compiler.is_compiling() or torch.jit.is_tracing() or _mode_active():
        return False
    grad = torch.is_grad_enabled()
    return all(type(x) is torch.Tensor and not (grad and x.requires_grad) and not _WRAPPED(x) for x in tensors)


def _mode_active():
    """Whether a TorchFunctionMode or TorchDispatchMode is on (where PyTorch lacks the private
    functions that say so, as if one were)."""
    try:
        return torch._C._is_torch_function_mode_enabled() or _dispatch._get_current_dispatch_mode() is not None
    except AttributeError:
        return True


# (private functions of torch.func's and of the modes': where they are missing, every call goes
# through the dispatcher)
_WRAPPED = getattr(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", None)


def _given(arguments, ports, port, like):
    """Input `port` of a source function: this function's input of that name, else zeros."""
    for x, p in zip(arguments, ports):
        if p.name == port.name:
            return x
    return like.new_zeros((like.shape[0], port.size))


def _setup(ctx, inputs, output):
    body = inputs[0] if isinstance(inputs[0], int) else None
    ctx.body = body
    ctx.save_for_backward(*[x for x in inputs if isinstance(x, torch.Tensor)], output)


def _run(function, d, args, entry):
    """The op's kernel: on the CPU, `entry` (the module's C entry point, which checks what it
    is given as any call does); on the GPU (entry None), the CUDA dialect's kernel."""
    body, tensors = (args[0], args[1:]) if d.per_body else (None, args)
    for port, x in zip(d.inputs, tensors):
        if x.dtype != _F64:
            raise TypeError(f"{d.name}: {port.name} is {str(x.dtype).replace('torch.', '')}; rbdgen's functions take "
                            "float64 tensors (.double())")
    if entry is None:   # (bindings/device.py checks the rest, as for any call on the GPU)
        return _device.call(function, body, tensors, None, flat=True)
    count = tensors[function.first].shape[0]
    out = torch.empty((count, d.size), dtype=_F64, device="cpu")
    shape = (count,) + (() if d.scalar else tuple(d.shape))
    arrays = [x.contiguous().numpy() for x in tensors]
    # (the parameters by keyword: rnea and aba take f_ext and passive before them)
    entry(*(() if body is None else (body,)), *[x for x, port in zip(arrays, d.inputs) if not port.broadcast],
          **{port.name: x for x, port in zip(arrays, d.inputs) if port.broadcast}, out=out.numpy().reshape(shape))
    return out


def _fake(function, d, args):
    tensors = args[1:] if d.per_body else args
    return tensors[function.first].new_empty((tensors[function.first].shape[0], d.size))


def _vmap(ops, d, info, dims, args):
    """A vmapped op: the vmapped dimension times the states, one batch. A vmapped set of model
    parameters (one per vmapped entry) is repeated for that entry's states."""
    lead = 1 if d.per_body else 0
    size = info.batch_size
    first = lead + [p.per_state for p in d.inputs].index(True)
    states = args[first] if dims[first] is None else args[first].movedim(dims[first], 0)[0]
    per = states.shape[0]   # the states of one vmapped entry
    flat = list(args[:lead])
    for port, x, dim in zip(d.inputs, args[lead:], dims[lead:]):
        if dim is None and not port.per_state and x.ndim == 1:   # one value for the whole batch
            flat.append(x)
            continue
        if not port.per_state and not port.broadcast:
            raise ValueError(f"{d.name}: vmap over {port.name}, a value shared by the batch, is not supported; "
                             "vmap over the states")
        x = x.unsqueeze(0).expand((size,) + tuple(x.shape)) if dim is None else x.movedim(dim, 0)
        if port.broadcast and x.ndim == 2:
            x = x.unsqueeze(1).expand(size, per, x.shape[-1])
        flat.append(x.reshape((-1, x.shape[-1])))
    out = ops.op(d.name)(*flat)
    return out.reshape(size, -1, d.size), 0
