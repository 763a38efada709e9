"""JAX functions of a generated module (robot.jax(name); docs/jax.md): the same file in every
module (a copy of rbdgen/bindings/jax.py), imported only when robot.jax is called.

Each function calls the module's compiled C through the XLA FFI (a handler in _jax_ffi.c,
compiled against the installed jaxlib on first use and kept beside the module: far cheaper
than jax.pure_callback), under jax.vmap the generated batch entry point. Its public functions
take what the module's take (each description's parameters, overloads included), without
out= and threads=; params left out is nominal_params, a constant. Differentiation uses the
generated derivatives through custom JVP rules, from the derivative functions each
description names (its `jacobians`, which CasADi reads too), the bodies' Jacobians for f_ext
and frame_jacobian for frame_placement; any other function, one whose derivative function was
not built, or q with quaternions (the derivatives are in the tangent space) raises, naming
what to do. Float64 only: jax.config.update("jax_enable_x64", True) first. Where JAX has
GPUs, a call lowered for the CUDA platform launches the module's CUDA kernel instead, on XLA's
stream and device buffers (_jax_ffi.py; the module must be built with --cuda).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from . import _jax_ffi


class Bridge:
    """The JAX functions of one module; robot.jax(name) asks it for one."""

    def __init__(self, module):
        self.m = module
        # one name for each handler's library: builds of one robot in other folders load their own
        handler = _jax_ffi.handler()
        self.target = f"rbdgen_{module._META['module']}_{handler:x}"
        jax.ffi.register_ffi_target(self.target, jax.ffi.pycapsule(handler), platform="cpu")
        self.made, self.gpu = {}, None
        if _jax_ffi.gpu_ordinals():   # JAX has GPUs: the CUDA platform's branch too
            self.gpu = _jax_ffi.Launcher(module, _jax_ffi.handler("rbdgen_jax_cuda_call"), self.target + "_cuda")

    # ---------------------------------------------------------------- calls of the C ---

    def address(self, c_function):
        return np.int64(int(self.m._ffi.cast("uintptr_t", c_function)))

    def function(self, fname, threads=0):
        """fname's C as a JAX function of arrays (inputs in its order; a per-body function takes
        the body first, as a Python int) returning what the module's function returns: a float,
        an array, or its parts, each a result of the FFI call of its own (slices of one result
        would cost XLA an operation each, slower than the call: docs/performance.md, JAX)."""
        d = self.m._DESCRIPTIONS[fname]
        kernel, batch = (self.address(getattr(self.m._lib, d.cname + suffix)) for suffix in ("_eval", "_eval_batch"))
        shared = np.int64(sum(1 << k for k, port in enumerate(d.inputs) if port.shared))
        parts = [(p.offset, p.stop, () if d.scalar else p.shape) for p in d.entry_parts]
        split = len(parts) > 1
        names = d.names
        defaults = {port.name: port.default for port in d.inputs if port.default is not None}
        defaults.update({port.name: self.m.nominal_params for port in d.inputs if port.broadcast})

        def call(*args):
            _require_x64()
            body, args = (args[0], args[1:]) if d.per_body else (-1, args)
            missing = names[len(args):]
            if len(args) > len(names) or any(n not in defaults for n in missing):
                raise TypeError(f"{fname} takes ({', '.join(names)}), got {len(args)} arguments")
            args = tuple(args) + tuple(defaults[n] for n in missing)
            xs = []
            for x, port in zip(args, d.inputs):
                if jnp.iscomplexobj(x):   # (float64 would drop the imaginary part)
                    raise TypeError(f"{fname}: {port.name} is complex; rbdgen's functions take real numbers")
                x = jnp.asarray(x, dtype=jnp.float64)
                if port.size == 1 and port.shared:
                    x = x[..., None]
                if x.ndim == 0 or x.shape[-1] != port.size:
                    raise ValueError(f"{fname}: {port.name}: expected (..., {port.size}), got {x.shape}")
                xs.append(x)
            lead = jnp.broadcast_shapes(*[x.shape[:-1] for x in xs])
            xs = [jnp.broadcast_to(x, lead + x.shape[-1:]) for x in xs]
            results = [jax.ShapeDtypeStruct(lead + (stop - start,), jnp.float64) for start, stop, _ in parts]
            cpu = lambda *xs: jax.ffi.ffi_call(self.target, results, vmap_method="broadcast_all")(
                *xs, kernel=kernel, batch=batch, body=np.int64(body), shared=shared, threads=np.int64(threads))
            outs = cpu(*xs) if self.gpu is None else \
                jax.lax.platform_dependent(*xs, **{"cpu": cpu, **self.gpu.branch(d, body, lead, parts)})
            shaped = tuple(out.reshape(lead + shape) for out, (_, _, shape) in zip(outs, parts))
            return shaped if split else shaped[0]
        return call

    def has(self, fname):
        return fname in self.m._DESCRIPTIONS

    # ---------------------------------------------------------------- public functions ---

    def make(self, name, threads=0):
        key = (name, threads)
        if key not in self.made:
            self.made[key] = self.build(name, threads)
        return self.made[key]

    def build(self, name, threads):
        m = self.m
        d = m._DESCRIPTIONS.get(name)
        if d is not None and not d.per_body:   # a function of states (the declared contacts' too)
            return self.of_states(name, threads)
        if name == "frame_placement" and self.has("frame_placement"):
            return self.frame_placement(threads)
        if name in self.m._FAMILIES or name in self.m._META["points"]:   # of a frame, a point
            return self.frame_quantity(name, threads)
        if name in ("contact_dynamics", "impulse_dynamics", "contact_inertia"):
            raise ValueError(f"{name}: JAX calls the contacts declared at build time (rbdgen build --contact "
                             "FRAME:KIND), and this module declares none")
        raise ValueError(f"{name!r} is not a function of this module that JAX can call; it has "
                         f"{', '.join(self.available())}")

    def available(self):
        m = self.m
        names = [n for n, d in m._DESCRIPTIONS.items() if not d.per_body]
        names += [n for n in (*m._FAMILIES, *m._META["points"]) if callable(getattr(m, n, None))]
        return sorted(set(names))

    def differentiable(self, name, threads):
        """name's C as a JAX function of its inputs in order, with its derivatives."""
        d = self.m._DESCRIPTIONS[name]
        function = self.function(name, threads)
        if d.pivots is not None:
            function = _checked_pivots(function, d.damping, self.m._contact.PIVOT_CLEAR)
        return _differentiable(function, self.rule(name), d.names, name, self.m)

    def of_states(self, name, threads):
        """The public function of a function of states, as the module's (its description's
        parameters; params None: nominal_params, then a constant), with its overloads (f_ext,
        passive: table.description.Overload)."""
        m, d = self.m, self.m._DESCRIPTIONS[name]
        plain = self.differentiable(name, threads)
        parameters = d.parameters()
        names = [n for n, _ in parameters]

        def other(name):
            if not self.has(name):
                keyword = next(o.keyword for o in d.overloads if o.function == name)
                raise ValueError(f"{keyword}: this module was built without {name}; rebuild it with that function")
            return m._DESCRIPTIONS[name]

        def forces(overload, value):   # (..., nbodies, 6) rows [force; torque]
            rows = other(overload.function).port(overload.input).size // 6
            if jnp.iscomplexobj(value):
                raise TypeError(f"{name}: {overload.keyword} is complex; rbdgen's functions take real numbers")
            f = jnp.asarray(value, dtype=jnp.float64)
            if f.shape[-2:] != (rows, 6):
                raise ValueError(f"{overload.keyword}: expected (..., {rows}, 6) (rows [force; torque] per joint), "
                                 f"got {f.shape}")
            return f.reshape(f.shape[:-2] + (6 * rows,))

        def call(*values):
            given = dict(zip(names, values))
            name = m._description.apply_overloads(
                d.overloads, given, forces=forces,
                added=lambda name: self.make(name, threads)(*(given[n] for n in other(name).names)))
            chosen, function = (d, plain) if name is None else (other(name), self.differentiable(name, threads))
            if "params" in given:
                given["params"] = _params(m, given["params"])[0]
            return function(*(given[n] for n in chosen.names))
        return m._contact.public_function(name, parameters, call, d.public_doc, None)

    def frame_placement(self, threads):
        m = self.m
        split = self.function("frame_placement", threads)

        def placement(q, frame, *params):
            body, on_body = m._frame(frame)
            return split(body, q, on_body, *params)

        def rule(q, frame, dq, R, *params):
            body, on_body = m._frame(frame)
            J = self.function(self.require("frame_jacobian_local_world_aligned", "frame_placement"), threads)(
                body, q, on_body, *params)
            twist = jnp.einsum("...ij,...j->...i", J, dq)
            return (_skew(twist[..., 3:]) @ R, twist[..., :3])

        return _with_frame(placement, rule, m, "frame_placement")

    def frame_quantity(self, name, threads):
        """A public function of a frame or a point (rbdgen.bindings.contact: as the module's),
        on the generated C through the FFI; not differentiable."""
        m = self.m
        if not callable(getattr(m, name, None)):
            raise ValueError(f"this module was built without {name}; rebuild it with that function")

        def evaluate(family, reference, frame, states, point=None, params=None):
            body, on_body = m._frame(frame)
            if point is not None:
                on_body = m._contact.point_placement(on_body, point)
            fname = f"{family}_{reference}" if reference else family
            if not self.has(fname):
                m._of_frame(family, reference)   # the module's error
            return _refuse_derivative(self.function(fname, threads), name, m, per_body=True)(
                body, *states, on_body, *_params(m, params))
        keywords = (("params", None),) if m.param_names else ()
        if name in m._META["points"]:
            return m._contact.point_function(name, m._META["points"][name], evaluate, keywords=keywords)
        d = next(d for d in m._DESCRIPTIONS.values() if d.family == name)
        return m._contact.frame_function(name, [port.name for port in d.states], d.default_reference, d.family_doc,
                                         evaluate, m._REFERENCES, keywords=keywords)

    # ---------------------------------------------------------------- derivatives ---

    def require(self, fname, of):
        if not self.has(fname):
            raise ValueError(f"JAX: differentiating {of} needs {fname}, which this module was built without; "
                             f"rebuild it with {fname}")
        return fname

    def rule(self, name):
        """The JVP of `name` as a function (primals, tangents) -> tangent of the result, or None:
        from the derivative functions the table names for it (its `jacobians`: the first choice
        whose functions were built), each called with this function's inputs by name (zero for
        an input it does not take: rnea_derivatives(q, v, 0) gives nle's)."""
        m = self.m
        forced = {o.function: d.name for d in m._DESCRIPTIONS.values() for o in d.overloads
                  if o.kind == m._description.FORCES}
        if name in forced:
            return _summed(self.forces_rule(forced[name]))
        d = m._DESCRIPTIONS[name]
        if not d.jacobians:
            return None
        # a choice's blocks count for the inputs this function takes (params: with model
        # parameters); the parameters' derivative function is required when params is differentiated
        choices = [[block for block in c if block.input in d.names] for c in d.jacobians]
        parameters = lambda block: d.port(block.input).role == m._description.PARAMETERS
        sources = lambda choice: [block.function for block in choice if not parameters(block)]
        # (else the first: each block is required when its input is differentiated, which then
        # says what to build)
        choice = next((c for c in choices if all(self.has(s) for s in sources(c))), choices[0])
        outputs = list(dict.fromkeys(block.output for block in d.jacobians[0]))   # every choice's
        blocks = {(block.output, block.input): block for block in choice}

        def rule(primals, tangents, value=None):
            given = dict(zip(d.names, primals))
            # (as function() broadcasts; a setting of one number is one per state, its shape the states')
            one = {port.name for port in d.inputs if port.size == 1 and port.shared}
            per_state = lambda n, x: x[..., None] if n in one else x
            lead = jnp.broadcast_shapes(*(jnp.shape(per_state(n, jnp.asarray(x)))[:-1]
                                          for n, x in zip(d.names, primals)))
            computed = {}

            def value_of(source, part):
                if source not in computed:
                    s = m._DESCRIPTIONS[source]
                    args = [given[x.name] if x.name in given else jnp.zeros(jnp.shape(primals[0])[:-1] + (x.size,))
                            for x in s.inputs]
                    computed[source] = self.function(source)(*args)
                value = computed[source]
                if part is None:
                    return value
                return value[[p.name for p in m._DESCRIPTIONS[source].parts].index(part)]

            result = []
            for output in outputs:
                terms = []
                for x, t in zip(d.names, tangents):
                    if t is None:
                        continue
                    block = blocks.get((output, x))
                    if block is None:
                        raise ValueError(f"JAX: {name} has no derivative with respect to {x}")
                    self.require(block.function, name)
                    source = value_of(block.function, block.part)   # (its part as a matrix of t's columns)
                    part = m._DESCRIPTIONS[block.function].part(block.part).shape if block.part else \
                        m._DESCRIPTIONS[block.function].shape
                    source = source.reshape(source.shape[:source.ndim - len(part)] + (math.prod(part[:-1]), part[-1]))
                    source = source[..., block.row:, :]
                    term = jnp.einsum("...ij,...j->...i", source, per_state(x, t))
                    if block.transform == m._description.INVERSE:   # the value A = B^-1: dA = -A dB A
                        term = -(value @ term.reshape(value.shape) @ value)
                    terms.append(term)
                shape = lead + (() if d.scalar else tuple(d.shape if output is None else d.part(output).shape))
                result.append(sum(terms[1:], terms[0]).reshape(shape) if terms else None)
            return result[0] if outputs == [None] else tuple(result)
        return rule

    def forces_rule(self, base):
        """The function that `base` (rnea, aba) calls with f_ext: d/dv and d/da (d/dtau) as
        without forces; d/df_ext exact, -sum_i J_i^T df_i for rnea (J_i body i's Jacobian in its
        own frame), M^-1 sum_i J_i^T df_i for aba; d/dq depends on f_ext through the bodies'
        motion, which no generated function gives: differentiating with respect to q raises."""
        m, name = self.m, f"{base} with f_ext"
        njoints = len(m.joint_names)
        mv = lambda D, t: jnp.einsum("...ij,...j->...i", D, t)

        origins = [n for n in m.param_names if n.startswith("origin_")]

        def rule(primals, tangents):
            (q, v, x, _), params = primals[:4], tuple(primals[4:])
            (dq, dv, dx, df), dparams = tangents[:4], (tuple(tangents[4:]) or (None,))[0]
            if dparams is not None and (base == "aba" or origins):
                raise ValueError(f"JAX: {base} with f_ext has no derivative with respect to params "
                                 + ("(the bodies' Jacobians move with origin parameters, as " + origins[0] + ")"
                                    if base == "rnea" else "") + f"; call {base} without f_ext to differentiate "
                                 "with respect to params")
            if dq is not None:
                raise ValueError(f"JAX: {base} with f_ext has no derivative with respect to q (f_ext is given in "
                                 f"the moving bodies' frames); differentiate with respect to v, "
                                 f"{'a' if base == 'rnea' else 'tau'} and f_ext, or call {base} without f_ext")
            terms = []
            if base == "rnea":
                if dv is not None:
                    terms.append(mv(self.function(self.require("rnea_derivatives", name))(q, v, x, *params)[1], dv))
                if dx is not None:
                    terms.append(mv(self.function(self.require("crba", name))(q, *params), dx))
                if dparams is not None:   # f_ext's share does not depend on these parameters
                    D = self.function(self.require("rnea_parameter_derivatives", name))(q, v, x, *params)
                    terms.append(mv(D, dparams))
            else:
                D = self.function(self.require("aba_derivatives", name))(q, v, x, *params)
                terms += [mv(Dk, t) for Dk, t in zip(D[1:], (dv, dx)) if t is not None]
            if df is not None:
                jacobian = self.function(self.require("frame_jacobian_local_world_aligned", name))
                placement = self.function(self.require("frame_placement", name), 0)
                identity = np.array([1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0], dtype=float)
                generalized = 0
                for body in range(njoints):
                    R = placement(body, q, identity, *params)[0]
                    J = jacobian(body, q, identity, *params)
                    f_body = df[..., 6 * body:6 * body + 6]
                    force = mv(R, f_body[..., :3])
                    torque = mv(R, f_body[..., 3:])
                    generalized = generalized + jnp.einsum("...ji,...j->...i", J, jnp.concatenate([force, torque], -1))
                if base == "rnea":
                    terms.append(-generalized)
                else:
                    terms.append(mv(D[2], generalized))
            return terms
        return rule


