"""rbdgen.symbolic: a function of a robot as SymPy expressions.

The function's algorithm is recorded on the generator's own expression graph and optimized
(rbdgen.codegen: per-line temporaries, dead code and common subexpressions removed), exactly as
for the C of a build, and the straight-line program is then written statement by statement as
SymPy, without expansion: `(replacements, outputs)` in `sympy.cse`'s format. The symbolic run
itself stays on the graph: recording on SymPy scalars takes many times as long (docs/symbolic.md,
benchmarks/bench_symbolic.py).

Symbols: the inputs' coordinates in order, 1-based: q1 .. q_nq, v1 .. v_nv, a1 .., tau1 ..
(an input whose name ends in a digit, q1 of `difference`, gets q1_1 ..; a one-number input
its own name, dt); the model parameters asked for by their names (rbdgen.model.parameters:
m_link7, g_z, ...); the temporaries x0, x1, .. in the order they are computed. Sines and
cosines are written in place (cos(q2)).

SymPy is also the truth for the expression graph: `SympyOps` runs the same algorithms on SymPy
scalars, and tests/test_symbolic.py checks that the graph's optimized programs are equal to
SymPy's expressions.
"""

import dataclasses
import os
from fractions import Fraction

from .algorithms import LibraryOps
from .codegen import expr as _expr
from .codegen.programs import generate_program
from .codegen.recorder import SinCos
from .errors import CodegenError, RbdgenError
from .model.model import Model
from .model.parameters import model_parameters, with_parameters
from .table import functions as _table
from .table.inputs import INPUTS

# A number of the graph whose exact value has a denominator up to this is written as SymPy's
# Rational (0.5 as 1/2), any other as a Float (15 digits shown, its double kept)
RATIONAL_DENOMINATOR = 1024

# The closed form's bounds, on the outputs' sizes once the replacements are substituted (nodes
# of the expression trees, closed_form_sizes), checked before anything is substituted. The time
# sympy.simplify takes grows faster than the size, and steeply past an entry of about 1500 nodes.
# Measured on a double pendulum and a planar two-link arm: every function but aba's derivatives,
# with the gravity or the inertias as parameters, fits (aba, the largest, 1300 to 1800 nodes over
# its two entries) and closes; aba with the armature too (an entry of 1800 to 2000),
# aba_derivatives, UR5's crba or gravity and Panda's functions are refused, and those ran for
# minutes or did not finish. The total bounds a function of many entries, each under the first.
CLOSED_FORM_MAX_ENTRY = 1500
CLOSED_FORM_MAX_TOTAL = 2000


def symbolic(robot, function, parameters=(), floating_base=False, closed_form=False, progress=None):
    """The function `function` of `robot` (a Model, or the path of a URDF, xacro or MJCF file)
    as SymPy expressions: `(replacements, outputs)` as `sympy.cse` returns them, a list of
    (Symbol, expression) to evaluate in order, and one output per part of the function (M and
    nle of eom): a Matrix (a column for a vector), an Array beyond two dimensions, an
    expression for a scalar function.

    parameters: SPEC strings (rbdgen.model.parameters: inertia:LINK, inertia:all, payload:FRAME,
    gravity, armature, damping, origin:JOINT) whose entries become symbols (m_link7, g_z, ...) instead
    of the model's numbers. floating_base: a free-flyer root for a URDF or xacro file.
    closed_form: the replacements substituted into the outputs and each entry simplified (no
    replacements are returned); for small robots: an output larger than CLOSED_FORM_MAX_ENTRY or
    CLOSED_FORM_MAX_TOTAL nodes once substituted is a CodegenError, before any simplification.
    progress: a function of one string called as the closed form proceeds (entry by entry)."""
    if isinstance(robot, Model) and floating_base:
        raise RbdgenError("floating_base is for a robot's file: a Model has its joints already")
    model = robot if isinstance(robot, Model) else _load(robot, floating_base)
    f = SympyFunction.of(model, function, parameters, closed_form, progress)
    return f.replacements, f.outputs


