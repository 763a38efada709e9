"""URDF loading: every bad input is one URDFError line naming the element; the URDF conventions
(fixed joints, defaults, mimic, massless links) and every example-robot-data URDF."""

import glob
import os

import numpy as np
import pytest

import rbdgen
from rbdgen import ModelError, URDFError
from rbdgen.errors import InertiaWarning
from rbdgen import reference as ref
from rbdgen.model import FreeFlyer, ModelBuilder, Prismatic, Revolute
from rbdgen.spatial import Inertia

from helpers import REL_TOL_PINOCCHIO, assert_close, robots_dir, write_urdf

INERTIA_OK = '<inertia ixx="0.01" iyy="0.02" izz="0.015" ixy="0" ixz="0" iyz="0"/>'


# ------------------------------------------------------------------ URDF text helpers ------

def link(name, mass=None, inertia=INERTIA_OK, origin=""):
    if mass is None:
        return f'<link name="{name}"/>'
    return (f'<link name="{name}"><inertial>{origin}<mass value="{mass}"/>{inertia}</inertial></link>')


def joint(name, jtype, parent, child, body='<axis xyz="0 0 1"/>'):
    limit = '<limit effort="10" velocity="10" lower="-3" upper="3"/>' if jtype in ("revolute", "prismatic") else ""
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'{body}{limit}</joint>')


def robot(*elements, name="test_robot"):
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(elements) + "\n</robot>\n"


def arm(**overrides):
    """base -> shoulder (revolute) -> upper -> elbow (revolute) -> fore; pieces replaceable by keyword."""
    parts = dict(
        base=link("base", 1.0),
        upper=link("upper", 1.0),
        fore=link("fore", 1.0),
        shoulder=joint("shoulder", "revolute", "base", "upper"),
        elbow=joint("elbow", "revolute", "upper", "fore", '<origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>'),
    )
    parts.update(overrides)
    return robot(*[p for p in parts.values() if p])


def write(tmp_path, text, filename="robot.urdf"):
    path = tmp_path / filename
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


def load_error(path, *names, error=URDFError, floating_base=False):
    """Loading `path` raises `error` with a one-line message containing every name; returns it."""
    with pytest.raises(error) as info:
        rbdgen.load_urdf(path, floating_base=floating_base)
    return check_message(info.value, *names)


def check_message(exc, *names):
    message = str(exc)
    assert message.strip(), "empty message"
    assert "\n" not in message and "\r" not in message, f"message is not one line: {message!r}"
    for name in names:
        assert str(name) in message, f"{name!r} not named in: {message}"
    return message


# ------------------------------------------------------------------ file-level errors ------

def test_missing_file(tmp_path):
    path = tmp_path / "no_such_robot.urdf"
    load_error(path, str(path))


def test_malformed_xml(tmp_path):
    path = write(tmp_path, '<robot name="r"><link name="a"></robot>', "broken.urdf")
    message = load_error(path, "broken.urdf")
    assert "malformed XML" in message


def test_empty_file(tmp_path):
    load_error(write(tmp_path, "", "empty.urdf"), "empty.urdf")


def test_top_element_not_robot(tmp_path):
    path = write(tmp_path, '<?xml version="1.0"?><sdf version="1.6"><model name="m"/></sdf>', "model.sdf.urdf")
    load_error(path, "<sdf>", "model.sdf.urdf")


def test_no_link(tmp_path):
    load_error(write(tmp_path, '<robot name="r"/>', "nolinks.urdf"), "nolinks.urdf", "<link>")


def test_no_root_loop(tmp_path):
    text = robot(link("a"), link("b"), joint("ab", "revolute", "a", "b"), joint("ba", "revolute", "b", "a"))
    message = load_error(write(tmp_path, text, "loop.urdf"), "loop.urdf")
    assert "loop" in message


def test_loop_beside_a_root(tmp_path):
    """One root, but two other links form a cycle that the tree walk never reaches."""
    text = robot(link("r"), link("a"), link("b"), joint("ab", "revolute", "a", "b"), joint("ba", "revolute", "b", "a"))
    load_error(write(tmp_path, text), "'r'", "a", "b")


