"""Loop closures (Model.loops): two frames on two bodies held together, their origins ("3d") or
the frames themselves ("6d"), as Pinocchio's RigidConstraintModel between two joints
(CONTACT_3D, CONTACT_6D) in LOCAL_WORLD_ALIGNED coordinates. Written once for numbers and
symbols like every other algorithm.

A loop's rows are in world axes: the residual is [p_a - p_b; e] with e = vee(R_a R_b^T -
R_b R_a^T) / 2 (the rotation from b to a, its sine times its axis: zero exactly when the
frames agree, and the rotation vector to first order) for "6d"; the Jacobian G is frame a's
rows of the local_world_aligned frame Jacobian minus frame b's (the residual's rate is G v,
for 6d rows where the loop is closed); gamma = -G-dot v is minus the difference of the frames'
classical accelerations at zero joint acceleration. (Pinocchio's 6D drift in LOCAL_WORLD_ALIGNED
is another quantity off the closed set: the two agree where a 6d loop is closed.)
project_velocity removes the velocity the loops do not allow (an impulse with no restitution).
Constrained dynamics solves M q-ddot = tau - nle + G^T lambda with G q-ddot = gamma - Kd G v -
Kp residual (Baumgarte's stabilization) by the range-space KKT solve of the declared contacts
(rbdgen.algorithms.constrained). Contacts declared at build time are held in the same solve,
their rows (frame axes, as contact_dynamics') after the loops': Kd acts on their velocity, and
they have no residual for Kp.
"""

from ..spatial import Force, sum_terms
from . import configuration, constrained, constraint_forces, derivatives, mimic, point_derivatives, rnea_derivatives
from .frames import placement_entries, placement_from_entries

REFERENCE = "local_world_aligned"


def rows(model, contacts=()):
    """The number of constraint rows of the loops and of `contacts` (declared contacts)."""
    return sum(constrained.KINDS[loop.kind] for loop in model.loops) + sum(c.rows for c in contacts)


def _frames(model, loop):
    """The loop's two frames as (body, placement entries)."""
    ends = []
    for name in (loop.a, loop.b):
        frame = model.frame(name)
        ends.append((frame.body, list(placement_entries(frame.placement))))
    return ends


def _constraint_jacobian(model, ops, q, contacts):
    """G: the loops' rows, then those of the declared `contacts`."""
    return loop_jacobian(model, ops, q) + constrained.constraint_rows(model, ops, contacts, q)


def loop_residual(model, ops, q):
    """[p_a - p_b (and e for 6d)] of every loop, in world axes: zero when the loops are closed."""
    residual = []
    for loop in model.loops:
        a, b = (mimic.frame_placement(model, ops, frame, q) for frame in _frames(model, loop))
        residual += [x - y for x, y in zip(a[9:], b[9:])]
        if loop.kind == "6d":
            Ra, Rb = [a[3 * i:3 * i + 3] for i in range(3)], [b[3 * i:3 * i + 3] for i in range(3)]
            S = [[sum_terms(Ra[i][k] * Rb[j][k] - Rb[i][k] * Ra[j][k] for k in range(3)) for j in range(3)]
                 for i in range(3)]   # R_a R_b^T - R_b R_a^T
            residual += [S[2][1] / 2, S[0][2] / 2, S[1][0] / 2]
    return residual


def loop_jacobian(model, ops, q):
    """G (rows x nv): frame a's rows of the local_world_aligned Jacobian minus frame b's."""
    G = []
    for loop in model.loops:
        a, b = (mimic.frame_jacobian_of_body(model, ops, frame, q, reference=REFERENCE) for frame in _frames(model, loop))
        G += [[x - y for x, y in zip(row_a, row_b)] for row_a, row_b in zip(a, b)][:constrained.KINDS[loop.kind]]
    return G


def loop_gamma(model, ops, q, v):
    """gamma = -G-dot v: minus the difference of the frames' classical accelerations at zero
    joint acceleration (world axes)."""
    gamma, zero = [], [0] * model.nv
    for loop in model.loops:
        a, b = (mimic.frame_acceleration(model, ops, frame, q, v, zero, reference=REFERENCE, classical=True)
                for frame in _frames(model, loop))
        gamma += [y - x for x, y in zip(a, b)][:constrained.KINDS[loop.kind]]
    return gamma


def constrained_dynamics(model, ops, q, v, tau, *, kp, kd, damping, contacts=()):
    """[q-ddot (nv), lambda (m), the pivots of G M^-1 G^T + damping (m)] with M q-ddot = tau -
    nle + G^T lambda and G q-ddot + damping lambda = gamma - kd G v - kp residual, G the loops'
    rows and then those of `contacts`. A pivot that is not positive: the constraints are
    redundant or singular at q (the caller refuses the numbers unless damping > 0)."""
    G, _, _, target = _target(model, ops, q, v, kp=kp, kd=kd, contacts=contacts)
    free = [t - b for t, b in zip(tau, mimic.nle(model, ops, q, v))]
    qdd, lam, pivots = constrained.kkt_solve(ops, constrained.constraint_space(model, ops, G, q), damping, free, target)
    return qdd + lam + pivots


