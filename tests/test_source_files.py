"""Every file a robot is read from is part of its build's recipe: model.json's source records the
robot's file and the files it reads (xacro includes, an MJCF's includes and the meshes its
inertias come from) by digest, so that a process rebuilding a pickled module whose folder it
lacks refuses, in one line naming the file and before building anything, a robot that changed.
"""

import os
import pickle
import re
import shutil

import numpy as np
import pytest

import rbdgen
from rbdgen.codegen import reopen
from rbdgen.codegen.build import build_model, file_digest, source_changed
from rbdgen.errors import BuildError
from rbdgen.model.sources import load_model
from helpers import tiny_urdf, unpickle_elsewhere, write_urdf

ROBOT_XACRO = """<?xml version="1.0"?>
<robot name="included_arm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:include filename="macros.xacro"/>
  <link name="base"/>
  <xacro:arm_link name="upper" mass="${upper_mass}"/>
  <xacro:arm_link name="lower" mass="${lower_mass}"/>
  <joint name="shoulder" type="continuous"><parent link="base"/><child link="upper"/><axis xyz="0 1 0"/></joint>
  <joint name="elbow" type="continuous"><parent link="upper"/><child link="lower"/>
    <origin xyz="0 0 0.4"/><axis xyz="0 1 0"/></joint>
</robot>
"""

MACROS_XACRO = """<?xml version="1.0"?>
<robot xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="upper_mass" value="1.0"/>
  <xacro:property name="lower_mass" value="0.8"/>
  <xacro:macro name="arm_link" params="name mass">
    <link name="${name}"><inertial><origin xyz="0 0 0.2"/><mass value="${mass}"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  </xacro:macro>
</robot>
"""

ROBOT_MJCF = """<mujoco model="included_pendulum">
  <compiler meshdir="meshes"/>
  <include file="parts.xml"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom class="rod"/>
      <body name="lower" pos="0 0 -0.4">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="mesh" mesh="wedge" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

PARTS_XML = """<mujoco>
  <asset><mesh name="wedge" file="wedge.obj"/></asset>
  <default><default class="rod">
    <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.04" mass="1.0" contype="0" conaffinity="0"/>
  </default></default>
