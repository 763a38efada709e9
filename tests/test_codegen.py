"""Generated modules: every C function against the NumPy reference, on real robots and on
random trees with every joint type; and the build machinery around them (cache, concurrent
builds, name sanitizing, argument checking, determinism, compiler errors, imports).

Builds take seconds, so each robot is built once per session (lazily: `-k ur5` builds only
UR5) into a tmp_path_factory folder and shared by the tests.
"""

import json
import keyword
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rbdgen
from helpers import (REL_TOL_GENERATED, ROBOTS, assert_close, random_state, robot_path, temporary_entries, tiny_urdf,
                     write_urdf)
from rbdgen import reference as ref
from rbdgen.runtime.verify import verify_module
from trees import ALL_JOINT_TYPES, random_tree

pytestmark = pytest.mark.filterwarnings("ignore:joint .*<mimic> is ignored:UserWarning")

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
TOL = REL_TOL_GENERATED
SEEDS = (0, 1, 2)

# Functions every default build has (rnea_fext / aba_fext back rnea / aba with f_ext); the
# generator may add more, these tests compare these.
FRAME_JACOBIANS = ("frame_jacobian_local", "frame_jacobian_world", "frame_jacobian_local_world_aligned")
ALL_FUNCTIONS = ("rnea", "rnea_fext", "nle", "gravity", "crba", "aba", "aba_fext", "placements", "jacobians",
                 "com", "kinetic_energy", "potential_energy", "frame_placement") + FRAME_JACOBIANS

ROBOT_NAMES = ["ur5", "panda", "allegro", "solo12", "anymal", "talos"]
# The robots are built with the functions compared here: the generator's further functions
# (coriolis, christoffel (nv^3 outputs), minv, momentum, ...) multiply the build time (Solo12:
# 30 s -> 240 s) and have their own tests. RBDGEN_TEST_FULL_BUILDS=1 builds every function
# (except for Talos, whose full build takes minutes: it gets the list below).
FULL_BUILDS = os.environ.get("RBDGEN_TEST_FULL_BUILDS") == "1"
TALOS_ALGORITHMS = ["rnea", "nle", "gravity", "crba", "aba", "placements", "jacobians", "com", "kinetic_energy",
                    "potential_energy", "frame_placement", "frame_jacobian_local_world_aligned"]


def build_algorithms(name):
    if name == "talos":
        return TALOS_ALGORITHMS
    return None if FULL_BUILDS else list(ALL_FUNCTIONS)


# Random trees: (id, seed, nbodies, joint types, floating base, branched). With as many
# moving bodies as kinds, random_tree uses each kind exactly once (in random order). Every
# joint type occurs in some tree; the 3-dof kinds are spread out to keep nv (and the build
# time) moderate.
TREES = [
    ("chain-fixed", 11, 6, ("revolute", "revolute_aligned", "continuous", "prismatic", "helical", "planar"),
     False, False),
    ("tree-fixed", 12, 6, ("revolute", "prismatic", "euler_zyx", "euler_xyz", "continuous", "helical"),
     False, True),
    ("tree-floating", 13, 6, ("revolute_aligned", "translation", "revolute", "prismatic", "continuous"),
     True, True),
    ("chain-floating", 14, 6, ("spherical", "helical", "revolute", "revolute_aligned", "prismatic"), True, False),
    ("tree-fixed-multidof", 15, 7, ("spherical", "planar", "translation", "revolute", "helical", "continuous",
                                    "prismatic"), False, True),
]
TREE_IDS = [t[0] for t in TREES]
assert {k for t in TREES for k in t[3]} == set(ALL_JOINT_TYPES)


# ------------------------------------------------------------------------ fixtures ---------

@pytest.fixture(scope="session")
def robot_module(tmp_path_factory):
    """name -> (module, model): each example robot built once per session."""
    out = tmp_path_factory.mktemp("robots")
    built = {}

    def get(name):
        if name not in built:
            path, floating = robot_path(name), ROBOTS[name][1]
            module = rbdgen.build(path, out_dir=str(out), floating_base=floating,
                                  algorithms=build_algorithms(name))
            built[name] = (module, rbdgen.load_urdf(path, floating_base=floating))
        return built[name]

    return get


