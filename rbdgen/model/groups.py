"""Lie groups of the joints' configurations: q (+) v and q1 (-) q0 for each kind of joint.

A joint's configurations form a Lie group and v is a velocity in its tangent space,
expressed in the child frame. q (+) v is the configuration reached from q by the constant
velocity v in unit time; difference is its inverse, the velocity of the shortest such motion:

- vector spaces (revolute, prismatic, helical, translation, euler_*): q + v and q1 - q0
  (JointModel's own, rbdgen/model/joints.py);
- continuous (one angle): q + v; the difference is wrapped into (-pi, pi];
- planar, SE(2) as (x, y, theta): M(q) exp(v) and log(M0^-1 M1);
- spherical, SO(3) as a unit quaternion (x, y, z, w): q (x) exp(w) and log(q0^* (x) q1);
- free-flyer, SE(3): M(q) exp6(v) and log6(M0^-1 M1), v = [linear; angular].

Identities: integrate(q, difference(q, q1)) = q1 (the same rotation; angles modulo 2 pi) and
difference(q, integrate(q, v)) = v while every rotation angle in v stays below pi.

Each joint model (rbdgen/model/joints.py) makes its integrate and difference from the
operations here; rbdgen/algorithms/configuration.py applies them to a whole model. The
coefficients with a removable singularity at angle 0 (sin t / t, (t - sin t) / t^3, the
logarithm's) are written once for every kind of scalar: `ops.select` takes a series below a
threshold and the closed form above, and `ops.sqrt` and `ops.atan2` are the scalar's own
(rbdgen/algorithms/__init__.py describes `ops`).
"""

import math
from dataclasses import dataclass
from fractions import Fraction

from ..spatial import cross3, dot3, matTvec3, matvec3, quaternion_to_rotation

def angle_difference(ops, a, b):
    """b - a wrapped into (-pi, pi]: the difference of a continuous joint's angles."""
    s, c = ops.sincos(b - a)
    return ops.atan2(s, c)


def quaternion_integrate(ops, q, w):
    """q (x) exp(w): the rotation q followed by the rotation vector w in its own frame,
    normalized (a unit quaternion in, a unit quaternion out)."""
    return _normalized(ops, quaternion_product(q, ops.let("e", "", _rotation_exp(ops, w).quaternion(ops))))


def quaternion_difference(ops, q0, q1):
    """log(q0^* (x) q1): the rotation vector, angle in [0, pi], that turns q0 into q1."""
    return rotation_log(ops, quaternion_product(_conjugate(q0), q1)).omega


def se3_integrate(ops, q, v):
    """M(q) exp6(v) for q = [x y z qx qy qz qw], v = [linear; angular] in the body frame.

    exp6 moves by V(w) v_linear, V = 1 + (1 - cos t)/t^2 w~ + (t - sin t)/t^3 w~^2, t = |w|.
    The quaternion is taken, as Pinocchio does, in the hemisphere of q (q . result >= 0).
    """
    p, quat = q[0:3], q[3:7]
    u, w = v[0:3], v[3:6]
    exp = _rotation_exp(ops, w)
    t2 = exp.angle2
    b = ops.let("b", "", 2 * exp.sin_half_over_angle * exp.sin_half_over_angle)   # (1 - cos t)/t^2
    c = ops.let("c", "", sin_defect(ops, exp.angle, t2, 2 * exp.sin_half * exp.cos_half))
    wxu, wu = cross3(w, u), dot3(w, u)
    moved = ops.let("Vv", "", [u[k] + b * wxu[k] + c * (wu * w[k] - t2 * u[k]) for k in range(3)])
    R = ops.let("R", "", quaternion_to_rotation(*quat))
    step = matvec3(R, moved)
    # exp(w)'s real part is cos(t/2); Pinocchio keeps q . result = cos(t/2) |q|^2 >= 0
    sign = ops.let("sgn", "", ops.select(exp.cos_half, 0, lambda safe: -1, lambda safe: 1))
    turn = ops.let("e", "", exp.quaternion(ops, sign))
    return [p[k] + step[k] for k in range(3)] + _normalized(ops, quaternion_product(quat, turn))


