"""Configuration-space operations integrate and difference (rbdgen/algorithms/configuration.py).

1. Against Pinocchio's integrate and difference on example-robot-data robots (free-flyer:
   solo12, talos; revolute and prismatic: ur5, panda; continuous: kinova) and on a chain of
   every joint type Pinocchio has (the operations depend on the joint types only), with
   rotation angles past pi, where the free-flyer's quaternion changes hemisphere.
2. Identities on random trees with every joint type, fixed and floating: q (+) (q1 (-) q) = q1
   (the same rotations and angles), (q (+) v dt) (-) q = v dt while angles stay below pi,
   q (-) q = 0, v = 0 gives q, angles of exactly 0 and pi give no NaN (no NumPy warning), a
   batch of states agrees with the states one by one.
3. d/dt integrate(q, v, t) at t = 0 is each joint's tangent(q) v.
4. The scalar functions with a removable singularity against mpmath, near 0 and at the
   switch between series and closed form.
5. The symbolic path: integrate and difference recorded and optimized for trees with every
   joint type print as C, and the recorded program, evaluated on numbers, is the numeric run.
"""

import functools
import math

import mpmath
import numpy as np
import pinocchio as pin
import pytest

from helpers import (robot_model, REL_TOL_IDENTITY, REL_TOL_PINOCCHIO, assert_close, pinocchio_model,
                     random_configuration, to_pinocchio_q)
from rbdgen.algorithms import configuration
from rbdgen.algorithms import derivatives
from rbdgen.model import groups
from rbdgen.codegen.cprinter import SlotPrinter, slot_map
from rbdgen.codegen.optimize import optimize
from rbdgen.codegen import expr as symbolic
from rbdgen.codegen.evaluate import evaluate as evaluate_program
from rbdgen.codegen.recorder import Program, SinCos, record
from rbdgen.runtime.reference import OPS
from trees import ALL_JOINT_TYPES, random_tree

PIN_ROBOTS = ["solo12", "talos", "ur5", "panda", "kinova"]
TREES = {
    "tree-fixed": (911, len(ALL_JOINT_TYPES) + 1, False),
    "tree-floating": (912, len(ALL_JOINT_TYPES) + 2, True),
}
FD_STEP = 1e-6
FD_TOL = 1e-8
# the scalar functions against mpmath: a few ulp (the closed forms that cancel, (t - sin t)
# and 1 - h cot h, lose up to ~1e-15 just above the switch to them)
REL_TOL_SCALAR = 2e-15
# a batch against the same states one by one (NumPy's and libm's sin may differ by an ulp)
REL_TOL_BATCH = 1e-14
# the recorded program evaluated in doubles (another order of operations) against the numeric run
REL_TOL_SYMBOLIC = 1e-12
# a 0/0, x/0, NaN or overflow in a batch raises (an underflow to 0 is harmless)
NUMPY_ERRORS_RAISE = dict(divide="raise", invalid="raise", over="raise")


@functools.lru_cache(maxsize=None)
def tree_model(key):
    seed, nbodies, floating = TREES[key]
    return random_tree(seed, nbodies, ALL_JOINT_TYPES, floating_base=floating)


def integrate(model, q, v, dt=1.0):
    """configuration.integrate on one state (floats) or a batch (rows: states)."""
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    if q.ndim == 2:
        return np.stack(configuration.integrate(model, OPS, list(q.T), list(v.T), [dt]), axis=-1)
    return np.array(configuration.integrate(model, OPS, [float(x) for x in q], [float(x) for x in v], [float(dt)]))


def difference(model, q0, q1):
    q0, q1 = np.asarray(q0, dtype=float), np.asarray(q1, dtype=float)
    if q0.ndim == 2:
        return np.stack(configuration.difference(model, OPS, list(q0.T), list(q1.T)), axis=-1)
    return np.array(configuration.difference(model, OPS, [float(x) for x in q0], [float(x) for x in q1]))


def comparable(model, q):
    """q with each angle as (cos, sin) and each quaternion with w >= 0: equal for equal
    configurations."""
    out = []
    for joint in model.joints:
        x = np.asarray(q[joint.idx_q:joint.idx_q + joint.nq], dtype=float)
        if joint.type == "continuous":
            out += [math.cos(x[0]), math.sin(x[0])]
        elif joint.type == "planar":
            out += [x[0], x[1], math.cos(x[2]), math.sin(x[2])]
        elif joint.type in ("spherical", "free_flyer"):
            quat = x[-4:] * (1 if x[-1] >= 0 else -1)
            out += list(x[:-4]) + list(quat)
        else:
            out += list(x)
    return np.array(out)


