"""Run-time model parameters (issue 33, part 1) against outside truth: Pinocchio's model with
the same entries changed.

A module built with parameters=[...] takes `params` last in every function. Here the values are
random but physical (a link's ten = its nominal ten plus a random small rigid body's, which is
again a rigid body), and Pinocchio's model gets them entry by entry, read back from the
module's `param_names` (m_LINK ... Izz_LINK, m_payload_FRAME ..., g_x, armature_k,
origin_x_JOINT), so the names and layout are checked too:

- inertia:LINK -> pm.inertias[joint of LINK] = Inertia.FromDynamicParameters(ten values);
- payload:FRAME -> pm.inertias[frame.parentJoint] += frame.placement.act(payload);
- gravity -> pm.gravity; armature -> pm.armature; origin:JOINT -> pm.jointPlacements[j].translation.

Modules are built once per file (module-scoped fixtures): UR5 with and without parameters,
Panda with a payload and a declared contact, Solo12 (free-flyer) with every link's inertia.
"""

import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import rbdgen  # noqa: E402
from rbdgen import reference as ref  # noqa: E402
from rbdgen.model.parameters import INERTIA_NAMES, with_parameters  # noqa: E402
from rbdgen.algorithms import constrained  # noqa: E402
from rbdgen.runtime.pinocchio_bridge import pinocchio_constraints  # noqa: E402

from helpers import (ROBOTS, assert_close, pinocchio_model, random_configuration, robot_model,  # noqa: E402
                     robot_path, to_pinocchio_q)

pytestmark = pytest.mark.filterwarnings("ignore:.*<mimic> is ignored:UserWarning")

REL_TOL_PARAMS = 1e-10       # generated C at random parameters against Pinocchio's changed model
REL_TOL_SAME_CODE = 1e-12    # the same computation two ways (batch vs single, default vs nominal)
REL_TOL_ORDER = 1e-12        # Pinocchio's own conversions (the layout check)

# Pinocchio's dynamic parameters: m, m c, rotational inertia about the frame origin xx xy yy xz yz zz
WHAT = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")

UR5_SPECS = ["inertia:all", "gravity", "armature", "damping", "origin:elbow_joint", "origin:wrist_3_joint"]
UR5_ORIGINS = ("elbow_joint", "wrist_3_joint")
UR5_ALGORITHMS = ["rnea", "nle", "crba", "aba", "minv", "regressor", "passive_torque", "frame_placement",
                  "frame_jacobian_local_world_aligned", "frame_jacobian_local"]
UR5_FRAME = "tool0"
PANDA_SPECS = ["payload:panda_hand"]
PANDA_CONTACTS = ["panda_hand:3d"]
PANDA_ALGORITHMS = ["rnea", "nle", "crba", "aba", "minv", "contact_dynamics", "frame_jacobian_local_world_aligned",
                    "frame_classical_acceleration_local_world_aligned", "rnea_parameter_derivatives"]
FIT_STATES = 12              # states whose torques identify the payload
FIT_TOL = 1e-8               # the fitted mass and centre of mass, relative
SOLO_SPECS = ["inertia:all"]
SOLO_ALGORITHMS = ["rnea", "crba", "aba"]
B = 4


