"""Derivatives with respect to the model parameters (issue 33): rnea_parameter_derivatives and
aba_parameter_derivatives, and the CasADi and JAX functions' Jacobians in params.

UR5 is built once with parameters inertia:all, gravity and armature (69 of them).

1. A default build of a model with parameters has both functions; a build without parameters
   leaves them out, and naming them there is a one-line error.
2. Both equal central differences of the module's rnea / aba in params, at random physical
   parameters; rnea's inertial columns equal Pinocchio's joint-torque regressor (nominal
   parameters), and its armature columns are a (diagonal).
3. Panda (103 parameters) and Solo12 (130) keep aba_parameter_derivatives' product with M^-1,
   or its solves with M's factors, as a loop after the program: against -M^-1 d rnea / d
   params with NumPy's solve, central differences, and batches of per-state parameters.
4. CasADi's rnea and aba take params last; their Jacobian blocks in params equal the
   derivative functions and central differences.
5. JAX's rnea and aba take params (positionally last or by keyword; nominal when left out);
   jacfwd and jacrev in params equal the derivative functions and central differences, and
   jax.grad of a scalar loss in params equals central differences; rnea with f_ext too (no
   origin parameters: f_ext's share does not depend on them), aba with f_ext refuses. (The JAX tests come last:
   importing JAX before a build forks the build's workers under XLA's threads.)
"""

import warnings

import numpy as np
import pytest

import rbdgen
from helpers import ROBOTS, assert_close, central_differences, random_state, robot_model, robot_path, to_pinocchio_q
from rbdgen.errors import CodegenError
from rbdgen.model.parameters import parameters_of, with_parameters
from rbdgen.table.functions import select

SPECS = ["inertia:all", "gravity", "armature"]
ALGORITHMS = ["rnea", "rnea_fext", "aba", "aba_fext", "crba", "rnea_derivatives", "aba_derivatives",
              "rnea_parameter_derivatives", "aba_parameter_derivatives", "frame_placement",
              "frame_jacobian_local_world_aligned"]
EXACT_TOL = 1e-10      # the same derivative through two paths (einsum's, CasADi's transposes' rounding)
PINOCCHIO_TOL = 1e-9   # against Pinocchio's regressor (issue 2's tolerance)
FD_TOL = 1e-6          # central differences (step 1e-6), relative to the largest entry
SEED = 33


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(module, model with parameters) of UR5."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = rbdgen.build(robot_path("ur5"), out_dir=str(tmp_path_factory.mktemp("pderiv")), name="ur5_pderiv",
                              parameters=SPECS, algorithms=ALGORITHMS)
        model = with_parameters(rbdgen.load_urdf(robot_path("ur5")), SPECS)
    return module, model


@pytest.fixture(scope="module")
def point(built):
    """A random state, torques and random physical parameters (seeded)."""
    module, model = built
    rng = np.random.default_rng(SEED)
    q, v, a = random_state(model, rng)
    params = parameters_of(model).sample(rng, 1)[0]
    return {"q": q, "v": v, "a": a, "tau": rng.normal(size=model.nv), "params": params}


def test_built_by_default_only_with_parameters(built):
    _, model = built
    names = [f.name for f in select(None, model)]
    assert "rnea_parameter_derivatives" in names and "aba_parameter_derivatives" in names
    plain = rbdgen.load_urdf(robot_path("ur5"))
    assert not {"rnea_parameter_derivatives", "aba_parameter_derivatives"} & {f.name for f in select(None, plain)}
    with pytest.raises(CodegenError, match="rnea_parameter_derivatives is a derivative with respect to model "
                                           "parameters") as info:
        select(["rnea", "rnea_parameter_derivatives"], plain)
    assert "\n" not in str(info.value)


def test_derivative_functions_against_finite_differences(built, point):
    module, model = built
    x = point
    assert len(module.param_names) == 10 * 6 + 3 + model.nv
    D = module.rnea_parameter_derivatives(x["q"], x["v"], x["a"], x["params"])
    assert D.shape == (model.nv, len(module.param_names))
    fd = central_differences(lambda p: module.rnea(x["q"], x["v"], x["a"], params=p), [x["params"]], 0)
    assert_close("d rnea / d params", D, fd, FD_TOL)
    D = module.aba_parameter_derivatives(x["q"], x["v"], x["tau"], x["params"])
    fd = central_differences(lambda p: module.aba(x["q"], x["v"], x["tau"], params=p), [x["params"]], 0)
    assert_close("d aba / d params", D, fd, FD_TOL)
    # d qdd / d params = -M^-1 d rnea / d params at (q, v, qdd)
    qdd = module.aba(x["q"], x["v"], x["tau"], params=x["params"])
    M = module.crba(x["q"], params=x["params"])
    exact = -np.linalg.solve(M, module.rnea_parameter_derivatives(x["q"], x["v"], qdd, x["params"]))
    assert_close("d aba / d params as -M^-1 d rnea / d params", D, exact, EXACT_TOL)


