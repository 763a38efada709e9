"""Closed chains (rbdgen/algorithms/loops.py): the loops' residual, Jacobian and gamma against
central differences of one another, constrained dynamics against Pinocchio's constraintDynamics
(RigidConstraintModel between two joints, LOCAL_WORLD_ALIGNED, exact solve) on a spatial
four-bar and on Cassie's four loops, Baumgarte's gains as an identity, and a generated module
(C, batches, CasADi, JAX) against the reference."""

import numpy as np
import pytest

import rbdgen
from rbdgen import reference
from rbdgen.model.sdf import model_from_sdf
from rbdgen.runtime.pinocchio_bridge import pinocchio_of
from rbdgen.table.functions import select
from test_lanes import python_calls_in
from test_sdf import INERTIA, cassie_path

REL_TOL_PINOCCHIO = 1e-9      # the same solve in another order
LOOP_ALGORITHMS = ["loop_residual", "loop_jacobian", "loop_gamma", "constrained_dynamics", "project_velocity",
                   "constrained_dynamics_derivatives", "integrate", "rnea", "aba"]
FD_STEP, FD_TOL = 1e-6, 1e-7  # central differences


def spatial_four_bar():
    """Three revolute joints about three different axes and a ball joint closing the loop: G
    (3 x 3) has full rank at almost every q."""
    link = lambda name, x, y, z: (f'<link name="{name}"><pose>{x} {y} {z} 0 0 0</pose><inertial><pose>0.05 0.1 0.02 '
                                  f'0.1 0.2 0.3</pose><mass>0.8</mass>{INERTIA.format(0.02, 0.015, 0.01, 0.001)}'
                                  f'</inertial></link>')
    joint = lambda name, parent, child, axis: (f'<joint name="{name}" type="revolute"><parent>{parent}</parent>'
                                               f'<child>{child}</child><axis><xyz>{axis}</xyz></axis></joint>')
    return f"""<sdf version="1.9"><model name="spatial_four_bar">
  {link("ground", 0, 0, 0)}<joint name="anchor" type="fixed"><parent>world</parent><child>ground</child></joint>
  {link("crank", 0, 0, 0)}{joint("crank_joint", "ground", "crank", "0 0 1")}
  {link("arm", 0.3, 0, 0)}{joint("arm_joint", "crank", "arm", "1 0 0")}
  {link("rocker", 0.6, 0.4, 0.3)}{joint("rocker_joint", "ground", "rocker", "0 1 0")}
  <joint name="close" type="ball"><pose relative_to="rocker">-0.3 0 0 0 0 0</pose><parent>arm</parent>
    <child>rocker</child></joint>
</model></sdf>"""


def random_state(model, rng):
    q = rng.normal(size=model.nq) * 0.3
    if model.joints[0].type == "free_flyer":
        q[3:7] /= np.linalg.norm(q[3:7])
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def integrate(model, q, dq):
    return reference.integrate(model, q, dq)


@pytest.fixture(scope="module", params=["spatial four-bar", "cassie"])
def closed(request):
    return model_from_sdf(spatial_four_bar()) if request.param == "spatial four-bar" else \
        rbdgen.load_model(cassie_path())


def test_residual_jacobian_and_gamma_agree(closed):
    """d residual / dt = G v and d (G v) / dt = G q-ddot - gamma, by central differences along
    (v, q-ddot)."""
    model, rng = closed, np.random.default_rng(5)
    q, v, a = random_state(model, rng)
    G = reference.loop_jacobian(model, q)
    step = lambda h: integrate(model, q, h * v)
    rate = (reference.loop_residual(model, step(FD_STEP)) - reference.loop_residual(model, step(-FD_STEP))) / (2 * FD_STEP)
    np.testing.assert_allclose(rate, G @ v, rtol=0, atol=FD_TOL * max(1, np.abs(G @ v).max()))
    moved = lambda h: reference.loop_jacobian(model, integrate(model, q, h * v)) @ (v + h * a)
    accel = (moved(FD_STEP) - moved(-FD_STEP)) / (2 * FD_STEP)
    want = G @ a - reference.loop_gamma(model, q, v)
    np.testing.assert_allclose(accel, want, rtol=0, atol=FD_TOL * max(1, np.abs(want).max()))


