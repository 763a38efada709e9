"""The command line end to end: `rbdgen build | info | verify | bench | symbolic` in subprocesses (as a
user runs them; verify and bench with Pinocchio and with it "not installed") and
`rbdgen.cli.main` in-process; user mistakes are one stderr line and status 2, never a traceback."""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import rbdgen
from rbdgen.table.functions import BY_NAME
from helpers import robot_path
from rbdgen.algorithms import constrained
from rbdgen.cli import main
from rbdgen.codegen.build import module_name
from rbdgen.errors import RbdgenError
from rbdgen.runtime.reference import OPS

PENDULUM = robot_path("double_pendulum_continuous")
PENDULUM_MODULE = module_name("2dof_planar")   # the robot's name is not an identifier: r_2dof_planar_<hash>
# functions every default build has (the generator may add more)
FUNCTIONS = ("rnea", "rnea_fext", "nle", "gravity", "crba", "aba", "aba_fext", "placements", "jacobians",
             "com", "kinetic_energy", "potential_energy")


def run_cli(*args, cwd=None, timeout=300, env=None, prefix=()):
    """`python -m rbdgen.cli ARGS` -> CompletedProcess (text); `prefix` runs it through a wrapper."""
    return subprocess.run([*prefix, sys.executable, "-m", "rbdgen.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, env=env)


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
    assert {k: meta["options"].get(k) for k in ("algorithms", "native", "cse")} == {
        "algorithms": ["rnea", "crba"], "native": False, "cse": True}, meta["options"]


def test_build_with_frames_and_contacts(tmp_path):
    """--frames restricts the module's frames; --contact declares contacts (model.json, the
    module's contact functions); an unknown contact frame is one line naming the closest."""
    urdf = tiny_urdf(tmp_path / "tiny.urdf")
    out = tmp_path / "gen"
    result = run_cli("build", urdf, "-o", out, "--algorithms", "crba,nle,frame_placement,contact_dynamics",
                     "--frames", "hand,fore", "--contact", "hand:3d@0,0,0.05", "--contact", "fore:1d/0,1,0")
    assert result.returncode == 0, result.stderr
    with open(out / "tiny" / "model.json", encoding="utf-8") as f:
        meta = json.load(f)
    assert list(meta["frames"]) == ["hand", "fore"]
    assert [c["spec"] for c in meta["contacts"]] == ["hand:3d@0,0,0.05", "fore:1d/0,1,0"]
    module = rbdgen.load(out / "tiny")
    assert module.contacts == ("hand:3d@0,0,0.05", "fore:1d/0,1,0") and module.frames == ("hand", "fore")
    q, v, tau = [0.1, 0.2, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]
    qdd, lam = module.contact_dynamics(q, v, tau, damping=1e-3)
    model = rbdgen.load_urdf(urdf)
    contacts = constrained.parse_contacts(model, module.contacts)
    want = constrained.contact_dynamics(model, OPS, contacts, q, v, tau, damping=[1e-3])
    assert np.allclose(np.concatenate([qdd, lam]), np.array(want[:7], dtype=float), rtol=1e-10, atol=1e-10)
    result = run_cli("build", urdf, "-o", out, "--contact", "hnd:3d")
    assert_user_error(result.returncode, result.stderr, "unknown frame 'hnd'", "did you mean 'hand'")
    result = run_cli("build", urdf, "-o", out, "--frames", "hand,elbo")
    assert_user_error(result.returncode, result.stderr, "unknown frame 'elbo'")


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
    assert "(3 states; beyond 100 eps, extended precision arbitrates)" in verify.stdout
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


# ------------------------------------------------- a tiny robot, with Pinocchio and without ------

TINY_FUNCTIONS = "rnea,crba,aba,centroidal_map,com"     # a quick build; com has no Pinocchio call in bench
LIMIT = '<limit lower="-2" upper="2" effort="10" velocity="5"/>'


def _inertial(mass, z, ixx="0.02"):
    return (f'<inertial><origin xyz="0 0.01 {z}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" iyy="0.02" izz="0.005" ixy="0" ixz="0" iyz="0"/></inertial>')


def tiny_urdf(path, robot="tiny", joints=("shoulder", "elbow", "slider"), links=("upper", "fore", "hand"),
              limits=True, ixx="0.02"):
    """Write a 3-joint URDF (revolute, continuous, prismatic) to `path`. Names go into the XML
    as given (so '&#10;' is a newline). Without `limits` the revolute joint has no <limit>:
    rbdgen loads it, Pinocchio (urdfdom) refuses it. `ixx` sets the first link's moment."""
    path.write_text(f"""<robot name="{robot}">
  <link name="base"/>
  <link name="{links[0]}">{_inertial(1.0, 0.25, ixx)}</link>
  <link name="{links[1]}">{_inertial(0.6, 0.2)}</link>
  <link name="{links[2]}">{_inertial(0.3, 0.05)}</link>
  <joint name="{joints[0]}" type="revolute"><parent link="base"/><child link="{links[0]}"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>{LIMIT if limits else ""}</joint>
  <joint name="{joints[1]}" type="continuous"><parent link="{links[0]}"/><child link="{links[1]}"/>
    <origin xyz="0 0 0.5" rpy="0.3 0 0"/><axis xyz="1 0 0"/></joint>
  <joint name="{joints[2]}" type="prismatic"><parent link="{links[1]}"/><child link="{links[2]}"/>
    <origin xyz="0 0.1 0.4"/><axis xyz="0 0 1"/>{LIMIT}</joint>
</robot>
""")
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """`rbdgen build tiny.urdf -o OUT --algorithms TINY_FUNCTIONS`, run once: (URDF, OUT, module folder)."""
    root = tmp_path_factory.mktemp("tiny")
    urdf = tiny_urdf(root / "tiny.urdf")
    out = root / "generated"
    result = run_cli("build", urdf, "-o", out, "--algorithms", TINY_FUNCTIONS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"built {out / 'tiny'}"
    return urdf, out, out / "tiny"


@pytest.fixture(scope="module")
def no_pinocchio(tmp_path_factory):
    """Environment for a subprocess in which Pinocchio looks not installed: a folder first on
    PYTHONPATH whose pinocchio/__init__.py raises ImportError."""
    fake = tmp_path_factory.mktemp("no_pinocchio")
    (fake / "pinocchio").mkdir()
    (fake / "pinocchio" / "__init__.py").write_text('raise ImportError("simulated: pinocchio is not installed")\n')
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(fake)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def test_no_pinocchio_environment_hides_pinocchio(no_pinocchio):
    probe = [sys.executable, "-c", "import pinocchio"]
    hidden = subprocess.run(probe, capture_output=True, text=True, env=no_pinocchio, timeout=60)
    assert hidden.returncode == 1 and "ImportError: simulated: pinocchio is not installed" in hidden.stderr
    assert subprocess.run(probe, capture_output=True, timeout=60).returncode == 0


def bench_table(stdout):
    """`rbdgen bench` output -> (title line, {function: its 9 cells}, the lines after the table)."""
    lines = stdout.splitlines()
    assert re.fullmatch(r"function\s+ops\s+C ns\s+Python ns\s+states/s\s+pin C\+\+ ns\s+pin Py ns\s+C\+\+/C\s+"
                        r"ours/pin Py", lines[1]), lines[1]
    rows = {}
    for i, line in enumerate(lines[2:], 2):
        cells = line.split()
        if len(cells) != 9 or not cells[1].isdigit():
            return lines[0], rows, lines[i:]
        rows[cells[0]] = cells
    return lines[0], rows, []


def check_bench(result, folder, batch, pinocchio_columns):
    """Exit 0, one row per function of the module with its operation count and positive times;
    Pinocchio's Python time and our ratio to it where Pinocchio has the function (and
    `pinocchio_columns`), '-' elsewhere; no pin_bench given, so no C++ column."""
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    title, rows, rest = bench_table(result.stdout)
    assert title.startswith("tiny: nq=3 nv=3; medians of ") and f"C time = batch of {batch} on one thread" in title
    with open(folder / "model.json", encoding="utf-8") as f:
        functions = json.load(f)["functions"]
    assert list(rows) == list(functions)
    for name, (_, ops, c_ns, py_ns, per_s, cpp_ns, pin_py_ns, cpp_ratio, py_ratio) in rows.items():
        assert int(ops) == functions[name]["operations"]
        assert float(c_ns) > 0 and float(py_ns) > 0 and float(per_s) > 0, rows[name]
        assert cpp_ns == cpp_ratio == "-"
        if pinocchio_columns is None:   # a default build: some rows have Pinocchio's call, the others none
            assert (pin_py_ns == "-") == (py_ratio == "-"), rows[name]
        elif pinocchio_columns and BY_NAME[name].pinocchio:   # the function table's counterpart
            assert float(pin_py_ns) > 0 and float(py_ratio) > 0, rows[name]
        else:
            assert pin_py_ns == py_ratio == "-", rows[name]
    return rest


def test_bench_with_pinocchio(tiny):
    urdf, out, folder = tiny
    result = run_cli("bench", urdf, "-o", out, "--algorithms", TINY_FUNCTIONS, "--calls", 3, "--batch", 4)
    assert check_bench(result, folder, 4, pinocchio_columns=True) == []
    assert "up to date" in result.stderr     # the module built above, reused


def test_bench_without_pinocchio(tiny, no_pinocchio):
    urdf, out, folder = tiny
    result = run_cli("bench", urdf, "-o", out, "--algorithms", TINY_FUNCTIONS, "--calls", 2, "--batch", 3,
                     env=no_pinocchio)
    rest = check_bench(result, folder, 3, pinocchio_columns=False)
    assert rest == ["Pinocchio is not installed: no Pinocchio columns"]


def test_bench_on_a_default_build(tmp_path):
    """A default build (every function: frames with their placement, the derivatives, the
    configuration functions) is timed row by row, each row from its own C function."""
    urdf = tiny_urdf(tmp_path / "tiny.urdf")
    result = run_cli("bench", urdf, "-o", tmp_path / "out", "--calls", 2, "--batch", 2)
    rest = check_bench(result, tmp_path / "out" / "tiny", 2, pinocchio_columns=None)
    assert rest == []
    _, rows, _ = bench_table(result.stdout)
    assert {"frame_jacobian_world", "rnea_derivatives", "integrate", "difference", "eom"} <= set(rows)


def test_bench_reads_pin_bench(tiny, tmp_path):
    """--pin-bench: the tool gets (URDF, floating 0/1, calls) and its '<name>_ns' lines fill the
    C++ column (ccrba's against centroidal_map); a path that is not an executable is a user error."""
    urdf, out, folder = tiny
    tool = tmp_path / "pin_bench"
    tool.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "args"}\n'
                    'printf "rnea_ns 1234.0\\ncrba_ns 567\\nccrba_ns 890.25\\nnot a figure\\n"\n')
    tool.chmod(0o755)
    result = run_cli("bench", urdf, "-o", out, "--algorithms", TINY_FUNCTIONS, "--calls", 2, "--batch", 2,
                     "--pin-bench", tool)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "args").read_text().split() == [str(urdf), "0", "20000"]
    _, rows, _ = bench_table(result.stdout)
    assert {name: cells[5] for name, cells in rows.items()} == {
        "rnea": "1234", "crba": "567", "aba": "-", "com": "-", "centroidal_map": "890"}   # printed as {:.0f}
    for name in ("rnea", "crba", "centroidal_map"):
        assert re.fullmatch(r"\d+\.\dx", rows[name][7]), rows[name]
    tool.chmod(0o644)
    result = run_cli("bench", urdf, "-o", out, "--algorithms", TINY_FUNCTIONS, "--pin-bench", tool)
    assert_user_error(result.returncode, result.stderr, f"--pin-bench {tool} is not an executable")


