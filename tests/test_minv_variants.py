"""M^-1's variants (rbdgen/algorithms/minv.py) are M^-1: on numbers, against the table's
algorithm and against extended precision, on random trees (branches, every joint kind, a
free-flyer) and the example robots; and the generator's choice keeps one of them within
budget on a floating base.

minv_across_branches writes the entries between two branches as one dot product of the
backward pass's impulse with the common ancestor's acceleration, and sets the exact zeros of
I^a for axis-aligned joints: it is at least as accurate as the table's algorithm.
"""

import mpmath
import numpy as np
import pytest

from helpers import robot_model
from rbdgen.algorithms import minv
from rbdgen.runtime.accuracy import ExtendedOps
from rbdgen.runtime.reference import OPS
from trees import random_state, random_tree

VARIANTS = (minv.minv_across_branches, minv.minv_across_branches_in_fixed_frame)
TREES = [(1, False), (2, True), (3, True), (4, False)]
ROBOTS = ["ur5", "panda", "solo12", "talos"]


def _truth(model, q):
    with mpmath.workdps(40):
        values = minv.minv(model, ExtendedOps, [mpmath.mpf(float(x)) for x in q])
        return np.array([[float(x) for x in row] for row in values])


def _relative(a, b):
    return np.abs(np.asarray(a, dtype=float) - b).max() / np.abs(b).max()


@pytest.mark.parametrize("seed, floating, roots", [(s, f, 1) for s, f in TREES] + [(5, False, 3)])
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda f: f.__name__)
def test_variant_is_minv_on_random_trees(variant, seed, floating, roots):
    """... and on a forest (three bodies on a fixed base: no common ancestor between trees)."""
    model = random_tree(seed, 9, floating_base=floating, roots=roots)
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q, _, _ = random_state(model, rng)
        truth = _truth(model, q)
        got = np.array(variant(model, OPS, q), dtype=float)
        assert np.array_equal(got, got.T)
        assert _relative(got, truth) <= 1e-13 * max(1.0, np.linalg.cond(truth) / 1e3)
        assert _relative(got, np.linalg.inv(np.linalg.inv(truth))) <= 1e-12


@pytest.mark.parametrize("name", ROBOTS)
def test_across_branches_keeps_the_table_digits(name):
    model = robot_model(name)
    rng = np.random.default_rng(7)
    for _ in range(2):
        q, _, _ = random_state(model, rng)
        truth = _truth(model, q)
        reference = _relative(minv.minv(model, OPS, q), truth)
        got = _relative(minv.minv_across_branches(model, OPS, q), truth)
        assert got <= max(2 * reference, 1e-15), (got, reference)
        assert _relative(minv.minv_across_branches_in_fixed_frame(model, OPS, q), truth) <= 1e-13


def test_floating_base_keeps_a_cheaper_variant():
    """On a tree with branches, M^-1 across branches is tried first and kept (the others are
    not generated), with fewer operations than the table's algorithm."""
    import dataclasses
    import warnings
    from rbdgen.codegen.programs import generate_program
    from rbdgen.table.functions import BY_NAME
    model = robot_model("solo12")
    choice = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generate_program(model, BY_NAME["minv"], choice=choice)
        table = generate_program(model, dataclasses.replace(BY_NAME["minv"], variants=()))
    assert list(choice["candidates"]) == ["minv_across_branches"]
    assert choice["kept"] == "minv_across_branches"
    assert choice["candidates"]["minv_across_branches"]["operations"] < 0.85 * table.counts["operations"]
    assert choice["error"] <= choice["budget"] / 4


def test_a_forest_keeps_across_branches():
    """A fixed base with several bodies on it (every humanoid built without --floating-base):
    the generator's choice finishes, with M^-1 across branches tried first, and keeps a
    program within its budget (on this ill-conditioned random tree, the most accurate)."""
    import warnings
    from rbdgen.codegen.programs import generate_program
    from rbdgen.table.functions import BY_NAME
    model = random_tree(5, 9, floating_base=False, roots=3)
    assert minv.has_branches(model) and sum(p < 0 for p in model.parent) == 3
    choice = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generate_program(model, BY_NAME["minv"], choice=choice)
    assert list(choice["candidates"])[0] == "minv_across_branches"
    assert choice["error"] <= choice["budget"]
