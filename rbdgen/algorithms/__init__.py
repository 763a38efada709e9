"""One file per algorithm, each written once for numbers and for symbols.

Every algorithm takes (model, ops, inputs...) where inputs are flat sequences of scalars and
returns flat lists (vectors) or lists of rows (matrices) of scalars. What depends on the kind
of scalar reaches an algorithm through `ops`, never by its asking what a scalar is:

- `let(name, index, value)`: the per-line hook (the identity on numbers, a temporary each in
  the generator); `value` a scalar or nested lists of them;
- `sincos(angle)`: sine and cosine together (one sincos in the C);
- `sqrt(x)` and `atan2(y, x)`;
- `select(x, threshold, below, above)`: below(safe) where x < threshold, else above(safe)
  (a C conditional in the generator). `safe(d)` is d, except where both formulas are
  evaluated (a NumPy batch): there it is 1 in the lanes that take the other formula, so
  that no lane divides by zero.

NumericOps below serves floats and NumPy batches (the reference, rbdgen.runtime.reference);
the others are the generator's recorder (rbdgen.codegen.recorder.SymbolicOps), the dual
numbers of forward mode (derivatives.DualOps) and mpmath's extended precision
(rbdgen.runtime.accuracy.ExtendedOps).
"""

import importlib
import math

import numpy as np


def _same(d):
    return d


class NumericOps:
    """`let` is the identity on numbers; the functions work on floats and arrays alike."""

    @staticmethod
    def let(name, index, value):
        return value

    @staticmethod
    def sincos(x):
        if isinstance(x, float):
            return math.sin(x), math.cos(x)
        return np.sin(x), np.cos(x)

    @staticmethod
    def sqrt(x):
        return np.sqrt(x) if isinstance(x, np.ndarray) else math.sqrt(x)

    @staticmethod
    def atan2(y, x):
        if isinstance(y, np.ndarray) or isinstance(x, np.ndarray):
            return np.arctan2(y, x)
        return math.atan2(y, x)

    @staticmethod
    def select(x, threshold, below, above):
        if isinstance(x, np.ndarray):
            small = x < threshold
            return np.where(small, below(lambda d: np.where(small, d, 1.0)), above(lambda d: np.where(small, 1.0, d)))
        return below(_same) if x < threshold else above(_same)


class LibraryOps(NumericOps):
    """NumericOps whose sin, cos, sqrt and atan2 are those of the module LIBRARY (mpmath for the
    extended-precision truth, sympy for the SymPy front end), imported where first used."""
    LIBRARY = None

    @classmethod
    def _library(cls):
        return importlib.import_module(cls.LIBRARY)

    @classmethod
    def sincos(cls, x):
        library = cls._library()
        return library.sin(x), library.cos(x)

    @classmethod
    def sqrt(cls, x):
        return cls._library().sqrt(x)

    @classmethod
    def atan2(cls, y, x):
        return cls._library().atan2(y, x)
