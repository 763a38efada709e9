"""SymPy -> C99 expressions: input symbols become array slots, small powers become products."""

import re

from sympy.printing.c import C99CodePrinter

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


class SlotPrinter(C99CodePrinter):
    """Prints input symbol `q_3` as `q[3]` and x**2 as x*x, 1/x as 1.0/x.

    Sums and products print their arguments in SymPy's canonical order (deterministic);
    the base printer would sort the terms again, which took most of the time of a build.
    """

    def __init__(self, slots):
        super().__init__()
        self._slots = slots

    def expression(self, expr):
        return self._print(expr)

    def _print_Add(self, expr, order=None):
        text = self._print(expr.args[0])
        for term in expr.args[1:]:
            t = self._print(term)
            text += " - " + t[1:] if t.startswith("-") else " + " + t
        return text

    def _print_Mul(self, expr):
        coeff, rest = expr.as_coeff_Mul()
        sign = ""
        if coeff.is_negative:
            sign, coeff = "-", -coeff
        factors = [] if coeff == 1 else [self._print(coeff)]
        divisors = []
        for factor in (rest.args if rest.is_Mul else (rest,)):
            if factor.is_Pow and factor.args[1] == -1:
                divisors.append(self.parenthesize(factor.args[0], 50))
            else:
                factors.append(self.parenthesize(factor, 50))
        text = "*".join(factors) if factors else "1.0"
        for d in divisors:
            text += "/" + d
        return sign + text

    def _print_Symbol(self, expr):
        slot = self._slots.get(expr)
        return slot if slot is not None else expr.name

    def _print_Pow(self, expr):
        base, exp = expr.args
        if exp.is_Integer and 2 <= int(exp) <= 4:
            b = self.parenthesize(base, 100)
            return "(" + "*".join([b] * int(exp)) + ")"
        if exp == -1:
            return f"(1.0/{self.parenthesize(base, 100)})"
        if exp.is_Integer and -4 <= int(exp) <= -2:
            b = self.parenthesize(base, 100)
            return "(1.0/(" + "*".join([b] * -int(exp)) + "))"
        return super()._print_Pow(expr)

    def _print_IfLess(self, expr):
        """rbdgen.algorithms.configuration.IfLess, a series below a threshold and a closed
        form above, as an inline C conditional."""
        x, threshold, below, above = (self._print(a) for a in expr.args)
        return f"({x} < {threshold} ? {below} : {above})"

    def _print_Float(self, expr):
        return repr(float(expr))

    def _print_Rational(self, expr):
        return repr(float(expr))

    def _print_Integer(self, expr):
        return f"{int(expr)}.0"


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
