"""rbdgen's expression graph (rbdgen/codegen/expr.py), which the symbolic run computes on.

1. Canonical forms: numbers fold, exact zeros and ones vanish, like terms and factors collect,
   equal values of one structure compare and hash equal whatever the order they were built in.
2. Against numbers: seeded random expressions built with + - * / and sqrt, printed to C,
   evaluated by the generator's evaluator and by the C compiler, equal the same arithmetic
   done on floats (within rounding: the canonical form may reassociate).
3. The optimizer: CSE keeps a program's values and shares what repeats; the operation count
   is the C's.
"""

import math
import random

import numpy as np
import pytest

from rbdgen.codegen import expr as e
from rbdgen.codegen.costs import flops
from rbdgen.codegen.cprinter import SlotPrinter
from rbdgen.codegen.evaluate import evaluate
from rbdgen.codegen.optimize import optimize
from rbdgen.codegen.recorder import Program, record

x, y, z = e.Symbol("q_0"), e.Symbol("q_1"), e.Symbol("q_2")
SLOTS = {x: "q[0]", y: "q[1]", z: "q[2]"}
# random expressions on floats against their canonical form: a few reassociations of
# well-scaled terms (|values| in [0.5, 2])
REL_TOL_RANDOM = 1e-12
RANDOM_EXPRESSIONS = 2000


def text(value):
    return SlotPrinter(SLOTS).expression(value)


def test_numbers_zeros_and_ones_fold():
    assert 0 * x == 0 and x * 0 == 0 and 0.0 * x == 0
    assert 1 * x is x and x + 0 is x and x - 0 is x and x / 1 is x
    assert x - x == 0 and 2 * x - x - x == 0
    assert (2 * x) * 3 == 6 * x and x / 2.0 == 0.5 * x
    assert e.if_less(0.5, 1, x, y) is x and e.if_less(x, 1, y, y) is y


def test_like_terms_and_factors_collect_in_any_order():
    assert x * y == y * x and hash(x * y) == hash(y * x)
    assert x + y + z == z + (y + x)
    assert x * x == x ** 2 and (x ** 2) / x == x and x * (1 / x) == 1
    assert x * y + y * x == 2 * x * y
    assert e.sqrt(x) * e.sqrt(x) == x and e.sqrt(x) ** 2 == x
    assert e.sqrt(x * x) != x    # |x|: the square root of a square is not folded
    # a sign spreads over a sum (free), so the terms collect: x - (x - y) = y
    assert x - (x - y) == y
    # another number stays outside a sum unless spreading it costs nothing
    assert text(3 * (x + y)) == "3.0*(q[0] + q[1])"
    assert text(0.5 * (2 * x - 2 * y)) == "q[0] - q[1]"


def test_printing():
    assert text(x * y / z) == "q[0]*q[1]/q[2]"
    assert text(-x * y) == "-q[0]*q[1]"
    assert text(x - 2.5 * y) == "q[0] - 2.5*q[1]"
    assert text(x ** 3) == "(q[0]*q[0]*q[0])"
    assert text(1 / (x + y)) == "1.0/(q[0] + q[1])"
    assert text(e.sqrt(x + 1)) == "sqrt(1.0 + q[0])"
    assert text(e.if_less(x * x, 1e-6, 1 + x, y / x)) == "((q[0]*q[0]) < 1e-06 ? 1.0 + q[0] : q[1]/q[0])"
    assert text(e.atan2(y, x)) == "atan2(q[1], q[0])"


def _random_pair(rng, depth):
    """(expression, the same arithmetic on floats) for the values of VALUES."""
    if depth == 0 or rng.random() < 0.2:
        choice = rng.randrange(4)
        if choice == 3:
            c = rng.choice([0, 1, -1, 2, 0.5, rng.uniform(-2, 2)])
            return c, float(c)
        return (x, y, z)[choice], VALUES[choice]
    a, fa = _random_pair(rng, depth - 1)
    b, fb = _random_pair(rng, depth - 1)
    op = rng.randrange(5)
    if op == 0:
        return a + b, fa + fb
    if op == 1:
        return a - b, fa - fb
    if op == 2:
        return a * b, fa * fb
    if op == 3 and abs(fb) > 0.25:
        return a / b, fa / fb
    if op == 4 and fa > 0.25:
        return e.sqrt(a), math.sqrt(fa)
    return a * b - a, fa * fb - fa