def build(folder, key, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rbdgen.build(robot_path(key), out_dir=str(folder), floating_base=ROBOTS[key][1], **options)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("parameters")


@pytest.fixture(scope="module")
def ur5(folder):
    return build(folder, "ur5", name="ur5_params", parameters=UR5_SPECS, algorithms=UR5_ALGORITHMS)


@pytest.fixture(scope="module")
def ur5_plain(folder):
    return build(folder, "ur5", name="ur5_plain", algorithms=["rnea", "crba", "aba", "frame_jacobian_local"])


@pytest.fixture(scope="module")
def panda(folder):
    return build(folder, "panda", name="panda_payload", parameters=PANDA_SPECS, algorithms=PANDA_ALGORITHMS,
                 contacts=PANDA_CONTACTS)


@pytest.fixture(scope="module")
def solo(folder):
    return build(folder, "solo12", name="solo_params", parameters=SOLO_SPECS, algorithms=SOLO_ALGORITHMS)


# ------------------------------------------------------------------ random physical values ---

def random_body(rng):
    """Pinocchio's ten dynamic parameters of a random rigid body: 0.1-1 kg, centre within 0.1 m,
    a box's principal inertia, turned at random (Pinocchio builds it from m, c, I_c)."""
    m = rng.uniform(0.1, 1.0)
    c = rng.uniform(-0.1, 0.1, size=3)
    sides = rng.uniform(0.02, 0.2, size=3) ** 2
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    Ic = R @ np.diag(m / 12 * (sides.sum() - sides)) @ R.T
    return np.array(pin.Inertia(m, c, Ic).toDynamicParameters())


def random_params(module, rng, inertia=True, others=True, origins=False):
    """Random physical values of a module's parameters, by name: bodies (links, payloads) get a
    random body added, gravity a random vector, armature a random value >= 0, origins a random
    shift; what is not asked keeps its nominal value."""
    names = list(module.param_names)
    p = np.array(module.nominal_params, dtype=float)
    for k, name in enumerate(names):
        if name.startswith("m_") and inertia:
            p[k:k + 10] += random_body(rng)
        elif name.startswith("g_") and others:
            p[k] = rng.normal(scale=5.0)
        elif name.startswith(("armature_", "damping_")) and others:
            p[k] = rng.uniform(0.0, 0.5)
        elif name.startswith("origin_") and origins:
            p[k] += rng.normal(scale=0.05)
    return p


# ------------------------------------------------------------------ Pinocchio's changed model --

def pinocchio_with(key, names, values):
    """Pinocchio's model of robot `key` with the entries that `names` (a module's param_names)
    name set to `values`."""
    pm = pinocchio_model(key)
    value = dict(zip(names, (float(x) for x in values)))
    done = set()
    payload_last = sorted(names, key=lambda name: "_payload_" in name)
    for name in payload_last:
        what, _, target = name.partition("_")
        if name in done:
            continue
        if what == "m" and target.startswith("payload_"):
            frame_name = target[len("payload_"):]
            ten = np.array([value[f"{w}_payload_{frame_name}"] for w in WHAT])
            done.update(f"{w}_payload_{frame_name}" for w in WHAT)
            if ten[0] == 0.0:
                assert not ten.any()
                continue
            frame = pm.frames[pm.getFrameId(frame_name)]
            pm.inertias[frame.parentJoint] = pm.inertias[frame.parentJoint] + \
                frame.placement.act(pin.Inertia.FromDynamicParameters(ten))
        elif what == "m":
            ten = np.array([value[f"{w}_{target}"] for w in WHAT])
            done.update(f"{w}_{target}" for w in WHAT)
            joint = link_joint(pm, target)
            pm.inertias[joint] = pin.Inertia.FromDynamicParameters(ten)
        elif what == "g":
            pm.gravity = pin.Motion(np.array([value["g_x"], value["g_y"], value["g_z"]]), np.zeros(3))
            done.update(("g_x", "g_y", "g_z"))
        elif what == "damping":   # Pinocchio's algorithms have no damping: see damping_of
            done.update(f"damping_{k + 1}" for k in range(pm.nv))
        elif what == "armature":
            pm.armature = np.array([value[f"armature_{k + 1}"] for k in range(pm.nv)])
            done.update(f"armature_{k + 1}" for k in range(pm.nv))
        elif what == "origin":
            joint_name = target[2:]
            j = pm.getJointId(joint_name)
            assert j < pm.njoints, f"Pinocchio has no joint {joint_name!r}"
            M = pin.SE3(pm.jointPlacements[j])
            M.translation = np.array([value[f"origin_{a}_{joint_name}"] for a in "xyz"])
            pm.jointPlacements[j] = M
            done.update(f"origin_{a}_{joint_name}" for a in "xyz")
        else:
            raise AssertionError(f"unexpected parameter name {name!r}")
    assert done == set(names)
    return pm


def link_joint(pm, link):
    """The Pinocchio joint that moves link `link`, whose frame is that joint's (identity placement)."""
    frame_id = pm.getFrameId(link, pin.FrameType.BODY)
    assert frame_id < pm.nframes, f"Pinocchio has no body frame {link!r}"
    frame = pm.frames[frame_id]
    assert frame.placement.isIdentity(), f"{link}'s frame is not its joint's"
    return frame.parentJoint


def crba_full(pm, pd, qp):
    M = np.array(pin.crba(pm, pd, qp))
    return np.triu(M) + np.triu(M, 1).T


class State:
    def __init__(self, key, seed, batch=None):
        model = robot_model(key)
        rng = np.random.default_rng(seed)
        self.q = random_configuration(model, rng, batch=batch)
        shape = (model.nv,) if batch is None else (batch, model.nv)
        self.v, self.a, self.tau = (rng.normal(size=shape) for _ in range(3))
        self.rng = rng
        self.qp = to_pinocchio_q(model, self.q) if batch is None else None


# ================================================================= layout ===================

def test_pinocchio_dynamic_parameters_order():
    """Pinocchio's ten are (m, m c, I_O: xx xy yy xz yz zz), I_O = I_c + m (|c|^2 1 - c c^T)."""
    rng = np.random.default_rng(0)
    m, c = 0.7, rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    Ic = A @ A.T
    IO = Ic + m * (c @ c * np.eye(3) - np.outer(c, c))
    expected = [m, *(m * c), IO[0, 0], IO[0, 1], IO[1, 1], IO[0, 2], IO[1, 2], IO[2, 2]]
    assert_close("toDynamicParameters", pin.Inertia(m, c, Ic).toDynamicParameters(), expected, REL_TOL_ORDER)
    back = pin.Inertia.FromDynamicParameters(np.array(expected))
    assert_close("FromDynamicParameters", back.toDynamicParameters(), expected, REL_TOL_ORDER)


def test_names_and_nominal_values_are_pinocchios(ur5):
    """param_names in the documented order, and nominal_params = Pinocchio's model of the URDF."""
    model = robot_model("ur5")
    names = [f"{w}_{link}" for link in model.body_names for w in WHAT] + ["g_x", "g_y", "g_z"] + \
        [f"armature_{k + 1}" for k in range(model.nv)] + [f"damping_{k + 1}" for k in range(model.nv)] + \
        [f"origin_{a}_{j}" for j in UR5_ORIGINS for a in "xyz"]
    assert list(ur5.param_names) == names
    pm = pinocchio_model("ur5")
    expected = [x for link in model.body_names for x in pm.inertias[link_joint(pm, link)].toDynamicParameters()]
    expected += list(pm.gravity.linear) + [0.0] * model.nv + [0.0] * model.nv   # UR5's URDF: no armature, no damping
    expected += [x for j in UR5_ORIGINS for x in pm.jointPlacements[pm.getJointId(j)].translation]
    assert ur5.nominal_params.shape == (len(names),)
    assert_close("nominal_params", ur5.nominal_params, expected, REL_TOL_ORDER)
    with pytest.raises(ValueError):
        ur5.nominal_params[0] = 1.0   # read-only


def test_model_parameters_api():
    """rbdgen.model.parameters.model_parameters: the module's names and nominal values;
    model_with(nominal) gives back the model's functions."""
    from rbdgen.model.parameters import model_parameters
    model = robot_model("ur5")
    params = model_parameters(model, UR5_SPECS)
    assert len(params) == len(params.names) == 10 * model.nbodies + 3 + 2 * model.nv + 3 * len(UR5_ORIGINS)
    same = params.model_with(params.nominal)
    s = State("ur5", 3)
    assert_close("model_with(nominal) rnea", ref.rnea(same, s.q, s.v, s.a), ref.rnea(model, s.q, s.v, s.a),
                 REL_TOL_SAME_CODE)


# ================================================================= UR5 against Pinocchio ====

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ur5_dynamics_at_random_parameters(ur5, seed):
    """inertia:all, gravity, armature at random physical values: rnea, nle, crba, aba, minv."""
    s = State("ur5", seed)
    p = random_params(ur5, s.rng)
    pm = pinocchio_with("ur5", ur5.param_names, p)
    pd = pm.createData()
    tag = f"ur5 seed {seed}"
    assert_close(f"{tag} rnea", ur5.rnea(s.q, s.v, s.a, params=p), pin.rnea(pm, pd, s.qp, s.v, s.a), REL_TOL_PARAMS)
    assert_close(f"{tag} nle", ur5.nle(s.q, s.v, params=p), pin.nonLinearEffects(pm, pd, s.qp, s.v), REL_TOL_PARAMS)
    assert_close(f"{tag} crba", ur5.crba(s.q, params=p), crba_full(pm, pd, s.qp), REL_TOL_PARAMS)
    assert_close(f"{tag} aba", ur5.aba(s.q, s.v, s.tau, params=p), pin.aba(pm, pd, s.qp, s.v, s.tau), REL_TOL_PARAMS)
    Minv = np.array(pin.computeMinverse(pm, pd, s.qp))
    assert_close(f"{tag} minv", ur5.minv(s.q, params=p), np.triu(Minv) + np.triu(Minv, 1).T, REL_TOL_PARAMS)


def damping_of(module, p):
    names = list(module.param_names)
    return np.array([p[names.index(f"damping_{k + 1}")] for k in range(module.nv)])


@pytest.mark.parametrize("seed", [0, 1])
def test_ur5_damping(ur5, seed):
    """damping: passive_torque(v) = -D v, and aba(passive=True) = Pinocchio's aba at tau - D v."""
    s = State("ur5", 5 + seed)
    p = random_params(ur5, s.rng)
    D = damping_of(ur5, p)
    assert (D > 0).all()
    assert_close("passive_torque", ur5.passive_torque(s.v, params=p), -D * s.v, REL_TOL_PARAMS)
    pm = pinocchio_with("ur5", ur5.param_names, p)
    pd = pm.createData()
    assert_close("aba passive", ur5.aba(s.q, s.v, s.tau, passive=True, params=p),
                 pin.aba(pm, pd, s.qp, s.v, s.tau - D * s.v), REL_TOL_PARAMS)
    # a batch with per-state params
    q, v, tau = (np.stack([x] * 2) for x in (s.q, s.v, s.tau))
    P = np.stack([p, ur5.nominal_params])
    assert_close("aba passive (batch)", ur5.aba(q, v, tau, passive=True, params=P)[0],
                 pin.aba(pm, pd, s.qp, s.v, s.tau - D * s.v), REL_TOL_PARAMS)


@pytest.mark.parametrize("seed", [0, 1])
def test_ur5_reference_at_random_parameters(ur5, seed):
    """rbdgen.reference on with_parameters(model, specs) agrees with Pinocchio too."""
    model = with_parameters(robot_model("ur5"), UR5_SPECS)
    s = State("ur5", 10 + seed)
    p = random_params(ur5, s.rng, origins=True)
    pm = pinocchio_with("ur5", ur5.param_names, p)
    pd = pm.createData()
    assert_close("reference rnea", ref.rnea(model, s.q, s.v, s.a, params=p), pin.rnea(pm, pd, s.qp, s.v, s.a),
                 REL_TOL_PARAMS)
    assert_close("reference aba", ref.aba(model, s.q, s.v, s.tau, params=p), pin.aba(pm, pd, s.qp, s.v, s.tau),
                 REL_TOL_PARAMS)
    assert_close("reference crba", ref.crba(model, s.q, params=p), crba_full(pm, pd, s.qp), REL_TOL_PARAMS)


@pytest.mark.parametrize("seed", [0, 1])
def test_ur5_frames_at_random_parameters(ur5, seed):
    """Frame placement and Jacobians: gravity/inertia change nothing there, origins do."""
    s = State("ur5", 20 + seed)
    p = random_params(ur5, s.rng, origins=True)
    pm = pinocchio_with("ur5", ur5.param_names, p)
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, s.qp)
    frame_id = pm.getFrameId(UR5_FRAME, pin.FrameType.BODY)
    R, t = ur5.frame_placement(s.q, UR5_FRAME, params=p)
    assert_close("frame_placement R", R, pd.oMf[frame_id].rotation, REL_TOL_PARAMS)
    assert_close("frame_placement p", t, pd.oMf[frame_id].translation, REL_TOL_PARAMS)
    for reference, pin_reference in (("local_world_aligned", pin.LOCAL_WORLD_ALIGNED), ("local", pin.LOCAL)):
        assert_close(f"frame_jacobian {reference}", ur5.frame_jacobian(s.q, UR5_FRAME, reference, params=p),
                     pin.computeFrameJacobian(pm, pd, s.qp, frame_id, pin_reference), REL_TOL_PARAMS)


