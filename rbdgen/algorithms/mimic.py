"""Every algorithm in the coordinates of a model with mimic joints (rbdgen.model.mimic).

The algorithms themselves know nothing of mimic joints: each runs on the tree (`model.full`,
every joint independent) at the expanded state q_full, v_full = P v, a_full = P a, and its
result is mapped back: generalized forces P^T tau_full, M = P^T M_full P, C = P^T C_full P
(Christoffel-consistent still: M-dot - 2C = P^T (M-dot_full - 2 C_full) P is skew), the
Christoffel symbols reduced on all three indices, Jacobians J_full P. Kinematics, energies and
momenta only need the expanded state. Forward dynamics and M^-1 have no tree recursion in
the reduced coordinates (ABA's projections assume one coordinate per joint): they factorize
M = P^T M_full P with fd_crba's L^T D L, along the elimination tree of its sparsity (the
tree's own parent array when there are no mimic joints), so the symbolic run stays sparse.

The reference and the generator both call these functions; for a model without mimic joints
each is the algorithm itself.
"""

from ..model import mimic
from . import aba as _aba
from . import christoffel as _christoffel
from . import coriolis as _coriolis
from . import crba as _crba
from . import energy as _energy
from . import fd_crba as _fd_crba
from . import frames as _frames
from . import jacobians as _jacobians
from . import kinematics as _kinematics
from . import minv as _minv
from . import momentum as _momentum
from . import rnea as _rnea


def _q(model, q):
    return mimic.expand_q(model, q)


def _v(model, v):
    return mimic.expand_v(model, v)


# ------------------------------------------------------------ inverse dynamics, M, C -----

def rnea(model, ops, q, v, a, f_ext=None):
    """P^T rnea_full(q_full, P v, P a): the generalized forces of the model's coordinates."""
    return mimic.reduce_force(model, _rnea.rnea(model.full, ops, _q(model, q), _v(model, v), _v(model, a), f_ext))


def nle(model, ops, q, v):
    return mimic.reduce_force(model, _rnea.nle(model.full, ops, _q(model, q), _v(model, v)))


def gravity(model, ops, q):
    return mimic.reduce_force(model, _rnea.gravity(model.full, ops, _q(model, q)))


def crba(model, ops, q):
    """P^T M_full P, exactly symmetric."""
    return mimic.reduce_matrix(model, _crba.crba(model.full, ops, _q(model, q)), symmetric=True)


def coriolis(model, ops, q, v):
    return mimic.reduce_matrix(model, _coriolis.coriolis(model.full, ops, _q(model, q), _v(model, v)))


def christoffel(model, ops, q):
    return mimic.reduce_christoffel(model, _christoffel.christoffel(model.full, ops, _q(model, q)))


def crba_derivatives(model, ops, q):
    """dM/dq, [i][j][k] = d M[i][j] / d q[k] in the tangent space: Gamma[i][j][k] + Gamma[j][i][k],
    since M-dot = C + C^T for every v, C[i][j] = sum_k Gamma[i][j][k] v[k]."""
    gamma = christoffel(model, ops, q)
    n = model.nv
    return [[[gamma[i][j][k] + gamma[j][i][k] for k in range(n)] for j in range(n)] for i in range(n)]


# ------------------------------------------------------------ forward dynamics, M^-1 -----

def aba(model, ops, q, v, tau, f_ext=None):
    """a = M^-1 (tau - rnea(q, v, 0, f_ext)); ABA itself without mimic joints."""
    if not model.has_mimic:
        return _aba.aba(model, ops, q, v, tau, f_ext)
    bias = rnea(model, ops, q, v, [0] * model.nv, f_ext)
    return _solve(model, ops, crba(model, ops, q), [t - b for t, b in zip(tau, bias)])


def fd_crba(model, ops, q, v, tau):
    if not model.has_mimic:
        return _fd_crba.fd_crba(model, ops, q, v, tau)
    bias = nle(model, ops, q, v)
    return _solve(model, ops, crba(model, ops, q), [t - b for t, b in zip(tau, bias)])


def minv(model, ops, q):
    """M^-1, full and exactly symmetric (column j's entries from row j on, mirrored)."""
    if not model.has_mimic:
        return _minv.minv(model, ops, q)
    _aba.check_invertible(model)
    lam = elimination_parents(model)
    H = _fd_crba.ltdl(ops, [list(row) for row in crba(model, ops, q)], lam)
    n = model.nv
    columns = [_fd_crba.ltdl_solve(ops, H, lam, [1 if i == c else 0 for i in range(n)]) for c in range(n)]
    return [[columns[min(i, j)][max(i, j)] for j in range(n)] for i in range(n)]


def factors_of_m(model, ops, q):
    """M = L^T D L factorized along elimination_parents, packed (fd_crba.packed_factors), in
    an n x n block whose other entries are zero: M^-1 is then solved after the program, by a
    loop (algorithms.solves)."""
    _aba.check_invertible(model)
    lam = elimination_parents(model)
    return _fd_crba.packed_factors(ops, _fd_crba.ltdl(ops, [list(row) for row in crba(model, ops, q)], lam), lam,
                                   model.nv * model.nv)