def test_several_roots(tmp_path):
    text = robot(link("base"), link("upper"), link("island"), joint("shoulder", "revolute", "base", "upper"))
    load_error(write(tmp_path, text), "base", "island")


def test_link_with_two_parents(tmp_path):
    text = arm(elbow=joint("elbow", "revolute", "base", "fore"),
               extra=joint("wrist", "revolute", "upper", "fore"))
    load_error(write(tmp_path, text), "fore", "elbow", "wrist")


@pytest.mark.parametrize("end", ["parent", "child"])
def test_joint_names_missing_link(tmp_path, end):
    ends = {"parent": "upper", "child": "fore"}
    ends[end] = "ghost"
    text = arm(elbow=joint("elbow", "revolute", ends["parent"], ends["child"]))
    message = load_error(write(tmp_path, text), "elbow", "ghost")
    assert end in message


def test_joint_without_child_element(tmp_path):
    text = arm(elbow='<joint name="elbow" type="revolute"><parent link="upper"/><axis xyz="0 1 0"/></joint>')
    load_error(write(tmp_path, text), "elbow", "child")


def test_unknown_joint_type(tmp_path):
    text = arm(elbow=joint("elbow", "ball", "upper", "fore"))
    load_error(write(tmp_path, text), "elbow", "ball")


def test_duplicate_link(tmp_path):
    text = arm(extra=link("upper", 2.0))
    load_error(write(tmp_path, text), "upper")


def test_duplicate_joint(tmp_path):
    text = arm(extra_link=link("hand"), extra=joint("elbow", "revolute", "fore", "hand"))
    load_error(write(tmp_path, text), "elbow")


def test_root_joint_name_clash_with_floating_base(tmp_path):
    text = arm(shoulder=joint("root_joint", "revolute", "base", "upper"))
    rbdgen.load_urdf(write(tmp_path, text))  # fine with a fixed base
    load_error(write(tmp_path, text), "root_joint", floating_base=True)


# ------------------------------------------------------------------ inertial errors --------

def test_negative_mass(tmp_path):
    text = arm(fore=link("fore", -1.5))
    load_error(write(tmp_path, text), "fore", "mass")


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "heavy", ""])
def test_nan_or_malformed_mass(tmp_path, value):
    text = arm(upper=link("upper", value))
    load_error(write(tmp_path, text), "upper", "mass")


def test_negative_mass_on_floating_root(tmp_path):
    text = arm(base=link("base", -2.0))
    load_error(write(tmp_path, text), "base", "mass", floating_base=True)


@pytest.mark.parametrize("tensor, problem", [
    ('<inertia ixx="1" iyy="1" izz="-1" ixy="0" ixz="0" iyz="0"/>', "positive semi-definite"),    # a negative moment
    ('<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0.05" ixz="0" iyz="0"/>', "positive semi-definite"),  # products
    ('<inertia ixx="-0.01" iyy="-0.01" izz="-0.01" ixy="0" ixz="0" iyz="0"/>', "positive semi-definite"),
    ('<inertia ixx="10" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>', "triangle inequality"),       # 10 > 1 + 1
])
def test_physically_invalid_inertia_warns_and_strict_refuses(tmp_path, tensor, problem):
    """Loaded as given with one warning naming the link (Pinocchio loads such tensors too);
    strict=True makes it an error."""
    path = write(tmp_path, arm(fore=link("fore", 1.0, inertia=tensor)))
    with pytest.warns(InertiaWarning) as caught:
        model = rbdgen.load_urdf(path)
    assert len(caught) == 1
    check_message(caught[0].message, "link 'fore'", "inertia", problem)
    assert model.nv == 2
    with pytest.raises(URDFError) as info:
        rbdgen.load_urdf(path, strict=True)
    check_message(info.value, "link 'fore'", problem)