def pinocchio_chain(model):
    """A Pinocchio chain with a joint of the same configuration space for each joint of
    `model` (integrate and difference depend on nothing else; euler_xyz, which Pinocchio
    lacks, is R^3 as SphericalZYX)."""
    kinds = {"revolute": pin.JointModelRX, "continuous": pin.JointModelRUBX, "prismatic": pin.JointModelPX,
             "spherical": pin.JointModelSpherical, "free_flyer": pin.JointModelFreeFlyer,
             "translation": pin.JointModelTranslation, "planar": pin.JointModelPlanar,
             "euler_zyx": pin.JointModelSphericalZYX, "euler_xyz": pin.JointModelSphericalZYX}
    pm, parent = pin.Model(), 0
    for joint in model.joints:
        pj = pin.JointModelHX(joint.model.pitch) if joint.type == "helical" else kinds[joint.type]()
        parent = pm.addJoint(parent, pj, pin.SE3.Identity(), joint.name)
    return pm


# the rotational velocity coordinates of the joints that rotate
ROTATIONS = {"spherical": slice(0, 3), "free_flyer": slice(3, 6), "planar": slice(2, 3), "continuous": slice(0, 1)}


def with_rotation_angles(model, v, angle):
    """v with every joint's rotation (rotation vector or angle) scaled to the length `angle`."""
    v = np.array(v, dtype=float)
    for joint in model.joints:
        if joint.type in ROTATIONS:
            part = v[joint.idx_v:joint.idx_v + joint.nv][ROTATIONS[joint.type]]
            part *= angle / np.linalg.norm(part)
    return v


def states(model, rng, count, scale):
    """(q0, q1, v): random configurations and velocities (standard normal times `scale`)."""
    return [(random_configuration(model, rng), random_configuration(model, rng), scale * rng.normal(size=model.nv))
            for _ in range(count)]


# ===================================================================== against Pinocchio ===

def check_against_pinocchio(tag, model, pm, cases):
    for k, (q0, q1, v) in enumerate(cases):
        pq0, pq1 = to_pinocchio_q(model, q0), to_pinocchio_q(model, q1)
        for dt in (1.0, 0.3):
            assert_close(f"{tag} state {k}: integrate dt={dt}", to_pinocchio_q(model, integrate(model, q0, v, dt)),
                         pin.integrate(pm, pq0, v * dt), REL_TOL_PINOCCHIO)
        assert_close(f"{tag} state {k}: difference", difference(model, q0, q1), pin.difference(pm, pq0, pq1),
                     REL_TOL_PINOCCHIO)


@pytest.mark.parametrize("name", PIN_ROBOTS)
def test_robots_match_pinocchio(name):
    model = robot_model(name)
    check_against_pinocchio(name, model, pinocchio_model(name), states(model, np.random.default_rng(1), 3, 3.0))


@pytest.mark.parametrize("key", list(TREES))
def test_every_joint_type_matches_pinocchio(key):
    """Rotation angles up to ~10 (past pi: Pinocchio's free-flyer keeps the result's
    quaternion in the hemisphere of q, its spherical joint does not), and differences of
    configurations whose relative rotations are all pi - 1e-9 or 1e-9."""
    model = tree_model(key)
    pm = pinocchio_chain(model)
    rng = np.random.default_rng(2)
    cases = states(model, rng, 6, 3.0)
    for angle in (math.pi - 1e-9, 1e-9):
        q0, _, v = cases[0]
        cases.append((q0, integrate(model, q0, with_rotation_angles(model, v, angle)), v))
    check_against_pinocchio(key, model, pm, cases)


# ============================================================================ identities ===

@pytest.mark.parametrize("key", list(TREES))
def test_integrate_of_difference_is_the_target(key):
    model = tree_model(key)
    for k, (q0, q1, _) in enumerate(states(model, np.random.default_rng(3), 5, 1.0)):
        q = integrate(model, q0, difference(model, q0, q1))
        assert_close(f"{key} state {k}: q0 (+) (q1 (-) q0)", comparable(model, q), comparable(model, q1),
                     REL_TOL_IDENTITY)