@pytest.fixture(scope="session")
def tree_module(tmp_path_factory):
    """tree id -> (module, model): each random tree built once per session."""
    out = tmp_path_factory.mktemp("trees")
    built = {}

    def get(case_id):
        if case_id not in built:
            _, seed, nbodies, kinds, floating, branched = next(t for t in TREES if t[0] == case_id)
            model = random_tree(seed, nbodies, kinds, floating_base=floating, branched=branched)
            # only the functions compared below: the extra ones (coriolis, christoffel, ...)
            # cost build time and are not what these tests are about
            built[case_id] = (rbdgen.build_model(model, out_dir=str(out), algorithms=list(ALL_FUNCTIONS)), model)
        return built[case_id]

    return get


def module_dir(module):
    return os.path.dirname(os.path.abspath(module.__file__))


def read_meta(folder):
    with open(os.path.join(folder, "model.json"), encoding="utf-8") as f:
        return json.load(f)


def extension_file(folder):
    meta = read_meta(folder)
    found = [n for n in os.listdir(folder) if n.startswith(meta["extension"] + ".")]
    assert len(found) == 1, f"{folder}: extension files {found}"
    return os.path.join(folder, found[0])


# ------------------------------------------------------------- generated == reference -------

def pick_frames(model, count=3):
    """A few frames spread over the model: first, middle, last (and any world-fixed frame)."""
    names = [f.name for f in model.frames]
    picks = {names[0], names[len(names) // 2], names[-1]}
    picks |= {f.name for f in model.frames if f.body < 0}
    return [n for n in names if n in picks][:count + 1]


def compare_with_reference(module, model, seeds=SEEDS, jacobian_frames=None):
    """Every function of `module` equals rbdgen.reference at seeded random states."""
    have = set(module.operation_counts)
    frames = jacobian_frames or pick_frames(model)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        q, v, a = random_state(model, rng)
        f_ext = rng.normal(size=(model.nbodies, 6))
        tag = f"{model.name} seed {seed}"
        if "rnea" in have:
            assert_close(f"{tag} rnea", module.rnea(q, v, a), ref.rnea(model, q, v, a), TOL)
        if "rnea_fext" in have:
            assert_close(f"{tag} rnea f_ext", module.rnea(q, v, a, f_ext), ref.rnea(model, q, v, a, f_ext), TOL)
            assert_close(f"{tag} rnea_fext", module.rnea_fext(q, v, a, f_ext.reshape(-1)),
                         ref.rnea(model, q, v, a, f_ext), TOL)
        if "nle" in have:
            assert_close(f"{tag} nle", module.nle(q, v), ref.nle(model, q, v), TOL)
        if "gravity" in have:
            assert_close(f"{tag} gravity", module.gravity(q), ref.gravity(model, q), TOL)
        if "crba" in have:
            M = module.crba(q)
            assert_close(f"{tag} crba", M, ref.crba(model, q), TOL)
            assert np.array_equal(M, M.T), f"{tag}: crba is not exactly symmetric"
        if "aba" in have:
            assert_close(f"{tag} aba", module.aba(q, v, a), ref.aba(model, q, v, a), TOL)
        if "aba_fext" in have:
            assert_close(f"{tag} aba f_ext", module.aba(q, v, a, f_ext), ref.aba(model, q, v, a, f_ext), TOL)
        if "frame_placement" in have:
            for frame in model.frames:
                R, p = module.frame_placement(q, frame.name)
                R_ref, p_ref = ref.frame_placement(model, q, frame)
                assert_close(f"{tag} frame_placement({frame.name!r}) R", R, R_ref, TOL)
                assert_close(f"{tag} frame_placement({frame.name!r}) p", p, p_ref, TOL)
        for name in frames:
            for reference in ("local", "world", "local_world_aligned"):
                if f"frame_jacobian_{reference}" in have:
                    assert_close(f"{tag} frame_jacobian({name!r}, {reference})",
                                 module.frame_jacobian(q, name, reference),
                                 ref.frame_jacobian(model, q, name, reference), TOL)
        if "com" in have:
            assert_close(f"{tag} com", module.com(q), ref.com(model, q), TOL)
        if "kinetic_energy" in have:
            T = module.kinetic_energy(q, v)
            assert isinstance(T, float)
            assert_close(f"{tag} kinetic_energy", T, ref.kinetic_energy(model, q, v), TOL)
        if "potential_energy" in have:
            U = module.potential_energy(q)
            assert isinstance(U, float)
            assert_close(f"{tag} potential_energy", U, ref.potential_energy(model, q), TOL)


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_robot_matches_reference(robot_module, name):
    module, model = robot_module(name)
    assert (module.nq, module.nv) == (model.nq, model.nv)
    assert module.joint_names == tuple(j.name for j in model.joints)
    assert set(module.frames) == {f.name for f in model.frames}
    expected = set(build_algorithms(name) or ALL_FUNCTIONS)
    assert expected <= set(module.operation_counts)
    compare_with_reference(module, model)


@pytest.mark.parametrize("case_id", TREE_IDS)
def test_random_tree_matches_reference(tree_module, case_id):
    module, model = tree_module(case_id)
    assert set(module.operation_counts) == set(ALL_FUNCTIONS)
    # every frame of a small tree, including the one fixed to the world
    compare_with_reference(module, model, jacobian_frames=[f.name for f in model.frames])
    world = [f for f in model.frames if f.body < 0]
    assert world, "random_tree adds a world-fixed frame"
    q = random_state(model, np.random.default_rng(7))[0]
    assert not module.frame_jacobian(q, world[0].name, "world").any()


def test_op_count_bound(robot_module):
    # A guard against code swelling (e.g. a forgotten per-line `let`): 348 since issue 11.
    module, _ = robot_module("ur5")
    assert module.operation_counts["rnea"] <= 350, module.operation_counts


def test_sin_and_cos_over_the_whole_range(robot_module):
    """The generated sin/cos (vectorized over the joint angles, glibc beyond 1e6 rad) agree
    with NumPy's at quadrant boundaries, signed zeros and huge angles."""
    module, model = robot_module("ur5")
    angles = [0.0, -0.0, np.pi / 2, -np.pi, 3 * np.pi / 4, 7 * np.pi / 2, 1e5 + 0.3, -(1e6 - 0.5),
              1e6, -3e6, 1e12]
    rng = np.random.default_rng(11)
    for angle in angles:
        q = np.full(model.nq, angle) + rng.uniform(-1e-9, 1e-9, model.nq) * (abs(angle) < 1)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        assert_close(f"crba at {angle}", module.crba(q), ref.crba(model, q), TOL)
        assert_close(f"rnea at {angle}", module.rnea(q, v, a), ref.rnea(model, q, v, a), TOL)


# ------------------------------------------------------------------------ build cache -------

def test_build_cache_reuses_and_option_change_rebuilds(tmp_path):
    urdf = robot_path("double_pendulum_continuous")
    out = str(tmp_path / "out")
    base = ["rnea", "crba", "aba", "placements", "jacobians"]
    first = rbdgen.build(urdf, out_dir=out, algorithms=base)
    folder = module_dir(first)
    ext, meta = extension_file(folder), read_meta(folder)
    stamps = {n: os.stat(os.path.join(folder, n)).st_mtime_ns for n in os.listdir(folder)}

    again = rbdgen.build(urdf, out_dir=out, algorithms=list(reversed(base)))   # the same set
    assert module_dir(again) == folder
    assert extension_file(folder) == ext
    assert read_meta(folder)["build_key"] == meta["build_key"]
    assert {n: os.stat(os.path.join(folder, n)).st_mtime_ns for n in os.listdir(folder)} == stamps, \
        "a second build with the same options rewrote the module"
    assert temporary_entries(out) == []

    # another option: a rebuild with another key, only the requested functions
    subset = rbdgen.build(urdf, out_dir=out, algorithms=["gravity", "rnea"])
    meta2 = read_meta(folder)
    assert meta2["build_key"] != meta["build_key"]
    assert meta2["options"]["algorithms"] == ["rnea", "gravity"]
    assert set(subset.operation_counts) == {"rnea", "gravity"}
    assert extension_file(folder) != ext
    model = rbdgen.load_urdf(urdf)
    q, v, a = random_state(model, np.random.default_rng(0))
    assert_close("subset rnea", subset.rnea(q, v, a), ref.rnea(model, q, v, a), TOL)
    assert_close("subset gravity", subset.gravity(q), ref.gravity(model, q), TOL)

    # back to the first options: rebuilt again (the cache holds one version per folder)
    back = rbdgen.build(urdf, out_dir=out, algorithms=base)
    assert read_meta(folder)["build_key"] == meta["build_key"]
    assert set(back.operation_counts) == set(base)
    assert_close("rebuilt crba", back.crba(q), ref.crba(model, q), TOL)
    assert temporary_entries(out) == []
    assert sorted(n for n in os.listdir(out) if not n.startswith(".")) == [os.path.basename(folder)]


def test_build_cache_notices_model_change(tmp_path):
    path = write_urdf(tmp_path, tiny_urdf())
    out = str(tmp_path / "out")
    first = rbdgen.build(path, out_dir=out, algorithms=["gravity"])
    key = read_meta(module_dir(first))["build_key"]
    # the same model in a reformatted file: reused
    with open(path, encoding="utf-8") as f:
        text = f.read()
    write_urdf(tmp_path, text.replace("><", ">\n  <"))
    rbdgen.build(path, out_dir=out, algorithms=["gravity"])
    assert read_meta(module_dir(first))["build_key"] == key
    # another mass: rebuilt, and the new module sees it
    write_urdf(tmp_path, text.replace("<mass value='0.5'/>", "<mass value='0.75'/>"))
    second = rbdgen.build(path, out_dir=out, algorithms=["gravity"])
    assert read_meta(module_dir(second))["build_key"] != key
    model = rbdgen.load_urdf(path)
    q = np.array([0.3, -0.7])
    assert_close("gravity after a change", second.gravity(q), ref.gravity(model, q), TOL)


def test_module_that_failed_verification_is_not_reused(tmp_path, monkeypatch):
    """If the verification after a build fails, a later build must not hand out that module
    from the cache unverified (it must verify again, or rebuild)."""
    import rbdgen.codegen.build
    import rbdgen.runtime.verify as verify

    calls = []

    def failing_verify(module, model, states=5, seed=0, rel_tol=1e-10, expected=None):
        calls.append(module)
        return {"rnea": {"error": 1.0, "ok": False}}

    monkeypatch.setattr(verify, "verify_module", failing_verify)
    monkeypatch.setattr(rbdgen.codegen.build, "verify_module", failing_verify, raising=False)
    model = random_tree(42, 2, ("revolute",), floating_base=False, branched=False)
    out = str(tmp_path / "out")
    with pytest.raises(rbdgen.CodegenError, match="disagrees with the reference"):
        rbdgen.build_model(model, out_dir=out, algorithms=["rnea"])
    assert len(calls) == 1
    with pytest.raises(rbdgen.CodegenError, match="disagrees with the reference"):
        rbdgen.build_model(model, out_dir=out, algorithms=["rnea"])


# ------------------------------------------------------------------ concurrent builds -------

_BUILD_SCRIPT = textwrap.dedent("""
    import sys, rbdgen
    m = rbdgen.build(sys.argv[1], out_dir=sys.argv[2], algorithms=["rnea", "crba", "placements", "jacobians"])
    print(m.nq, m.nv)
""")


def test_concurrent_builds_leave_one_intact_module(tmp_path):
    urdf = write_urdf(tmp_path, tiny_urdf(robot="racer"))
    out = str(tmp_path / "out")
    procs = [subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT, urdf, out], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for stdout, stderr, code in results:
        assert code == 0, stderr
        assert stdout.split() == ["2", "2"]
    assert temporary_entries(out) == [], "temporary build folders were left behind"
    modules = [n for n in os.listdir(out) if not n.startswith(".")]
    assert modules == ["racer"]
    folder = os.path.join(out, "racer")
    extension_file(folder)
    assert not [n for n in os.listdir(folder) if n.endswith((".o", ".tmp")) or n.startswith(".")]
    module = rbdgen.load(folder)
    report = verify_module(module, rbdgen.load_urdf(urdf), states=3)
    assert all(r["ok"] for r in report.values()), report


# ----------------------------------------------------------------------------- sanitizer -----

SANITIZER_ALGORITHMS = ["rnea", "crba", "placements", "jacobians", "kinetic_energy", "frame_placement",
                        "frame_jacobian_local"]
NASTY_NAMES = [
    'x*/ system("rm -rf ~"); /*',
    "it's a \"quoted\" \\ name */ #include <stdio.h>",
    "line one\n*/ int evil; /*\nline three",
    "roböt ☃ 機械 */",
    "2dof */ arm",
    "class",
]


@pytest.mark.parametrize("nasty", NASTY_NAMES, ids=["c-comment", "quotes", "newlines", "unicode",
                                                    "leading-digit", "keyword"])
def test_sanitizer(tmp_path, nasty):
    links = (nasty, nasty + " link1", nasty + " link2", nasty + " tip")
    joints = (nasty + " j1", nasty + " j2", nasty + " tip joint")
    path = write_urdf(tmp_path, tiny_urdf(robot=nasty, links=links, joints=joints))
    model = rbdgen.load_urdf(path)
    assert model.name == nasty and [j.name for j in model.joints] == list(joints[:2])
    # the names never reach the C code whatever the function; a few functions keep this quick
    module = rbdgen.build(path, out_dir=str(tmp_path / "out"), algorithms=SANITIZER_ALGORITHMS)
    folder = module_dir(module)
    meta = read_meta(folder)
    ident = meta["module"]
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident) and not keyword.iskeyword(ident), ident
    assert os.path.basename(folder) == ident

    # the generated C and the wrapper hold none of the raw names; in C, the names appear only
    # escaped inside comments (the header's lists) and string literals (the frame table)
    raw = [n for n in (nasty, *links, *joints) if not n.isidentifier()]
    for filename in os.listdir(folder):
        if filename.endswith((".c", ".h", ".py")):
            with open(os.path.join(folder, filename), encoding="utf-8") as f:
                text = f.read()
            if filename.endswith((".c", ".h")):
                text = re.sub(r'/\*.*?\*/|"(\\.|[^"\\\n])*"', " ", text, flags=re.S)
            for name in raw:
                assert name not in text, f"{filename} contains the raw name {name!r}"
            for fragment in ("system(", "rm -rf", "#include <stdio.h>", "int evil"):
                assert fragment not in text, f"{filename} contains {fragment!r}"
    # ... and no comment or string ends early: the C holding them compiles without a warning
    for filename in (f"rbdgen_{ident}.h", f"rbdgen_{ident}_info.c"):
        result = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-Wpedantic", "-fsyntax-only",
                                 "-x", "c", os.path.join(folder, filename)], capture_output=True, text=True)
        assert result.returncode == 0, f"{filename}: {result.stderr}"
    # model.json keeps the names, JSON-escaped
    with open(os.path.join(folder, "model.json"), encoding="utf-8") as f:
        text = f.read()
    for name in (nasty, *links, *joints[:2]):
        assert json.dumps(name) in text, f"model.json lacks {json.dumps(name)}"
    assert meta["name"] == nasty and module.name == nasty
    assert module.joint_names == joints[:2]
    assert set(links) <= set(module.frames)

    # the names work in the functions, and the module still matches the reference
    q, v, a = random_state(model, np.random.default_rng(1))
    for link in links:
        R, p = module.frame_placement(q, link)
        R_ref, p_ref = ref.frame_placement(model, q, link)
        assert_close(f"placement of {link!r}", np.hstack([R, p[:, None]]), np.hstack([R_ref, p_ref[:, None]]), TOL)
        assert_close(f"jacobian of {link!r}", module.frame_jacobian(q, link, "local"),
                     ref.frame_jacobian(model, q, link, "local"), TOL)
    compare_with_reference(module, model, seeds=(0,))