def test_malformed_inertia_number(tmp_path):
    tensor = '<inertia ixx="0.01" iyy="0,02" izz="0.01" ixy="0" ixz="0" iyz="0"/>'
    load_error(write(tmp_path, arm(fore=link("fore", 1.0, inertia=tensor))), "fore", "iyy", "0,02")


def test_malformed_inertial_origin(tmp_path):
    text = arm(fore=link("fore", 1.0, origin='<origin xyz="0 0 zero"/>'))
    load_error(write(tmp_path, text), "fore", "xyz", "0 0 zero")


# ------------------------------------------------------------------ joint element errors ---

@pytest.mark.parametrize("jtype", ["revolute", "continuous", "prismatic"])
def test_zero_length_axis(tmp_path, jtype):
    text = arm(elbow=joint("elbow", jtype, "upper", "fore", '<axis xyz="0 0 0"/>'))
    message = load_error(write(tmp_path, text), "elbow")
    assert message == "joint 'elbow': axis (0 0 0) has zero length; give a non-zero <axis xyz>"


def test_tiny_axis_names_the_joint(tmp_path):
    """An axis that is non-zero but below the joint model's 1e-12 threshold is zero-length too,
    and its error must still name the joint."""
    text = arm(elbow=joint("elbow", "revolute", "upper", "fore", '<axis xyz="1e-20 0 0"/>'))
    message = load_error(write(tmp_path, text), "elbow")
    assert "zero length" in message


def test_zero_axis_ignored_on_fixed_joint(tmp_path):
    text = arm(elbow=joint("elbow", "fixed", "upper", "fore", '<axis xyz="0 0 0"/>'))
    assert rbdgen.load_urdf(write(tmp_path, text)).nv == 1


@pytest.mark.parametrize("origin, attribute, text", [
    ('<origin xyz="0 0 abc"/>', "xyz", "0 0 abc"),
    ('<origin xyz="0 0"/>', "xyz", "0 0"),
    ('<origin xyz="1,2,3"/>', "xyz", "1,2,3"),
    ('<origin xyz="0 0 0.3" rpy="0 nan 0"/>', "rpy", "0 nan 0"),
    ('<origin rpy="0 0 0 0"/>', "rpy", "0 0 0 0"),
])
def test_malformed_origin(tmp_path, origin, attribute, text):
    body = origin + '<axis xyz="0 1 0"/>'
    message = load_error(write(tmp_path, arm(elbow=joint("elbow", "revolute", "upper", "fore", body))), "elbow", text)
    assert attribute in message and "<origin>" in message


@pytest.mark.parametrize("axis", ['<axis xyz="0 1"/>', '<axis xyz="0 one 0"/>', '<axis xyz="inf 0 0"/>'])
def test_malformed_axis(tmp_path, axis):
    load_error(write(tmp_path, arm(elbow=joint("elbow", "revolute", "upper", "fore", axis))), "elbow", "axis")


# ------------------------------------------------------------------ builder misuse ---------

def test_builder_misuse_raises_model_error():
    inertia = Inertia.from_com(1.0, (0, 0, 0.1), ((0.01, 0, 0), (0, 0.01, 0), (0, 0, 0.01)))
    cases = []

    b = ModelBuilder("arm")
    b.add_body(-1, Revolute((0, 0, 1)), "shoulder", "upper", inertia=inertia)
    cases.append((lambda: b.add_body(7, Revolute((0, 0, 1)), "elbow", "fore"), ("7",)))
    cases.append((lambda: b.add_body("ghost", Revolute((0, 0, 1)), "elbow", "fore"), ("ghost",)))
    cases.append((lambda: b.add_body(0, Revolute((0, 0, 1)), "shoulder", "fore"), ("shoulder",)))
    cases.append((lambda: b.add_body(0, Revolute((0, 0, 1)), "elbow", "upper"), ("upper",)))
    cases.append((lambda: b.add_body(0, "revolute", "elbow", "fore"), ("elbow",)))
    cases.append((lambda: b.add_fixed_body(0, "upper"), ("upper",)))
    cases.append((lambda: b.add_fixed_body("ghost", "tool"), ("ghost",)))
    cases.append((lambda: b.add_body(0, Revolute((0, 1, 0)), "elbow", "fore", inertia=Inertia(m=-1.0)), ("fore",)))
    cases.append((lambda: b.add_body(0, Revolute((0, 1, 0)), "elbow", "fore", inertia=Inertia(m=float("nan"))),
                  ("fore",)))
    cases.append((lambda: Revolute((0, 0, 0)), ("axis",)))
    cases.append((lambda: Prismatic((0, float("nan"), 0)), ("axis",)))
    cases.append((lambda: b.finish().frame("ghost"), ("ghost",)))
    for call, names in cases:
        with pytest.raises(ModelError) as info:
            call()
        check_message(info.value, *names)
    # none of the failed calls left anything behind
    model = b.finish()
    assert [j.name for j in model.joints] == ["shoulder"] and model.body_names == ("upper",)


