"""The module cache and the verification it rests on (rbdgen/codegen/cache.py, runtime/verify.py).

A module is reused only when it imports, matches its model.json and passed verification;
anything else is rebuilt with one line saying why. Corruption, killed builds and builds
under another Python are simulated in subprocesses, as a user would meet them: a process
that already imported a module keeps it, whatever happens to the files.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rbdgen
import rbdgen.codegen.build as build_module
from helpers import temporary_entries, tiny_urdf, write_urdf
from rbdgen.codegen import cache
from rbdgen.runtime import verify
from rbdgen.model.states import random_configuration

ALGORITHMS = ["gravity", "crba"]

_BUILD = textwrap.dedent("""
    import sys, rbdgen
    algorithms = sys.argv[3].split(",")
    module = rbdgen.build(sys.argv[1], out_dir=sys.argv[2], algorithms=algorithms,
                          progress=lambda m: print(m, file=sys.stderr))
    print(sorted(module.operation_counts), module.nq)
""")


def build_in_subprocess(urdf, out, algorithms=ALGORITHMS, prelude=""):
    """(stdout, stderr) of a fresh process that builds (or reuses) the module; asserts success."""
    result = subprocess.run([sys.executable, "-c", prelude + _BUILD, urdf, out, ",".join(algorithms)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout, result.stderr


@pytest.fixture
def built(tmp_path):
    """A tiny robot built once into tmp_path/out: (urdf, out folder, module folder)."""
    urdf = write_urdf(tmp_path, tiny_urdf(robot="cached"))
    out = str(tmp_path / "out")
    build_in_subprocess(urdf, out)
    return urdf, out, os.path.join(out, "cached")


def extension_path(folder):
    meta = cache.read_json(os.path.join(folder, "model.json"))
    return next(os.path.join(folder, n) for n in os.listdir(folder) if n.startswith(meta["extension"] + "."))


def test_unchanged_module_is_reused_in_a_new_process(built):
    urdf, out, folder = built
    _, stderr = build_in_subprocess(urdf, out)
    assert "up to date, reusing" in stderr and "rebuilding" not in stderr


def test_truncated_extension_is_rebuilt(built):
    urdf, out, folder = built
    with open(extension_path(folder), "r+b") as f:
        f.truncate(1000)   # mapping this would kill the process with SIGBUS: the hash is checked first
    with pytest.raises(rbdgen.BuildError, match="extension changed after it was verified"):
        build_module.load(folder, package="rbdgen_test_truncated")
    stdout, stderr = build_in_subprocess(urdf, out)
    assert "rebuilding (its compiled extension changed after it was verified)" in stderr
    assert stdout.split()[-1] == "2"
    # a module without a verification record (as before records existed) that does not import
    os.remove(os.path.join(folder, cache.VERIFICATION_FILE))
    with open(extension_path(folder), "wb"):
        pass
    with pytest.raises(rbdgen.BuildError, match="does not load"):
        build_module.load(folder, package="rbdgen_test_empty")


def test_extension_of_another_robot_is_rebuilt(tmp_path, built):
    urdf, out, folder = built
    other = write_urdf(tmp_path, tiny_urdf(robot="other"), "other.urdf")
    build_in_subprocess(other, out)
    shutil.copyfile(extension_path(os.path.join(out, "other")), extension_path(folder))
    _, stderr = build_in_subprocess(urdf, out)
    assert "cached: rebuilding (" in stderr


def test_edited_model_json_is_refused_and_rebuilt(built):
    urdf, out, folder = built
    meta_path = os.path.join(folder, "model.json")
    meta = cache.read_json(meta_path)
    meta["nq"] = 100
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    with pytest.raises(rbdgen.BuildError, match="does not match its model.json"):
        build_module.load(folder, package="rbdgen_test_edited")
    _, stderr = build_in_subprocess(urdf, out)
    assert "rebuilding" in stderr
    with open(meta_path, "w") as f:
        f.write("{ not json")
    with pytest.raises(rbdgen.BuildError, match="model.json is damaged"):
        build_module.load(folder)
    _, stderr = build_in_subprocess(urdf, out)
    assert "rebuilding (its model.json is missing or unreadable)" in stderr


def test_killed_build_leaves_no_module_and_the_next_build_cleans_up(tmp_path):
    """A build killed during verification (after linking) installs nothing; the next build
    removes its temporary folder and builds a verified module."""
    urdf = write_urdf(tmp_path, tiny_urdf(robot="killed"))
    out = str(tmp_path / "out")
    killer = "import os, rbdgen.runtime.verify as v\nv.verify_module = lambda *a, **k: os._exit(9)\n"
    result = subprocess.run([sys.executable, "-c", killer + _BUILD, urdf, out, ",".join(ALGORITHMS)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 9
    assert not os.path.exists(os.path.join(out, "killed")), "an unverified module was installed"
    assert len(temporary_entries(out)) == 1, "the killed build's folder is expected to remain until the next build"
    _, stderr = build_in_subprocess(urdf, out)
    assert "verified against the reference" in stderr
    assert temporary_entries(out) == []
    record = cache.read_json(os.path.join(out, "killed", cache.VERIFICATION_FILE))
    assert record["passed"] is True and set(ALGORITHMS) <= set(record["functions"])


def test_module_without_verification_record_is_rebuilt(built):
    urdf, out, folder = built
    os.remove(os.path.join(folder, cache.VERIFICATION_FILE))
    _, stderr = build_in_subprocess(urdf, out)
    assert "rebuilding (it has no verification record" in stderr


def test_another_python_abi_rebuilds(built):
    urdf, out, folder = built
    key = cache.read_json(os.path.join(folder, "model.json"))["build_key"]
    prelude = "import rbdgen.codegen.cache as c\nc.python_abi = lambda: 'cpython-399 another-abi'\n"
    _, stderr = build_in_subprocess(urdf, out, prelude=prelude)
    assert "rebuilding (the model, the options, rbdgen or this machine changed)" in stderr
    assert cache.read_json(os.path.join(folder, "model.json"))["build_key"] != key


def test_key_covers_compiler_flags_and_cpu():
    flags = build_module.compile_flags(native=True)
    identity = cache.compiler_identity(flags)
    # gcc's cc1 names the CPU with -march=, clang's -cc1 with -target-cpu
    assert any("-march=" in line or "-target-cpu" in line for line in identity[-1]), \
        "the CPU -march=native expands to is not in the key"
    assert cache.build_key("m", flags=flags) != cache.build_key("m", flags=build_module.compile_flags(False))


def test_key_is_the_same_from_any_working_folder(tmp_path):
    """The CPU options are taken from the compiler's command line without the rest of it (clang's
    names the working folder): a module built from one folder is reused from another."""
    script = ("import json, rbdgen.codegen.build as b, rbdgen.codegen.cache as c\n"
              "print(c.build_key('m', flags=b.compile_flags(native=True)))")
    keys = {subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True,
                           check=True).stdout.strip() for cwd in (str(tmp_path), os.path.dirname(__file__))}
    assert len(keys) == 1, keys


_OPTIONS_RACE = textwrap.dedent("""
    import sys, rbdgen
    algorithms = sys.argv[3].split(",")
    for _ in range(3):
        module = rbdgen.build(sys.argv[1], out_dir=sys.argv[2], algorithms=algorithms)
        assert sorted(module.operation_counts) == sorted(algorithms), (module.operation_counts, algorithms)
    print("ok")
