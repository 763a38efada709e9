"""Derivatives and identification (rbdgen/algorithms/derivatives.py and regressor.py).

1. rbdgen.reference against Pinocchio on six example-robot-data robots, fixed and floating
   base: computeRNEADerivatives, computeABADerivatives, computeGeneralizedGravityDerivatives
   and computeJointTorqueRegressor, 1e-8 relative.
2. Random trees with every joint type, fixed and floating: central finite differences along
   q (+) t dq (tests/trees.integrate, the tangent-space convention), v and tau; the
   identities Y pi = rnea, d qdd / dq = -M^-1 d tau / dq at tau = rnea(q, v, qdd),
   nle_derivatives = rnea_derivatives at a = 0; and the base regressor: full column rank on
   stacked random states, Y_b beta = tau.
3. A generated module (built once per session) against the reference: every function, one
   state and a batch, out=; parameters() and base_parameters(); the README's identification
   example (pi from noisy torques by least squares).
"""

import dataclasses
import functools
import warnings

import numpy as np
import pinocchio as pin
import pytest

import rbdgen
from helpers import robot_model, REL_TOL_GENERATED, assert_close, pinocchio_model, random_state, robot_path, to_pinocchio_q
from rbdgen import reference as ref
from trees import ALL_JOINT_TYPES, integrate, random_tree

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

REL_TOL_DERIVATIVES = 1e-8    # against Pinocchio's derivatives (issue 9)
FD_STEP = 1e-6
FD_TOL = 1e-6                 # central differences: O(h^2) truncation, O(eps / h) rounding
PIN_ROBOTS = ["ur5", "panda", "allegro", "solo12", "anymal", "talos"]
TREES = {
    "tree-fixed": (911, len(ALL_JOINT_TYPES) + 1, ALL_JOINT_TYPES, False),
    "tree-floating": (912, len(ALL_JOINT_TYPES) + 2, ALL_JOINT_TYPES, True),
    # the generated module's: a free-flyer and every joint whose q-dot is not v, small enough
    # to build in seconds (the reference's tests above cover every joint type)
    "small-floating": (913, 5, ("spherical", "planar", "euler_zyx", "continuous"), True),
}


@functools.lru_cache(maxsize=None)
def tree_model(key):
    seed, n, kinds, floating = TREES[key]
    return random_tree(seed, n, kinds, floating_base=floating)


def _symmetric_minv(data):
    return np.triu(data.Minv) + np.triu(data.Minv, 1).T


@pytest.mark.parametrize("name", PIN_ROBOTS)
def test_reference_matches_pinocchio(name):
    model, pm = robot_model(name), pinocchio_model(name)
    data = pm.createData()
    rng = np.random.default_rng(5)
    for _ in range(2):
        q, v, a = random_state(model, rng)
        tau = rng.normal(size=model.nv)
        qp = to_pinocchio_q(model, q)
        pin.computeRNEADerivatives(pm, data, qp, v, a)
        dq, dv = ref.rnea_derivatives(model, q, v, a)
        assert_close(f"{name} dtau_dq", dq, data.dtau_dq, REL_TOL_DERIVATIVES)
        assert_close(f"{name} dtau_dv", dv, data.dtau_dv, REL_TOL_DERIVATIVES)
        pin.computeABADerivatives(pm, data, qp, v, tau)
        for label, ours, theirs in zip(("ddq_dq", "ddq_dv", "ddq_dtau"), ref.aba_derivatives(model, q, v, tau),
                                       (data.ddq_dq, data.ddq_dv, _symmetric_minv(data))):
            assert_close(f"{name} {label}", ours, theirs, REL_TOL_DERIVATIVES)
        assert_close(f"{name} dg_dq", ref.gravity_derivatives(model, q),
                     pin.computeGeneralizedGravityDerivatives(pm, data, qp), REL_TOL_DERIVATIVES)
        assert_close(f"{name} regressor", ref.regressor(model, q, v, a),
                     pin.computeJointTorqueRegressor(pm, data, qp, v, a), REL_TOL_DERIVATIVES)
    assert_close(f"{name} parameters", ref.parameters(model),
                 np.concatenate([I.toDynamicParameters() for I in pm.inertias[1:]]), REL_TOL_DERIVATIVES)


