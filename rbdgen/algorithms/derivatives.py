"""Derivatives of the algorithms by forward mode, and the inertial-parameter regressor.

Every algorithm here is written for any scalar with + - * / (spatial.py), so its
derivatives come from running it on dual numbers: a `Dual` carries a value and a sparse
dict {direction: derivative}, and each operation applies the chain rule to both. The
generator records the duals' values and derivatives like any other scalars (`DualOps`
binds each to a temporary), the reference runs them on floats and arrays: one algorithm,
one derivative, for every function and every joint type.

Sparsity comes for free: a scalar that does not depend on a direction has no entry for it,
and a dual with no entries is a plain number again. Joint j's configuration reaches only
the bodies of its subtree in the forward passes, and their forces on the way back to the
root, which is the O(n d) work of the analytical derivatives (Carpentier & Mansard 2018)
without a second algorithm to keep in agreement.

Derivatives with respect to q are taken in the tangent space as Pinocchio's: the direction
delta (size nv) moves q to q (+) delta, so the seed of q is the map v -> q-dot of each joint
(the quaternion's 0.5 q (x) (w, 0), the free-flyer's R v_lin; the identity elsewhere).
"""

from ..spatial import map_scalars, sum_terms
from . import constrained, mimic
from .fd_crba import ltdl, ltdl_solve, packed_factors


def _is_exact_zero(x):
    """A structural zero: the int 0 (a float 0.0 may be a value)."""
    return (type(x) is int and x == 0) or (getattr(x, "is_Integer", False) and x == 0)


def _dual(value, d):
    """A Dual, or the plain value when nothing depends on a direction."""
    d = {k: x for k, x in d.items() if not _is_exact_zero(x)}
    return Dual(value, d) if d else value


def _scaled(d, s):
    return {k: x * s for k, x in d.items()}


def _summed(a, b, sign=1):
    out = dict(a)
    for k, x in b.items():
        y = x if sign > 0 else -x
        out[k] = out[k] + y if k in out else y
    return out


class Dual:
    """value + sum_k d[k] eps_k, with eps_j eps_k = 0."""

    __slots__ = ("value", "d")
    __array_ufunc__ = None     # NumPy batch arrays defer to Dual's reflected operators


    def __init__(self, value, d):
        self.value = value
        self.d = d

    def __add__(self, other):
        if isinstance(other, Dual):
            return _dual(self.value + other.value, _summed(self.d, other.d))
        return Dual(self.value + other, self.d)

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, Dual):
            return _dual(self.value - other.value, _summed(self.d, other.d, -1))
        return Dual(self.value - other, self.d)

    def __rsub__(self, other):
        return Dual(other - self.value, {k: -x for k, x in self.d.items()})

    def __neg__(self):
        return Dual(-self.value, {k: -x for k, x in self.d.items()})

    def __pos__(self):
        return self

    def __mul__(self, other):
        if isinstance(other, Dual):
            return _dual(self.value * other.value, _summed(_scaled(self.d, other.value), _scaled(other.d, self.value)))
        if _is_exact_zero(other):
            return 0
        return _dual(self.value * other, _scaled(self.d, other))

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, Dual):
            inverse = 1 / other
            return self * inverse
        return self * (1 / other)

    def __rtruediv__(self, other):
        """other / self, with d(1/x) = -dx / x^2."""
        inverse = 1 / self.value
        return _dual(other * inverse, _scaled(self.d, -other * inverse * inverse))

    def __pow__(self, exponent):
        if exponent == 0.5:
            root = self.value ** 0.5
            return _dual(root, _scaled(self.d, 0.5 / root))
        if exponent == 2:
            return self * self
        raise TypeError(f"Dual ** {exponent!r} is not needed by any algorithm")

    def __repr__(self):
        return f"Dual({self.value!r}, {self.d!r})"


