"""SDFormat input (rbdgen/model/sdf.py): the frame semantics of 1.7 on (relative_to, expressed_in,
<frame>, degrees, quaternions) and of 1.6 (poses in the model and child frames,
use_parent_model_frame) against the same arm written as a URDF by hand; loop closures (a joint
whose child already has a parent) on a four-bar and on example-robot-data's Cassie; and the
one-line refusals."""

import math
import os
import re

import numpy as np
import pytest

import rbdgen
from rbdgen import reference
from rbdgen.errors import ModelError
from rbdgen.examples import robots_dir
from rbdgen.model.model import Loop
from rbdgen.model.sdf import model_from_sdf
from rbdgen.model.urdf import model_from_urdf_string, rpy_to_rotation

TOLERANCE = 1e-12   # the same arithmetic in another order

INERTIA = "<inertia><ixx>{}</ixx><iyy>{}</iyy><izz>{}</izz><ixy>{}</ixy><ixz>0</ixz><iyz>0</iyz></inertia>"
UPPER = dict(mass=1.5, inertia=INERTIA.format(0.02, 0.03, 0.01, 0))
FORE = dict(mass=0.7, inertia=INERTIA.format(0.004, 0.005, 0.006, 0.0001))
SHOULDER = (0.0, 0.0, 0.3, 0.0, 0.0, math.pi / 2)    # in the base frame
UPPER_IN_SHOULDER = (0.1, 0.0, 0.0)                  # the upper link's frame, off its joint's
ELBOW_IN_UPPER = (0.0, 0.0, 0.4, 0.3, 0.0, 0.0)
FORE_INERTIAL = (0.05, 0.0, 0.1, 0.1, 0.2, 0.3)


def pose(x, y, z, roll=0.0, pitch=0.0, yaw=0.0):
    matrix = np.eye(4)
    matrix[:3, :3] = rpy_to_rotation(roll, pitch, yaw)
    matrix[:3, 3] = (x, y, z)
    return matrix


def text(matrix):
    """x y z roll pitch yaw of a pose (R = Rz Ry Rx)."""
    R = matrix[:3, :3]
    pitch = math.asin(-R[2, 0])
    roll, yaw = math.atan2(R[2, 1], R[2, 2]), math.atan2(R[1, 0], R[0, 0])
    return " ".join(repr(float(x)) for x in (*matrix[:3, 3], roll, pitch, yaw))


def arm_urdf():
    """The arm as a URDF: each link frame at its joint (URDF's rule), the SDF link frame of
    `upper` a fixed child, the elbow's axis (the model's x) in the elbow's frame."""
    elbow_world = pose(*SHOULDER) @ pose(*UPPER_IN_SHOULDER) @ pose(*ELBOW_IN_UPPER)
    axis = elbow_world[:3, :3].T @ np.array([1.0, 0.0, 0.0])
    elbow = pose(*UPPER_IN_SHOULDER) @ pose(*ELBOW_IN_UPPER)   # in the shoulder's frame
    return f"""<robot name="arm">
  <link name="base"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper_joint_frame"/>
    <origin xyz="0 0 0.3" rpy="0 0 {math.pi / 2!r}"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="upper_joint_frame"><inertial><origin xyz="0.1 0 0.2"/><mass value="1.5"/>
    <inertia ixx="0.02" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="upper_frame" type="fixed"><parent link="upper_joint_frame"/><child link="upper"/><origin xyz="0.1 0 0"/></joint>
  <link name="upper"/>
  <joint name="elbow" type="revolute"><parent link="upper_joint_frame"/><child link="fore"/>
    <origin xyz="{' '.join(repr(float(x)) for x in elbow[:3, 3])}" rpy="{' '.join(text(elbow).split()[3:])}"/>
    <axis xyz="{' '.join(repr(float(x)) for x in axis)}"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="fore"><inertial><origin xyz="0.05 0 0.1" rpy="0.1 0.2 0.3"/><mass value="0.7"/>
    <inertia ixx="0.004" iyy="0.005" izz="0.006" ixy="0.0001" ixz="0" iyz="0"/></inertial></link>
  <joint name="tool_frame" type="fixed"><parent link="fore"/><child link="tool"/><origin xyz="0 0 0.3"/></joint>
  <link name="tool"/>
</robot>"""


