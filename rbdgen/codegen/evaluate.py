"""A recorded program run on doubles, in the order its C evaluates it.

The generator measures each candidate program's digits before it chooses one
(rbdgen.runtime.accuracy): the optimized program, not the algorithm it came from, since
the expressions flatten sums and the optimizer shares products, and either may reassociate. Sums and
products are folded left to right in the order `cprinter.SlotPrinter` prints them, with
divisions last, so the rounding is the C's up to contraction into fused multiply-adds.
"""

import numpy as np

from .expr import Expr, product_parts, term_times
from .recorder import SinCos

_FUNCTIONS = {"sin": np.sin, "cos": np.cos, "atan2": np.arctan2}


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
        outputs = np.stack([np.broadcast_to(value(e), (batch,)) for e in program.outputs], axis=-1)
    if program.solve is not None:
        program.solve.apply(outputs)
    return outputs.reshape((batch,) + tuple(program.output_shape))


class _Evaluator:
    def __init__(self, env):
        self.env = env

    def __call__(self, x):
        if not isinstance(x, Expr):
            return float(x)
        if x.is_Symbol:
            return self.env[x]
        if x.is_Add:
            total = None if x.const == 0 else float(x.const)
            for term, c in x.terms.items():
                value = self(term_times(term, c))
                total = value if total is None else total + value
            return total
        if x.is_Mul:
            return self._product(x)
        if x.function == "IfLess":
            v, threshold, below, above = (self(a) for a in x.args)
            return np.where(v < threshold, below, above)
        return _FUNCTIONS[x.function](*(self(a) for a in x.args))

    def _product(self, x):
        negative, magnitude, numerator, denominator = product_parts(x)
        result = None if magnitude is None else float(magnitude)
        for base, e in numerator:
            f = self._power(base, e)
            result = f if result is None else result * f
        result = 1.0 if result is None else result
        for base, e in denominator:
            result = result / self._power(base, e)
        return -result if negative else result

    def _power(self, base, e):
        b = self(base)
        if type(e) is int:
            result = b
            for _ in range(e - 1):
                result = result * b
            return result
        if e == 0.5:
            return np.sqrt(b)
        if e == -0.5:
            return 1.0 / np.sqrt(b)
        return b ** float(e)