class DualOps:
    """The algorithms' `ops` on duals: `let` binds a dual's value and each derivative through
    the wrapped ops (a temporary each in the generator); sin, cos, sqrt and atan2 carry the
    chain rule, and select chooses by the value."""

    def __init__(self, ops):
        self.ops = ops

    def let(self, name, index, value):
        return map_scalars(value, lambda x: self._let(name, index, x))

    def _let(self, name, index, x):
        if not isinstance(x, Dual):
            return self.ops.let(name, index, x)
        value = self.ops.let(name, index, x.value)
        return Dual(value, {k: self.ops.let("d" + name, index, dx) for k, dx in x.d.items()})

    def sincos(self, angle):
        if not isinstance(angle, Dual):
            return self.ops.sincos(angle)
        s, c = self.ops.sincos(angle.value)
        return Dual(s, _scaled(angle.d, c)), Dual(c, _scaled(angle.d, -s))

    def sqrt(self, x):
        if not isinstance(x, Dual):
            return self.ops.sqrt(x)
        root = self.ops.sqrt(x.value)
        return _dual(root, _scaled(x.d, 0.5 / root))

    def atan2(self, y, x):
        """d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)."""
        if not isinstance(y, Dual) and not isinstance(x, Dual):
            return self.ops.atan2(y, x)
        (yv, dy), (xv, dx) = _parts(y), _parts(x)
        inverse = 1 / (xv * xv + yv * yv)
        return _dual(self.ops.atan2(yv, xv), _summed(_scaled(dy, xv * inverse), _scaled(dx, -yv * inverse)))

    def select(self, x, threshold, below, above):
        """The wrapped ops' select of the value and of each derivative, the formulas run on
        duals; the choice depends on x's value only."""
        x = x.value if isinstance(x, Dual) else x
        directions = {}

        def component(formula, key):     # key None: the value
            def run(safe):
                value, d = _parts(formula(lambda y: Dual(safe(y.value), y.d) if isinstance(y, Dual) else safe(y)))
                directions.update(dict.fromkeys(d))
                return value if key is None else d.get(key, 0)
            return run

        value = self.ops.select(x, threshold, component(below, None), component(above, None))
        return _dual(value, {k: self.ops.select(x, threshold, component(below, k), component(above, k))
                             for k in list(directions)})


def _parts(x):
    """(value, {direction: derivative}) of a dual or a plain value."""
    return (x.value, x.d) if isinstance(x, Dual) else (x, {})


def seed(values, first):
    """values[k] as a dual with derivative 1 in direction first + k."""
    return [Dual(x, {first + k: 1}) for k, x in enumerate(values)]


def seed_configuration(model, ops, q, first=0):
    """q as duals in the tangent directions first .. first + nv - 1: q (+) delta to first order."""
    out = list(q)
    for joint in model.joints:
        q_j = q[joint.idx_q:joint.idx_q + joint.nq]
        for r, row in enumerate(joint.model.tangent(ops, q_j)):
            d = {first + joint.idx_v + c: x for c, x in enumerate(row) if not _is_exact_zero(x)}
            out[joint.idx_q + r] = Dual(q_j[r], d) if d else q_j[r]
    return out


def seed_along(model, ops, q, v, direction=0):
    """q as duals moving along v in one direction: q (+) v t to first order in t."""
    out = list(q)
    for joint in model.joints:
        q_j = q[joint.idx_q:joint.idx_q + joint.nq]
        v_j = v[joint.idx_v:joint.idx_v + joint.nv]
        for r, row in enumerate(joint.model.tangent(ops, q_j)):
            terms = [x * v_j[c] for c, x in enumerate(row) if not _is_exact_zero(x)]
            if terms:
                out[joint.idx_q + r] = Dual(q_j[r], {direction: sum_terms(terms)})
    return out


def derivative_columns(outputs, directions):
    """The matrix d outputs / d directions: one row per output, one column per direction."""
    rows = []
    for y in outputs:
        d = y.d if isinstance(y, Dual) else {}
        rows.append([d.get(k, 0) for k in directions])
    return rows


# ------------------------------------------------------------ the functions --------------

