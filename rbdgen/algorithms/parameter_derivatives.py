"""Derivatives with respect to the model parameters (rbdgen.model.parameters): d tau / d params
of inverse dynamics and d q-ddot / d params of forward dynamics, nv x np.

These algorithms take the parameters' values themselves (FunctionSpec.parametric: the table
passes `params` through instead of running on the model with them) and build the model with
them here, so that some of them can be seeded as duals:

- inertial columns (inertia:LINK, payload:FRAME) are exact from the regressor: tau is linear
  in each body's ten parameters, tau = Y(q, v, a) pi, so d tau / d pi_i is Y's block of body i
  (rbdgen.algorithms.regressor); a payload's ten parameters reach its link's pi through the
  frame's placement, a constant linear map (X^T I X), found by running that map on duals;
- every other column (gravity, armature, damping, origin:JOINT) by forward mode: the model
  is rebuilt with those parameters as duals (derivatives.Dual), one direction each, and rnea
  runs on it (DualOps). Gravity and origins change the motion the regressor sees too, so Y is
  computed on the model with the parameters' values.
This takes fewer operations than forward mode over every parameter (docs/performance.md,
Choices in the generated programs).

Forward dynamics: rnea(q, v, q-ddot(params), params) = tau holds identically, so
d q-ddot / d params = -M^-1 d rnea / d params at (q, v, q-ddot), the product with M^-1 or the
solves with M's sparse factors as derivatives.aba_derivatives does (DENSE_SOLVE_MAX_NV), each
also as a loop after the program over all the parameters' columns (algorithms.solves).

Written once for every scalar: numbers (NumPy batches, mpmath) for the reference and symbols
for the generator. A model with mimic joints has its parameters on the tree; the regressor
and rnea give the model's coordinates.
"""

from ..model.parameters import inertia_entries, inertia_from_entries, parameters_of
from ..spatial import sum_terms
from . import mimic
from .derivatives import DENSE_SOLVE_MAX_NV, Dual, DualOps, derivative_columns
from .fd_crba import ltdl, ltdl_solve, packed_factors
from .regressor import PER_BODY, regressor

# The parameter groups whose columns come from the regressor (tau is linear in them)
INERTIAL = ("inertia", "payload")


def rnea_parameter_derivatives(model, ops, q, v, a, params):
    """d rnea(q, v, a) / d params (nv x np), at the parameters' values `params`."""
    parameters = parameters_of(model)
    n, count = model.nv, len(parameters)
    params = list(params)
    out = [[0] * count for _ in range(n)]
    inertial = [k for k, (group, _, _) in enumerate(parameters.entries) if group in INERTIAL]
    others = [k for k in range(count) if k not in inertial]
    if others:
        seeded = list(params)
        for k in others:
            seeded[k] = Dual(params[k], {k: 1})
        tau = mimic.rnea(parameters.model_with(seeded), DualOps(ops), q, v, a)
        for r, row in enumerate(derivative_columns(tau, others)):
            for k, x in zip(others, row):
                out[r][k] = x
    if inertial:
        valued = parameters.model_with(params)
        Y = regressor(valued, ops, q, v, a)
        full = valued.full
        maps = {}
        for k in inertial:
            group, index, component = parameters.entries[k]
            if group == "inertia":
                for r in range(n):
                    out[r][k] = Y[r][PER_BODY * index + component]
                continue
            frame = full.frames[index]
            if index not in maps:
                maps[index] = payload_map(frame.placement)
            weights = [(j, w) for j, w in enumerate(maps[index][component]) if w != 0]
            for r in range(n):
                out[r][k] = sum_terms(Y[r][PER_BODY * frame.body + j] * w for j, w in weights) if weights else 0
    return out


def payload_map(placement):
    """d pi_link / d pi_payload (as rows: [payload parameter][link parameter]) of a payload at a
    frame of `placement` on its link: X^T I X is linear in I's ten parameters."""
    seeded = inertia_from_entries([Dual(0.0, {j: 1}) for j in range(PER_BODY)])
    link = inertia_entries(placement.inertia_to_parent(seeded))
    columns = derivative_columns(link, range(PER_BODY))     # [link parameter][payload parameter]
    return [[columns[i][j] for i in range(PER_BODY)] for j in range(PER_BODY)]