def se3_difference(ops, q0, q1):
    """log6(M0^-1 M1): [linear; angular] velocity in the frame of q0 that reaches q1 in unit time.

    With the rotation vector w (angle t in [0, pi]) of R0^T R1 and p = R0^T (p1 - p0),
    v_linear = V(w)^-1 p = alpha p - w x p / 2 + gamma w (w . p), alpha = (t/2) cot(t/2),
    gamma = (1 - alpha) / t^2.
    """
    R0 = ops.let("R", "", quaternion_to_rotation(*q0[3:7]))
    p = ops.let("p", "", matTvec3(R0, [b - a for a, b in zip(q0[0:3], q1[0:3])]))
    log = rotation_log(ops, quaternion_product(_conjugate(q0[3:7]), q1[3:7]))
    w = log.omega
    alpha = ops.let("alpha", "", log.half_angle_over_sin * log.cos_half)
    gamma = ops.let("gamma", "", log_defect(ops, log.half_angle, alpha))
    wxp, wp = cross3(w, p), dot3(w, p)
    return [alpha * p[k] - wxp[k] / 2 + gamma * wp * w[k] for k in range(3)] + list(w)


def se2_integrate(ops, q, v):
    """M(q) exp(v) for q = [x, y, theta], v = [vx, vy, omega] in the body frame: the position
    moves by R(theta) V(omega) (vx, vy), V = [[sin w / w, -(1 - cos w)/w], [(1 - cos w)/w, sin w / w]]."""
    half = ops.let("h", "", v[2] / 2)
    sh, ch = ops.sincos(half)
    k = ops.let("sinc", "", sinc(ops, half, sh))
    a, b = ch * k, sh * k                # sin w / w and (1 - cos w) / w
    tx, ty = ops.let("tr", "", [a * v[0] - b * v[1], b * v[0] + a * v[1]])
    s, c = ops.sincos(q[2])
    return [q[0] + c * tx - s * ty, q[1] + s * tx + c * ty, q[2] + v[2]]


def se2_difference(ops, q0, q1):
    """log(M0^-1 M1): the angle difference w in (-pi, pi] and V(w)^-1 R(theta0)^T (p1 - p0),
    V^-1 = [[h cot h, h], [-h, h cot h]] with h = w / 2."""
    w = ops.let("w", "", angle_difference(ops, q0[2], q1[2]))
    s, c = ops.sincos(q0[2])
    dx, dy = q1[0] - q0[0], q1[1] - q0[1]
    px, py = ops.let("p", "", [c * dx + s * dy, c * dy - s * dx])
    half = ops.let("h", "", w / 2)
    sh, ch = ops.sincos(half)
    alpha = ops.let("alpha", "", ch / sinc(ops, half, sh))
    return [alpha * px + half * py, alpha * py - half * px, w]


# ---------------------------------------------------------------- SO(3) ------------------