def derivatives_of(model, ops, run, inputs, wrt, count=None):
    """d run(model, ops, *values) / d each input named in `wrt`, as matrices (one row per
    output scalar, the first `count` of them if given).

    `inputs` is [(name, values)]: a configuration "q" is seeded in its tangent space (nv
    directions), any other input one direction per entry; inputs not in `wrt` stay plain.
    """
    seeded, blocks, first = [], [], 0
    for name, values in inputs:
        if name not in wrt:
            seeded.append(values)
            continue
        size = model.nv if name == "q" else len(values)
        seeded.append(seed_configuration(model, ops, values, first) if name == "q" else seed(values, first))
        blocks.append(range(first, first + size))
        first += size
    outputs = _flatten(run(model, DualOps(ops), *seeded))
    outputs = outputs if count is None else outputs[:count]
    return [derivative_columns(outputs, block) for block in blocks]


def _flatten(value):
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def frame_jacobian_time_variation(model, ops, frame, q, v, *, reference):
    """dJ/dt of the frame's Jacobian in `reference` as q moves along v (Pinocchio's
    getFrameJacobianTimeVariation): J's derivative in the one direction v, by forward mode.
    J-dot v is the frame's acceleration at q-ddot = 0: spatial in local and world, classical
    (of the origin) in local_world_aligned."""
    moving = seed_along(model, ops, q, v)
    J = mimic.frame_jacobian_of_body(model, DualOps(ops), frame, moving, reference=reference)
    return [[x.d.get(0, 0) if isinstance(x, Dual) else 0 for x in row] for row in J]


def rnea_derivatives(model, ops, q, v, a):
    """(d tau / dq, d tau / dv) at (q, v, a), q in the tangent space (d tau / da is M)."""
    return derivatives_of(model, ops, mimic.rnea, [("q", q), ("v", v), ("a", a)], ("q", "v"))


def nle_derivatives(model, ops, q, v):
    """(d nle / dq, d nle / dv): rnea's derivatives at zero acceleration."""
    return rnea_derivatives(model, ops, q, v, [0] * model.nv)


def gravity_derivatives(model, ops, q):
    """d g / dq (Pinocchio's computeGeneralizedGravityDerivatives)."""
    return derivatives_of(model, ops, mimic.gravity, [("q", q)], ("q",))[0]


def contact_dynamics_derivatives(model, ops, contacts, q, v, tau, *, damping):
    """[ddq_dq, ddq_dv, ddq_dtau, dlambda_dq, dlambda_dv, dlambda_dtau] of contact_dynamics with
    the declared contacts (Pinocchio's computeConstraintDynamicsDerivatives).

    Differentiating M q-ddot + nle - G^T lambda = tau and G q-ddot + damping lambda = gamma
    gives, for each direction, the same KKT system as the dynamics,
        M dq-ddot - G^T dlambda = dtau - d/dx [rnea(q, v, q-ddot) - G^T lambda]
        G dq-ddot + damping dlambda = -d/dx [G q-ddot - gamma],
    with q-ddot and lambda held: forward mode differentiates only those residuals
    (kkt_residual_derivatives), and the factorizations of M and K serve every column, in a
    fraction of the operations of forward mode through the whole solve (docs/performance.md,
    Choices in the generated programs)."""
    n = model.nv
    space = constrained.contact_space(model, ops, contacts, q)
    free = [t - b for t, b in zip(tau, mimic.nle(model, ops, q, v))]
    gamma = constrained.constraint_drift(model, ops, contacts, q, v)
    qdd, lam, _ = constrained.kkt_solve(ops, space, damping, free, gamma)
    qdd, lam = ops.let("qdd", 0, qdd), ops.let("lam", 0, lam)
    blocks = kkt_residual_derivatives(model, ops, contacts, q, v, qdd=qdd, lam=lam)
    rows = len(lam)
    columns = [[([-B[r][c] for r in range(n)], [-B[n + r][c] for r in range(rows)]) for c in range(n)] for B in blocks]
    columns.append([([1 if r == c else 0 for r in range(n)], [0] * rows) for c in range(n)])
    out_qdd, out_lam = [], []
    for block in columns:
        solved = [constrained.kkt_solve(ops, space, damping, r1, r2)[:2] for r1, r2 in block]
        out_qdd.append([[solved[c][0][r] for c in range(n)] for r in range(n)])
        out_lam.append([[solved[c][1][r] for c in range(n)] for r in range(rows)])
    return out_qdd + out_lam


