"""The CasADi bridge: module.casadi(name) is a casadi.Function that runs the generated C
(casadi.external on the module's extension), and its Jacobian comes from the generated
derivatives.

1. Every function of states of a module gives the module's values through CasADi, in the
   module's shapes (UR5 and Panda, fixed base; Solo12 on a free-flyer).
2. jacobian() of rnea, nle, gravity, aba and fd_crba equals rnea_derivatives / aba_derivatives
   / crba, and central finite differences of the module's function; CasADi's own symbolic
   chain (MX) reaches the same numbers through it.
3. With quaternions in q there is no Jacobian (CasADi refuses to differentiate), values work;
   an unknown name is a one-line error.
4. A trajectory optimization (IPOPT, multiple shooting on aba) through rbdgen's aba reaches the
   optimum it reaches through adam's independent CasADi expressions, in the same iterations.
"""

import numpy as np
import pytest

casadi = pytest.importorskip("casadi")

from helpers import assert_close, bridge_inputs, central_differences  # noqa: E402

REL_TOL = 1e-12          # the same C: values equal to rounding
FD_TOL = 1e-6            # central differences, relative to the Jacobian's largest entry
TRAJECTORY_TOL = 1e-6    # the two optima, states and torques
DIFFERENTIATED = {"rnea": ("q", "v", "a"), "nle": ("q", "v"), "gravity": ("q",), "aba": ("q", "v", "tau"),
                  "fd_crba": ("q", "v", "tau")}


@pytest.fixture(scope="module")
def modules(bridge_modules):
    return bridge_modules


def as_module(result, like):
    """A CasADi output (DM, column-major) in the module's shape (row-major)."""
    array = np.array(result)
    like = np.asarray(like)
    if like.ndim <= 1:
        return array.reshape(like.shape)
    return array.reshape(like.shape[0], -1).reshape(like.shape)


@pytest.mark.parametrize("key", ["ur5", "panda", "solo12"])
def test_values_of_every_function(modules, key):
    module, model = modules[key]
    x = bridge_inputs(model, 3)
    checked = 0
    for name, row in module._META["functions"].items():
        if row["per_body"] or row["declared"]:
            continue
        f = module.casadi(name)
        names = [n for n, _ in row["inputs"]]
        assert f.name_in() == names
        args = [x[n] for n in names]
        ours = getattr(module, name)(*args)
        parts = ours if isinstance(ours, tuple) else (ours,)
        got = f(*args)
        got = got if isinstance(got, (tuple, list)) else [got]
        assert len(got) == len(parts), name
        for g, want in zip(got, parts):
            want = np.asarray(want, dtype=float)
            scale = max(1.0, float(np.abs(want).max(initial=0.0)))
            assert np.abs(as_module(g, want) - want).max() <= REL_TOL * scale, name
        checked += 1
    assert checked == sum(not (row["per_body"] or row["declared"]) for row in module._META["functions"].values())


@pytest.mark.parametrize("key", ["ur5", "panda"])
@pytest.mark.parametrize("name", sorted(DIFFERENTIATED))
def test_jacobian_from_generated_derivatives(modules, key, name):
    module, model = modules[key]
    assert name in module.operation_counts    # BRIDGE_ALGORITHMS builds every differentiated function
    x = bridge_inputs(model, 5)
    names = DIFFERENTIATED[name]
    args = [x[n] for n in names]
    J = module.casadi(name).jacobian()
    blocks = J(*args, 0)
    blocks = [np.array(b) for b in (blocks if isinstance(blocks, (tuple, list)) else [blocks])]
    if name in ("aba", "fd_crba"):
        exact = list(module.aba_derivatives(*args))
    elif name == "gravity":
        exact = [module.rnea_derivatives(x["q"], 0 * x["v"], 0 * x["v"])[0]]
    else:
        dq, dv = module.rnea_derivatives(x["q"], x["v"], x.get("a") if name == "rnea" else 0 * x["v"])
        exact = [dq, dv, module.crba(x["q"])][:len(names)]
    function = getattr(module, name)
    for k, (block, want) in enumerate(zip(blocks, exact)):
        scale = max(1.0, float(np.abs(want).max()))
        assert np.abs(block - want).max() <= 1e-10 * scale, f"{name} d/d{names[k]}"
        fd = central_differences(function, args, k)
        assert np.abs(block - fd).max() <= FD_TOL * scale, f"{name} d/d{names[k]} against finite differences"