def verify_tables(stdout):
    """`rbdgen verify` output -> ({function: (error, status)} vs the reference, the same vs
    Pinocchio or None when there is no such table, the other lines)."""
    tables, other, current = {}, [], None
    for line in stdout.splitlines():
        header = re.fullmatch(r"function\s+worst relative error vs (reference|Pinocchio)\b.*", line)
        row = re.fullmatch(r"  (\w+)\s+(\S+)  (ok|MISMATCH)", line)
        if header:
            current = tables.setdefault(header.group(1), {})
        elif row and current is not None:
            current[row.group(1)] = (float(row.group(2)), row.group(3))
        else:
            current = None
            other.append(line)
    return tables["reference"], tables.get("Pinocchio"), other


def test_verify_with_pinocchio(tiny):
    _, _, folder = tiny
    result = run_cli("verify", folder, "--states", 3)
    assert result.returncode == 0, result.stdout + result.stderr
    reference, pinocchio, other = verify_tables(result.stdout)
    assert set(TINY_FUNCTIONS.split(",")) <= set(reference)
    assert all(status == "ok" and error <= 1e-10 for error, status in reference.values()), reference
    assert set(pinocchio) == {"rnea", "crba", "aba"}
    assert all(status == "ok" and error <= 1e-9 for error, status in pinocchio.values()), pinocchio
    assert other == []
    assert result.stderr == ""


