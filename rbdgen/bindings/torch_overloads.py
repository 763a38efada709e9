"""rnea's and aba's overloads (f_ext, passive: table.description.Overload) in module.torch (the
same file in every module, as _torch_overloads.py): apply() picks the function a call asks for;
the backward of rnea and aba called with f_ext (rnea_fext, aba_fext) is the base function's
with respect to v and a (tau) (its Jacobians' blocks, _torch.Operators._backward), and
gradient() below with respect to f_ext, whose rows [force; torque] act on each body in its own
frame; q and (but for rnea without origin parameters) the parameters have none, as in
module.jax."""

import torch

from . import _description

# what gradient() calls, besides aba_derivatives for aba
NEEDED = ("frame_jacobian_local_world_aligned", "frame_placement")


def apply(ops, d, given, tensor):
    """The description of the function `given` (a call's values by name) asks for: d's, or the
    one an overload selects (f_ext: rnea_fext, aba_fext), `given` changed as that one takes it
    (f_ext's rows flattened; passive's torque added to tau). tensor(x, what, name): x checked."""
    m, name = ops.m, d.name

    def other(function, keyword):
        if function not in m._DESCRIPTIONS:
            raise ValueError(f"{keyword}: this module was built without {function}; rebuild it with that function")
        return m._DESCRIPTIONS[function]
    head = tensor(given[d.states[0].name], d.states[0].name, name)

    def forces(overload, value):   # (..., rows, 6): rows [force; torque] per joint
        rows = other(overload.function, overload.keyword).port(overload.input).size // 6
        f = tensor(value, overload.keyword, name)
        if tuple(f.shape) != tuple(head.shape[:-1]) + (rows, 6):
            raise ValueError(f"{name}: {overload.keyword} has shape {tuple(f.shape)}, expected "
                             f"{tuple(head.shape[:-1]) + (rows, 6)} (rows [force; torque] per joint)")
        return f.reshape(tuple(f.shape[:-2]) + (6 * rows,))

    def added(function):
        taken = [n for n, _ in other(function, function).parameters()]
        return ops.public(function)(**{n: given[n] for n in taken if n in given})
    chosen = _description.apply_overloads(d.overloads, given, forces=forces, added=added)
    return d if chosen is None else m._DESCRIPTIONS[chosen]


def base_of(m, name):
    """The description of the function that calls `name` with f_ext (rnea for rnea_fext), or None."""
    return next((d for d in m._DESCRIPTIONS.values() for o in d.overloads
                 if o.function == name and o.kind == _description.FORCES), None)


def check(m, base, port, first):
    """RuntimeError where `port` of base's f_ext function has no derivative: q (f_ext acts in
    the moving bodies' frames), and the parameters of aba, or of rnea with origin parameters
    (the bodies' Jacobians move with them)."""
    origins = any(n.startswith("origin_") for n in m.param_names)
    if port.name == first or port.role == _description.PARAMETERS and (base.name != "rnea" or origins):
        raise RuntimeError(f"{base.name} with f_ext has no derivative with respect to {port.name} (f_ext acts in the "
                           f"moving bodies' frames); differentiate with respect to the others, or call {base.name} "
                           "without f_ext")


def gradient(ops, base, port, arguments, ports, grad):
    """d(rows of f_ext) for the result's gradient `grad`: f_ext's rows add J_i^T (R_i f_i) to
    rnea's -tau (J_i body i's Jacobian at its origin, world-aligned, R_i its rotation) and
    M^-1 times that to aba's q-ddot. arguments: the f_ext function's inputs, by its ports."""
    m = ops.m
    for needed in NEEDED + (("aba_derivatives",) if base.name == "aba" else ()):
        if needed not in m._DESCRIPTIONS:
            raise RuntimeError(f"{base.name} with f_ext: its derivative with respect to {port.name} needs {needed}, "
                               f"which this module was built without; rebuild it with {needed}")
    q = arguments[0]
    params = [x for x, p in zip(arguments, ports) if p.role == _description.PARAMETERS]
    adjoint = -grad
    if base.name == "aba":   # M^-1 g: aba_derivatives' d/dtau is M^-1
        source = m._DESCRIPTIONS["aba_derivatives"]
        given = {p.name: x for p, x in zip(ports, arguments)}
        flat = ops.op("aba_derivatives")(*[given[x.name] for x in source.inputs])
        part = source.part("ddq_dtau")
        adjoint = torch.einsum("bi,bij->bj", grad, flat[:, part.offset:part.stop].reshape(-1, *part.shape))
    identity = ops._constant(q.device, [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0], "placement", base.name)
    rows = []
    for body in range(port.size // 6):
        J = ops.op(NEEDED[0])(body, q, identity, *params).reshape(q.shape[0], 6, -1)
        R = ops.op(NEEDED[1])(body, q, identity, *params)[:, :9].reshape(-1, 3, 3)
        world = torch.einsum("bij,bj->bi", J, adjoint)
        rows += [torch.einsum("bji,bj->bi", R, world[:, :3]), torch.einsum("bji,bj->bi", R, world[:, 3:])]
    return torch.cat(rows, 1)