FRAME_ROBOTS = {"solo12": "FL_FOOT", "panda": "panda_hand", "talos": "left_sole_link"}
PIN_REFERENCES = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}


@pytest.mark.parametrize("name", list(FRAME_ROBOTS))
def test_frame_derivatives_match_pinocchio(name):
    """LOCAL and WORLD against Pinocchio; LOCAL_WORLD_ALIGNED against central differences of
    frame_velocity / frame_acceleration themselves, because Pinocchio 4.1's d/dq there is not
    the derivative of its own getFrameVelocity (off by 2.6 on solo12, where ours agrees with
    the differences to 3e-10)."""
    model, pm = robot_model(name), pinocchio_model(name)
    data, frame = pm.createData(), FRAME_ROBOTS[name]
    q, v, a = random_state(model, np.random.default_rng(43))
    pin.computeForwardKinematicsDerivatives(pm, data, to_pinocchio_q(model, q), v, a)
    for reference, rf in PIN_REFERENCES.items():
        velocity = ref.frame_velocity_derivatives(model, q, v, frame, reference)
        acceleration = ref.frame_acceleration_derivatives(model, q, v, a, frame, reference)
        if reference == "local_world_aligned":
            along_q = functools.partial(_central, step=model.nv, move=lambda x, e: integrate(model, x, e))
            assert_close(f"{name} {reference} dv_dq", velocity[0],
                         along_q(lambda x: ref.frame_velocity(model, x, v, frame, reference), q), FD_TOL)
            assert_close(f"{name} {reference} da_dq", acceleration[0],
                         along_q(lambda x: ref.frame_acceleration(model, x, v, a, frame, reference), q), FD_TOL)
            continue
        theirs = pin.getFrameVelocityDerivatives(pm, data, pm.getFrameId(frame), rf)
        for label, ours, expected in zip(("dv_dq", "dv_dv"), velocity, theirs):
            assert_close(f"{name} {reference} {label}", ours, expected, REL_TOL_DERIVATIVES)
        theirs = pin.getFrameAccelerationDerivatives(pm, data, pm.getFrameId(frame), rf)[1:]
        for label, ours, expected in zip(("da_dq", "da_dv", "da_da"), acceleration, theirs):
            assert_close(f"{name} {reference} {label}", ours, expected, REL_TOL_DERIVATIVES)


@pytest.mark.parametrize("name, contacts", [("solo12", ("FL_FOOT:3d", "HR_FOOT:3d")),
                                            ("ur5", ("tool0:6d",))])
def test_contact_derivatives_match_pinocchio(name, contacts):
    from rbdgen.algorithms import constrained
    from rbdgen.runtime.pinocchio_bridge import pinocchio_constraints
    model, pm = robot_model(name), pinocchio_model(name)
    data = pm.createData()
    rng = np.random.default_rng(47)
    q, v, _ = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    models, datas = pinocchio_constraints(pm, constrained.parse_contacts(model, contacts))
    pin.initConstraintDynamics(pm, data, models, datas)
    pin.constraintDynamics(pm, data, to_pinocchio_q(model, q), v, tau, models, datas)
    pin.computeConstraintDynamicsDerivatives(pm, data, models, datas)
    names = ("ddq_dq", "ddq_dv", "ddq_dtau", "dlambda_dq", "dlambda_dv", "dlambda_dtau")
    for label, ours in zip(names, ref.contact_dynamics_derivatives(model, q, v, tau, contacts)):
        assert_close(f"{name} {label}", ours, getattr(data, label), REL_TOL_DERIVATIVES)


# every kind of contact: a point off the frame's origin, a normal, a whole frame
MIXED_CONTACTS = ("FL_FOOT:3d@0.01,0,0.02", "HR_FOOT:1d/0.6,0,0.8", "FR_FOOT:6d")