@pytest.mark.parametrize("seed", [0, 1])
def test_ur5_origins_alone(ur5, seed):
    """origin:JOINT alone changed (inertias, gravity, armature nominal): Pinocchio's
    jointPlacements[j].translation; kinematics and dynamics follow."""
    s = State("ur5", 30 + seed)
    p = random_params(ur5, s.rng, inertia=False, others=False, origins=True)
    assert not np.array_equal(p, ur5.nominal_params)
    pm = pinocchio_with("ur5", ur5.param_names, p)
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, s.qp)
    frame_id = pm.getFrameId(UR5_FRAME, pin.FrameType.BODY)
    assert_close("origins: frame_placement p", ur5.frame_placement(s.q, UR5_FRAME, params=p)[1],
                 pd.oMf[frame_id].translation, REL_TOL_PARAMS)
    assert_close("origins: rnea", ur5.rnea(s.q, s.v, s.a, params=p), pin.rnea(pm, pd, s.qp, s.v, s.a),
                 REL_TOL_PARAMS)
    assert_close("origins: crba", ur5.crba(s.q, params=p), crba_full(pm, pd, s.qp), REL_TOL_PARAMS)
    # and it is not the nominal model's answer
    assert not np.allclose(ur5.frame_placement(s.q, UR5_FRAME, params=p)[1],
                           ur5.frame_placement(s.q, UR5_FRAME)[1], rtol=0, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_ur5_regressor_identity(ur5, seed):
    """rnea(q, v, a; params) = regressor(q, v, a; params) @ pi + armature * a, pi the params'
    inertia entries (the regressor's order: ten per body); and the regressor is Pinocchio's."""
    s = State("ur5", 40 + seed)
    p = random_params(ur5, s.rng, origins=True)
    names = list(ur5.param_names)
    nb = robot_model("ur5").nbodies
    pi = p[:10 * nb]
    assert names[:10 * nb] == [f"{w}_{link}" for link in robot_model("ur5").body_names for w in WHAT]
    armature = p[names.index("armature_1"):names.index("armature_1") + 6]
    Y = ur5.regressor(s.q, s.v, s.a, params=p)
    assert_close("rnea = Y pi + armature a", ur5.rnea(s.q, s.v, s.a, params=p), Y @ pi + armature * s.a,
                 REL_TOL_PARAMS)
    pm = pinocchio_with("ur5", names, p)
    pd = pm.createData()
    assert_close("regressor", Y, pin.computeJointTorqueRegressor(pm, pd, s.qp, s.v, s.a), REL_TOL_PARAMS)


def test_mimic_reference_against_pinocchio():
    """A model with mimic joints (Panda's fingers, mimic=True): the reference with inertia:all,
    gravity and a payload against Pinocchio's mimic model (rnea, crba; its aba has no mimic)."""
    from rbdgen.model.parameters import model_parameters
    from rbdgen.runtime.pinocchio_bridge import pinocchio_model as pinocchio_model_of
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rbdgen.load_urdf(robot_path("panda"), mimic=True)
    specs = ["inertia:all", "gravity", "payload:panda_hand"]
    params = model_parameters(model, specs)
    rng = np.random.default_rng(100)
    p = np.array(params.nominal)
    for k, name in enumerate(params.names):
        if name.startswith("m_"):
            p[k:k + 10] += random_body(rng)
        elif name.startswith("g_"):
            p[k] = rng.normal(scale=5.0)
    pm = pinocchio_model_of(robot_path("panda"), False, mimic=True)
    value = dict(zip(params.names, p))
    for link in model.full.body_names:
        ten = np.array([value[f"{w}_{link}"] for w in WHAT])
        pm.inertias[link_joint(pm, link)] = pin.Inertia.FromDynamicParameters(ten)
    pm.gravity = pin.Motion(np.array([value["g_x"], value["g_y"], value["g_z"]]), np.zeros(3))
    frame = pm.frames[pm.getFrameId("panda_hand")]
    pm.inertias[frame.parentJoint] = pm.inertias[frame.parentJoint] + frame.placement.act(
        pin.Inertia.FromDynamicParameters(np.array([value[f"{w}_payload_panda_hand"] for w in WHAT])))
    pd = pm.createData()
    with_p = with_parameters(model, specs)
    q = random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    qp = to_pinocchio_q(model, q)
    assert qp.shape == (pm.nq,)
    assert_close("mimic rnea", ref.rnea(with_p, q, v, a, params=p), pin.rnea(pm, pd, qp, v, a), REL_TOL_PARAMS)
    assert_close("mimic crba", ref.crba(with_p, q, params=p), crba_full(pm, pd, qp), REL_TOL_PARAMS)


def test_model_armature_is_nominal():
    """A model loaded with armature: nominal armature_k are its values, and params replace them."""
    from rbdgen.model.parameters import model_parameters
    model = rbdgen.load_urdf(robot_path("ur5"), armature={"elbow_joint": 0.3, "wrist_1_joint": 0.2})
    params = model_parameters(model, ["armature"])
    assert list(params.nominal) == [0.0, 0.0, 0.3, 0.2, 0.0, 0.0]
    with_p = with_parameters(model, ["armature"])
    s = State("ur5", 101)
    pm = pinocchio_model("ur5")
    pd = pm.createData()
    pm.armature = np.array([0.0, 0.0, 0.3, 0.2, 0.0, 0.0])
    assert_close("armature nominal crba", ref.crba(with_p, s.q), crba_full(pm, pd, s.qp), REL_TOL_PARAMS)
    other = np.array([0.1, 0.0, 0.0, 0.5, 0.0, 0.05])
    pm.armature = other
    assert_close("armature crba", ref.crba(with_p, s.q, params=other), crba_full(pm, pd, s.qp), REL_TOL_PARAMS)


@pytest.mark.parametrize("key, specs", [
    ("panda", ["payload:panda_hand", "inertia:panda_link7", "origin:panda_finger_joint1", "origin:panda_joint1",
               "armature", "gravity"]),
    ("solo12", ["origin:FL_HAA", "origin:HR_KFE", "inertia:base_link", "gravity", "armature"]),
])
def test_reference_groups_together(key, specs):
    """Several groups at once through rbdgen.reference (a link's own inertia and a payload on a
    frame fixed to it; an origin whose parent link carries fixed links (the finger's, on
    panda_hand); a joint on the root): rnea, crba, aba against Pinocchio."""
    model = robot_model(key)
    with_p = with_parameters(model, specs)
    from rbdgen.model.parameters import model_parameters
    params = model_parameters(model, specs)
    pm0 = pinocchio_model(key)
    for name, nominal in zip(params.names, params.nominal):   # nominal origins are Pinocchio's joint placements
        if name.startswith("origin_"):
            joint = name[len("origin_x_"):]
            axis = "xyz".index(name[len("origin_")])
            assert_close(f"nominal {name}", nominal, pm0.jointPlacements[pm0.getJointId(joint)].translation[axis],
                         REL_TOL_ORDER)

    class Names:   # random_params reads a module's names and nominal values
        param_names, nominal_params = params.names, np.array(params.nominal)
    for seed in (0, 1):
        s = State(key, 110 + seed)
        p = random_params(Names, s.rng, origins=True)
        pm = pinocchio_with(key, params.names, p)
        pd = pm.createData()
        tag = f"{key} seed {seed}"
        assert_close(f"{tag} rnea", ref.rnea(with_p, s.q, s.v, s.a, params=p), pin.rnea(pm, pd, s.qp, s.v, s.a),
                     REL_TOL_PARAMS)
        assert_close(f"{tag} crba", ref.crba(with_p, s.q, params=p), crba_full(pm, pd, s.qp), REL_TOL_PARAMS)
        assert_close(f"{tag} aba", ref.aba(with_p, s.q, s.v, s.tau, params=p), pin.aba(pm, pd, s.qp, s.v, s.tau),
                     REL_TOL_PARAMS)


@pytest.mark.parametrize("key", sorted(ROBOTS))
def test_nominal_values_of_every_robot_are_physical(key):
    """The URDFs' own inertias (merged as the algorithms see them), armature and damping pass
    the check (the tolerance lets values written to a few digits through)."""
    from rbdgen.model.parameters import model_parameters
    params = model_parameters(robot_model(key), ["inertia:all", "armature", "damping", "gravity"])
    assert params.problem(np.array(params.nominal)) is None, params.problem(np.array(params.nominal))


def test_sample_is_physical():
    """Parameters.sample (what verification draws) gives values check_params accepts."""
    from rbdgen.model.parameters import model_parameters
    for key, specs in [("ur5", UR5_SPECS), ("panda", PANDA_SPECS + ["inertia:all", "armature", "damping"]),
                       ("solo12", SOLO_SPECS + ["gravity"])]:
        params = model_parameters(robot_model(key), specs)
        values = params.sample(np.random.default_rng(7), 50)
        assert values.shape == (50, len(params))
        assert params.problem(values) is None, params.problem(values)
        assert params.problem(np.array(params.nominal)) is None


def test_reference_batch_params_equal_the_module(ur5):
    """rbdgen.reference with params (B, np) and (np,) equals the module's batch."""
    model = with_parameters(robot_model("ur5"), UR5_SPECS)
    s = State("ur5", 120, batch=B)
    P = np.stack([random_params(ur5, s.rng, origins=True) for _ in range(B)])
    assert_close("reference rnea (B, np)", ref.rnea(model, s.q, s.v, s.a, params=P), ur5.rnea(s.q, s.v, s.a, params=P),
                 REL_TOL_PARAMS)
    assert_close("reference aba (np,)", ref.aba(model, s.q, s.v, s.tau, params=P[0]),
                 ur5.aba(s.q, s.v, s.tau, params=P[0]), REL_TOL_PARAMS)
    assert_close("reference frame_jacobian (B, np)", ref.frame_jacobian(model, s.q, UR5_FRAME, "local", params=P),
                 ur5.frame_jacobian(s.q, UR5_FRAME, "local", params=P), REL_TOL_PARAMS)
    with pytest.raises(ValueError, match="params"):
        ref.rnea(robot_model("ur5"), s.q[0], s.v[0], s.a[0], params=P[0])   # a model without parameters


def test_spec_errors_name_the_link():
    from rbdgen.model.parameters import model_parameters
    model = robot_model("panda")
    for spec, words in [("inertia:panda_hand", ("panda_link7",)), ("payload:panda_link0", ("world",)),
                        ("inertia:panda_lnk7", ("panda_link7",)), ("origin:no_joint", ("no_joint",)),
                        ("gravity:x", ("gravity:x",)), ("mass", ("mass",))]:
        with pytest.raises(rbdgen.errors.ModelError) as info:
            model_parameters(model, [spec])
        assert "\n" not in str(info.value)
        for word in words:
            assert word in str(info.value), str(info.value)
    # the inertia of a link carrying fixed links is the merged one, as Pinocchio's
    params = model_parameters(model, ["inertia:panda_link7"])
    pm = pinocchio_model("panda")
    assert_close("merged panda_link7", params.nominal, pm.inertias[link_joint(pm, "panda_link7")].toDynamicParameters(),
                 REL_TOL_ORDER)


def assert_joint_space(label, module, key, s, p):
    """rnea, crba and aba at parameters p against Pinocchio's model with them."""
    pm = pinocchio_with(key, module.param_names, p)
    pd = pm.createData()
    assert_close(f"{label} rnea", module.rnea(s.q, s.v, s.a, params=p), pin.rnea(pm, pd, s.qp, s.v, s.a), REL_TOL_PARAMS)
    assert_close(f"{label} crba", module.crba(s.q, params=p), crba_full(pm, pd, s.qp), REL_TOL_PARAMS)
    assert_close(f"{label} aba", module.aba(s.q, s.v, s.tau, params=p), pin.aba(pm, pd, s.qp, s.v, s.tau),
                 REL_TOL_PARAMS)


# ================================================================= Panda payload ============

@pytest.mark.parametrize("seed", [0, 1])
def test_panda_payload(panda, seed):
    s = State("panda", 50 + seed)
    p = random_params(panda, s.rng)
    assert list(panda.param_names) == [f"{w}_payload_panda_hand" for w in WHAT]
    assert not panda.nominal_params.any()
    assert_joint_space("payload", panda, "panda", s, p)
    # the payload matters: not the nominal answer
    assert not np.allclose(panda.rnea(s.q, s.v, s.a, params=p), panda.rnea(s.q, s.v, s.a), rtol=1e-6)


def test_panda_payload_fitted_from_pinocchios_torques(panda):
    """Identification: a payload's mass and centre of mass fitted by least squares from the
    torques of Pinocchio's loaded robot, through the generated derivatives (rnea is linear in
    the payload's parameters: tau = rnea(q, v, a; 0) + D(q, v, a) p)."""
    rng = np.random.default_rng(71)
    mass, com = 1.3, np.array([0.02, -0.01, 0.08])
    true = np.array(pin.Inertia(mass, com, np.diag([2e-3, 3e-3, 1e-3])).toDynamicParameters())
    pm = pinocchio_with("panda", panda.param_names, true)
    pd = pm.createData()
    rows, torques = [], []
    for k in range(FIT_STATES):
        s = State("panda", 700 + k)
        measured = pin.rnea(pm, pd, s.qp, s.v, s.a)
        rows.append(panda.rnea_parameter_derivatives(s.q, s.v, s.a, panda.nominal_params))
        torques.append(measured - panda.rnea(s.q, s.v, s.a))
    fitted = np.linalg.lstsq(np.vstack(rows), np.concatenate(torques), rcond=None)[0]
    assert_close("fitted payload mass", fitted[0], mass, FIT_TOL)
    assert_close("fitted payload centre of mass", fitted[1:4] / fitted[0], com, FIT_TOL)


@pytest.mark.parametrize("seed", [0, 1])
def test_panda_payload_contact_dynamics(panda, seed):
    """The declared contact panda_hand:3d with a payload: Pinocchio's constraintDynamics."""
    s = State("panda", 60 + seed)
    p = random_params(panda, s.rng)
    pm = pinocchio_with("panda", panda.param_names, p)
    pd = pm.createData()
    contacts = constrained.parse_contacts(robot_model("panda"), PANDA_CONTACTS)
    models, datas = pinocchio_constraints(pm, contacts)
    pin.initConstraintDynamics(pm, pd, models, datas)
    exact = pin.ProximalSettings(1e-14, 0.0, 1)
    qdd_pin = np.array(pin.constraintDynamics(pm, pd, s.qp, s.v, s.tau, models, datas, exact))
    qdd, lam = panda.contact_dynamics(s.q, s.v, s.tau, params=p)
    assert_close("contact q-ddot", qdd, qdd_pin, REL_TOL_PARAMS)
    assert_close("contact lambda", lam, pd.lambda_c, REL_TOL_PARAMS)
    # the same contact chosen at call time (lambda in world axes: compare q-ddot)
    qdd_now, _ = panda.contact_dynamics(s.q, s.v, s.tau, contacts=[("panda_hand", (0.0, 0.0, 0.0), None)], params=p)
    assert_close("call-time contact q-ddot", qdd_now, qdd_pin, REL_TOL_PARAMS)
    with_p = with_parameters(robot_model("panda"), PANDA_SPECS)
    qdd_ref, _ = ref.contact_dynamics(with_p, s.q, s.v, s.tau, [("panda_hand", (0.0, 0.0, 0.0), None)], params=p)
    assert_close("reference contact q-ddot", qdd_ref, qdd_pin, REL_TOL_PARAMS)
    # an impact at the same contact (call-time contacts: M^-1 and the point Jacobian at params)
    v_plus, _ = panda.impulse_dynamics(s.q, s.v, contacts=[("panda_hand", (0.0, 0.0, 0.0), None)], restitution=0.5,
                                       params=p)
    assert_close("impulse v+", v_plus, pin.impulseDynamics(pm, pd, s.qp, s.v, models, datas, 0.5, exact),
                 REL_TOL_PARAMS)


def test_panda_contact_dynamics_batch_params(panda):
    """The declared contact's dynamics with params per state (B, np) = the single calls."""
    s = State("panda", 63, batch=B)
    P = np.stack([random_params(panda, s.rng) for _ in range(B)])
    qdd, lam = panda.contact_dynamics(s.q, s.v, s.tau, params=P, threads=2)
    for k in range(B):
        qdd_k, lam_k = panda.contact_dynamics(s.q[k], s.v[k], s.tau[k], params=P[k])
        assert_close(f"contact q-ddot state {k}", qdd[k], qdd_k, REL_TOL_SAME_CODE)
        assert_close(f"contact lambda state {k}", lam[k], lam_k, REL_TOL_SAME_CODE)


def test_panda_contact_dynamics_refuses_non_physical(panda):
    s = State("panda", 62)
    p = np.array(panda.nominal_params)
    p[list(panda.param_names).index("m_payload_panda_hand")] = -0.5
    one_line_error(lambda: panda.contact_dynamics(np.tile(s.q, (2, 1)), np.tile(s.v, (2, 1)),
                                                  np.tile(s.tau, (2, 1)), params=p), "m_payload_panda_hand")
    one_line_error(lambda: panda.contact_dynamics(s.q, s.v, s.tau, params=p), "m_payload_panda_hand")
    one_line_error(lambda: panda.aba(s.q, s.v, s.tau, params=p), "m_payload_panda_hand")


# ================================================================= Solo12 (free-flyer) ======

@pytest.mark.parametrize("seed", [0, 1])
def test_solo12_inertias(solo, seed):
    s = State("solo12", 70 + seed)
    p = random_params(solo, s.rng)
    assert len(p) == 10 * robot_model("solo12").nbodies
    assert_joint_space("solo12", solo, "solo12", s, p)


# ================================================================= batches and defaults =====

def ur5_calls(module, q, v, a, tau, p):
    keywords = {} if p is None else {"params": p}
    return {"rnea": module.rnea(q, v, a, **keywords), "crba": module.crba(q, **keywords),
            "aba": module.aba(q, v, tau, **keywords), "minv": module.minv(q, **keywords),
            "frame_jacobian": module.frame_jacobian(q, UR5_FRAME, "local_world_aligned", **keywords),
            "frame_placement p": module.frame_placement(q, UR5_FRAME, **keywords)[1]}


def test_batch_params_per_state(ur5):
    """q (B, nq) with params (B, np): state k's result is the single call with params[k]."""
    s = State("ur5", 80, batch=B)
    P = np.stack([random_params(ur5, s.rng, origins=True) for _ in range(B)])
    batched = ur5_calls(ur5, s.q, s.v, s.a, s.tau, P)
    for k in range(B):
        single = ur5_calls(ur5, s.q[k], s.v[k], s.a[k], s.tau[k], P[k])
        for what, value in single.items():
            assert_close(f"{what} state {k} of the batch", batched[what][k], value, REL_TOL_SAME_CODE)


def test_batch_params_per_state_threads(ur5):
    """The same with OpenMP threads: each state still gets its own params."""
    s = State("ur5", 83, batch=2 * B)
    P = np.stack([random_params(ur5, s.rng, origins=True) for _ in range(2 * B)])
    one_thread = ur5.aba(s.q, s.v, s.tau, params=P, threads=1)
    assert_close("aba threads=2", ur5.aba(s.q, s.v, s.tau, params=P, threads=2), one_thread, REL_TOL_SAME_CODE)
    for k in (0, 2 * B - 1):
        assert_close(f"aba state {k}", one_thread[k], ur5.aba(s.q[k], s.v[k], s.tau[k], params=P[k]), REL_TOL_SAME_CODE)


def test_batch_params_per_state_past_the_prefetch_size(ur5):
    """A batch whose per-state params exceed RBDGEN_PREFETCH_BYTES (4 MB, kernels.h.j2) fetches
    them ahead: the same numbers as the same states in batches below it, on one thread and two."""
    prefetch_bytes = 4 << 20
    chunk = 1000                                   # 1000 states' params: well below the size
    s = State("ur5", 84, batch=chunk)
    nominal = np.asarray(ur5.nominal_params)
    count = prefetch_bytes // (8 * nominal.size) + 2 * chunk + 19
    reps = -(-count // chunk)
    q, v, tau = (np.tile(x, (reps, 1))[:count] for x in (s.q, s.v, s.tau))
    # inertial parameters scaled by a positive factor per state stay physical
    P = np.tile(nominal, (count, 1))
    inertial = np.array([name.split("_")[0] in INERTIA_NAMES for name in ur5.param_names])
    P[:, inertial] *= s.rng.uniform(0.5, 2.0, size=(count, 1))
    whole = ur5.aba(q, v, tau, params=P, threads=1)
    parts = np.concatenate([ur5.aba(q[k:k + chunk], v[k:k + chunk], tau[k:k + chunk], params=P[k:k + chunk])
                            for k in range(0, count, chunk)])
    assert np.array_equal(whole, parts)
    assert np.array_equal(ur5.aba(q, v, tau, params=P, threads=2), parts)
    assert np.array_equal(ur5.rnea(q, v, tau, params=P), np.concatenate(
        [ur5.rnea(q[k:k + chunk], v[k:k + chunk], tau[k:k + chunk], params=P[k:k + chunk])
         for k in range(0, count, chunk)]))


def test_batch_params_shared(ur5):
    """params (np,) with a batch (the C batch reads it for every state: params_shared, no copy):
    the same as each state's copy (B, np), on vectors of states and on the last few alone."""
    count = 19   # two vectors of 8 states and three alone, or more vectors of fewer lanes
    s = State("ur5", 81, batch=count)
    p = random_params(ur5, s.rng, origins=True)
    shared = ur5_calls(ur5, s.q, s.v, s.a, s.tau, p)
    copies = ur5_calls(ur5, s.q, s.v, s.a, s.tau, np.tile(p, (count, 1)))
    for what in shared:
        assert shared[what].shape[0] == count
        assert_close(f"{what} shared params", shared[what], copies[what], REL_TOL_SAME_CODE)
    assert_close("aba shared params, two threads", ur5.aba(s.q, s.v, s.tau, params=p, threads=2), copies["aba"],
                 REL_TOL_SAME_CODE)


def test_default_params_are_nominal_and_the_plain_module(ur5, ur5_plain):
    """params=None is nominal_params, and both are the module built without parameters."""
    for batch in (None, B):
        s = State("ur5", 82, batch=batch)
        default = ur5_calls(ur5, s.q, s.v, s.a, s.tau, None)
        nominal = ur5_calls(ur5, s.q, s.v, s.a, s.tau, ur5.nominal_params)
        for what in default:
            assert_close(f"{what} default vs nominal", default[what], nominal[what], REL_TOL_SAME_CODE)
        plain = {"rnea": ur5_plain.rnea(s.q, s.v, s.a), "crba": ur5_plain.crba(s.q),
                 "aba": ur5_plain.aba(s.q, s.v, s.tau),
                 "frame_jacobian": ur5_plain.frame_jacobian(s.q, UR5_FRAME, "local")}
        default["frame_jacobian"] = ur5.frame_jacobian(s.q, UR5_FRAME, "local")
        for what, value in plain.items():
            assert_close(f"{what} default vs no parameters", default[what], value, REL_TOL_SAME_CODE)


# ================================================================= errors ===================

def one_line_error(call, *words, error=ValueError):
    with pytest.raises(error) as info:
        call()
    text = str(info.value)
    assert "\n" not in text, f"not one line: {text!r}"
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"
    return text


def test_check_params_accepts_nominal(ur5, panda, solo):
    for module in (ur5, panda, solo):
        module.check_params(module.nominal_params)
        module.check_params(np.tile(module.nominal_params, (3, 1)))


def test_params_shapes_and_types(ur5):
    """A batch of params needs a batch of states of the same size; lists and integers are
    converted, complex refused."""
    s = State("ur5", 89)
    P = np.tile(ur5.nominal_params, (3, 1))
    one_line_error(lambda: ur5.rnea(s.q, s.v, s.a, params=P), "params")    # one state, three params
    one_line_error(lambda: ur5.aba(s.q, s.v, s.tau, params=P), "params")
    one_line_error(lambda: ur5.frame_placement(s.q, UR5_FRAME, params=P), "params")
    Q, V, A = (np.tile(x, (2, 1)) for x in (s.q, s.v, s.a))
    one_line_error(lambda: ur5.rnea(Q, V, A, params=P), "params")           # two states, three params
    expected = ur5.rnea(s.q, s.v, s.a, params=ur5.nominal_params)
    assert_close("params as a list", ur5.rnea(s.q, s.v, s.a, params=list(ur5.nominal_params)), expected,
                 REL_TOL_SAME_CODE)
    with pytest.raises(TypeError, match="params"):
        ur5.rnea(s.q, s.v, s.a, params=np.array(ur5.nominal_params, dtype=complex))
    out = np.empty(6)
    assert ur5.rnea(s.q, s.v, s.a, params=ur5.nominal_params, out=out) is out
    assert_close("out=", out, expected, REL_TOL_SAME_CODE)


def test_wrong_size_and_non_finite(ur5):
    s = State("ur5", 90)
    n = len(ur5.param_names)
    for bad in (np.zeros(n - 1), np.zeros(n + 1), np.zeros((2, 3, n))):
        one_line_error(lambda: ur5.rnea(s.q, s.v, s.a, params=bad), "params")
        one_line_error(lambda: ur5.aba(s.q, s.v, s.tau, params=bad), "params")
    names = list(ur5.param_names)
    for name in ("g_y", "m_forearm_link", "Iyz_wrist_2_link", "armature_4", "origin_x_elbow_joint"):
        for value in (np.nan, np.inf):
            p = np.array(ur5.nominal_params)
            p[names.index(name)] = value
            for call in (lambda: ur5.rnea(s.q, s.v, s.a, params=p), lambda: ur5.crba(s.q, params=p),
                         lambda: ur5.aba(s.q, s.v, s.tau, params=p), lambda: ur5.check_params(p),
                         lambda: ur5.frame_placement(s.q, UR5_FRAME, params=p)):
                one_line_error(call, name)


def test_non_physical_values(ur5):
    s = State("ur5", 91)
    names = list(ur5.param_names)
    nominal = np.array(ur5.nominal_params)

    def changed(**values):
        p = nominal.copy()
        for name, value in values.items():
            p[names.index(name)] = value
        return p

    negative_mass = changed(m_wrist_1_link=-1.0)
    one_line_error(lambda: ur5.check_params(negative_mass), "m_wrist_1_link")
    one_line_error(lambda: ur5.aba(s.q, s.v, s.tau, params=negative_mass), "m_wrist_1_link")
    one_line_error(lambda: ur5.minv(s.q, params=negative_mass), "m_wrist_1_link")
    one_line_error(lambda: ur5.check_params(changed(armature_3=-0.1)), "armature_3")
    one_line_error(lambda: ur5.aba(s.q, s.v, s.tau, params=changed(armature_3=-0.1)), "armature_3")
    one_line_error(lambda: ur5.check_params(changed(damping_2=-0.1)), "damping_2")
    # an inertia about the COM that is not PSD (Ixx very negative)
    not_psd = changed(Ixx_upper_arm_link=-1.0)
    one_line_error(lambda: ur5.check_params(not_psd), "upper_arm_link")
    one_line_error(lambda: ur5.aba(s.q, s.v, s.tau, params=not_psd), "upper_arm_link")
    # in a batch: the state is named
    batch = np.tile(nominal, (3, 1))
    batch[2, names.index("m_shoulder_link")] = -2.0
    q3 = np.tile(s.q, (3, 1))
    one_line_error(lambda: ur5.check_params(batch), "state 2", "m_shoulder_link")
    one_line_error(lambda: ur5.aba(q3, np.zeros((3, 6)), np.zeros((3, 6)), params=batch), "state 2",
                   "m_shoulder_link")
    # rnea, which solves nothing, computes with any finite values
    assert np.isfinite(ur5.rnea(s.q, s.v, s.a, params=negative_mass)).all()
    # finite values too large to test (the inertia about the centre of mass overflows): one line too
    huge = nominal.copy()
    k = names.index("m_forearm_link")
    huge[k:k + 10] *= 1e200
    one_line_error(lambda: ur5.check_params(huge), "m_forearm_link", "too large")
    one_line_error(lambda: ur5.aba(s.q, s.v, s.tau, params=huge), "too large")


def test_non_physical_state_among_groups(ur5):
    """The C test takes the states in groups of 8 (rbdgen_physical.c), the last few one by one: a
    bad state inside a group, after a good group, and among the last few is the one named, and
    the first of two; a strict-only failure (the triangle inequality) too."""
    names = list(ur5.param_names)
    nominal = np.array(ur5.nominal_params)
    count = 21   # two groups of 8 and 5 alone
    rod = nominal.copy()
    k = names.index("Izz_forearm_link")
    rod[k] += 10.0 * (rod[names.index("Ixx_forearm_link")] + rod[names.index("Iyy_forearm_link")])
    for bad in (11, 19, 0, 7, 8):
        for what, value, strict_only in (("m_shoulder_link", -2.0, False), ("Ixx_upper_arm_link", -1.0, False),
                                         ("mcx_wrist_2_link", np.nan, False), (None, None, True)):
            batch = np.tile(nominal, (count, 1))
            if strict_only:
                batch[bad] = rod
                batch[min(bad + 3, count - 1)] = rod
                one_line_error(lambda: ur5.check_params(batch), f"state {bad}", "forearm_link")
                continue
            batch[bad, names.index(what)] = value
            batch[min(bad + 3, count - 1), names.index(what)] = value
            link = what.split("_", 1)[1]
            one_line_error(lambda: ur5.check_params(batch), f"state {bad}", link)
            qs = np.tile(State("ur5", 93).q, (count, 1))
            one_line_error(lambda: ur5.minv(qs, params=batch), f"state {bad}")
    ur5.check_params(np.tile(nominal, (count, 1)))


# A body at the tolerance of the triangle inequality (a UR5 link's ten, nearly a rod), which
# physical.py refuses: found by a review, where fused multiply-adds accepted it
AT_THE_TOLERANCE = [1.2321631190025433, 0.04845133299569915, -0.08311100592474659, -0.026640298756871898,
                    0.127345278223686, -0.0011087016518097604, 0.09929211783167669, -0.04120474906068485,
                    -0.015988877258600438, 0.1715122465497095]

PHYSICAL_DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include <math.h>
#define RBDGEN_PARAM_BODIES 1
#define RBDGEN_PARAM_NONNEGATIVE 0
static const long param_bodies[2][10] = { { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 }, { 0 } };
static const long param_nonnegative[1] = { 0 };
#include "%s"
int main(void)
{
    const double body[10] = { %s };
    double p[170];
    for (int s = 0; s < 17; ++s)
        memcpy(p + 10 * s, body, sizeof body);
    for (int n = 1; n <= 17; ++n)   /* alone, in groups of 8, and after them */
        printf("%%ld %%ld\n", params_problem(p, n, 0, 10, 1), params_problem(p, n, n - 1, 10, 1));
    return 0;
}
"""


def test_parameter_test_in_c_rounds_as_physical_py(tmp_path, monkeypatch):
    """rbdgen_physical.c compiled as the module's calls.c is (the functions' flags and
    ENTRY_POINT_FLAGS), by every C compiler here: it refuses the body physical.py refuses, alone,
    in a group of 8 states and after one. Fused (without ENTRY_POINT_FLAGS) gcc accepted it in a
    group of 8, clang always."""
    from rbdgen.codegen.compiler import c_compiler, compile_flags
    from rbdgen.codegen.package import BINDINGS, ENTRY_POINT_FLAGS
    from rbdgen.model import physical
    assert physical.problem(np.array(AT_THE_TOLERANCE), [("rod", list(range(10)))], [],
                            [f"p{k}" for k in range(10)], True) is not None
    source = tmp_path / "driver.c"
    source.write_text(PHYSICAL_DRIVER % (os.path.join(BINDINGS, "physical.c"), ", ".join(map(repr, AT_THE_TOLERANCE))))
    compilers = [cc for cc in dict.fromkeys([c_compiler(), "gcc", "clang"]) if shutil.which(cc)]
    assert compilers
    for cc in compilers:
        monkeypatch.setenv("CC", cc)
        program = tmp_path / f"driver_{cc}"
        subprocess.run([cc, *compile_flags(True), *ENTRY_POINT_FLAGS, str(source), "-o", str(program), "-lm"],
                       check=True)
        lines = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout.split("\n")
        found = [tuple(int(x) for x in line.split()) for line in lines if line]
        assert found == [(0, n - 1) for n in range(1, 18)], (cc, found)


def test_triangle_inequality(ur5):
    """check_params refuses an inertia about the COM breaking the triangle inequality (a thin
    rod's I_zz above I_xx + I_yy); the solves only need it PSD and accept it."""
    s = State("ur5", 92)
    names = list(ur5.param_names)
    p = np.array(ur5.nominal_params)
    k = names.index("Izz_forearm_link")
    p[k] += 10.0 * (p[names.index("Ixx_forearm_link")] + p[names.index("Iyy_forearm_link")])
    one_line_error(lambda: ur5.check_params(p), "forearm_link", "triangle")
    assert np.isfinite(ur5.aba(s.q, s.v, s.tau, params=p)).all()


def massless_wrist_3(ur5):
    """nominal_params with wrist_3_link (carrying ee_link and tool0) massless and no armature:
    the last joint moves no mass, so M is singular."""
    p = np.array(ur5.nominal_params)
    k = list(ur5.param_names).index("m_wrist_3_link")
    p[k:k + 10] = 0.0
    return p


def test_singular_mass_matrix(ur5):
    """aba and minv refuse their non-finite result (batch: naming the state; a state given as a
    list, which takes the converting path)."""
    s = State("ur5", 93)
    p = massless_wrist_3(ur5)
    ur5.check_params(p)   # massless with no inertia is physical: the problem is M's
    assert np.linalg.eigvalsh(ur5.crba(s.q, params=p))[0] < 1e-12
    one_line_error(lambda: ur5.aba(list(s.q), s.v, s.tau, params=p), "singular")
    one_line_error(lambda: ur5.minv(list(s.q), params=p), "singular")
    P = np.tile(ur5.nominal_params, (3, 1))
    P[1] = p
    one_line_error(lambda: ur5.aba(np.tile(s.q, (3, 1)), np.zeros((3, 6)), np.zeros((3, 6)), params=P),
                   "singular", "state 1")
    one_line_error(lambda: ur5.minv(np.tile(s.q, (3, 1)), params=P), "singular", "state 1")


def test_singular_mass_matrix_float64_vectors(ur5):
    """The common call (float64 arrays) refuses a singular M as the others do."""
    s = State("ur5", 93)
    p = massless_wrist_3(ur5)
    one_line_error(lambda: ur5.aba(s.q, s.v, s.tau, params=p), "singular")
    one_line_error(lambda: ur5.minv(s.q, params=p), "singular")


# A module with parameters and params=None and one without agree to a few tens of units in the
# last place of a state's largest entry: a parameter is an input of the program there, a
# constant folded into it here (docs/parameters.md: UR5 with every kind of parameter, nle up to
# 29 ulp over 20 000 states)
ULPS_PLAIN = 64


def test_default_params_within_a_few_ulps_of_the_plain_module(ur5, ur5_plain):
    """docs/parameters.md's claim: params=None is nominal_params bit for bit, and within a few
    ulps of the module built without parameters."""
    s = State("ur5", 83, batch=256)
    for name, args in (("rnea", (s.q, s.v, s.a)), ("crba", (s.q,)), ("aba", (s.q, s.v, s.tau))):
        default = getattr(ur5, name)(*args)
        assert np.array_equal(default, getattr(ur5, name)(*args, params=ur5.nominal_params)), name
        plain = getattr(ur5_plain, name)(*args)
        rows, plain_rows = default.reshape(len(s.q), -1), plain.reshape(len(s.q), -1)
        ulps = np.abs(rows - plain_rows).max(axis=1) / (np.abs(plain_rows).max(axis=1) * np.finfo(float).eps)
        assert ulps.max() <= ULPS_PLAIN, f"{name}: {ulps.max():.1f} ulps from the module without parameters"


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_state_is_named_with_and_without_params(ur5, ur5_plain, value):
    """A solve's input that is not finite is one error, naming it, whether params are given,
    left out, or the module has none; in the common call, the converting one and a batch."""
    s = State("ur5", 95)
    for name, k in (("q", 1), ("v", 4), ("tau", 3)):   # (nothing depends on q[0], the base joint's angle)
        args = {"q": s.q.copy(), "v": s.v.copy(), "tau": s.tau.copy()}
        args[name][k] = value
        said = f"{name}[{k}] is not finite ({value!r})"
        for module, params in ((ur5, {"params": ur5.nominal_params}), (ur5, {}), (ur5_plain, {})):
            one_line_error(lambda: module.aba(args["q"], args["v"], args["tau"], **params), said)
            one_line_error(lambda: module.aba(list(args["q"]), args["v"], args["tau"], **params), said)
            batch = {x: np.tile(s.__dict__[x], (3, 1)) for x in args}
            batch[name][2] = args[name]
            one_line_error(lambda: module.aba(batch["q"], batch["v"], batch["tau"], **params),
                           "state 2 of the batch: " + said)
        if name == "q":
            for params in ({"params": ur5.nominal_params}, {}):
                one_line_error(lambda: ur5.minv(args["q"], **params), said)
            one_line_error(lambda: ur5_plain.aba(np.tile(args["q"], (2, 1)), np.zeros((2, 6)), np.zeros((2, 6))),
                           "state 0 of the batch: " + said)


def test_overflowing_values_are_named_not_m(ur5):
    """A value so large that the result overflows is named, not blamed on M."""
    s = State("ur5", 96)
    one_line_error(lambda: ur5.aba(s.q, s.v, np.full(6, 1e308)), "tau[0] = 1e+308 is too large")
    p = np.array(ur5.nominal_params)
    p[list(ur5.param_names).index("g_z")] = 1e308
    one_line_error(lambda: ur5.aba(s.q, s.v, s.tau, params=p), "(g_z) = 1e+308 is too large")


def test_call_time_contacts_name_an_overflow(panda):
    """Call-time contacts check their result as the other solves do (no NumPy warning)."""
    s = State("panda", 64)
    p = np.array(panda.nominal_params)
    contact = [("panda_hand", (0.0, 0.0, 0.0), None)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one_line_error(lambda: panda.contact_dynamics(s.q, s.v, np.full(panda.nv, 1e308), contacts=contact, params=p),
                       "tau[0] = 1e+308 is too large")
        p[list(panda.param_names).index("m_payload_panda_hand")] = 1e308
        one_line_error(lambda: panda.contact_dynamics(s.q, s.v, s.tau, contacts=contact, params=p),
                       "(m_payload_panda_hand) = 1e+308 is too large")
        tau = s.tau.copy()
        tau[1] = np.nan
        one_line_error(lambda: panda.contact_dynamics(s.q, s.v, tau), "tau[1] is not finite")   # declared, in C
        one_line_error(lambda: panda.contact_dynamics(s.q, s.v, tau, contacts=contact), "tau[1] is not finite")


def test_call_time_contacts_take_batches_and_params_per_state(panda):
    """Call-time contacts with a batch and params per state: each state as its own call."""
    s = State("panda", 65, batch=B)
    P = np.stack([random_params(panda, s.rng) for _ in range(B)])
    contact = [("panda_hand", (0.0, 0.01, 0.02), None), ("panda_link5", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))]
    qdd, lam = panda.contact_dynamics(s.q, s.v, s.tau, contacts=contact, params=P)
    v_plus, impulses = panda.impulse_dynamics(s.q, s.v, contacts=contact, restitution=0.3, params=P)
    inertia = panda.contact_inertia(s.q, contacts=contact, params=P)
    assert qdd.shape == (B, panda.nv) and lam.shape == (B, 4) and inertia.shape == (B, 4, 4)
    for k in range(B):
        qdd_k, lam_k = panda.contact_dynamics(s.q[k], s.v[k], s.tau[k], contacts=contact, params=P[k])
        assert_close(f"call-time q-ddot state {k}", qdd[k], qdd_k, REL_TOL_SAME_CODE)
        assert_close(f"call-time lambda state {k}", lam[k], lam_k, REL_TOL_SAME_CODE)
        v_k, impulses_k = panda.impulse_dynamics(s.q[k], s.v[k], contacts=contact, restitution=0.3, params=P[k])
        assert_close(f"call-time v+ state {k}", v_plus[k], v_k, REL_TOL_SAME_CODE)
        assert_close(f"call-time impulses state {k}", impulses[k], impulses_k, REL_TOL_SAME_CODE)
        assert_close(f"call-time inertia state {k}", inertia[k],
                     panda.contact_inertia(s.q[k], contacts=contact, params=P[k]), REL_TOL_SAME_CODE)
        # the identity they solve: M q-ddot = tau - nle + G^T lambda
        G = np.vstack([panda.point_jacobian(s.q[k], "panda_hand", (0.0, 0.01, 0.02), params=P[k]),
                       (0.0, 0.0, 1.0) @ panda.point_jacobian(s.q[k], "panda_link5", (0.0, 0.0, 0.0), params=P[k])])
        assert_close(f"call-time dynamics state {k}", panda.crba(s.q[k], params=P[k]) @ qdd[k],
                     s.tau[k] - panda.nle(s.q[k], s.v[k], params=P[k]) + G.T @ lam[k], REL_TOL_PARAMS)
    out = np.empty((B, panda.nv + 4))
    qdd_out, lam_out = panda.contact_dynamics(s.q, s.v, s.tau, contacts=contact, params=P, out=out)
    assert np.shares_memory(qdd_out, out) and np.array_equal(out, np.hstack([qdd, lam]))
    one_line_error(lambda: panda.contact_dynamics(s.q, s.v[:2], s.tau, contacts=contact), "v: expected (4, 9)")


def test_batches_given_as_lists(ur5):
    """A batch given as nested lists is converted, as one state is; ragged lists are a one-line
    error naming the argument."""
    s = State("ur5", 97, batch=B)
    one_line_error(lambda: ur5.aba([s.q[0].tolist(), s.q[1].tolist()[:-1]], s.v[:2], s.tau[:2]),
                   "q: expected an array of one shape")
    for name, args in (("aba", (s.q, s.v, s.tau)), ("rnea", (s.q, s.v, s.a)), ("crba", (s.q,))):
        function = getattr(ur5, name)
        np.testing.assert_array_equal(function(*(x.tolist() for x in args)), function(*args))
        np.testing.assert_array_equal(function(s.q.tolist(), *args[1:], params=ur5.nominal_params, threads=1),
                                      function(*args))


def test_a_forked_child_runs_batches(ur5):
    """A child forked after the parent ran a batch on OpenMP threads (multiprocessing's fork)
    runs batches too, on one thread, with the same numbers (GNU OpenMP's threads do not survive
    fork: the child waited forever)."""
    script = ("import os, sys, numpy as np, rbdgen\n"
              "m = rbdgen.load(sys.argv[1])\n"
              "Q = np.random.default_rng(0).uniform(-1, 1, (4096, m.nv))\n"
              "before = m.aba(Q, Q, Q, threads=2)\n"
              "child = os.fork()\n"
              "if child == 0:\n"
              "    ok = np.array_equal(m.aba(Q, Q, Q, threads=2), before) and np.array_equal(m.aba(Q, Q, Q), before)\n"
              "    os._exit(0 if ok else 3)\n"
              "print(os.waitpid(child, 0)[1] >> 8)\n")
    done = subprocess.run([sys.executable, "-c", script, ur5._HERE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "0", done.stdout + done.stderr


def test_call_time_contacts_name_a_bad_state_point_or_normal(panda):
    """Call-time contacts: an input that only G reads (q[0]: M does not depend on it) is named,
    not a failed rank test; a point or normal that is not finite, or too large, is named; a
    large normal is a direction."""
    s = State("panda", 66)
    hand = [("panda_hand", (0.0, 0.0, 0.0), None)]
    q = s.q.copy()
    q[0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for call in (lambda q, v, tau: panda.contact_dynamics(q, v, tau, contacts=hand),
                     lambda q, v, tau: panda.impulse_dynamics(q, v, contacts=hand),
                     lambda q, v, tau: panda.contact_inertia(q, contacts=hand)):
            one_line_error(lambda: call(q, s.v, s.tau), "q[0] is not finite (nan)")
            Q, V, TAU = (np.tile(x, (3, 1)) for x in (s.q, s.v, s.tau))
            Q[2, 0] = np.nan
            one_line_error(lambda: call(Q, V, TAU), "state 2 of the batch: q[0] is not finite (nan)")
        for point in ((0.0, np.nan, 0.0), (0.0, np.inf, 0.0)):
            one_line_error(lambda: panda.contact_dynamics(s.q, s.v, s.tau, contacts=[("panda_hand", point, None)]),
                           "contact 0 point: expected finite numbers")
        one_line_error(lambda: panda.contact_dynamics(s.q, s.v, s.tau, contacts=[("panda_hand", (0.0, 1e300, 0.0), None)]),
                       "contact 0 point[1] = 1e+300 is too large")
        one_line_error(lambda: panda.contact_dynamics(s.q, s.v, s.tau, contacts=[("panda_hand", (0, 0, 0), (0, 0, np.nan))]),
                       "contact 0 normal: expected finite numbers")
        unit = panda.contact_dynamics(s.q, s.v, s.tau, contacts=[("panda_hand", (0, 0, 0), (0, 1, 1))])
        for size in (1e300, 1e-300):
            scaled = panda.contact_dynamics(s.q, s.v, s.tau, contacts=[("panda_hand", (0, 0, 0), (0, size, size))])
            for a, b in zip(scaled, unit):
                assert_close(f"a normal of size {size:g}", a, b, REL_TOL_SAME_CODE)


def test_declared_contacts_name_a_bad_state_before_redundancy(panda):
    """A declared contact whose G is not finite (q[0] NaN) names q[0], not "redundant"."""
    s = State("panda", 67)
    q = s.q.copy()
    q[0] = np.nan
    one_line_error(lambda: panda.contact_dynamics(q, s.v, s.tau), "q[0] is not finite (nan)")
    Q = np.tile(s.q, (5, 1))
    Q[4, 0] = np.nan
    one_line_error(lambda: panda.contact_dynamics(Q, np.tile(s.v, (5, 1)), np.tile(s.tau, (5, 1))),
                   "state 4 of the batch: q[0] is not finite (nan)")


def test_external_forces_named_by_joint_and_row(bridge_modules):
    """f_ext that is not finite is named as the caller gives it: f_ext[joint, row]."""
    module = bridge_modules["ur5"][0]
    s = State("ur5", 68)
    forces = np.zeros((len(module.joint_names), 6))
    forces[5, 2] = np.inf
    one_line_error(lambda: module.aba(s.q, s.v, s.tau, f_ext=forces), "f_ext[5, 2] is not finite (inf)")


def test_empty_batches_with_params(ur5, panda):
    """An empty batch gives empty results, with params as without."""
    none = np.zeros((0, 6))
    for params in ({}, {"params": ur5.nominal_params}, {"params": np.zeros((0, len(ur5.nominal_params)))}):
        assert ur5.aba(none, none, none, **params).shape == (0, 6)
        assert ur5.minv(none, **params).shape == (0, 6, 6)
        assert ur5.rnea(none, none, none, **params).shape == (0, 6)
    empty = np.zeros((0, panda.nv))
    contact = [("panda_hand", (0.0, 0.0, 0.0), None)]
    qdd, lam = panda.contact_dynamics(empty, empty, empty, contacts=contact, params=panda.nominal_params)
    assert qdd.shape == (0, panda.nv) and lam.shape == (0, 3)


def test_check_params_blames_the_far_centre_of_mass(ur5):
    """A huge m c with a real mass is an inertia about the centre of mass too large to test,
    not a mass of 0; so are huge products of inertia (accepted once, their minors overflowing)."""
    p = np.array(ur5.nominal_params)
    p[list(ur5.param_names).index("mcx_wrist_3_link")] = 1e100
    text = one_line_error(lambda: ur5.check_params(p), "wrist_3_link", "too large to test: the inertia about the "
                          "centre of mass overflows")
    assert "is 0" not in text
    for name in ("Ixy_wrist_3_link", "Iyz_wrist_3_link"):   # indefinite, and its minors overflow
        for value in (1e160, -1e300):
            p = np.array(ur5.nominal_params)
            p[list(ur5.param_names).index(name)] = value
            one_line_error(lambda: ur5.check_params(p), "wrist_3_link", "too large to test")
            one_line_error(lambda: ur5.aba(np.zeros(6), np.zeros(6), np.zeros(6), params=p), "too large to test")


def test_module_without_parameters_refuses_params(ur5_plain):
    s = State("ur5", 94)
    assert ur5_plain.param_names == ()
    assert ur5_plain.nominal_params.shape == (0,)
    for call in (lambda: ur5_plain.rnea(s.q, s.v, s.a, params=np.zeros(3)),
                 lambda: ur5_plain.aba(s.q, s.v, s.tau, params=np.zeros(3)),
                 lambda: ur5_plain.crba(s.q, params=np.zeros(3))):
        one_line_error(call, "params", "build it with --parameters", error=TypeError)


def test_empty_spec_as_a_string_fails_before_building(folder):
    """parameters="" is the empty SPEC (an error), not "no parameters"; a string is the SPECs it
    separates by commas, as on the command line."""
    with pytest.raises(rbdgen.errors.RbdgenError, match="empty parameter SPEC"):
        build(folder, "ur5", name="ur5_empty_spec", parameters="", algorithms=["rnea"])
    assert not os.path.exists(folder / "ur5_empty_spec")
    module = build(folder, "ur5", name="ur5_string_specs", parameters="gravity,payload:tool0", algorithms="rnea,crba")
    assert module.param_names[:3] == ("g_x", "g_y", "g_z") and len(module.param_names) == 13
    assert set(module.operation_counts) == {"rnea", "crba"}


def test_unknown_spec_fails_before_building(folder):
    with pytest.raises(rbdgen.errors.RbdgenError, match="no_such_link"):
        build(folder, "ur5", name="ur5_bad", parameters=["inertia:no_such_link"], algorithms=["rnea"])


# ================================================================= CLI ======================

def run_cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(rbdgen.__file__))),
                                         env.get("PYTHONPATH", "")])
    # (rbdgen has no __main__.py: the command is `rbdgen`, i.e. rbdgen.cli)
    return subprocess.run([sys.executable, "-m", "rbdgen.cli", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_cli_info_parameters():
    done = run_cli("info", robot_path("ur5"), "--parameters", "gravity")
    assert done.returncode == 0, done.stderr
    assert "g_x=0, g_y=0, g_z=-9.81" in done.stdout, done.stdout
    bad = run_cli("info", robot_path("ur5"), "--parameters", "inertia:tool0")
    assert bad.returncode != 0
    assert bad.stderr.strip().count("\n") == 0 and "wrist_3_link" in bad.stderr, bad.stderr


def test_cli_build_and_verify_with_parameters(folder):
    """rbdgen build --parameters, as users run it: the module takes params and equals Pinocchio's
    changed model; rbdgen verify of its folder compares it at random parameters."""
    out = str(folder / "cli")
    done = run_cli("build", robot_path("ur5"), "-o", out, "--name", "ur5_cli", "--parameters", "gravity",
                   "--parameters", "payload:tool0", "--algorithms", "rnea,aba")
    assert done.returncode == 0, done.stderr
    module = rbdgen.load(os.path.join(out, "ur5_cli"))
    assert module.param_names[:2] == ("g_x", "g_y") and len(module.param_names) == 13
    s = State("ur5", 99)
    p = random_params(module, s.rng)
    pm = pinocchio_with("ur5", module.param_names, p)
    assert_close("cli-built rnea", module.rnea(s.q, s.v, s.a, params=p), pin.rnea(pm, pm.createData(), s.qp, s.v, s.a),
                 REL_TOL_PARAMS)
    verified = run_cli("verify", os.path.join(out, "ur5_cli"))
    assert verified.returncode == 0 and "MISMATCH" not in verified.stdout, verified.stdout + verified.stderr


# ================================================================= default builds ============

def test_default_build_with_every_kind_of_parameter(folder):
    """Every default function of UR5 built with every kind of parameter: the build verifies each
    against the reference at random physical parameters (rbdgen.runtime.verify). The base
    regressor, whose base parameters are found on the kinematics and gravity as numbers, is left
    out when gravity or origins are parameters, and naming it then is a one-line error; with
    inertial parameters only it is built, and Y_b K pi(params) = rnea(params)."""
    specs = ["inertia:all", "payload:tool0", "gravity", "armature", "damping", "origin:elbow_joint"]
    every = build(folder, "ur5", name="ur5_every", parameters=specs)
    assert "base_regressor" not in every.operation_counts and "aba_parameter_derivatives" in every.operation_counts
    with pytest.raises(rbdgen.errors.RbdgenError, match="base_regressor: its base parameters are found"):
        build(folder, "ur5", name="ur5_every_bad", parameters=specs, algorithms=["rnea", "base_regressor"])
    inertial = build(folder, "ur5", name="ur5_inertial", parameters=["inertia:all"],
                     algorithms=["rnea", "base_regressor"])
    s = State("ur5", 81)
    p = random_params(inertial, s.rng)
    K, columns = inertial.base_parameter_map()
    assert_close("base regressor at params", inertial.base_regressor(s.q, s.v, s.a, params=p) @ (K @ p),
                 inertial.rnea(s.q, s.v, s.a, params=p), REL_TOL_PARAMS)


def test_the_check_in_c_agrees_with_physical_py(ur5):
    """The module tests parameters in C (rbdgen/bindings/physical.c) and says what fails with
    rbdgen/model/physical.py: on random values near and across the boundary, a set is refused
    exactly when physical.py refuses it (strict: check_params; not strict: aba's check)."""
    rng = np.random.default_rng(97)
    model = with_parameters(robot_model("ur5"), UR5_SPECS)
    from rbdgen.model.parameters import parameters_of
    params = parameters_of(model)
    nominal = np.array(ur5.nominal_params)
    refused = {True: 0, False: 0}
    for k in range(300):
        p = random_params(ur5, rng)
        p[rng.integers(len(p))] += rng.normal(scale=10.0 ** rng.uniform(-6, 0)) * max(1.0, abs(nominal).max())
        for strict in (True, False):
            expected = params.problem(p, strict)
            try:
                ur5._PARAMETERS.check(p, strict=strict)
                got = None
            except ValueError as error:
                got = str(error)
            assert (got is None) == (expected is None), (k, strict, got, expected)
            refused[strict] += got is not None
    assert refused[True] > 20 and refused[False] > 10, refused   # both answers were exercised



def test_dask_takes_params_per_state(ur5):
    """rbdgen.dask.map batches a Dask array given as params= as it does the states, and a module
    with parameters pickles (Dask's workers get it by its folder)."""
    da = pytest.importorskip("dask.array")
    import pickle
    import rbdgen.dask
    s = State("ur5", 98, batch=40)
    P = np.stack([random_params(ur5, s.rng) for _ in range(40)])
    lazy = rbdgen.dask.map(ur5.aba, da.from_array(s.q, chunks=16), s.v, s.tau, params=da.from_array(P, chunks=16))
    assert_close("dask aba with params per state", lazy.compute(scheduler="threads"),
                 ur5.aba(s.q, s.v, s.tau, params=P), REL_TOL_SAME_CODE)
    assert pickle.loads(pickle.dumps(ur5)) is ur5
    assert_close("a pickled function with params", pickle.loads(pickle.dumps(ur5.rnea))(s.q[0], s.v[0], s.a[0], params=P[0]),
                 ur5.rnea(s.q[0], s.v[0], s.a[0], params=P[0]), REL_TOL_SAME_CODE)
