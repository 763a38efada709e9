"""Frames and points as generated code (rbdgen/algorithms/frames.py).

1. rbdgen.reference against Pinocchio on six example-robot-data robots (fixed and floating
   base), every frame, two states: getFrameJacobian, getFrameVelocity, getFrameAcceleration
   and getFrameClassicalAcceleration in LOCAL, WORLD and LOCAL_WORLD_ALIGNED, and oMf.
2. Identities on seeded random trees with every joint type: J v is the frame's velocity; the
   spatial acceleration in world axes is the time derivative of the spatial velocity in
   world axes, the classical one of the origin's world velocity (central differences along
   q(t) = integrate(q, t v), v(t) = v + t a).
3. A generated module (built once per session) against the reference: every frame and
   reference, by name and by index, one state and a batch, out=; points; errors; --frames.
"""

import functools
import warnings

import numpy as np
import pinocchio as pin
import pytest

import rbdgen
from helpers import (robot_model, REL_TOL_GENERATED, REL_TOL_IDENTITY, REL_TOL_PINOCCHIO, ROBOTS, assert_close,
                     pinocchio_model, random_state, robot_path, to_pinocchio_q)
from rbdgen import reference as ref
from trees import ALL_JOINT_TYPES, integrate, random_tree

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

PIN_ROBOTS = ["ur5", "panda", "allegro", "solo12", "anymal", "talos"]
REFERENCES = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
STATES = (0, 1)
FD_STEP = 1e-6
FD_TOL = 1e-7
FRAME_FUNCTIONS = ["frame_placement"] + [f"frame_{kind}_{ref}" for kind in
                                         ("jacobian", "velocity", "acceleration", "classical_acceleration")
                                         for ref in REFERENCES]


TREES = {
    "tree-fixed": (901, len(ALL_JOINT_TYPES) + 1, ALL_JOINT_TYPES, False),
    "tree-floating": (902, len(ALL_JOINT_TYPES) + 2, ALL_JOINT_TYPES, True),
}


@functools.lru_cache(maxsize=None)
def tree_model(key):
    seed, nbodies, kinds, floating = TREES[key]
    return random_tree(seed, nbodies, kinds, floating_base=floating, branched=True)


# ===================================================================== against Pinocchio ===

@pytest.mark.parametrize("name", PIN_ROBOTS)
@pytest.mark.parametrize("seed", STATES)
def test_frames_match_pinocchio(name, seed):
    model = robot_model(name)
    pm = pinocchio_model(name)
    pd = pm.createData()
    q, v, a = random_state(model, np.random.default_rng(seed))
    pin.forwardKinematics(pm, pd, to_pinocchio_q(model, q), v, a)
    pin.computeJointJacobians(pm, pd, to_pinocchio_q(model, q))
    pin.updateFramePlacements(pm, pd)
    checked = 0
    for frame in model.frames:
        fid = pm.getFrameId(frame.name)
        assert fid < len(pm.frames), f"{name}: Pinocchio has no frame {frame.name!r}"
        tag = f"{name} state {seed} {frame.name!r}"
        R, p = ref.frame_placement(model, q, frame.name)
        assert_close(f"{tag} R", R, pd.oMf[fid].rotation, REL_TOL_PINOCCHIO)
        assert_close(f"{tag} p", p, pd.oMf[fid].translation, REL_TOL_PINOCCHIO)
        for reference, pin_ref in REFERENCES.items():
            t = f"{tag} {reference}"
            assert_close(f"{t} J", ref.frame_jacobian(model, q, frame.name, reference),
                         pin.getFrameJacobian(pm, pd, fid, pin_ref), REL_TOL_PINOCCHIO)
            assert_close(f"{t} velocity", ref.frame_velocity(model, q, v, frame.name, reference),
                         pin.getFrameVelocity(pm, pd, fid, pin_ref).vector, REL_TOL_PINOCCHIO)
            assert_close(f"{t} acceleration", ref.frame_acceleration(model, q, v, a, frame.name, reference),
                         pin.getFrameAcceleration(pm, pd, fid, pin_ref).vector, REL_TOL_PINOCCHIO)
            assert_close(f"{t} classical", ref.frame_classical_acceleration(model, q, v, a, frame.name, reference),
                         pin.getFrameClassicalAcceleration(pm, pd, fid, pin_ref).vector, REL_TOL_PINOCCHIO)
        checked += 1
    assert checked == len(model.frames) > 0


# ============================================================================ identities ===

def central_difference(fn, step=FD_STEP):
    return (np.asarray(fn(step)) - np.asarray(fn(-step))) / (2 * step)