@pytest.mark.parametrize("contacts", [("FL_FOOT:3d", "HR_FOOT:6d"), MIXED_CONTACTS])
def test_damped_contact_derivatives_are_finite_differences(contacts):
    """With damping the system is G q-ddot + damping lambda = gamma (no Pinocchio counterpart):
    central differences of the declared contact dynamics itself, on numbers."""
    from rbdgen.algorithms import constrained
    from rbdgen.runtime.reference import OPS
    model = robot_model("solo12")
    declared = constrained.parse_contacts(model, contacts)
    rng = np.random.default_rng(59)
    q, v, _ = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    rows = model.nv + sum(c.rows for c in declared)

    def dynamics(q_, v_, tau_):
        out = constrained.contact_dynamics(model, OPS, declared, list(q_), list(v_), list(tau_), damping=[0.05])
        return np.array(out[:rows], dtype=float)

    along_q = functools.partial(_central, step=model.nv, move=lambda x, e: integrate(model, x, e))
    along_v = functools.partial(_central, step=model.nv, move=lambda x, e: x + e)
    expected = [along_q(lambda x: dynamics(x, v, tau), q), along_v(lambda x: dynamics(q, x, tau), v),
                along_v(lambda x: dynamics(q, v, x), tau)]
    ours = ref.contact_dynamics_derivatives(model, q, v, tau, contacts, damping=0.05)
    for k, label in enumerate(("dq", "dv", "dtau")):
        assert_close(f"ddq_{label}", ours[k], expected[k][:model.nv], FD_TOL)
        assert_close(f"dlambda_{label}", ours[3 + k], expected[k][model.nv:], FD_TOL)


@pytest.mark.parametrize("damping", [0.0, 0.05])
def test_factored_contact_derivatives_are_the_reference(damping):
    """The factored variant (the KKT matrix's factors in the output, the solves after the
    program by algorithms.solves' NumPy mirror of the C loop), run on numbers, against the
    reference's solves through M's factors and K's: every kind of contact, exact and damped."""
    from rbdgen.algorithms import constrained, derivatives
    from rbdgen.table.functions import contact_derivatives_factored
    from rbdgen.runtime.reference import OPS
    model = robot_model("solo12")
    declared = constrained.parse_contacts(model, MIXED_CONTACTS)
    n, rows = model.nv, sum(c.rows for c in declared)
    rng = np.random.default_rng(61)
    q, v, _ = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    blocks = derivatives.contact_dynamics_derivatives_factored(model, OPS, declared, list(q), list(v), list(tau),
                                                               damping=[damping])
    flat = np.concatenate([np.array(block, dtype=float).ravel() for block in blocks])[None]
    contact_derivatives_factored(declared, rows).solve(model).apply(flat)
    sizes = [n * n] * 3 + [rows * n] * 3
    ours = np.split(flat[0], np.cumsum(sizes)[:-1])
    names = ("ddq_dq", "ddq_dv", "ddq_dtau", "dlambda_dq", "dlambda_dv", "dlambda_dtau")
    for label, got, expected in zip(names, ours, ref.contact_dynamics_derivatives(model, q, v, tau, MIXED_CONTACTS,
                                                                                    damping=damping)):
        assert_close(label, got.reshape(expected.shape), expected, REL_TOL_DERIVATIVES)


def _central(f, x0, step, move):
    """(f(move(x0, +h e_k)) - f(move(x0, -h e_k))) / 2h for every direction k, as columns."""
    columns = []
    for k in range(step):
        e = np.zeros(step)
        e[k] = FD_STEP
        columns.append((f(move(x0, e)) - f(move(x0, -e))) / (2 * FD_STEP))
    return np.stack(columns, axis=-1)


@pytest.mark.parametrize("key", ["tree-fixed", "tree-floating"])
def test_finite_differences_on_trees(key):
    model = tree_model(key)
    rng = np.random.default_rng(17)
    q, v, a = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    along_q = functools.partial(_central, step=model.nv, move=lambda x, e: integrate(model, x, e))
    along_v = functools.partial(_central, step=model.nv, move=lambda x, e: x + e)
    dq, dv = ref.rnea_derivatives(model, q, v, a)
    assert_close(f"{key} dtau_dq", dq, along_q(lambda x: ref.rnea(model, x, v, a), q), FD_TOL)
    assert_close(f"{key} dtau_dv", dv, along_v(lambda x: ref.rnea(model, q, x, a), v), FD_TOL)
    ddq = ref.aba_derivatives(model, q, v, tau)
    assert_close(f"{key} ddq_dq", ddq[0], along_q(lambda x: ref.aba(model, x, v, tau), q), FD_TOL)
    assert_close(f"{key} ddq_dv", ddq[1], along_v(lambda x: ref.aba(model, q, x, tau), v), FD_TOL)
    assert_close(f"{key} ddq_dtau", ddq[2], along_v(lambda x: ref.aba(model, q, v, x), tau), FD_TOL)
    assert_close(f"{key} dg_dq", ref.gravity_derivatives(model, q), along_q(lambda x: ref.gravity(model, x), q), FD_TOL)


