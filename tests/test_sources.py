"""Robots from MJCF (through MuJoCo's compiler) and xacro, with armature and joint damping,
checked against MuJoCo itself and against Pinocchio.

1. Every MJCF model that ships in gymnasium's and dm_control's packages loads, and the
   reference gives MuJoCo's numbers (contacts, limits, actuation, springs and equality off):
   rnea against mj_inverse, crba against mj_fullM (armature included), nle against qfrc_bias,
   aba against mj_forward's qacc, passive_torque against qfrc_damper. A set of them covering
   every joint kind (free, ball, slide, several joints in one body, joint ref, gravity off)
   is built, and the generated code compared the same way.
2. to_mujoco / from_mujoco invert each other and give MuJoCo's layout.
3. example-robot-data URDFs compiled by MuJoCo's URDF importer (the meshes stripped) give the
   dynamics of rbdgen's own URDF reader.
4. Armature against Pinocchio's model.armature: M, aba, M^-1, aba_derivatives (and finite
   differences); URDF <dynamics damping> is passive_torque, and aba(..., passive=True) adds it.
5. A xacro file with macros, properties and arguments builds the model of its expansion.
6. Bad input: a file that is neither, an MJCF MuJoCo refuses, a xacro without an argument,
   an unknown joint's armature: one-line errors.
"""

import os
import re
import warnings

import numpy as np
import pytest

import rbdgen
from helpers import REL_TOL_PINOCCHIO, ROBOTS, assert_close, central_differences, pinocchio_model, robot_path
from rbdgen import reference
from rbdgen.errors import RbdgenError
from rbdgen.model.sources import load_model
from rbdgen.runtime.mujoco_bridge import against_mujoco, installed_models, module_functions
from rbdgen.model.states import random_state

mujoco = pytest.importorskip("mujoco")

MUJOCO_TOL = 1e-9          # relative to the largest entry of MuJoCo's side
STATES = 3
BUILT = {                  # built and compared in generated code: every joint kind between them
    "gymnasium": ("ant", "half_cheetah", "humanoid", "reacher", "swimmer"),
    "dm_control": ("finger", "fish", "quadruped", "cartpole"),
}
BUILD_ALGORITHMS = ["rnea", "nle", "crba", "aba", "passive_torque"]
MODELS = installed_models()