def test_verify_without_pinocchio(tiny, no_pinocchio):
    _, _, folder = tiny
    result = run_cli("verify", folder, "--states", 2, env=no_pinocchio)
    assert result.returncode == 0, result.stdout + result.stderr
    reference, pinocchio, other = verify_tables(result.stdout)
    assert set(TINY_FUNCTIONS.split(",")) <= set(reference)
    assert all(status == "ok" for _, status in reference.values())
    assert pinocchio is None
    assert other == ["Pinocchio is not installed: compared with the reference only"]


def test_verify_urdf_that_pinocchio_refuses(tmp_path):
    """A revolute joint without <limit>: rbdgen loads it, Pinocchio does not; verify says so in
    one line (without urdfdom's own messages) and compares with the reference only."""
    urdf = tiny_urdf(tmp_path / "nolimit.urdf", limits=False)
    result = run_cli("verify", urdf, "-o", tmp_path / "out", "--algorithms", "rnea,crba,aba", "--states", 3)
    assert result.returncode == 0, result.stdout + result.stderr
    reference, pinocchio, other = verify_tables(result.stdout)
    assert set(reference) >= {"rnea", "crba", "aba"} and all(s == "ok" for _, s in reference.values())
    assert pinocchio is None
    assert other == [f"Pinocchio cannot load {urdf} (Joint [shoulder] is of type REVOLUTE but it does not specify "
                     "limits): compared with the reference only"]
    # stderr: the build's progress only (no urdfdom 'Error:' lines, no traceback)
    assert all(line.startswith("[") for line in result.stderr.splitlines()), result.stderr
    # bench goes on without Pinocchio's columns as well
    bench = run_cli("bench", urdf, "-o", tmp_path / "out", "--algorithms", "rnea,crba,aba", "--calls", 2,
                    "--batch", 2)
    assert bench.returncode == 0, bench.stderr
    _, rows, rest = bench_table(bench.stdout)
    assert set(rows) == {"rnea", "crba", "aba"} and all(cells[6] == "-" for cells in rows.values())
    assert rest == [f"Pinocchio cannot load {urdf} (Joint [shoulder] is of type REVOLUTE but it does not specify "
                    "limits): no Pinocchio columns"]