def _require_x64():
    if not jax.config.jax_enable_x64:
        raise RuntimeError('rbdgen\'s JAX functions compute in float64: call jax.config.update("jax_enable_x64", '
                           'True) at start-up (or set JAX_ENABLE_X64=1)')


def _summed(terms_of):
    """A rule from one that returns the list of the tangent's terms (empty: zero)."""
    def rule(primals, tangents, value=None):
        terms = terms_of(primals, tangents)
        return sum(terms[1:], terms[0]) if terms else None
    return rule


def _differentiable(function, rule, names, public, m):
    """function (arrays -> a result) with a custom JVP from `rule`, or one that raises on
    differentiation; q's tangent is refused where q is not its own tangent space."""
    if rule is None:
        return _refuse_derivative(function, public, m)
    wrapped = jax.custom_jvp(function)
    lie_group = m.nq != m.nv

    def jvp(primals, tangents):
        result = wrapped(*primals)   # not `function`: nested differentiation (a Hessian) traces these primals
        given = [None if isinstance(t, SymbolicZero) else t for t in tangents]
        if lie_group and "q" in names and given[list(names).index("q")] is not None:
            raise ValueError(f"JAX: {public} has no derivative with respect to q in q's {m.nq} coordinates (this "
                             f"robot's q has quaternions; the generated derivatives are in the {m.nv}-dimensional "
                             "tangent space): differentiate with respect to the other inputs, or use the "
                             "derivative functions in the tangent space")
        tangent = rule(primals, given, result)
        if tangent is None:
            tangent = jax.tree_util.tree_map(jnp.zeros_like, result)
        return result, tangent
    wrapped.defjvp(jvp, symbolic_zeros=True)
    return wrapped


