"""Contacts declared at build time (RBDL paper §2.2, §2.3, §6.4, seed 000; Drumwright §6.3,
seed 001), written once for numbers and symbols like every other algorithm.

A contact holds a frame still, as Pinocchio's RigidConstraintModel in LOCAL coordinates:
- "6d": the frame's spatial velocity (rows [linear; angular] in frame axes);
- "3d": the velocity of a point fixed in the frame, in frame axes;
- "1d": that velocity along a unit normal given in frame axes.
G stacks the contacts' rows of the frame Jacobian (in the frame's axes), and gamma = -G-dot v
is minus the same rows of the frame's acceleration at zero joint acceleration (spatial for
6d, classical for a point), so that G q-ddot = gamma keeps the contacts still.

Dynamics (RBDL paper eq. 7, seed 000) and impacts (eq. 10) solve the KKT system by its range-space form:
M is factorized once (fd_crba's sparse L^T D L), Y = M^-1 G^T and the free acceleration come
from it, and the small contact-space matrix K = G M^-1 G^T (+ damping 1) by a dense L D L^T
whose pivots are returned with the result: a pivot that is not positive is the status of a
redundant contact set (never a crash, and the caller refuses the numbers).
"""

from dataclasses import dataclass

from ..errors import ModelError, did_you_mean
from ..model.closures import parse_point
from ..spatial import Force, sum_terms
from .frames import placement_from_entries
from . import fd_crba as _fd_crba
from . import mimic

KINDS = {"6d": 6, "3d": 3, "1d": 1}


@dataclass(frozen=True)
class Contact:
    """A contact on `frame` (its body and the placement on it, 12 numbers, moved to the contact
    point for 3d and 1d), of `kind`, with a unit `normal` in frame axes for 1d."""

    frame: str
    kind: str
    body: int
    placement: tuple
    point: tuple = (0.0, 0.0, 0.0)
    normal: tuple = (0.0, 0.0, 1.0)

    @property
    def rows(self):
        return KINDS[self.kind]

    def describe(self):
        """The contact as --contact takes it, every number to its last digit: the text keys the
        build and is parsed again by verification and by a process that rebuilds the module."""
        text = f"{self.frame}:{self.kind}"
        if any(self.point):
            text += "@" + ",".join(_exact(x) for x in self.point)
        if self.kind == "1d" and self.normal != (0.0, 0.0, 1.0):
            text += "/" + ",".join(_exact(x) for x in self.normal)
        return text


def _exact(x):
    """The shortest text that reads back as the same float: 0.05, 1e-07, 0 (not 0.0)."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def constraint_rows(model, ops, contacts, q):
    """G: the contacts' rows of their frame Jacobians in frame axes (m x nv)."""
    G = []
    for c in contacts:
        J = mimic.frame_jacobian_of_body(model, ops, (c.body, list(c.placement)), q, reference="local")
        G += _select(c, J)
    return G


def constraint_drift(model, ops, contacts, q, v):
    """gamma = -G-dot v: minus the contacts' accelerations at zero joint acceleration."""
    return [-x for x in contact_accelerations(model, ops, contacts, q, v, [0] * model.nv)]


def contact_accelerations(model, ops, contacts, q, v, a):
    """G a - gamma: the contacts' rows of their frames' accelerations at (q, v, a)."""
    accelerations = []
    for c in contacts:
        accelerations += _select(c, mimic.frame_acceleration(model, ops, (c.body, list(c.placement)), q, v, a,
                                                            reference="local",
                                                            classical=c.kind != "6d"))
    return accelerations


def contact_velocities(model, ops, contacts, q, v):
    """G v: the contacts' rows of their frames' velocities (local, at the contact point)."""
    velocities = []
    for c in contacts:
        velocities += _select(c, mimic.frame_velocity(model, ops, (c.body, list(c.placement)), q, v, reference="local"))
    return velocities


def contact_wrenches(model, contacts, lam):
    """The multipliers lambda as forces on the bodies (body coordinates, rnea's f_ext): rnea
    with them is rnea - G^T lambda. A contact's rows are a wrench at its frame in frame axes
    ([force; moment] for 6d, the force at the point for 3d, along the normal for 1d)."""
    forces = [Force() for _ in range(model.full.nbodies)]
    k = 0
    for c in contacts:
        rows = lam[k:k + c.rows]
        k += c.rows
        lin = rows[:3] if c.kind != "1d" else [n * rows[0] for n in c.normal]
        ang = rows[3:6] if c.kind == "6d" else [0, 0, 0]
        forces[c.body] = forces[c.body] + placement_from_entries(c.placement).inv_apply_force(Force(ang, lin))
    return forces


def _select(contact, rows):
    """A contact's rows of a 6-row quantity [linear; angular] (rows or entries)."""
    if contact.kind == "6d":
        return list(rows)
    if contact.kind == "3d":
        return list(rows[:3])
    n = contact.normal
    if isinstance(rows[0], list):
        return [[sum_terms(n[i] * rows[i][k] for i in range(3)) for k in range(len(rows[0]))]]
    return [sum_terms(n[i] * rows[i] for i in range(3))]