""")


def test_concurrent_builds_with_different_options_each_load_their_own(tmp_path):
    urdf = write_urdf(tmp_path, tiny_urdf(robot="racer"))
    out = str(tmp_path / "out")
    procs = [subprocess.Popen([sys.executable, "-c", _OPTIONS_RACE, urdf, out, algorithms],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for algorithms in ("gravity", "gravity,crba")]
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr
        assert stdout.strip() == "ok"
    assert temporary_entries(out) == []


@pytest.mark.parametrize("robot", ["stdint", "Python", "math", "limits", "stddef", "inttypes", "stdarg"])
def test_robot_names_never_shadow_headers_or_packages(tmp_path, robot):
    urdf = write_urdf(tmp_path, tiny_urdf(robot=robot))
    module = rbdgen.build(urdf, out_dir=str(tmp_path / "out"), algorithms=["gravity"])
    q = np.array([0.3, -0.7])
    assert np.allclose(module.gravity(q), rbdgen.reference.gravity(rbdgen.load_urdf(urdf), q), rtol=1e-12, atol=1e-12)
    folder = os.path.basename(os.path.dirname(module.__file__))
    if robot in sys.stdlib_module_names:
        assert folder == robot + "_robot"


def test_names_that_sanitize_alike_get_folders_of_their_own():
    names = ["my-bot", "my_bot", "my.bot", "x" * 64 + "a", "x" * 64 + "b", "numpy", "json"]
    modules = [build_module.module_name(n) for n in names]
    assert len(set(modules)) == len(names), modules
    assert modules[1] == "my_bot"
    assert modules[5] == "numpy_robot" and modules[6] == "json_robot"
    assert all(m.isidentifier() and len(m) <= 70 for m in modules)


def test_replacing_another_robot_says_so(tmp_path):
    out = str(tmp_path / "out")
    lines = []
    for robot in ("first", "second"):
        urdf = write_urdf(tmp_path, tiny_urdf(robot=robot), f"{robot}.urdf")
        rbdgen.build(urdf, out_dir=out, name="shared", algorithms=["gravity"], progress=lines.append)
    assert any("replacing the module of robot 'first'" in line for line in lines), lines


def test_output_path_problems_are_one_line_errors(tmp_path):
    urdf = write_urdf(tmp_path, tiny_urdf(robot="tiny"))
    a_file = write_urdf(tmp_path, "x", "not_a_folder")
    with pytest.raises(rbdgen.BuildError, match="cannot create the output folder"):
        rbdgen.build(urdf, out_dir=os.path.join(a_file, "out"), algorithms=["gravity"])
    out = tmp_path / "out"
    out.mkdir()
    (out / "tiny").write_text("a file where the module folder goes")
    with pytest.raises(rbdgen.BuildError, match="exists and is not a module folder"):
        rbdgen.build(urdf, out_dir=str(out), algorithms=["gravity"])


# ---------------------------------------------------------------------------- verification ---

def test_relative_error_counts_non_finite_values_as_failures():
    assert verify._relative_error([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert verify._relative_error([np.nan, 2.0], [1.0, 2.0]) == float("inf")
    assert verify._relative_error([1.0, 2.0], [np.inf, 2.0]) == float("inf")
    assert verify._relative_error([np.nan], [np.nan]) == float("inf")
    assert verify._relative_error([1.0], [1.0, 2.0]) == float("inf")


def test_a_module_answering_nan_fails_verification(tmp_path):
    """Every C function is compared, batched and singly; NaN from any of them is a failure."""
    urdf = write_urdf(tmp_path, tiny_urdf(robot="nan"))
    module = rbdgen.build(urdf, out_dir=str(tmp_path / "out"), algorithms=["gravity", "crba", "frame_placement"])
    model = rbdgen.load_urdf(urdf)
    report = verify.verify_module(module, model)
    assert set(report) >= {"gravity", "crba", "frame_placement"}
    assert all(r["ok"] for r in report.values()), report

    class Broken:
        """The module, except that crba answers NaN for the second state of a batch."""

        def __getattr__(self, name):
            return getattr(module, name)

        @staticmethod
        def crba(q):
            M = module.crba(q)
            if np.ndim(q) == 2:
                M[1, 0, 0] = np.nan
            return M

    report = verify.verify_module(Broken(), model)
    assert not report["crba"]["ok"] and report["crba"]["error"] == float("inf")
    assert report["gravity"]["ok"]


def test_the_reference_computed_beside_the_compilation_is_verification_s(tmp_path, monkeypatch):
    """A build computes verification's reference values in a worker before the module exists
    (verify.reference_table): for every check of a C function, batched and single, of states and
    of frames, the values verify_module would compute itself, and the same report."""
    from rbdgen.algorithms import constrained
    urdf = write_urdf(tmp_path, tiny_urdf(robot="early"))
    computed_here = []   # the reference's values computed in this process (the workers are others)
    real = verify.reference_values
    monkeypatch.setattr(verify, "reference_values", lambda *args: computed_here.append(args[1].name) or real(*args))
    module = rbdgen.build(urdf, out_dir=str(tmp_path / "out"), contacts=["tip:3d"],
                          algorithms=["gravity", "crba", "aba", "frame_placement", "frame_jacobian_local"])
    assert computed_here == [], "the build's verification computed the reference again"
    model = rbdgen.load_urdf(urdf)
    table = verify.reference_table(model, list(module.operation_counts), module.frames,
                                   constrained.parse_contacts(model, module.contacts))
    assert {name for name, _ in table} == set(module.operation_counts)
    plain = verify.verify_module(module, model)
    monkeypatch.setattr(verify, "reference_values", lambda *args: pytest.fail(f"computed again: {args[1].name}"))
    assert verify.verify_module(module, model, expected=table) == plain


def test_generated_crba_is_exactly_symmetric(tmp_path):
    """One value per entry pair (the C copies M[j, i] from M[i, j]), whatever the compiler fuses."""
    from trees import random_tree
    model = random_tree(12, 6, ("revolute", "prismatic", "euler_zyx", "euler_xyz", "continuous", "helical"),
                        floating_base=False, branched=True)
    module = rbdgen.build_model(model, out_dir=str(tmp_path / "out"), algorithms=["crba"])
    q = random_configuration(model, np.random.default_rng(3), batch=64)
    M = module.crba(q)
    assert np.array_equal(M, np.swapaxes(M, 1, 2))


# ------------------------------------------------------------- the per-function cache ---

def _reports(lines):
    """{function: how the build got it}: "cached" (its program reused) or "generated"."""
    import re
    got = {}
    for line in lines:
        m = re.fullmatch(r"\s*(\w+): \d+ operations \((program cached|symbolic .*)\)", line)
        if m:
            got[m.group(1)] = "cached" if m.group(2) == "program cached" else "generated"
    return got


def test_a_rebuild_with_one_more_contact_generates_and_compiles_only_what_changed(tmp_path):
    """The second build (the same robot, one contact more) takes every other function's program
    and object from the cache, and is verified like any build; a build with other compiler
    flags reuses the programs and compiles them again."""
    urdf = write_urdf(tmp_path, tiny_urdf(robot="cached"))
    out, first, second, third = str(tmp_path / "out"), [], [], []
    functions = ["rnea", "crba", "aba", "frame_placement", "frame_jacobian_local", "contact_dynamics", "contact_jacobian"]
    rbdgen.build(urdf, out_dir=out, algorithms=functions[:5], progress=first.append)
    module = rbdgen.build(urdf, out_dir=out, algorithms=functions, contacts=["tip:3d"], progress=second.append)
    assert set(_reports(first).values()) == {"generated"}, first
    assert _reports(second) == {**{name: "cached" for name in functions[:5]},
                                "contact_dynamics": "generated", "contact_jacobian": "generated"}, second
    assert not any(line.strip().startswith("compiled") and "contact" not in line for line in second), second
    assert any("reused the object of" in line for line in second), second
    assert any(line.startswith("verified against the reference") for line in second), second
    model = rbdgen.load_urdf(urdf)
    q = random_configuration(model, np.random.default_rng(3))
    from rbdgen.runtime import reference
    np.testing.assert_allclose(module.crba(q), reference.crba(model, q), rtol=1e-12, atol=1e-12)
    rbdgen.build(urdf, out_dir=out, algorithms=functions[:5], native=False, progress=third.append)
    assert set(_reports(third).values()) == {"cached"}, third
    assert any(line.strip().startswith("compiled") for line in third), third


def test_damaged_cache_entries_are_made_again(tmp_path):
    """Every entry of the per-function cache flipped in one byte, or cut short: the next build
    removes them, generates and compiles everything again, and passes verification."""
    from rbdgen.codegen.objects import FOLDER
    urdf = write_urdf(tmp_path, tiny_urdf(robot="damaged"))
    out = str(tmp_path / "out")
    rbdgen.build(urdf, out_dir=out, algorithms=ALGORITHMS)
    entries = [os.path.join(folder, name) for folder, _, names in os.walk(os.path.join(out, FOLDER)) for name in names]
    assert len(entries) >= 3, entries    # two programs and their objects (shared), the glue's objects
    for k, path in enumerate(entries):
        with open(path, "r+b") as f:
            if k % 2:
                f.truncate(70)
            else:
                f.seek(80)
                byte = f.read(1)
                f.seek(80)
                f.write(bytes([byte[0] ^ 0xFF]))
    shutil.rmtree(os.path.join(out, "damaged"))
    lines = []
    rbdgen.build(urdf, out_dir=out, algorithms=ALGORITHMS, progress=lines.append)
    assert set(_reports(lines).values()) == {"generated"}, lines
    assert any(line.startswith("verified against the reference") for line in lines), lines


def test_build_options_are_one_value(tmp_path):
    """build takes its options as one BuildOptions value or by keyword, alike (the same module);
    an unknown option is a one-line TypeError naming the options."""
    urdf = write_urdf(tmp_path, tiny_urdf(robot="optioned"))
    options = rbdgen.BuildOptions(algorithms=("rnea",), native=False)
    first = rbdgen.build(urdf, str(tmp_path / "out"), options)
    second = rbdgen.build(urdf, out_dir=str(tmp_path / "out"), algorithms=["rnea"], native=False)
    assert first is second
    assert rbdgen.BuildOptions.of(options, frames=["tip"]).frames == ["tip"] and options.frames is None
    with pytest.raises(TypeError, match="unknown build option 'floatingbase'; the options are algorithms, "):
        rbdgen.build(urdf, floatingbase=True)