def _checked_pivots(function, damping_at, clear):
    """A contact or loop solve without its last part, the pivots of G M^-1 G^T: where one is not
    clearly positive (above `clear` times the largest) and the damping (input `damping_at`) is 0
    (redundant constraints, where the module raises), the results are NaN."""

    def checked(*args):
        *results, pivots = function(*args)
        damping = jnp.asarray(args[damping_at], dtype=jnp.float64)
        good = jnp.all(pivots > clear * jnp.max(jnp.abs(pivots), axis=-1, keepdims=True), axis=-1) | (damping > 0)
        results = [jnp.where(good.reshape(good.shape + (1,) * (r.ndim - good.ndim)), r, jnp.nan) for r in results]
        return tuple(results) if len(results) > 1 else results[0]
    return checked


def _refuse_derivative(function, public, m, per_body=False):
    """function with a JVP that says it has none. A per-body function's first argument, the
    body's index, stays a Python int under jit (not differentiated, not traced)."""
    wrapped = jax.custom_jvp(function, nondiff_argnums=(0,) if per_body else ())

    def jvp(*arguments):
        differentiable = sorted(d.name for d in m._DESCRIPTIONS.values() if d.jacobians and not d.per_body)
        raise ValueError(f"JAX: rbdgen generates no derivative of {public}; differentiable are "
                         f"{', '.join(differentiable)} and frame_placement, when the derivative functions their "
                         "table rows name were built")
    wrapped.defjvp(jvp)
    return wrapped


