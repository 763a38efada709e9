"""Forward dynamics through M and the bias: M a = tau - nle, by a sparse L^T D L
factorization (RBDL paper §8.2, seed 000; Featherstone's LTDL).

On a tree, M[i, j] is non-zero only when coordinate j is an ancestor of i or the reverse,
and factorizing M = L^T D L from the last coordinate up never fills in: the loops follow
the coordinate-level parent array lambda, which is known when the code is generated, so
the generated code touches only the entries that can be non-zero.
"""

from .aba import check_invertible
from .crba import crba
from .rnea import nle


def coordinate_parents(model):
    """lambda over velocity coordinates: the previous coordinate of the same joint, or the
    last coordinate of the parent joint (-1 at the root)."""
    parents = []
    for i, joint in enumerate(model.joints):
        p = model.parent[i]
        first_parent = model.joints[p].idx_v + model.joints[p].nv - 1 if p >= 0 else -1
        parents += [first_parent] + [joint.idx_v + k for k in range(joint.nv - 1)]
    return parents


def ltdl(ops, H, lam):
    """In-place L^T D L of H (lower triangle used): on return D is on the diagonal and L
    (unit diagonal implied) below it, in H's sparsity."""
    n = len(H)
    for k in reversed(range(n)):
        H[k][k] = ops.let("D", k, H[k][k])
        inverse = pivot_inverse(ops, H, k)   # one division per pivot, not one per entry
        i = lam[k]
        while i >= 0:
            alpha = ops.let("alpha", k, H[k][i] * inverse)
            j = i
            while j >= 0:
                H[i][j] = ops.let("H", i, H[i][j] - alpha * H[k][j])
                j = lam[j]
            H[k][i] = alpha
            i = lam[i]
    return H


def pivot_inverse(ops, H, k):
    """1 / D_k of a factorized H, bound once (the recorder hands the same temporary back to
    every later request for it)."""
    return ops.let("Dinv", k, 1 / H[k][k])


def ltdl_solve(ops, H, lam, b):
    """Solve (L^T D L) x = b with the factors from `ltdl`."""
    n = len(H)
    x = list(b)
    for i in reversed(range(n)):          # L^T y = b
        j = lam[i]
        while j >= 0:
            x[j] = x[j] - H[i][j] * x[i]
            j = lam[j]
        x[i] = ops.let("y", i, x[i])
    for i in range(n):                    # D z = y, then L x = z
        x[i] = x[i] * pivot_inverse(ops, H, i)
        j = lam[i]
        while j >= 0:
            x[i] = x[i] - H[i][j] * x[j]
            j = lam[j]
        x[i] = ops.let("x", i, x[i])
    return x


def packed_factors(ops, H, lam, size):
    """The factors from `ltdl` as one list of `size` entries, for solves after the program
    (algorithms.solves): 1/D_0 .. 1/D_{n-1}, then row by row each row's L entries along its
    ancestors, then zeros."""
    packed = [pivot_inverse(ops, H, k) for k in range(len(H))]
    for i in range(len(H)):
        j = lam[i]
        while j >= 0:
            packed.append(H[i][j])
            j = lam[j]
    return packed + [0] * (size - len(packed))


def fd_crba(model, ops, q, v, tau):
    """a = M(q)^-1 (tau - nle(q, v)) through CRBA and the sparse factorization."""
    check_invertible(model)
    H = crba(model, ops, q)
    bias = nle(model, ops, q, v)
    rhs = [t - b for t, b in zip(tau, bias)]
    lam = coordinate_parents(model)
    return ltdl_solve(ops, ltdl(ops, [list(row) for row in H], lam), lam, rhs)