def test_error_hierarchy():
    assert issubclass(URDFError, rbdgen.RbdgenError) and issubclass(ModelError, rbdgen.RbdgenError)


# ------------------------------------------------------------------ conventions ------------

def test_mimic_joint_warns_and_is_independent(tmp_path):
    elbow = joint("elbow", "revolute", "upper", "fore",
                  '<origin xyz="0 0 0.3"/><axis xyz="0 1 0"/><mimic joint="shoulder" multiplier="2" offset="0.1"/>')
    path = write(tmp_path, arm(elbow=elbow))
    with pytest.warns(UserWarning, match="elbow"):
        model = rbdgen.load_urdf(path)
    assert [j.name for j in model.joints] == ["shoulder", "elbow"]
    assert model.nq == model.nv == 2
    # elbow moves on its own: M has a non-zero diagonal entry for it and rnea takes its acceleration
    q = np.array([0.3, -0.4])
    M = ref.crba(model, q)
    assert M[1, 1] > 0
    tau0 = ref.rnea(model, q, np.zeros(2), np.zeros(2))
    tau1 = ref.rnea(model, q, np.zeros(2), np.array([0.0, 1.0]))
    assert_close("mimic elbow independent", tau1 - tau0, M[:, 1], 1e-12)


def test_links_without_inertial_are_massless(tmp_path):
    text = arm(upper=link("upper"), fore=link("fore", 2.5))
    model = rbdgen.load_urdf(write(tmp_path, text))
    upper = model.body_names.index("upper")
    assert model.inertia[upper].m == 0
    assert np.all(np.asarray(model.inertia[upper].h, dtype=float) == 0)
    assert np.all(np.asarray(model.inertia[upper].I, dtype=float) == 0)
    assert model.total_mass == 2.5   # base (fixed to the world) does not count
    assert rbdgen.load_urdf(write(tmp_path, text), floating_base=True).total_mass == 3.5
    # all massless: loads, total mass zero, com defined as the origin
    empty = rbdgen.load_urdf(write(tmp_path, arm(base=link("base"), upper=link("upper"), fore=link("fore"))))
    assert empty.total_mass == 0
    assert np.all(ref.com(empty, np.zeros(2)) == 0)