@dataclasses.dataclass
class SympyFunction:
    """A function as SymPy: its inputs [(input name, [Symbol])], replacements, outputs and
    the outputs' names (the parts', or the function's own)."""

    name: str
    inputs: list
    replacements: list
    outputs: list
    output_names: list

    @classmethod
    def of(cls, model, function, parameters=(), closed_form=False, progress=None):
        import sympy
        spec = _spec(function)
        params = model_parameters(model, parameters)
        if spec.parametric and not len(params):
            raise CodegenError(f"{function} is a derivative with respect to model parameters and none are given; "
                               f"name them with parameters=[...] (--parameters), e.g. gravity or inertia:all")
        model = with_parameters(model, parameters)
        try:
            program = generate_program(model, dataclasses.replace(spec, variants=()))
        except TypeError as exc:    # a numeric step of the algorithm met a symbol
            raise CodegenError(f"{function}: its algorithm does not take the parameters {', '.join(parameters)} "
                               f"as symbols ({exc})") from None
        inputs, names = [], {}
        for name, symbols in program.inputs.items():
            labels = params.names if name == "params" else coordinate_names(name, len(symbols))
            inputs.append(("parameters" if name == "params" else name, [sympy.Symbol(x) for x in labels]))
            names.update(zip(symbols, inputs[-1][1]))
        replacements, flat = to_sympy(program, names)
        if closed_form:
            flat = _closed_form(function, replacements, flat, progress or _quiet)
            replacements = []
        parts = spec.parts(model) if spec.parts else [(function, tuple(spec.output(model)))]
        return cls(function, inputs, replacements, _shaped(flat, [shape for _, shape in parts], spec.scalar),
                   [name for name, _ in parts])

    def listing(self, form="text"):
        """The function as text: `x0 = ...` lines then `name = ...` lines (form "text", SymPy's
        printing; "latex", one equation a line), or a Python function of the inputs
        (form "python", math's functions)."""
        import sympy
        lines = list(self.replacements) + list(zip(map(sympy.Symbol, self.output_names), self.outputs))
        if form == "latex":
            return "\n".join(f"{sympy.latex(target)} = {sympy.latex(value)}" for target, value in lines)
        if form != "python":
            return "\n".join(f"{target} = {value}" for target, value in lines)
        body = [f"    {', '.join(map(str, symbols))}{',' if len(symbols) == 1 else ''} = {name}"
                for name, symbols in self.inputs if [name] != [str(x) for x in symbols]]
        body += [f"    {target} = {sympy.pycode(value, fully_qualified_modules=True)}"
                 for target, value in self.replacements]
        results = [sympy.pycode(_nested(value), fully_qualified_modules=True) for value in self.outputs]
        body.append(f"    return {', '.join(results)}")
        header = f"def {self.name}({', '.join(name for name, _ in self.inputs)}):"
        return "\n".join(["import math", "", "", header] + body)


def _closed_form(function, replacements, flat, progress):
    """The outputs `flat` with the replacements substituted, each simplified; a CodegenError
    when they are over the closed form's bounds."""
    import sympy
    sizes = closed_form_sizes(replacements, flat)
    total, largest = sum(sizes), max(sizes, default=0)
    if largest > CLOSED_FORM_MAX_ENTRY or total > CLOSED_FORM_MAX_TOTAL:
        what = (f"an entry of {largest} nodes (the bound is {CLOSED_FORM_MAX_ENTRY})" if largest > CLOSED_FORM_MAX_ENTRY
                else f"{total} nodes in all (the bound is {CLOSED_FORM_MAX_TOTAL})")
        raise CodegenError(f"{function}: its closed form would have {what}, too large to simplify in reasonable "
                           f"time; use the cse form (closed_form=False; rbdgen symbolic without --closed-form)")
    progress(f"{function}: {len(flat)} entries, of size {total} in all once substituted")
    values = {}
    for target, value in replacements:
        values[target] = value.xreplace(values)
    out = []
    for k, (x, size) in enumerate(zip(flat, sizes)):
        progress(f"simplifying entry {k + 1} of {len(flat)} (size {size})")
        out.append(sympy.simplify(x.xreplace(values)))
    return out


def closed_form_sizes(replacements, flat):
    """The number of nodes of each output's expression tree once the replacements are
    substituted, found without substituting (a replacement's symbol counts as its value's
    nodes): the measure of CLOSED_FORM_MAX_ENTRY and CLOSED_FORM_MAX_TOTAL."""
    sizes = {}

    def size(x):
        found = sizes.get(x)
        if found is None:
            found = sizes[x] = 1 + sum(map(size, x.args))
        return found

    for target, value in replacements:
        sizes[target] = size(value)
    return [size(x) for x in flat]


def _quiet(message):
    pass


def _nested(value):
    """An output as nested lists (a column as a flat list) for printing as Python."""
    import sympy
    if isinstance(value, sympy.MatrixBase):
        return list(value) if value.shape[1] == 1 else value.tolist()
    if isinstance(value, sympy.NDimArray):
        return value.tolist()
    return value


def coordinate_names(name, size):
    """The SymPy names of an input's numbers: q1 .. qn (1-based), q1_1 .. for a name ending in
    a digit, the name itself for one number that is a parameter of the call (dt)."""
    if size == 1 and INPUTS[name].shared:
        return [name]
    stem = name + "_" if name[-1].isdigit() else name
    return [f"{stem}{k + 1}" for k in range(size)]


