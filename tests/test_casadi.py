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
"""

import warnings

import numpy as np
import pytest

casadi = pytest.importorskip("casadi")

import rbdgen  # noqa: E402
from helpers import ROBOTS, robot_path  # noqa: E402
from rbdgen.runtime.states import random_state  # noqa: E402

REL_TOL = 1e-12          # the same C: values equal to rounding
FD_STEP = 1e-6
FD_TOL = 1e-6            # central differences, relative to the Jacobian's largest entry
# a small set, so that the three builds stay short: every kind of output (vector, matrix, parts,
# scalar, a float parameter), and the derivatives the Jacobians read
ALGORITHMS = ["rnea", "nle", "gravity", "crba", "aba", "fd_crba", "rnea_derivatives", "aba_derivatives", "eom",
              "kinetic_energy", "integrate", "jacobians"]
DIFFERENTIATED = {"rnea": ("q", "v", "a"), "nle": ("q", "v"), "gravity": ("q",), "aba": ("q", "v", "tau"),
                  "fd_crba": ("q", "v", "tau")}


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("casadi"))
    built = {}
    for key in ("ur5", "panda", "solo12"):
        floating = ROBOTS[key][1]
        with warnings.catch_warnings():   # Panda's fingers: <mimic> ignored
            warnings.simplefilter("ignore")
            module = rbdgen.build(robot_path(key), out_dir=folder, floating_base=floating, algorithms=ALGORITHMS)
            built[key] = (module, rbdgen.load_urdf(robot_path(key), floating_base=floating))
    return built


def inputs(module, model, seed):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    values = {"q": q, "v": v, "a": a, "tau": rng.normal(size=model.nv), "q1": random_state(model, rng)[0],
              "dt": 0.3, "fext": rng.normal(size=6 * model.nbodies)}
    return values


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
    x = inputs(module, model, 3)
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
    assert checked == len(ALGORITHMS)


def central_differences(function, args, k, step=FD_STEP):
    """d function / d args[k], column by column."""
    columns = []
    for j in range(len(args[k])):
        plus, minus = [np.array(a, dtype=float) for a in args], [np.array(a, dtype=float) for a in args]
        plus[k][j] += step
        minus[k][j] -= step
        columns.append((np.ravel(function(*plus)) - np.ravel(function(*minus))) / (2 * step))
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("key", ["ur5", "panda"])
@pytest.mark.parametrize("name", sorted(DIFFERENTIATED))
def test_jacobian_from_generated_derivatives(modules, key, name):
    module, model = modules[key]
    assert name in module.operation_counts    # ALGORITHMS builds every differentiated function
    x = inputs(module, model, 5)
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
    x = inputs(module, model, 7)
    aba = module.casadi("aba")
    q, v, tau = (casadi.MX.sym(n, model.nv) for n in ("q", "v", "tau"))
    qdd = aba(q, v, tau)
    step = casadi.Function("step", [q, v, tau], [casadi.jacobian(v + 0.01 * qdd, casadi.vertcat(q, tau))])
    got = np.array(step(x["q"], x["v"], x["tau"]))
    dq, _, dtau = module.aba_derivatives(x["q"], x["v"], x["tau"])
    assert np.abs(got - 0.01 * np.hstack([dq, dtau])).max() <= 1e-12 * max(1.0, np.abs(dq).max())


def test_free_flyer_has_values_but_no_jacobian(modules):
    module, model = modules["solo12"]
    x = inputs(module, model, 9)
    f = module.casadi("rnea")
    assert np.abs(np.ravel(f(x["q"], x["v"], x["a"])) - module.rnea(x["q"], x["v"], x["a"])).max() < 1e-9
    with pytest.raises(RuntimeError):
        f.jacobian()(x["q"], x["v"], x["a"], 0)


def test_unknown_function_is_one_line(modules):
    module, _ = modules["ur5"]
    with pytest.raises(ValueError, match="did you mean 'rnea'"):
        module.casadi("rnae")
    with pytest.raises(ValueError, match="not a function of states"):
        module.casadi("frame_jacobian_local")