def _target(model, ops, q, v, *, kp, kd, contacts):
    """(G, the residual (zero for contacts), the rates G v, the acceleration target gamma - kd G
    v - kp residual) of the loops and the declared contacts."""
    G = _constraint_jacobian(model, ops, q, contacts)
    residual = loop_residual(model, ops, q) + [0] * sum(c.rows for c in contacts)
    rates = [sum_terms(g * x for g, x in zip(row, v)) for row in G]
    gamma = loop_gamma(model, ops, q, v) + constrained.constraint_drift(model, ops, contacts, q, v)
    return G, residual, rates, [g - kd[0] * r - kp[0] * e for g, r, e in zip(gamma, rates, residual)]


# A Newton step onto the loops solves with G G^T + mu I, mu this times G G^T's mean diagonal
# entry: loops closed in a plane have redundant rows (Cassie's legs at their file pose: 10 of
# 12), which leave G G^T singular while their residual is of second order, so the damped step
# (Levenberg and Marquardt's) goes where the plain one has no inverse, and the others converge
# as Newton's.
STEP_DAMPING = 1e-14


def loop_newton_step(model, ops, q):
    """[q (+) dq (nq), the residual at q]: one Newton step onto the loops, dq = -G^T (G G^T + mu
    I)^-1 residual, the least-norm step in the tangent space (mu: STEP_DAMPING)."""
    G, residual = loop_jacobian(model, ops, q), loop_residual(model, ops, q)
    m = len(G)
    A = [[sum_terms(G[i][k] * G[j][k] for k in range(model.nv)) for j in range(m)] for i in range(m)]
    mu = ops.let("mu", "", STEP_DAMPING / m * sum_terms(A[i][i] for i in range(m)))
    damped = [[x + (mu if i == j else 0) for j, x in enumerate(row)] for i, row in enumerate(A)]
    y, _ = constrained.ldl_solve(ops, damped, residual)
    dq = [-x for x in constrained.transpose_times(G, y)]
    return configuration.integrate(model, ops, q, dq, [1]) + residual


def project_velocity(model, ops, q, v, *, damping, contacts=()):
    """[v+ (nv), impulses (m), pivots (m)]: the velocity nearest v in M's metric with G v+ = 0
    (the loops' rates zero, and `contacts` still), M (v+ - v) = G^T impulses."""
    G = _constraint_jacobian(model, ops, q, contacts)
    v_plus, impulses, pivots = constrained.impulse_solve(ops, constrained.constraint_space(model, ops, G, q), v,
                                                         restitution=[0], damping=damping)
    return v_plus + impulses + pivots


# The inputs constrained_dynamics is differentiated with respect to (not the damping)
DIFFERENTIATED = ("q", "v", "tau", "kp", "kd")


def _loop_wrenches(model, ops, q, lam, forces):
    """`forces` (body coordinates, rnea's f_ext) plus the loops' multipliers as forces: a loop's
    rows are a force (and for 6d a moment) in world axes at frame a's origin, on frame a's body,
    and its opposite at frame b's on b's (the world takes none): rnea with them is rnea - G^T
    lambda. In body coordinates they turn with the bodies, so they are made from q here."""
    k = 0
    for loop in model.loops:
        multipliers = lam[k:k + constrained.KINDS[loop.kind]]
        k += len(multipliers)
        for (body, entries), sign in zip(_frames(model, loop), (1, -1)):
            if body < 0:
                continue
            R = mimic.frame_placement(model, ops, (body, entries), q)[:9]
            local = lambda world: [sign * sum_terms(R[3 * i + j] * world[i] for i in range(3)) for j in range(3)]
            moment = local(multipliers[3:6]) if loop.kind == "6d" else [0, 0, 0]
            wrench = placement_from_entries(entries).inv_apply_force(Force(moment, local(multipliers[:3])))
            forces[body] = forces[body] + wrench
    return forces


def _first_residuals(model, ops, q, v, *, qdd, lam, contacts):
    """rnea(q, v, q-ddot) - G^T lambda, q-ddot and lambda held."""
    forces = constrained.contact_wrenches(model, contacts, lam[rows(model):])
    return mimic.rnea(model, ops, q, v, qdd, _loop_wrenches(model, ops, q, lam[:rows(model)], forces))