def test_constrained_dynamics_equals_pinocchio(closed):
    pin = pytest.importorskip("pinocchio")
    model, rng = closed, np.random.default_rng(7)
    pm, constraints = pinocchio_of(model)
    pd = pm.createData()
    datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
    pin.initConstraintDynamics(pm, pd, constraints, datas)
    exact = pin.ProximalSettings(1e-14, 0.0, 1)
    for _ in range(3):
        q, v, _ = random_state(model, rng)
        tau = rng.normal(size=model.nv)
        qdd, lam, pivots = reference.constrained_dynamics(model, q, v, tau)
        want = pin.constraintDynamics(pm, pd, q, v, tau, constraints, datas, exact)
        np.testing.assert_allclose(qdd, want, rtol=0, atol=REL_TOL_PINOCCHIO * max(1, np.abs(want).max()))
        assert (pivots > 0).all()
        # M q-ddot = tau - nle + G^T lambda
        np.testing.assert_allclose(reference.crba(model, q) @ qdd, tau - reference.nle(model, q, v)
                                   + reference.loop_jacobian(model, q).T @ lam, rtol=0, atol=1e-9 * np.abs(tau).max())


def panda_held_whole():
    """Panda with its hand held whole (6d) to the world at the pose it has at a random q0:
    (model, q0), the loop closed at q0."""
    import dataclasses
    from helpers import robot_path
    from rbdgen.model.model import Frame
    from rbdgen.spatial import Transform
    with pytest.warns(UserWarning, match="mimic"):
        model = rbdgen.load_model(robot_path("panda"), loops=["panda_hand:panda_link0:6d"])
    q0 = np.random.default_rng(31).normal(size=model.nq)
    R, p = reference.frame_placement(model, q0, "loop0_a")
    held = Frame("loop0_b", -1, Transform(tuple(map(tuple, R.T)), tuple(p)))
    return dataclasses.replace(model, frames=tuple(held if f.name == "loop0_b" else f for f in model.frames)), q0


def test_a_6d_loop_where_closed_equals_pinocchio():
    """A 6d loop: G's rows equal Pinocchio's constraint Jacobian (LOCAL_WORLD_ALIGNED) at any q;
    gamma is -G-dot v exactly (central differences); where the loop is closed and v allowed,
    the residual's rate is G v and constrained dynamics equals Pinocchio's. (Off the closed
    set Pinocchio's 6D drift is another quantity than the derivative of G v, so the two part.)"""
    pin = pytest.importorskip("pinocchio")
    model, q = panda_held_whole()
    rng = np.random.default_rng(37)
    assert np.abs(reference.loop_residual(model, q)).max() < 1e-15
    v, a, tau = rng.normal(size=(3, model.nv))
    v = reference.project_velocity(model, q, v, damping=0.0)[0]
    G = reference.loop_jacobian(model, q)
    step = lambda h: integrate(model, q, h * v)
    rate = (reference.loop_residual(model, step(FD_STEP)) - reference.loop_residual(model, step(-FD_STEP))) / (2 * FD_STEP)
    np.testing.assert_allclose(rate, G @ v, rtol=0, atol=FD_TOL)
    moved = lambda h: reference.loop_jacobian(model, integrate(model, q, h * v)) @ (v + h * a)
    want = G @ a - reference.loop_gamma(model, q, v)
    np.testing.assert_allclose((moved(FD_STEP) - moved(-FD_STEP)) / (2 * FD_STEP), want, rtol=0,
                               atol=FD_TOL * max(1, np.abs(want).max()))
    pm, constraints = pinocchio_of(model)
    pd = pm.createData()
    datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
    pin.initConstraintDynamics(pm, pd, constraints, datas)
    qdd, _, _ = reference.constrained_dynamics(model, q, v, tau)
    want = pin.constraintDynamics(pm, pd, q, v, tau, constraints, datas, pin.ProximalSettings(1e-14, 0.0, 1))
    np.testing.assert_allclose(qdd, want, rtol=0, atol=REL_TOL_PINOCCHIO * np.abs(want).max())
    np.testing.assert_allclose(G, pin.getConstraintsJacobian(pm, pd, constraints, datas), rtol=0, atol=1e-14)


def test_baumgarte_gains_steer_the_residual(closed):
    """G q-ddot = gamma - kd G v - kp residual, with the gains given."""
    model, rng = closed, np.random.default_rng(9)
    q, v, _ = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    qdd, _, _ = reference.constrained_dynamics(model, q, v, tau, kp=25.0, kd=10.0)
    G = reference.loop_jacobian(model, q)
    want = reference.loop_gamma(model, q, v) - 10.0 * G @ v - 25.0 * reference.loop_residual(model, q)
    np.testing.assert_allclose(G @ qdd, want, rtol=0, atol=1e-9 * max(1, np.abs(want).max()))


