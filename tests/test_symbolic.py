"""rbdgen.symbolic, the model parameters it takes, and SymPy as the truth for the expression graph.

The differential tests run each algorithm twice: recorded on the generator's expression graph
and optimized (what the C of a build is printed from), written as SymPy by rbdgen.symbolic; and
on SymPy scalars (rbdgen.symbolic.SympyOps), SymPy's own arithmetic. The two must be the same
function of the inputs, exactly: both are evaluated in exact rational arithmetic at random
rational points, every sine, cosine, square root and atan2 taken as an independent random
rational of its (exact) argument, so no identity the algorithm does not write (sin^2 + cos^2 = 1)
can hide a difference. The trees' constants are exact in binary with few bits (axis-aligned
joints, signed-permutation rotations, translations in sixteenths) and their inertias, gravity,
armature and damping are parameters, so that no rounding happens on either side.
"""

import random
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import sympy

import rbdgen
from rbdgen.errors import ModelError, RbdgenError
from rbdgen.model.joints import (EulerXYZ, EulerZYX, FreeFlyer, Helical, Planar, Prismatic, Revolute, Spherical,
                                 TranslationXYZ)
from rbdgen.model.parameters import model_parameters
from rbdgen.spatial import Transform
from rbdgen.symbolic import SympyOps, coordinate_names
from rbdgen.table.functions import BY_NAME

from trees import random_tree

sympy_symbolic = rbdgen.symbolic

# ---------------------------------------------------------------- exact trees -------------

_AXES = ((1, 0, 0), (0, 1, 0), (0, 0, 1), (-1, 0, 0), (0, -1, 0), (0, 0, -1))
_JOINTS = {
    "revolute": lambda rng: Revolute(_AXES[rng.integers(6)]),
    "continuous": lambda rng: Revolute(_AXES[rng.integers(6)], continuous=True),
    "prismatic": lambda rng: Prismatic(_AXES[rng.integers(6)]),
    "helical": lambda rng: Helical(_AXES[rng.integers(6)], int(rng.integers(-4, 5)) / 16),
    "spherical": lambda rng: Spherical(),
    "euler_zyx": lambda rng: EulerZYX(),
    "euler_xyz": lambda rng: EulerXYZ(),
    "translation": lambda rng: TranslationXYZ(),
    "planar": lambda rng: Planar(),
}


def signed_permutation(rng):
    E = np.zeros((3, 3))
    E[np.arange(3), rng.permutation(3)] = rng.choice((-1, 1), 3)
    return tuple(map(tuple, E))


def exact_inertia(rng):
    """An inertia whose entries are exact in binary with few bits (its physical validity
    does not matter here)."""
    from rbdgen.spatial import Inertia
    I = np.diag(rng.integers(16, 64, 3)) + np.triu(rng.integers(-4, 5, (3, 3)), 1)
    I = (I + I.T - np.diag(np.diag(I))) / 64
    h = tuple(int(x) / 16 for x in rng.integers(-4, 5, 3))
    return Inertia(int(rng.integers(1, 9)) / 4, h, tuple(map(tuple, I)))


def exact_tree(seed, kinds, floating_base=False):
    """A random tree whose joints are `kinds` (a free-flyer root first with floating_base),
    with constants exact in binary: axis-aligned axes, signed-permutation rotations,
    translations in sixteenths, inertias in sixty-fourths; a fixed body carrying inertia on
    some bodies."""
    rng = np.random.default_rng(seed)
    builder = rbdgen.ModelBuilder(f"exact{seed}")
    joints = ([FreeFlyer()] if floating_base else []) + [_JOINTS[kind](rng) for kind in kinds]
    for k, joint in enumerate(joints):
        parent = -1 if k == 0 else int(rng.integers(k))
        X = Transform(signed_permutation(rng), tuple(int(x) / 16 for x in rng.integers(-8, 9, 3)))
        builder.add_body(parent, joint, f"j{k}", f"body{k}", X_T=X, inertia=exact_inertia(rng))
        if rng.random() < 0.4:
            X = Transform(signed_permutation(rng), tuple(int(x) / 16 for x in rng.integers(-8, 9, 3)))
            builder.add_fixed_body(f"body{k}", f"fixed{k}", X_T=X, inertia=exact_inertia(rng))
    return builder.finish()


# ---------------------------------------------------------------- exact evaluation --------

