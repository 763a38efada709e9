"""Contacts chosen at call time in a generated module: the same file in every module (a copy of
rbdgen/bindings/call_time.py, as _call_time.py), used by its binding (runtime.py), whose
contact_dynamics, impulse_dynamics and contact_inertia call it when given a contact list.

The contacts' Jacobian G and drift gamma are assembled from the module's point functions, and
the small dense solves run on NumPy (_contact). An input that is not finite, or so large that
the solve would overflow, is a one-line error naming it."""

import numpy as _np

from . import _arguments  # the same file as rbdgen/bindings/arguments.py
from . import _contact  # the same file as rbdgen/bindings/contact.py


class CallTimeContacts:
    """The call-time contacts of `module` (its public functions are read when called)."""

    def __init__(self, module):
        self.m = module

    def available(self):
        """Whether the module has what call-time contacts need."""
        m = self.m
        return {"point_jacobian", "point_gamma"} <= set(vars(m)) and {"minv", "nle"} <= m._NAMES

    def parsed(self, contacts):
        """Call-time contacts, checked (_contact.parse_contacts), for a module that takes them."""
        if not self.available():
            raise ValueError("contacts: this module takes no call-time contacts (they need minv, nle and the "
                             "local_world_aligned frame Jacobian and classical acceleration); rebuild it with them")
        return _contact.parse_contacts(contacts)

    def states(self, *named):
        """The states of a call ((name, value, size) each), all vectors or all batches of the
        count of the first, as (name, array) pairs."""
        if _arguments.is_batch(named[0][1], named[0][2], named[0][0]):
            count = _np.shape(named[0][1])[0]
            return [(name, _arguments.batch(x, n, name, count)) for name, x, n in named]
        return [(name, _arguments.vector(x, n, name)) for name, x, n in named]

    def inputs(self, states, params, contacts):
        """What a call with call-time contacts is given, (name, value) as _arguments names them."""
        return list(states) + ([("params", self.m._PARAMETERS.shaped(params))] if params is not None else []) + \
            [(f"contact {k} point", point) for k, (_, point, _) in enumerate(contacts)]

    def constraints(self, states, contacts, params, threads, gamma=True):
        """G and (with gamma) gamma = -G-dot v of the parsed contacts; states as states() gives
        them, q first (then v). A state whose G or gamma is not finite, or an input so large
        that the solve would overflow, is a one-line error naming the input (the rank test of G
        would fail on it, or mislead)."""
        m = self.m
        q, v = states[0][1], states[1][1] if gamma else None
        keywords = dict(m._keywords(params), threads=threads)
        with _np.errstate(all="ignore"):
            G = _contact.constraint_jacobian(contacts, lambda frame, point: m.point_jacobian(q, frame, point, **keywords))
            bias = None if not gamma else _contact.constraint_bias(
                contacts, lambda frame, point: m.point_gamma(q, v, frame, point, **keywords))
        inputs = self.inputs(states, params, contacts)
        count = len(q) if _np.ndim(q) == 2 else 1
        if not count:
            return G, bias
        rows = G.reshape(count, -1) if bias is None else _np.hstack([G.reshape(count, -1), bias.reshape(count, -1)])
        large = _np.zeros(count, dtype=bool)
        for _, x in inputs:
            x = _np.abs(x)
            large |= (x.max(axis=-1) if x.ndim == 2 else x.max(initial=0.0)) > _arguments.OVERFLOWING
        bad = large | ~_np.isfinite(rows).all(axis=-1)
        if bad.any():
            state = int(_np.argmax(bad))
            _arguments.refuse_input(count, state, inputs, m.param_names)
            raise ValueError((f"state {state} of the batch: " if count > 1 else "") + "the contacts' Jacobian G is not "
                             "finite although every input is: an input is too large for float64's range")
        return G, bias

    def result(self, parts, states, params, out, contacts):
        """The result, parts (q-ddot or v+, then the multipliers) of one state or a batch,
        checked as a solve's and written into out= (the flat [q-ddot, lambda]) if given."""
        flat = _np.concatenate(parts, axis=-1)
        inputs = self.inputs(states, params, contacts)
        if flat.size:
            _arguments.solved(flat.reshape(-1, flat.shape[-1]), inputs, params is not None, self.m.param_names)
        if out is not None:
            out, target = _arguments.output(out, flat.shape, tuple(x for _, x in inputs))
            target[...] = flat
            flat = _arguments.settled(out, target)
        n = parts[0].shape[-1]
        return flat[..., :n], flat[..., n:]

    def contact_dynamics(self, q, v, tau, contacts, *, damping, params, out, threads):
        m = self.m
        contacts, keywords = self.parsed(contacts), dict(m._keywords(params), threads=threads)
        states = self.states(("q", q, m.nq), ("v", v, m.nv), ("tau", tau, m.nv))
        (_, q), (_, v), (_, tau) = states
        G, gamma = self.constraints(states, contacts, params, threads)
        with _np.errstate(all="ignore"):   # a result that is not finite is an error, with its cause
            parts = _contact.contact_dynamics(m.minv(q, **keywords), m.nle(q, v, **keywords), tau, G, gamma, damping)
        return self.result(parts, states, params, out, contacts)

    def impulse_dynamics(self, q, v_minus, contacts, *, restitution, damping, params, out, threads):
        m = self.m
        contacts, keywords = self.parsed(contacts), dict(m._keywords(params), threads=threads)
        states = self.states(("q", q, m.nq), ("v_minus", v_minus, m.nv))
        (_, q), (_, v_minus) = states
        G, _ = self.constraints(states, contacts, params, threads, gamma=False)
        with _np.errstate(all="ignore"):
            parts = _contact.impulse_dynamics(m.minv(q, **keywords), v_minus, G, restitution, damping)
        return self.result(parts, states, params, out, contacts)

    def contact_inertia(self, q, contacts, *, params, out, threads):
        m = self.m
        contacts, keywords = self.parsed(contacts), dict(m._keywords(params), threads=threads)
        states = self.states(("q", q, m.nq))
        q = states[0][1]
        G, _ = self.constraints(states, contacts, params, threads, gamma=False)
        with _np.errstate(all="ignore"):
            inertia = _contact.contact_inertia(m.minv(q, **keywords), G)
        if inertia.size:
            _arguments.solved(inertia.reshape(len(q) if q.ndim == 2 else 1, -1),
                              self.inputs(states, params, contacts), params is not None, m.param_names)
        if out is None:
            return inertia
        out, target = _arguments.output(out, inertia.shape, (q,))
        target[...] = inertia
        return _arguments.settled(out, target)