def loaded(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # what MJCF leaves out, one line each
        return load_model(path)


def reference_functions(model):
    return {"rnea": lambda q, v, a, tau: reference.rnea(model, q, v, a),
            "crba": lambda q, v, a, tau: reference.crba(model, q),
            "nle": lambda q, v, a, tau: reference.nle(model, q, v),
            "aba": lambda q, v, a, tau: reference.aba(model, q, v, tau),
            "passive_torque": lambda q, v, a, tau: reference.passive_torque(model, v)}


@pytest.mark.parametrize("package,name,path", MODELS, ids=[f"{p}-{n}" for p, n, _ in MODELS])
def test_mjcf_reference_matches_mujoco(package, name, path):
    worst = against_mujoco(path, reference_functions(loaded(path)), STATES)
    assert max(worst.values()) <= MUJOCO_TOL, worst


BUILT_MODELS = [(p, n, path) for p, n, path in MODELS if n in BUILT.get(p, ())]


@pytest.mark.parametrize("package,name,path", BUILT_MODELS, ids=[f"{p}-{n}" for p, n, _ in BUILT_MODELS])
def test_mjcf_generated_code_matches_mujoco(package, name, path, tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("mjcf"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = rbdgen.build(path, out_dir=folder, algorithms=BUILD_ALGORITHMS)
    functions = module_functions(module)
    assert sorted(functions) == sorted(BUILD_ALGORITHMS)
    worst = against_mujoco(path, functions, STATES)
    assert max(worst.values()) <= MUJOCO_TOL, worst
    # the converters: MuJoCo's layout, and back
    model = loaded(path)
    q, v, _ = random_state(model, np.random.default_rng(1))
    qpos, qvel = module.to_mujoco(q, v)
    assert_close("to_mujoco qpos", qpos, reference.to_mujoco(model, q, v)[0], 1e-15)
    back = module.from_mujoco(qpos, qvel)
    assert_close("from_mujoco q", back[0], q, 1e-15)
    assert_close("from_mujoco v", back[1], v, 1e-14)
    batch = module.to_mujoco(np.stack([q, q]), np.stack([v, v]))
    assert_close("batched", batch[1][1], qvel, 1e-15)


def test_mjcf_leaves_out_what_is_simulation():
    path = next(path for p, n, path in MODELS if n == "humanoid")
    with pytest.warns(UserWarning, match=r"left out .*actuators.*tendons.*joint limits.*contacts"):
        load_model(path)


# ------------------------------------------------------------- URDF through MuJoCo's importer ---

URDF_ROBOTS = [name for name, (_, floating) in ROBOTS.items() if not floating]


def mujoco_from_urdf(path):
    """MuJoCo's model of a URDF without its meshes (visual and collision geometry), or None when
    MuJoCo refuses it (an inertia it finds impossible)."""
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"<(visual|collision)\b.*?</\1>", "", text, flags=re.S)
    text = re.sub(r"<(visual|collision)\b[^>]*/>", "", text)
    try:
        return mujoco.MjModel.from_xml_string(text)
    except ValueError:
        return None


@pytest.mark.parametrize("robot", URDF_ROBOTS)
def test_urdf_through_mujoco_gives_the_same_dynamics(robot):
    from rbdgen.model.mjcf import model_from_mujoco
    m = mujoco_from_urdf(robot_path(robot))
    if m is None:
        pytest.skip(f"MuJoCo refuses {robot}'s URDF")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = model_from_mujoco(m, robot)
        ours = rbdgen.load_urdf(robot_path(robot))
    # the two readers may order the joints differently: compare by name
    order = {j.name: j for j in theirs.joints}
    assert sorted(order) == sorted(j.name for j in ours.joints)
    assert all(j.nv == 1 and j.nq == 1 for j in ours.joints)
    perm = [order[j.name].idx_v for j in ours.joints]
    rng = np.random.default_rng(2)
    for _ in range(STATES):
        q, v, a = random_state(ours, rng)
        qt, vt, at = (np.empty(ours.nv) for _ in range(3))
        qt[perm], vt[perm], at[perm] = q, v, a
        assert_close(f"{robot} rnea", reference.rnea(theirs, qt, vt, at)[perm], reference.rnea(ours, q, v, a),
                     MUJOCO_TOL)
        assert_close(f"{robot} crba", reference.crba(theirs, qt)[np.ix_(perm, perm)], reference.crba(ours, q),
                     MUJOCO_TOL)


# ------------------------------------------------------------------------ armature, damping ---

ARMATURE = {"shoulder_pan_joint": 0.25, "elbow_joint": 0.1, "wrist_3_joint": 0.02}


@pytest.fixture(scope="module")
def armed(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("armature"))
    module = rbdgen.build(robot_path("ur5"), out_dir=folder, armature=ARMATURE,
                          algorithms=["rnea", "crba", "aba", "minv", "aba_derivatives", "passive_torque"])
    return module, load_model(robot_path("ur5"), armature=ARMATURE)


def test_armature_against_pinocchio(armed):
    import pinocchio as pin
    module, model = armed
    pm = pinocchio_model("ur5")
    pm.armature = np.array(model.armature, dtype=float)
    pd = pm.createData()
    assert model.armature[0] == 0.25 and model.armature[4] == 0
    rng = np.random.default_rng(3)
    for _ in range(STATES):
        q, v, a = random_state(model, rng)
        tau = rng.normal(size=model.nv)
        M = pin.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        assert_close("crba", module.crba(q), M, REL_TOL_PINOCCHIO)
        assert_close("rnea", module.rnea(q, v, a), pin.rnea(pm, pd, q, v, a), REL_TOL_PINOCCHIO)
        assert_close("aba", module.aba(q, v, tau), pin.aba(pm, pd, q, v, tau), REL_TOL_PINOCCHIO)
        Minv = pin.computeMinverse(pm, pd, q)
        assert_close("minv", module.minv(q), np.triu(Minv) + np.triu(Minv, 1).T, REL_TOL_PINOCCHIO)
        pin.computeABADerivatives(pm, pd, q, v, tau)
        for ours, theirs, what in zip(module.aba_derivatives(q, v, tau), (pd.ddq_dq, pd.ddq_dv, pd.Minv),
                                      ("ddq_dq", "ddq_dv", "ddq_dtau")):
            theirs = np.triu(theirs) + np.triu(theirs, 1).T if what == "ddq_dtau" else theirs
            assert_close(f"aba_derivatives {what}", ours, theirs, REL_TOL_PINOCCHIO)
        fd = central_differences(module.aba, [q, v, tau], 0)
        assert_close("ddq_dq against differences", module.aba_derivatives(q, v, tau)[0], fd, 1e-6)


def test_armature_changes_m_by_its_diagonal(armed):
    module, model = armed
    plain = load_model(robot_path("ur5"))
    q = random_state(model, np.random.default_rng(4))[0]
    assert_close("M - M without armature", module.crba(q) - reference.crba(plain, q), np.diag(model.armature), 1e-12)


def test_damping_from_urdf_is_passive_torque(tmp_path):
    from helpers import tiny_urdf, write_urdf
    text = tiny_urdf().replace('<joint name="j1" type=\'revolute\'>',
                               '<joint name="j1" type="revolute"><dynamics damping="0.7" friction="0.1"/>')
    assert "damping" in text
    path = write_urdf(tmp_path, text)
    module = rbdgen.build(path, out_dir=str(tmp_path / "out"), algorithms=["aba", "passive_torque"])
    v = np.array([0.5, -2.0])
    assert_close("passive_torque", module.passive_torque(v), [-0.35, 0.0], 1e-15)
    q, tau = np.array([0.3, 0.1]), np.array([0.2, -0.1])
    assert_close("aba passive=True", module.aba(q, v, tau, passive=True), module.aba(q, v, tau + [-0.35, 0.0]),
                 1e-15)


# ------------------------------------------------------------------------------------ xacro ---

XACRO = """<?xml version="1.0"?>
<robot name="xarm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="length" default="0.4"/>
  <xacro:property name="mass" value="1.5"/>
  <xacro:property name="L" value="$(arg length)"/>
  <xacro:macro name="link_of" params="name m">
    <link name="${name}">
      <inertial><origin xyz="0 0 ${L/2}"/><mass value="${m}"/>
        <inertia ixx="${m*L*L/12}" iyy="${m*L*L/12}" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    </link>
  </xacro:macro>
  <xacro:macro name="hinge" params="name parent child z">
    <joint name="${name}" type="revolute"><parent link="${parent}"/><child link="${child}"/>
      <origin xyz="0 0 ${z}"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="10" velocity="1"/>
      <dynamics damping="0.05"/></joint>
  </xacro:macro>
  <link name="base"/>
  <xacro:link_of name="upper" m="${mass}"/>
  <xacro:link_of name="lower" m="${mass/2}"/>
  <xacro:hinge name="shoulder" parent="base" child="upper" z="0.1"/>
  <xacro:hinge name="elbow" parent="upper" child="lower" z="${L}"/>
</robot>
"""


def expanded(length):
    link = lambda name, m: (f'<link name="{name}"><inertial><origin xyz="0 0 {length / 2}"/><mass value="{m}"/>'
                            f'<inertia ixx="{m * length * length / 12}" iyy="{m * length * length / 12}" '
                            'izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    hinge = lambda name, parent, child, z: (
        f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="0 0 {z}"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="10" velocity="1"/>'
        '<dynamics damping="0.05"/></joint>')
    return ('<robot name="xarm"><link name="base"/>' + link("upper", 1.5) + link("lower", 0.75)
            + hinge("shoulder", "base", "upper", 0.1) + hinge("elbow", "upper", "lower", length) + "</robot>")


def test_xacro_builds_its_expansion(tmp_path):
    pytest.importorskip("xacro")
    from rbdgen.codegen.build import model_fingerprint
    source = tmp_path / "arm.urdf.xacro"
    source.write_text(XACRO)
    for length in (0.4, 0.55):
        plain = tmp_path / f"arm{length}.urdf"
        plain.write_text(expanded(length))
        args = None if length == 0.4 else {"length": str(length)}
        assert model_fingerprint(load_model(source, xacro_args=args)) == model_fingerprint(load_model(plain))
    module = rbdgen.build(str(source), out_dir=str(tmp_path / "out"), xacro_args={"length": "0.55"},
                          algorithms=["rnea", "passive_torque"])
    q, v, a = np.array([0.3, -0.4]), np.array([0.1, 0.2]), np.array([1.0, -1.0])
    assert_close("xacro module", module.rnea(q, v, a), reference.rnea(load_model(tmp_path / "arm0.55.urdf"), q, v, a),
                 1e-12)
    assert_close("xacro damping", module.passive_torque(v), [-0.005, -0.01], 1e-15)


# ---------------------------------------------------------------------------------- bad input ---

def one_line(exc):
    message = str(exc.value)
    assert "\n" not in message, message
    return message


def test_an_sdformat_model_without_links(tmp_path):
    path = tmp_path / "robot.sdf"
    path.write_text('<sdf version="1.6"><model name="m"/></sdf>')
    with pytest.raises(RbdgenError) as exc:
        load_model(path)
    assert "model 'm': no <link>" in one_line(exc)


def test_mjcf_mujoco_refuses(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text('<mujoco><worldbody><body><joint type="hinge" axis="0 0 0"/><geom size="0.1"/></body>'
                    '</worldbody></mujoco>')
    with pytest.raises(RbdgenError) as exc:
        load_model(path)
    assert "MuJoCo refuses" in one_line(exc)


def test_xacro_missing_argument_and_package(tmp_path):
    pytest.importorskip("xacro")
    path = tmp_path / "needs.urdf.xacro"
    path.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="$(arg base)"/></robot>')
    with pytest.raises(RbdgenError) as exc:
        load_model(path)
    assert "--xacro-arg" in one_line(exc)
    path.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                    '<xacro:include filename="$(find my_description)/arm.xacro"/><link name="a"/></robot>')
    with pytest.raises(RbdgenError) as exc:
        load_model(path)
    assert "my_description" in one_line(exc) and "--package" in str(exc.value)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "arm.xacro").write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="b"/>'
                                                '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
                                                '<axis xyz="0 0 1"/></joint></robot>')
    model = load_model(path, packages={"my_description": str(tmp_path / "pkg")})
    assert [j.name for j in model.joints] == ["j"]