# --------------------------------------------------------------------- argument checking ------

def test_wrong_shapes_raise_value_error(robot_module):
    module, model = robot_module("panda")
    assert (module.nq, module.nv) == (9, 9)
    q, v, a = random_state(model, np.random.default_rng(0))
    with pytest.raises(ValueError) as info:
        module.rnea(q[:8], v, a)
    assert str(info.value) == "q: expected (9,), got (8,)"
    with pytest.raises(ValueError, match=re.escape("v: expected (9,), got (10,)")):
        module.rnea(q, np.zeros(10), a)
    with pytest.raises(ValueError, match=re.escape("a: expected (9,), got (1, 9)")):
        module.rnea(q, v, a[None, :])
    with pytest.raises(ValueError, match=re.escape("tau: expected (9,), got (3, 3)")):
        module.aba(q, v, a.reshape(3, 3))
    with pytest.raises(ValueError, match=re.escape("q: expected (9,), got ()")):
        module.gravity(1.0)
    with pytest.raises(ValueError, match=re.escape("q: expected (9,), got (0,)")):
        module.crba([])
    with pytest.raises(ValueError, match=re.escape("q: expected (9,), got (8,)")):
        module.frame_placement(q[:8], "panda_hand")
    with pytest.raises(ValueError, match=re.escape("q: expected (9,), got (8,)")):
        module.frame_jacobian(q[:8], "panda_hand")
    for fn, args in [(module.nle, (q[:8], v)), (module.com, (q[:8],)), (module.kinetic_energy, (q, v[:8])),
                     (module.potential_energy, (q[:8],)), (module.placements, (q[:8],)),
                     (module.jacobians, (q[:8],))]:
        with pytest.raises(ValueError, match=r"expected \(9,\), got \(8,\)"):
            fn(*args)
    nb = model.nbodies
    with pytest.raises(ValueError, match=re.escape(f"f_ext: expected ({nb}, 6)") + ".*" + re.escape(f"got ({nb}, 3)")):
        module.rnea(q, v, a, np.zeros((nb, 3)))
    with pytest.raises(ValueError, match=re.escape(f"f_ext: expected ({nb}, 6)") + ".*" + re.escape(f"got ({6 * nb},)")):
        module.aba(q, v, a, np.zeros(6 * nb))
    with pytest.raises(ValueError, match="unknown frame 'no_such_frame'"):
        module.frame_placement(q, "no_such_frame")
    with pytest.raises(ValueError, match="reference 'global' is unknown"):
        module.frame_jacobian(q, "panda_hand", "global")
    with pytest.raises((ValueError, TypeError)):
        module.rnea(["a"] * 9, v, a)