def _params(m, params):
    """The model parameters a generated function takes last: none for a module without them,
    nominal_params for None."""
    return (m.nominal_params if params is None else params,) if m._keywords(params) else ()   # (its check)


def _with_frame(placement, rule, m, public):
    """frame_placement(q, frame[, params]): a custom JVP in q for each frame (the frame is
    static); none in params (a frame's placement has no derivative function of them)."""
    made = {}

    def public_function(q, frame, params=None):
        key = m._frame(frame)[0], frame
        if key not in made:
            f = jax.custom_jvp(lambda q, *params: placement(q, frame, *params))

            def jvp(primals, tangents, frame=frame):
                (q, *params), (dq, *dparams) = primals, tangents
                if m.nq != m.nv:
                    raise ValueError(f"JAX: {public} has no derivative with respect to q in q's {m.nq} coordinates "
                                     "(quaternions in q); use frame_jacobian in the tangent space")
                if any(type(d) is not jax.custom_derivatives.SymbolicZero for d in dparams):
                    raise ValueError(f"JAX: {public} has no derivative with respect to params")
                result = placement(q, frame, *params)
                dq = jnp.zeros_like(q) if type(dq) is jax.custom_derivatives.SymbolicZero else dq
                return result, rule(q, frame, dq, result[0], *params)   # the primal's R, not a second call
            f.defjvp(jvp, symbolic_zeros=True)
            made[key] = f
        return made[key](q, *_params(m, params))
    public_function.__doc__ = m.frame_placement.__doc__
    return public_function


def _skew(w):
    zero = jnp.zeros_like(w[..., 0])
    return jnp.stack([jnp.stack([zero, -w[..., 2], w[..., 1]], -1),
                      jnp.stack([w[..., 2], zero, -w[..., 0]], -1),
                      jnp.stack([-w[..., 1], w[..., 0], zero], -1)], -2)
