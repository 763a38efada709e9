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
is another quantity off the closed set: the two agree where a 6d loop is closed.) project_velocity removes the velocity the loops do not allow (an impulse with
no restitution). Constrained dynamics solves M q-ddot = tau - nle + G^T lambda with
G q-ddot = gamma - Kd G v - Kp residual (Baumgarte's stabilization) by the range-space KKT
solve of the declared contacts (rbdgen.algorithms.constrained). Contacts declared at build time
are held in the same solve, their rows (frame axes, as contact_dynamics') after the loops': Kd
acts on their velocity, and they have no residual for Kp.
"""

from ..spatial import sum_terms
from . import constrained, derivatives, mimic
from .frames import placement_entries

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


def _rows(model, ops, q, contacts):
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
    G = _rows(model, ops, q, contacts)
    residual = loop_residual(model, ops, q) + [0] * sum(c.rows for c in contacts)
    rates = [sum_terms(g * x for g, x in zip(row, v)) for row in G]
    gamma = loop_gamma(model, ops, q, v) + constrained.constraint_drift(model, ops, contacts, q, v)
    target = [g - kd[0] * r - kp[0] * e for g, r, e in zip(gamma, rates, residual)]
    free = [t - b for t, b in zip(tau, mimic.nle(model, ops, q, v))]
    qdd, lam, pivots = constrained.kkt_solve(ops, constrained.constraint_space(model, ops, G, q), damping, free, target)
    return qdd + lam + pivots


def project_velocity(model, ops, q, v, *, damping, contacts=()):
    """[v+ (nv), impulses (m), pivots (m)]: the velocity nearest v in M's metric with G v+ = 0
    (the loops' rates zero, and `contacts` still), M (v+ - v) = G^T impulses."""
    G = _rows(model, ops, q, contacts)
    v_plus, impulses, pivots = constrained.impulse_solve(ops, constrained.constraint_space(model, ops, G, q), v,
                                                         restitution=[0], damping=damping)
    return v_plus + impulses + pivots


# The inputs constrained_dynamics is differentiated with respect to (not the damping)
DIFFERENTIATED = ("q", "v", "tau", "kp", "kd")


def constrained_dynamics_derivatives(model, ops, q, v, tau, *, kp, kd, damping, contacts=()):
    """d q-ddot / d each of DIFFERENTIATED, then d lambda / d each (q in the tangent space), by
    forward mode through constrained_dynamics: each an (nv or m) x (nv or 1) block, row-major."""
    n, m = model.nv, rows(model, contacts)

    def run(model, ops, q, v, tau, gains):
        return constrained_dynamics(model, ops, q, v, tau, kp=gains[:1], kd=gains[1:], damping=damping,
                                    contacts=contacts)[:n + m]
    *blocks, gains = derivatives.derivatives_of(model, ops, run, [("q", q), ("v", v), ("tau", tau),
                                                                  ("gains", list(kp) + list(kd))],
                                                ("q", "v", "tau", "gains"))
    blocks += [[[row[k]] for row in gains] for k in range(2)]   # d/dkp, d/dkd: a column each
    return [x for part in (slice(0, n), slice(n, n + m)) for block in blocks for row in block[part] for x in row]
