"""Digits (issue 16): the model keeps the URDF's rotations rigid, every variant a build keeps is
within the accuracy budget, verification arbitrates by extended precision, and the robots
that lost digits before (xarm7, iCub) build and agree with Pinocchio."""

import os
import warnings

import mpmath
import numpy as np
import pytest

import rbdgen
from rbdgen.algorithms import minv as minv_algorithms
from rbdgen.algorithms import mimic as algorithms
from rbdgen.codegen.programs import SELECTION_MARGIN, generate_program
from rbdgen.codegen.evaluate import evaluate
from rbdgen.table.functions import BY_NAME
from rbdgen.model.joints import snap_orthonormal
from rbdgen.model.urdf import rpy_to_rotation
from rbdgen.runtime import accuracy, verify
from rbdgen.runtime.accuracy import ExtendedOps, Yardstick, forward_errors
from rbdgen.runtime.pinocchio_bridge import pinocchio_model
from rbdgen.runtime.reference import OPS
from rbdgen.runtime.verify import random_inputs

from helpers import robots_dir, to_pinocchio_q

# Normwise relative differences from Pinocchio: both sides are accurate to ~1e-15 here, except
# in the solves, where Pinocchio's error grows as eps cond(M) (iCub reduced: cond(M) 6e7 at one
# state, Pinocchio's M^-1 1.6e-10 from extended precision, ours 2e-15).
REL_TOL_PIN = 1e-12
SOLVE_FACTOR = 100       # x eps cond(M)
# Two algorithms for the same quantity, in extended precision on the same model: the model's
# rotations are orthonormal to rounding (1e-16), so they agree to about that.
REL_TOL_CONSISTENT = 1e-14

XARM7 = ("xarm_description/urdf/xarm7.urdf", False)
SO101 = ("so_arm_description/urdf/so101.urdf", False)
ICUB = ("icub_description/robots/icub_reduced.urdf", True)


def load(robot):
    path, floating = robot
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rbdgen.load_urdf(os.path.join(robots_dir(), path), floating_base=floating)


def extended(function, model, *arrays):
    """`function(model, ops, *arrays)` in 40 digits, rounded to double."""
    with mpmath.workdps(accuracy.DIGITS):
        values = function(model, ExtendedOps, *[[mpmath.mpf(float(x)) for x in a] for a in arrays])
    return np.array([[float(x) for x in row] for row in values] if isinstance(values[0], list)
                    else [float(x) for x in values])


def relative(actual, expected):
    return float(forward_errors(np.ravel(actual)[None], np.ravel(expected)[None])[0])


# ------------------------------------------------------------------ the model --------------

def test_snapping_keeps_rotations_orthonormal():
    """pi/2 written as 1.57079632679 leaves 4.9e-12 entries: exact zeros when the rotation is
    a signed permutation, kept when it also turns about two other axes (zeroing them alone
    would leave the rows orthogonal only to 5e-12)."""
    def defect(E):
        E = np.array(E, dtype=float)
        return np.abs(E @ E.T - np.eye(3)).max()
    quarter = snap_orthonormal(rpy_to_rotation(1.57079632679, 0, 0))
    assert all(isinstance(x, int) for row in quarter for x in row) and defect(quarter) == 0
    mixed = rpy_to_rotation(1.57079632679, 0.2, 0.3)
    snapped = snap_orthonormal(mixed)
    assert defect(snapped) <= 4 * accuracy.EPS
    assert any(0 < abs(x) < 1e-10 for row in snapped for x in row)   # the small entries stay
    exact = snap_orthonormal(rpy_to_rotation(np.pi / 2, 0.2, 0.3))     # rounding residues (6e-17) go
    assert defect(exact) <= 4 * accuracy.EPS and exact[2][2] == 0