def _second_residuals(model, ops, q, v, *, qdd, kp, kd, contacts):
    """G q-ddot - gamma + kd G v + kp residual (the loops' rows, then the contacts'), q-ddot held."""
    second, residual = [], loop_residual(model, ops, q)
    for loop in model.loops:
        kind = constrained.KINDS[loop.kind]
        a, b = (mimic.frame_acceleration(model, ops, frame, q, v, qdd, reference=REFERENCE, classical=True)
                for frame in _frames(model, loop))
        va, vb = (mimic.frame_velocity(model, ops, frame, q, v, reference=REFERENCE) for frame in _frames(model, loop))
        second += [x - y + kd[0] * (p - r) for x, y, p, r in zip(a[:kind], b[:kind], va[:kind], vb[:kind])]
    second = [x + kp[0] * e for x, e in zip(second, residual)]
    accelerations = constrained.contact_accelerations(model, ops, contacts, q, v, qdd)
    rates = constrained.contact_velocities(model, ops, contacts, q, v)
    return second + [x + kd[0] * r for x, r in zip(accelerations, rates)]


def _applied(model, ops, q, lam, contacts):
    """The multipliers as forces on the bodies (constraint_forces.Applied): a loop's in world
    axes at frame a's origin and opposite at frame b's, fixed in the world; a contact's in its
    frame's axes at its point, fixed in its body."""
    applied = [constraint_forces.Applied() for _ in model.parent]
    k = 0
    for loop in model.loops:
        multipliers = lam[k:k + constrained.KINDS[loop.kind]]
        k += len(multipliers)
        for (body, entries), sign in zip(_frames(model, loop), (1, -1)):
            if body >= 0:
                point = mimic.frame_placement(model, ops, (body, entries), q)[9:]
                moment = [sign * x for x in multipliers[3:6]] if loop.kind == "6d" else [0, 0, 0]
                applied[body].add(point, [sign * x for x in multipliers[:3]], moment, world_fixed=True)
    for c in contacts:
        rows_c = lam[k:k + c.rows]
        k += c.rows
        placement = mimic.frame_placement(model, ops, (c.body, list(c.placement)), q)
        turn = lambda local: [sum_terms(placement[3 * i + j] * local[j] for j in range(3)) for i in range(3)]
        force = rows_c[:3] if c.kind != "1d" else [n * rows_c[0] for n in c.normal]
        moment = turn(rows_c[3:6]) if c.kind == "6d" else [0, 0, 0]
        applied[c.body].add(placement[9:], turn(force), moment, world_fixed=False)
    return applied


def _residual_derivatives(model, ops, q, v, *, qdd, lam, kp, kd, contacts):
    """d/dq and d/dv of the residuals (_first_residuals, then _second_residuals), each (nv + m) x
    nv, G never differentiated (as derivatives.kkt_residual_derivatives). Where rnea's analytic
    derivatives apply, the first rows are theirs less those of G^T lambda (constraint_forces),
    and with 3d loops alone the second come from the points' motion (point_derivatives);
    otherwise forward mode through the residuals alone."""
    second = dict(qdd=qdd, kp=kp, kd=kd, contacts=contacts)
    if model.has_mimic or not rnea_derivatives.applies(model):
        both = lambda m, o, q_, v_: (_first_residuals(m, o, q_, v_, qdd=qdd, lam=lam, contacts=contacts)
                                     + _second_residuals(m, o, q_, v_, **second))
        return derivatives.derivatives_of(model, ops, both, [("q", q), ("v", v)], ("q", "v"))
    dq, dv = rnea_derivatives.analytic_rnea_derivatives(model, ops, q, v, qdd)
    axes, _ = mimic.joint_jacobians(model, ops, q)
    D = constraint_forces.force_derivatives(model, ops, axes, _applied(model, ops, q, lam, contacts))
    if contacts or any(loop.kind != "3d" for loop in model.loops):
        rows_of = lambda m, o, q_, v_: _second_residuals(m, o, q_, v_, **second)
        dq2, dv2 = derivatives.derivatives_of(model, ops, rows_of, [("q", q), ("v", v)], ("q", "v"))
    else:
        dq2, dv2 = _point_loop_derivatives(model, ops, q, v, qdd=qdd, kp=kp, kd=kd)
    return [[x - y for x, y in zip(a, b)] for a, b in zip(dq, D)] + dq2, dv + dv2


def _point_loop_derivatives(model, ops, q, v, *, qdd, kp, kd):
    """d/dq and d/dv of _second_residuals for 3d loops (points held together): from the
    points' analytic motion derivatives (point_derivatives), the rows of frame a less frame b's."""
    ends = [(body, entries[9:]) for loop in model.loops for body, entries in _frames(model, loop)]
    motion = point_derivatives.point_motion_derivatives(model, ops, q, v, qdd, ends)
    dq, dv = [], []
    for a, b in zip(motion[0::2], motion[1::2]):
        difference = lambda block: [[x - y for x, y in zip(a[block][k], b[block][k])] for k in range(model.nv)]
        acc_q, acc_v, vel_q, vel_v, pos_q = (difference(block) for block in range(5))
        dq += [[acc_q[k][r] + kd[0] * vel_q[k][r] + kp[0] * pos_q[k][r] for k in range(model.nv)] for r in range(3)]
        dv += [[acc_v[k][r] + kd[0] * vel_v[k][r] for k in range(model.nv)] for r in range(3)]
    return dq, dv