def test_symbolic_chain_uses_the_generated_jacobian(modules):
    """A CasADi expression through the function differentiates to the same numbers."""
    module, model = modules["ur5"]
    x = bridge_inputs(model, 7)
    aba = module.casadi("aba")
    q, v, tau = (casadi.MX.sym(n, model.nv) for n in ("q", "v", "tau"))
    qdd = aba(q, v, tau)
    step = casadi.Function("step", [q, v, tau], [casadi.jacobian(v + 0.01 * qdd, casadi.vertcat(q, tau))])
    got = np.array(step(x["q"], x["v"], x["tau"]))
    dq, _, dtau = module.aba_derivatives(x["q"], x["v"], x["tau"])
    assert np.abs(got - 0.01 * np.hstack([dq, dtau])).max() <= 1e-12 * max(1.0, np.abs(dq).max())


def test_free_flyer_has_values_but_no_jacobian(modules):
    module, model = modules["solo12"]
    x = bridge_inputs(model, 9)
    f = module.casadi("rnea")
    assert np.abs(f(x["q"], x["v"], x["a"]).full().ravel() - module.rnea(x["q"], x["v"], x["a"])).max() < 1e-9
    with pytest.raises(RuntimeError):
        f.jacobian()(x["q"], x["v"], x["a"], 0)


def test_unknown_function_is_one_line(modules):
    module, _ = modules["ur5"]
    with pytest.raises(ValueError, match="did you mean 'rnea'"):
        module.casadi("rnae")
    with pytest.raises(ValueError, match="not a function of states"):
        module.casadi("frame_jacobian_local")


def adam_forward_dynamics(urdf, joint_names):
    """Fixed-base forward dynamics from adam's CasADi expressions: M(q)^-1 (tau - h(q, v)), the
    joint blocks of its floating-base M and h at the identity base at rest (adam has no fixed base)."""
    import contextlib
    import io
    from adam.casadi import KinDynComputations
    with contextlib.redirect_stderr(io.StringIO()):   # its notes on URDF tags it skips
        kd = KinDynComputations(urdf, list(joint_names), gravity=np.array([0.0, 0.0, -9.81, 0.0, 0.0, 0.0]))
    n = len(joint_names)
    q, v, tau = (casadi.SX.sym(name, n) for name in ("q", "v", "tau"))
    M = kd.mass_matrix_fun()(casadi.DM.eye(4), q)[6:, 6:]
    h = kd.bias_force_fun()(casadi.DM.eye(4), q, casadi.DM.zeros(6), v)[6:]
    return casadi.Function("adam_aba", [q, v, tau], [casadi.solve(M, tau - h)])


def test_trajectory_optimization_matches_adam(modules):
    """UR5 from rest to rest in 1 s, minimum effort, RK4 multiple shooting on aba, the fourth
    joint's torque limit active: IPOPT through rbdgen's aba (Jacobians from aba_derivatives)
    and through adam's expressions reaches the same optimum in the same iterations."""
    pytest.importorskip("adam")
    from helpers import robot_path
    from rbdgen.optimal_control import minimum_effort_transfer
    module, model = modules["ur5"]
    theirs = adam_forward_dynamics(robot_path("ur5"), module.joint_names)
    x = bridge_inputs(model, 12)
    assert_close("adam's aba", theirs(x["q"], x["v"], x["tau"]).full().ravel(), module.aba(x["q"], x["v"], x["tau"]),
                 1e-11)
    goal = np.array([0.5, -0.4, 0.6, 0.25, -0.35, 0.45])
    limit = np.array([150.0, 150.0, 150.0, 10.0, 28.0, 28.0])
    solved = [minimum_effort_transfer(aba, model.nv, np.zeros(model.nv), goal, torque_limit=limit)
              for aba in (module.casadi("aba"), theirs)]
    ours, adam = solved
    assert ours["status"] == adam["status"] == "Solve_Succeeded"
    assert np.abs(ours["tau"][:, 3]).max() == pytest.approx(10.0, abs=1e-6)     # the limit holds and is active
    assert abs(ours["iterations"] - adam["iterations"]) <= 2
    for part in ("q", "v", "tau"):
        assert np.abs(ours[part] - adam[part]).max() <= TRAJECTORY_TOL, part
