"""The CasADi bridge: module.casadi(name) is a casadi.Function that runs the generated C
(casadi.external on the module's extension), and its Jacobian comes from the generated
derivatives.

1. Every function of states of a module gives the module's values through CasADi, in the
   module's shapes (UR5 and Panda, fixed base; Solo12 on a free-flyer).
2. jacobian() of rnea, nle, gravity, aba and fd_crba equals rnea_derivatives / aba_derivatives
   / crba, and central finite differences of the module's function; CasADi's own symbolic
   chain (MX) reaches the same numbers through it.
3. The functions of a frame (one CasADi function per frame) and of the declared contacts (held
   rigidly) give the module's values; the Jacobians of frame_placement, frame_velocity,
   frame_acceleration and contact_dynamics equal the generated derivatives and central finite
   differences.
4. With quaternions in q there is no Jacobian (CasADi refuses to differentiate), values work;
   an unknown name is a one-line error.
5. A trajectory optimization (IPOPT, multiple shooting on aba) through rbdgen's aba reaches the
   optimum it reaches through adam's independent CasADi expressions, in the same iterations.
"""

import numpy as np
import pytest

casadi = pytest.importorskip("casadi")

from conftest import BRIDGE_CONTACTS  # noqa: E402
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
    for name, d in module._DESCRIPTIONS.items():
        if d.per_body or d.declared:
            continue
        f = module.casadi(name)
        names = [n for n in d.names if n != "damping"]   # the contacts held rigidly
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
    assert checked == sum(not (d.per_body or d.declared) for d in module._DESCRIPTIONS.values())


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


def frame_functions(module):
    """(public name, reference or None) of every function of a frame the module built."""
    found = []
    for d in module._DESCRIPTIONS.values():
        if d.per_body:
            found.append((d.family, d.reference))
    return found


def column_major(result):
    """The module's result (an array or a tuple of arrays) as CasADi stacks it: each output
    vectorized column by column."""
    parts = result if isinstance(result, tuple) else (result,)
    return np.concatenate([np.asarray(p, dtype=float).reshape(p.shape[0], -1).ravel(order="F") if np.ndim(p) > 1
                           else np.ravel(p) for p in parts])


@pytest.mark.parametrize("key", ["ur5", "panda", "solo12"])
def test_values_of_frame_and_contact_functions(modules, key):
    """Every function of a frame, on every frame of the module's last body, and of the declared
    contacts (damping 0), through CasADi equals the module's."""
    module, model = modules[key]
    x = bridge_inputs(model, 4)
    cases = []
    for frame in module.frames[-2:]:
        for name, reference in frame_functions(module):
            states = [port.name for port in module._DESCRIPTIONS[name + (f"_{reference}" if reference else "")].states]
            given = {"reference": reference} if reference else {}
            ours = getattr(module, name)(*[x[n] for n in states], frame, **given)
            cases.append((module.casadi(name, frame=frame, **given), [x[n] for n in states], ours))
    for name, d in module._DESCRIPTIONS.items():
        if d.declared and name != "contact_dynamics_derivatives":
            states = [n for n in d.names if n != "damping"]
            given = {"restitution": x["restitution"]} if "restitution" in states else {}
            ours = getattr(module, name)(*[x[n] for n in states if n != "restitution"], **given)
            cases.append((module.casadi(name), [x[n] for n in states], ours))
    assert len(cases) == 2 * len(frame_functions(module)) + (2 if key in BRIDGE_CONTACTS else 0)
    for f, args, ours in cases:
        got = f(*args)
        got = np.concatenate([np.array(g).ravel(order="F") for g in (got if isinstance(got, tuple) else [got])])
        want = column_major(ours)
        assert np.abs(got - want).max() <= REL_TOL * max(1.0, np.abs(want).max()), f.name()


# function, reference, the states it takes, the module's derivatives (one array per state)
FRAME_DIFFERENTIATED = {
    "frame_placement": (None, ("q",), None),
    "frame_velocity": ("local", ("q", "v"), "frame_velocity_derivatives"),
    "frame_acceleration": ("local", ("q", "v", "a"), "frame_acceleration_derivatives"),
}


@pytest.mark.parametrize("key, name", [(key, name) for key in ("ur5", "panda") for name in sorted(FRAME_DIFFERENTIATED)]
                         + [(key, "contact_dynamics") for key in BRIDGE_CONTACTS])
def test_frame_and_contact_jacobians(modules, key, name):
    """jacobian() of the frame functions (the last frame) and of contact_dynamics (Panda's
    declared contact) equals the module's derivative functions and central differences."""
    module, model = modules[key]
    x = bridge_inputs(model, 6)
    frame = module.frames[-1]
    if name == "contact_dynamics":
        states, given = ("q", "v", "tau"), {}
        function = lambda *s: module.contact_dynamics(*s)
        exact = module.contact_dynamics_derivatives(*[x[n] for n in states])
        exact = [np.vstack([exact[k], exact[3 + k]]) for k in range(3)]   # qdd over lambda, per state
    else:
        reference, states, derivative = FRAME_DIFFERENTIATED[name]
        given = {"frame": frame, **({"reference": reference} if reference else {})}
        function = lambda *s: getattr(module, name)(*s, **given)
        exact = list(getattr(module, derivative)(*[x[n] for n in states], **given)) if derivative else None
    f = module.casadi(name, **given)
    args = [x[n] for n in states]
    outputs = f(*args)
    blocks = f.jacobian()(*args, *(outputs if isinstance(outputs, tuple) else [outputs]))
    blocks = [np.array(b) for b in (blocks if isinstance(blocks, tuple) else [blocks])]
    for k, state in enumerate(states):
        got = np.vstack(blocks[k::len(states)])    # every output's block for this state
        fd = central_differences(lambda *s: column_major(function(*s)), args, k)
        scale = max(1.0, float(np.abs(fd).max()))
        assert np.abs(got - fd).max() <= FD_TOL * scale, f"{name} d/d{state} against finite differences"
        if exact is not None:
            assert np.abs(got - exact[k]).max() <= 1e-12 * scale, f"{name} d/d{state}"


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
    with pytest.raises(ValueError, match=r"module.casadi\('frame_jacobian', frame=..., reference=...\)"):
        module.casadi("frame_jacobian_local_world_aligned")
    with pytest.raises(ValueError, match="pass frame="):
        module.casadi("frame_placement")
    with pytest.raises(ValueError, match="unknown frame 'nowhere'"):
        module.casadi("frame_velocity", frame="nowhere")
    with pytest.raises(ValueError, match="reference 'global' is unknown"):
        module.casadi("frame_velocity", frame=module.frames[-1], reference="global")
    with pytest.raises(ValueError, match="takes no frame"):
        module.casadi("rnea", frame=module.frames[-1])


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
