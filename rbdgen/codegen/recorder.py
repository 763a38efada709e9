"""The symbolic run with per-line caching (RBDL paper §8.3, seed 000: DYNAMOD).

An algorithm runs once on symbols (rbdgen.codegen.expr). Each `let(name, i, value)` binds every
non-trivial scalar of the line's result to a fresh temporary and records the assignment,
so expressions never swell and later lines refer to the temporaries. Numbers and symbols
stay literal, and an expression already bound reuses its temporary (hash-consing), so
shared work is recorded once.
"""

from dataclasses import dataclass, field

from ..algorithms import NumericOps
from ..spatial import map_scalars
from .expr import Expr, Symbol, atan2, if_less, sqrt


@dataclass
class Assignment:
    target: Symbol
    expr: Expr


@dataclass
class SinCos:
    """sin and cos of one argument, computed together."""

    sin: Symbol
    cos: Symbol
    arg: Expr


@dataclass
class Program:
    """A straight-line program: inputs (name -> symbols), statements, outputs."""

    inputs: dict
    statements: list
    outputs: list
    output_shape: tuple
    counts: dict = field(default_factory=dict)
    solve: object = None     # solves after the program, in loops (algorithms.solves.FactorSolve)


_symbol = Symbol


def _is_trivial(expr):
    """Literal numbers, symbols and their negations need no temporary."""
    if not isinstance(expr, Expr) or expr.is_Symbol:
        return True
    if expr.is_Mul and expr.coeff == -1 and len(expr.factors) == 1:
        (base, exponent), = expr.factors.items()
        return exponent == 1 and base.is_Symbol
    return False


class SymbolicOps:
    """The `ops` the algorithms receive in the generator: `let` records, `sincos` binds once,
    `sqrt`, `atan2` and `select` make expressions (a C conditional for `select`); a number
    among the symbols is worked out as a number."""

    sqrt = staticmethod(sqrt)
    atan2 = staticmethod(atan2)

    def __init__(self):
        self.statements = []
        self._bound = {}      # expression -> temporary (hash-consing)
        self._sincos = {}     # argument -> (sin, cos)
        self._counters = {}

    def _fresh(self, prefix):
        n = self._counters.get(prefix, 0)
        self._counters[prefix] = n + 1
        return _symbol(f"{prefix}_{n}")

    def let(self, name, index, value):
        prefix = f"{name}{index}"
        return map_scalars(value, lambda expr: self._bind(prefix, expr))

    def _bind(self, prefix, expr):
        if _is_trivial(expr):
            return expr
        found = self._bound.get(expr)
        if found is not None:
            return found
        target = self._fresh(prefix)
        self.statements.append(Assignment(target, expr))
        self._bound[expr] = target
        return target

    def sincos(self, angle):
        found = self._sincos.get(angle)
        if found is None:
            stem = angle.name if getattr(angle, "is_Symbol", False) else f"t{len(self._sincos)}"
            found = (_symbol(f"s_{stem}"), _symbol(f"c_{stem}"))
            self.statements.append(SinCos(found[0], found[1], angle))
            self._sincos[angle] = found
        return found

    @staticmethod
    def select(x, threshold, below, above):
        if isinstance(x, Expr):
            return if_less(x, threshold, below(_same), above(_same))
        return NumericOps.select(x, threshold, below, above)


def _same(d):
    return d


def input_symbols(name, size):
    """Symbols name_0 .. name_{size-1}; the printer maps them to array slots name[k]."""
    return [_symbol(f"{name}_{k}") for k in range(size)]


def record(run, inputs, output_shape):
    """Run `run(ops, *symbol_lists)` on symbols and return the recorded Program.

    `inputs` is a list of (name, size). The outputs are flattened row-major.
    """
    ops = SymbolicOps()
    symbols = {name: input_symbols(name, size) for name, size in inputs}
    result = run(ops, *symbols.values())
    outputs = [x if isinstance(x, Expr) else float(x) for x in flatten(result)]
    return Program(symbols, ops.statements, outputs, tuple(output_shape))


def flatten(value):
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(flatten(v))
        return out
    return [value]
