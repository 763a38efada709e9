"""Solves with M's factors after the program, in loops (rbdgen/algorithms/solves.py).

1. The NumPy mirror of the C loop (what the generator measures a program's digits with) gives
   fd_crba's straight-line solve bit for bit, column by column, and M^-1 B to rounding, on
   random trees with branches, a free-flyer and multi-coordinate joints.
2. The same for a KKT system, the contact rows above the tree's root (contact dynamics'
   derivatives): against NumPy's dense solve, bit for bit against the straight-line solve,
   with the factors the program knows to be zero left out (`compacted`).
3. Generated code: Solo12's aba_derivatives keeps the factored program, whose C solves in a
   loop after the program; its values are Pinocchio's (the batch against the single calls is
   tests/test_lanes.py, every build checks against the reference). A module's
   contact_dynamics_derivatives keeps the factored KKT program.
"""

import numpy as np
import pinocchio as pin
import pytest

from helpers import pinocchio_model
from rbdgen.algorithms import derivatives, fd_crba, mimic
from rbdgen.table.functions import contact_derivatives_factored
from rbdgen.algorithms.solves import Block, FactorSolve
from rbdgen.codegen.costs import Machine
from rbdgen.runtime.reference import OPS
from trees import random_state, random_tree

SOLVE_TOL = 1e-10    # against NumPy's dense solve, relative to the largest entry (cond(M) up to ~1e4)


@pytest.mark.parametrize("seed, floating", [(1, False), (2, True), (3, True)])
def test_loop_solve_is_the_straight_line_solve(seed, floating):
    model = random_tree(seed, 9, floating_base=floating)
    rng = np.random.default_rng(seed)
    n, states = model.nv, 3
    lam = mimic.elimination_parents(model)
    solve = FactorSolve(tuple(lam), ((2 * n * n, n * n),), (Block(0, -1), Block(n * n, 1), Block(2 * n * n, 1, True)))
    out = np.zeros((states, 3 * n * n))
    expected = []
    for s in range(states):
        q, _, _ = random_state(model, rng)
        M = np.array(mimic.crba(model, OPS, q), dtype=float)
        factors = fd_crba.ltdl(OPS, [list(row) for row in M], lam)
        packed = fd_crba.packed_factors(OPS, factors, lam, n * n)
        B1, B2 = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        out[s] = np.concatenate([B1.ravel(), B2.ravel(), packed])
        columns = [[-x for x in fd_crba.ltdl_solve(OPS, factors, lam, list(B1[:, c]))] for c in range(n)] + \
                  [fd_crba.ltdl_solve(OPS, factors, lam, list(B2[:, c])) for c in range(n)] + \
                  [fd_crba.ltdl_solve(OPS, factors, lam, list(np.eye(n)[:, c])) for c in range(n)]
        blocks = [np.array(columns[k * n:(k + 1) * n]).T for k in range(3)]
        upper = np.triu(blocks[2])
        blocks[2] = upper + np.triu(upper, 1).T
        expected.append((blocks, M, B1, B2))
    solve.apply(out)
    for s, (blocks, M, B1, B2) in enumerate(expected):
        got = out[s].reshape(3, n, n)
        for k in range(3):
            assert np.array_equal(got[k], blocks[k]), f"block {k}, state {s}"
        for block, truth in zip(got, (-np.linalg.solve(M, B1), np.linalg.solve(M, B2), np.linalg.inv(M))):
            assert np.abs(block - truth).max() <= SOLVE_TOL * np.abs(truth).max()
        assert np.array_equal(got[2], got[2].T)


def _support(model, body):
    """The velocity coordinates of the joints from the root to `body`."""
    coordinates = []
    while body >= 0:
        joint = model.joints[body]
        coordinates += range(joint.idx_v, joint.idx_v + joint.nv)
        body = model.parent[body]
    return coordinates