def test_dtypes_and_strides_are_converted(robot_module):
    module, model = robot_module("panda")
    rng = np.random.default_rng(3)
    q, v, a = random_state(model, rng)
    expected = ref.rnea(model, q, v, a)

    q32, v32, a32 = (x.astype(np.float32) for x in (q, v, a))
    assert_close("float32", module.rnea(q32, v32, a32),
                 ref.rnea(model, q32.astype(float), v32.astype(float), a32.astype(float)), TOL)

    qi, vi, ai = ([int(x) for x in np.round(y * 3)] for y in (q, v, a))
    assert_close("int lists", module.rnea(qi, vi, ai), ref.rnea(model, qi, vi, ai), TOL)
    assert_close("int array", module.crba(np.array(qi)), ref.crba(model, qi), TOL)
    assert_close("tuple", module.gravity(tuple(q)), ref.gravity(model, q), TOL)

    big = np.zeros((3, 2 * model.nq))
    big[1, ::2] = q
    strided = big[1, ::2]
    assert not strided.flags.c_contiguous
    vv = np.repeat(v, 3)[::3]
    assert_close("strided", module.rnea(strided, vv, a), expected, TOL)
    assert_close("reversed view", module.rnea(q[::-1][::-1], v, a[::-1].copy()[::-1]), expected, TOL)
    assert_close("big endian", module.rnea(q.astype(">f8"), v, a), expected, TOL)
    assert_close("column of a Fortran array", module.rnea(np.asfortranarray(np.stack([q, q], 1))[:, 0], v, a),
                 expected, TOL)
    R, p = module.frame_placement(strided, "panda_hand")
    R_ref, p_ref = ref.frame_placement(model, q, "panda_hand")
    assert_close("strided placement", R, R_ref, TOL)
    assert_close("strided placement p", p, p_ref, TOL)
    f_ext = rng.normal(size=(model.nbodies, 6))
    assert_close("f_ext transposed view", module.rnea(q, v, a, np.asfortranarray(f_ext)),
                 ref.rnea(model, q, v, a, f_ext), TOL)
    assert_close("f_ext as a list", module.aba(q, v, a, f_ext.tolist()), ref.aba(model, q, v, a, f_ext), TOL)
    # the inputs are not modified
    q0 = q.copy()
    module.aba(q, v, a)
    assert np.array_equal(q, q0)