FIXED_URDF = robot(
    link("base", 2.0),
    link("upper", 1.5, '<inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0.001" ixz="-0.002" iyz="0.003"/>',
         '<origin xyz="0.1 0.02 -0.03" rpy="0.3 -0.2 0.5"/>'),
    link("tool", 0.8, '<inertia ixx="0.01" iyy="0.015" izz="0.012" ixy="0.002" ixz="0.001" iyz="-0.001"/>',
         '<origin xyz="0.05 -0.01 0.2" rpy="-0.4 0.7 1.1"/>'),
    link("fore", 0.5, '<inertia ixx="0.005" iyy="0.005" izz="0.002" ixy="0" ixz="0" iyz="0"/>',
         '<origin xyz="0 0 0.1"/>'),
    link("sensor", 0.3, '<inertia ixx="0.001" iyy="0.002" izz="0.003" ixy="0.0001" ixz="0" iyz="0"/>',
         '<origin xyz="0.01 0.02 0.03" rpy="0.2 0.1 -0.3"/>'),
    link("tip"),
    joint("shoulder", "revolute", "base", "upper", '<origin xyz="0 0 0.3" rpy="0.1 0.2 0.3"/><axis xyz="0 0 1"/>'),
    joint("mount", "fixed", "upper", "tool", '<origin xyz="0.4 0.1 -0.05" rpy="0.5 -0.3 0.9"/>'),
    joint("elbow", "revolute", "tool", "fore", '<origin xyz="0.1 0 0.2" rpy="0 0.4 0"/><axis xyz="0 1 0"/>'),
    joint("imu", "fixed", "base", "sensor", '<origin xyz="0.1 -0.2 0.05" rpy="0.3 0.2 0.1"/>'),
    joint("tip_joint", "fixed", "fore", "tip", '<origin xyz="0 0 0.25"/>'),
)


@pytest.mark.parametrize("floating_base", [False, True])
def test_fixed_joint_merges_mass_against_pinocchio(tmp_path, floating_base):
    pin = pytest.importorskip("pinocchio")
    path = write(tmp_path, FIXED_URDF)
    model = rbdgen.load_urdf(path, floating_base=floating_base)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromUrdf(str(path))
    pd = pm.createData()

    # fixed joints add no DoF; their child links are frames on the moving parent
    assert [j.name for j in model.joints] == list(pm.names)[1:]
    assert model.nv == pm.nv == (8 if floating_base else 2)
    assert "tool" not in model.body_names and "mount" not in [j.name for j in model.joints]
    assert model.frame("tool").body == model.body_names.index("upper")
    assert model.frame("tip").body == model.body_names.index("fore")
    assert model.frame("sensor").body == (0 if floating_base else -1)

    # the tool's mass is merged into upper: total mass and M agree with Pinocchio
    expected_mass = 1.5 + 0.8 + 0.5 + (2.0 + 0.3 if floating_base else 0.0)
    assert model.inertia[model.body_names.index("upper")].m == pytest.approx(1.5 + 0.8, abs=1e-15)
    assert_close("total mass", model.total_mass, expected_mass, 1e-15)
    assert_close("total mass vs Pinocchio", model.total_mass, pin.computeTotalMass(pm), REL_TOL_PINOCCHIO)

    rng = np.random.default_rng(7)
    for _ in range(3):
        if floating_base:
            quat = rng.normal(size=4)
            q = np.concatenate([rng.uniform(-1, 1, 3), quat / np.linalg.norm(quat), rng.uniform(-np.pi, np.pi, 2)])
        else:
            q = rng.uniform(-np.pi, np.pi, 2)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        M = ref.crba(model, q)
        Mp = np.array(pin.crba(pm, pd, q))
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert_close("crba[shoulder, shoulder]", M[-2, -2], Mp[-2, -2], REL_TOL_PINOCCHIO)
        assert_close("crba", M, Mp, REL_TOL_PINOCCHIO)
        assert_close("rnea", ref.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a), REL_TOL_PINOCCHIO)
        assert_close("com", ref.com(model, q), pin.centerOfMass(pm, pd, q), REL_TOL_PINOCCHIO)
        pin.framesForwardKinematics(pm, pd, q)
        for name in ("base", "upper", "tool", "fore", "sensor", "tip"):
            R, p = ref.frame_placement(model, q, name)
            oMf = pd.oMf[pm.getFrameId(name, pin.FrameType.BODY)]
            assert_close(f"{name} R", R, oMf.rotation, REL_TOL_PINOCCHIO)
            assert_close(f"{name} p", p, oMf.translation, REL_TOL_PINOCCHIO)