@pytest.mark.parametrize("seed, damping", [(4, 0.0), (5, 0.01)])
def test_kkt_solve_after_the_program(seed, damping):
    """Two contacts of 3 rows on a floating tree: G's rows reach only their bodies' supports."""
    model = random_tree(seed, 9, floating_base=True)
    rng = np.random.default_rng(seed)
    n, rows = model.nv, 6
    G = np.zeros((rows, n))
    for k, body in enumerate(rng.choice(np.arange(1, model.nbodies), 2, replace=False)):
        G[3 * k:3 * k + 3, _support(model, body)] = rng.standard_normal((3, len(_support(model, body))))
    q, _, _ = random_state(model, rng)
    M = np.array(mimic.crba(model, OPS, q), dtype=float)
    factors, parents = derivatives.kkt_factors(OPS, [list(row) for row in M], [list(row) for row in G], damping,
                                               mimic.elimination_parents(model))
    solve = contact_derivatives_factored(None, rows).solve(model)
    packed = fd_crba.packed_factors(OPS, factors, parents, solve.packed_size())
    B = [rng.standard_normal((rows + n, n)) for _ in range(2)]       # [head; square] right sides
    out = np.zeros(3 * n * n + 3 * rows * n)
    for k, rhs in enumerate(B):
        out[3 * n * n + k * rows * n:3 * n * n + (k + 1) * rows * n] = rhs[:rows].ravel()
        out[k * n * n:(k + 1) * n * n] = rhs[rows:].ravel()
    out[solve.factor_entries()] = packed
    outputs = [float(x) for x in out]
    solve = solve.compacted(outputs)
    assert solve.row_starts()[-1] < len(packed) - solve.n, "the factors' zeros are left out"
    got = solve.apply(np.array([outputs]))[0]

    A = np.block([[-damping * np.eye(rows), -G], [-G.T, M]])
    right = [-B[0], -B[1], np.vstack([np.zeros((rows, n)), np.eye(n)])]        # scales -1, -1, 1
    for k, rhs in enumerate(right):
        head = got[3 * n * n + k * rows * n:3 * n * n + (k + 1) * rows * n].reshape(rows, n)
        square = got[k * n * n:(k + 1) * n * n].reshape(n, n)
        straight = np.array([fd_crba.ltdl_solve(OPS, factors, parents, list(rhs[:, c])) for c in range(n)]).T
        if k == 2:
            upper = np.triu(straight[rows:])
            straight[rows:] = upper + np.triu(upper, 1).T
        assert np.array_equal(np.vstack([head, square]), straight), f"block {k}"
        truth = np.linalg.solve(A, rhs)
        assert np.abs(np.vstack([head, square]) - truth).max() <= SOLVE_TOL * np.abs(truth).max(), f"block {k}"


def _wide_right_sides(model, rng, width):
    """n x width right-hand sides whose column c is zero below coordinate c mod n (as a body's
    parameters reach only the joints above it): zeros for the factors."""
    n = model.nv
    B = rng.standard_normal((n, width))
    for c in range(width):
        B[c % n + 1:, c] = 0
    return B


@pytest.mark.parametrize("seed, inverse", [(6, False), (7, True), (8, True)])
def test_wide_block_with_the_factors_in_its_zeros(seed, inverse):
    """aba_parameter_derivatives' solve: one block of more columns than rows (a column a
    parameter), whose factors (M's, or M^-1's upper triangle) the program leaves after the
    outputs; `placed` moves them into exact zeros of the right-hand sides, which the solve reads
    as zeros. Against NumPy's dense solve, and bit for bit the straight-line solve."""
    model = random_tree(seed, 7, floating_base=seed == 8)
    rng = np.random.default_rng(seed)
    n, width = model.nv, 3 * model.nv + 5
    lam = mimic.elimination_parents(model)
    solve = FactorSolve(tuple(lam), ((n * width, n * n),), (Block(0, -1, width=width),), inverse=inverse)
    q, _, _ = random_state(model, rng)
    M = np.array(mimic.crba(model, OPS, q), dtype=float)
    factors = fd_crba.ltdl(OPS, [list(row) for row in M], lam)
    packed = ([x for i, row in enumerate(np.linalg.inv(M)) for x in row[i:]] if inverse
              else fd_crba.packed_factors(OPS, factors, lam, 0))
    B = _wide_right_sides(model, rng, width)
    outputs = [0 if x == 0 else float(x) for x in B.ravel()] + list(packed)
    placed = solve.compacted(outputs).placed(outputs, n * width)
    assert len(outputs) == n * width and placed.cleared
    assert sum(length for _, length in placed.factors) == placed.packed_size()
    got = placed.apply(np.array([outputs]))[0].reshape(n, width)
    truth = -np.linalg.solve(M, B)
    assert np.abs(got - truth).max() <= SOLVE_TOL * np.abs(truth).max()
    if not inverse:
        straight = np.array([[-x for x in fd_crba.ltdl_solve(OPS, factors, lam, list(B[:, c]))]
                             for c in range(width)]).T
        assert np.array_equal(got, straight)
    # too few zeros: no room, and the generator records the program without this solve
    dense = [1.0] * (n * width) + list(packed)
    assert solve.placed(dense, n * width) is None