CONSTANT_SUBSPACE = ("revolute", "continuous", "prismatic", "helical", "spherical", "planar", "translation")


@pytest.mark.parametrize("floating", [False, True])
def test_analytic_matches_forward_mode(floating):
    """The world-frame algorithm (a variant the generator may keep, rnea_derivatives.py) equals
    forward mode on trees with every joint it applies to, and on a model with mimic joints;
    it declines the Euler joints."""
    from rbdgen.algorithms import derivatives, rnea_derivatives
    from rbdgen.runtime.reference import OPS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mimic_panda = rbdgen.load_urdf(robot_path("panda"), floating_base=floating, mimic=True)
    models = {"tree": random_tree(921, 10, CONSTANT_SUBSPACE, floating_base=floating), "panda-mimic": mimic_panda}
    for label, model in models.items():
        assert rnea_derivatives.applies(model), label
        q, v, a = (list(x) for x in random_state(model, np.random.default_rng(53)))
        for ours, expected in zip(rnea_derivatives.analytic_rnea_derivatives(model, OPS, q, v, a),
                                  derivatives.rnea_derivatives(model, OPS, q, v, a)):
            assert_close(f"{label} analytic", np.array(ours, float), np.array(expected, float), REL_TOL_DERIVATIVES)
        for ours, expected in zip(rnea_derivatives.analytic_aba_derivatives(model, OPS, q, v, a),
                                  derivatives.aba_derivatives(model, OPS, q, v, a)):
            assert_close(f"{label} analytic aba", np.array(ours, float), np.array(expected, float),
                         REL_TOL_DERIVATIVES)
    assert not rnea_derivatives.applies(tree_model("tree-fixed"))


def test_generator_keeps_the_shorter_program():
    from rbdgen.codegen.programs import generate_program
    from rbdgen.table.functions import BY_NAME
    from rbdgen.algorithms import mimic, minv, rnea_derivatives
    # the analytical derivatives are preferred (forward mode is not recorded): they are shorter
    spec = BY_NAME["rnea_derivatives"]
    model = robot_model("panda")
    assert [v.run for v in spec.variants] == [rnea_derivatives.analytic_rnea_derivatives]
    assert spec.variants[0].preferred(model)
    kept = generate_program(model, spec).counts["operations"]
    forward = generate_program(model, dataclasses.replace(spec, variants=())).counts["operations"]
    analytic = generate_program(model, dataclasses.replace(spec, run=spec.variants[0].run, variants=())).counts["operations"]
    assert kept == analytic < forward
    # M^-1 through M's factors with the solve after the program is kept on UR5 (cost 589 against the
    # fixed frame's 786 operations; one call 78 against 97 ns), across branches (exact zeros of the
    # articulated inertias, W = X^T U) on Panda (2,257 against the table algorithm's 2,570); on a
    # tree with branches, across branches is tried first (preferred)
    spec = BY_NAME["minv"]
    assert [v.run for v in spec.variants] == [minv.minv_in_fixed_frame, minv.minv_across_branches,
                                              minv.minv_across_branches_in_fixed_frame, mimic.factors_of_m]
    assert [[v.preferred(robot_model(name)) for v in spec.variants] for name in ("ur5", "panda")] == \
        [[False] * 4, [False, True, False, False]]   # Panda's fingers are a branch
    for name, expected in (("ur5", mimic.factors_of_m), ("panda", minv.minv_across_branches)):
        model = robot_model(name)
        choice = {}
        kept = generate_program(model, spec, choice=choice).counts["operations"]
        body = generate_program(model, dataclasses.replace(spec, variants=())).counts["operations"]
        assert choice["kept"] == expected.__name__ and kept < body, (name, choice["kept"], kept, body)


