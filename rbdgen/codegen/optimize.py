"""Clean-up of a recorded program: dead-code removal, CSE, operation counts.

Whatever is done here, the generated code is compared with the reference afterwards.
"""

from .costs import flops
from .expr import Expr, Symbol, add, call, free_symbols, mul, power, power_node, scale
from .recorder import Assignment, Program, SinCos


def remove_dead_code(program):
    """Keep only the statements the outputs depend on (walking back from the outputs)."""
    needed = set()
    for expr in program.outputs:
        needed |= free_symbols(expr)
    kept = []
    for st in reversed(program.statements):
        if isinstance(st, SinCos):
            if st.sin in needed or st.cos in needed:
                kept.append(st)
                needed |= free_symbols(st.arg)
        elif st.target in needed:
            kept.append(st)
            needed |= free_symbols(st.expr)
    return Program(program.inputs, kept[::-1], program.outputs, program.output_shape)


def eliminate_common_subexpressions(program):
    """Order-preserving CSE over the whole straight-line program.

    Every statement's right-hand side is small (one line of the algorithm), so what this
    finds is the subexpressions shared between lines: sums, calls, powers and products met
    at least twice become temporaries, each placed right before its first use. A product is
    shared without its numeric factor, so c a b and d a b share a b. (Searching also for
    common subsets of sums and products, as SymPy's full `cse` does, saves few operations for
    several times the time: docs/performance.md, Measured and not kept.)

    Sharing products costs time on some short programs, but saves it where the programs are
    longest, where time matters most (docs/performance.md, Choices in the generated programs).
    """
    assignments = [st for st in program.statements if isinstance(st, Assignment)]
    if not assignments:
        return program
    exprs = [st.expr for st in assignments] + list(program.outputs)
    repeated = _repeated_subexpressions(exprs)
    replacements = []
    memo = {}

    def rebuild(x):
        if not isinstance(x, Expr) or x.is_Symbol:
            return x
        found = memo.get(x)
        if found is not None:
            return found
        if x.is_Mul and x.coeff != 1:
            result = scale(rebuild(x.key), x.coeff)
            if x in repeated:
                target = Symbol(f"x{len(replacements)}")
                replacements.append((target, result))
                result = target
        else:
            if x.is_Add:
                result = x.const
                for term, c in x.terms.items():
                    result = add(result, rebuild(scale(term, c)))
            elif x.is_Mul and len(x.factors) > 1:
                result = 1
                for base, e in x.factors.items():
                    result = mul(result, rebuild(power_node(base, e)))
            elif x.is_Mul:
                (base, e), = x.factors.items()
                result = power(rebuild(base), e)
            else:
                result = call(x.function, tuple(rebuild(a) for a in x.args))
            if x in repeated:
                target = Symbol(f"x{len(replacements)}")
                replacements.append((target, result))
                result = target
        memo[x] = result
        return result

    reduced = [rebuild(x) for x in exprs]
    # Each temporary goes right before the first statement (or output) that uses it.
    index_of = {sym: k for k, (sym, _) in enumerate(replacements)}
    placed = set()
    new_statements = []

    def place(expr):
        for sym in sorted(free_symbols(expr) & index_of.keys(), key=index_of.get):
            if sym not in placed:
                value = replacements[index_of[sym]][1]
                place(value)
                placed.add(sym)
                new_statements.append(Assignment(sym, value))

    it = iter(reduced)
    for st in program.statements:
        if isinstance(st, SinCos):
            new_statements.append(st)
            continue
        expr = next(it)
        place(expr)
        new_statements.append(Assignment(st.target, expr))
    outputs = list(it)
    for expr in outputs:
        place(expr)
    # rebuild and place call themselves through their closures' cells: a reference cycle that
    # would keep memo (every expression met) alive until the cycle collector runs
    del rebuild, place
    return Program(program.inputs, new_statements, outputs, program.output_shape)


def _repeated_subexpressions(exprs):
    """The subexpressions met more than once (a subtree seen again is not entered again).
    A product counts with its numeric factor and without it, and a power inside a product
    counts alone."""
    seen, repeated = set(), set()
    stack = list(reversed(exprs))
    while stack:
        x = stack.pop()
        if not isinstance(x, Expr) or x.is_Symbol:
            continue
        if x.is_Mul and abs(x.coeff) != 1 and x not in seen:
            seen.add(x)       # c a b, when met again, is shared whole; a b alone when met with another c
            stack.append(x.key)
            continue
        if x.is_Mul and x.coeff == -1:
            stack.append(x.key)   # a sign is free: -a b shares a b
            continue
        if x in seen:
            repeated.add(x)
            continue
        seen.add(x)
        if x.is_Add:
            stack.extend(scale(term, c) for term, c in x.terms.items())
        elif x.is_Mul and len(x.factors) > 1:
            stack.extend(power_node(base, e) for base, e in x.factors.items())
        elif x.is_Mul:
            stack.extend(x.factors)
        else:
            stack.extend(x.args)
    return repeated


def count_operations(program):
    """Floating-point operations (see `flops`), sin/cos pairs apart."""
    ops = sum(flops(st.expr) for st in program.statements if isinstance(st, Assignment))
    ops += sum(flops(e) for e in program.outputs)
    sincos = sum(1 for st in program.statements if isinstance(st, SinCos))
    return {"operations": int(ops), "sincos": sincos}


def optimize(program, cse=True):
    program = remove_dead_code(program)
    if cse:
        program = remove_dead_code(eliminate_common_subexpressions(program))
    program.counts = count_operations(program)
    return program