@pytest.mark.parametrize("key", list(TREES))
@pytest.mark.parametrize("dt", [0.5, 1e-3, 1e-8, 1e-14])
def test_difference_of_integrate_is_the_step(key, dt):
    """Steps with every angle below pi; q1 carries rounding errors of order eps, so tiny
    steps are compared absolutely (1e-14)."""
    model = tree_model(key)
    for k, (q0, _, v) in enumerate(states(model, np.random.default_rng(4), 5, 1.0)):
        q1 = integrate(model, q0, v, dt)
        assert_close(f"{key} state {k}: (q0 (+) v dt) (-) q0, dt={dt}", difference(model, q0, q1), v * dt,
                     REL_TOL_IDENTITY, abs_floor=1e-5)


@pytest.mark.parametrize("key", list(TREES))
def test_zero_steps(key):
    """q (-) q = 0 and q (+) 0 = q, on floats (0/0 would raise) and a batch (NumPy errors raise)."""
    model = tree_model(key)
    rng = np.random.default_rng(5)
    for k, (q0, _, _) in enumerate(states(model, rng, 3, 1.0)):
        assert np.abs(difference(model, q0, q0)).max() <= 4 * np.finfo(float).eps, f"{key} state {k}: q (-) q"
        for dt in (1.0, 0.0):
            assert_close(f"{key} state {k}: q (+) 0, dt={dt}", integrate(model, q0, np.zeros(model.nv), dt), q0,
                         REL_TOL_IDENTITY)
    neutral = np.concatenate([j.model.neutral() for j in model.joints])
    assert_close(f"{key}: neutral (+) 0", integrate(model, neutral, np.zeros(model.nv)), neutral, 0.0)
    assert_close(f"{key}: neutral (-) neutral", difference(model, neutral, neutral), np.zeros(model.nv), 0.0)
    with np.errstate(**NUMPY_ERRORS_RAISE):
        q = np.stack([neutral, neutral])
        assert_close(f"{key}: batch neutral (+) 0", integrate(model, q, np.zeros((2, model.nv))), q, 0.0)
        assert_close(f"{key}: batch neutral (-) neutral", difference(model, q, q), np.zeros((2, model.nv)), 0.0)


@pytest.mark.parametrize("key", list(TREES))
def test_batch_matches_single_states(key):
    """Lanes that take different formulas in one batch: zero, tiny, ordinary and large steps,
    equal configurations and relative rotations of pi (up to rounding)."""
    model = tree_model(key)
    rng = np.random.default_rng(6)
    cases = states(model, rng, 4, 1.0)
    q0, q1, v = (np.array(x) for x in zip(*cases))
    v = v * np.array([0.0, 1e-9, 1.0, 4.0])[:, None]
    q1[1] = q0[1]
    q1[2] = integrate(model, q0[2], with_rotation_angles(model, v[2], math.pi))
    with np.errstate(**NUMPY_ERRORS_RAISE):
        qi, d = integrate(model, q0, v, 0.7), difference(model, q0, q1)
    for k in range(len(cases)):
        assert_close(f"{key} lane {k}: integrate", qi[k], integrate(model, q0[k], v[k], 0.7), REL_TOL_BATCH)
        assert_close(f"{key} lane {k}: difference", d[k], difference(model, q0[k], q1[k]), REL_TOL_BATCH)
    assert np.isfinite(d).all() and np.isfinite(qi).all()


@pytest.mark.parametrize("key", list(TREES))
def test_integrate_moves_along_the_tangent(key):
    """d/dt q(t) at t = 0, q(t) = integrate(q, v, t), is tangent(q) v joint by joint."""
    model = tree_model(key)
    for k, (q0, _, v) in enumerate(states(model, np.random.default_rng(7), 3, 1.0)):
        rate = (integrate(model, q0, v, FD_STEP) - integrate(model, q0, v, -FD_STEP)) / (2 * FD_STEP)
        expected = np.zeros(model.nq)
        for joint in model.joints:
            T = np.array(joint.model.tangent(OPS, list(q0[joint.idx_q:joint.idx_q + joint.nq])), dtype=float)
            expected[joint.idx_q:joint.idx_q + joint.nq] = T.reshape(joint.nq, joint.nv) @ \
                v[joint.idx_v:joint.idx_v + joint.nv]
        assert_close(f"{key} state {k}: d/dt integrate = tangent v", rate, expected, FD_TOL)


# ======================================================================= scalar functions ===

