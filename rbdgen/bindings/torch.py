"""A module's functions as PyTorch operators (the same file in every module, as _torch.py):
one torch.library custom op per function, rbdgen_<module>_<key>::<name>, whose CPU kernel is
the C batch and whose CUDA kernel is the CUDA dialect's (_device), with a fake kernel for
torch.compile, a vmap rule (the vmapped states become more states of one batch) and autograd
from the generated derivatives: the description's Jacobians, each block a part of another
generated function, itself called as an operator (so the backward runs where the states are).

The op takes (B, n) states and returns the (B, size) flat result; the public function around
it takes one state (n,) or any leading dimensions, and returns the module's shapes and parts."""

import threading

import numpy as _np
import torch
import torch.autograd.forward_ad as _forward_ad
import torch.utils._python_dispatch as _dispatch

from . import _contact, _description, _device, _torch_overloads

_F64 = torch.float64
_STATE, _PARAMETERS, _PLACEMENT, _SETTING = (_description.STATE, _description.PARAMETERS, _description.PLACEMENT,
                                             _description.SETTING)   # (an input's kind, as _invoke reads it)
_LIBRARIES = {}   # namespace -> torch.library.Library (one per module build in a process)
_LOCK = threading.RLock()   # the ops' definitions
_DEFINED = set()  # "namespace::name" of the ops defined (a build loaded twice defines them once)
CONSTANTS = 64    # settings and placements kept on a device, per module (Operators._constant)
_RANGES = {"damping": _contact.check_damping, "restitution": _contact.check_restitution}   # (numbers' ranges)