</mujoco>
"""

# a tetrahedron, faces outward
WEDGE_OBJ = "v 0 0 0\nv 0.2 0 0\nv 0 0.2 0\nv 0 0 0.2\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


def unpickle_here(blob, module):
    """pickle.loads in this process, as a process that has not opened the module yet."""
    reopen._OPENED.pop((module._HERE, module._META["build_key"]), None)
    return pickle.loads(blob)


def move_away(folder):
    """The module folder gone from its path (kept aside, as on another machine)."""
    if os.path.isdir(folder):
        aside = folder + ".away"
        shutil.rmtree(aside, ignore_errors=True)
        os.rename(folder, aside)


class Edited:
    """A file edited for the length of a `with`, its text restored after."""

    def __init__(self, path, old, new):
        self.path, self.old, self.new = path, old, new

    def __enter__(self):
        with open(self.path, encoding="utf-8") as f:
            self.text = f.read()
        assert self.old in self.text
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(self.text.replace(self.old, self.new))

    def __exit__(self, *exc):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(self.text)


def assert_refused(blob, module, changed, read_by):
    """Unpickling refuses in one line naming `changed` (read by the robot's file `read_by`), and
    installs nothing."""
    with pytest.raises(BuildError) as refusal:
        unpickle_here(blob, module)
    message = str(refusal.value)
    assert "\n" not in message and f"the robot file {changed} (read by {read_by}) changed since the module was " \
        "built: building it would give another robot" in message, message
    assert not os.path.exists(module._HERE)


@pytest.fixture(scope="module")
def xacro_arm(tmp_path_factory):
    """(module, its pickle, the robot's file, its include), built once for the tests below."""
    pytest.importorskip("xacro")
    root = tmp_path_factory.mktemp("xacro_arm")
    robot, macros = str(root / "arm.urdf.xacro"), str(root / "macros.xacro")
    write_urdf(root, ROBOT_XACRO, "arm.urdf.xacro")
    write_urdf(root, MACROS_XACRO, "macros.xacro")
    module = rbdgen.build(robot, out_dir=str(root / "gen"), algorithms=["rnea"])
    return module, pickle.dumps(module), robot, macros


def test_the_source_record_holds_the_include(xacro_arm):
    module, _, robot, macros = xacro_arm
    source = module._META["source"]
    assert source["urdf"] == robot and source["urdf_sha256"] == file_digest(robot)
    assert source["files"] == {macros: file_digest(macros)}


def test_an_edited_include_is_refused_before_any_build(xacro_arm):
    module, blob, robot, macros = xacro_arm
    move_away(module._HERE)
    with Edited(macros, 'name="lower_mass" value="0.8"', 'name="lower_mass" value="0.9"'):
        assert load_model(robot).total_mass == pytest.approx(1.9)
        assert_refused(blob, module, macros, robot)
        code, _, err = unpickle_elsewhere(blob)
        assert code != 0 and f"the robot file {macros} (read by {robot}) changed" in err.strip().splitlines()[-1]
        assert not os.path.exists(module._HERE)
    os.remove(macros)     # gone is changed too
    try:
        with pytest.raises(BuildError, match=f"the robot file {re.escape(macros)} .*is gone since the module was built"):
            unpickle_here(blob, module)
    finally:
        write_urdf(os.path.dirname(macros), MACROS_XACRO, "macros.xacro")


def test_an_unchanged_include_rebuilds(xacro_arm):
    module, blob, _, _ = xacro_arm
    move_away(module._HERE)
    code, out, err = unpickle_elsewhere(blob)
    assert code == 0, err
    path, tau = out.splitlines()
    assert path == module.__file__ and os.path.isfile(path)
    q = np.linspace(-1, 1, module.nq)
    np.testing.assert_array_equal(eval(tau), module.rnea(q, q, q))
    shutil.rmtree(module._HERE)


def test_another_rbdgen_builds_nothing(xacro_arm, monkeypatch):
    """Where the build key would differ (another rbdgen, C compiler or machine), unpickling
    refuses before anything is built or installed."""
    from rbdgen.codegen import build as build_module
    module, blob, _, _ = xacro_arm
    move_away(module._HERE)
    monkeypatch.setattr(build_module, "code_fingerprint", lambda: "another rbdgen")
    with pytest.raises(BuildError, match="would give another module than the one pickled .*nothing was built"):
        unpickle_here(blob, module)
    assert not os.path.exists(module._HERE)


def test_records_without_files_are_still_read(xacro_arm):
    """A model.json from before the files were recorded: the robot's file alone is checked."""
    _, _, robot, macros = xacro_arm
    old = {"urdf": robot, "urdf_sha256": file_digest(robot)}
    with Edited(macros, 'value="0.8"', 'value="0.9"'):
        assert source_changed(old) is None
        assert source_changed({**old, "files": {macros: None}}) == macros
    assert source_changed({**old, "urdf_sha256": "0" * 64}) == robot
    assert source_changed({"urdf": robot}) is None    # nothing recorded to compare with


def test_an_mjcf_include_and_its_mesh_are_recorded(tmp_path):
    pytest.importorskip("mujoco")
    os.makedirs(tmp_path / "meshes")
    robot = write_urdf(tmp_path, ROBOT_MJCF, "pendulum.xml")
    parts = write_urdf(tmp_path, PARTS_XML, "parts.xml")
    mesh = write_urdf(tmp_path / "meshes", WEDGE_OBJ, "wedge.obj")
    module = rbdgen.build(robot, out_dir=str(tmp_path / "gen"), algorithms=["rnea"])
    assert module._META["source"]["files"] == {parts: file_digest(parts), mesh: file_digest(mesh)}
    blob = pickle.dumps(module)
    move_away(module._HERE)
    with Edited(parts, 'mass="1.0"', 'mass="1.1"'):
        assert_refused(blob, module, parts, robot)
    with Edited(mesh, "v 0.2 0 0", "v 0.3 0 0"):     # the lower body's inertia comes from this mesh
        assert_refused(blob, module, mesh, robot)


def test_a_module_built_from_a_model_says_it_has_no_file(tmp_path):
    model = load_model(write_urdf(tmp_path, tiny_urdf(robot="from_python")))
    module = build_model(model, str(tmp_path / "gen"), algorithms=["rnea"])
    blob = pickle.dumps(module)
    move_away(module._HERE)
    with pytest.raises(BuildError) as refusal:
        unpickle_here(blob, module)
    message = str(refusal.value)
    assert "\n" not in message and "None" not in message, message
    assert "built from a Model in Python (build_model), with no robot file to build it from" in message
    assert "put the module folder on storage every process sees" in message