def test_algorithms_describe_one_robot_in_extended_precision():
    """With rigid rotations, CRBA and ABA (so101) and M^-1 in body and in fixed coordinates
    (xarm7) agree to rounding in 40 digits; with entries snapped to zero alone they differed
    by 7e-12 and 1.5e-10, and rbdgen's M by 1.4e-11 from Pinocchio's."""
    import pinocchio as pin
    model = load(SO101)
    inputs = random_inputs(model, np.random.default_rng(5), 2)
    pm = pinocchio_model(os.path.join(robots_dir(), SO101[0]), False)
    for q, v, tau in zip(inputs["q"], inputs["v"], inputs["tau"]):
        M, nle = extended(algorithms.crba, model, q), extended(algorithms.nle, model, q, v)
        qdd = extended(algorithms.aba, model, q, v, tau)
        assert relative(M @ qdd + nle, tau) <= REL_TOL_CONSISTENT
        M_pin = pin.crba(pm, pm.createData(), to_pinocchio_q(model, q))
        assert relative(M, np.triu(M_pin) + np.triu(M_pin, 1).T) <= REL_TOL_CONSISTENT
    model = load(XARM7)
    for q in random_inputs(model, np.random.default_rng(6), 2)["q"]:
        assert relative(extended(minv_algorithms.minv_in_fixed_frame, model, q),
                        extended(minv_algorithms.minv, model, q)) <= REL_TOL_CONSISTENT


# ------------------------------------------------------------------ measuring --------------

def test_fixed_frame_minv_loses_digits_on_xarm7():
    """Measured against extended precision, M^-1 with every inertia about the root's origin
    loses two to three digits on xarm7 that body coordinates keep: over the budget."""
    model, spec = load(XARM7), BY_NAME["minv"]
    states = random_inputs(model, np.random.default_rng(7), 3)
    yardstick = Yardstick(model, spec, {"q": states["q"]})
    assert yardstick.reference_error < 1e-15 and yardstick.budget == accuracy.FLOOR
    fixed = np.array([np.array(minv_algorithms.minv_in_fixed_frame(model, OPS, list(q)), dtype=float)
                      for q in states["q"]])
    assert yardstick.error(fixed) > yardstick.budget


def test_programs_evaluate_as_their_algorithm():
    """The double-precision evaluation of an optimized program (what the generator measures)
    equals the reference to rounding, here for the longest default program of a small robot."""
    model, spec = load(XARM7), BY_NAME["aba"]
    states = random_inputs(model, np.random.default_rng(8), 5)
    inputs = {name: states[name] for name in spec.inputs}
    values = evaluate(generate_program(model, spec), inputs)
    assert float(forward_errors(values, accuracy.double_values(model, spec, inputs)).max()) <= accuracy.FLOOR


def test_generator_keeps_the_cheapest_accurate_program():
    """minv on xarm7: the fixed-frame program is shorter than the body-frame one and loses
    digits, so it is not kept; of the accurate ones (the body frame, as the table's passes and
    with the entries across branches as dot products, and the factors of M with the solve
    after the program) the cheapest is; what was measured is returned."""
    model, spec = load(XARM7), BY_NAME["minv"]
    choice = {}
    program = generate_program(model, spec, choice=choice)
    fixed, body = choice["candidates"]["minv_in_fixed_frame"], choice["candidates"]["minv"]
    assert fixed["operations"] < body["operations"] and fixed["error"] > choice["budget"] >= body["error"]
    accurate = {name: c for name, c in choice["candidates"].items() if c["error"] <= choice["budget"] / SELECTION_MARGIN}
    assert set(accurate) == {"minv", "minv_across_branches", "factors_of_m"}
    assert choice["kept"] == min(accurate, key=lambda name: accurate[name]["cost"])
    assert program.counts["operations"] == accurate[choice["kept"]]["operations"]


# ------------------------------------------------------------------ verification -----------

def _check(actual, expected, truth):
    return verify.Check("f", np.array([actual]), np.array([expected]), truth=lambda states: np.array([truth]))


def test_verification_arbitrates_by_extended_precision():
    """Apart by more than 100 eps: the module passes when its own error is within the budget
    of the reference's, whichever of the two rounded worse, and fails, in one line that names
    the error and the bound, when it lost digits the reference kept."""
    truth = np.array([1.0, 2.0, 3.0])
    shaky_reference = truth + np.array([3e-12, 0, 0])
    verdict = verify.judge(_check(truth + 1e-15, shaky_reference, truth))
    assert verdict["ok"] and verdict["error"] > accuracy.FLOOR and verdict["truth_error"] < verdict["bound"]
    verdict = verify.judge(_check(truth + np.array([0, 4e-12, 0]), truth, truth))
    assert not verdict["ok"]
    line = verify.failure_line("minv", verdict)
    assert "\n" not in line and "1.3e-12" in line and "2.2e-14" in line
    assert verify.judge(_check(truth + 1e-17, truth, truth)) == {"error": pytest.approx(1e-17 / 3, rel=0.5), "ok": True}
    assert not verify.judge(_check(np.array([np.nan, 2, 3]), truth, truth))["ok"]


