"""Sparse solves with M after a straight-line program, as loops (issue 20: dense work as
dense kernels).

-M^-1 d tau in aba_derivatives is many right-hand sides through one factorization: written
out as straight-line code, Talos' 114 solves are most of the program and a megabyte of machine
code, which runs no faster than Pinocchio (docs/performance.md, Measured and not kept). Here
the program computes only the right-hand sides and the factors of M = L^T D L (fd_crba.ltdl),
packed; a loop over the elimination parents then solves all columns together, each step one
row operation that the compiler vectorizes.

The loop performs the straight-line solve's operations in the same order (fd_crba.ltdl_solve,
column by column), so it rounds the same, and `apply` does the same on NumPy arrays for the
generator's accuracy measurement (codegen.evaluate).

aba_parameter_derivatives' -M^-1 d rnea / d params is one block of a column per parameter
(Panda's 103), wider than it is tall, whose outputs have no room for the factors: the program
leaves them after its outputs and the generator moves them into exact zeros of d rnea / d
params (`placed`). There the factors may also be M^-1 itself, from the articulated-body
algorithm (`inverse`), and the loop a product: on Panda M's sparse factors lose digits that
the straight-line product with M^-1 keeps (docs/performance.md, Model parameters at run time).
"""

from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Block:
    """Columns of the output solved in place: X <- scale A^-1 X, A = L^T D L the factorized matrix.

    A column's unknowns after the solve's `head` are the rows of a row-major block at `start`,
    square unless `width` says how many columns it has (aba_parameter_derivatives: one per
    parameter); the head's (a KKT system's multipliers) are rows of the same width at
    `head_start`. `identity`: the block starts as the identity below the head and zero in it
    (the program leaves it to the solve), and the square part's upper triangle is mirrored
    (M^-1, or the KKT system's projected inverse: symmetric exactly)."""
    start: int
    scale: int = 1
    identity: bool = False
    head_start: int = 0
    width: int = None