class Operators:
    """The custom ops of one module (`m`: the module), made on first use."""

    def __init__(self, m):
        self.m = m
        self.namespace = f"rbdgen_{m._META['module']}_{m._META['build_key'][:10]}"
        self.ops, self.publics, self.plans, self.nominal, self.constants = {}, {}, {}, {}, {}

    def op(self, name):
        if name not in self.ops:
            with _LOCK:   # (another thread could run an op defined but not yet given its autograd)
                if name not in self.ops:
                    self.ops[name] = self._define(name)
                    for function in self._derivative_functions(name):   # (before any call: a graph
                        self.op(function)                                # torch.compile cached may name them)
        return self.ops[name]

    def _derivative_functions(self, name):
        """The functions of this module that the backward of `name` calls."""
        d, m = self.m._DESCRIPTIONS[name], self.m
        base = _torch_overloads.base_of(self.m, name)
        named = {b.function for choice in (base or d).jacobians for b in choice}
        if base is not None:
            named |= {*_torch_overloads.NEEDED, "aba_derivatives"}
        return sorted(n for n in named if n in m._DESCRIPTIONS and n != name)

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
            # (rnea_fext, aba_fext: the functions rnea and aba call with f_ext; their derivatives are
            # the base's, with f_ext's own)
            torch.library.register_autograd(qualified, self._backward(d, _torch_overloads.base_of(m, name)),
                                            setup_context=_setup)
            torch.library.register_vmap(qualified, lambda info, dims, *a: _vmap(self, d, info, dims, a))
        return getattr(getattr(torch.ops, ns), name).default

    def _backward(self, d, base=None):
        """The backward of `d` from its Jacobians' blocks, or (`base`: d is what base calls with
        f_ext) from base's, f_ext's own by _torch_overloads."""
        ports = d.inputs
        blocks_of = d if base is None else base
        forced = None if base is None else next(o for o in base.overloads if o.function == d.name)

        def backward(ctx, grad):
            arguments = ctx.saved_tensors[:-1]
            body = ctx.body
            grads = [None] * len(ports)
            outputs = self._outputs(blocks_of)   # (a contact solve's pivots: none; not among the public results)
            for k, port in enumerate(ports):
                if not ctx.needs_input_grad[k + (1 if d.per_body else 0)]:
                    continue
                if forced is not None:
                    if port.name == forced.input:
                        grads[k] = _torch_overloads.gradient(self, base, port, arguments, ports, grad)
                        continue
                    _torch_overloads.check(self.m, base, port, ports[0].name)
                total = None
                for output, (start, stop) in outputs.items():
                    block = self._block(blocks_of, output, port.name)
                    if block is None:
                        raise RuntimeError(self._underivable(blocks_of, port.name))
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

    def _underivable(self, d, name):
        """Why d has no derivative with respect to input `name` here: a function to build, or none."""
        needed = sorted({b.function for choice in d.jacobians for b in choice if b.input == name} -
                        set(self.m._DESCRIPTIONS))
        if needed:
            return (f"{d.name}: its derivative with respect to {name} needs {' or '.join(needed)}, which this module "
                    f"was built without; rebuild it with {needed[0]}")
        return f"{d.name} has no derivative with respect to {name}; differentiate with respect to the other inputs"

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

    def _constant(self, device, value, what, name):
        """A setting or a frame's placement given as numbers, as a tensor on `device`: made once
        for each value (a copy to the GPU waits for the GPU, and a CUDA graph cannot capture it;
        the op only reads it), outside inference mode (a later call may need its gradient)."""
        if torch.compiler.is_compiling():   # (traced: a constant of the graph; Dynamo cannot trace the dtype check)
            return torch.as_tensor(_np.ravel(_np.asarray(value, dtype=float)), device=device)
        try:
            flat = _np.ravel(_contact.real_array(value, what))
        except TypeError as error:
            raise TypeError(f"{name}: {error}; give real numbers or a float64 tensor") from None
        if flat.size > 12:   # (more than a placement's 12: not one setting, which the checks after refuse)
            return torch.as_tensor(flat, device=device)
        if what in _RANGES and flat.size == 1:   # (as the module checks them)
            _RANGES[what](float(flat[0]))
        numbers = tuple(flat.tolist())
        key = (device, numbers)
        x = self.constants.get(key)
        if x is None:
            if len(self.constants) >= CONSTANTS:   # (values that change every call: the oldest go)
                self.constants.pop(next(iter(self.constants)))
            with torch.inference_mode(False):
                x = self.constants[key] = torch.tensor(numbers, dtype=_F64, device=device)
        return x

    def public(self, name):
        """The function with the module's signature on tensors (its description's parameters):
        the states (a function of a frame: then the frame, by name or index), the settings, the
        overloads' keywords (f_ext, passive: table.description.Overload), params."""
        if name in self.publics:
            return self.publics[name]
        m, d = self.m, self.m._DESCRIPTIONS[name]
        parameters = [("frame", default) if n == _placement(d) else (n, default) for n, default in d.parameters()]
        names = [n for n, _ in parameters]

        asked = [(names.index(overload.keyword), overload) for overload in d.overloads]

        def call(*values):
            given = dict(zip(names, values))
            for k, overload in asked:
                if overload.given(values[k]):
                    return self._invoke(_torch_overloads.apply(self, d, given, _tensor), given)
            return self._invoke(d, given)   # (no overload asked for: the function itself)

        self.publics[name] = m._contact.public_function(name, parameters, call, d.public_doc, None,
                                                        hints=m._FUNCTIONS.hints)
        # the ops now, not at a call, which torch.compile may trace (it cannot trace their definition)
        self.op(name)
        for overload in d.overloads:
            if overload.function in m._DESCRIPTIONS:
                self.public(overload.function)
        return self.publics[name]

    def family(self, name):
        """A frame quantity by its family's name (frame_jacobian(q, frame, reference=...)) or a
        point's (point_jacobian(q, frame, point)), as the module's, on the generated functions'
        operators (differentiable as they are)."""
        if name not in self.publics:
            m = self.m

            def evaluate(family, reference, frame, states, point=None, params=None):
                fname = f"{family}_{reference}" if reference else family
                if fname not in m._DESCRIPTIONS:
                    m._of_frame(family, reference)   # (the module's error)
                d = m._DESCRIPTIONS[fname]
                given = dict(zip((port.name for port in d.states), states), frame=frame, point=point, params=params)
                return self._invoke(d, given)
            keywords = (("params", None),) if m.param_names else ()
            if name in m._META["points"]:
                self.publics[name] = m._contact.point_function(name, m._META["points"][name], evaluate,
                                                               keywords=keywords)
            else:
                d = next(d for d in m._DESCRIPTIONS.values() if d.family == name)
                self.publics[name] = m._contact.frame_function(name, [port.name for port in d.states],
                                                               d.default_reference, d.family_doc, evaluate,
                                                               m._REFERENCES, keywords=keywords)
            source = m._META["points"][name]["family"] if name in m._META["points"] else name
            for d in m._DESCRIPTIONS.values():   # (the ops now: torch.compile cannot trace their definition)
                if d.family == source:
                    self.op(d.name)
        return self.publics[name]

    def _plan(self, d):
        """What _invoke reads of d, once: its table row, first state, and each input's name,
        kind (STATE, PARAMETERS, PLACEMENT, else a setting) and size."""
        function = self.m._FUNCTIONS.table[d.name]
        kinds = [_STATE if p.per_state else _PARAMETERS if p.broadcast else
                 _PLACEMENT if p.role == _description.PLACEMENT else _SETTING for p in d.inputs]
        first = d.inputs[function.first]
        self.plans[d.name] = (function, first.name, first.size,
                              tuple((p.name, kind, p.size) for p, kind in zip(d.inputs, kinds)))
        return self.plans[d.name]

    def _invoke(self, d, given):
        """Function `d` on the inputs `given` by name: checked, settings and parameters made
        tensors, then run (its kernel directly where nothing needs the dispatcher, else its op)."""
        m, name = self.m, d.name
        function, first, size, ports = self.plans.get(name) or self._plan(d)
        head = _tensor(given[first], first, name)
        if head.ndim == 0 or head.shape[-1] != size:
            raise ValueError(f"{name}: {first} has shape {tuple(head.shape)}, expected (..., {size})")
        lead, device, head_size = tuple(head.shape[:-1]), head.device, head.shape[-1]
        body, args = None, []
        for port, kind, size in ports:
            x = given.get(port)
            if kind == _STATE:   # (a state of the head's size: its shape, compared as it is)
                if not (isinstance(x, torch.Tensor) and x.shape == (head.shape if size == head_size else lead + (size,))
                        and x.device == device):
                    _mismatch(name, port, x, (first, lead + (size,), device))
                x = x if x.ndim == 2 else x.reshape((-1, size))
            elif kind == _PARAMETERS and x is not None:   # one set, or one a state (the kernel checks their size)
                if not (isinstance(x, torch.Tensor) and x.device == device and (x.ndim == 1 or x.shape[:-1] == lead)):
                    _mismatch(name, port, x, (first, lead + (size,), device), f"({size},) or ")
                x = x if x.ndim <= 2 else x.reshape((-1, size))
            elif kind == _PARAMETERS:   # the nominal ones
                if device not in self.nominal:
                    with torch.inference_mode(False):
                        self.nominal[device] = torch.tensor(_np.array(m._PARAMETERS.nominal), device=device)
                x = self.nominal[device]
            else:   # a setting, or a frame's placement (the frame by name or index)
                if kind == _PLACEMENT:   # (a point of the frame: its placement moved there)
                    body, x = m._frame(given["frame"])
                    x = x if given.get("point") is None else m._contact.point_placement(x, given["point"])
                if isinstance(x, torch.Tensor):
                    if port in _RANGES and x.device.type == "cpu" and x.numel() == 1:
                        _RANGES[port](float(x))
                    if x.device != device:   # (a few numbers on the host: kept on the device, as numbers are)
                        if x.device.type != "cpu" or x.numel() > 12:
                            raise ValueError(f"{name}: {port} is on {x.device}, {first} on {device}; pass them on "
                                             "one device")
                        x = self._constant(device, x.detach().numpy(), port, name)
                elif x is None:
                    raise TypeError(f"{name}: {port} is None; give a number or a float64 tensor")
                else:
                    x = self._constant(device, x, port, name)
            args.append(x)
        if not torch.compiler.is_compiling():   # (a compiled graph runs the op)
            _refuse_forward_mode(name, args)
        inputs = ([body] if d.per_body else []) + args
        if device.type in ("cpu", "cuda") and _direct(args):
            flat = _run(function, d, inputs, getattr(m, function.public) if device.type == "cpu" else None)
        else:
            try:
                flat = self.op(name)(*inputs)
            except RuntimeError as error:   # (PyTorch's own words there: "must override the setup_context")
                if "setup_context" not in str(error) or not _transform("Grad"):
                    raise
                raise RuntimeError(f"{name}: torch.func.grad and jacrev do not run custom operators' autograd in this "
                                   "PyTorch; use torch.autograd.grad, backward or torch.autograd.functional.jacobian "
                                   "(torch.func.vmap works)") from None
        if d.scalar:
            return flat.reshape(lead)
        if d.parts:   # (the declared contacts' functions: without the pivots, as the module's)
            return tuple(flat[:, p.offset:p.stop].reshape(lead + tuple(p.shape)) for p in d.parts
                         if not (d.declared and p.name == d.pivots.name))
        return flat if len(d.shape) == 1 and len(lead) == 1 else flat.reshape(lead + tuple(d.shape))