def test_inertial_columns_are_pinocchios_regressor(built, point):
    import pinocchio as pin
    from helpers import pinocchio_model
    module, model = built
    x = point
    pm = pinocchio_model("ur5")
    Y = pin.computeJointTorqueRegressor(pm, pm.createData(), to_pinocchio_q(model, x["q"]), x["v"], x["a"])
    D = module.rnea_parameter_derivatives(x["q"], x["v"], x["a"])     # nominal parameters: Pinocchio's robot
    inertial = [k for k, name in enumerate(module.param_names) if not name.startswith(("g_", "armature_"))]
    assert len(inertial) == Y.shape[1] == 60
    assert_close("inertial columns against Pinocchio's regressor", D[:, inertial], Y, PINOCCHIO_TOL)
    armature = [k for k, name in enumerate(module.param_names) if name.startswith("armature_")]
    assert_close("armature columns", D[:, armature], np.diag(x["a"]), EXACT_TOL)


# Each robot's parameters and the program its aba_parameter_derivatives keeps: the product with
# M^-1 (Panda: the sparse factors lose digits there) or M's factors (Solo12, above
# DENSE_SOLVE_MAX_NV), both after the program as loops, their factors placed among the zeros of
# d rnea / d params
AFTER_THE_PROGRAM = {"panda": (["inertia:all", "payload:panda_hand", "gravity"], "aba_parameter_derivatives_deferred"),
                     "solo12": (["inertia:all"], "aba_parameter_derivatives_solved")}


@pytest.fixture(scope="module")
def after_the_program(tmp_path_factory):
    """{robot: (module, model with parameters)} for AFTER_THE_PROGRAM."""
    built = {}
    for robot, (specs, _) in AFTER_THE_PROGRAM.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = rbdgen.build(robot_path(robot), out_dir=str(tmp_path_factory.mktemp("wide")),
                                  name=f"{robot}_wide", floating_base=ROBOTS[robot][1], parameters=specs,
                                  algorithms=["crba", "aba", "rnea_parameter_derivatives", "aba_parameter_derivatives"])
            built[robot] = module, with_parameters(robot_model(robot), specs)
    return built


@pytest.mark.parametrize("robot", sorted(AFTER_THE_PROGRAM))
def test_parameter_columns_solved_after_the_program(after_the_program, robot):
    """-M^-1 d rnea / d params with its solve (or product) after the program: against NumPy's
    solve with the module's M, central differences of aba, and a batch whose states carry
    their own parameters against the single calls."""
    module, model = after_the_program[robot]
    kept = module._META["functions"]["aba_parameter_derivatives"]["accuracy"]["kept"]
    assert kept == AFTER_THE_PROGRAM[robot][1]
    rng = np.random.default_rng(SEED)
    states = [random_state(model, rng) for _ in range(11)]
    q, v = (np.array([s[k] for s in states]) for k in (0, 1))
    tau = rng.normal(size=(len(states), model.nv))
    params = parameters_of(model).sample(rng, len(states))
    batch = module.aba_parameter_derivatives(q, v, tau, params)
    for s in range(len(states)):
        D = module.aba_parameter_derivatives(q[s], v[s], tau[s], params[s])
        assert_close(f"state {s} of the batch", batch[s], D, EXACT_TOL)
        qdd = module.aba(q[s], v[s], tau[s], params=params[s])
        exact = -np.linalg.solve(module.crba(q[s], params=params[s]),
                                 module.rnea_parameter_derivatives(q[s], v[s], qdd, params[s]))
        assert_close("d aba / d params as -M^-1 d rnea / d params", D, exact, EXACT_TOL)
    fd = central_differences(lambda p: module.aba(q[0], v[0], tau[0], params=p), [params[0]], 0)
    assert_close("d aba / d params against central differences", batch[0], fd, FD_TOL)


@pytest.mark.parametrize("name", ["rnea", "aba"])
def test_casadi_jacobian_in_params(built, point, name):
    casadi = pytest.importorskip("casadi")
    module, _ = built
    x = point
    third = "a" if name == "rnea" else "tau"
    f = module.casadi(name)
    assert f.name_in() == ["q", "v", third, "params"]
    args = [x["q"], x["v"], x[third], x["params"]]
    assert_close(f"casadi {name}", np.array(f(*args)).ravel(), getattr(module, name)(*args[:3], params=x["params"]),
                 EXACT_TOL)
    blocks = f.jacobian()(*args, 0)
    block = np.array(blocks[3])
    exact = getattr(module, f"{name}_parameter_derivatives")(*args)
    assert_close(f"casadi {name} d/dparams", block, exact, EXACT_TOL)
    fd = central_differences(lambda p: getattr(module, name)(*args[:3], params=p), [x["params"]], 0)
    assert_close(f"casadi {name} d/dparams against finite differences", block, fd, FD_TOL)
    # the blocks in q and v still come from the state derivatives
    D = module.rnea_derivatives(*args[:3], x["params"]) if name == "rnea" else module.aba_derivatives(*args)
    assert_close(f"casadi {name} d/dv", np.array(blocks[1]), D[1], EXACT_TOL)
    # CasADi's own chain through the Jacobian: d/dp of a symbolic use
    p = casadi.MX.sym("p", len(x["params"]))
    g = casadi.Function("g", [p], [casadi.jacobian(casadi.sumsqr(f(*args[:3], p)), p)])
    y = getattr(module, name)(*args[:3], params=x["params"])
    assert_close(f"casadi {name} chain", np.array(g(x["params"])).ravel(), 2 * exact.T @ y, EXACT_TOL)


