"""The variants of the constrained dynamics' derivatives whose KKT solves run after the program
(rbdgen.algorithms.solves): the program writes the right-hand sides and the packed factors of
the KKT matrix [[-damping, -G], [-G^T, M]] (derivatives.kkt_parents: the constraint rows above
the root of M's tree), and loops solve every column. Each variant is kept where the factors
fit in the blocks the solve overwrites."""

from ..algorithms import derivatives, loops, mimic
from ..algorithms.solves import Block, FactorSolve
from .spec import Variant


def contact_derivatives_factored(contacts, rows):
    """contact_dynamics_derivatives' variant: the blocks d/dq, d/dv and d/dtau, each q-ddot's n x
    n with the multipliers' rows x n as its head; the factors in the d/dtau block (the
    identity's)."""
    def contact_dynamics_derivatives_factored(model, ops, q, v, tau, d):
        return derivatives.contact_dynamics_derivatives_factored(model, ops, contacts, q, v, tau, damping=d)

    def solve(model):
        n = model.nv
        head = 3 * n * n
        blocks = tuple(Block(k * n * n, 1 if k == 2 else -1, k == 2, head + k * rows * n) for k in range(3))
        return FactorSolve(tuple(derivatives.kkt_parents(mimic.elimination_parents(model), rows)),
                           ((2 * n * n, n * n), (head + 2 * rows * n, rows * n)), blocks, rows)

    return Variant(contact_dynamics_derivatives_factored, lambda model: solve(model).fits(), solve=solve)


def loop_derivatives_factored(contacts):
    """constrained_dynamics_derivatives' variant (the loops', and the declared contacts'): the
    blocks d/dq, d/dv, d/dtau (n x n) and d/dkp, d/dkd (one column each) of q-ddot, each with the
    multipliers' rows of the same width as its head; the factors in the d/dtau blocks."""
    def constrained_dynamics_derivatives_factored(model, ops, *inputs):   # q, v, tau, kp, kd, damping
        q, v, tau, kp, kd, damping = inputs
        return loops.constrained_dynamics_derivatives_factored(model, ops, q, v, tau, kp=kp, kd=kd, damping=damping,
                                                               contacts=contacts)

    def solve(model):
        n, m = model.nv, loops.rows(model, contacts)
        head = 3 * n * n + 2 * n
        blocks = (Block(0, -1, False, head), Block(n * n, -1, False, head + m * n),
                  Block(2 * n * n, 1, True, head + 2 * m * n),
                  Block(3 * n * n, -1, False, head + 3 * m * n, width=1),
                  Block(3 * n * n + n, -1, False, head + 3 * m * n + m, width=1))
        return FactorSolve(tuple(derivatives.kkt_parents(mimic.elimination_parents(model), m)),
                           ((2 * n * n, n * n), (head + 2 * m * n, m * n)), blocks, m)

    return Variant(constrained_dynamics_derivatives_factored, lambda model: solve(model).fits(), solve=solve)