def _placement(d):
    """The name of the placement input of a function of a frame (None for the others)."""
    return next((port.name for port in d.inputs if port.role == _description.PLACEMENT), None)


def _mismatch(name, port, x, like, one=""):
    """The one-line error for input `port`, not a tensor like the head's (like: its name, the
    shape expected, its device)."""
    first, shape, device = like
    _tensor(x, port, name)
    if x.device != device:
        raise ValueError(f"{name}: {port} is on {x.device}, {first} on {device}; pass them on one device")
    raise ValueError(f"{name}: {port} has shape {tuple(x.shape)}, expected {one}{shape} (as {first}'s)")


def _tensor(x, what, name):
    """x, a tensor: else a one-line TypeError naming it."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: {what} is {'None' if x is None else 'a ' + type(x).__name__}; module.torch's "
                        "functions take float64 tensors (torch.as_tensor(x, dtype=torch.float64))")
    return x


def _refuse_forward_mode(name, tensors):
    """A one-line error where an input carries a forward-mode tangent (a forward_ad dual level,
    torch.func.jvp and jacfwd): PyTorch gives custom operators zero tangents there."""
    if getattr(_forward_ad, "_current_level", -1) < 0:
        return
    if any(isinstance(x, torch.Tensor) and _forward_ad.unpack_dual(x).tangent is not None for x in tensors):
        raise RuntimeError(f"{name}: forward-mode differentiation (torch.func.jvp, jacfwd, forward_ad) does not "
                           "reach PyTorch's custom operators (their tangents would be zero); use reverse mode "
                           "(backward, torch.autograd.grad, torch.autograd.functional.jacobian), or module.jax")


def _transform(kind):
    """Whether a torch.func transform of `kind` ("Grad", ...) is on."""
    if _INTERPRETERS is None:
        return False
    return any(str(i.key()).endswith("." + kind) for i in _INTERPRETERS())


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
try:
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters as _INTERPRETERS
except ImportError:
    _INTERPRETERS = None


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
    if d.declared and d.pivots is not None:   # (the module's public function refuses them; on a GPU: NaN rows)
        damping = 0.0 if d.damping is None else float(arrays[d.damping].reshape(-1)[0])
        _contact.refuse_redundant(out.numpy()[:, d.pivots.offset:d.pivots.stop], damping, function.module.contacts)
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
        if dim is None and not port.per_state and x.ndim <= 1:   # one value for the whole batch
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