def test_out_argument(robot_module):
    module, model = robot_module("panda")
    rng = np.random.default_rng(4)
    q, v, a = random_state(model, rng)
    f_ext = rng.normal(size=(model.nbodies, 6))
    nv = model.nv

    out = np.full(nv, np.nan)
    assert module.rnea(q, v, a, out=out) is out
    assert_close("rnea out", out, ref.rnea(model, q, v, a), TOL)
    assert module.rnea(q, v, a, f_ext, out=out) is out
    assert_close("rnea f_ext out", out, ref.rnea(model, q, v, a, f_ext), TOL)
    assert module.aba(q, v, a, out=out) is out
    assert_close("aba out", out, ref.aba(model, q, v, a), TOL)
    assert module.aba(q, v, a, f_ext=f_ext, out=out) is out
    assert_close("aba f_ext out", out, ref.aba(model, q, v, a, f_ext), TOL)
    assert module.nle(q, v, out=out) is out
    assert_close("nle out", out, ref.nle(model, q, v), TOL)
    assert module.gravity(q, out=out) is out
    assert_close("gravity out", out, ref.gravity(model, q), TOL)
    M = np.empty((nv, nv))
    assert module.crba(q, out=M) is M
    assert_close("crba out", M, ref.crba(model, q), TOL)
    c = np.empty(3)
    assert module.com(q, out=c) is c
    assert_close("com out", c, ref.com(model, q), TOL)
    J = np.empty((6, nv))
    assert module.jacobians(q, out=J) is J
    X = np.empty((model.nbodies, 12))
    assert module.placements(q, out=X) is X
    e = np.empty(1)
    T = module.kinetic_energy(q, v, out=e)
    assert T == e[0]
    assert_close("kinetic energy out", e[0], ref.kinetic_energy(model, q, v), TOL)

    bad_outs = [np.empty(nv + 1), np.empty((nv, 1)), np.empty(nv, dtype=np.float32), np.empty(2 * nv)[::2],
                [0.0] * nv, np.empty(nv, dtype=np.int64)]
    for bad in bad_outs:
        with pytest.raises(ValueError, match="^out: expected a writable C-contiguous float64 array of shape"):
            module.rnea(q, v, a, out=bad)
    with pytest.raises(ValueError, match="out: expected"):
        module.crba(q, out=np.empty((nv, nv)).T[:, :nv - 1])
    with pytest.raises(ValueError, match="out: expected"):
        module.crba(q, out=np.empty(nv * nv))


