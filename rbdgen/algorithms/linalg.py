"""Small dense linear algebra on scalars of any type (no pivoting: the matrices are SPD)."""

from ..spatial import sum_terms


def ldlt(D, let=lambda name, value: value):
    """The factors (L, 1/d) of a small symmetric positive-definite D = L diag(d) L^T, L unit
    lower triangular, one division per pivot. `let` binds each entry, so symbolic entries stay
    small."""
    n = len(D)
    L = [[0] * n for _ in range(n)]
    d, dinv = [0] * n, [0] * n
    for j in range(n):
        d[j] = let("d", D[j][j] - sum_terms(L[j][k] * L[j][k] * d[k] for k in range(j)))
        dinv[j] = let("dinv", 1 / d[j])
        L[j][j] = 1
        for i in range(j + 1, n):
            L[i][j] = let("L", (D[i][j] - sum_terms(L[i][k] * L[j][k] * d[k] for k in range(j))) * dinv[j])
    return L, dinv


def ldlt_solve(L, dinv, b, let=lambda name, value: value):
    """x with L diag(1/dinv) L^T x = b: forward, then backward substitution."""
    n = len(b)
    y = [0] * n
    for i in range(n):
        y[i] = let("y", b[i] - sum_terms(L[i][k] * y[k] for k in range(i)))
    x = [0] * n
    for i in reversed(range(n)):
        x[i] = let("x", y[i] * dinv[i] - sum_terms(L[k][i] * x[k] for k in range(i + 1, n)))
    return x


def symmetric_inverse(D, let=lambda name, value: value):
    """Inverse of a small symmetric positive-definite matrix by an LDL^T factorization.

    A 1x1 matrix costs one division. Larger ones (spherical, free-flyer joints in ABA) are
    factorized once and inverted column by column (the upper triangle)."""
    n = len(D)
    if n == 1:
        return [[1 / D[0][0]]]
    L, dinv = ldlt(D, let)
    inverse = [[0] * n for _ in range(n)]
    for col in range(n):
        x = ldlt_solve(L, dinv, [1 if i == col else 0 for i in range(n)], let)
        for i in range(col + 1):
            inverse[i][col] = x[i]
    return [[inverse[min(i, j)][max(i, j)] for j in range(n)] for i in range(n)]


def symmetric_solve(D, b, let=lambda name, value: value):
    """D^-1 b for a small symmetric positive-definite D, without D^-1: one factorization and
    one solve (ABA's free-flyer root, whose D^-1 nothing else needs)."""
    L, dinv = ldlt(D, let)
    return ldlt_solve(L, dinv, b, let)


def matvec(A, x):
    return [sum_terms(a * b for a, b in zip(row, x)) for row in A]
