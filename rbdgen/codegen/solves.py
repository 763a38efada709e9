"""Sparse solves with M after a straight-line program, as loops (issue 20: dense work as
dense kernels).

-M^-1 d tau in aba_derivatives is many right-hand sides through one factorization: written
out as straight-line code, Talos' 114 solves were 78 000 operations and 1 MB of machine code,
which ran no faster than Pinocchio. Here the program computes only the right-hand sides and
the factors of M = L^T D L (fd_crba.ltdl), packed; a loop over the elimination parents then
solves all columns together, each step one row operation that the compiler vectorizes.

The loop performs the straight-line solve's operations in the same order (fd_crba.ltdl_solve,
column by column), so it rounds the same, and `apply` does the same on NumPy arrays for the
generator's accuracy measurement (codegen.evaluate).
"""

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Block:
    """An n x n row-major block of the output, solved in place: X <- scale M^-1 X.

    `identity`: the block starts as the identity (the program leaves it to the solve), and its
    upper triangle is mirrored (M^-1 exactly symmetric)."""
    start: int
    scale: int = 1
    identity: bool = False


@dataclass(frozen=True)
class FactorSolve:
    """After the program: solve the `blocks` with the factors the program stored, packed, at
    `factors` in the output (1/D_0 .. 1/D_{n-1}, then each row's L entries along its
    ancestors, rows in order; `packed_factors`). The factors may sit inside an identity
    block: they are read before any block is written."""
    parents: tuple
    factors: int
    blocks: tuple

    @property
    def n(self):
        return len(self.parents)

    def row_starts(self):
        """first[i]: where row i's L entries begin among the packed L entries; first[n]: their count."""
        starts = [0]
        for i in range(self.n):
            starts.append(starts[-1] + len(_ancestors(self.parents, i)))
        return starts

    def packed_size(self):
        return self.n + self.row_starts()[-1]

    def overwritten(self):
        """The output entries the program need not write: the solve writes them, whatever was
        there, and does not read them (an identity block's, the packed factors' apart: those
        are read, zeros included)."""
        n2, factors = self.n * self.n, range(self.factors, self.factors + self.packed_size())
        return [k for b in self.blocks if b.identity for k in range(b.start, b.start + n2) if k not in factors]

    def cost(self):
        """Its time in operations of straight-line code (what the generator compares programs
        by): per block a fixed part (copies, the call, the mirror) and per row operation on a
        vector of columns. Calibrated on an AMD EPYC with AVX-512 (8 lanes), from M^-1 through
        the factors against the programs' times: UR5 162 ns, Panda 321, Solo12 752, Talos 3278,
        straight-line code at 7.5 operations per ns; it predicts the faster of the two M^-1
        programs on all four (Talos factored, the others straight-line)."""
        panels = -(-self.n // vector_width())
        vector_operations = panels * (2 * self.row_starts()[-1] + 2 * self.n)
        return len(self.blocks) * (SOLVE_BLOCK_COST + SOLVE_VECTOR_COST * vector_operations)

    def operations(self):
        """Its floating-point operations: per block and column, the scaling by 1/D and two
        multiply-adds per entry of L."""
        return len(self.blocks) * self.n * (self.n + 4 * self.row_starts()[-1])

    def apply(self, out):
        """The solve on outputs (batch, out_size) in place, in the C loop's order."""
        n, first = self.n, self.row_starts()
        packed = out[:, self.factors:self.factors + self.packed_size()].copy()
        dinv, L = packed[:, :n], packed[:, n:]
        for b in self.blocks:
            X = out[:, b.start:b.start + n * n].reshape(-1, n, n)
            if b.identity:
                X[:] = np.eye(n)
            for i in reversed(range(n)):        # L^T Y = X
                for p, j in enumerate(_ancestors(self.parents, i), first[i]):
                    X[:, j] = X[:, j] - L[:, p, None] * X[:, i]
            for i in range(n):                  # D Z = Y, then L X = Z
                X[:, i] = X[:, i] * (b.scale * dinv[:, i, None])
                for p, j in enumerate(_ancestors(self.parents, i), first[i]):
                    X[:, i] = X[:, i] - L[:, p, None] * X[:, j]
            if b.identity:                      # the upper triangle, mirrored
                lower = np.tril_indices(n, -1)
                X[:, lower[0], lower[1]] = X[:, lower[1], lower[0]]
            out[:, b.start:b.start + n * n] = X.reshape(-1, n * n)
        return out

    def c_data(self):
        """What the template needs: the tables (see rbdgen_factor_solve) and the blocks."""
        n, first = self.n, self.row_starts()
        ancestors = [_ancestors(self.parents, i) for i in range(n)]
        below = [[] for _ in range(n)]      # (row, where its entry is), last row first
        for i in reversed(range(n)):
            for p, j in enumerate(ancestors[i], first[i]):
                below[j].append((i, p))
        desc_first = [0]
        for entries in below:
            desc_first.append(desc_first[-1] + len(entries))
        return {"n": n, "anc_first": first, "anc_row": [j for chain in ancestors for j in chain] or [0],
                "desc_first": desc_first, "desc_row": [i for e in below for i, _ in e] or [0],
                "desc_at": [p for e in below for _, p in e] or [0], "factors": self.factors,
                "packed": self.packed_size(),
                "blocks": [{"start": b.start, "scale": f"{float(b.scale)!r}", "identity": b.identity}
                           for b in self.blocks]}


SOLVE_BLOCK_COST = 940     # operations of straight-line code, see FactorSolve.cost
SOLVE_VECTOR_COST = 4.4


@functools.lru_cache(maxsize=None)
def vector_width():
    """Doubles per vector in the solves' loops on this machine (the kernels header's
    RBDGEN_LANES for a build with -march=native, which is the default)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        flags = []
    return 8 if "avx512f" in flags else 4 if "avx" in flags else 2


def _ancestors(parents, i):
    chain, j = [], parents[i]
    while j >= 0:
        chain.append(j)
        j = parents[j]
    return chain