def test_out_must_be_writable(robot_module):
    """A read-only out array must be refused, not written through."""
    module, model = robot_module("ur5")
    q, v, a = random_state(model, np.random.default_rng(5))
    out = np.zeros(model.nv)
    out.flags.writeable = False
    with pytest.raises(ValueError):
        module.rnea(q, v, a, out=out)
    assert not out.any(), "rnea wrote into a read-only array"


def test_f_ext_without_the_fext_functions(tmp_path):
    """A module built without rnea_fext / aba_fext: rnea(..., f_ext) must not die of a NameError."""
    model = random_tree(41, 3, ("revolute", "prismatic"), floating_base=False, branched=False)
    module = rbdgen.build_model(model, out_dir=str(tmp_path), algorithms=["rnea", "aba"])
    assert set(module.operation_counts) == {"rnea", "aba"}
    q, v, a = random_state(model, np.random.default_rng(8))
    f_ext = np.random.default_rng(9).normal(size=(model.nbodies, 6))
    for fn, reference in ((module.rnea, ref.rnea), (module.aba, ref.aba)):
        try:
            result = fn(q, v, a, f_ext)
        except (NameError, AttributeError) as exc:
            pytest.fail(f"{fn.__name__}(q, v, a, f_ext) without the f_ext function: {type(exc).__name__}: {exc}")
        except ValueError as exc:   # a clear error naming what to build (the module cannot import rbdgen)
            assert "fext" in str(exc) or "f_ext" in str(exc)
        else:
            assert_close(f"{fn.__name__} f_ext", result, reference(model, q, v, a, f_ext), TOL)