VALUES = (1.3, -0.7, 0.55)


def test_random_expressions_equal_float_arithmetic():
    """The canonical form, evaluated the way its C is (rbdgen.codegen.evaluate), equals the same
    operations done on floats; so does the form as printed, evaluated by Python."""
    rng = random.Random(5)
    inputs = {"q": np.array([VALUES])}
    checked = 0
    for _ in range(RANDOM_EXPRESSIONS):
        value, expected = _random_pair(rng, 5)
        if not isinstance(value, e.Expr) or not math.isfinite(expected) or abs(expected) > 1e6:
            continue
        scale = max(1.0, abs(expected))
        got = evaluate(Program({"q": [x, y, z]}, [], [value], (1,)), inputs)[0, 0]
        assert abs(got - expected) <= REL_TOL_RANDOM * scale, (text(value), got, expected)
        printed = eval(text(value).replace("sqrt", "math.sqrt"), {"math": math, "q": VALUES})
        assert abs(printed - expected) <= REL_TOL_RANDOM * scale, (text(value), printed, expected)
        checked += 1
    assert checked > RANDOM_EXPRESSIONS // 2


def test_operation_count_is_the_printed_c():
    for value, count in ((x * y + z, 2), (-x * y, 1), (3 * (x + y), 2), (x / (y + z), 2),
                         (x ** 3, 2), (e.sqrt(x), 1), (2 * x * y - 3 * z + 1, 5)):
        assert flops(value) == count, (text(value), flops(value))


def test_cse_shares_what_repeats_and_keeps_the_values():
    def run(ops, q):
        a = ops.let("a", 0, [q[0] * q[1] + q[2], 2 * q[0] * q[1] - q[2]])
        b = ops.let("b", 0, [(q[0] * q[1] + q[2]) * a[1], 3 * q[0] * q[1] * a[0]])
        return [a[0] + b[0], b[1] - a[1]]

    program = optimize(record(run, [("q", 3)], (2,)))
    # q0 q1 is computed once (shared without its numbers), a0 once (hash-consing)
    products = [st for st in program.statements if e.free_symbols(st.expr) == {x, y} and st.expr.is_Mul]
    assert len(products) == 1, [text(st.expr) for st in program.statements]
    q = np.array([VALUES])
    q0, q1, q2 = VALUES
    a0, a1 = q0 * q1 + q2, 2 * q0 * q1 - q2
    expected = [a0 + a0 * a1, 3 * q0 * q1 * a0 - a1]
    assert np.allclose(evaluate(program, {"q": q})[0], expected, rtol=REL_TOL_RANDOM, atol=0)


@pytest.mark.parametrize("bad", ["x", [1.0], None])
def test_arithmetic_with_anything_else_is_refused(bad):
    with pytest.raises(TypeError):
        x + bad


def test_a_symbolic_run_leaves_no_reference_cycles():
    """What a run makes is freed by reference counting when the run is done: a cycle (a product
    keeping itself as its own key, a recursive closure holding CSE's memo) would keep it until the
    collector walks millions of objects (Talos' symbolic work 6.4 -> 5.5 s of CPU without them)."""
    import gc
    from rbdgen.codegen.programs import generate_program
    from rbdgen.table.functions import lookup
    from helpers import robot_model
    model = robot_model("ur5")
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.set_debug(gc.DEBUG_SAVEALL)
        for name in ("crba", "aba", "minv", "rnea_derivatives"):
            generate_program(model, lookup(name))
        gc.collect()
        expressions = [o for o in gc.garbage if isinstance(o, e.Expr)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert not expressions, f"{len(expressions)} expressions in reference cycles"
