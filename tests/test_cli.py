"""The command line end to end: `rbdgen build | info | verify` in subprocesses (as a user runs
them) and `rbdgen.cli.main` in-process; user mistakes are one stderr line and status 2."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import rbdgen
from helpers import robot_path
from rbdgen.cli import main

PENDULUM = robot_path("double_pendulum_continuous")   # robot "2dof_planar" -> module r_2dof_planar
PENDULUM_MODULE = "r_2dof_planar"
# functions every default build has (the generator may add more)
FUNCTIONS = ("rnea", "rnea_fext", "nle", "gravity", "crba", "aba", "aba_fext", "placements", "jacobians",
             "com", "kinetic_energy", "potential_energy")


def run_cli(*args, cwd=None, timeout=300):
    """`python -m rbdgen.cli ARGS` -> CompletedProcess (text)."""
    return subprocess.run([sys.executable, "-m", "rbdgen.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def assert_user_error(code, stderr, *fragments):
    """Status 2, one stderr line 'rbdgen: error: ...' naming every fragment, no traceback."""
    lines = stderr.splitlines()
    assert code == 2, (code, stderr)
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("rbdgen: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """`rbdgen build PENDULUM -o DIR`, run once: (output folder, CompletedProcess)."""
    out = tmp_path_factory.mktemp("cli") / "generated"
    result = run_cli("build", PENDULUM, "-o", out)
    return out, result


# ------------------------------------------------------------------------------ build ------

def test_build_prints_module_path_and_operation_counts(built):
    out, result = built
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    folder = os.path.join(str(out), PENDULUM_MODULE)
    assert lines[0] == f"built {os.path.abspath(folder)}", lines[0]
    with open(os.path.join(folder, "model.json"), encoding="utf-8") as f:
        meta = json.load(f)
    counts = {}
    for line in lines[1:]:
        m = re.fullmatch(r"\s+(\w+)\s+(\d+) operations", line)
        assert m, f"unexpected line {line!r}"
        counts[m.group(1)] = int(m.group(2))
    assert set(FUNCTIONS) <= set(counts)
    assert counts == {k: v["operations"] for k, v in meta["functions"].items()}
    assert all(n > 0 for n in counts.values())
    # the build reports its progress on stderr, with the verification
    assert "verified against the reference" in result.stderr
    module = rbdgen.load(folder)
    assert (module.nq, module.nv) == (2, 2)


def test_build_again_reuses(built):
    out, _ = built
    folder = os.path.join(str(out), PENDULUM_MODULE)
    before = {n: os.stat(os.path.join(folder, n)).st_mtime_ns for n in os.listdir(folder)}
    result = run_cli("build", PENDULUM, "-o", out)
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stderr
    assert result.stdout.splitlines()[0] == f"built {os.path.abspath(folder)}"
    assert {n: os.stat(os.path.join(folder, n)).st_mtime_ns for n in os.listdir(folder)} == before


def test_build_with_options(tmp_path):
    out = tmp_path / "gen"
    result = run_cli("build", PENDULUM, "-o", out, "--name", "pendulum", "--algorithms", "rnea, crba",
                     "--no-native")
    assert result.returncode == 0, result.stderr
    folder = os.path.abspath(os.path.join(str(out), "pendulum"))
    assert result.stdout.splitlines()[0] == f"built {folder}"
    assert re.search(r"^\s+rnea\s+\d+ operations$", result.stdout, re.M)
    assert re.search(r"^\s+crba\s+\d+ operations$", result.stdout, re.M)
    assert len(result.stdout.splitlines()) == 3
    with open(os.path.join(folder, "model.json"), encoding="utf-8") as f:
        meta = json.load(f)
    assert meta["options"] == {"algorithms": ["rnea", "crba"], "native": False, "cse": True}


def test_console_script(tmp_path):
    # pip install -e . puts the script on PATH; its absence is a packaging bug, not a skip
    assert shutil.which("rbdgen") is not None, "the rbdgen console script is not on PATH"
    result = subprocess.run(["rbdgen", "info", PENDULUM], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "nq=2 nv=2" in result.stdout


# ------------------------------------------------------------------------------- info ------

def test_info_fixed_base():
    result = run_cli("info", robot_path("ur5"))
    assert result.returncode == 0, result.stderr
    model = rbdgen.load_urdf(robot_path("ur5"))
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"robot ur5: nq={model.nq} nv={model.nv} bodies={model.nbodies} ")
    assert f"total mass={model.total_mass:.6g} kg" in lines[0]
    assert re.search(r"joint\s+type\s+parent body\s+idx_q nq idx_v nv", lines[1])
    for joint in model.joints:
        line = next(ln for ln in lines if ln.strip().startswith(joint.name + " "))
        assert line.split()[-4:] == [str(joint.idx_q), str(joint.nq), str(joint.idx_v), str(joint.nv)], line
        assert joint.type in line


def test_info_floating_base():
    path = robot_path("solo12")
    result = run_cli("info", path, "--floating-base")
    assert result.returncode == 0, result.stderr
    model = rbdgen.load_urdf(path, floating_base=True)
    assert (model.nq, model.nv) == (19, 18)
    lines = result.stdout.splitlines()
    assert "nq=19 nv=18" in lines[0] and f"total mass={model.total_mass:.6g} kg" in lines[0]
    root = next(ln for ln in lines if ln.startswith("root_joint "))
    assert root.split()[1] == "free_flyer" and root.split()[-4:] == ["0", "7", "0", "6"]
    # without --floating-base the base is fixed
    fixed = run_cli("info", path)
    assert fixed.returncode == 0 and "nq=12 nv=12" in fixed.stdout.splitlines()[0]


def test_info_in_process(capsys):
    assert main(["info", PENDULUM]) == 0
    captured = capsys.readouterr()
    model = rbdgen.load_urdf(PENDULUM)
    assert captured.out.startswith(f"robot 2dof_planar: nq=2 nv=2 bodies=2 total mass={model.total_mass:.6g} kg")
    for joint in model.joints:
        assert re.search(rf"^\s*{re.escape(joint.name)}\s+\w+\s+.*\s{joint.idx_q}\s+1\s+{joint.idx_v}\s+1$",
                         captured.out, re.M), captured.out
    assert captured.err == ""


# ----------------------------------------------------------------------------- verify ------

def check_verify_output(stdout):
    assert re.search(r"worst relative error vs reference", stdout)
    errors = dict(re.findall(r"^\s+(\w+)\s+(\S+)\s+ok$", stdout, re.M))
    assert {"rnea", "crba", "aba", "placements", "jacobians", "com"} <= set(errors), stdout
    assert all(float(e) <= 1e-10 for e in errors.values())
    assert "MISMATCH" not in stdout
    assert "vs Pinocchio" in stdout


def test_verify_module_folder(built):
    out, result = built
    assert result.returncode == 0, result.stderr
    verify = run_cli("verify", os.path.join(str(out), PENDULUM_MODULE), "--states", "3")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "(3 states, tol 1e-10)" in verify.stdout
    check_verify_output(verify.stdout)


def test_verify_urdf(built):
    out, _ = built
    verify = run_cli("verify", PENDULUM, "-o", out, "--states", "2")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    check_verify_output(verify.stdout)
    assert "up to date" in verify.stderr       # the module built above is reused


def test_verify_in_process(built, capsys):
    out, _ = built
    assert main(["verify", os.path.join(str(out), PENDULUM_MODULE), "--states", "2"]) == 0
    check_verify_output(capsys.readouterr().out)


def test_verify_module_without_rnea_crba_aba(tmp_path):
    """A module built with --algorithms that leaves out rnea/crba/aba still verifies (against
    the reference, and against Pinocchio for what it has) instead of crashing."""
    out = tmp_path / "gen"
    build = run_cli("build", PENDULUM, "-o", out, "--algorithms", "gravity,com")
    assert build.returncode == 0, build.stderr
    verify = run_cli("verify", out / PENDULUM_MODULE, "--states", "2")
    assert "Traceback" not in verify.stderr, verify.stderr
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert re.search(r"^\s+gravity\s+\S+\s+ok$", verify.stdout, re.M)
    assert re.search(r"^\s+com\s+\S+\s+ok$", verify.stdout, re.M)


# ----------------------------------------------------------------------- user mistakes ------

def test_missing_file(tmp_path):
    missing = tmp_path / "nope.urdf"
    for command in (["build", missing, "-o", tmp_path / "out"], ["info", missing], ["verify", missing]):
        result = run_cli(*command, cwd=tmp_path)
        assert_user_error(result.returncode, result.stderr, "nope.urdf", "not found")
        assert result.stdout == ""
    assert not (tmp_path / "out").exists() or not [n for n in os.listdir(tmp_path / "out") if not n.startswith(".")]


def test_malformed_urdf(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r"><link name="a"></robot>')
    for command in (["build", bad, "-o", tmp_path / "out"], ["info", bad]):
        result = run_cli(*command, cwd=tmp_path)
        assert_user_error(result.returncode, result.stderr, "malformed XML")
    not_a_robot = tmp_path / "other.urdf"
    not_a_robot.write_text("<sdf><model/></sdf>")
    result = run_cli("info", not_a_robot)
    assert_user_error(result.returncode, result.stderr, "<sdf>")


def test_unknown_algorithm(tmp_path):
    result = run_cli("build", PENDULUM, "-o", tmp_path / "out", "--algorithms", "rnea,warp_drive")
    assert_user_error(result.returncode, result.stderr, "warp_drive")
    assert result.stdout == ""


def test_user_mistakes_in_process(tmp_path, capsys):
    missing = str(tmp_path / "missing.urdf")
    assert main(["info", missing]) == 2
    captured = capsys.readouterr()
    assert_user_error(2, captured.err, "missing.urdf")
    assert captured.out == ""

    assert main(["build", PENDULUM, "-o", str(tmp_path / "out"), "--algorithms", "rnea,nope"]) == 2
    assert_user_error(2, capsys.readouterr().err, "'nope'")

    # verify on a folder that is not a module
    (tmp_path / "empty").mkdir()
    assert main(["verify", str(tmp_path / "empty")]) == 2
    assert_user_error(2, capsys.readouterr().err, "not a generated rbdgen module")
