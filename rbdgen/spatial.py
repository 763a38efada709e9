"""Spatial algebra (RBDL paper §3 and §7.3, seed 000), written for scalars of any type.

Every entry is a plain scalar: a float for the reference, a NumPy array of shape (B,) for
batches, or a symbolic expression (rbdgen.codegen.expr) for the generator. Nothing here branches on values, so the
same algorithm code runs on all three. Exact zeros and ones are Python ints (the model
snaps them), which the symbolic run folds away: that is how sparsity prunes the generated code.

Conventions are Featherstone's: spatial vectors are [angular; linear]. A transform
X = (E, r) maps motion vectors from frame A to frame B, where E rotates A coordinates into
B coordinates and r is the position of B's origin in A coordinates:
    X = [E 0; -E r~ E].
A rigid-body inertia is stored as (m, h = m c, I) with I the rotational inertia about the
body origin, as RBDL's `SpatialRigidBodyInertia`.
"""

# ---------------------------------------------------------------- 3-vectors and 3x3 ------

ZERO3 = (0, 0, 0)
IDENTITY3 = ((1, 0, 0), (0, 1, 0), (0, 0, 1))


def add3(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def sub3(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def neg3(a):
    return (-a[0], -a[1], -a[2])


def scale3(s, a):
    return (s * a[0], s * a[1], s * a[2])


def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cross3(a, b):
    return (a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0])


def matvec3(E, a):
    return (E[0][0] * a[0] + E[0][1] * a[1] + E[0][2] * a[2],
            E[1][0] * a[0] + E[1][1] * a[1] + E[1][2] * a[2],
            E[2][0] * a[0] + E[2][1] * a[1] + E[2][2] * a[2])


def matTvec3(E, a):
    """E^T a without forming the transpose."""
    return (E[0][0] * a[0] + E[1][0] * a[1] + E[2][0] * a[2],
            E[0][1] * a[0] + E[1][1] * a[1] + E[2][1] * a[2],
            E[0][2] * a[0] + E[1][2] * a[1] + E[2][2] * a[2])


def transpose3(A):
    return tuple(tuple(A[j][i] for j in range(3)) for i in range(3))


def matmul3(A, B):
    return tuple(tuple(A[i][0] * B[0][j] + A[i][1] * B[1][j] + A[i][2] * B[2][j]
                       for j in range(3)) for i in range(3))


def add33(A, B):
    return tuple(tuple(A[i][j] + B[i][j] for j in range(3)) for i in range(3))


def sub33(A, B):
    return tuple(tuple(A[i][j] - B[i][j] for j in range(3)) for i in range(3))


def skew(a):
    """The matrix a~ with a~ b = a x b."""
    return ((0, -a[2], a[1]), (a[2], 0, -a[0]), (-a[1], a[0], 0))


def tangential_matrix(w, w_dot):
    """W = w_dot~ + w~ w~, so that W r = w_dot x r + w x (w x r): the acceleration of a point
    at r relative to the origin's, in a body turning at w with angular acceleration w_dot.
    The diagonal w~ w~ entries are -(w_j^2 + w_k^2), the off-diagonal ones w_i w_j."""
    wdx = skew(w_dot)

    def entry(i, j):
        if i == j:
            return -(w[(i + 1) % 3] ** 2 + w[(i + 2) % 3] ** 2)
        return w[i] * w[j] + wdx[i][j]
    return tuple(tuple(entry(i, j) for j in range(3)) for i in range(3))


def rotate_symmetric(E, A):
    """E^T A E for a symmetric A (only the upper triangle is computed)."""
    AE = matmul3(A, E)
    return symmetric3(lambda i, j: E[0][i] * AE[0][j] + E[1][i] * AE[1][j] + E[2][i] * AE[2][j])


def symmetric3(entry):
    """A symmetric 3x3 matrix from `entry(i, j)`, evaluated on the upper triangle only."""
    up = {(i, j): entry(i, j) for i in range(3) for j in range(i, 3)}
    return tuple(tuple(up[min(i, j), max(i, j)] for j in range(3)) for i in range(3))


# ---------------------------------------------------------------- spatial vectors --------

class Motion:
    """A motion vector (velocity, acceleration, joint axis): angular part, linear part."""

    __slots__ = ("ang", "lin")

    def __init__(self, ang=ZERO3, lin=ZERO3):
        self.ang = tuple(ang)
        self.lin = tuple(lin)

    def __add__(self, other):
        return Motion(add3(self.ang, other.ang), add3(self.lin, other.lin))

    def __sub__(self, other):
        return Motion(sub3(self.ang, other.ang), sub3(self.lin, other.lin))

    def __neg__(self):
        return Motion(neg3(self.ang), neg3(self.lin))

    def scale(self, s):
        return Motion(scale3(s, self.ang), scale3(s, self.lin))

    def cross_motion(self, m):
        """v x m (Featherstone's crm)."""
        return Motion(cross3(self.ang, m.ang),
                      add3(cross3(self.ang, m.lin), cross3(self.lin, m.ang)))

    def cross_force(self, f):
        """v x* f (Featherstone's crf)."""
        return Force(add3(cross3(self.ang, f.ang), cross3(self.lin, f.lin)),
                     cross3(self.ang, f.lin))

    def dot(self, f):
        """The power m . f of this motion against a force."""
        return dot3(self.ang, f.ang) + dot3(self.lin, f.lin)

    def entries(self):
        return self.ang + self.lin

    def map(self, fn):
        return Motion(tuple(map(fn, self.ang)), tuple(map(fn, self.lin)))

    def __repr__(self):
        return f"Motion(ang={self.ang}, lin={self.lin})"


class Force:
    """A force vector (wrench, momentum): angular part (moment), linear part (force)."""

    __slots__ = ("ang", "lin")

    def __init__(self, ang=ZERO3, lin=ZERO3):
        self.ang = tuple(ang)
        self.lin = tuple(lin)

    def __add__(self, other):
        return Force(add3(self.ang, other.ang), add3(self.lin, other.lin))

    def __sub__(self, other):
        return Force(sub3(self.ang, other.ang), sub3(self.lin, other.lin))

    def __neg__(self):
        return Force(neg3(self.ang), neg3(self.lin))

    def scale(self, s):
        return Force(scale3(s, self.ang), scale3(s, self.lin))

    def entries(self):
        return self.ang + self.lin

    def map(self, fn):
        return Force(tuple(map(fn, self.ang)), tuple(map(fn, self.lin)))

    def __repr__(self):
        return f"Force(ang={self.ang}, lin={self.lin})"


def force_from_entries(e):
    return Force(e[0:3], e[3:6])


# ---------------------------------------------------------------- transforms -------------

class Transform:
    """Plücker transform X = (E, r) from frame A to frame B (module docstring)."""

    __slots__ = ("E", "r")

    def __init__(self, E=IDENTITY3, r=ZERO3):
        self.E = tuple(tuple(row) for row in E)
        self.r = tuple(r)

    def apply_motion(self, m):
        """X m = (E w, E (v - r x w))."""
        return Motion(matvec3(self.E, m.ang), matvec3(self.E, sub3(m.lin, cross3(self.r, m.ang))))

    def apply_force(self, f):
        """X* f = (E (n - r x f), E f)."""
        return Force(matvec3(self.E, sub3(f.ang, cross3(self.r, f.lin))), matvec3(self.E, f.lin))

    def inv_apply_motion(self, m):
        """X^-1 m = (E^T w, E^T v + r x E^T w)."""
        w = matTvec3(self.E, m.ang)
        return Motion(w, add3(matTvec3(self.E, m.lin), cross3(self.r, w)))

    def inv_apply_force(self, f):
        """X^T f = (E^T n + r x E^T f, E^T f): a force in B expressed in A."""
        force = matTvec3(self.E, f.lin)
        return Force(add3(matTvec3(self.E, f.ang), cross3(self.r, force)), force)

    def compose(self, first):
        """self * first: apply `first` (A -> B), then self (B -> C)."""
        return Transform(matmul3(self.E, first.E), add3(first.r, matTvec3(first.E, self.r)))

    def inverse(self):
        return Transform(transpose3(self.E), neg3(matvec3(self.E, self.r)))

    def inertia_to_parent(self, inertia):
        """X^T I X: a rigid-body inertia in B (child) expressed in A (parent)."""
        E, r, m = self.E, self.r, inertia.m
        a = matTvec3(E, inertia.h)
        h = add3(a, scale3(m, r))
        # Derived from I_A = E^T I E + (a~a~ - h~h~)/m, expanded so that m = 0 is fine.
        rot = rotate_symmetric(E, inertia.I)
        I = symmetric3(lambda i, j: rot[i][j] + _shift(r, a, m, i, j))
        return Inertia(m, h, I)

    def matrix_to_parent(self, M):
        """X^T M X for a symmetric 6x6 matrix M (articulated inertia) in B, expressed in A.

        X = Rot * Tr with Rot = diag(E, E) and Tr = [1 0; -r~ 1], so the rotation is applied
        block by block and the translation as Tr^T M' Tr (RBDL paper §7.3, seed 000).
        """
        A = rotate_symmetric(self.E, _block(M, 0, 0))
        C = rotate_symmetric(self.E, _block(M, 3, 3))
        B = matmul3(transpose3(self.E), matmul3(_block(M, 0, 3), self.E))
        rx = skew(self.r)
        Bt_minus_Crx = sub33(transpose3(B), matmul3(C, rx))       # lower-left block
        rx_B = matmul3(rx, Bt_minus_Crx)
        Brx = matmul3(B, rx)
        top_left = symmetric3(lambda i, j: A[i][j] - Brx[i][j] + rx_B[i][j])
        top_right = transpose3(Bt_minus_Crx)
        return _from_blocks(top_left, top_right, C)

    def map(self, fn):
        return Transform(tuple(tuple(map(fn, row)) for row in self.E), tuple(map(fn, self.r)))

    def __repr__(self):
        return f"Transform(E={self.E}, r={self.r})"


def _shift(r, a, m, i, j):
    """Entry (i, j) of -(a~ r~ + r~ a~) - m r~ r~, the parallel-axis part of X^T I X."""
    # a~ r~ = r a^T - (a.r) 1, so a~r~ + r~a~ = r a^T + a r^T - 2 (a.r) 1,
    # and r~ r~ = r r^T - (r.r) 1.
    value = -(r[i] * a[j] + a[i] * r[j]) - m * r[i] * r[j]
    if i == j:
        value = value + 2 * dot3(a, r) + m * dot3(r, r)
    return value


def _block(M, i, j):
    return tuple(tuple(M[i + k][j + l] for l in range(3)) for k in range(3))


def _from_blocks(A, B, C):
    """The symmetric 6x6 [A B; B^T C]."""
    rows = [list(A[k]) + list(B[k]) for k in range(3)]
    rows += [[B[l][k] for l in range(3)] + list(C[k]) for k in range(3)]
    return tuple(tuple(row) for row in rows)


# ---------------------------------------------------------------- inertias ---------------

class Inertia:
    """Rigid-body inertia (m, h = m c, I about the body origin); RBDL paper §7.3 (rbi), seed 000."""

    __slots__ = ("m", "h", "I")

    def __init__(self, m=0, h=ZERO3, I=((0, 0, 0), (0, 0, 0), (0, 0, 0))):
        self.m = m
        self.h = tuple(h)
        self.I = tuple(tuple(row) for row in I)

    @classmethod
    def from_com(cls, mass, com, inertia_at_com):
        """Steiner's theorem: I_origin = I_c + m (c.c 1 - c c^T)."""
        h = scale3(mass, com)
        return cls(mass, h, symmetric3(
            lambda i, j: inertia_at_com[i][j] + mass * ((dot3(com, com) if i == j else 0) - com[i] * com[j])))

    def __add__(self, other):
        return Inertia(self.m + other.m, add3(self.h, other.h), add33(self.I, other.I))

    def apply(self, v):
        """I v = (I w + h x v_lin, m v_lin - h x w)."""
        return Force(add3(matvec3(self.I, v.ang), cross3(self.h, v.lin)),
                     sub3(scale3(self.m, v.lin), cross3(self.h, v.ang)))

    def force(self, a, v):
        """I a + v x* (I v): the force a body needs for acceleration a at velocity v.

        Summing the two terms before multiplying by m and h~ (u = w x v_lin; a_lin + u is
        the classical acceleration of the origin) saves a product per component:
        angular I w' + w x (I w) + h x (a_lin + u), linear m (a_lin + u) - h x w' - w x (h x w).
        """
        w = v.ang
        acc = add3(a.lin, cross3(w, v.lin))
        return Force(self._euler_moment(w, a.ang, acc),
                     sub3(sub3(scale3(self.m, acc), cross3(self.h, a.ang)), cross3(w, cross3(self.h, w))))

    def newton_euler_force(self, w, w_dot, acc, W):
        """The same force from the body's angular velocity w, angular acceleration w_dot, the
        classical acceleration acc of its origin and W = tangential_matrix(w, w_dot) (Newton
        and Euler about the origin): angular I w' + w x (I w) + h x acc, linear m acc + W h,
        W h being w' x h + w x (w x h), the acceleration of the centre of mass less acc, times m."""
        return Force(self._euler_moment(w, w_dot, acc), add3(scale3(self.m, acc), matvec3(W, self.h)))

    def _euler_moment(self, w, w_dot, acc):
        """I w' + w x (I w) + h x acc: the moment about the origin (acc its classical acceleration)."""
        return add3(add3(matvec3(self.I, w_dot), cross3(w, matvec3(self.I, w))), cross3(self.h, acc))

    def bias_force(self, v):
        """v x* (I v), the velocity-product force, in the cheaper form the Jacobi identity gives.

        With u = w x v_lin: angular w x (I w) + h x u, linear m u - w x (h x w); the terms
        v_lin x (m v_lin) vanish identically, so they are never formed.
        """
        w, u = v.ang, cross3(v.ang, v.lin)
        return Force(add3(cross3(w, matvec3(self.I, w)), cross3(self.h, u)),
                     sub3(scale3(self.m, u), cross3(w, cross3(self.h, w))))

    def matrix(self):
        """The 6x6 matrix [I h~; h~^T m 1]."""
        hx = skew(self.h)
        return _from_blocks(self.I, hx, ((self.m, 0, 0), (0, self.m, 0), (0, 0, self.m)))

    @property
    def com(self):
        return tuple(x / self.m for x in self.h)

    def map(self, fn):
        return Inertia(fn(self.m), tuple(map(fn, self.h)), tuple(tuple(map(fn, row)) for row in self.I))

    def __repr__(self):
        return f"Inertia(m={self.m}, h={self.h}, I={self.I})"


# ---------------------------------------------------------------- 6x6 matrices -----------

def matrix_apply(M, m):
    """M m for a 6x6 matrix (articulated inertia) and a motion; the result is a force."""
    e = m.entries()
    return force_from_entries(tuple(sum_terms(a * b for a, b in zip(M[i], e)) for i in range(6)))


def sum_terms(terms):
    """sum() that starts from the int 0, so symbolic and NumPy scalars stay what they are."""
    total = 0
    for t in terms:
        total = total + t
    return total


def add66(A, B):
    return tuple(tuple(A[i][j] + B[i][j] for j in range(6)) for i in range(6))


# ---------------------------------------------------------------- rotations --------------

def quaternion_to_rotation(x, y, z, w):
    """Rotation matrix of a unit quaternion (x, y, z, w): maps body to parent coordinates."""
    return ((1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
            (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
            (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)))


def axis_rotation(axis, s, c):
    """Rodrigues' rotation by the angle (s = sin, c = cos) about a unit axis: R = c 1 + s a~ + (1 - c) a a^T."""
    k = 1 - c
    ax = skew(axis)
    return tuple(tuple((c if i == j else 0) + s * ax[i][j] + k * axis[i] * axis[j]
                       for j in range(3)) for i in range(3))


# ---------------------------------------------------------------- helpers ----------------

def combine(columns, coefficients):
    """sum_k columns[k] * coefficients[k] for Motion (or Force) columns, e.g. S q-dot."""
    total = None
    for col, x in zip(columns, coefficients):
        term = col.scale(x)
        total = term if total is None else total + term
    return total


def project(columns, f):
    """S^T f: each motion column's power against the force f."""
    return [col.dot(f) for col in columns]


def map_scalars(value, fn):
    """Apply fn to every scalar of a (nested) spatial value, keeping its structure."""
    if isinstance(value, (Motion, Force, Transform, Inertia)):
        return value.map(fn)
    if isinstance(value, (list, tuple)):
        return type(value)(map_scalars(v, fn) for v in value)
    return fn(value)


# ---------------------------------------------------------------- 6x6 operators ----------

def transpose66(A):
    return tuple(tuple(A[j][i] for j in range(6)) for i in range(6))


def _from_blocks_general(A, B, C, D):
    """[A B; C D] from four 3x3 blocks."""
    return tuple(tuple(A[k]) + tuple(B[k]) for k in range(3)) + tuple(tuple(C[k]) + tuple(D[k]) for k in range(3))


def coriolis_factor(inertia, v):
    """The body-level Christoffel-consistent factorization B(I, v) of the Coriolis paper eq. (10),
    seed 002:
    B = 1/2 [ (v x*) I + (I v) x-bar - I (v x) ], so that B v = v x* I v and B + B^T is
    the rate of change of I for a body moving with v.

    With I = [I_o h~; h~^T m] the blocks work out to
        B = [ 1/2 (w~ I_o - I_o w~ - v~ h~ - h~ v~ - n~)   0 ]
            [ -f~                                         0 ]
    where (n, f) = I v: the right half vanishes, so B costs little more than I v.
    """
    w, Iv = v.ang, inertia.apply(v)
    n, f = Iv.ang, Iv.lin
    wx, vx, hx, nx = skew(w), skew(v.lin), skew(inertia.h), skew(n)
    wI, Iw = matmul3(wx, inertia.I), matmul3(inertia.I, wx)
    vh, hv = matmul3(vx, hx), matmul3(hx, vx)
    top = tuple(tuple((wI[r][c] - Iw[r][c] - vh[r][c] - hv[r][c] - nx[r][c]) / 2 for c in range(3)) for r in range(3))
    bottom = tuple(tuple(-x for x in row) for row in skew(f))
    zero = ((0, 0, 0),) * 3
    return _from_blocks_general(top, zero, bottom, zero)