def test_a_planar_four_bar_is_redundant_unless_damped(tmp_path):
    """A ball joint closing a planar four-bar constrains the normal to the plane twice: the
    module refuses the numbers without damping, and solves the damped system with it."""
    from test_sdf import four_bar
    path = tmp_path / "four_bar.sdf"
    path.write_text(four_bar())
    module = rbdgen.build(str(path), out_dir=str(tmp_path), algorithms=["constrained_dynamics", "loop_residual"])
    q, v, tau = np.array([0.1, -0.2, 0.3]), np.array([0.5, 0.1, -0.3]), np.array([0.2, 0.0, -0.1])
    with pytest.raises(ValueError, match="loops are redundant: close .* damping > 0"):
        module.constrained_dynamics(q, v, tau)
    qdd, lam, pivots = module.constrained_dynamics(q, v, tau, damping=1e-8)
    assert np.isfinite(qdd).all() and (pivots > 0).all()


@pytest.fixture(scope="module")
def four_bar_module(tmp_path_factory):
    """The spatial four-bar's default module and its constrained dynamics' derivatives (verified
    against the reference when built), its model and a batch of states with the constrained
    dynamics and its derivatives at the first."""
    folder = tmp_path_factory.mktemp("four_bar")
    path = folder / "spatial_four_bar.sdf"
    path.write_text(spatial_four_bar())
    # the default functions verify: the generator keeps forward mode for rnea_derivatives, whose
    # analytic program loses digits at a state verification tries
    defaults = [spec.name for spec in select(None, model_from_sdf(spatial_four_bar()))]
    module = rbdgen.build(str(path), out_dir=str(folder), algorithms=defaults + ["constrained_dynamics_derivatives"])
    assert set(LOOP_ALGORITHMS) <= set(module.operation_counts)
    rng = np.random.default_rng(11)
    Q, V, TAU = (rng.normal(size=(4, 3)) * s for s in (0.3, 1.0, 1.0))
    qdd = module.constrained_dynamics(Q, V, TAU, kp=4.0, kd=2.0)[0]
    D = module.constrained_dynamics_derivatives(Q[0], V[0], TAU[0], kp=4.0, kd=2.0)
    return module, model_from_sdf(spatial_four_bar()), (Q, V, TAU), qdd, D