class _Factor:
    """M = L^T D L (fd_crba's sparse factorization; with mimic joints, along the elimination
    tree of the reduced M), then M^-1 = L^-1 D^-1 L^-T in two halves: L^-T b touches only the
    ancestors of b's non-zeros, which a contact's Jacobian row is made of."""

    def __init__(self, model, ops, M):
        self.ops, self.lam = ops, mimic.elimination_parents(model)
        self.H = _fd_crba.ltdl(ops, [list(row) for row in M], self.lam)

    def half(self, b):
        """y = L^-T b (sparse: only ancestors of b's non-zeros)."""
        y, H, lam = list(b), self.H, self.lam
        for i in reversed(range(len(y))):
            j = lam[i]
            while j >= 0:
                y[j] = y[j] - H[i][j] * y[i]
                j = lam[j]
            y[i] = self.ops.let("y", i, y[i])
        return y

    def inner(self, y, z):
        """y^T D^-1 z for two halves: b^T M^-1 c."""
        return sum_terms(a * b * _fd_crba.pivot_inverse(self.ops, self.H, k) for k, (a, b) in enumerate(zip(y, z))
                         if not (_structural_zero(a) or _structural_zero(b)))

    def solve(self, b):
        return _fd_crba.ltdl_solve(self.ops, self.H, self.lam, list(b))


def _structural_zero(x):
    """An exact zero of the model's structure (int 0: the symbolic run's zeros are ints too), not a value that is zero now."""
    return (isinstance(x, int) and x == 0) or getattr(x, "is_zero", None) is True and not isinstance(x, float)


def _dot(a, b):
    return sum_terms(x * y for x, y in zip(a, b))


def contact_space(model, ops, contacts, q):
    """(G, the halves L^-T g of its rows, K = G M^-1 G^T, the factor of M)."""
    return constraint_space(model, ops, constraint_rows(model, ops, contacts, q), q)


def constraint_space(model, ops, G, q):
    """contact_space for the constraint Jacobian G (rows of nv numbers)."""
    from .aba import check_invertible
    check_invertible(model)
    factor = _Factor(model, ops, mimic.crba(model, ops, q))
    W = [factor.half(row) for row in G]
    lower = [[ops.let("K", r, factor.inner(W[r], W[s])) for s in range(r + 1)] for r in range(len(G))]
    K = [[lower[max(r, s)][min(r, s)] for s in range(len(G))] for r in range(len(G))]
    return G, W, K, factor


def transpose_times(G, x):
    """G^T x."""
    return [sum_terms(G[r][k] * x[r] for r in range(len(G))) for k in range(len(G[0]) if G else 0)]


def ldl_solve(ops, A, b):
    """x with A x = b for a small symmetric A, by a dense L D L^T without pivoting; returns
    (x, the pivots d). A pivot that is not positive means A is singular (or indefinite)."""
    n = len(A)
    L = [[0] * n for _ in range(n)]
    d = [0] * n
    for j in range(n):
        d[j] = ops.let("d", j, A[j][j] - sum_terms(L[j][k] * L[j][k] * d[k] for k in range(j)))
        for i in range(j + 1, n):
            L[i][j] = ops.let("L", i, (A[i][j] - sum_terms(L[i][k] * L[j][k] * d[k] for k in range(j))) / d[j])
    y = [0] * n
    for i in range(n):
        y[i] = ops.let("y", i, b[i] - sum_terms(L[i][k] * y[k] for k in range(i)))
    x = [0] * n
    for i in reversed(range(n)):
        x[i] = ops.let("x", i, y[i] / d[i] - sum_terms(L[k][i] * x[k] for k in range(i + 1, n)))
    return x, d


def contact_dynamics(model, ops, contacts, q, v, tau, *, damping):
    """RBDL paper eq. (7), seed 000: [q-ddot (nv), lambda (m), pivots of K + damping (m)] with
    M q-ddot = tau - nle + G^T lambda and G q-ddot = gamma.

    lambda solves K lambda = gamma - G M^-1 (tau - nle), where G M^-1 b is the inner product
    of halves; then q-ddot = M^-1 (tau - nle + G^T lambda): one full solve in all."""
    free = [t - b for t, b in zip(tau, mimic.nle(model, ops, q, v))]
    gamma = constraint_drift(model, ops, contacts, q, v)
    qdd, lam, pivots = kkt_solve(ops, contact_space(model, ops, contacts, q), damping, free, gamma)
    return qdd + lam + pivots


def kkt_solve(ops, space, damping, free, gamma):
    """(q-ddot, lambda, pivots) with M q-ddot = free + G^T lambda and G q-ddot + damping lambda
    = gamma, for `space` = contact_space(...): lambda from the dense L D L^T of K + damping
    (the right side G M^-1 free by inner products of halves), then one full solve."""
    G, W, K, factor = space
    half_free = factor.half(free)
    lam, pivots = ldl_solve(ops, _damped(K, damping), [g - factor.inner(w, half_free) for g, w in zip(gamma, W)])
    qdd = factor.solve([f + x for f, x in zip(free, transpose_times(G, lam))])
    return qdd, lam, pivots