def test_module_folder_permissions(robot_module):
    """The module folder gets the permissions of any folder made under the umask (not mkdtemp's 0700),
    so that a module built by one user can be imported by others."""
    module, _ = robot_module("ur5")
    umask = os.umask(0)
    os.umask(umask)
    mode = os.stat(module_dir(module)).st_mode & 0o777
    assert mode == 0o777 & ~umask, f"module folder mode {oct(mode)}, expected {oct(0o777 & ~umask)}"


# ---------------------------------------------------------------------- determinism --------

_DETERMINISM_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import rbdgen
    from trees import random_tree
    seed, nbodies, kinds, floating, branched, algorithms = json.loads(sys.argv[3])
    model = random_tree(seed, nbodies, kinds, floating_base=floating, branched=branched)
    rbdgen.build_model(model, out_dir=sys.argv[2], verify=False, algorithms=algorithms)
""")


def test_c_source_is_deterministic(tree_module, tmp_path):
    """The same model built again, into another folder and in a process with another hash seed
    (this process's is random), gives byte-identical C source and header."""
    case_id = "chain-floating"
    module, model = tree_module(case_id)
    _, seed, nbodies, kinds, floating, branched = next(t for t in TREES if t[0] == case_id)
    env = dict(os.environ, PYTHONHASHSEED="4242")
    args = json.dumps([seed, nbodies, kinds, floating, branched, list(ALL_FUNCTIONS)])
    result = subprocess.run([sys.executable, "-c", _DETERMINISM_SCRIPT, TESTS_DIR, str(tmp_path), args],
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    first = module_dir(module)
    second = os.path.join(str(tmp_path), os.path.basename(first))
    assert first != second
    listings = [sorted(n for n in os.listdir(f) if n.endswith((".c", ".h"))) for f in (first, second)]
    assert listings[0] == listings[1]
    stem = os.path.basename(first)
    assert {f"rbdgen_{stem}.h"} | {f"rbdgen_{stem}_{n}.c" for n in ALL_FUNCTIONS} <= set(listings[0])
    for name in listings[0]:
        with open(os.path.join(first, name), "rb") as f0, open(os.path.join(second, name), "rb") as f1:
            assert f0.read() == f1.read(), f"{name} differs between two builds of the same model"
    assert read_meta(first)["build_key"] == read_meta(second)["build_key"]


# -------------------------------------------------------------------- compiler errors ------

def test_failed_compile_raises_build_error(tmp_path, monkeypatch):
    cc = tmp_path / "fake-cc"
    cc.write_text("#!/bin/sh\necho \"fake-cc: error: this compiler refuses everything\" >&2\nexit 1\n")
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    model = random_tree(31, 2, ("revolute",), floating_base=False, branched=False)
    out = tmp_path / "out"
    with pytest.raises(rbdgen.BuildError) as info:
        rbdgen.build_model(model, out_dir=str(out), algorithms=["rnea", "gravity"])
    err = info.value
    assert isinstance(err, rbdgen.RbdgenError)
    assert err.command and err.command[0] == str(cc), err.command
    assert "fake-cc: error: this compiler refuses everything" in err.output
    assert "fake-cc: error" in str(err)
    assert str(cc) in str(err).splitlines()[0]
    # nothing half-built is left behind
    assert temporary_entries(str(out)) == []
    assert [n for n in os.listdir(str(out)) if not n.startswith(".")] == []


# --------------------------------------------------------------------------- importing ------

def test_import_without_rbdgen(robot_module):
    module, model = robot_module("ur5")
    folder = module_dir(module)
    assert os.path.basename(folder) == "ur5"
    q, v, a = random_state(model, np.random.default_rng(6))
    script = textwrap.dedent(f"""
        import sys, json
        sys.path.insert(0, {os.path.dirname(folder)!r})
        import numpy as np
        import ur5
        assert 'rbdgen' not in sys.modules, sorted(m for m in sys.modules if 'rbdgen' in m)
        q, v, a = (np.array(x) for x in json.loads(sys.argv[1]))
        print(json.dumps({{"nq": ur5.nq, "nv": ur5.nv, "name": ur5.name, "rnea": ur5.rnea(q, v, a).tolist(),
                          "M": ur5.crba(q).tolist(), "counts": ur5.operation_counts}}))
        assert 'rbdgen' not in sys.modules
    """)
    env = {k: val for k, val in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-I", "-c", script, json.dumps([q.tolist(), v.tolist(), a.tolist()])],
                            capture_output=True, text=True, env=env, cwd=os.path.dirname(folder), timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["nq"], data["nv"], data["name"]) == (6, 6, "ur5")
    assert data["counts"] == module.operation_counts
    assert_close("rnea in a clean interpreter", data["rnea"], ref.rnea(model, q, v, a), TOL)
    assert_close("crba in a clean interpreter", data["M"], ref.crba(model, q), TOL)


def test_load_rejects_a_folder_without_a_module(tmp_path):
    with pytest.raises(rbdgen.BuildError, match="not a generated rbdgen module"):
        rbdgen.load(tmp_path)