def test_origin_and_axis_defaults(tmp_path):
    """No <origin>: identity; no <axis>: (1, 0, 0); no <inertial><origin>: the link frame."""
    implicit = robot(link("base"), link("arm", 2.0),
                     '<joint name="j" type="revolute"><parent link="base"/><child link="arm"/>'
                     '<limit effort="1" velocity="1" lower="-1" upper="1"/></joint>')
    explicit = robot(link("base"), link("arm", 2.0, origin='<origin xyz="0 0 0" rpy="0 0 0"/>'),
                     joint("j", "revolute", "base", "arm", '<origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="1 0 0"/>'))
    m_imp = rbdgen.load_urdf(write(tmp_path, implicit, "implicit.urdf"))
    m_exp = rbdgen.load_urdf(write(tmp_path, explicit, "explicit.urdf"))
    assert m_imp.joints[0].model.axis == (1, 0, 0)
    assert m_imp.X_T[0].E == ((1, 0, 0), (0, 1, 0), (0, 0, 1)) and tuple(m_imp.X_T[0].r) == (0, 0, 0)
    assert tuple(m_imp.inertia[0].h) == (0, 0, 0)
    for attribute in ("X_T", "parent", "body_names"):
        assert repr(getattr(m_imp, attribute)) == repr(getattr(m_exp, attribute))
    assert repr(m_imp.inertia) == repr(m_exp.inertia)

    angle = 0.7
    R, p = ref.frame_placement(m_imp, np.array([angle]), "arm")
    c, s = np.cos(angle), np.sin(angle)
    assert_close("rotation about x", R, [[1, 0, 0], [0, c, -s], [0, s, c]], 1e-15)
    assert_close("origin", p, [0, 0, 0], 1e-15)

    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(tmp_path / "implicit.urdf"))
    pd = pm.createData()
    q = np.array([angle])
    Mp = np.array(pin.crba(pm, pd, q))
    assert_close("crba default axis", ref.crba(m_imp, q), np.triu(Mp) + np.triu(Mp, 1).T, REL_TOL_PINOCCHIO)


@pytest.mark.parametrize("jtype, unit, scaled", [
    ("revolute", "0 0 1", "0 0 2"),
    ("continuous", "0 1 0", "0 0.25 0"),
    ("prismatic", "1 0 0", "3 0 0"),
    ("revolute", "0.6 0 0.8", "3 0 4"),
])
def test_non_normalized_axis(tmp_path, jtype, unit, scaled):
    def model(axis, filename):
        body = f'<origin xyz="0 0 0.3" rpy="0.1 0 0"/><axis xyz="{axis}"/>'
        return rbdgen.load_urdf(write(tmp_path, arm(elbow=joint("elbow", jtype, "upper", "fore", body)), filename))

    m_unit, m_scaled = model(unit, "unit.urdf"), model(scaled, "scaled.urdf")
    rng = np.random.default_rng(3)
    q, v, a = rng.uniform(-2, 2, 2), rng.normal(size=2), rng.normal(size=2)
    for what, f in [("rnea", lambda m: ref.rnea(m, q, v, a)),
                    ("crba", lambda m: ref.crba(m, q)),
                    ("aba", lambda m: ref.aba(m, q, v, a)),
                    ("placement R", lambda m: ref.frame_placement(m, q, "fore")[0]),
                    ("placement p", lambda m: ref.frame_placement(m, q, "fore")[1]),
                    ("jacobian", lambda m: ref.frame_jacobian(m, q, "fore", "world"))]:
        assert_close(f"{what} axis ({scaled}) vs ({unit})", f(m_scaled), f(m_unit), 1e-14)


# ------------------------------------------------------------------ example-robot-data -----

def _all_urdfs():
    root = robots_dir()
    return sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True))


ALL_URDFS = _all_urdfs()

# Files of example-robot-data that rbdgen rightly refuses (checked one by one):
# the error they must give, as text the message contains.
KNOWN_BAD = {
    # an empty <robot/> left by xacro (Pinocchio refuses it too)
    os.path.join("ur_description", "urdf", "ur3.urdf"): "no <link>",
}