def to_sympy(program, names):
    """A straight-line program of the expression graph as SymPy, statement by statement:
    (replacements [(Symbol x_k, expression)], the outputs flat). `names` maps the program's
    input symbols to SymPy's; sines and cosines are written in place."""
    import sympy
    values = dict(names)
    memo = {}
    functions = {"sin": sympy.sin, "cos": sympy.cos, "atan2": sympy.atan2}

    def convert(x):
        if not isinstance(x, _expr.Expr):
            return number(x)
        if x.is_Symbol:
            return values[x]
        found = memo.get(x)
        if found is not None:
            return found
        if x.is_Add:
            result = sympy.Add(number(x.const), *(number(c) * convert(t) for t, c in x.terms.items()))
        elif x.is_Mul:
            result = sympy.Mul(number(x.coeff), *(convert(b) ** exponent(e) for b, e in x.factors.items()))
        elif x.function == "IfLess":
            value, threshold, below, above = (convert(a) for a in x.args)
            result = sympy.Piecewise((below, value < threshold), (above, True))
        else:
            result = functions[x.function](*(convert(a) for a in x.args))
        memo[x] = result
        return result

    replacements = []
    for st in program.statements:
        if isinstance(st, SinCos):
            angle = convert(st.arg)
            values[st.sin], values[st.cos] = sympy.sin(angle), sympy.cos(angle)
        else:
            target = sympy.Symbol(f"x{len(replacements)}")
            replacements.append((target, convert(st.expr)))
            values[st.target] = target
    return replacements, [convert(x) for x in program.outputs]


def number(x):
    """A number of the graph as SymPy's: an Integer, a Rational when its exact value has a small
    denominator (0.5 -> 1/2), else a Float holding the same double."""
    import sympy
    if isinstance(x, int):
        return sympy.Integer(x)
    exact = Fraction(x)
    if exact.denominator <= RATIONAL_DENOMINATOR:
        return sympy.Rational(exact.numerator, exact.denominator)
    return sympy.Float(x)


def exponent(e):
    import sympy
    return sympy.Integer(e) if isinstance(e, int) else sympy.Rational(Fraction(e).numerator, Fraction(e).denominator)


def _shaped(flat, parts, scalar):
    """The flat outputs as the function's parts: Matrix (a column for a vector), Array beyond
    two dimensions, an expression for a scalar function."""
    import sympy
    out, start = [], 0
    for shape in parts:
        size = 1
        for n in shape:
            size *= n
        entries = flat[start:start + size]
        start += size
        if scalar:
            out.append(entries[0])
        elif len(shape) <= 2:
            out.append(sympy.Matrix(shape[0], shape[1] if len(shape) == 2 else 1, entries))
        else:
            out.append(sympy.Array(entries, shape))
    return out


def _spec(function):
    spec = _table.BY_NAME.get(function)
    if spec is None or spec.kind != "state":
        import difflib
        names = [f.name for f in _table.FUNCTIONS if f.kind == "state"]
        close = difflib.get_close_matches(str(function), names, n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        what = "a function of a frame" if spec is not None else "not a function of rbdgen"
        raise RbdgenError(f"{function!r} is {what}; {hint}rbdgen.symbolic takes the functions of states: "
                          f"{', '.join(names)}")
    return spec


def _load(path, floating_base):
    from .model.sources import load_model
    if not os.path.exists(os.fsdecode(os.fspath(path))):
        raise RbdgenError(f"{path}: no such file; give the path of a URDF, xacro or MJCF file")
    return load_model(path, floating_base=floating_base)


class SympyOps(LibraryOps):
    """The `ops` the algorithms receive on SymPy scalars (rbdgen/algorithms/__init__.py): sines,
    cosines, square roots and atan2 are SymPy's (LibraryOps), `select` a Piecewise. `let` is the identity
    (closed expressions), or, made with record=True, binds every line's non-trivial scalars to a
    fresh symbol as the generator's recorder does and keeps `replacements` as sympy.cse does."""
    LIBRARY = "sympy"

    def __init__(self, record=False):
        self.record = record
        self.replacements = []
        self._bound = {}

    def let(self, name, index, value):
        if not self.record:
            return value
        from .spatial import map_scalars
        return map_scalars(value, self._bind)

    def _bind(self, x):
        import sympy
        if not isinstance(x, sympy.Basic) or x.is_Atom or (x.is_Mul and len(x.args) == 2 and x.args[0] == -1
                                                           and x.args[1].is_Symbol):
            return x
        found = self._bound.get(x)
        if found is None:
            found = self._bound[x] = sympy.Symbol(f"x{len(self.replacements)}")
            self.replacements.append((found, x))
        return found

    @staticmethod
    def select(x, threshold, below, above):
        import sympy
        if isinstance(x, sympy.Basic) and not x.is_Number:
            return sympy.Piecewise((below(_same), x < threshold), (above(_same), True))
        return below(_same) if x < threshold else above(_same)


def _same(d):
    return d