def kkt_residual_derivatives(model, ops, contacts, q, v, *, qdd, lam):
    """d/dq and d/dv of the contact dynamics' residuals [rnea(q, v, q-ddot) - G^T lambda;
    G q-ddot - gamma] with q-ddot and lambda held: rnea with the multipliers as forces on the
    bodies, and the contacts' accelerations. G itself is never differentiated: forward mode
    would form its derivative entry by entry, a large share of the program (docs/performance.md,
    Choices in the generated programs)."""
    wrenches = constrained.contact_wrenches(model, contacts, lam)

    def residuals(m, o, q_, v_):
        return mimic.rnea(m, o, q_, v_, qdd, wrenches) + constrained.contact_accelerations(m, o, contacts, q_, v_, qdd)

    return derivatives_of(model, ops, residuals, [("q", q), ("v", v)], ("q", "v"))


def kkt_parents(lam, rows):
    """The elimination parents of the KKT matrix [[-damping, -G], [-G^T, M]]: the contact rows
    first, a chain above the root of M's tree (lam). Every coordinate has them all as
    ancestors, so whatever rows of G are non-zero, factorizing from the last coordinate up fills
    in nothing outside the tree: the coordinates are eliminated first and the rows' block
    becomes -(G M^-1 G^T + damping), dense (Solo12: 66 entries below its diagonal)."""
    return list(range(-1, rows - 1)) + [rows + j if j >= 0 else rows - 1 for j in lam]


def kkt_factors(ops, M, G, damping, lam):
    """(the L^T D L factors of [[-damping I, -G], [-G^T, M]] in place of its lower triangle,
    the elimination parents kkt_parents), for M's tree `lam`."""
    rows, n = len(G), len(M)
    parents = kkt_parents(lam, rows)
    K = [[0] * (rows + n) for _ in range(rows + n)]
    for c in range(rows):
        K[c][c] = -damping
    for r in range(n):
        K[rows + r][:rows] = [-G[c][r] for c in range(rows)]
        K[rows + r][rows:rows + r + 1] = M[r][:r + 1]
    return ltdl(ops, K, parents), parents


def contact_dynamics_derivatives_factored(model, ops, contacts, q, v, tau, *, damping):
    """contact_dynamics_derivatives without its solves: the right-hand sides of the KKT system
    for d/dq and d/dv, and in the d/dtau blocks the packed factors of the KKT matrix
    (kkt_parents); its L^T D L solves every column after the program, in loops
    (algorithms.solves). The unknowns of a column are the multipliers' and q-ddot's,
        -damping dlambda - G dq-ddot = d/dx [G q-ddot - gamma]
        -G^T dlambda + M dq-ddot = -d/dx [rnea(q, v, q-ddot) - G^T lambda],
    with q-ddot and lambda held: the program writes the derivatives of rnea - G^T lambda and
    of gamma - G q-ddot (kkt_residual_derivatives, the second negated), and the solve scales
    by -1. q-ddot and lambda are solved with the same factors. Written out as straight-line
    code, the solves would be most of the program (docs/performance.md, Measured and not kept)."""
    n = model.nv
    G = constrained.constraint_rows(model, ops, contacts, q)
    rows = len(G)
    K, parents = kkt_factors(ops, mimic.crba(model, ops, q), G, damping[0], mimic.elimination_parents(model))
    bias = mimic.nle(model, ops, q, v)
    gamma = constrained.constraint_drift(model, ops, contacts, q, v)
    solution = ltdl_solve(ops, K, parents, [-g for g in gamma] + [t - b for t, b in zip(tau, bias)])
    lam = [ops.let("lam", 0, x) for x in solution[:rows]]
    qdd = [ops.let("qdd", 0, x) for x in solution[rows:]]

    dq, dv = kkt_residual_derivatives(model, ops, contacts, q, v, qdd=qdd, lam=lam)
    packed = packed_factors(ops, K, parents, (n + rows) * n)
    square = [packed[r * n:(r + 1) * n] for r in range(n)]
    below = [packed[n * n + r * n:n * n + (r + 1) * n] for r in range(rows)]
    return [dq[:n], dv[:n], square, _negated(dq[n:]), _negated(dv[n:]), below]


def _negated(rows):
    return [[-x for x in row] for row in rows]