# Files with <inertial> tensors that no rigid body has (Pinocchio loads them unchecked): they load
# with a warning naming the first such link, and strict=True refuses them.
INVALID_INERTIA = {
    # body: ixx*izz - ixz^2 = 0.0564*0.0212 - 0.0575^2 < 0
    os.path.join("romeo_description", "urdf", "romeo_laas_small.urdf"): "link 'body' <inertial>",
    # base_antenna_left_link: ixx*iyy - ixy^2 = 2.37e-8*2.83e-8 - (6.12e-8)^2 < 0
    os.path.join("tiago_description", "robots", "tiago.urdf"): "link 'base_antenna_left_link' <inertial>",
    os.path.join("tiago_description", "robots", "tiago_dual.urdf"): "link 'base_antenna_left_link' <inertial>",
    os.path.join("tiago_description", "robots", "tiago_no_hand.urdf"): "link 'base_antenna_left_link' <inertial>",
    # principal moments 0.01 > 0.001 + 0.001
    os.path.join("pr2_description", "urdf", "pr2.urdf"): "link 'sensor_mount_link' <inertial>",
}


def test_example_robot_data_has_urdfs():
    assert len(ALL_URDFS) > 20
    assert set(KNOWN_BAD) <= set(ALL_URDFS) and set(INVALID_INERTIA) <= set(ALL_URDFS)


@pytest.mark.filterwarnings("ignore:.*<mimic> is ignored:UserWarning")
@pytest.mark.parametrize("relpath", sorted(INVALID_INERTIA))
def test_invalid_inertias_of_real_robots_warn(relpath):
    path = os.path.join(robots_dir(), relpath)
    with pytest.warns(InertiaWarning) as caught:
        rbdgen.load_urdf(path)
    [warning] = [w for w in caught if issubclass(w.category, InertiaWarning)]
    check_message(warning.message, INVALID_INERTIA[relpath])
    with pytest.raises(URDFError) as info:
        rbdgen.load_urdf(path, strict=True)
    check_message(info.value, INVALID_INERTIA[relpath])


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("relpath", ALL_URDFS)
def test_every_example_robot_data_urdf_loads(relpath, floating_base):
    path = os.path.join(robots_dir(), relpath)
    if relpath in KNOWN_BAD:
        with pytest.raises(URDFError) as info:
            rbdgen.load_urdf(path, floating_base=floating_base)
        check_message(info.value, KNOWN_BAD[relpath])
        return
    model = rbdgen.load_urdf(path, floating_base=floating_base)
    assert len(model.frames) >= 1
    if floating_base:
        assert model.joints[0].name == "root_joint" and isinstance(model.joints[0].model, FreeFlyer)
        assert model.nv >= 6
    names = [f.name for f in model.frames]
    assert len(names) == len(set(names))
    # the reference runs at the neutral configuration and gives finite numbers
    q = np.array(model.neutral_configuration(), dtype=float)
    if model.nv:
        assert np.all(np.isfinite(ref.gravity(model, q)))


def test_a_robot_without_joints_is_refused_in_one_line(tmp_path):
    """A single link on a fixed base (example-robot-data's hector quadrotor_base.urdf) has no
    coordinates: build and export refuse it and say to add a free-flyer; floating, it builds."""
    import rbdgen
    from rbdgen.errors import CodegenError
    path = write_urdf(tmp_path, "<robot name='lonely'><link name='body'><inertial><mass value='1'/>"
                                "<inertia ixx='0.1' iyy='0.1' izz='0.1' ixy='0' ixz='0' iyz='0'/></inertial></link></robot>")
    for make in (rbdgen.build, rbdgen.export):
        with pytest.raises(CodegenError, match=r"robot 'lonely' has no joints \(nv = 0\).*--floating-base"):
            make(path, str(tmp_path / "out"), algorithms=["rnea"])
    assert rbdgen.build(path, out_dir=str(tmp_path / "out"), floating_base=True, algorithms=["rnea"]).nv == 6