# 0, tiny angles, both sides of each switch between series and closed form (t^2 = 1e-6,
# s^2 = 1e-10, h^2 = 0.5, t^2 = 1), up to pi/2 (the largest half angle) and beyond
ANGLES = [0.0, 1e-300, 1e-160, 1e-20, 1e-8, 1e-5 * (1 - 1e-9), 1e-5 * (1 + 1e-9), 1e-3 * (1 - 1e-12), 1e-3,
          2e-3, 0.1, 0.5, math.sqrt(0.5) * (1 - 1e-12), math.sqrt(0.5), 0.9, 1 - 1e-12, 1.0, 1.1, 1.5,
          math.pi / 2, 2.0, 3.0]


def _sin(t):
    return np.sin(t) if isinstance(t, np.ndarray) else math.sin(t)


def _cos(t):
    return np.cos(t) if isinstance(t, np.ndarray) else math.cos(t)


def _log_of_half_angle(h):
    """The rotation log of the quaternion (0, 0, sin h, cos h) as floats."""
    return groups.rotation_log(OPS, [0 * h, 0 * h, _sin(h), _cos(h)])


def _half_angle_exact(h):
    """The angle the log should see: atan2 of those floats, in mpmath."""
    return mpmath.atan2(mpmath.mpf(_sin(h)), mpmath.mpf(_cos(h)))


def _ratio(h):
    return _log_of_half_angle(h).half_angle_over_sin


def _ratio_exact(h):
    return _half_angle_exact(h) / _sin(h) if h else mpmath.mpf(1)


def _gamma(h):
    log = _log_of_half_angle(h)
    return groups.log_defect(OPS, log.half_angle, log.half_angle_over_sin * log.cos_half)


def _gamma_exact(h):
    h = _half_angle_exact(h)
    return (1 - h * mpmath.cot(h)) / (4 * h * h) if h else mpmath.mpf(1) / 12


# name: (numeric function of an angle (float or array), exact value, largest angle, tolerance)
SCALAR_CASES = {
    "sin t / t": (lambda t: groups.sinc(OPS, t, _sin(t)),
                  lambda t: mpmath.sin(t) / t if t else mpmath.mpf(1), math.inf, REL_TOL_SCALAR),
    "(t - sin t) / t^3": (lambda t: groups.sin_defect(OPS, t, t * t, _sin(t)),
                          lambda t: (t - mpmath.sin(t)) / mpmath.mpf(t) ** 3 if t else mpmath.mpf(1) / 6,
                          math.inf, REL_TOL_SCALAR),
    "log: (t/2) / sin(t/2)": (_ratio, _ratio_exact, math.pi / 2, REL_TOL_SCALAR),
    "log: (1 - h cot h) / 4 h^2": (_gamma, _gamma_exact, math.pi / 2, REL_TOL_SCALAR),
}


@pytest.mark.parametrize("name", list(SCALAR_CASES))
def test_scalar_functions_against_mpmath(name):
    """Floats and a batch, every angle from 0 through the switches between series and closed
    form up to pi/2 and beyond, the inputs computed in floating point as the algorithms do."""
    numeric, exact, largest, tol = SCALAR_CASES[name]
    angles = [a for a in ANGLES if a <= largest]
    with np.errstate(**NUMPY_ERRORS_RAISE):
        batch = numeric(np.array(angles))
    for k, t in enumerate(angles):
        # the cancellations in the exact formulas need ~2 log10(1/t) more digits
        with mpmath.workdps(40 + 2 * max(0, -math.floor(math.log10(t))) if t else 40):
            expected = float(exact(t))
        value = numeric(t)
        assert abs(value - expected) <= tol * abs(expected), f"{name} at {t!r}: {value!r} != {expected!r}"
        assert abs(batch[k] - expected) <= tol * abs(expected), f"{name} (batch) at {t!r}: {batch[k]!r}"


def test_if_less_evaluates_and_prints():
    x, y = symbolic.Symbol("q_0"), symbolic.Symbol("q_1")
    expr = symbolic.if_less(x * x, 1e-6, 1 + x, y / x)
    program = Program({"q": [x, y]}, [], [expr], (1,))
    assert evaluate_program(program, {"q": np.array([[0.0, 0.0], [2.0, 3.0]])}).tolist() == [[1.0], [1.5]]
    assert symbolic.if_less(x, 0, y, y) == y
    assert symbolic.if_less(0.5, 1, x, y) == x
    text = SlotPrinter({x: "q[0]", y: "q[1]"}).expression(expr)
    assert text.startswith("((q[0]*q[0]) < 1e-06 ? ") and text.count("?") == 1, text


