"""The generator's own small expression graph: what the algorithms compute on in the symbolic run.

The algorithms are written for any scalar with + - * / (rbdgen.spatial), and the recorder binds
every line's result to a temporary, so an expression here is never larger than one line of an
algorithm. What it needs from a computer-algebra system is therefore little: numbers folded,
exact zeros and ones dropped (that is how the model's sparsity prunes the code), sums and
products flattened with like terms and like factors collected (x y - y x is 0, x x is x^2), and
a structural hash so that equal expressions are found in a dict. SymPy does this through its
assumptions system and canonical ordering, which dominate its cost; this does only that, in
plain Python, many times faster (docs/performance.md, Cold builds).

Canonical forms (so that equal values of one structure compare equal):
- numbers are Python ints and floats, never nodes;
- Add: a number plus {term: coefficient}, the terms free of numeric factors;
- Mul: a coefficient times {base: exponent}, the bases neither numbers nor products (a
  product under a square root is the one exception), exponents nonzero ints or halves;
- Call: sin, cos, atan2, and IfLess(x, threshold, below, above), C's (x < threshold ? below : above).

A number times a sum stays a product (c (a + b): one multiplication instead of one per term)
unless spreading it costs no more (a sign, or 0.5 (2 a + 2 b)): then the terms collect with
their neighbours'. Terms and factors keep the order in which they were first met, so a program
prints the same way in every run.
"""

import math
import numbers

_NUMBERS = (int, float)


def _number(x):
    """x as a Python int or float when it is a real number of any kind (NumPy's too), else None."""
    if type(x) in _NUMBERS:
        return x
    if isinstance(x, Expr):
        return None
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x)
    return None


def _operand(x):
    """Whether x takes part in arithmetic with an expression here (anything else, a dual
    number, gets its own reflected operator)."""
    return type(x) in _NUMBERS or isinstance(x, Expr) or _number(x) is not None


class Expr:
    __slots__ = ("_hash", "_free")
    __array_ufunc__ = None     # NumPy scalars defer to the reflected operators below

    is_Symbol = is_Add = is_Mul = is_Call = False

    def __hash__(self):
        return self._hash

    def __add__(self, other):
        return add(self, other) if _operand(other) else NotImplemented

    def __radd__(self, other):
        return add(other, self) if _operand(other) else NotImplemented

    def __sub__(self, other):
        return add(self, mul(-1, other)) if _operand(other) else NotImplemented

    def __rsub__(self, other):
        return add(other, mul(-1, self)) if _operand(other) else NotImplemented

    def __neg__(self):
        return mul(-1, self)

    def __pos__(self):
        return self

    def __mul__(self, other):
        return mul(self, other) if _operand(other) else NotImplemented

    def __rmul__(self, other):
        return mul(other, self) if _operand(other) else NotImplemented

    def __truediv__(self, other):
        return mul(self, power(other, -1)) if _operand(other) else NotImplemented

    def __rtruediv__(self, other):
        return mul(other, power(self, -1)) if _operand(other) else NotImplemented

    def __pow__(self, exponent):
        return power(self, exponent)

    @property
    def free_symbols(self):
        free = self._free
        if free is None:
            free = self._free = frozenset().union(*(free_symbols(a) for a in self._children()))
        return free


class Symbol(Expr):
    __slots__ = ("name",)
    is_Symbol = True
    __hash__ = Expr.__hash__

    def __init__(self, name):
        self.name = name
        self._hash = hash(name)
        self._free = None

    def __eq__(self, other):
        return self is other or (type(other) is Symbol and other.name == self.name)

    def __repr__(self):
        return self.name

    @property
    def free_symbols(self):
        return frozenset((self,))

    def _children(self):
        return ()


class _Collected(Expr):
    """A number and a dict of expressions to numbers: a sum's constant and {term: coefficient},
    or a product's coefficient and {base: exponent}. Equal when both are, whatever the order."""

    __slots__ = ("number", "items")
    __hash__ = Expr.__hash__

    def __init__(self, number, items):
        self.number = number
        self.items = items
        self._hash = hash((number, frozenset(items.items())))
        self._free = None

    def __eq__(self, other):
        return self is other or (type(other) is type(self) and other._hash == self._hash
                                 and other.number == self.number and other.items == self.items)

    def _children(self):
        return self.items.keys()

    def __repr__(self):
        """A text to read while debugging, (2 + 3*x) or (0.5*x**2*y); the C of an expression is
        rbdgen.codegen.cprinter's, which this module does not import."""
        parts = [] if self.number == self._neutral else [repr(self.number)]
        parts += [repr(x) if n == 1 else self._scaled.format(x=x, n=n) for x, n in self.items.items()]
        return "(" + self._separator.join(parts) + ")"


