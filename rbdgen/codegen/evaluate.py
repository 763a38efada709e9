"""A recorded program run on doubles, in the order its C evaluates it.

The generator measures each candidate program's digits before it chooses one
(rbdgen.runtime.accuracy): the optimized program, not the algorithm it came from, since
SymPy flattens sums and the optimizer shares products, and either may reassociate. Sums and
products are folded left to right in the order `cprinter.SlotPrinter` prints them, with
divisions last, so the rounding is the C's up to contraction into fused multiply-adds.
"""

import numpy as np
import sympy as sp

from .recorder import SinCos

_FUNCTIONS = {"sin": np.sin, "cos": np.cos, "atan2": np.arctan2, "sqrt": np.sqrt, "Abs": np.abs}


def evaluate(program, inputs):
    """The program's outputs for `inputs` (name -> (B, size) arrays): (B, *output_shape)."""
    batch = next(iter(inputs.values())).shape[0]
    env = {sym: np.ascontiguousarray(inputs[name][:, k], dtype=float)
           for name, symbols in program.inputs.items() for k, sym in enumerate(symbols)}
    value = _Evaluator(env)
    with np.errstate(all="ignore"):   # the branch of a conditional not taken may overflow
        for st in program.statements:
            if isinstance(st, SinCos):
                angle = value(st.arg)
                env[st.sin], env[st.cos] = np.sin(angle), np.cos(angle)
            else:
                env[st.target] = value(st.expr)
        outputs = [np.broadcast_to(value(e), (batch,)) for e in program.outputs]
    return np.stack(outputs, axis=-1).reshape((batch,) + tuple(program.output_shape))


class _Evaluator:
    def __init__(self, env):
        self.env = env

    def __call__(self, expr):
        if expr.is_Symbol:
            return self.env[expr]
        if expr.is_Number:
            return float(expr)
        if expr.is_Add:
            total = self(expr.args[0])
            for term in expr.args[1:]:
                total = total + self(term)
            return total
        if expr.is_Mul:
            return self._product(expr)
        if expr.is_Pow:
            return self._power(*expr.args)
        if type(expr).__name__ == "IfLess":
            x, threshold, below, above = (self(a) for a in expr.args)
            return np.where(x < threshold, below, above)
        function = _FUNCTIONS.get(type(expr).__name__)
        if function is None:
            raise NotImplementedError(f"no numeric evaluation of {type(expr).__name__}")
        return function(*(self(a) for a in expr.args))

    def _product(self, expr):
        coeff, rest = expr.as_coeff_Mul()
        factors, divisors = [], []
        for factor in (rest.args if rest.is_Mul else (rest,)):
            if factor.is_Pow and factor.args[1] == -1:
                divisors.append(self(factor.args[0]))
            else:
                factors.append(self(factor))
        magnitude = abs(float(coeff))
        result = magnitude if magnitude != 1 else None
        for f in factors:
            result = f if result is None else result * f
        result = 1.0 if result is None else result
        for d in divisors:
            result = result / d
        return -result if coeff < 0 else result

    def _power(self, base, exp):
        b = self(base)
        if exp.is_Integer and 2 <= int(exp) <= 4:
            result = b
            for _ in range(int(exp) - 1):
                result = result * b
            return result
        if exp.is_Integer and -4 <= int(exp) <= -1:
            return 1.0 / self._power(base, -exp) if exp != -1 else 1.0 / b
        if exp == sp.Rational(1, 2):
            return np.sqrt(b)
        if exp == sp.Rational(-1, 2):
            return 1.0 / np.sqrt(b)
        return b ** float(exp)
