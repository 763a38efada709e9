"""Joint models: jcalc (RBDL paper §4, seed 000; RBDL joints docs, seed 003) for every joint
type rbdgen knows.

`calc(ops, q, v)` takes the joint's slices of q and v and returns the joint transform X_J
(parent joint frame -> child body frame), the motion subspace S (one Motion per velocity
coordinate, in child coordinates) and S_dot, the rate of change of S in child coordinates
along v (None where S is constant); the bias is c_J = S_dot v. Joint velocities are those
of Pinocchio: for every joint here v is the child's velocity relative to the parent,
expressed in the child frame, so q-dot differs from v for the quaternion and planar
joints. `ops.sincos(angle)` gives sine and cosine together (symbols in the generator).

`integrate(ops, q, v)` and `difference(ops, q0, q1)` are the joint's configuration-space
operations q (+) v and q1 (-) q0 (its Lie group's, rbdgen/model/groups.py).
"""

import math

from ..errors import ModelError
from ..spatial import (IDENTITY3, ZERO3, Motion, Transform, axis_rotation, cross3, dot3,
                       matmul3, quaternion_to_rotation, scale3, transpose3)
from . import groups


class JointModel:
    type = "?"
    nq = 1
    nv = 1
    constant_subspace = True    # S fixed in the child body (not the Euler joints)

    def calc(self, ops, q, v):
        raise NotImplementedError

    def neutral(self):
        """The configuration where X_J is the identity."""
        return [0.0] * self.nq

    def tangent(self, ops, q):
        """The map v -> q-dot (nq x nv): the derivative of q (+) delta at delta = 0, which is
        how derivatives with respect to q are taken in the tangent space. The identity for
        joints whose q-dot is v."""
        return [[1 if r == c else 0 for c in range(self.nv)] for r in range(self.nq)]

    def integrate(self, ops, q, v):
        """q (+) v: the configuration reached from q by the constant velocity v in unit time;
        q + v where the configurations form a vector space."""
        return [a + b for a, b in zip(q, v)]

    def difference(self, ops, q0, q1):
        """q1 (-) q0: the (shortest) velocity with q0 (+) v = q1; q1 - q0 in a vector space."""
        return [b - a for a, b in zip(q0, q1)]

    def describe(self):
        return self.type


def _unit(axis, what):
    axis = tuple(float(a) for a in axis)
    norm = math.sqrt(dot3(axis, axis))
    if not norm > 1e-12 or not math.isfinite(norm):
        raise ModelError(f"{what}: axis {axis} has zero length; give a non-zero axis")
    return snap_orthonormal((tuple(a / norm for a in axis),))[0]


def snap(x, tol=1e-10):
    """Exact 0, 1 or -1 (Python ints) for values within `tol` of them, else float.

    URDF rotations of ±π/2 leave entries like 6e-17, or 4.9e-12 where the file writes
    π/2 as 1.57079632679; as exact ints the symbolic run drops them, so the generated code never
    multiplies by them. Rows that must stay orthonormal go through `snap_orthonormal`.
    """
    x = float(x)
    for exact in (0, 1, -1):
        if abs(x - exact) <= tol:
            return exact
    return x


# What rounding alone leaves in a rotation computed in double precision (cos(π/2) = 6e-17):
# snapping entries this small keeps rows orthonormal to a few units in the last place.
ROUNDING_RESIDUE = 1e-15


def snap_orthonormal(rows):
    """Orthonormal rows (a rotation, a unit axis) with entries near 0 and ±1 made exact,
    only as far as the rows stay orthonormal to rounding.

    Snapping 4.9e-12 to 0 in a rotation by 1.57079632679 about x is exact when the whole
    matrix snaps to a signed permutation. In a rotation that also turns by 0.3 about z it
    leaves rows orthogonal only to 1e-12, and every algorithm then computes a slightly
    different non-rigid robot: M from CRBA and forward dynamics from ABA disagreed by 7e-12
    on so101 in exact arithmetic, M^-1 in body and in fixed coordinates by 1.5e-10 on xarm7.
    Such rows keep their small entries, only rounding residues become exact zeros."""
    snapped = [tuple(snap(x) for x in row) for row in rows]
    if _orthonormality_defect(snapped) <= ROUNDING_RESIDUE:
        return snapped
    return [tuple(snap(x, ROUNDING_RESIDUE) for x in row) for row in rows]


def _orthonormality_defect(rows):
    return max(abs(sum(float(a) * float(b) for a, b in zip(ri, rj)) - (1.0 if i == j else 0.0))
               for i, ri in enumerate(rows) for j, rj in enumerate(rows))