# Above this many coordinates -M^-1 dtau is solved with fd_crba's sparse L^T D L of M instead
# of multiplied by M^-1: the products cost 4 nv^3 operations (on Talos, slower than Pinocchio);
# a solve touches only the ancestors of each coordinate. Below it the products win in time
# though not always in operations: they are independent, the solves serial chains (measured on
# Panda and Talos: docs/performance.md, Choices in the generated programs).
DENSE_SOLVE_MAX_NV = 12


def aba_derivatives(model, ops, q, v, tau, inverse_dynamics_derivatives=None):
    """(d qdd / dq, d qdd / dv, d qdd / d tau = M^-1) at (q, v, tau), q in the tangent space.

    qdd = M^-1 (tau - nle), and rnea(q, v, qdd) = tau holds identically, so
    d qdd / dx = -M^-1 d rnea / dx at (q, v, qdd): rnea's derivatives (forward mode, or the
    world-frame algorithm given as `inverse_dynamics_derivatives`), then M^-1 (minv.py) times
    them (see DENSE_SOLVE_MAX_NV). Forward mode through ABA itself would differentiate the
    articulated inertias too, in many more operations (docs/performance.md, Choices in the
    generated programs).
    """
    n = model.nv
    if n > DENSE_SOLVE_MAX_NV:
        # one sparse factorization serves q-ddot, M^-1 and the products
        lam = mimic.elimination_parents(model)
        factors = ltdl(ops, [list(row) for row in mimic.crba(model, ops, q)], lam)
        bias = mimic.nle(model, ops, q, v)

        def solve(columns):
            solved = [ltdl_solve(ops, factors, lam, column) for column in columns]
            return [[solved[c][r] for c in range(len(columns))] for r in range(n)]

        def times_minv(B):
            return solve([[-B[r][c] for r in range(n)] for c in range(n)])

        qdd = [ops.let("qdd", 0, x) for x in ltdl_solve(ops, factors, lam, [t - b for t, b in zip(tau, bias)])]
        Minv = _symmetric(solve([[1 if r == c else 0 for r in range(n)] for c in range(n)]))
    else:
        # q-ddot by ABA, not as M^-1 (tau - nle): slightly more operations, but the derivatives
        # need not wait for M^-1, which measured faster (docs/performance.md, Choices in the
        # generated programs)
        qdd = [ops.let("qdd", 0, x) for x in mimic.aba(model, ops, q, v, tau)]
        Minv = mimic.minv(model, ops, q)

        def times_minv(B):
            return [[-sum_terms(Minv[r][k] * B[k][c] for k in range(n)) for c in range(n)] for r in range(n)]

    dq, dv = (inverse_dynamics_derivatives or rnea_derivatives)(model, ops, q, v, qdd)
    return [times_minv(dq), times_minv(dv), Minv]


def aba_derivatives_factored(model, ops, q, v, tau, inverse_dynamics_derivatives=None):
    """aba_derivatives without its solves: d rnea / dq and d rnea / dv at (q, v, q-ddot), and
    in M^-1's place the packed factors of M = L^T D L; the solves -M^-1 d rnea and M^-1 I run
    after the program as loops over all columns (algorithms.solves). Written out, the solves
    would be most of Talos' program and run several times slower (docs/performance.md, Measured
    and not kept). q-ddot comes from the same factors: ABA would add operations for the same
    errors (docs/performance.md, Choices in the generated programs)."""
    n = model.nv
    lam = mimic.elimination_parents(model)
    H = ltdl(ops, [list(row) for row in mimic.crba(model, ops, q)], lam)
    bias = mimic.nle(model, ops, q, v)
    qdd = [ops.let("qdd", 0, x) for x in ltdl_solve(ops, H, lam, [t - b for t, b in zip(tau, bias)])]
    dq, dv = (inverse_dynamics_derivatives or rnea_derivatives)(model, ops, q, v, qdd)
    return [dq, dv, packed_factors(ops, H, lam, n * n)]



def _symmetric(A):
    """The upper triangle mirrored: exactly symmetric whatever the rounding."""
    return [[A[min(r, c)][max(r, c)] for c in range(len(A))] for r in range(len(A))]