class Add(_Collected):
    """const + sum of coefficient * term."""

    __slots__ = ()
    is_Add = True
    _neutral, _separator, _scaled = 0, " + ", "{n!r}*{x!r}"
    const = property(lambda self: self.number)
    terms = property(lambda self: self.items)


class Mul(_Collected):
    """coeff * product of base ** exponent."""

    __slots__ = ("_key",)
    is_Mul = True
    _neutral, _separator, _scaled = 1, "*", "{x!r}**{n!r}"
    coeff = property(lambda self: self.number)
    factors = property(lambda self: self.items)

    def __init__(self, coeff, factors):
        self.number = coeff
        self.items = factors
        self._hash = hash((coeff, frozenset(factors.items())))
        self._free = None
        self._key = None

    @property
    def key(self):
        """The product without its coefficient (self when the coefficient is 1: not kept in
        _key, where it would be a reference cycle that only the cycle collector frees)."""
        if self.number == 1:
            return self
        if self._key is None:
            self._key = _product(1, self.items)
        return self._key


class Call(Expr):
    __slots__ = ("function", "args")
    is_Call = True
    __hash__ = Expr.__hash__

    def __init__(self, function, args):
        self.function = function
        self.args = args
        self._hash = hash((function, args))
        self._free = None

    def __eq__(self, other):
        return self is other or (type(other) is Call and other._hash == self._hash
                                 and other.function == self.function and other.args == self.args)

    def _children(self):
        return [a for a in self.args if isinstance(a, Expr)]

    def __repr__(self):
        return f"{self.function}({', '.join(map(repr, self.args))})"


def free_symbols(x):
    """The symbols an expression (or a number: none) reads."""
    return x.free_symbols if isinstance(x, Expr) else frozenset()


def split_coefficient(x):
    """(c, term) with x = c * term and term free of a numeric factor."""
    if type(x) is Mul:
        return x.number, x.key
    return 1, x


def _product(coeff, factors):
    """The canonical form of coeff * prod(base ** exponent)."""
    if not factors or coeff == 0:
        return coeff if factors or coeff != 0 else 0
    if coeff == 1 and len(factors) == 1:
        (base, exponent), = factors.items()
        if exponent == 1:
            return base
    return Mul(coeff, factors)


def _sum(const, terms):
    """The canonical form of const + sum(coefficient * term)."""
    terms = {t: c for t, c in terms.items() if c != 0}
    if not terms:
        return const
    if const == 0 and len(terms) == 1:
        (term, c), = terms.items()
        return scale(term, c)
    return Add(const, terms)


def term_times(term, c):
    """c * term as one term of a sum prints and evaluates: a product, never a sum spread out
    (the printer's parentheses and the evaluator's order follow this node)."""
    if c == 1:
        return term
    if type(term) is Mul:
        return _product(term.number * c, term.items)
    return Mul(c, {term: 1})


def scale(x, c):
    """c * x for a number c."""
    if c == 0:
        return 0
    if c == 1:
        return x
    if type(x) is Mul:
        coeff = x.number * c
        return _product(coeff, x.items) if coeff != 0 else 0
    if type(x) is Add and _distributes(x, c):
        return _sum(x.number * c, {term: coeff * c for term, coeff in x.items.items()})
    if isinstance(x, Expr):
        return Mul(c, {x: 1})
    return x * c


def _distributes(x, c):
    """Whether c (a + b) is cheaper, or as cheap, as c a + c b: a sign always is (and the
    terms then collect with their neighbours', x - (x - y) = y); another number when it
    turns the terms' coefficients into signs (0.5 (2 a - 2 b))."""
    if c == -1:
        return True
    kept = 1 + sum(1 for coeff in x.items.values() if abs(coeff) != 1)
    spread = sum(1 for coeff in x.items.values() if abs(coeff * c) != 1)
    return spread <= kept