@pytest.mark.parametrize("key", list(TREES))
def test_frame_motion_identities(key):
    model = tree_model(key)
    rng = np.random.default_rng(5)
    q, v, a = random_state(model, rng)
    for frame in model.frames:
        f = frame.name
        for reference in REFERENCES:
            J = ref.frame_jacobian(model, q, f, reference)
            assert_close(f"{key} {f} {reference}: J v", J @ v, ref.frame_velocity(model, q, v, f, reference),
                         REL_TOL_IDENTITY)

        def world_velocity(t):
            return ref.frame_velocity(model, integrate(model, q, t * v + 0.5 * t * t * a), v + t * a, f, "world")

        def origin_velocity(t):
            qt = integrate(model, q, t * v + 0.5 * t * t * a)
            return ref.frame_velocity(model, qt, v + t * a, f, "local_world_aligned")[:3]

        assert_close(f"{key} {f}: spatial acceleration = d/dt spatial velocity (world)",
                     ref.frame_acceleration(model, q, v, a, f, "world"), central_difference(world_velocity), FD_TOL)
        assert_close(f"{key} {f}: classical acceleration = d/dt origin velocity",
                     ref.frame_classical_acceleration(model, q, v, a, f, "local_world_aligned")[:3],
                     central_difference(origin_velocity), FD_TOL)
        point = rng.uniform(-0.3, 0.3, 3)
        assert_close(f"{key} {f}: point_gamma = -(J-dot v)",
                     ref.point_gamma(model, q, v, f, point),
                     -ref.point_acceleration(model, q, v, np.zeros(model.nv), f, point), REL_TOL_IDENTITY)


def test_unknown_reference_and_frame_are_one_line_errors():
    model = tree_model("tree-fixed")
    q = np.zeros(model.nq)
    with pytest.raises(ValueError, match="reference 'global' is unknown"):
        ref.frame_jacobian(model, q, model.frames[0].name, "global")
    with pytest.raises(ValueError, match="unknown frame 'nowhere'"):
        ref.frame_placement(model, q, "nowhere")


# ============================================================================ generated ===

@pytest.fixture(scope="session")
def frames_module(tmp_path_factory):
    """key -> (module, model): each built once per session with the frame functions only."""
    out = str(tmp_path_factory.mktemp("frames"))
    built = {}

    def get(key):
        if key not in built:
            if key in ROBOTS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    module = rbdgen.build(robot_path(key), out_dir=out, floating_base=ROBOTS[key][1],
                                          algorithms=FRAME_FUNCTIONS)
                built[key] = (module, robot_model(key))
            else:
                model = tree_model(key)
                built[key] = (rbdgen.build_model(model, out_dir=out, algorithms=FRAME_FUNCTIONS), model)
        return built[key]

    return get


@pytest.mark.parametrize("key", ["solo12", "tree-fixed", "tree-floating"])
def test_generated_frames_match_reference(frames_module, key):
    module, model = frames_module(key)
    assert module.frames == tuple(f.name for f in model.frames)
    rng = np.random.default_rng(11)
    q, v, a = random_state(model, rng)
    qb, vb, ab = random_state(model, rng, batch=5)
    tol = REL_TOL_GENERATED
    for index, frame in enumerate(model.frames):
        f = frame.name
        for by in (f, index):
            R, p = module.frame_placement(q, by)
            R_ref, p_ref = ref.frame_placement(model, q, f)
            assert_close(f"{key} {f} R", R, R_ref, tol)
            assert_close(f"{key} {f} p", p, p_ref, tol)
        Rb, pb = module.frame_placement(qb, f)
        assert_close(f"{key} {f} batch R", Rb, ref.frame_placement(model, qb, f)[0], tol)
        for reference in REFERENCES:
            t = f"{key} {f} {reference}"
            assert_close(f"{t} J", module.frame_jacobian(q, f, reference), ref.frame_jacobian(model, q, f, reference),
                         tol)
            assert_close(f"{t} velocity", module.frame_velocity(q, v, index, reference),
                         ref.frame_velocity(model, q, v, f, reference), tol)
            assert_close(f"{t} acceleration", module.frame_acceleration(q, v, a, f, reference),
                         ref.frame_acceleration(model, q, v, a, f, reference), tol)
            assert_close(f"{t} classical", module.frame_classical_acceleration(q, v, a, f, reference),
                         ref.frame_classical_acceleration(model, q, v, a, f, reference), tol)
            assert_close(f"{t} batch J", module.frame_jacobian(qb, f, reference),
                         ref.frame_jacobian(model, qb, f, reference), tol)
            assert_close(f"{t} batch classical", module.frame_classical_acceleration(qb, vb, ab, f, reference),
                         ref.frame_classical_acceleration(model, qb, vb, ab, f, reference), tol)
        point = rng.uniform(-0.2, 0.2, 3)
        for fn, args in (("point_jacobian", (q,)), ("point_velocity", (q, v)), ("point_acceleration", (q, v, a)),
                         ("point_gamma", (q, v))):
            assert_close(f"{key} {f} {fn}", getattr(module, fn)(*args, f, point),
                         getattr(ref, fn)(model, *args, f, point), tol)