# ------------------------------------------------------------------ the robots -------------

VARIANT_FUNCTIONS = ["crba", "aba", "minv", "coriolis", "centroidal_map", "rnea_derivatives", "aba_derivatives",
                     "gravity_derivatives"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """xarm7 with every function that carries variants or a root-frame formulation, and the
    floating iCub (nv = 35) with those of a default build: cond(M) 1e4 and 3e5."""
    out = str(tmp_path_factory.mktemp("accuracy"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "xarm7": rbdgen.build(os.path.join(robots_dir(), XARM7[0]), out_dir=out, algorithms=VARIANT_FUNCTIONS),
            "icub": rbdgen.build(os.path.join(robots_dir(), ICUB[0]), out_dir=out, floating_base=True,
                                 algorithms=VARIANT_FUNCTIONS[:5]),
        }


def _pinocchio_values(pin, pm, name, q, v, a, tau):
    pd = pm.createData()
    symmetric = lambda M: np.triu(M) + np.triu(M, 1).T
    return {"crba": lambda: symmetric(pin.crba(pm, pd, q)), "aba": lambda: pin.aba(pm, pd, q, v, tau),
            "minv": lambda: symmetric(pin.computeMinverse(pm, pd, q)),
            "coriolis": lambda: pin.computeCoriolisMatrix(pm, pd, q, v),
            "centroidal_map": lambda: pin.ccrba(pm, pd, q, v),
            # from Data, whose matrices start zeroed: the returned copies are not all written
            "rnea_derivatives": lambda: (pin.computeRNEADerivatives(pm, pd, q, v, a), (pd.dtau_dq, pd.dtau_dv))[1],
            "aba_derivatives": lambda: (pin.computeABADerivatives(pm, pd, q, v, tau),
                                        (pd.ddq_dq, pd.ddq_dv, symmetric(pd.Minv)))[1],
            "gravity_derivatives": lambda: pin.computeGeneralizedGravityDerivatives(pm, pd, q)}[name]()


@pytest.mark.parametrize("robot", ["xarm7", "icub"])
def test_ill_conditioned_robots_build_and_match_pinocchio(built, robot):
    import pinocchio as pin
    path, floating = XARM7 if robot == "xarm7" else ICUB
    module, model = built[robot], load((path, floating))
    pm = pinocchio_model(os.path.join(robots_dir(), path), floating)
    states = random_inputs(model, np.random.default_rng(9), 3)
    for q, v, a, tau in zip(states["q"], states["v"], states["a"], states["tau"]):
        args = {"q": q, "v": v, "a": a, "tau": tau}
        cond = np.linalg.cond(module.crba(q))
        for name in module.operation_counts:
            ours = getattr(module, name)(*(args[k] for k in BY_NAME[name].inputs))
            theirs = _pinocchio_values(pin, pm, name, to_pinocchio_q(model, q), v, a, tau)
            for x, y in zip(*((ours, theirs) if isinstance(ours, tuple) else ((ours,), (theirs,)))):
                tol = max(REL_TOL_PIN, SOLVE_FACTOR * accuracy.EPS * cond if BY_NAME[name].solves else 0)
                assert relative(x, y) <= tol, (robot, name, relative(x, y))


def test_kept_programs_are_within_budget(built):
    """model.json records, per function with variants, what was measured and kept: the kept
    program is within its budget divided by SELECTION_MARGIN (what the choice asks, for states it
    did not see), and M^-1 on xarm7 is not the fixed-frame program, which loses digits."""
    import json
    for robot, module in built.items():
        with open(os.path.join(os.path.dirname(module.__file__), "model.json")) as f:
            functions = json.load(f)["functions"]
        for name, entry in functions.items():
            choice = entry.get("accuracy")
            if choice:
                assert choice["error"] <= choice["budget"] / SELECTION_MARGIN, (robot, name, choice)
        assert functions["minv"]["accuracy"]["kept"] != "minv_in_fixed_frame" or robot != "xarm7"