@dataclass(frozen=True)
class FactorSolve:
    """After the program: solve the `blocks` with the factors the program stored, packed
    (1/D_0 .. 1/D_{n-1}, then each row's L entries along its ancestors, rows in order;
    fd_crba.packed_factors), in the `factors` segments ((start, length), ...) of the output one
    after the other. The factors may sit inside identity blocks: they are read before any
    block is written. `head`: the leading unknowns that are not M's coordinates (the
    multipliers of a KKT system whose contact rows sit above the root, see
    derivatives.contact_dynamics_derivatives_factored); every block has n - head columns.
    `pattern`: each row's ancestors whose L entries are packed (default: all; `compacted`
    leaves out those the program knows to be zero). `cleared`: the factors sit in entries of
    the blocks that are zeros of the right-hand sides (`placed`), which the solve sets to zero
    again once it has read them. `inverse`: the program stored A^-1 itself instead, its upper
    triangle row by row, and the solve is the product with it (no head); the articulated-body
    M^-1 keeps digits that M's sparse factors lose (Panda's aba_parameter_derivatives).
    """
    parents: tuple
    factors: tuple
    blocks: tuple
    head: int = 0
    pattern: tuple = None
    cleared: bool = False
    inverse: bool = False

    def __post_init__(self):
        if self.inverse and self.head:
            raise ValueError("FactorSolve: a product with A^-1 (inverse) has no head")
        if any(b.identity and b.width not in (None, self.columns) for b in self.blocks):
            raise ValueError("FactorSolve: an identity block is square")

    @property
    def n(self):
        return len(self.parents)

    @property
    def columns(self):
        return self.n - self.head

    def width(self, block):
        """The columns of a block: its own width, or those of a square one."""
        return self.columns if block.width is None else block.width

    def entries(self, i):
        """The ancestors j of row i with an entry L[i, j], nearest first."""
        return self.pattern[i] if self.pattern is not None else _ancestors(self.parents, i)

    def row_starts(self):
        """first[i]: where row i's L entries begin among the packed L entries; first[n]: their count."""
        starts = [0]
        for i in range(self.n):
            starts.append(starts[-1] + len(self.entries(i)))
        return starts

    def compacted(self, outputs):
        """This solve without the L entries that are exact zeros in the program's `outputs`
        (a list, rewritten: the remaining factors packed again from the first entry). On a KKT
        system most are: a foot's contact rows reach no coordinate of another leg, none of
        the arms' (Solo12: 273 of 381 entries left, Talos ...)."""
        if self.inverse:
            return self
        entries, n = self.factor_entries(), self.n
        values = [outputs[k] for k in entries]
        kept, pattern, at = values[:n], [], n
        for i in range(n):
            row = []
            for j in self.entries(i):
                if not _is_exact_zero(values[at]):
                    row.append(j)
                    kept.append(values[at])
                at += 1
            pattern.append(tuple(row))
        compact = replace(self, pattern=tuple(pattern))
        for k in entries:
            outputs[k] = 0
        for k, x in zip(compact.factor_entries(), kept):
            outputs[k] = x
        return compact

    def placed(self, outputs, size):
        """This solve with the factors that the program left after its `size` outputs (a
        function whose outputs leave no room for them) moved into exact zeros of the blocks'
        right-hand sides, the longest runs of zeros first (fewer copies in the C), and the
        outputs cut to `size` (a list, rewritten); None when the blocks have too few zeros.
        aba_parameter_derivatives' d rnea / d params has many: a body's parameters reach only
        the joints above it."""
        entries = self.factor_entries()
        if all(k < size for k in entries):
            return self
        if any(k < size for k in entries):
            raise ValueError("FactorSolve.placed: the factors lie partly inside the outputs")
        zeros = runs(sorted(k for b in self.blocks for k in self._block_entries(b) if _is_exact_zero(outputs[k])))
        if sum(length for _, length in zeros) < len(entries):
            return None
        segments, left = [], len(entries)
        for start, length in sorted(zeros, key=lambda run: -run[1]):
            if left == 0:
                break
            segments.append((start, min(length, left)))
            left -= segments[-1][1]
        places = [k for start, length in segments for k in range(start, start + length)]
        for to, k in zip(places, entries):
            outputs[to] = outputs[k]
        del outputs[size:]
        return replace(self, factors=tuple(segments), cleared=True)

    def _block_entries(self, b):
        c = self.width(b)
        return [*range(b.head_start, b.head_start + self.head * c), *range(b.start, b.start + self.columns * c)]

    def packed_size(self):
        return self.n * (self.n + 1) // 2 if self.inverse else self.n + self.row_starts()[-1]

    def fits(self):
        """Whether the segments hold the packed factors."""
        return sum(length for _, length in self.factors) >= self.packed_size()

    def factor_entries(self):
        """The output entries that hold the packed factors, in order."""
        entries = [k for start, length in self.factors for k in range(start, start + length)]
        return entries[:self.packed_size()]

    def overwritten(self):
        """The output entries the program need not write: the solve writes them, whatever was
        there, and does not read them (an identity block's, the packed factors' apart: those
        are read, zeros included)."""
        factors = set(self.factor_entries())
        return [k for b in self.blocks if b.identity for k in self._block_entries(b) if k not in factors]

    def operations(self):
        """Its floating-point operations: per block and column, the scaling by 1/D and two
        multiply-adds per entry of L."""
        per_column = 2 * self.n * self.n if self.inverse else self.n + 4 * self.row_starts()[-1]
        return sum(self.width(b) for b in self.blocks) * per_column

    def apply(self, out):
        """The solve on outputs (batch, out_size) in place, in the C loop's order."""
        n, head = self.n, self.head
        packed = out[:, self.factor_entries()]
        if self.cleared:
            out[:, self.factor_entries()] = 0
        for b in self.blocks:
            c = self.width(b)
            X = np.zeros((out.shape[0], n, c))
            if b.identity:
                X[:, head:] = np.eye(c)
            else:
                X[:, :head] = out[:, b.head_start:b.head_start + head * c].reshape(len(out), head, c)
                X[:, head:] = out[:, b.start:b.start + self.columns * c].reshape(len(out), self.columns, c)
            X = (self._times_inverse if self.inverse else self._sweeps)(packed, X, b.scale)
            square = X[:, head:]
            if b.identity:                      # the upper triangle, mirrored
                lower = np.tril_indices(c, -1)
                square[:, lower[0], lower[1]] = square[:, lower[1], lower[0]]
            out[:, b.head_start:b.head_start + head * c] = X[:, :head].reshape(len(out), head * c)
            out[:, b.start:b.start + self.columns * c] = square.reshape(len(out), self.columns * c)
        return out

    def _sweeps(self, packed, X, scale):
        """scale A^-1 X through the factors: L^T Y = X, D Z = Y, then L X = Z."""
        n, first = self.n, self.row_starts()
        dinv, L = packed[:, :n], packed[:, n:]
        for i in reversed(range(n)):
            for p, j in enumerate(self.entries(i), first[i]):
                X[:, j] = X[:, j] - L[:, p, None] * X[:, i]
        for i in range(n):
            X[:, i] = X[:, i] * (scale * dinv[:, i, None])
            for p, j in enumerate(self.entries(i), first[i]):
                X[:, i] = X[:, i] - L[:, p, None] * X[:, j]
        return X

    def _times_inverse(self, packed, X, scale):
        """scale A^-1 X with A^-1's upper triangle packed: each row's sum in the order of j."""
        n = self.n
        upper = np.triu_indices(n)
        inverse = np.zeros((len(X), n, n))
        inverse[:, upper[0], upper[1]] = packed
        inverse[:, upper[1], upper[0]] = packed
        Y = np.zeros_like(X)
        for i in range(n):
            for j in range(n):
                Y[:, i] = Y[:, i] + inverse[:, i, j, None] * X[:, j]
            Y[:, i] = Y[:, i] * scale
        return Y

    def c_data(self):
        """What the template needs: the tables (see rbdgen_factor_solve), the copies of the
        factors and the blocks."""
        n, first = self.n, self.row_starts()
        ancestors = [self.entries(i) for i in range(n)]
        below = [[] for _ in range(n)]      # (row, where its entry is), last row first
        for i in reversed(range(n)):
            for p, j in enumerate(ancestors[i], first[i]):
                below[j].append((i, p))
        desc_first = [0]
        for entries in below:
            desc_first.append(desc_first[-1] + len(entries))
        copies, taken = [], 0
        for start, length in self.factors:
            count = min(length, self.packed_size() - taken)
            if count > 0:
                copies.append({"from": start, "to": taken, "count": count})
            taken += count
        groups = []
        for group in self.groups():
            offset, blocks = 0, []
            for k in group:
                b = self.blocks[k]
                blocks.append({"start": b.start, "head_start": b.head_start, "scale": f"{float(b.scale)!r}",
                               "identity": b.identity, "width": self.width(b), "offset": offset})
                offset += self.width(b)
            groups.append({"blocks": blocks, "columns": offset})
        return {"n": n, "head": self.head, "columns": self.columns,
                "anc_first": first, "anc_row": [j for chain in ancestors for j in chain] or [0],
                "desc_first": desc_first, "desc_row": [i for e in below for i, _ in e] or [0],
                "desc_at": [p for e in below for _, p in e] or [0], "copies": copies,
                "cleared": self.cleared, "inverse": self.inverse, "packed": self.packed_size(), "groups": groups}

    def groups(self):
        """The blocks solved together: consecutive blocks of at most GROUP_COLUMNS columns in all
        (one block alone when it has more)."""
        groups, columns = [], 0
        for k, b in enumerate(self.blocks):
            if groups and columns + self.width(b) <= GROUP_COLUMNS:
                groups[-1].append(k)
                columns += self.width(b)
            else:
                groups.append([k])
                columns = self.width(b)
        return groups


# Columns solved together (the kernels' groups of blocks): 8 vectors of 8 lanes, whose rows
# (Talos: 38 x 8 x 64 bytes) stay in the first-level cache
GROUP_COLUMNS = 64


def runs(indices):
    """Sorted indices as (start, length) runs of consecutive ones."""
    found = []
    for k in indices:
        if found and found[-1][0] + found[-1][1] == k:
            found[-1][1] += 1
        else:
            found.append([k, 1])
    return [tuple(run) for run in found]


def _is_exact_zero(x):
    """A zero of the program's structure: an output that is the number 0 (not an expression) is
    0 for every input."""
    return isinstance(x, (int, float)) and x == 0


def _ancestors(parents, i):
    chain, j = [], parents[i]
    while j >= 0:
        chain.append(j)
        j = parents[j]
    return chain