def constrained_dynamics_derivatives(model, ops, q, v, tau, *, kp, kd, damping, contacts=()):
    """d q-ddot / d each of DIFFERENTIATED, then d lambda / d each (q in the tangent space):
    each an (nv or m) x (nv or 1) block, row-major.

    Differentiating M q-ddot + nle - G^T lambda = tau and G q-ddot + damping lambda = gamma - kd
    G v - kp residual gives, for each direction, the dynamics' own KKT system,
        M dq-ddot - G^T dlambda = dtau - d/dx [rnea(q, v, q-ddot) - G^T lambda]
        G dq-ddot + damping dlambda = -d/dx [G q-ddot - gamma + kd G v + kp residual],
    with q-ddot and lambda held (_residual_derivatives): the factorizations of M and of the
    constraints' space serve every column, as in contact_dynamics_derivatives."""
    n = model.nv
    G, residual, rates, target = _target(model, ops, q, v, kp=kp, kd=kd, contacts=contacts)
    space = constrained.constraint_space(model, ops, G, q)
    qdd, lam, _ = constrained.kkt_solve(ops, space, damping, [t - b for t, b in zip(tau, mimic.nle(model, ops, q, v))],
                                        target)
    qdd, lam, m = ops.let("qdd", 0, qdd), ops.let("lam", 0, lam), len(G)
    dq, dv = _residual_derivatives(model, ops, q, v, qdd=qdd, lam=lam, kp=kp, kd=kd, contacts=contacts)
    columns = [[([-B[r][c] for r in range(n)], [-B[n + r][c] for r in range(m)]) for c in range(n)] for B in (dq, dv)]
    columns.append([([1 if r == c else 0 for r in range(n)], [0] * m) for c in range(n)])
    columns += [[([0] * n, [-e for e in residual])], [([0] * n, [-r for r in rates])]]
    blocks = []
    for block in columns:
        solved = [constrained.kkt_solve(ops, space, damping, r1, r2)[:2] for r1, r2 in block]
        blocks.append([[solved[c][0][r] for c in range(len(block))] for r in range(n)]
                      + [[solved[c][1][r] for c in range(len(block))] for r in range(m)])
    return [x for part in (slice(0, n), slice(n, n + m)) for block in blocks for row in block[part] for x in row]


def constrained_dynamics_derivatives_factored(model, ops, q, v, tau, *, kp, kd, damping, contacts=()):
    """constrained_dynamics_derivatives without its solves (derivatives.
    contact_dynamics_derivatives_factored's layout): the right-hand sides, d/dq and d/dv of
    the residuals in the q-ddot blocks and their second rows negated in the multipliers', -the
    residual (d/dkp) and -G v (d/dkd) in the multipliers' columns, and the packed factors of
    the KKT matrix [[-damping, -G], [-G^T, M]] in the d/dtau blocks; the solve after the program
    scales by -1 (d/dtau: the identity, by 1)."""
    n = model.nv
    G, residual, rates, target = _target(model, ops, q, v, kp=kp, kd=kd, contacts=contacts)
    m = len(G)
    K, parents = derivatives.kkt_factors(ops, mimic.crba(model, ops, q), G, damping[0],
                                         mimic.elimination_parents(model))
    bias = mimic.nle(model, ops, q, v)
    solution = derivatives.ltdl_solve(ops, K, parents, [-t for t in target] + [t - b for t, b in zip(tau, bias)])
    lam = [ops.let("lam", 0, x) for x in solution[:m]]
    qdd = [ops.let("qdd", 0, x) for x in solution[m:]]
    dq, dv = _residual_derivatives(model, ops, q, v, qdd=qdd, lam=lam, kp=kp, kd=kd, contacts=contacts)
    packed = derivatives.packed_factors(ops, K, parents, (n + m) * n)
    square = [packed[r * n:(r + 1) * n] for r in range(n)]
    below = [packed[n * n + r * n:n * n + (r + 1) * n] for r in range(m)]
    zero = [[0] for _ in range(n)]
    blocks = [dq[:n], dv[:n], square, zero, zero,
              [[-x for x in row] for row in dq[n:]], [[-x for x in row] for row in dv[n:]], below,
              [[-e] for e in residual], [[-r] for r in rates]]
    return [x for block in blocks for row in block for x in row]