def impulse_dynamics(model, ops, contacts, q, v_minus, *, restitution, damping):
    """RBDL paper eq. (10), seed 000: [v+ (nv), impulses (m), pivots (m)] with v+ = v- + M^-1 G^T Lambda
    and G v+ = -restitution G v-."""
    v_plus, impulses, pivots = impulse_solve(ops, contact_space(model, ops, contacts, q), v_minus,
                                             restitution=restitution, damping=damping)
    return v_plus + impulses + pivots


def impulse_solve(ops, space, v_minus, *, restitution, damping):
    """(v+, impulses, pivots) with M (v+ - v-) = G^T impulses and G v+ + damping impulses =
    -restitution G v-, for `space` = constraint_space(...): with restitution 0, the velocity
    nearest v- in M's metric that the constraints allow."""
    G, _, K, factor = space
    impulses, pivots = ldl_solve(ops, _damped(K, damping), [-(1 + restitution[0]) * _dot(row, v_minus) for row in G])
    jump = factor.solve(transpose_times(G, impulses))
    return [a + b for a, b in zip(v_minus, jump)], impulses, pivots


def _damped(K, damping):
    return [[K[r][s] + (damping[0] if r == s else 0) for s in range(len(K))] for r in range(len(K))]


def contact_inertia(model, ops, contacts, q):
    """K = G M^-1 G^T (m x m), the contact-space inverse inertia (Drumwright §6.3, seed 001)."""
    return contact_space(model, ops, contacts, q)[2]


def eom(model, ops, q, v):
    """[M (nv x nv, row by row), nle (nv)]: the equation of motion's terms in one program, so
    that their kinematics is computed once (RBDL paper §8.3 "EoM Setup", seed 000)."""
    M = mimic.crba(model, ops, q)
    return [x for row in M for x in row] + list(mimic.nle(model, ops, q, v))


def contact_eom(model, ops, contacts, q, v):
    """[M, nle, G (m x nv), gamma (m)] in one program ("EoM Contact Setup")."""
    G = constraint_rows(model, ops, contacts, q)
    return eom(model, ops, q, v) + [x for row in G for x in row] + constraint_drift(model, ops, contacts, q, v)


# ----------------------------------------------------------------- declaring contacts ----

def parse_contact(model, text):
    """'FRAME[:6d|:3d|:1d][@x,y,z][/nx,ny,nz]' -> Contact (3d by default; the point in frame
    coordinates; the normal of a 1d contact in frame axes, +z by default). One-line
    ModelError naming the frame (and the closest known names) otherwise."""
    from .frames import placement_entries
    spec, normal_text = (text.split("/", 1) + [None])[:2]
    spec, point_text = (spec.split("@", 1) + [None])[:2]
    name, kind = (spec.rsplit(":", 1) + ["3d"])[:2] if ":" in spec else (spec, "3d")
    if kind not in KINDS:
        raise ModelError(f"contact {text!r}: kind {kind!r} is unknown; use 6d, 3d or 1d (FRAME:3d@x,y,z)")
    try:
        frame = model.frame(name)
    except ModelError:
        hint = did_you_mean(name, [f.name for f in model.frames], "rbdgen info lists the frames")
        raise ModelError(f"contact {text!r}: unknown frame {name!r}; {hint}") from None
    point = _triple(point_text, text, "point") if point_text is not None else (0.0, 0.0, 0.0)
    normal = (0.0, 0.0, 1.0)
    if normal_text is not None:
        if kind != "1d":
            raise ModelError(f"contact {text!r}: a normal (/nx,ny,nz) is for 1d contacts only")
        normal = _triple(normal_text, text, "normal")
        length = sum(x * x for x in normal) ** 0.5
        if not length > 1e-12:
            raise ModelError(f"contact {text!r}: the normal has zero length; give a direction")
        normal = tuple(x / length for x in normal)
    if kind == "6d" and any(point):
        raise ModelError(f"contact {text!r}: a 6d contact holds the whole frame; declare a frame at the point "
                         "or use 3d")
    placement = placement_entries(frame.placement)
    E = (placement[0:3], placement[3:6], placement[6:9])
    r = [placement[9 + i] + sum(E[k][i] * point[k] for k in range(3)) for i in range(3)]
    return Contact(frame.name, kind, frame.body, tuple(placement[:9]) + tuple(r), point, normal)


def _triple(text, whole, what):
    values = parse_point(text)
    if values is None:
        raise ModelError(f"contact {whole!r}: the {what} must be three finite numbers x,y,z")
    return values


def parse_contacts(model, texts):
    """The declared contacts, each frame once per kind; ModelError for an empty list."""
    contacts = [parse_contact(model, t) for t in texts]
    seen = set()
    for c in contacts:
        if c.describe() in seen:
            raise ModelError(f"contact {c.describe()!r} is declared twice; declare each contact once")
        seen.add(c.describe())
    return contacts