class Revolute(JointModel):
    """Rotation by q about a unit axis; also the URDF continuous joint (one angle)."""

    type = "revolute"

    def __init__(self, axis, continuous=False):
        self.axis = _unit(axis, "revolute joint")
        self.continuous = continuous
        if continuous:
            self.type = "continuous"

    def calc(self, ops, q, v):
        s, c = ops.sincos(q[0])
        E = transpose3(axis_rotation(self.axis, s, c))
        S = Motion(self.axis, ZERO3)
        return Transform(E, ZERO3), [S], None

    def difference(self, ops, q0, q1):
        """A continuous joint's angles differ modulo 2 pi: the difference in (-pi, pi]."""
        if self.continuous:
            return [groups.angle_difference(ops, q0[0], q1[0])]
        return super().difference(ops, q0, q1)

    def describe(self):
        return f"{self.type} axis {self.axis}"


class Prismatic(JointModel):
    type = "prismatic"

    def __init__(self, axis):
        self.axis = _unit(axis, "prismatic joint")

    def calc(self, ops, q, v):
        return Transform(IDENTITY3, scale3(q[0], self.axis)), [Motion(ZERO3, self.axis)], None

    def describe(self):
        return f"prismatic axis {self.axis}"


class Helical(JointModel):
    """Rotation by q about the axis and translation by pitch * q along it."""

    type = "helical"

    def __init__(self, axis, pitch):
        self.axis = _unit(axis, "helical joint")
        self.pitch = snap(pitch)

    def calc(self, ops, q, v):
        s, c = ops.sincos(q[0])
        E = transpose3(axis_rotation(self.axis, s, c))
        r = scale3(self.pitch * q[0], self.axis)
        return Transform(E, r), [Motion(self.axis, scale3(self.pitch, self.axis))], None

    def describe(self):
        return f"helical axis {self.axis} pitch {self.pitch}"


def _unit_columns(angular):
    """Motion columns for the unit vectors, angular or linear."""
    basis = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    return [Motion(e, ZERO3) if angular else Motion(ZERO3, e) for e in basis]


class Spherical(JointModel):
    """Ball joint, q = unit quaternion (x, y, z, w), v = angular velocity in the child frame."""

    type = "spherical"
    nq, nv = 4, 3

    def calc(self, ops, q, v):
        E = transpose3(quaternion_to_rotation(*q))
        return Transform(E, ZERO3), _unit_columns(angular=True), None

    def neutral(self):
        return [0.0, 0.0, 0.0, 1.0]

    def tangent(self, ops, q):
        return quaternion_tangent(q)

    def integrate(self, ops, q, v):
        return groups.quaternion_integrate(ops, q, v)

    def difference(self, ops, q0, q1):
        return groups.quaternion_difference(ops, q0, q1)


class FreeFlyer(JointModel):
    """6-DoF joint as Pinocchio's JointModelFreeFlyer.

    q = [x y z qx qy qz qw] (position and orientation of the child in the parent),
    v = [linear; angular] velocity of the child in its own frame.
    """

    type = "free_flyer"
    nq, nv = 7, 6

    def calc(self, ops, q, v):
        E = transpose3(quaternion_to_rotation(*q[3:7]))
        return Transform(E, q[0:3]), _unit_columns(angular=False) + _unit_columns(angular=True), None

    def neutral(self):
        return [0.0] * 6 + [1.0]

    def tangent(self, ops, q):
        """p-dot = R v_lin, and the quaternion's rate from the angular velocity."""
        R = quaternion_to_rotation(*q[3:7])
        rows = [list(R[r]) + [0, 0, 0] for r in range(3)]
        return rows + [[0, 0, 0] + row for row in quaternion_tangent(q[3:7])]

    def integrate(self, ops, q, v):
        return groups.se3_integrate(ops, q, v)

    def difference(self, ops, q0, q1):
        return groups.se3_difference(ops, q0, q1)


class TranslationXYZ(JointModel):
    """3-DoF translation; q = v = the child's position in the parent (no rotation)."""

    type = "translation"
    nq, nv = 3, 3

    def calc(self, ops, q, v):
        return Transform(IDENTITY3, q), _unit_columns(angular=False), None


