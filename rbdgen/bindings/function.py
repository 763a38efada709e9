"""The generated functions of a module as Python calls them: the same file in every module (a
copy of rbdgen/bindings/function.py, as _function.py), used by its binding (runtime.py). A
Function calls one generated C function, read from its description (_description); an
Overloaded is the public function of one with overloads (rnea, aba: f_ext, passive)."""

import numpy as _np

from . import _arguments  # the same file as rbdgen/bindings/arguments.py
from . import _contact  # the same file as rbdgen/bindings/contact.py
from . import _description  # the same file as rbdgen/table/description.py
from . import _device  # the same file as rbdgen/bindings/device.py

_D = "double[]"
_empty = _np.empty
_FLOAT = _arguments._FLOAT
_vector, _one_number, _batch, _is_batch = _arguments.vector, _arguments.one_number, _arguments.batch, _arguments.is_batch
_threads, _output, _settled = _arguments.threads, _arguments.output, _arguments.settled


class Module:
    """What every Function of a module shares: its folder, the compiled library and cffi's
    from_buffer, the model parameters (_arguments.Parameters), each function's operation count,
    nq, the loops' and declared contacts' names and the module's name (its files')."""

    def __init__(self, here, lib, buffer, parameters, operations, nq, *, loops=(), contacts=(), name=None):
        self.here, self.lib, self.buffer, self.parameters, self.name = here, lib, buffer, parameters, name
        self.operations, self.nq, self.loops, self.contacts = operations, nq, loops, contacts
        # a closed chain's solves hold its loops, then the contacts declared at build time
        self.constraints = tuple(loops) + tuple(contacts)
        # what a call given params= is told when the module has none
        self.hints = {} if parameters.names else {"params": "this module has no model parameters; build it with "
                                                            "--parameters"}
        self.table = {}   # name -> Function, filled by the binding
        self._kernels = None

    def kernels(self):
        """The module's CUDA kernels (_cuda.Kernels), made at the first call on device arrays."""
        if self._kernels is None:
            self._kernels = _device._cuda.Kernels(self.here, self.name)
        return self._kernels