def quaternion_xyzw(roll, pitch, yaw):
    """The unit quaternion of URDF's rpy (R = Rz(yaw) Ry(pitch) Rx(roll)), x y z w."""
    cr, sr, cp, sp, cy, sy = (f(a / 2) for a in (roll, pitch, yaw) for f in (np.cos, np.sin))
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


def arm_sdf_17(degrees=False, quaternion=False):
    shoulder = " ".join(repr(x) for x in SHOULDER[:5]) + " " + ("90" if degrees else repr(SHOULDER[5]))
    rotation = ""
    if quaternion:   # twice the unit quaternion: the reader normalizes it
        shoulder = " ".join(repr(x) for x in SHOULDER[:3]) + " " + " ".join(
            repr(2 * float(x)) for x in quaternion_xyzw(*SHOULDER[3:]))
        rotation = ' rotation_format="quat_xyzw"'
    return f"""<sdf version="1.7"><model name="arm">
  <link name="base"><inertial><mass>2</mass>{INERTIA.format(0.1, 0.1, 0.1, 0)}</inertial></link>
  <joint name="anchor" type="fixed"><parent>world</parent><child>base</child></joint>
  <link name="upper"><pose relative_to="shoulder">0.1 0 0 0 0 0</pose>
    <inertial><pose>0 0 0.2 0 0 0</pose><mass>{UPPER['mass']}</mass>{UPPER['inertia']}</inertial></link>
  <joint name="shoulder" type="revolute"><pose relative_to="base"{' degrees="true"' if degrees else ''}{rotation}>{shoulder}</pose>
    <parent>base</parent><child>upper</child><axis><xyz>0 1 0</xyz></axis></joint>
  <link name="fore"><pose relative_to="elbow">0 0 0 0 0 0</pose>
    <inertial><pose>{' '.join(map(repr, FORE_INERTIAL))}</pose><mass>{FORE['mass']}</mass>{FORE['inertia']}</inertial></link>
  <joint name="elbow" type="revolute"><pose relative_to="upper">{' '.join(map(repr, ELBOW_IN_UPPER))}</pose>
    <parent>upper</parent><child>fore</child><axis><xyz expressed_in="__model__">1 0 0</xyz></axis></joint>
  <frame name="tool" attached_to="fore"><pose>0 0 0.3 0 0 0</pose></frame>
</model></sdf>"""


def arm_sdf_16():
    """The same arm in SDFormat 1.6: links in the model frame, joints in their child's, the
    elbow's axis in the model frame."""
    upper = pose(*SHOULDER) @ pose(*UPPER_IN_SHOULDER)
    elbow = upper @ pose(*ELBOW_IN_UPPER)
    return f"""<sdf version="1.6"><model name="arm">
  <link name="base"><inertial><mass>2</mass>{INERTIA.format(0.1, 0.1, 0.1, 0)}</inertial></link>
  <joint name="anchor" type="fixed"><parent>world</parent><child>base</child></joint>
  <link name="upper"><pose>{text(upper)}</pose>
    <inertial><pose>0 0 0.2 0 0 0</pose><mass>{UPPER['mass']}</mass>{UPPER['inertia']}</inertial></link>
  <joint name="shoulder" type="revolute"><pose>{text(np.linalg.solve(upper, pose(*SHOULDER)))}</pose>
    <parent>base</parent><child>upper</child><axis><xyz>0 1 0</xyz></axis></joint>
  <link name="fore"><pose>{text(elbow)}</pose>
    <inertial><pose>{' '.join(map(repr, FORE_INERTIAL))}</pose><mass>{FORE['mass']}</mass>{FORE['inertia']}</inertial></link>
  <joint name="elbow" type="revolute"><parent>upper</parent><child>fore</child>
    <axis><xyz>1 0 0</xyz><use_parent_model_frame>true</use_parent_model_frame></axis></joint>
  <link name="tool"><pose>{text(elbow @ pose(0, 0, 0.3))}</pose><inertial><mass>0</mass>{INERTIA.format(0, 0, 0, 0)}</inertial></link>
  <joint name="tool_frame" type="fixed"><parent>fore</parent><child>tool</child></joint>
</model></sdf>"""