def test_a_generated_closed_chain_module(four_bar_module):
    """Its functions in batches against the reference, and its state projections."""
    module, model, (Q, V, TAU), qdd, _ = four_bar_module
    assert module.loops == ("close",)
    for k in range(4):
        want = reference.constrained_dynamics(model, Q[k], V[k], TAU[k], kp=4.0, kd=2.0)
        np.testing.assert_allclose(qdd[k], want[0], rtol=0, atol=1e-10 * max(1, np.abs(want[0]).max()))
        np.testing.assert_allclose(module.loop_jacobian(Q[k]), reference.loop_jacobian(model, Q[k]), rtol=0, atol=1e-12)
    # the C entry point takes settings by keyword (ints too) or left out, a single state or a batch
    by_keyword = python_calls_in(lambda: module.constrained_dynamics(Q[0], V[0], TAU[0], kp=4, kd=2))
    for got, want in zip(by_keyword, module.constrained_dynamics(Q[0], V[0], TAU[0], 4.0, 2.0, 0.0)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(by_keyword[0], qdd[0])
    np.testing.assert_array_equal(python_calls_in(lambda: module.constrained_dynamics(Q, V, TAU, kp=4.0, kd=2.0))[0], qdd)
    python_calls_in(lambda: module.integrate(Q[0], V[0]))
    with pytest.raises(TypeError, match="multiple values for argument 'kp'"):
        module.constrained_dynamics(Q[0], V[0], TAU[0], 4.0, kp=2.0)
    with pytest.raises(TypeError, match="kp: expected real numbers"):
        module.constrained_dynamics(Q[0], V[0], TAU[0], kp=True)
    near = module.project_configuration(0.02 * np.random.default_rng(12).normal(size=(5, 3)))   # a batch
    assert np.abs(module.loop_residual(near)).max() <= 1e-9
    v_plus, _, _ = module.project_velocity(near, V[:1].repeat(5, axis=0), 0.0)
    assert np.abs(np.einsum("bij,bj->bi", module.loop_jacobian(near), v_plus)).max() <= 1e-9


def test_a_newton_step_is_the_least_norm_step(four_bar_module):
    """loop_newton_step's dq is -G^+ residual (its damping is 1e-14 of G G^T's scale)."""
    module, model, _, _, _ = four_bar_module
    q = 0.05 * np.random.default_rng(14).normal(size=3)
    following, residual = module.loop_newton_step(q)
    G = reference.loop_jacobian(model, q)
    np.testing.assert_allclose(residual, reference.loop_residual(model, q), rtol=0, atol=1e-15)
    want = -np.linalg.pinv(G) @ residual
    np.testing.assert_allclose(reference.difference(model, q, following), want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_a_closed_chain_through_casadi(four_bar_module):
    """CasADi's function, and its Jacobian: the generated derivatives."""
    pytest.importorskip("casadi")
    module, _, (Q, V, TAU), qdd, D = four_bar_module
    f = module.casadi("constrained_dynamics")
    assert f.name_in() == ["q", "v", "tau", "kp", "kd"]
    got = f(Q[0], V[0], TAU[0], 4.0, 2.0)
    np.testing.assert_allclose(got[0].full().ravel(), qdd[0], rtol=0, atol=1e-12)
    J = f.jacobian()(Q[0], V[0], TAU[0], 4.0, 2.0, *got)
    np.testing.assert_allclose(J[0].full(), D[0], rtol=0, atol=1e-12)   # d q-ddot / dq


def test_a_closed_chain_through_torch(four_bar_module):
    """PyTorch's op: the module's numbers, and gradients from the generated derivatives."""
    torch = pytest.importorskip("torch")
    module, _, (Q, V, TAU), qdd, _ = four_bar_module
    op = module.torch("constrained_dynamics")
    np.testing.assert_array_equal(op(*(torch.tensor(x) for x in (Q, V, TAU)), kp=4.0, kd=2.0)[0].numpy(), qdd)
    states = tuple(torch.tensor(x[:1], requires_grad=True) for x in (Q, V, TAU))
    assert torch.autograd.gradcheck(lambda q, v, tau: op(q, v, tau, kp=4.0, kd=2.0)[0], states)


def test_a_closed_chain_through_jax(four_bar_module):
    """JAX under jit, and jacfwd through the generated derivatives."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    module, _, (Q, V, TAU), _, D = four_bar_module
    residual = jax.jit(module.jax("loop_residual"))
    np.testing.assert_allclose(residual(Q), module.loop_residual(Q), rtol=0, atol=1e-14)
    dynamics = module.jax("constrained_dynamics")
    for k, x in enumerate(("v", "tau")):   # (q: forward mode there too, checked by differences below)
        got = jax.jacfwd(lambda y: dynamics(*[y if i == k + 1 else a for i, a in enumerate((Q[0], V[0], TAU[0]))],
                                            kp=4.0, kd=2.0)[0])(V[0] if x == "v" else TAU[0])
        np.testing.assert_allclose(got, D[k + 1], rtol=0, atol=1e-12)
    for k, gain in ((3, "kp"), (4, "kd")):   # Baumgarte's gains, plain numbers (one per state)
        gains = {"kp": 4.0, "kd": 2.0}
        got = jax.jacfwd(lambda g: dynamics(Q[0], V[0], TAU[0], **dict(gains, **{gain: g}))[0])(gains[gain])
        np.testing.assert_allclose(got, D[k][:, 0], rtol=0, atol=1e-12)
        assert np.allclose(jax.grad(lambda g: dynamics(Q[0], V[0], TAU[0], **dict(gains, **{gain: g}))[0].sum())(
            gains[gain]), D[k].sum(), rtol=0, atol=1e-12)


def test_states_projected_onto_the_loops(closed):
    """project_configuration closes the loops from a nearby q (Newton's steps); project_velocity
    gives the velocity nearest v (in M's metric) that keeps them closed."""
    model, rng = closed, np.random.default_rng(13)
    q0 = np.zeros(model.nq)
    if model.joints[0].type == "free_flyer":
        q0[6] = 1.0
    q = reference.integrate(model, q0, 0.05 * rng.normal(size=model.nv))   # (the file's pose closes the loops)
    assert np.abs(reference.loop_residual(model, q)).max() > 1e-4
    closed_q = reference.project_configuration(model, q)
    assert np.abs(reference.loop_residual(model, closed_q)).max() <= 1e-9   # (tol's default)
    v = rng.normal(size=model.nv)
    v_plus, impulses, _ = reference.project_velocity(model, closed_q, v, damping=1e-12)
    G, M = reference.loop_jacobian(model, closed_q), reference.crba(model, closed_q)
    np.testing.assert_allclose(G @ v_plus + 1e-12 * impulses, 0, atol=1e-9 * np.abs(v).max())   # (damped)
    np.testing.assert_allclose(M @ (v_plus - v), G.T @ impulses, atol=1e-9 * np.abs(M @ v).max())


def test_a_loop_stated_for_a_urdf():
    """--loop (loops=): UR5 with its tool held at a point fixed to the world equals Pinocchio's
    constraint dynamics; bad specs are one line naming the part that is wrong."""
    pin = pytest.importorskip("pinocchio")
    from helpers import robot_path
    model = rbdgen.load_model(robot_path("ur5"), loops=["tool0@0,0,0.1:world@0.3,0.2,0.5"])
    assert [(loop.name, loop.kind) for loop in model.loops] == [("tool0@0,0,0.1:world@0.3,0.2,0.5", "3d")]
    tool, tip = model.frame("tool0"), model.frame("loop0_a")
    assert tip.body == tool.body
    q = np.zeros(model.nq)
    np.testing.assert_allclose(reference.frame_placement(model, q, "loop0_a")[1],
                               reference.frame_placement(model, q, "tool0")[0] @ [0, 0, 0.1]
                               + reference.frame_placement(model, q, "tool0")[1], rtol=0, atol=1e-15)
    pm, constraints = pinocchio_of(model)
    pd = pm.createData()
    datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
    pin.initConstraintDynamics(pm, pd, constraints, datas)
    rng = np.random.default_rng(17)
    q, v, tau = rng.normal(size=(3, model.nv))
    qdd, _, _ = reference.constrained_dynamics(model, q, v, tau)
    want = pin.constraintDynamics(pm, pd, q, v, tau, constraints, datas, pin.ProximalSettings(1e-14, 0.0, 1))
    np.testing.assert_allclose(qdd, want, rtol=0, atol=REL_TOL_PINOCCHIO * np.abs(want).max())
    for spec, words in (("tool0:nowhere", "unknown frame 'nowhere'"), ("tool0:world:5d", "'5d' is not 3d or 6d"),
                        ("tool0@1,2:world", "three finite numbers"), ("wrist_3_link:tool0", "both frames are on body")):
        with pytest.raises(rbdgen.ModelError, match=words):
            rbdgen.load_model(robot_path("ur5"), loops=[spec])


def test_rbdgen_info_with_a_loop():
    import subprocess
    import sys
    from helpers import robot_path
    done = subprocess.run([sys.executable, "-m", "rbdgen.cli", "info", robot_path("ur5"), "--loop",
                           "tool0:world@0.3,0.2,0.5:6d"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "loop tool0:world@0.3,0.2,0.5:6d (6d): frames loop0_a and loop0_b held together" in done.stdout


MJCF_LOOP = """<mujoco model="mjcf_loop"><worldbody>
<body name="a"><joint name="j1" type="hinge" axis="0 0 1"/><geom type="capsule" size="0.05" fromto="0 0 0 0 0.4 0"/>
  <body name="b" pos="0 0.4 0"><joint name="j2" type="hinge" axis="0.3 0 1"/>
    <geom type="capsule" size="0.05" fromto="0 0 0 1 0.1 0"/></body></body>
<body name="c" pos="1 0 0.1"><joint name="j3" type="hinge" axis="0 1 1" pos="0 0 0.05"/>
  <geom type="capsule" size="0.05" fromto="0 0 0 0 0.5 0"/></body>
</worldbody><equality><connect name="close" body1="b" body2="c" anchor="1 0.1 0"/>
<weld body1="a" body2="c"/></equality></mujoco>"""


def mujoco_rows(mujoco, m, d, k):
    """MuJoCo's constraint rows of equality k: (efc_pos, efc_J)."""
    rows = [i for i in range(d.nefc) if d.efc_type[i] == mujoco.mjtConstraint.mjCNSTR_EQUALITY and d.efc_id[i] == k]
    return d.efc_pos[rows], d.efc_J.reshape(d.nefc, m.nv)[rows]


@pytest.mark.parametrize("torquescale", [0.5, 0.0])
def test_mjcf_connect_and_weld_are_loops_as_mujoco_sees_them(tmp_path, torquescale):
    """<equality connect> between two bodies is a 3d loop, <equality weld> a 6d one (3d with
    torquescale 0): at random states the residual equals MuJoCo's efc_pos and the Jacobian's
    point rows its efc_J. MuJoCo's rotation error is the vector part u (body2's axes) of the
    quaternion from body2's frame to body1's relpose frame, ours its sine times axis in world
    axes: 2 w R2 u (MuJoCo's rows scaled by torquescale)."""
    mujoco = pytest.importorskip("mujoco")
    path = tmp_path / "loop.xml"
    path.write_text(MJCF_LOOP.replace('<weld body1="a" body2="c"/>', '<weld body1="a" body2="c" anchor="0.1 0.2 0.3" '
                                      f'relpose="0.5 0.1 0.2 0.9 0.1 0.3 0.2" torquescale="{torquescale}"/>'))
    model = rbdgen.load_model(path)
    weld_kind = "6d" if torquescale else "3d"
    assert [(loop.name, loop.kind) for loop in model.loops] == [("close", "3d"), ("weld1", weld_kind)]
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(19)
    for _ in range(3):
        d.qpos[:] = rng.normal(size=m.nq)
        mujoco.mj_forward(m, d)
        connect, weld = (mujoco_rows(mujoco, m, d, k) for k in range(2))
        residual, G = reference.loop_residual(model, d.qpos), reference.loop_jacobian(model, d.qpos)
        np.testing.assert_allclose(residual[:6], np.concatenate([connect[0], weld[0][:3]]), rtol=0, atol=1e-12)
        np.testing.assert_allclose(G[:6], np.vstack([connect[1], weld[1][:3]]), rtol=0, atol=1e-12)
        if torquescale:
            u = weld[0][3:] / torquescale
            w = np.sqrt(1 - u @ u)
            np.testing.assert_allclose(residual[6:], 2 * w * d.xmat[3].reshape(3, 3) @ u, rtol=0, atol=1e-12)
        else:
            assert len(residual) == 6


def test_constrained_dynamics_derivatives_against_differences():
    """d (q-ddot, lambda) / d (q, v, tau, kp, kd) against central differences (q along the
    tangent space), on the spatial four-bar (forward mode through Cassie's reference would take
    minutes)."""
    model, rng = model_from_sdf(spatial_four_bar()), np.random.default_rng(23)
    q, v, _ = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    D = reference.constrained_dynamics_derivatives(model, q, v, tau, kp=4.0, kd=2.0)
    f = lambda q, v, tau, kp, kd: np.concatenate(reference.constrained_dynamics(model, q, v, tau, kp=kp, kd=kd)[:2])
    base = [q, v, tau, 4.0, 2.0]
    for k, name in enumerate(("q", "v", "tau", "kp", "kd")):
        size = model.nv if k < 3 else 1
        columns = []
        for j in range(size):
            plus, minus = list(base), list(base)
            step = np.eye(size)[j] * FD_STEP if k < 3 else FD_STEP
            if name == "q":
                plus[0], minus[0] = integrate(model, q, step), integrate(model, q, -step)
            else:
                plus[k], minus[k] = base[k] + step, base[k] - step
            columns.append((f(*plus) - f(*minus)) / (2 * FD_STEP))
        want = np.array(columns).T
        got = np.vstack([D[k], D[5 + k]])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * max(1, np.abs(want).max()), err_msg=name)


def test_constrained_inverse_dynamics_inverts_constrained_dynamics(tmp_path):
    """For an acceleration the loop allows (G a = gamma), the actuated joints' torques and the
    multipliers reproduce rnea, and constrained dynamics with those torques gives a back (UR5
    with its tool's tip held at a point: 6 actuated joints, 3 loop rows); a passive joint that
    the motion needs, or an acceleration the loop forbids, is a one-line error."""
    from helpers import robot_path
    loops = ["tool0@0,0,0.1:world@0.3,0.2,0.5"]
    model = rbdgen.load_model(robot_path("ur5"), loops=loops)
    rng = np.random.default_rng(29)
    q, v, a0 = rng.normal(size=(3, model.nv))
    G, gamma = reference.loop_jacobian(model, q), reference.loop_gamma(model, q, v)
    a = a0 + np.linalg.pinv(G) @ (gamma - G @ a0)          # the nearest acceleration the loop allows
    v = v - np.linalg.pinv(G) @ (G @ v)                    # and a velocity it allows
    gamma = reference.loop_gamma(model, q, v)
    a = a + np.linalg.pinv(G) @ (gamma - G @ a)
    names = [j.name for j in model.joints]
    tau, lam = reference.constrained_inverse_dynamics(model, q, v, a, names)
    np.testing.assert_allclose(tau + G.T @ lam, reference.rnea(model, q, v, a), rtol=0, atol=1e-9)
    qdd, _, _ = reference.constrained_dynamics(model, q, v, tau)
    np.testing.assert_allclose(qdd, a, rtol=0, atol=1e-8 * max(1, np.abs(a).max()))
    module = rbdgen.build(robot_path("ur5"), out_dir=str(tmp_path), loops=loops,
                          algorithms=["rnea", "loop_jacobian", "loop_gamma", "constrained_dynamics"])
    got = module.constrained_inverse_dynamics(np.stack([q, q]), np.stack([v, v]), np.stack([a, a]), names)
    np.testing.assert_allclose(got[0][1], tau, rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="no torques on the actuated coordinates"):
        module.constrained_inverse_dynamics(q, v, a, names[:2])   # four passive joints
    with pytest.raises(ValueError, match="unknown joint 'elbow'"):
        module.constrained_inverse_dynamics(q, v, a, ["elbow"])
    with pytest.raises(ValueError, match="breaks the loops"):
        module.constrained_inverse_dynamics(q, v, a0, names)


@pytest.mark.parametrize("mechanism", ["ur5 held at a point", "spatial four-bar"])
def test_constrained_dynamics_derivatives_equal_pinocchio(mechanism):
    """d q-ddot / d (q, v, tau) and d lambda / d (v, tau) equal Pinocchio's
    computeConstraintDynamicsDerivatives with the same Baumgarte gains; d lambda / dq equals
    central differences of Pinocchio's lambda, and its analytic one where the loop closes on
    the world (UR5's tool tip held at a point). Between two moving joints (the four-bar)
    Pinocchio's analytic d lambda / dq in LOCAL_WORLD_ALIGNED differs from its own differences."""
    pin = pytest.importorskip("pinocchio")
    from helpers import robot_path
    if mechanism == "spatial four-bar":
        model = model_from_sdf(spatial_four_bar())
    else:
        model = rbdgen.load_model(robot_path("ur5"), loops=["tool0@0,0,0.1:world@0.3,0.2,0.5"])
    pm, constraints = pinocchio_of(model)
    for c in constraints:
        gains = c.m_baumgarte_parameters
        gains.Kp, gains.Kd = 4.0, 2.0
        c.m_baumgarte_parameters = gains
    pd = pm.createData()
    datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
    pin.initConstraintDynamics(pm, pd, constraints, datas)
    exact = pin.ProximalSettings(1e-14, 0.0, 1)
    rng = np.random.default_rng(43)
    q, v, _ = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    D = reference.constrained_dynamics_derivatives(model, q, v, tau, kp=4.0, kd=2.0)
    multipliers = lambda x: (pin.constraintDynamics(pm, pd, x, v, tau, constraints, datas, exact), pd.lambda_c.copy())[1]
    steps = np.eye(model.nv) * FD_STEP
    dlambda_dq = np.array([multipliers(pin.integrate(pm, q, h)) - multipliers(pin.integrate(pm, q, -h))
                           for h in steps]).T / (2 * FD_STEP)
    pin.constraintDynamics(pm, pd, q, v, tau, constraints, datas, exact)
    pin.computeConstraintDynamicsDerivatives(pm, pd, constraints, datas, exact)
    analytic = [(0, "ddq_dq"), (1, "ddq_dv"), (2, "ddq_dtau"), (6, "dlambda_dv"), (7, "dlambda_dtau")]
    if mechanism != "spatial four-bar":
        analytic.append((5, "dlambda_dq"))
    for k, name in analytic:
        want = getattr(pd, name)
        np.testing.assert_allclose(D[k], want, rtol=0, atol=REL_TOL_PINOCCHIO * max(1, np.abs(want).max()),
                                   err_msg=name)
    np.testing.assert_allclose(D[5], dlambda_dq, rtol=0, atol=1e-6 * np.abs(dlambda_dq).max())
