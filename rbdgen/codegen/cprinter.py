"""Expressions -> C99, in two dialects: scalar C on one state (SlotPrinter), and C on vectors
of RBDGEN_LANES states (LanesPrinter, GCC's vector extensions). Input symbols become array
slots, small powers become products."""

import re

from .expr import Expr, free_symbols, product_parts, term_times

_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")


def sanitize_identifier(name, fallback="robot"):
    """Map any text (a URDF robot name) to a safe C and Python identifier.

    Only [A-Za-z0-9_] survive; anything else becomes '_', a leading digit gets a prefix,
    and the result is never empty or a Python keyword. `x*/ system("rm -rf ~"); /*` becomes
    `x___system__rm__rf_______`: harmless wherever it lands.
    """
    import keyword
    ident = _IDENTIFIER.sub("_", str(name)) or fallback
    if ident[0].isdigit():
        ident = "r_" + ident
    if keyword.iskeyword(ident) or ident.startswith("__"):
        ident = "r_" + ident
    return ident[:64]


class SlotPrinter:
    """Prints an expression (rbdgen.codegen.expr) as C: input symbol `q_3` as `q[3]` (or any
    other text `slots` gives a symbol), x**2 as x*x, a division as `/`, IfLess as `?:`.

    Sums and products print their terms and factors in the order the expression keeps (the
    order they were met), so the text is the same in every run; rbdgen.codegen.evaluate
    folds them in the same order, so the generator measures the digits of this C.
    """

    # a function's C name in this dialect, where it is not the function's own
    functions = {}

    def __init__(self, slots):
        self._slots = slots

    def expression(self, expr):
        return self._print(expr)

    def statement(self, expr):
        """The value a statement binds to its temporary."""
        return self._print(expr)

    def output(self, expr):
        """The value stored to an output entry."""
        return self._print(expr)

    def _call(self, name, arguments):
        return f"{self.functions.get(name, name)}({arguments})"

    def _print(self, x):
        if not isinstance(x, Expr):
            return _number(x)
        if x.is_Symbol:
            slot = self._slots.get(x)
            return slot if slot is not None else x.name
        if x.is_Add:
            return self._sum(x)
        if x.is_Mul:
            return self._product(x)
        if x.function == "IfLess":
            v, threshold, below, above = (self._print(a) for a in x.args)
            return f"({v} < {threshold} ? {below} : {above})"
        return self._call(x.function, ", ".join(self._print(a) for a in x.args))

    def _sum(self, x):
        parts = [_number(x.const)] if x.const != 0 else []
        for term, c in x.terms.items():
            text = self._print(term_times(term, c))
            if not parts:
                parts.append(text)
            elif text.startswith("-"):
                parts.append(" - " + text[1:])
            else:
                parts.append(" + " + text)
        return "".join(parts)

    def _product(self, x):
        negative, magnitude, numerator, denominator = product_parts(x)
        factors = [] if magnitude is None else [_number(magnitude)]
        factors += [self._power(base, e) for base, e in numerator]
        text = "*".join(factors) if factors else "1.0"
        for base, e in denominator:
            text += "/" + (self._factor(base) if e == 1 else self._power(base, e))
        return ("-" if negative else "") + text

    def _factor(self, base):
        """A factor of a product: a sum in parentheses."""
        text = self._print(base)
        return f"({text})" if base.is_Add or (base.is_Mul and not text.startswith("(")) else text

    def _power(self, base, e):
        if e == 1:
            return self._factor(base)
        if type(e) is int:
            return "(" + "*".join([self._factor(base)] * e) + ")"
        if e == 0.5:
            return self._call("sqrt", self._print(base))
        if e == -0.5:
            return f"(1.0/{self._call('sqrt', self._print(base))})"
        return self._call("pow", f"{self._print(base)}, {_number(e)}")


class LanesPrinter(SlotPrinter):
    """The same expressions on vectors of states (rbdgen_lanes, the kernels header): square
    roots lane by lane, and a value that reads no input (a constant, a double) made a vector
    by subtracting the vector of zeros. Only arithmetic and square roots have a vector form:
    `prints` says whether a program's expressions are all such."""

    functions = {"sqrt": "rbdgen_sqrt_lanes"}

    def statement(self, expr):
        if not free_symbols(expr):   # a double (the C library's sqrt), then made a vector
            return f"({SlotPrinter(self._slots).statement(expr)}) - RBDGEN_LANES_ZERO"
        return self._print(expr)

    def output(self, expr):
        return f"({self._print(expr)}) - RBDGEN_LANES_ZERO"

    @staticmethod
    def prints(exprs):
        """Whether every expression has a vector form: arithmetic and square roots. A
        conditional (IfLess), another function (sin, atan2) or a power other than an integer
        or +-1/2 (printed pow()) has none."""
        seen, stack = set(), list(exprs)
        while stack:
            x = stack.pop()
            if not isinstance(x, Expr) or x.is_Symbol or id(x) in seen:
                continue
            seen.add(id(x))
            if x.is_Call or (x.is_Mul and any(type(e) is not int and e not in (0.5, -0.5) for e in x.items.values())):
                return False
            stack.extend(x.items)   # a sum's terms, a product's bases
        return True


def _number(x):
    """A number as a C double literal (every digit of the double)."""
    if type(x) is int or (type(x) is float and x.is_integer() and abs(x) < 1e16):
        return f"{int(x)}.0"
    return repr(float(x))


def slot_map(program):
    """Input symbols -> 'name[k]'."""
    return {sym: f"{name}[{k}]" for name, syms in program.inputs.items() for k, sym in enumerate(syms)}


# Characters of text from a robot description (names) that pass into C unchanged. Everything
# else is escaped: no '*' or '/' (a comment cannot end), no '?' (no trigraph), no '\' (no line
# splice), no quote (a string literal cannot end), no control character.
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _-.,:;=+()[]{}<>#@!%&|^~")


def c_comment_text(text):
    """Any text as one line that is safe inside a C comment: other characters as \\uXXXX."""
    return "".join(c if c in _PLAIN else f"\\u{ord(c):04x}" for c in str(text))


def c_string(text):
    """Any text as a C string literal of its UTF-8 bytes (octal escapes beyond _PLAIN)."""
    return '"' + "".join(chr(b) if chr(b) in _PLAIN else f"\\{b:03o}" for b in str(text).encode("utf-8")) + '"'