def test_generated_frames_out_and_errors(frames_module):
    module, model = frames_module("tree-floating")
    q, v, a = random_state(model, np.random.default_rng(3))
    f = model.frames[-1].name
    out = np.empty((6, model.nv))
    assert module.frame_jacobian(q, f, "local", out=out) is out
    assert_close("J into out", out, ref.frame_jacobian(model, q, f, "local"), REL_TOL_GENERATED)
    out3 = np.empty((3, model.nv))
    assert module.point_jacobian(q, f, np.zeros(3), out=out3) is out3
    assert_close("point J into out", out3, ref.point_jacobian(model, q, f, np.zeros(3)), REL_TOL_GENERATED)
    with pytest.raises(ValueError, match=r"unknown frame 'nowher'.*frames"):
        module.frame_jacobian(q, "nowher")
    with pytest.raises(ValueError, match="unknown frame 999"):
        module.frame_placement(q, 999)
    with pytest.raises(ValueError, match="reference 'global' is unknown"):
        module.frame_jacobian(q, f, "global")
    with pytest.raises(ValueError, match="point: expected"):
        module.point_jacobian(q, f, [1.0, 2.0])
    with pytest.raises(ValueError, match="q: expected"):
        module.frame_jacobian(q[:-1], f)
    with pytest.raises(ValueError, match="out: expected"):
        module.frame_jacobian(q, f, out=np.empty((6, model.nv + 1)))


def test_frames_option_restricts_the_module(tmp_path):
    model = tree_model("tree-fixed")
    names = [model.frames[-1].name, model.frames[1].name]
    module = rbdgen.build_model(model, out_dir=str(tmp_path), algorithms=["frame_placement",
                                                                         "frame_jacobian_local_world_aligned"],
                                frames=names)
    assert module.frames == tuple(names)
    q = np.random.default_rng(0).uniform(-1, 1, model.nq)
    for f in names:
        assert_close(f, module.frame_jacobian(q, f), ref.frame_jacobian(model, q, f), REL_TOL_GENERATED)
    with pytest.raises(ValueError, match="unknown frame"):
        module.frame_jacobian(q, model.frames[0].name)
    with pytest.raises(ValueError, match="built without frame_jacobian_local"):
        module.frame_jacobian(q, names[0], "local")
    close = names[0][:-1]
    with pytest.raises(rbdgen.CodegenError, match=f"unknown frame '{close}' in --frames; did you mean"):
        rbdgen.build_model(model, out_dir=str(tmp_path), frames=[close])


def test_chain_programs_cut_by_length_serve_every_body(monkeypatch):
    """Chains cut into several programs (CHAIN_STATEMENTS, which only the longest robots reach)
    still serve every body with frames, once, each with the reference's values."""
    from rbdgen.algorithms.frames import placement_entries
    from rbdgen.codegen import programs
    from rbdgen.codegen.evaluate import evaluate
    from rbdgen.runtime.accuracy import double_values
    from rbdgen.table.functions import lookup
    model = tree_model("tree-floating")
    bodies = sorted({f.body for f in model.frames if f.body >= 0})
    spec = lookup("frame_jacobian_local")
    whole = programs.frame_programs(model, spec, bodies)
    monkeypatch.setattr(programs, "CHAIN_STATEMENTS", 40)
    cut = programs.frame_programs(model, spec, bodies)
    assert len(cut) > len(whole)
    assert sorted(b for served, _ in cut for b in served) == bodies
    rng = np.random.default_rng(5)
    q = np.stack([random_state(model, rng)[0] for _ in range(3)])
    for served, program in cut:
        for k, body in enumerate(served):
            frame = next(f for f in model.frames if f.body == body)
            inputs = {"q": q, "placement": np.tile(placement_entries(frame.placement), (3, 1))}
            assert_close(f"body {body}", evaluate(program, inputs)[:, k],
                         double_values(model, spec, inputs, body), REL_TOL_GENERATED)