def test_verify_exit_code_is_the_comparison(tiny, monkeypatch, capsys):
    """Exit 1 exactly when a function disagrees (here with the reference only: Pinocchio is
    skipped, as for a URDF it cannot load)."""
    import rbdgen.runtime.verify as verify
    _, _, folder = tiny
    real = verify.verify_module
    monkeypatch.setattr("rbdgen.cli._verify_pinocchio", lambda *args: (None, ["Pinocchio skipped: reason"]))
    assert main(["verify", str(folder), "--states", "2"]) == 0
    reference, _, other = verify_tables(capsys.readouterr().out)
    assert other == ["Pinocchio skipped: reason"]

    def one_wrong(*args, **kwargs):
        report = real(*args, **kwargs)
        report["crba"] = {"error": 3e-7, "ok": False}
        return report
    monkeypatch.setattr(verify, "verify_module", one_wrong)
    assert main(["verify", str(folder), "--states", "2"]) == 1
    reference, _, _ = verify_tables(capsys.readouterr().out)
    assert reference["crba"] == (3e-7, "MISMATCH")
    assert all(status == "ok" for name, (_, status) in reference.items() if name != "crba")


# --------------------------------------------------------- output folders, corrupted modules ------

def test_output_folder_is_a_file(tmp_path):
    urdf = tiny_urdf(tmp_path / "tiny.urdf")
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    for command in ("build", "verify", "bench"):
        result = run_cli(command, urdf, "-o", taken, "--algorithms", "rnea")
        assert_user_error(result.returncode, result.stderr, f"output folder '{taken}' is a file, not a folder")
        assert result.stdout == ""
    result = run_cli("build", urdf, "-o", taken / "sub", "--algorithms", "rnea")
    assert_user_error(result.returncode, result.stderr, f"cannot create output folder '{taken / 'sub'}'",
                      f"'{taken}' is a file")
    assert taken.read_text() == "not a folder"