def test_armature_of_unknown_joint():
    with pytest.raises(RbdgenError) as exc:
        load_model(robot_path("ur5"), armature={"elbow_jiont": 0.1})
    assert "did you mean 'elbow_joint'" in one_line(exc)
    with pytest.raises(RbdgenError) as exc:
        load_model(robot_path("ur5"), armature={"elbow_joint": -1.0})
    assert ">= 0" in one_line(exc)


def test_one_coordinate_robot_keeps_matrix_shapes(tmp_path):
    """dm_control's pendulum (nv = 1): a point's Jacobian is 3 x 1, not a vector of 3, so the
    call-time contacts assemble (the C entry point once took one column for a vector)."""
    path = next((path for p, n, path in MODELS if (p, n) == ("dm_control", "pendulum")), None)
    if path is None:
        pytest.skip("dm_control is not installed")
    model = loaded(path)
    module = rbdgen.build(path, out_dir=str(tmp_path), algorithms=[
        "minv", "nle", "frame_jacobian_local_world_aligned", "frame_classical_acceleration_local_world_aligned"])
    q, v, tau, point = np.array([0.3]), np.array([0.2]), np.array([0.1]), np.array([0.0, 0.0, -0.1])
    frame = module.frames[-1]
    assert module.point_jacobian(q, frame, point).shape == (3, 1)
    assert module.point_gamma(q, v, frame, point).shape == (3,)
    contacts = [(frame, point, None)]
    for ours, theirs in zip(module.contact_dynamics(q, v, tau, contacts, damping=1e-3),
                            reference.contact_dynamics(model, q, v, tau, contacts, damping=1e-3)):
        assert_close("contact_dynamics, nv = 1", ours, theirs, 1e-12)