@pytest.mark.parametrize("name", ["rnea", "aba"])
def test_jax_jacobian_and_grad_in_params(built, point, name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    module, _ = built
    x = point
    third = "a" if name == "rnea" else "tau"
    f = module.jax(name)
    args = (x["q"], x["v"], x[third])
    want = getattr(module, name)(*args, params=x["params"])
    assert_close(f"jax {name} params=", f(*args, params=x["params"]), want, EXACT_TOL)
    assert_close(f"jax {name} nominal", f(*args), getattr(module, name)(*args), EXACT_TOL)
    exact = getattr(module, f"{name}_parameter_derivatives")(*args, x["params"])
    fd = central_differences(lambda p: getattr(module, name)(*args, params=p), [x["params"]], 0)
    of_params = lambda p: f(*args, params=p)
    forward = jax.jit(jax.jacfwd(of_params))(x["params"])
    reverse = jax.jacrev(of_params)(x["params"])
    assert_close(f"jax {name} jacfwd d/dparams", forward, exact, EXACT_TOL)
    assert_close(f"jax {name} jacrev d/dparams", reverse, exact, EXACT_TOL)
    assert_close(f"jax {name} d/dparams against finite differences", forward, fd, FD_TOL)
    # a scalar loss over a batch of states, one parameter vector for all
    rng = np.random.default_rng(SEED + 1)
    Q = np.stack([random_state(built[1], rng)[0] for _ in range(3)])
    V, X = rng.normal(size=Q.shape), rng.normal(size=Q.shape)

    def loss(p):
        return jnp.sum(f(Q, V, X, params=p) ** 2)

    grad = jax.grad(loss)(x["params"])
    fd = central_differences(lambda p: np.sum(getattr(module, name)(Q, V, X, params=p) ** 2), [x["params"]], 0)
    assert_close(f"jax grad of a loss through {name} in params", grad, fd.ravel(), FD_TOL)
    # derivatives in the state and in params together
    dv, dp = jax.jacfwd(lambda v, p: f(x["q"], v, x[third], params=p), argnums=(0, 1))(x["v"], x["params"])
    assert_close(f"jax {name} d/dparams with d/dv", dp, exact, EXACT_TOL)


def test_jax_with_forces_in_params(built, point):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    module, model = built
    x = point
    f_ext = np.random.default_rng(SEED + 2).normal(size=(len(module.joint_names), 6))
    args = (x["q"], x["v"], x["a"])
    rnea = module.jax("rnea")
    assert_close("jax rnea with f_ext and params", rnea(*args, f_ext, params=x["params"]),
                 module.rnea(*args, f_ext, params=x["params"]), EXACT_TOL)
    J = jax.jacfwd(lambda p: rnea(*args, f_ext, params=p))(x["params"])
    assert_close("jax rnea with f_ext d/dparams", J, module.rnea_parameter_derivatives(*args, x["params"]), EXACT_TOL)
    fd = central_differences(lambda p: module.rnea(*args, f_ext, params=p), [x["params"]], 0)
    assert_close("jax rnea with f_ext d/dparams against finite differences", J, fd, FD_TOL)
    with pytest.raises(ValueError, match="aba with f_ext has no derivative with respect to params"):
        jax.jacfwd(lambda p: module.jax("aba")(x["q"], x["v"], x["tau"], f_ext, params=p))(x["params"])


def test_jax_frames_take_params(built, point):
    """JAX's frame functions pass params on (nominal when left out); frame_placement's JVP in q
    holds with them, and one in params is refused."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    module, _ = built
    q, params = point["q"], point["params"]
    placement, jacobian = module.jax("frame_placement"), module.jax("frame_jacobian")
    for got, want in ((placement(q, "tool0", params=params), module.frame_placement(q, "tool0", params=params)),
                      (placement(q, "tool0"), module.frame_placement(q, "tool0")),
                      (jacobian(q, "tool0", params=params), module.frame_jacobian(q, "tool0", params=params))):
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert_close("jax frame function with params", g, w, EXACT_TOL)
    dR = jax.jacfwd(lambda q: placement(q, "tool0", params=params)[1])(q)
    fd = central_differences(lambda q: module.frame_placement(q, "tool0", params=params)[1], [q], 0)
    assert_close("jax frame_placement d/dq with params", dR, fd, FD_TOL)
    with pytest.raises(ValueError, match="no derivative with respect to params"):
        jax.jacfwd(lambda p: placement(q, "tool0", params=p)[1])(params)