class Function:
    """What calling one generated function needs, read from its description."""

    def __init__(self, module, d):
        self.module = module
        if not (d.name.isidentifier() and all(n.isidentifier() for n in d.names)):
            raise ImportError(f"{module.here}: model.json names a function or input that is not an identifier; "
                              "rebuild the module with rbdgen build")
        self.description = d
        self.name, self.names, self.sizes = d.name, d.names, [port.size for port in d.inputs]
        self.shared = [port.shared for port in d.inputs]   # one value for a whole batch
        self.broadcast = [port.broadcast for port in d.inputs]   # per state, or one for a whole batch
        self.solves, self.per_body, self.scalar, self.shape = d.solves, d.per_body, d.scalar, d.shape
        self.first = self.shared.index(False)
        self.parts = tuple((p.offset, p.stop, p.shape) for p in d.parts) or None
        # a contact solve's pivots of G M^-1 G^T: its caller refuses redundant contacts by them
        self.pivots = d.pivots.offset if d.pivots else None
        self.c, self.batch = getattr(module.lib, d.cname), getattr(module.lib, d.cname + "_batch")
        self.parameters, self.param_names, self.buffer = module.parameters, module.parameters.names, module.buffer
        self.public = ("_" + d.name) if d.per_body else ("_declared_" + d.name) if d.declared else d.name
        operations = module.operations[d.name]
        self.doc = "\n".join([
            d.doc, ""] + ([
                "For the frame at `placement` (12 numbers: E row-major, then r) on `body`, as _frame gives",
                "them.", ""] if self.per_body else []) + [
            "Returns " + ("a float" if self.scalar else f"the arrays {', '.join(p.name for p in d.parts)} (views of "
                          f"one array of shape {self.shape})" if self.parts else f"an array of shape {self.shape}")
            + f" ({operations} operations in C{' at most' if self.per_body else ''}).",
            f"With a batch ({self.names[self.first]} of shape (B, {self.sizes[self.first]})), each result gets a "
            "leading B, computed in C on", "`threads` OpenMP threads (0: OMP_NUM_THREADS, else all cores).", ""])

    def result(self, flat):
        return float(flat[0]) if self.scalar else _parts(flat, self.parts) if self.parts else flat

    def __call__(self, body, args, out, threads):
        if type(args[self.first]) is not _np.ndarray and _device.on_device(args, out):
            return _device.call(self, body, args, out)
        threads = _threads(threads)   # checked for one state too: a wrong count is a mistake there as well
        lead = () if body is None else (body,)
        checked = False
        if self.broadcast[-1]:   # the model parameters: nominal for None, else checked
            args = list(args)
            checked = self.parameters.take(args, self.solves)
        # The common call (float64 vectors of the right size, no out=) goes straight to C: the
        # buffer requests themselves refuse non-contiguous arrays (ValueError), lists (TypeError).
        fast = False
        try:
            if out is None and all(x.shape == (n,) and x.dtype is _FLOAT for x, n in zip(args, self.sizes)):
                out = _empty(self.shape)
                self.c(*lead, *[self.buffer(_D, x) for x in args], self.buffer(_D, out))
                fast = True
        except (AttributeError, TypeError, ValueError):
            out = None
        if fast:
            if self.solves:
                self.finite(out.reshape(1, -1), args, checked)
            return self.result(out)
        # Every other call: batches, conversions, out=, and the errors for wrong arguments.
        args = list(args)
        for k, (name, n) in enumerate(zip(self.names, self.sizes)):
            if self.shared[k]:
                args[k] = _one_number(args[k], name) if n == 1 else _vector(args[k], n, name)
        first = self.first
        if _is_batch(args[first], self.sizes[first], self.names[first]):
            count = _np.shape(args[first])[0]   # (a list of states, converted below)
            c_args = []
            for k, (name, n) in enumerate(zip(self.names, self.sizes)):
                one = self.broadcast[k] and _np.ndim(args[k]) == 1   # one for every state (<name>_shared)
                if one:
                    args[k] = _vector(args[k], n, name)
                elif not self.shared[k]:
                    args[k] = _batch(args[k], n, name, None if k == first else count)
                c_args += [self.buffer(_D, args[k])] + ([int(one)] if self.broadcast[k] else [])
            out, target = _output(out, (count,) + (() if self.scalar else self.shape), tuple(args))
            if count:
                self.batch(count, threads, *lead, *c_args, self.buffer(_D, target))
            if self.solves and count:
                self.finite(target.reshape(count, -1), args, checked)
            settled = _settled(out, target)
            return _parts(settled, self.parts) if self.parts else settled
        for k, (name, n) in enumerate(zip(self.names, self.sizes)):
            if not self.shared[k]:
                args[k] = _vector(args[k], n, name)
        out, target = _output(out, self.shape, tuple(args))
        self.c(*lead, *[self.buffer(_D, x) for x in args], self.buffer(_D, target))
        if self.solves:
            self.finite(target.reshape(1, -1), args, checked)
        return self.result(_settled(out, target))

    def finite(self, rows, args, params_given):
        """ValueError naming the cause when a solve's result (rows, one per state) is not finite.
        Contacts that are redundant at a state (its pivots not clearly positive) are the
        caller's to name, by the pivots, unless an input is not finite or too large there."""
        inputs = list(zip(self.names, args))
        values = rows[:, :self.pivots] if self.pivots is not None else rows
        bad = ~_np.isfinite(values).all(axis=-1)
        if self.pivots is not None:
            unclear = _contact.unclear_pivots(rows[:, self.pivots:])
            if unclear.any():
                _arguments.refuse_input(len(rows), int(_np.argmax(unclear | bad)), inputs, self.param_names)
                if not self.description.declared:   # (the public function of declared contacts names them)
                    damping = float(_np.ravel(args[self.description.damping])[0])
                    _contact.refuse_redundant(rows[:, self.pivots:], damping, self.module.constraints,
                                              "loops and contacts" if self.module.contacts else "loops")
                return
        if bad.any():
            _arguments.solved(values, inputs, params_given, self.param_names)

    def define(self, namespace):
        """The public function, with its own signature (keywords by name, the defaults)."""
        d = self.description
        parameters = d.parameters(_description.MODULE_KEYWORDS)
        if _contact.keyword_names(parameters)[:-2] != list(self.names):
            raise ImportError(f"{self.module.here}: model.json's {d.name} takes its inputs out of order; rebuild the module")
        if self.per_body:
            parameters = (("body", _description.REQUIRED),) + parameters
            call = lambda body, *values: self(body, values[:-2], values[-2], values[-1])
        else:
            call = lambda *values: self(None, values[:-2], values[-2], values[-1])
        namespace[self.public] = _contact.public_function(self.public, parameters, call, self.doc,
                                                          namespace["__name__"], hints=self.module.hints)


class Overloaded:
    """The public function of a generated function with overloads (rnea, aba: f_ext, passive;
    table.description.Overload): its inputs, the overloads' keywords, params, out=, threads=."""

    def __init__(self, function, module):
        self.function, d = function, function.description
        self.states = [port.name for port in d.states]
        parameters = d.parameters(_description.MODULE_KEYWORDS)
        self.names = _contact.keyword_names(parameters)
        self.define = _contact.public_function(d.name, parameters, self, d.public_doc, module,
                                               hints=function.module.hints)

    def __call__(self, *values):
        given = dict(zip(self.names, values))
        out, threads = given.pop("out"), given.pop("threads")
        module = self.function.module

        def other(name):
            if name not in module.table:
                keyword = next(o.keyword for o in self.function.description.overloads if o.function == name)
                raise ValueError(f"{keyword}: this module was built without {name}; rebuild it with that function")
            return module.table[name]

        def forces(overload, value):
            rows = other(overload.function).description.port(overload.input).size // 6
            return _arguments.forces(value, given[self.states[0]], rows, module.nq)
        chosen = _description.apply_overloads(
            self.function.description.overloads, given, forces=forces,
            added=lambda name: other(name)(None, [given[n] for n in other(name).names], None, threads))
        function = self.function if chosen is None else other(chosen)
        return function(None, [given[n] for n in function.names], out, threads)


def _parts(flat, parts):
    """The arrays a flat result holds: views of it, with the batch dimension (if any) first."""
    lead = flat.shape[:-1]
    return tuple(flat[..., start:stop].reshape(lead + shape) for start, stop, shape in parts)