class Point:
    """Random rational values of the inputs, and of every sine, cosine and atan2 by its exact
    argument (the same argument: the same value, on either side)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.values = {}
        self.calls = {}

    def rational(self):
        return sympy.Rational(self.rng.randint(-64, 64), self.rng.randint(1, 16))

    def of_symbol(self, s):
        if s not in self.values:
            self.values[s] = self.rational()
        return self.values[s]

    def of_call(self, name, args):
        key = (name, args)
        if key not in self.calls:
            self.calls[key] = self.rational()
        return self.calls[key]


def evaluate(x, point, env):
    """The exact value of a SymPy expression at `point`, symbols bound in `env` first."""
    if x.is_Symbol:
        return env[x] if x in env else point.of_symbol(x)
    if x.is_Number:
        return sympy.Rational(x)
    if x.is_Add:
        return sum((evaluate(a, point, env) for a in x.args), sympy.Integer(0))
    if x.is_Mul:
        result = sympy.Integer(1)
        for a in x.args:
            result *= evaluate(a, point, env)
        return result
    if x.is_Pow:
        assert x.exp.is_Rational, x
        return evaluate(x.base, point, env) ** x.exp   # a square root stays exact
    if isinstance(x, sympy.Piecewise):
        for value, condition in x.args:
            if condition is sympy.true or evaluate_condition(condition, point, env):
                return evaluate(value, point, env)
    if isinstance(x, (sympy.sin, sympy.cos, sympy.atan2)):
        return point.of_call(type(x).__name__, tuple(evaluate(a, point, env) for a in x.args))
    raise AssertionError(f"cannot evaluate {x!r}")


def evaluate_condition(condition, point, env):
    assert isinstance(condition, sympy.StrictLessThan), condition
    return evaluate(condition.lhs, point, env) < evaluate(condition.rhs, point, env)


def evaluate_cse(replacements, outputs, point):
    """The flat exact values of (replacements, outputs) in sympy.cse's format."""
    env = {}
    for target, value in replacements:
        env[target] = evaluate(value, point, env)
    flat = []
    for out in outputs:
        entries = sympy.flatten(out.tolist()) if isinstance(out, (sympy.MatrixBase, sympy.NDimArray)) else [out]
        flat += [evaluate(sympy.sympify(x), point, env) for x in entries]
    return flat


def sympy_truth(model, function, parameters):
    """The function's algorithm run on SymPy scalars (SymPy's arithmetic, per-line symbols):
    (replacements, [flat outputs]), inputs named as rbdgen.symbolic names them."""
    spec = BY_NAME[function]
    params = model_parameters(model, parameters)
    args = [[sympy.Symbol(name) for name in coordinate_names(name, size)] for name, size in spec.input_sizes(model)]
    on = params.model_with([sympy.Symbol(name) for name in params.names])
    ops = SympyOps(record=True)
    flat = []

    def flatten(x):
        if isinstance(x, (list, tuple)):
            for y in x:
                flatten(y)
        else:
            flat.append(sympy.sympify(x))

    flatten(spec.run(on, ops, *args))
    return ops.replacements, flat


def assert_equal_to_sympy(model, function, parameters, points=2):
    replacements, outputs = sympy_symbolic(model, function, parameters=parameters)
    truth = sympy_truth(model, function, parameters)
    for seed in range(points):
        point = Point(seed)
        graph = evaluate_cse(replacements, outputs, point)
        expected = evaluate_cse(truth[0], truth[1], point)
        assert len(graph) == len(expected)
        wrong = [k for k, (x, y) in enumerate(zip(graph, expected)) if x != y and sympy.simplify(x - y) != 0]
        assert not wrong, f"{function} of {model.name}: entries {wrong[:5]} differ from SymPy's ({graph[wrong[0]]} " \
                          f"against {expected[wrong[0]]})"


# ---------------------------------------------------------------- the graph against SymPy -

EVERY_PARAMETER = ["inertia:all", "gravity", "armature", "damping"]
TREES = {
    "revolute chain": lambda: exact_tree(1, ["revolute", "continuous", "helical"]),
    "every joint": lambda: exact_tree(2, list(_JOINTS)),
    "floating": lambda: exact_tree(3, ["revolute", "prismatic", "spherical"], floating_base=True),
}