@pytest.mark.parametrize("source", ["1.7", "1.7 degrees", "1.7 quaternion", "1.6"])
def test_an_arm_equals_its_urdf(source):
    """Dynamics and frames of the SDFormat arm equal those of the URDF written by hand."""
    sdf = model_from_sdf(arm_sdf_16() if source == "1.6" else
                         arm_sdf_17(degrees="degrees" in source, quaternion="quaternion" in source))
    urdf = model_from_urdf_string(arm_urdf())
    assert [j.name for j in sdf.joints] == [j.name for j in urdf.joints] == ["shoulder", "elbow"]
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, v, a = rng.normal(size=(3, 2))
        np.testing.assert_allclose(reference.rnea(sdf, q, v, a), reference.rnea(urdf, q, v, a), rtol=0, atol=1e-12)
        np.testing.assert_allclose(reference.crba(sdf, q), reference.crba(urdf, q), rtol=0, atol=1e-12)
        for frame in ("upper", "fore", "tool"):
            for got, want in zip(reference.frame_placement(sdf, q, frame), reference.frame_placement(urdf, q, frame)):
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=frame)


def four_bar(closure="ball"):
    """A planar four-bar: crank at the origin, rocker at (1, 0, 0), the coupler from the crank's
    tip (0, 0.4, 0) to the rocker's (1, 0.5, 0), where `closure` joins it to the rocker."""
    link = lambda name, x, y: (f'<link name="{name}"><pose>{x} {y} 0 0 0 0</pose><inertial><pose>0.1 0.1 0 0 0 0'
                               f'</pose><mass>0.5</mass>{INERTIA.format(0.01, 0.01, 0.01, 0)}</inertial></link>')
    joint = lambda name, parent, child: (f'<joint name="{name}" type="revolute"><parent>{parent}</parent>'
                                         f'<child>{child}</child><axis><xyz>0 0 1</xyz></axis></joint>')
    return f"""<sdf version="1.8"><model name="four_bar">
  {link("ground", 0, 0)}<joint name="anchor" type="fixed"><parent>world</parent><child>ground</child></joint>
  {link("crank", 0, 0)}{joint("crank_joint", "ground", "crank")}
  {link("coupler", 0, 0.4)}{joint("coupler_joint", "crank", "coupler")}
  {link("rocker", 1, 0)}{joint("rocker_joint", "ground", "rocker")}
  <joint name="close" type="{closure}"><pose>0 0.5 0 0 0 0</pose><parent>coupler</parent><child>rocker</child>
    <axis><xyz>0 0 1</xyz></axis></joint>
</model></sdf>"""


def test_a_joint_to_a_child_with_a_parent_closes_a_loop():
    model = model_from_sdf(four_bar())
    assert [j.name for j in model.joints] == ["crank_joint", "coupler_joint", "rocker_joint"]
    assert model.loops == (Loop("close", "close_parent", "close_child", "3d"),)
    q = np.zeros(model.nq)
    for frame in ("close_parent", "close_child"):
        np.testing.assert_allclose(reference.frame_placement(model, q, frame)[1], [1, 0.5, 0], rtol=0, atol=TOLERANCE)
    assert model_from_sdf(four_bar("fixed")).loops[0].kind == "6d"


def cassie_path():
    """example-robot-data's cassie_v2.sdf (installed with the test extras)."""
    return os.path.join(robots_dir(), "cassie_description", "robots", "cassie_v2.sdf")


