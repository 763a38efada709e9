"""What a program costs on the machine a build compiles for, in operations of straight-line
code (what the generator compares a function's candidate programs by): a program's own
operations (flops: each expression as its C evaluates it), and for the solves it leaves to a loop after it (algorithms.solves.FactorSolve) a
model calibrated by timing each candidate of a pair against the other (docs/performance.md,
On a Zen 5: the solves' cost).

The machine is data a build is given, found from the compiler and the build's flags: the
vectors the solves' loops run on are the kernels header's RBDGEN_LANES, which the compiler's
target decides (AVX-512: 8 doubles, AVX: 4, else 2). So a build's choice of program depends on
its inputs, options and compiler, which its key holds, and not on the machine that runs it.
"""

import dataclasses
import functools
import os
import subprocess

from .compiler import c_compiler
from .expr import Expr, product_parts


@dataclasses.dataclass(frozen=True)
class Machine:
    """vector_width: doubles per vector in the solves' loops; solve_block_cost: a block's fixed
    part (copies, the call, the mirror); solve_vector_cost: one row operation on a vector."""
    vector_width: int = 8
    solve_block_cost: float = 150
    solve_vector_cost: float = 4.4

    def solve_cost(self, solve):
        """A FactorSolve's time: per block a fixed part, and per row operation on a vector of
        columns, a group's blocks side by side in the vectors."""
        panels = sum(padded_panels(-(-sum(solve.width(solve.blocks[k]) for k in group) // self.vector_width))
                     for group in solve.groups())
        per_panel = solve.n * solve.n + solve.n if solve.inverse else 2 * solve.row_starts()[-1] + 2 * solve.n
        return len(solve.blocks) * self.solve_block_cost + self.solve_vector_cost * panels * per_panel


def padded_panels(panels):
    """The vectors a group's rows take in the C loop: its panels in passes of at most 8 (the
    accumulators kept in registers), every pass as wide, the last padded (Solo12's 130
    parameter columns: 17 panels in 3 passes of 6, not 3 of 8)."""
    passes = -(-panels // 8)
    return passes * -(-panels // passes)


@functools.lru_cache(maxsize=None)
def machine(flags=("-march=native",)):
    """The Machine a build with compiler flags `flags` compiles for (the compiler's predefined
    macros under those flags; without a compiler to ask, the widest)."""
    target = [flag for flag in flags if flag.startswith(("-march", "-mavx", "-mno-avx"))]
    try:
        done = subprocess.run([c_compiler(), *target, "-dM", "-E", "-x", "c", os.devnull], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)
        macros = set(line.split()[1] for line in done.stdout.splitlines() if line.startswith("#define "))
    except OSError:
        return Machine()
    if done.returncode != 0:
        return Machine()
    return Machine(vector_width=8 if "__AVX512F__" in macros else 4 if "__AVX__" in macros else 2)


def flops(x):
    """Floating-point operations of an expression as its C evaluates it: each +, -, *, /
    counts one, a sign is folded into the neighbouring operation, x^2..x^4 are products, a
    square root or other call counts one, a conditional its comparison and costlier branch."""
    if not isinstance(x, Expr) or x.is_Symbol:
        return 0
    if x.is_Add:
        count = len(x.items) - (x.number == 0)
        for term, c in x.items.items():
            count += flops(term) + (abs(c) != 1)
        return count
    if x.is_Mul:
        _, magnitude, numerator, denominator = product_parts(x)
        count = len(numerator) + (magnitude is not None) - 1 if numerator or magnitude is not None else 0
        for base, e in numerator:
            count += flops(base) + _power_cost(e)
        for base, e in denominator:
            count += 1 + flops(base) + (e - 1)
        return max(count, 0)
    if x.function == "IfLess":
        v, threshold, below, above = x.args
        return 1 + flops(v) + flops(threshold) + max(flops(below), flops(above))
    return 1 + sum(flops(a) for a in x.args)


def _power_cost(e):
    """Operations of base ** e once the base is known: products, sqrt(b), 1.0/sqrt(b), pow(b, e)."""
    if type(e) is int:
        return e - 1
    return 2 if e == -0.5 else 1