def _as_factors(x):
    if type(x) is Mul:
        return x.number, x.items
    return 1, {x: 1}


def mul(a, b):
    na, nb = _number(a), _number(b)
    if na is not None:
        if nb is not None:
            return na * nb
        return scale(_expr(b), na)
    if nb is not None:
        return scale(_expr(a), nb)
    ca, fa = _as_factors(a)
    cb, fb = _as_factors(b)
    factors = dict(fa)
    for base, exponent in fb.items():
        total = factors.get(base, 0) + exponent
        if total == 0:
            del factors[base]
        else:
            factors[base] = _exponent(total)
    return _product(ca * cb, factors)


def add(a, b):
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        return na + nb
    if na == 0:
        return _expr(b)
    if nb == 0:
        return _expr(a)
    const, terms = 0, {}
    for x, n in ((a, na), (b, nb)):
        if n is not None:
            const += n
        elif type(x) is Add:
            const += x.number
            for term, c in x.items.items():
                terms[term] = terms.get(term, 0) + c
        else:
            c, term = split_coefficient(_expr(x))
            terms[term] = terms.get(term, 0) + c
    return _sum(const, terms)


def power(x, exponent):
    exponent = _exponent(exponent)
    n = _number(x)
    if n is not None:
        return n ** exponent
    x = _expr(x)
    if exponent == 0:
        return 1
    if exponent == 1:
        return x
    if type(x) is Mul and type(exponent) is int:
        coeff = x.number ** exponent if exponent > 0 else 1 / x.number ** -exponent
        return _product(coeff, {base: _exponent(e * exponent) for base, e in x.items.items()})
    if type(x) is Mul and len(x.items) == 1 and x.number == 1:
        (base, e), = x.items.items()
        if type(e) is not int:   # (sqrt(b))^k = b^(k/2): b >= 0 already; but sqrt(b^2) = |b|, not b
            return _product(1, {base: _exponent(e * exponent)})
    return Mul(1, {x: exponent})


def _exponent(e):
    e = _number(e)
    if e is None:
        raise TypeError("a symbolic exponent is not supported")
    if type(e) is float and e.is_integer():
        return int(e)
    return e


def _expr(x):
    if isinstance(x, Expr):
        return x
    raise TypeError(f"not a scalar expression: {x!r}")


def sqrt(x):
    n = _number(x)
    return math.sqrt(n) if n is not None else power(x, 0.5)


def _unary(name):
    """sin or cos: folded on a number, else a Call node."""
    numeric = getattr(math, name)
    return lambda x: numeric(_number(x)) if _number(x) is not None else Call(name, (x,))


sin, cos = _unary("sin"), _unary("cos")


def atan2(y, x):
    ny, nx = _number(y), _number(x)
    if ny is not None and nx is not None:
        return math.atan2(ny, nx)
    return Call("atan2", (y, x))


def if_less(x, threshold, below, above):
    """(x < threshold ? below : above), folded when x and threshold are numbers or the branches agree."""
    nx, nt = _number(x), _number(threshold)
    if nx is not None and nt is not None:
        return below if nx < nt else above
    if below == above and type(below) is type(above):
        return below
    return Call("IfLess", (x, threshold, below, above))


def product_parts(m):
    """How a Mul is evaluated (printer, evaluator and operation count agree on it):
    (negative, |coefficient| or None when 1, [(base, exponent > 0)], [(base, -exponent)] divisors)."""
    coeff = m.number
    negative = coeff < 0
    magnitude = -coeff if negative else coeff
    numerator, denominator = [], []
    for base, e in m.items.items():
        if e < 0 and type(e) is int:
            denominator.append((base, -e))
        else:
            numerator.append((base, e))
    return negative, (None if magnitude == 1 else magnitude), numerator, denominator


def power_node(base, exponent):
    """base ** exponent as one node (a factor of a product on its own)."""
    return base if exponent == 1 else Mul(1, {base: exponent})


_CALLS = {"sin": sin, "cos": cos, "atan2": atan2, "IfLess": if_less}


def call(function, args):
    """A Call node rebuilt from new arguments (folded as its constructor folds)."""
    return _CALLS[function](*args)