# ========================================================================== symbolic path ===

def evaluate(program, values):
    """Run a recorded straight-line program on numbers (doubles, in the order of its C)."""
    return evaluate_program(program, {name: np.atleast_2d(np.asarray(x, dtype=float)) for name, x in values.items()})[0]


@pytest.mark.parametrize("key", list(TREES))
def test_symbolic_run_prints_and_matches(key):
    model = tree_model(key)
    programs = {
        "integrate": optimize(record(lambda ops, q, v, dt: configuration.integrate(model, ops, q, v, dt),
                                     [("q", model.nq), ("v", model.nv), ("dt", 1)], (model.nq,))),
        "difference": optimize(record(lambda ops, q, q1: configuration.difference(model, ops, q, q1),
                                      [("q", model.nq), ("q1", model.nq)], (model.nv,))),
    }
    for name, program in programs.items():
        printer = SlotPrinter(slot_map(program))
        text = [printer.expression(st.arg if isinstance(st, SinCos) else st.expr) for st in program.statements]
        text += [printer.expression(e) for e in program.outputs]
        assert any("?" in line for line in text) and not any("IfLess" in line for line in text), name
        assert 0 < program.counts["operations"] < 1000, (name, program.counts)
    rng = np.random.default_rng(8)
    (q0, q1, v), = states(model, rng, 1, 1.0)
    for tag, step in (("v", v), ("4 v", 4 * v), ("v = 0", 0 * v)):
        assert_close(f"{key} symbolic integrate, {tag}",
                     evaluate(programs["integrate"], {"q": q0, "v": step, "dt": [0.7]}),
                     integrate(model, q0, step, 0.7), REL_TOL_SYMBOLIC)
    for tag, target in (("q1", q1), ("q1 = q", q0), ("q1 near q", integrate(model, q0, v, 1e-3))):
        assert_close(f"{key} symbolic difference, {tag}", evaluate(programs["difference"], {"q": q0, "q1": target}),
                     difference(model, q0, target), REL_TOL_SYMBOLIC)


# ===================================================================== dual numbers ===

@pytest.mark.parametrize("key", list(TREES))
def test_dual_numbers_differentiate_difference(key):
    """difference run on dual numbers (DualOps' sqrt, atan2 and select): its derivative along
    a path q1(t) = integrate(q1, v, t) is the finite difference; a batch is its states one by
    one, and the recorded program evaluated on numbers is the floats' run."""
    model = tree_model(key)
    rng = np.random.default_rng(9)
    cases = states(model, rng, 3, 1.0)

    def run(model, ops, q, q1):
        return configuration.difference(model, ops, q, q1)

    def jacobian(q0, q1):   # d difference / d q1 (nv x nq), q1 seeded entry by entry
        block, = derivatives.derivatives_of(model, OPS, run, [("q", list(q0)), ("q1", list(q1))], ["q1"])
        return block

    for k, (q0, q1, v) in enumerate(cases):
        J = np.array(jacobian([float(x) for x in q0], [float(x) for x in q1]), dtype=float)
        ahead, behind = integrate(model, q1, v, FD_STEP), integrate(model, q1, v, -FD_STEP)
        rate = (difference(model, q0, ahead) - difference(model, q0, behind)) / (2 * FD_STEP)
        assert_close(f"{key} state {k}: d difference", J @ ((ahead - behind) / (2 * FD_STEP)), rate, FD_TOL)
    q0s, q1s = np.array([c[0] for c in cases]), np.array([c[1] for c in cases])
    batch = jacobian(list(q0s.T), list(q1s.T))
    program = record(lambda ops, q, q1: [x for row in derivatives.derivatives_of(
        model, ops, run, [("q", q), ("q1", q1)], ["q1"])[0] for x in row],
        [("q", model.nq), ("q1", model.nq)], (model.nv, model.nq))
    for k in range(len(cases)):
        single = np.array(jacobian([float(x) for x in q0s[k]], [float(x) for x in q1s[k]]), dtype=float)
        lane = np.array([[np.broadcast_to(x, (len(cases),))[k] for x in row] for row in batch])
        assert_close(f"{key} lane {k}: d difference", lane, single, REL_TOL_BATCH)
        assert_close(f"{key} state {k}: recorded d difference", evaluate(program, {"q": q0s[k], "q1": q1s[k]}),
                     single, REL_TOL_SYMBOLIC)
