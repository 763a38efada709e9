"""frame_jacobian_time_variation: dJ/dt of a frame's Jacobian as q moves along v (Pinocchio's
getFrameJacobianTimeVariation), forward mode on the frame Jacobian's own algorithm.

1. The generated function and the reference against Pinocchio's computeJointJacobiansTimeVariation
   + getFrameJacobianTimeVariation in LOCAL, WORLD and LOCAL_WORLD_ALIGNED on UR5, Panda, Solo12
   and Talos, at a distal and an intermediate frame.
2. Against central differences of the generated frame_jacobian along q(t) = q (+) t v, also on
   Panda's mimic model and on random trees with every joint type (the reference).
3. J-dot v is the frame's acceleration at q-ddot = 0: spatial in local and world, the origin's
   classical acceleration in local_world_aligned.
"""

import functools
import warnings

import numpy as np
import pinocchio as pin
import pytest

import rbdgen
from helpers import (REL_TOL_GENERATED, REL_TOL_IDENTITY, REL_TOL_PINOCCHIO, ROBOTS, assert_close, pinocchio_model,
                     random_state, robot_model, robot_path, to_pinocchio_q)
from rbdgen import reference as ref
from trees import ALL_JOINT_TYPES, integrate, random_tree

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

REFERENCES = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
FRAMES = {"ur5": ("tool0", "forearm_link"), "panda": ("panda_hand", "panda_link4"),
          "solo12": ("FL_FOOT", "HR_UPPER_LEG"), "talos": ("left_sole_link", "arm_right_4_link")}
FUNCTIONS = ([f"frame_jacobian_time_variation_{r}" for r in REFERENCES] + [f"frame_jacobian_{r}" for r in REFERENCES]
             + ["frame_acceleration_local", "frame_acceleration_world",
                "frame_classical_acceleration_local_world_aligned", "integrate"])
STATES = (0, 1, 2)
FD_STEP = 1e-6
FD_TOL = 1e-7        # central differences of J along v: step^2 error, rounding / step


@functools.lru_cache(maxsize=None)
def built(name, mimic=False):
    """The module of `name` serving only its test frames (one program per body that carries them)."""
    folder = built.folder
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rbdgen.build(robot_path(name), out_dir=folder, name=f"{name}_jdot{'_mimic' if mimic else ''}",
                            floating_base=ROBOTS[name][1], algorithms=FUNCTIONS, frames=list(FRAMES[name]), mimic=mimic)


@pytest.fixture(scope="module", autouse=True)
def _folder(tmp_path_factory):
    built.folder = str(tmp_path_factory.mktemp("jdot"))
    yield
    built.cache_clear()


@pytest.mark.parametrize("name", list(FRAMES))
def test_against_pinocchio(name):
    robot, model, pm = built(name), robot_model(name), pinocchio_model(name)
    pd = pm.createData()
    for seed in STATES:
        q, v, _ = random_state(model, np.random.default_rng(seed))
        pin.computeJointJacobiansTimeVariation(pm, pd, to_pinocchio_q(model, q), v)
        pin.updateFramePlacements(pm, pd)
        for frame in FRAMES[name]:
            for reference, pin_reference in REFERENCES.items():
                theirs = pin.getFrameJacobianTimeVariation(pm, pd, pm.getFrameId(frame), pin_reference)
                where = f"{name} {frame} {reference} state {seed}"
                ours = robot.frame_jacobian_time_variation(q, v, frame, reference)
                assert_close(f"generated vs Pinocchio, {where}", ours, theirs, REL_TOL_PINOCCHIO)
                assert_close(f"generated vs reference, {where}", ours,
                             ref.frame_jacobian_time_variation(model, q, v, frame, reference), REL_TOL_GENERATED)


def _central_difference(robot, q, v, frame, reference):
    J = lambda t: robot.frame_jacobian(robot.integrate(q, v, t), frame, reference)
    return (J(FD_STEP) - J(-FD_STEP)) / (2 * FD_STEP)


@pytest.mark.parametrize("name, mimic", [("ur5", False), ("solo12", False), ("panda", True)])
def test_is_the_derivative_of_the_jacobian_along_v(name, mimic):
    robot = built(name, mimic)
    model = rbdgen.load_urdf(robot_path(name), floating_base=ROBOTS[name][1], mimic=mimic)
    assert robot.nv == model.nv
    for seed in STATES:
        q, v, _ = random_state(model, np.random.default_rng(seed))
        for frame in FRAMES[name]:
            for reference in REFERENCES:
                assert_close(f"{name}{' mimic' if mimic else ''} {frame} {reference} state {seed}",
                             robot.frame_jacobian_time_variation(q, v, frame, reference),
                             _central_difference(robot, q, v, frame, reference), FD_TOL)


@pytest.mark.parametrize("name", list(FRAMES))
def test_times_v_is_the_acceleration_at_rest(name):
    robot = built(name)
    model = robot_model(name)
    for seed in STATES:
        q, v, _ = random_state(model, np.random.default_rng(seed))
        zero = np.zeros(robot.nv)
        for frame in FRAMES[name]:
            for reference, acceleration in (("local", robot.frame_acceleration), ("world", robot.frame_acceleration),
                                             ("local_world_aligned", robot.frame_classical_acceleration)):
                assert_close(f"{name} {frame} {reference} state {seed}",
                             robot.frame_jacobian_time_variation(q, v, frame, reference) @ v,
                             acceleration(q, v, zero, frame, reference), REL_TOL_IDENTITY)


@pytest.mark.parametrize("floating", [False, True])
def test_every_joint_type_against_differences(floating):
    """The reference on a random tree with every joint type (quaternions, planar, helical,
    Euler, mimic-free): dJ/dt against central differences of the reference's Jacobian."""
    model = random_tree(903 + floating, len(ALL_JOINT_TYPES) + 1, ALL_JOINT_TYPES, floating_base=floating,
                        branched=True)
    rng = np.random.default_rng(5)
    for frame in [f.name for f in model.frames][-3:]:
        q, v, _ = random_state(model, rng)
        for reference in REFERENCES:
            J = lambda t: ref.frame_jacobian(model, integrate(model, q, t * v), frame, reference)
            assert_close(f"tree {frame} {reference}", ref.frame_jacobian_time_variation(model, q, v, frame, reference),
                         (J(FD_STEP) - J(-FD_STEP)) / (2 * FD_STEP), FD_TOL)


def test_batch_and_errors():
    robot = built("ur5")
    model = robot_model("ur5")
    rng = np.random.default_rng(9)
    states = [random_state(model, rng) for _ in range(5)]
    Q, V = np.array([s[0] for s in states]), np.array([s[1] for s in states])
    batch = robot.frame_jacobian_time_variation(Q, V, "tool0", "world")
    assert batch.shape == (5, 6, robot.nv)
    for k in range(5):
        np.testing.assert_allclose(batch[k], robot.frame_jacobian_time_variation(Q[k], V[k], "tool0", "world"),
                                   rtol=0, atol=8 * np.finfo(float).eps * np.abs(batch[k]).max())
    default = robot.frame_jacobian_time_variation(Q[0], V[0], "tool0")
    np.testing.assert_array_equal(default, robot.frame_jacobian_time_variation(Q[0], V[0], "tool0",
                                                                               "local_world_aligned"))
    with pytest.raises(ValueError, match="reference 'body' is unknown"):
        robot.frame_jacobian_time_variation(Q[0], V[0], "tool0", "body")
    with pytest.raises(ValueError, match="v"):
        robot.frame_jacobian_time_variation(Q[0], V[0][:3], "tool0")