def minv_times(model, ops, q, tau):
    if not model.has_mimic:
        return _minv.minv_times(model, ops, q, tau)
    return _solve(model, ops, crba(model, ops, q), list(tau))


def _solve(model, ops, M, b):
    """M x = b by fd_crba's L^T D L along the elimination tree of M's sparsity."""
    _aba.check_invertible(model)
    lam = elimination_parents(model)
    return _fd_crba.ltdl_solve(ops, _fd_crba.ltdl(ops, [list(row) for row in M], lam), lam, b)


def elimination_parents(model):
    """The parent array (over the model's velocity coordinates) along which fd_crba's L^T D L
    of M = P^T M_full P, eliminating from the last coordinate up, stays inside ancestors.

    M[i, j] can be non-zero when a tree coordinate driven by i and one driven by j lie on one
    path from the root; eliminating k couples its remaining neighbours below it (fill-in),
    and k's parent is its largest such neighbour. Without mimic joints this is fd_crba's
    coordinate parent array (no fill-in on a tree).
    """
    full_parents = _fd_crba.coordinate_parents(model.full)
    if not model.has_mimic:
        return full_parents
    owner = [0] * model.full.nv
    for i, group in enumerate(mimic.coordinate_groups(model)):
        for a, _ in group:
            owner[a] = i
    neighbours = [set() for _ in range(model.nv)]
    for a in range(model.full.nv):
        b = a
        while b >= 0:                      # a and each of its ancestors b
            i, j = owner[a], owner[b]
            if i != j:
                neighbours[max(i, j)].add(min(i, j))
            b = full_parents[b]
    parents = [-1] * model.nv
    for k in reversed(range(model.nv)):
        if neighbours[k]:
            parents[k] = max(neighbours[k])
            neighbours[parents[k]] |= neighbours[k] - {parents[k]}
    return parents


# ------------------------------------------------------------ kinematics, Jacobians -------

def body_placements(model, ops, q):
    """X_0 of every body (the tree's bodies: a mimic joint still moves one)."""
    full = model.full
    return _kinematics.body_placements(full, ops, _kinematics.joint_kinematics(full, ops, _q(model, q)))


def joint_jacobians(model, ops, q):
    """(J, X_0): every joint axis of the tree at the world origin, 6 x nv_full (mimic joints
    included, as Pinocchio's data.J), and the body placements. J P is the model's."""
    return _jacobians.joint_jacobians(model.full, ops, _q(model, q))


def frame_jacobian(model, ops, q, frame, reference="local_world_aligned"):
    """The frame's 6 x nv Jacobian: J_full P."""
    return mimic.reduce_columns(model, _jacobians.frame_jacobian(model.full, ops, _q(model, q), frame, reference))


def frame_placement(model, ops, frame, q):
    return _frames.frame_placement(model.full, ops, frame, _q(model, q))


def frame_jacobian_of_body(model, ops, frame, q, *, reference):
    """The Jacobian of the frame (body, placement on it): J_full P."""
    return mimic.reduce_columns(model, _frames.frame_jacobian(model.full, ops, frame, _q(model, q),
                                                              reference=reference))


def frame_velocity(model, ops, frame, q, v, *, reference):
    return _frames.frame_velocity(model.full, ops, frame, _q(model, q), _v(model, v), reference=reference)


def frame_acceleration(model, ops, frame, q, v, a, *, reference, classical=False):
    return _frames.frame_acceleration(model.full, ops, frame, _q(model, q), _v(model, v), _v(model, a),
                                      reference=reference, classical=classical)


def body_motion(model, ops, q, v, a):
    return _kinematics.body_motion(model.full, ops, _q(model, q), _v(model, v), _v(model, a))


# ------------------------------------------------------------ energy and momentum --------

def com(model, ops, q):
    return _energy.com(model.full, ops, _q(model, q))


def kinetic_energy(model, ops, q, v):
    return _energy.kinetic_energy(model.full, ops, _q(model, q), _v(model, v))


def passive_torque(model, ops, v):
    return mimic.reduce_force(model, _energy.passive_torque(model.full, ops, _v(model, v)))


def potential_energy(model, ops, q):
    return _energy.potential_energy(model.full, ops, _q(model, q))


def com_velocity(model, ops, q, v):
    return _momentum.com_velocity(model.full, ops, _q(model, q), _v(model, v))


def spatial_momentum(model, ops, q, v):
    return _momentum.spatial_momentum(model.full, ops, _q(model, q), _v(model, v))


def centroidal_momentum(model, ops, q, v):
    return _momentum.centroidal_momentum(model.full, ops, _q(model, q), _v(model, v))


def centroidal_map(model, ops, q):
    """A_G P (6 x nv)."""
    return mimic.reduce_columns(model, _momentum.centroidal_map(model.full, ops, _q(model, q)))
