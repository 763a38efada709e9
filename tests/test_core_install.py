"""A core install (`pip install -e .`, no extras) reads, builds, exports and verifies plain URDFs.

The suite installs every extra, so a core path that imports an optional package could pass here
and fail for a user. These tests run the CLI in a subprocess in which every optional package is
made unimportable, on URDFs that declare the xacro namespace (as files expanded from xacro do)
without using xacro: such a file is plain URDF.
"""

import json
import os
import subprocess
import sys

import pytest

from helpers import robot_path, write_urdf

# Every package rbdgen may use only for a feature of its own (extras, test truths), and what
# they pull in. A core path that imports one of these fails in the subprocess.
OPTIONAL = ["xacro", "mujoco", "casadi", "jax", "jaxlib", "pinocchio", "example_robot_data", "dask", "distributed",
            "adam", "gymnasium", "dm_control", "cmeel", "eigenpy", "hppfcl", "coal", "ray"]

# The subprocess's first lines: a finder that refuses the packages above, then the CLI.
_CORE_ONLY = """
import sys
BLOCKED = set({blocked!r})

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is not installed (a core install)")
        return None

sys.meta_path.insert(0, Refuse())
from rbdgen.cli import main
code = main(sys.argv[1:])
assert not BLOCKED & set(m.partition(".")[0] for m in sys.modules), "an optional package was imported"
sys.exit(code)
"""


def run_core_only(*argv, cwd):
    """(exit code, stdout + stderr) of `rbdgen ARGV` with no optional package importable."""
    script = _CORE_ONLY.format(blocked=sorted(OPTIONAL))
    done = subprocess.run([sys.executable, "-c", script, *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    return done.returncode, done.stdout + done.stderr


# example-robot-data's URDFs that declare the xacro namespace and use nothing of xacro's
DECLARING = ["kinova", "allegro", "panda"]


@pytest.mark.parametrize("robot", DECLARING)
def test_declared_namespace_alone_is_urdf(robot, tmp_path):
    with open(robot_path(robot), encoding="utf-8") as f:
        assert "http://www.ros.org/wiki/xacro" in f.read(), "the test needs a URDF that declares xacro's namespace"
    code, output = run_core_only("info", robot_path(robot), cwd=tmp_path)
    assert code == 0, output
    assert "xacro" not in output


def test_core_install_builds_exports_and_verifies(tmp_path):
    """Panda's URDF through the README's default build, verify and export with no optional
    package: the build's own verification against the reference runs (every default function:
    the CasADi and JAX glue is compiled without CasADi or JAX), and verify says Pinocchio was
    left out."""
    urdf = robot_path("panda")
    code, output = run_core_only("build", urdf, "-o", tmp_path / "gen", cwd=tmp_path)
    assert code == 0, output
    with open(tmp_path / "gen" / "panda" / "model.json", encoding="utf-8") as f:
        assert json.load(f)["source"]["kind"] == "urdf"
    code, output = run_core_only("verify", tmp_path / "gen" / "panda", "--states", 3, cwd=tmp_path)
    assert code == 0, output
    assert "MISMATCH" not in output and "compared with the reference only" in output
    code, output = run_core_only("export", urdf, "-o", tmp_path / "lib", "--module-dir", tmp_path / "gen",
                                 cwd=tmp_path)
    assert code == 0, output
    assert os.path.isfile(tmp_path / "lib" / "CMakeLists.txt")


def test_xacro_without_the_package_names_what_needs_it(tmp_path):
    """A file that uses xacro, read without the xacro package: one line naming the file, what
    makes it xacro, and the install."""
    path = write_urdf(tmp_path, '<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                                '<xacro:property name="m" value="1"/><link name="a"/></robot>')
    code, output = run_core_only("info", path, cwd=tmp_path)
    assert code != 0
    line = output.strip().splitlines()[-1]
    assert "<xacro:property>" in line and "pip install xacro" in line and path in line, output


@pytest.mark.parametrize("text, uses", [
    ('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="a"/></robot>', None),
    ('<robot name="r"><link name="a"/></robot>', None),
    ('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:include filename="b.xacro"/></robot>',
     "<xacro:include>"),
    ('<robot name="r" xmlns:x="http://wiki.ros.org/xacro"><x:macro name="m"/></robot>', None),
    ('<robot name="r" xmlns:xacro="http://wiki.ros.org/xacro"><xacro:macro name="m"/></robot>', "<xacro:macro>"),
    ('<robot name="r"><link name="a"><inertial><mass value="${m}"/></inertial></link></robot>',
     "${...} in <mass value>"),
    ('<robot name="r"><link name="$(arg base)"/></robot>', "$(...) in <link name>"),
    ('<robot name="r"><link name="a"/><gazebo>$(find pkg)/x</gazebo></robot>', "$(...) in the text of <gazebo>"),
    ('<robot name="r"><link name="a"><visual><geometry><mesh filename="package://p/m$.stl"/></geometry></visual>'
     '</link></robot>', None),
])
def test_what_makes_a_file_xacro(text, uses, tmp_path):
    from rbdgen.model.sources import source_kind, xacro_use
    path = write_urdf(tmp_path, text)
    assert xacro_use(path) == uses
    assert source_kind(path) == ("xacro" if uses else "urdf")