def unprivileged():
    """A prefix that runs a command without the right to ignore file permissions: root (as in
    CI containers) writes into a read-only folder otherwise."""
    if os.geteuid() != 0:
        return ()
    assert shutil.which("setpriv"), "setpriv (util-linux) is needed to drop root's file-permission override"
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search")


def test_output_folder_read_only(tmp_path):
    urdf = tiny_urdf(tmp_path / "tiny.urdf")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        result = run_cli("build", urdf, "-o", locked, "--algorithms", "rnea", prefix=unprivileged())
        assert_user_error(result.returncode, result.stderr, f"output folder '{locked}' is not writable")
        result = run_cli("verify", urdf, "-o", locked / "new", "--algorithms", "rnea", prefix=unprivileged())
        assert_user_error(result.returncode, result.stderr, f"cannot create output folder '{locked / 'new'}'",
                          f"'{locked}' is not writable")
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o755)


def test_os_error_during_the_build_is_one_line(tmp_path, monkeypatch, capsys):
    """An OSError the checks could not foresee (a disk full, a folder removed meanwhile)."""
    def fail(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "out" / ".tiny.lock"))
    monkeypatch.setattr("rbdgen.codegen.build.build", fail)
    urdf = tiny_urdf(tmp_path / "tiny.urdf")
    assert main(["build", str(urdf), "-o", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert_user_error(2, captured.err, f"'{tmp_path / 'out' / '.tiny.lock'}': Permission denied")
    assert captured.out == ""


def _garbage_json(folder):
    (folder / "model.json").write_text("{ this is not json")


def _json_not_an_object(folder):
    (folder / "model.json").write_text("[1, 2, 3]")


def _extension(folder):
    with open(folder / "model.json", encoding="utf-8") as f:
        stem = json.load(f)["extension"]
    return next(p for p in folder.iterdir() if p.name.startswith(stem + "."))


def _truncated_extension(folder):
    path = _extension(folder)
    os.truncate(path, path.stat().st_size // 2)


def _empty_extension(folder):
    os.truncate(_extension(folder), 0)


@pytest.mark.parametrize("corrupt", [_garbage_json, _json_not_an_object, _truncated_extension, _empty_extension])
def test_verify_corrupted_module(tiny, tmp_path, corrupt):
    _, _, folder = tiny
    copy = tmp_path / "tiny"
    shutil.copytree(folder, copy)
    corrupt(copy)
    result = run_cli("verify", copy)
    assert_user_error(result.returncode, result.stderr, str(copy), "rebuild")
    assert result.stdout == ""


def test_verify_module_whose_urdf_changed_or_is_gone(tmp_path):
    urdf = tiny_urdf(tmp_path / "tiny.urdf")
    assert run_cli("build", urdf, "-o", tmp_path / "out", "--algorithms", "rnea").returncode == 0
    folder = tmp_path / "out" / "tiny"
    with open(urdf, "a") as f:
        f.write("<!-- edited -->\n")
    result = run_cli("verify", folder)
    assert_user_error(result.returncode, result.stderr, f"{urdf} changed since the module was built",
                      "verify the URDF instead")
    urdf.unlink()
    result = run_cli("verify", folder)
    assert_user_error(result.returncode, result.stderr, f"the URDF it was built from ({urdf}) is gone")


# ------------------------------------------------------------------ names, --strict, --mimic ------

def test_info_escapes_names(tmp_path):
    """Names with a newline, a tab or a carriage return are shown escaped: one line per joint,
    and the columns stay aligned."""
    urdf = tiny_urdf(tmp_path / "odd.urdf", robot="odd&#10;bot", joints=("shoulder", "elbow&#10;joint", "slide&#9;r"),
                     links=("upper", "fore&#13;arm", "hand"))
    result = run_cli("info", urdf)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert all(line.isprintable() for line in lines), lines
    assert lines[0].startswith("robot odd\\nbot: nq=3 nv=3 bodies=3 ")
    table = lines[1:5]
    assert re.fullmatch(r"joint\s+type\s+parent body\s+idx_q nq idx_v nv", table[0])
    assert [line.split() for line in table[1:]] == [
        ["shoulder", "revolute", "(world)", "0", "1", "0", "1"],
        ["elbow\\njoint", "continuous", "upper", "1", "1", "1", "1"],
        ["slide\\tr", "prismatic", "fore\\rarm", "2", "1", "2", "1"]]
    # aligned: every column starts where its header does (the numbers are right-aligned)
    for header in ("type", "parent body"):
        column = table[0].index(header)
        assert all(line[column - 1] == " " and line[column] != " " for line in table[1:]), (header, table)
    assert len({len(line) for line in table}) == 1
    assert lines[5:] == [] or (len(lines) == 6 and lines[5].startswith("fixed frames: "))


def test_strict_makes_an_invalid_inertia_an_error(tmp_path):
    """ixx = 0.2 > iyy + izz = 0.025 breaks the triangle inequality: a warning naming the link
    (and the build goes on); --strict refuses it in one line (before any build)."""
    urdf = tiny_urdf(tmp_path / "bad_inertia.urdf", ixx="0.2")
    result = run_cli("info", urdf)
    assert result.returncode == 0, result.stderr
    warning, = result.stderr.splitlines()
    assert warning.startswith("rbdgen: warning: link 'upper'") and "triangle inequality" in warning, warning
    for command in (["info"], ["build", "-o", tmp_path / "out"], ["verify", "-o", tmp_path / "out"],
                    ["bench", "-o", tmp_path / "out"]):
        result = run_cli(command[0], urdf, *command[1:], "--strict")
        assert_user_error(result.returncode, result.stderr, "link 'upper'", "triangle inequality")
        assert result.stdout == ""
    assert not (tmp_path / "out").exists()


def test_strict_and_mimic_are_passed_through(tmp_path, monkeypatch, capsys):
    """--strict and --mimic reach load_urdf (as keywords) and build (in its BuildOptions) in every command."""
    calls = []

    def fake_load_urdf(path, **kwargs):
        calls.append(("load_urdf", kwargs))
        return rbdgen.load_urdf(path, floating_base=kwargs["floating_base"])

    def fake_build(path, out_dir, options, progress):
        calls.append(("build", {"strict": options.strict, "mimic": options.mimic}))
        raise RbdgenError("stop here")
    monkeypatch.setattr("rbdgen.model.urdf.load_urdf", fake_load_urdf)
    monkeypatch.setattr("rbdgen.codegen.build.build", fake_build)
    urdf = str(tiny_urdf(tmp_path / "tiny.urdf"))
    out = str(tmp_path / "out")
    for argv, expected in ((["info", urdf], ["load_urdf"]), (["build", urdf, "-o", out], ["build"]),
                           (["verify", urdf, "-o", out], ["load_urdf", "build"]),
                           (["bench", urdf, "-o", out], ["load_urdf", "build"])):
        for flags, strict, mimic in (([], False, False), (["--strict"], True, False), (["--mimic"], False, True),
                                     (["--strict", "--mimic"], True, True)):
            calls.clear()
            main(argv + flags)
            assert [name for name, _ in calls] == expected, (argv, flags)
            assert all(kw["strict"] is strict and kw["mimic"] is mimic for _, kw in calls), (argv, flags, calls)
    capsys.readouterr()


def test_mimic_end_to_end(tmp_path):
    """--mimic: the mimicking joint has no coordinate of its own (info), and verify compares the
    module with Pinocchio's mimic=True model (for what Pinocchio computes with mimic joints)."""
    urdf = tmp_path / "gripper.urdf"
    urdf.write_text(f"""<robot name="gripper">
  <link name="base"/>
  <link name="palm">{_inertial(1.0, 0.1)}</link>
  <link name="left">{_inertial(0.2, 0.05)}</link>
  <link name="right">{_inertial(0.2, 0.05)}</link>
  <joint name="wrist" type="revolute"><parent link="base"/><child link="palm"/><axis xyz="0 0 1"/>{LIMIT}</joint>
  <joint name="left_finger" type="prismatic"><parent link="palm"/><child link="left"/>
    <origin xyz="0 0.05 0.2"/><axis xyz="0 1 0"/>{LIMIT}</joint>
  <joint name="right_finger" type="prismatic"><parent link="palm"/><child link="right"/>
    <origin xyz="0 -0.05 0.2"/><axis xyz="0 -1 0"/>{LIMIT}
    <mimic joint="left_finger" multiplier="1.5" offset="0.01"/></joint>
</robot>
""")
    plain = run_cli("info", urdf)
    assert plain.returncode == 0 and "nq=3 nv=3" in plain.stdout.splitlines()[0], plain.stdout + plain.stderr
    assert "<mimic> is ignored" in plain.stderr
    info = run_cli("info", urdf, "--mimic")
    assert info.returncode == 0, info.stderr
    assert info.stderr == ""
    assert "nq=2 nv=2" in info.stdout.splitlines()[0]
    right = next(line for line in info.stdout.splitlines() if line.strip().startswith("right_finger "))
    assert right.split()[-4:] == ["1", "0", "1", "0"], right

    verify = run_cli("verify", urdf, "-o", tmp_path / "out", "--mimic", "--algorithms", "rnea,crba,aba",
                     "--states", 3)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    reference, pinocchio, other = verify_tables(verify.stdout)
    assert {"rnea", "crba", "aba"} <= set(reference) and all(s == "ok" for _, s in reference.values())
    assert {"rnea", "crba"} <= set(pinocchio) and all(s == "ok" for _, s in pinocchio.values()), pinocchio
    # Pinocchio 4.1's aba refuses mimic joints: said in one line instead of compared
    assert set(pinocchio) == {"rnea", "crba", "aba"} or other == [
        "Pinocchio cannot compute aba for this model (This algorithm does not support Joint Mimic type in the model): "
        "not compared"], other


def test_symbolic():
    """`rbdgen symbolic`: the program as text, LaTeX, or a Python function equal to the reference."""
    result = run_cli("symbolic", PENDULUM, "crba")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("x0 = ") and "crba = Matrix(" in result.stdout


def test_symbolic_in_process(capsys):
    model = rbdgen.load_urdf(PENDULUM)
    assert main(["symbolic", PENDULUM, "crba", "--closed-form", "--latex", "--parameters", "inertia:link2"]) == 0
    latex = capsys.readouterr().out
    assert latex.startswith(r"crba = \left[\begin{matrix}") and "m_{link2}" in latex
    assert r"\cos{\left(q_{2} \right)}" in latex
    assert main(["symbolic", PENDULUM, "rnea", "--python", "--parameters", "gravity"]) == 0
    namespace = {}
    exec(capsys.readouterr().out, namespace)
    q, v, a = np.array([0.3, -0.7]), np.array([0.5, 1.1]), np.array([-0.2, 0.4])
    tau = namespace["rnea"](q, v, a, model.gravity)
    np.testing.assert_allclose(tau, rbdgen.reference.rnea(model, q, v, a), rtol=1e-12, atol=1e-12)
    assert main(["symbolic", PENDULUM, "crab"]) == 2
    assert_user_error(2, capsys.readouterr().err, "'crab' is not a function", "did you mean crba")
    assert main(["symbolic", PENDULUM, "crba", "--parameters", "inertia:lnk2"]) == 2
    assert_user_error(2, capsys.readouterr().err, "no link 'lnk2'", "did you mean 'link2'")