class Planar(JointModel):
    """Motion in the plane normal to `normal`: q = [x, y, theta], v = [vx, vy, omega].

    x and y run along two in-plane unit vectors (u, w) with u x w = normal; for the normal z
    they are x and y, as Pinocchio's JointModelPlanar. v is the child's velocity in its own
    frame (as Pinocchio), so dx/dt and dy/dt are v rotated by theta.
    """

    type = "planar"
    nq, nv = 3, 3

    def __init__(self, normal=(0, 0, 1)):
        n = _unit(normal, "planar joint")
        if n == (0, 0, 1):
            u = (1, 0, 0)
        else:  # any in-plane direction will do; this one is deterministic
            u = _unit(cross3((1, 0, 0) if abs(n[0]) < 0.9 else (0, 1, 0), n), "planar joint")
        self.normal, self.u, self.w = n, u, snap_orthonormal((cross3(n, u),))[0]

    def calc(self, ops, q, v):
        s, c = ops.sincos(q[2])
        E = transpose3(axis_rotation(self.normal, s, c))
        r = tuple(q[0] * a + q[1] * b for a, b in zip(self.u, self.w))
        S = [Motion(ZERO3, self.u), Motion(ZERO3, self.w), Motion(self.normal, ZERO3)]
        return Transform(E, r), S, None

    def tangent(self, ops, q):
        """(x, y)-dot is v's in-plane part rotated by theta."""
        s, c = ops.sincos(q[2])
        return [[c, -s, 0], [s, c, 0], [0, 0, 1]]

    def integrate(self, ops, q, v):
        """SE(2) in the plane's (u, w) coordinates, as Pinocchio's JointModelPlanar."""
        return groups.se2_integrate(ops, q, v)

    def difference(self, ops, q0, q1):
        return groups.se2_difference(ops, q0, q1)

    def describe(self):
        return f"planar normal {self.normal}"


class EulerZYX(JointModel):
    """3-DoF rotation R = Rz(q0) Ry(q1) Rx(q2) (RBDL paper eq. 35-38, seed 000; Pinocchio's
    SphericalZYX).

    v = q-dot; S maps it to the angular velocity in the child frame, so S depends on q and
    c_J = (dS/dt) q-dot is not zero.
    """

    type = "euler_zyx"
    nq, nv = 3, 3
    constant_subspace = False

    def calc(self, ops, q, v):
        (s0, c0), (s1, c1), (s2, c2) = (ops.sincos(x) for x in q)
        R = _matmul_chain(_rot_z(s0, c0), _rot_y(s1, c1), _rot_x(s2, c2))
        cols = [(-s1, c1 * s2, c1 * c2), (0, c2, -s2), (1, 0, 0)]
        d0, d1, d2 = v
        # Time derivatives of the first two columns; the third is constant.
        dcol0 = (-c1 * d1, -s1 * d1 * s2 + c1 * c2 * d2, -s1 * d1 * c2 - c1 * s2 * d2)
        dcol1 = (0, -s2 * d2, -c2 * d2)
        S_dot = [Motion(dcol0, ZERO3), Motion(dcol1, ZERO3), Motion()]
        return Transform(transpose3(R), ZERO3), [Motion(col, ZERO3) for col in cols], S_dot


class EulerXYZ(JointModel):
    """3-DoF rotation R = Rx(q0) Ry(q1) Rz(q2) (RBDL paper eq. 35-38, seed 000; RBDL's EulerXYZ)."""

    type = "euler_xyz"
    nq, nv = 3, 3
    constant_subspace = False

    def calc(self, ops, q, v):
        (s0, c0), (s1, c1), (s2, c2) = (ops.sincos(x) for x in q)
        R = _matmul_chain(_rot_x(s0, c0), _rot_y(s1, c1), _rot_z(s2, c2))
        cols = [(c2 * c1, -s2 * c1, s1), (s2, c2, 0), (0, 0, 1)]
        d0, d1, d2 = v
        dcol0 = (-s2 * d2 * c1 - c2 * s1 * d1, -c2 * d2 * c1 + s2 * s1 * d1, c1 * d1)
        dcol1 = (c2 * d2, -s2 * d2, 0)
        S_dot = [Motion(dcol0, ZERO3), Motion(dcol1, ZERO3), Motion()]
        return Transform(transpose3(R), ZERO3), [Motion(col, ZERO3) for col in cols], S_dot


def quaternion_tangent(q):
    """d(x, y, z, w) / d omega for q-dot = q (x) (omega / 2, 0), omega in the child frame."""
    x, y, z, w = q
    return [[w / 2, -z / 2, y / 2], [z / 2, w / 2, -x / 2], [-y / 2, x / 2, w / 2], [-x / 2, -y / 2, -z / 2]]


def _rot_x(s, c):
    return ((1, 0, 0), (0, c, -s), (0, s, c))


def _rot_y(s, c):
    return ((c, 0, s), (0, 1, 0), (-s, 0, c))


def _rot_z(s, c):
    return ((c, -s, 0), (s, c, 0), (0, 0, 1))


def _matmul_chain(A, B, C):
    return matmul3(matmul3(A, B), C)


JOINT_TYPES = {
    "revolute": Revolute, "continuous": lambda axis: Revolute(axis, continuous=True),
    "prismatic": Prismatic, "helical": Helical, "spherical": Spherical,
    "free_flyer": FreeFlyer, "translation": TranslationXYZ, "planar": Planar,
    "euler_zyx": EulerZYX, "euler_xyz": EulerXYZ,
}