def quaternion_product(a, b):
    """Hamilton product a (x) b of quaternions (x, y, z, w): R(a b) = R(a) R(b)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz]


def _conjugate(q):
    return [-q[0], -q[1], -q[2], q[3]]


def _normalized(ops, quat):
    norm = ops.let("norm", "", ops.sqrt(ops.let("norm2", "", _dot4(quat, quat))))
    inverse = ops.let("inv", "", 1 / norm)
    return [x * inverse for x in quat]


def _dot4(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]


@dataclass
class _Exp:
    """exp(w) of a rotation vector w, t = |w|, and the pieces of it that SE(3) reuses."""

    w: list
    angle: object
    angle2: object
    sin_half: object
    cos_half: object
    sin_half_over_angle: object

    def quaternion(self, ops, sign=1):
        """sign * exp(w) = sign (sin(t/2) w / t, cos(t/2)) (-exp(w) is the same rotation)."""
        k = ops.let("k", "", sign * self.sin_half_over_angle)
        return [k * self.w[0], k * self.w[1], k * self.w[2], sign * self.cos_half]


def _rotation_exp(ops, w):
    """exp(w) = (sin(t/2) w / t, cos(t/2)), t = |w|."""
    t2 = ops.let("t2", "", dot3(w, w))
    t = ops.let("t", "", ops.sqrt(t2))
    half = ops.let("h", "", t / 2)
    sh, ch = ops.sincos(half)
    k = ops.let("k", "", sinc(ops, half, sh) / 2)      # sin(t/2) / t
    return _Exp(w, t, t2, sh, ch, k)


@dataclass
class _Log:
    """The rotation vector omega of a quaternion e (taken with e_w >= 0), angle t, and the
    pieces that SE(3) reuses: t/2, (t/2) / |e_xyz| and e_w."""

    omega: list
    half_angle: object
    half_angle_over_sin: object
    cos_half: object


def rotation_log(ops, e):
    """The rotation vector of the quaternion e, angle t in [0, pi]: e is taken with e_w >= 0
    (e and -e are the same rotation), t/2 = atan2(|e_xyz|, e_w), w = t e_xyz / |e_xyz|.
    atan2 stays accurate at every angle, up to pi where e_w = 0."""
    sign = ops.let("sgn", "", ops.select(e[3], 0, lambda safe: -1, lambda safe: 1))
    cos_half = ops.let("ew", "", sign * e[3])
    s2 = ops.let("s2", "", dot3(e[0:3], e[0:3]))
    s = ops.let("s", "", ops.sqrt(s2))
    half = ops.let("h", "", ops.atan2(s, cos_half))
    ratio = ops.let("k", "", ops.select(s2, 1e-10, lambda safe: (1 - s2 / (3 * cos_half * cos_half)) / safe(cos_half),
                                        lambda safe: half / safe(s)))      # (t/2) / |e_xyz|
    scale = ops.let("k", "", 2 * sign * ratio)
    return _Log(ops.let("w", "", [scale * x for x in e[0:3]]), half, ratio, cos_half)


# ---------------------------------------------------------------- scalar functions -------
# Each takes `ops` for its choice between a series below a threshold and the closed form above
# (`ops.select`: a C conditional in the generator, a Python branch on a float, both formulas
# and a choice per lane in a NumPy batch). The series are Taylor series; their thresholds keep
# both the series and the closed form within a few ulp (tested against mpmath in
# tests/test_configuration.py).

def _polynomial(coefficients, x):
    """c0 + c1 x + c2 x^2 + ... by Horner's rule."""
    value = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        value = c + x * value
    return value


# sin(t)/t = sum (-1)^j t^2j / (2j + 1)!: below t^2 = 1e-6 the terms after t^4 are < 1e-21
_SINC_SERIES = (1.0, -1 / 6, 1 / 120)
# (t - sin t)/t^3 = sum (-1)^j t^2j / (2j + 3)!: nine terms below t^2 = 1, above which the
# closed form's cancellation costs at most a few eps
_SIN_DEFECT_SERIES = tuple((-1) ** j / math.factorial(2 * j + 3) for j in range(9))


def _log_defect_series(terms):
    """(1 - h cot h) / (4 h^2) = sum_n 4^n |B_2n| / (2n)! h^(2n-2) / 4 (Bernoulli numbers):
    the terms fall as (h / pi)^2."""
    return tuple(float(4 ** n * abs(_bernoulli(2 * n)) / math.factorial(2 * n) / 4) for n in range(1, terms + 1))


def _bernoulli(n):
    """The Bernoulli number B_n, exactly (Akiyama-Tanigawa; B_1 = +1/2, unused here)."""
    a = [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
    return a[0]


# fourteen terms below h^2 = 0.5, above which the closed form's cancellation costs ~5 eps
_LOG_DEFECT_SERIES = _log_defect_series(14)


def sinc(ops, t, sin_t):
    """sin(t) / t, given sin_t = sin(t); 1 at t = 0."""
    t2 = t * t
    return ops.select(t2, 1e-6, lambda safe: _polynomial(_SINC_SERIES, t2), lambda safe: sin_t / safe(t))


def sin_defect(ops, t, t2, sin_t):
    """(t - sin t) / t^3 for t >= 0 with t2 = t^2, given sin_t = sin(t); 1/6 at t = 0."""
    return ops.select(t2, 1.0, lambda safe: _polynomial(_SIN_DEFECT_SERIES, t2),
                      lambda safe: (t - sin_t) / (safe(t) * safe(t2)))


def log_defect(ops, h, alpha):
    """(1 - alpha) / (4 h^2) with alpha = h cot h: the coefficient gamma of V^-1 in SE(3)'s
    log, for the half angle h in [0, pi/2]; 1/12 at h = 0."""
    h2 = h * h
    return ops.select(h2, 0.5, lambda safe: _polynomial(_LOG_DEFECT_SERIES, h2),
                      lambda safe: (1 - alpha) / (4 * safe(h2)))