@pytest.mark.parametrize("tree", sorted(TREES))
@pytest.mark.parametrize("function", ["rnea", "crba", "aba", "nle", "coriolis", "kinetic_energy", "com", "minv",
                                      "integrate", "difference"])
def test_graph_equals_sympy(tree, function):
    assert_equal_to_sympy(TREES[tree](), function, EVERY_PARAMETER)


@pytest.mark.parametrize("function", ["rnea", "crba", "aba", "com"])
def test_graph_equals_sympy_with_joint_origins(function):
    """The joints' origins as parameters too: every translation of the tree a symbol."""
    model = exact_tree(5, ["revolute", "prismatic", "spherical", "planar"])
    origins = [f"origin:{joint.name}" for joint in model.joints]
    assert_equal_to_sympy(model, function, EVERY_PARAMETER + origins)


def test_a_difference_is_found():
    """The comparison is not vacuous: one replacement changed by 2^-30 is a difference."""
    model = TREES["revolute chain"]()
    replacements, outputs = sympy_symbolic(model, "crba", parameters=EVERY_PARAMETER)
    target, value = replacements[len(replacements) // 2]
    replacements[len(replacements) // 2] = (target, value + sympy.Rational(1, 2**30))
    truth = sympy_truth(model, "crba", EVERY_PARAMETER)
    point = Point(0)
    assert evaluate_cse(replacements, outputs, point) != evaluate_cse(*truth, point)


def test_graph_equals_sympy_without_parameters():
    """The model's own numbers (exact in binary here) folded by the graph as by SymPy (aba is
    left out: it divides by numbers, which rounds, on either side in its own order)."""
    model = exact_tree(4, ["revolute", "prismatic", "euler_zyx", "planar"])
    for function in ("rnea", "crba", "coriolis"):
        assert_equal_to_sympy(model, function, [])


# ---------------------------------------------------------------- the two-link arm --------

def two_link_arm():
    """The planar two-link arm: joints about z, the elbow at (l1, 0, 0) on link 1; links' centres
    of mass on their x axes (numbers here, parameters in the tests)."""
    from rbdgen.spatial import Inertia
    builder = rbdgen.ModelBuilder("arm", gravity=(0, -9.81, 0))
    I = lambda m, c, izz: Inertia.from_com(m, (c, 0, 0), ((0, 0, 0), (0, 0, 0), (0, 0, izz)))
    builder.add_body(-1, Revolute((0, 0, 1)), "shoulder", "link1", inertia=I(1.0, 0.5, 0.1))
    builder.add_body(0, Revolute((0, 0, 1)), "elbow", "link2", X_T=Transform(r=(1.0, 0, 0)), inertia=I(2.0, 0.25, 0.2))
    return builder.finish()


def test_two_link_mass_matrix_is_the_textbooks():
    """M of the planar two-link arm with symbolic masses, inertias and lengths, in closed form:
    M11 = m1 lc1^2 + m2 (l1^2 + lc2^2 + 2 l1 lc2 cos q2) + I1 + I2, M12 = m2 (lc2^2 + l1 lc2 cos q2) + I2,
    M22 = m2 lc2^2 + I2 (I1, I2 about the centres of mass)."""
    replacements, (M,) = rbdgen.symbolic(two_link_arm(), "crba", parameters=["inertia:all", "origin:elbow"],
                                         closed_form=True)
    assert replacements == [] and M.shape == (2, 2)
    m1, m2, l1, lc1, lc2, I1, I2, q2 = sympy.symbols("m1 m2 l1 lc1 lc2 I1 I2 q2")
    S = sympy.Symbol
    # the parameters about the links' origins (Pinocchio's): Izz = I + m lc^2, m c_x = m lc
    textbook_parameters = {S("Izz_link1"): I1 + m1 * lc1**2, S("Izz_link2"): I2 + m2 * lc2**2, S("m_link2"): m2,
                           S("mcx_link2"): m2 * lc2, S("mcy_link2"): 0, S("origin_x_elbow"): l1, S("origin_y_elbow"): 0}
    textbook = sympy.Matrix([[m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * sympy.cos(q2)) + I1 + I2,
                              m2 * (lc2**2 + l1 * lc2 * sympy.cos(q2)) + I2],
                             [m2 * (lc2**2 + l1 * lc2 * sympy.cos(q2)) + I2, m2 * lc2**2 + I2]])
    assert sympy.simplify(M.subs(textbook_parameters) - textbook) == sympy.zeros(2, 2)


def test_two_link_gravity_in_closed_form():
    _, (g,) = rbdgen.symbolic(two_link_arm(), "gravity", parameters=["gravity"], closed_form=True)
    # dV/dq of V = -g . (m1 c1 + m2 c2) with the model's numbers m1 lc1 = 1/2, m2 = 2, m2 lc2 = 1/2, l1 = 1
    q1, q2, gx, gy = sympy.symbols("q1 q2 g_x g_y")
    half = sympy.Rational(1, 2)
    c = sympy.Matrix([half * sympy.cos(q1) + 2 * sympy.cos(q1) + half * sympy.cos(q1 + q2),
                      half * sympy.sin(q1) + 2 * sympy.sin(q1) + half * sympy.sin(q1 + q2)])
    V = -(gx * c[0] + gy * c[1])
    expected = sympy.Matrix([V.diff(q1), V.diff(q2)])
    assert sympy.simplify(sympy.expand_trig(g - expected)) == sympy.zeros(2, 1)


# ---------------------------------------------------------------- the front end ------------

def test_cse_form_evaluates_to_the_reference():
    """Panda's crba as SymPy (cse form) at a random state: the reference's M."""
    from helpers import assert_close, random_configuration, robot_model
    model = robot_model("panda")
    replacements, (M,) = rbdgen.symbolic(model, "crba")
    q = random_configuration(model, np.random.default_rng(0))
    values = {sympy.Symbol(f"q{k + 1}"): sympy.Float(x) for k, x in enumerate(q)}
    for target, value in replacements:
        values[target] = value.xreplace(values).evalf()
    actual = np.array(M.xreplace(values).evalf(), dtype=float)
    assert_close("panda crba from SymPy", actual, rbdgen.reference.crba(model, q), 1e-12)


def test_shapes_and_names():
    model = two_link_arm()
    replacements, (tau,) = rbdgen.symbolic(model, "rnea")
    assert tau.shape == (2, 1)
    free = set().union(*(value.free_symbols for _, value in replacements)) | tau.free_symbols
    assert {s.name for s in free} - {t.name for t, _ in replacements} == {"q1", "q2", "v1", "v2", "a1", "a2"}
    _, (M, nle) = rbdgen.symbolic(model, "eom")
    assert M.shape == (2, 2) and nle.shape == (2, 1)
    _, (C,) = rbdgen.symbolic(model, "christoffel")
    assert C.shape == (2, 2, 2)
    _, (energy,) = rbdgen.symbolic(model, "kinetic_energy")
    assert isinstance(energy, sympy.Expr)
    assert coordinate_names("q1", 3) == ["q1_1", "q1_2", "q1_3"] and coordinate_names("dt", 1) == ["dt"]


def test_front_end_errors(tmp_path):
    model = two_link_arm()
    with pytest.raises(RbdgenError, match="did you mean crba"):
        rbdgen.symbolic(model, "crab")
    with pytest.raises(RbdgenError, match="a function of a frame"):
        rbdgen.symbolic(model, "frame_placement")
    with pytest.raises(RbdgenError, match="no such file"):
        rbdgen.symbolic(tmp_path / "missing.urdf", "crba")


def test_a_urdf_path(tmp_path):
    from helpers import tiny_urdf, write_urdf
    path = write_urdf(tmp_path, tiny_urdf())
    replacements, (M,) = rbdgen.symbolic(path, "crba", parameters=["inertia:link2"])
    assert "m_link2" in {s.name for _, value in replacements for s in value.free_symbols} | \
        {s.name for s in M.free_symbols}
    _, (M,) = rbdgen.symbolic(path, "crba", floating_base=True)
    assert M.shape == (8, 8)
    with pytest.raises(RbdgenError, match="floating_base is for a robot's file"):
        rbdgen.symbolic(rbdgen.load_urdf(path), "crba", floating_base=True)


# ---------------------------------------------------------------- the parameters ---------

def test_parameter_names_and_nominal_values():
    from rbdgen.algorithms.regressor import parameters as regressor_parameters
    model = random_tree(5, 4)
    params = model_parameters(model, ["inertia:all", "gravity", "armature", "damping", f"origin:{model.joints[2].name}",
                                      "inertia:body1"])
    n = model.nbodies
    assert params.names[:10] == ("m_body0", "mcx_body0", "mcy_body0", "mcz_body0", "Ixx_body0", "Ixy_body0",
                                 "Iyy_body0", "Ixz_body0", "Iyz_body0", "Izz_body0")
    assert len(params) == 10 * n + 3 + 2 * model.nv + 3      # inertia:body1 again adds nothing
    assert params.names[10 * n:10 * n + 4] == ("g_x", "g_y", "g_z", "armature_1")
    assert params.names[-3:] == tuple(f"origin_{axis}_{model.joints[2].name}" for axis in "xyz")
    assert np.array_equal(params.nominal[:10 * n], regressor_parameters(model))
    assert params.nominal[10 * n:10 * n + 3] == tuple(model.gravity)
    assert params.nominal[-3:] == tuple(model.X_T[2].r)
    assert model_parameters(model, "gravity, damping").names == model_parameters(model, ["gravity", "damping"]).names


@pytest.mark.parametrize("seed, floating", [(6, False), (7, True)])
def test_nominal_values_give_the_model_back(seed, floating):
    """The algorithms on model_with(nominal) give the reference's values bit for bit."""
    from rbdgen.algorithms import NumericOps
    from trees import random_state
    model = random_tree(seed, 5, floating_base=floating)
    params = model_parameters(model, ["inertia:all", "gravity", "armature", "damping"] +
                              [f"origin:{j.name}" for j in model.joints])
    again = params.model_with(params.nominal)
    q, v, a = random_state(model, np.random.default_rng(seed))
    for function in ("rnea", "crba", "aba", "com", "kinetic_energy", "coriolis"):
        spec = BY_NAME[function]
        args = {"q": list(q), "v": list(v), "a": list(a), "tau": list(a)}
        inputs = [args[name] for name in spec.inputs]
        expected = np.array(spec.run(model, NumericOps, *inputs), dtype=float)
        assert np.array_equal(np.array(spec.run(again, NumericOps, *inputs), dtype=float), expected), function


def test_parameters_of_a_mimic_model(tmp_path):
    """A model with mimic joints takes them on its tree."""
    from helpers import write_urdf
    inertia = "<inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/>"
    text = f"""<robot name='m'><link name='base'/>
      <link name='a'><inertial><mass value='1'/>{inertia}</inertial></link>
      <link name='b'><inertial><mass value='2'/>{inertia}</inertial></link>
      <joint name='ja' type='revolute'><parent link='base'/><child link='a'/><axis xyz='0 0 1'/>
        <limit effort='1' velocity='1' lower='-1' upper='1'/></joint>
      <joint name='jb' type='revolute'><parent link='a'/><child link='b'/><origin xyz='0.5 0 0'/><axis xyz='0 0 1'/>
        <limit effort='1' velocity='1' lower='-1' upper='1'/><mimic joint='ja' multiplier='2'/></joint></robot>"""
    model = rbdgen.load_urdf(write_urdf(tmp_path, text), mimic=True)
    params = model_parameters(model, ["inertia:b"])
    assert params.nominal[0] == 2.0
    replacements, (M,) = rbdgen.symbolic(model, "crba", parameters=["inertia:b"], closed_form=True)
    assert M.shape == (1, 1) and sympy.Symbol("m_b") in M.free_symbols


def test_parameter_errors():
    model = two_link_arm()
    with pytest.raises(ModelError, match=r"no link 'lnk1'; did you mean 'link1'"):
        model_parameters(model, ["inertia:lnk1"])
    with pytest.raises(ModelError, match=r"no moving joint 'elbw'; did you mean 'elbow'"):
        model_parameters(model, ["origin:elbw"])
    with pytest.raises(ModelError, match=r"unknown parameter 'mass:link1'; the parameters are inertia:LINK"):
        model_parameters(model, ["mass:link1"])
    with pytest.raises(ModelError, match=r"no frame 'lnk1'; did you mean 'link1'"):
        model_parameters(model, ["payload:lnk1"])
    builder = rbdgen.ModelBuilder("fixed")
    builder.add_body(-1, Revolute((0, 0, 1)), "j", "arm")
    builder.add_fixed_body("arm", "tool")
    with pytest.raises(ModelError, match="link 'tool' is fixed to link 'arm'.*name inertia:arm"):
        model_parameters(builder.finish(), ["inertia:tool"])
    with pytest.raises(ModelError, match="expected 10, got 3"):
        model_parameters(model, ["inertia:link1"]).model_with([1, 2, 3])
