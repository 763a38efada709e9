"""The variants of the constrained dynamics' derivatives whose KKT solves run after the program
(rbdgen.algorithms.solves): the program writes the right-hand sides and the packed factors of
the KKT matrix [[-damping, -G], [-G^T, M]] (derivatives.kkt_parents: the constraint rows above
the root of M's tree), and loops solve every column. Each variant is kept where the factors
fit in the blocks the solve overwrites."""

from ..algorithms import derivatives, loops, mimic
from ..algorithms.solves import Block, FactorSolve
from .spec import Variant


STATES = ("q", "v", "tau")


def derivative_parts(model, rows, wrt):
    """The parts of a constrained dynamics' derivatives: d q-ddot / d each input of `wrt`, then
    d lambda / d each (rows multipliers); a state's block has nv columns, a gain's one."""
    width = lambda x: model.nv if x in STATES else 1
    return (tuple((f"ddq_d{x}", (model.nv, width(x))) for x in wrt)
            + tuple((f"dlambda_d{x}", (rows, width(x))) for x in wrt))


def _kkt_solve(model, rows, wrt):
    """The FactorSolve of derivative_parts' layout: each input's q-ddot block with its
    multipliers' block as head, scaled by -1 (the right sides are the residuals' derivatives),
    but d/dtau's, the identity, which holds the factors."""
    offsets, at = {}, 0
    for name, shape in derivative_parts(model, rows, wrt):
        offsets[name] = at
        at += shape[0] * shape[1]
    blocks = tuple(Block(offsets[f"ddq_d{x}"], 1 if x == "tau" else -1, x == "tau", offsets[f"dlambda_d{x}"],
                         None if x in STATES else 1) for x in wrt)
    n = model.nv
    return FactorSolve(tuple(derivatives.kkt_parents(mimic.elimination_parents(model), rows)),
                       ((offsets["ddq_dtau"], n * n), (offsets["dlambda_dtau"], rows * n)), blocks, rows)


def contact_derivatives_factored(contacts, rows):
    """contact_dynamics_derivatives' variant: d/dq, d/dv and d/dtau."""
    def contact_dynamics_derivatives_factored(model, ops, q, v, tau, d):
        return derivatives.contact_dynamics_derivatives_factored(model, ops, contacts, q, v, tau, damping=d)

    solve = lambda model: _kkt_solve(model, rows, STATES)
    return Variant(contact_dynamics_derivatives_factored, lambda model: solve(model).fits(), solve=solve)


def loop_derivatives_factored(contacts):
    """constrained_dynamics_derivatives' variant (the loops', and the declared contacts'): d/dq,
    d/dv, d/dtau, d/dkp and d/dkd."""
    def constrained_dynamics_derivatives_factored(model, ops, *inputs):   # q, v, tau, kp, kd, damping
        q, v, tau, kp, kd, damping = inputs
        return loops.constrained_dynamics_derivatives_factored(model, ops, q, v, tau, kp=kp, kd=kd, damping=damping,
                                                               contacts=contacts)

    solve = lambda model: _kkt_solve(model, loops.rows(model, contacts), loops.DIFFERENTIATED)
    return Variant(constrained_dynamics_derivatives_factored, lambda model: solve(model).fits(), solve=solve)