def test_cassie_loads_with_its_four_loops():
    """cassie_v2.sdf: 23 links, 26 joints; each pitch rod and each plantar rod closes on the leg
    with a ball joint. The loops are closed in the file's own pose (q neutral)."""
    model = rbdgen.load_model(cassie_path())
    assert model.joints[0].type == "free_flyer" and len(model.joints) == 1 + 26 - 4
    assert sorted(loop.name for loop in model.loops) == ["left-pitch-rod-joint", "left-plantar-foot-joint",
                                                         "right-pitch-rod-joint", "right-plantar-foot-joint"]
    assert {loop.kind for loop in model.loops} == {"3d"}
    q = np.zeros(model.nq)
    q[6] = 1.0
    for loop in model.loops:
        a, b = (reference.frame_placement(model, q, frame)[1] for frame in (loop.a, loop.b))
        assert np.abs(a - b).max() < 1e-3, (loop.name, a, b)   # the file's digits


@pytest.mark.parametrize("change, words", [
    (lambda s: s.replace('type="revolute"><pose relative_to="upper">', 'type="gearbox"><pose relative_to="upper">'),
     ["joint 'elbow'", "gearbox"]),
    (lambda s: s.replace('type="revolute"><pose relative_to="upper">', 'type="screw"><pose relative_to="upper">'),
     ["joint 'elbow'", "screw"]),
    (lambda s: s.replace('relative_to="upper"', 'relative_to="nowhere"'), ["'nowhere'"]),
    (lambda s: s.replace('<pose relative_to="base"', '<pose relative_to="upper"'), ["cycle"]),
    (lambda s: s.replace("</model>", '<model name="gripper"/></model>'), ["nested", "'gripper'"]),
    (lambda s: s.replace('version="1.7"', 'version="2.0"'), ["2.0"]),
    (lambda s: s.replace("<xyz>0 1 0</xyz>", "<xyz>0 0 0</xyz>"), ["joint 'shoulder' <axis>"]),
    (lambda s: s.replace("<child>fore</child>", "<child>hand</child>"), ["joint 'elbow'", "'hand'"]),
])
def test_what_is_not_read_is_one_line_naming_it(change, words):
    with pytest.raises(ModelError) as info:
        model_from_sdf(change(arm_sdf_17()))
    text = str(info.value)
    assert "\n" not in text and all(w in text for w in words), text


def test_a_revolute_loop_closure_is_refused_naming_the_joint():
    with pytest.raises(ModelError, match="joint 'close' closes a loop .* ball joint"):
        model_from_sdf(four_bar("revolute"))


def test_rbdgen_info_reports_the_loops():
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "rbdgen.cli", "info", cassie_path()], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "robot cassie: nq=29 nv=28 bodies=23" in done.stdout
    assert "loop left-pitch-rod-joint (3d): frames left-pitch-rod-joint_parent and left-pitch-rod-joint_child" \
        in done.stdout
    refused = subprocess.run([sys.executable, "-m", "rbdgen.cli", "info", cassie_path(), "--floating-base"],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "floats unless a joint attaches it to the world" in refused.stderr


def test_hostile_loops_are_one_line(tmp_path):
    """A loop joint whose parent is not a link is refused naming both; a link in a loop that
    moves no mass or inertia leaves M singular: the functions that solve with M are left out
    of the default build, and named they are refused naming the joint."""
    with pytest.raises(ModelError, match="joint 'close': parent 'nowhere' is not a link"):
        model_from_sdf(four_bar().replace("<parent>coupler</parent>", "<parent>nowhere</parent>"))
    massless = re.sub(r'(<link name="rocker"><pose>[^<]*</pose>)<inertial>.*?</inertial>',
                      r'\1<inertial><mass>0</mass>' + INERTIA.format(0, 0, 0, 0) + '</inertial>', four_bar())
    path = tmp_path / "massless.sdf"
    path.write_text(massless)
    assert model_from_sdf(massless).massless_joints()
    with pytest.raises(ModelError, match="joint 'rocker_joint' moves no mass or inertia") as info:
        rbdgen.build(str(path), out_dir=str(tmp_path), algorithms=["constrained_dynamics"])
    assert "\n" not in str(info.value)