@pytest.mark.parametrize("key", ["tree-fixed", "tree-floating"])
def test_identities_on_trees(key):
    model = tree_model(key)
    rng = np.random.default_rng(23)
    q, v, qdd = random_state(model, rng)
    tau = ref.rnea(model, q, v, qdd)
    dq, dv = ref.rnea_derivatives(model, q, v, qdd)
    Minv = ref.minv(model, q)
    ddq_dq, ddq_dv, ddq_dtau = ref.aba_derivatives(model, q, v, tau)
    assert_close(f"{key} ddq_dq = -Minv dtau_dq", ddq_dq, -Minv @ dq, REL_TOL_DERIVATIVES)
    assert_close(f"{key} ddq_dv = -Minv dtau_dv", ddq_dv, -Minv @ dv, REL_TOL_DERIVATIVES)
    assert_close(f"{key} ddq_dtau = Minv", ddq_dtau, Minv, REL_TOL_DERIVATIVES)
    for ours, at_zero in zip(ref.nle_derivatives(model, q, v), ref.rnea_derivatives(model, q, v, np.zeros(model.nv))):
        assert_close(f"{key} nle_derivatives", ours, at_zero, REL_TOL_DERIVATIVES)
    assert_close(f"{key} Y pi = tau", ref.regressor(model, q, v, qdd) @ ref.parameters(model), tau,
                 REL_TOL_DERIVATIVES)


@pytest.mark.parametrize("key", ["tree-floating", "solo12", "ur5"])
def test_base_regressor(key):
    model = tree_model(key) if key in TREES else robot_model(key)
    base = ref.base_parameters(model)
    rng = np.random.default_rng(29)
    q, v, a = random_state(model, rng, batch=30)
    Yb = ref.base_regressor(model, q, v, a)
    stacked = Yb.reshape(-1, Yb.shape[-1])
    assert np.linalg.matrix_rank(stacked) == len(base.columns), f"{key}: the base regressor is rank deficient"
    beta = base.K @ ref.parameters(model)
    assert_close(f"{key} Y_b beta = tau", Yb @ beta, ref.rnea(model, q, v, a), REL_TOL_DERIVATIVES)
    # any pi, not only the URDF's: beta = K pi carries all that the torques see of it
    pi = rng.normal(size=base.K.shape[1])
    assert_close(f"{key} Y pi = Y_b K pi", ref.regressor(model, q, v, a) @ pi, Yb @ (base.K @ pi), REL_TOL_DERIVATIVES)


# ------------------------------------------------------------ generated modules ----------

GENERATED = ["rnea_derivatives", "aba_derivatives", "nle_derivatives", "gravity_derivatives", "regressor",
             "base_regressor", "integrate", "difference", "frame_velocity_derivatives_world",
             "frame_acceleration_derivatives_local", "contact_dynamics_derivatives"]


@pytest.fixture(scope="session")
def derivatives_module(tmp_path_factory):
    model = tree_model("small-floating")
    out = str(tmp_path_factory.mktemp("derivatives"))
    contact = f"{model.frames[-1].name}:3d"
    return rbdgen.build_model(model, out_dir=out, algorithms=GENERATED, contacts=[contact]), model


