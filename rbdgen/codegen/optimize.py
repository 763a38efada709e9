"""Clean-up of a recorded program: dead-code removal, CSE, operation counts.

Whatever is done here, the generated code is compared with the reference afterwards.
"""

import sympy as sp
from sympy.simplify.cse_main import tree_cse

from .recorder import Assignment, Program, SinCos


def remove_dead_code(program):
    """Keep only the statements the outputs depend on (walking back from the outputs)."""
    needed = set()
    for expr in program.outputs:
        needed |= expr.free_symbols
    kept = []
    for st in reversed(program.statements):
        if isinstance(st, SinCos):
            if st.sin in needed or st.cos in needed:
                kept.append(st)
                needed |= st.arg.free_symbols
        elif st.target in needed:
            kept.append(st)
            needed |= st.expr.free_symbols
    return Program(program.inputs, kept[::-1], program.outputs, program.output_shape)


def eliminate_common_subexpressions(program):
    """Order-preserving CSE over the whole straight-line program (SymPy's tree_cse).

    Every statement's right-hand side is small (one line of the algorithm), so what this
    finds is the subexpressions (mostly products) shared between lines: each becomes a
    temporary placed before its first use. SymPy's full `cse` also searches for common
    subsets of sums and products; on Panda that saved 1-7 % more operations at 2-5 times
    the time, which the build-time targets cannot afford.
    """
    assignments = [st for st in program.statements if isinstance(st, Assignment)]
    if not assignments:
        return program
    exprs = [st.expr for st in assignments] + list(program.outputs)
    names = sp.numbered_symbols("x", real=True, finite=True)
    # Sharing these products is not always faster (measured: Panda coriolis 326 -> 412 ns and
    # regressor 340 -> 445 ns, UR5 rnea 48 -> 52 ns), but it is where the programs are longest
    # (Talos crba 680 -> 595 ns, minv 4.17 -> 3.70 us, Solo12 aba 610 -> 535 ns), so it stays.
    products, exprs = share_scaled_products(exprs, names)
    replacements, reduced = tree_cse([key for _, key in products] + exprs, names, opt_subs={}, order="none")
    replacements += [(sym, key) for (sym, _), key in zip(products, reduced)]
    reduced = reduced[len(products):]
    # Each temporary goes right before the first statement (or output) that uses it.
    index_of = {}
    for k, (sym, expr) in enumerate(replacements):
        index_of[sym] = k
    pending = list(replacements)
    placed = set()
    new_statements = []

    def place(expr):
        for sym in sorted(expr.free_symbols & set(index_of), key=lambda s: index_of[s]):
            if sym not in placed:
                place(pending[index_of[sym]][1])
                placed.add(sym)
                new_statements.append(Assignment(sym, pending[index_of[sym]][1]))

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
    return Program(program.inputs, new_statements, outputs, program.output_shape)


def share_scaled_products(exprs, names):
    """Products that differ only in their numeric factor, c a b and d a b (or a b itself),
    share a b: tree_cse matches whole subtrees only, and SymPy keeps the number inside the
    product, so it would compute a b twice. Returns ([(symbol, product)], rewritten exprs):
    each product met at least twice, one with a number, becomes a symbol."""
    seen, scaled = {}, set()
    for expr in exprs:
        for node in sp.preorder_traversal(expr):
            if node.is_Mul:
                coeff, key = node.as_coeff_Mul()
                if key.is_Mul:
                    seen[key] = seen.get(key, 0) + 1
                    if coeff != 1:
                        scaled.add(key)
    shared = {key: next(names) for key, n in seen.items() if n > 1 and key in scaled}
    if not shared:
        return [], exprs
    memo = {}

    def rewrite(expr, top=False):
        if expr.is_Atom:
            return expr
        if expr in memo and not top:
            return memo[expr]
        if expr.is_Mul and not top:
            coeff, key = expr.as_coeff_Mul()
            if key in shared:
                memo[expr] = coeff * shared[key]
                return memo[expr]
        args = [rewrite(a) for a in expr.args]
        result = expr
        if any(a is not b for a, b in zip(args, expr.args)):
            result = expr.func(*args)
            if expr.is_Mul and result.is_Add:   # SymPy spread a number over a sum: keep c (a + b)
                result = sp.Mul(*args, evaluate=False)
        if not top:
            memo[expr] = result
        return result

    products = [(sym, rewrite(key, top=True)) for key, sym in shared.items()]
    return products, [rewrite(e) for e in exprs]


def flops(expr):
    """Floating-point operations of an expression as C evaluates it: each +, -, *, / counts
    one; a sign (a factor -1) is folded into the neighbouring add or multiply and is free;
    x**2..x**4 are products, x**-1 a division."""
    if expr.is_Atom:
        return 0
    args = expr.args
    own = 0
    if expr.is_Add:
        own = len(args) - 1
    elif expr.is_Mul:
        factors = [a for a in args if not (a.is_Number and abs(a) == 1)]
        own = max(len(factors) - 1, 0)
    elif expr.is_Pow:
        exp = args[1]
        own = abs(int(exp)) - 1 + (1 if exp < 0 else 0) if exp.is_Integer else 1
        return own + flops(args[0])
    elif type(expr).__name__ == "IfLess":
        # a C conditional: the comparison, then one branch (the costlier is counted)
        x, threshold, below, above = args
        return 1 + flops(x) + flops(threshold) + max(flops(below), flops(above))
    else:
        own = 1  # a function call
    return own + sum(flops(a) for a in args)


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