def test_factor_solves_that_cannot_be():
    """Factors partly inside the outputs and partly after them, a product with A^-1 under a
    KKT head, a non-square identity block: errors, not a solve that reads a factor as a zero."""
    with pytest.raises(ValueError, match="partly"):
        FactorSolve((-1, 0), ((3, 4),), (Block(0, 1, width=2),)).placed([0.0] * 7, 4)
    with pytest.raises(ValueError, match="no head"):
        FactorSolve((-1, 0, 1), ((0, 9),), (Block(0, 1),), head=1, inverse=True)
    with pytest.raises(ValueError, match="square"):
        FactorSolve((-1, 0), ((0, 4),), (Block(0, 1, True, width=3),))


def test_factor_solve_counts_and_cost():
    """A chain of 3: L has 3 entries (1 -> 0, 2 -> 1 and 0)."""
    solve = FactorSolve((-1, 0, 1), ((0, 9),), (Block(0, 1, True),))
    assert solve.row_starts() == [0, 0, 1, 3] and solve.packed_size() == 6
    assert solve.operations() == 3 * (3 + 4 * 3)
    assert solve.overwritten() == [6, 7, 8]      # the packed factors are read, zeros included
    assert Machine().solve_cost(solve) > 0


def test_blocks_are_solved_in_groups_that_fit_the_cache():
    """Consecutive blocks share the rows' vectors up to GROUP_COLUMNS columns in all (Panda's
    and Solo12's three blocks together, Talos' one by one); the cost counts the groups' vectors."""
    def chain(n, blocks):
        parents = tuple(range(-1, n - 1))
        return FactorSolve(parents, ((0, n * n),), tuple(Block(k * n * n, -1) for k in range(blocks)))
    assert chain(9, 3).groups() == [[0, 1, 2]] and chain(18, 3).groups() == [[0, 1, 2]]
    assert chain(30, 3).groups() == [[0, 1], [2]] and chain(38, 3).groups() == [[0], [1], [2]]
    cost = Machine(vector_width=8).solve_cost
    assert cost(chain(9, 3)) < 3 * cost(chain(9, 1))      # 4 vectors a row, not 3 x 2
    assert cost(chain(38, 3)) == pytest.approx(3 * cost(chain(38, 1)))   # one block at a time


AGREE_TOL = 1e-9      # relative to the largest entry of each derivative block


def test_solo12_aba_derivatives_solve_after_the_program(bridge_modules):
    module, model = bridge_modules["solo12"]
    choice = module._META["functions"]["aba_derivatives"]["accuracy"]
    assert choice["kept"] == "analytic_aba_derivatives_factored", choice
    source = open(module.__file__.rsplit("/", 1)[0] + f"/rbdgen_{module._META['module']}_aba_derivatives.c").read()
    assert "aba_derivatives_solve(double *restrict out)" in source and "/* L^T y = x */" in source
    pm = pinocchio_model("solo12")
    data = pm.createData()
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, tau = rng.standard_normal(pm.nv), rng.standard_normal(pm.nv)
        pin.computeABADerivatives(pm, data, q, v, tau)
        ours = module.aba_derivatives(q, v, tau)
        for block, truth in zip(ours, (data.ddq_dq, data.ddq_dv, data.Minv)):
            truth = np.triu(truth) + np.triu(truth, 1).T if truth is data.Minv else truth
            assert np.abs(block - truth).max() <= AGREE_TOL * np.abs(truth).max()