def test_generated_matches_reference(derivatives_module):
    module, model = derivatives_module
    rng = np.random.default_rng(31)
    q, v, a = random_state(model, rng, batch=4)
    calls = {"rnea_derivatives": (q, v, a), "aba_derivatives": (q, v, a), "nle_derivatives": (q, v),
             "gravity_derivatives": (q,), "regressor": (q, v, a), "base_regressor": (q, v, a)}
    for name, args in calls.items():
        batch = getattr(module, name)(*args)
        expected = getattr(ref, name)(model, *args)
        single = getattr(module, name)(*(x[1] for x in args))
        if isinstance(expected, tuple):
            assert isinstance(batch, tuple) and len(batch) == len(expected), name
            for k, (b, s, e) in enumerate(zip(batch, single, expected)):
                assert_close(f"{name}[{k}] batch", b, e, REL_TOL_GENERATED)
                assert_close(f"{name}[{k}] single", s, e[1], REL_TOL_GENERATED)
        else:
            assert_close(f"{name} batch", batch, expected, REL_TOL_GENERATED)
            assert_close(f"{name} single", single, expected[1], REL_TOL_GENERATED)
    q1 = random_state(model, rng, batch=4)[0]
    for dt in (0.25, np.array([0.25]), 1.0):
        assert_close(f"integrate dt={dt}", module.integrate(q, v, dt), ref.integrate(model, q, v, float(np.ravel(dt)[0])),
                     REL_TOL_GENERATED)
    assert_close("integrate(q, v)", module.integrate(q[0], v[0]), ref.integrate(model, q[0], v[0]), REL_TOL_GENERATED)
    assert_close("difference", module.difference(q, q1), ref.difference(model, q, q1), REL_TOL_GENERATED)
    assert_close("integrate(q, difference(q, q1))", module.integrate(q, module.difference(q, q1)),
                 ref.integrate(model, q, ref.difference(model, q, q1)), REL_TOL_GENERATED)
    with pytest.raises(ValueError, match="dt"):
        module.integrate(q, v, [0.1, 0.2])
    frame = module.frames[-1]
    for k, (b, e) in enumerate(zip(module.frame_velocity_derivatives(q, v, frame, "world"),
                                   ref.frame_velocity_derivatives(model, q, v, frame, "world"))):
        assert_close(f"frame_velocity_derivatives[{k}]", b, e, REL_TOL_GENERATED)
    for k, (b, e) in enumerate(zip(module.frame_acceleration_derivatives(q[0], v[0], a[0], frame),
                                   ref.frame_acceleration_derivatives(model, q[0], v[0], a[0], frame))):
        assert_close(f"frame_acceleration_derivatives[{k}]", b, e, REL_TOL_GENERATED)
    tau = rng.normal(size=(4, model.nv))
    # the KKT solves after the program, in loops (algorithms.solves; tests/test_solves.py)
    assert module._META["functions"]["contact_dynamics_derivatives"]["accuracy"]["kept"] == \
        "contact_dynamics_derivatives_factored"
    for k, (b, e) in enumerate(zip(module.contact_dynamics_derivatives(q, v, tau, 0.01),
                                   ref.contact_dynamics_derivatives(model, q, v, tau, module.contacts, 0.01))):
        assert_close(f"contact_dynamics_derivatives[{k}]", b, e, REL_TOL_GENERATED)
    out = np.empty((4, 2 * model.nv * model.nv))
    dq, dv = module.rnea_derivatives(q, v, a, out=out)
    assert np.shares_memory(dq, out) and np.shares_memory(dv, out)
    assert_close("rnea_derivatives out=", dq, ref.rnea_derivatives(model, q, v, a)[0], REL_TOL_GENERATED)


def test_generated_parameters(derivatives_module):
    module, model = derivatives_module
    assert_close("parameters()", module.parameters(), ref.parameters(model), 0.0, abs_floor=1e-300)
    base = ref.base_parameters(model)
    assert_close("base_parameters()", module.base_parameters(), base.K @ ref.parameters(model), 1e-12)
    pi = np.random.default_rng(37).normal(size=(3, base.K.shape[1]))
    assert_close("base_parameters(pi)", module.base_parameters(pi), pi @ base.K.T, 1e-12)
    K, columns = module.base_parameter_map()
    assert columns == base.columns
    with pytest.raises(ValueError, match="pi"):
        module.base_parameters(np.ones(3))


def test_identification_example(derivatives_module):
    """The README's example: beta from noisy torques by least squares predicts the torques."""
    module, model = derivatives_module
    rng = np.random.default_rng(41)
    q, v, a = random_state(model, rng, batch=200)
    tau = ref.rnea(model, q, v, a) + rng.normal(scale=0.01, size=(200, model.nv))
    Yb = module.base_regressor(q, v, a)
    beta, *_ = np.linalg.lstsq(Yb.reshape(-1, Yb.shape[-1]), tau.ravel(), rcond=None)
    q, v, a = random_state(model, rng, batch=50)
    error = module.base_regressor(q, v, a) @ beta - ref.rnea(model, q, v, a)
    assert np.sqrt(np.mean(error ** 2)) < 0.01, "identified parameters predict torques worse than the noise"