def solves_densely(model):
    """Whether aba_parameter_derivatives multiplies by M^-1 (up to DENSE_SOLVE_MAX_NV), rather
    than solving with M's sparse factors (aba_parameter_derivatives_factored, then its variant)."""
    return model.nv <= DENSE_SOLVE_MAX_NV


def aba_parameter_derivatives(model, ops, q, v, tau, params):
    """d aba(q, v, tau) / d params (nv x np) = -M^-1 d rnea / d params at (q, v, q-ddot)."""
    if not solves_densely(model):
        return aba_parameter_derivatives_factored(model, ops, q, v, tau, params)
    Minv, D = _through_minv(model, ops, q, v, tau, params)
    n = model.nv
    return [[-sum_terms(Minv[r][k] * D[k][c] for k in range(n)) for c in range(len(D[0]))] for r in range(n)]


def aba_parameter_derivatives_factored(model, ops, q, v, tau, params):
    """The same through one sparse factorization of M (CRBA, L^T D L) that serves q-ddot and
    every column's solve: the table's way above DENSE_SOLVE_MAX_NV, a variant below it (fewer
    operations than the product with M^-1 on UR5 and Panda: 5 188 against 6 236, 14 908
    against 15 709)."""
    lam, factors, D = _through_factors(model, ops, q, v, tau, params)
    n = model.nv
    solved = [ltdl_solve(ops, factors, lam, [-D[r][c] for r in range(n)]) for c in range(len(D[0]))]
    return [[solved[c][r] for c in range(len(D[0]))] for r in range(n)]


def aba_parameter_derivatives_deferred(model, ops, q, v, tau, params):
    """aba_parameter_derivatives without its product: d rnea / d params at (q, v, q-ddot), then
    M^-1's upper triangle after it, which the generator moves into zeros of d rnea / d params
    (solves.FactorSolve.placed, `inverse`); the product -M^-1 d rnea / d params runs after the
    program as a loop, eight columns to a vector. The same quantities as the table's algorithm,
    whose digits it keeps where M's sparse factors lose them (Panda), and faster than it
    (docs/performance.md, Model parameters at run time)."""
    Minv, D = _through_minv(model, ops, q, v, tau, params)
    return [D, [Minv[i][j] for i in range(model.nv) for j in range(i, model.nv)]]


def aba_parameter_derivatives_solved(model, ops, q, v, tau, params):
    """aba_parameter_derivatives without its solves: d rnea / d params at (q, v, q-ddot), then
    the packed factors of M = L^T D L after it (the n x np outputs have no room for them: the
    generator moves them into zeros of d rnea / d params, solves.FactorSolve.placed). The
    solves -M^-1 d rnea / d params run after the program as loops over all columns, eight to a
    vector (algorithms.solves). Faster than the straight-line solves (the table's way there),
    and quicker to build, the more so the more columns (docs/performance.md, Model parameters
    at run time)."""
    lam, factors, D = _through_factors(model, ops, q, v, tau, params)
    return [D, packed_factors(ops, factors, lam, 0)]


def _through_minv(model, ops, q, v, tau, params):
    """(M^-1, d rnea / d params at ABA's q-ddot)."""
    valued = parameters_of(model).model_with(list(params))
    qdd = [ops.let("qdd", 0, x) for x in mimic.aba(valued, ops, q, v, tau)]
    Minv = mimic.minv(valued, ops, q)
    return Minv, rnea_parameter_derivatives(model, ops, q, v, qdd, params)


def _through_factors(model, ops, q, v, tau, params):
    """(elimination parents, M's L^T D L factors, d rnea / d params at q-ddot from them)."""
    valued = parameters_of(model).model_with(list(params))
    lam = mimic.elimination_parents(valued)
    factors = ltdl(ops, [list(row) for row in mimic.crba(valued, ops, q)], lam)
    bias = mimic.nle(valued, ops, q, v)
    qdd = [ops.let("qdd", 0, x) for x in ltdl_solve(ops, factors, lam, [t - b for t, b in zip(tau, bias)])]
    return lam, factors, rnea_parameter_derivatives(model, ops, q, v, qdd, params)

