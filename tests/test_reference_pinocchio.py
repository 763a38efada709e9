"""rbdgen.reference against Pinocchio at seeded random states, on every robot of helpers.ROBOTS.

Conventions bridged here:
- continuous joints: rbdgen has one angle, Pinocchio (cos, sin): helpers.to_pinocchio_q;
- f_ext: rbdgen (njoints, 6), rows [force; torque] in each joint's frame = Pinocchio's
  fext[1:] as pin.Force(linear, angular) (fext[0] acts on the universe);
- crba: Pinocchio may fill only the upper triangle, so it is symmetrized before comparing.
"""

import functools
import glob
import os
import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import rbdgen  # noqa: E402
from rbdgen import reference as ref  # noqa: E402

from helpers import (REL_TOL_PINOCCHIO, ROBOTS, assert_close, pinocchio_model,  # noqa: E402
                     pin_fext, random_configuration, robot_path, robots_dir, to_pinocchio_q)

# panda and talos have <mimic> joints: rbdgen warns and treats them as independent.
pytestmark = pytest.mark.filterwarnings("ignore:.*<mimic> is ignored:UserWarning")

SEEDS = (0, 1, 2)
ROBOT_NAMES = sorted(ROBOTS)
REFERENCES = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}


@functools.lru_cache(maxsize=None)
def models(name):
    """(rbdgen model, Pinocchio model), loaded once per robot."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*<mimic> is ignored", category=UserWarning)
        warnings.filterwarnings("ignore", category=rbdgen.errors.InertiaWarning)  # allegro's fingers
        model = rbdgen.load_urdf(robot_path(name), floating_base=ROBOTS[name][1])
    return model, pinocchio_model(name)


class State:
    """A seeded random state: q (rbdgen and Pinocchio), v, a, tau and f_ext."""

    def __init__(self, model, seed):
        rng = np.random.default_rng(seed)
        self.q = random_configuration(model, rng)
        self.v = rng.normal(size=model.nv)
        self.a = rng.normal(size=model.nv)
        self.tau = rng.normal(size=model.nv)
        self.f_ext = rng.normal(size=(model.nbodies, 6))
        self.q_pin = to_pinocchio_q(model, self.q)


def pin_frame_id(pm, name):
    frame_id = pm.getFrameId(name, pin.FrameType.BODY)
    assert frame_id < pm.nframes, f"Pinocchio has no body frame {name!r}"
    return frame_id


def jacobian_frames(model):
    """A few links: the root, two in the middle, the last body and the last link of the tree."""
    names = [model.frames[0].name, model.frames[len(model.frames) // 3].name,
             model.frames[2 * len(model.frames) // 3].name, model.body_names[-1], model.frames[-1].name]
    return list(dict.fromkeys(names))


@pytest.fixture(params=ROBOT_NAMES)
def robot(request):
    return request.param


@pytest.fixture(params=SEEDS)
def seed(request):
    return request.param


@pytest.fixture
def setup(robot, seed):
    model, pm = models(robot)
    return model, pm, pm.createData(), State(model, seed)


# ------------------------------------------------------------------ structure --------------

@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_joint_names_and_sizes(name):
    model, pm = models(name)
    assert [j.name for j in model.joints] == list(pm.names)[1:]
    assert model.nv == pm.nv
    assert model.nbodies == pm.njoints - 1
    q = random_configuration(model, np.random.default_rng(0))
    assert to_pinocchio_q(model, q).shape == (pm.nq,)
    assert model.nq == pm.nq - sum(1 for j in model.joints if j.type == "continuous")
    # every URDF link is a frame, also in Pinocchio
    for frame in model.frames:
        pin_frame_id(pm, frame.name)


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_total_mass(name):
    model, pm = models(name)
    assert_close("total_mass", ref.total_mass(model), pin.computeTotalMass(pm), REL_TOL_PINOCCHIO)


# ------------------------------------------------------------------ dynamics ---------------

def test_rnea(setup):
    model, pm, pd, s = setup
    assert_close("rnea", ref.rnea(model, s.q, s.v, s.a), pin.rnea(pm, pd, s.q_pin, s.v, s.a), REL_TOL_PINOCCHIO)
    assert_close("rnea f_ext", ref.rnea(model, s.q, s.v, s.a, s.f_ext),
                 pin.rnea(pm, pd, s.q_pin, s.v, s.a, pin_fext(s.f_ext)), REL_TOL_PINOCCHIO)


def test_nle_and_gravity(setup):
    model, pm, pd, s = setup
    assert_close("nle", ref.nle(model, s.q, s.v), pin.nonLinearEffects(pm, pd, s.q_pin, s.v), REL_TOL_PINOCCHIO)
    assert_close("gravity", ref.gravity(model, s.q), pin.computeGeneralizedGravity(pm, pd, s.q_pin),
                 REL_TOL_PINOCCHIO)


def test_crba(setup):
    model, pm, pd, s = setup
    M = ref.crba(model, s.q)
    assert M.shape == (model.nv, model.nv)
    assert np.array_equal(M, M.T), "rbdgen's M is not exactly symmetric"
    Mp = np.array(pin.crba(pm, pd, s.q_pin))
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    assert_close("crba", M, Mp, REL_TOL_PINOCCHIO)


def test_aba(setup):
    model, pm, pd, s = setup
    if model.massless_joints():  # romeo: Pinocchio returns NaN, rbdgen says why
        assert np.isnan(pin.aba(pm, pd, s.q_pin, s.v, s.tau)).any()
        with pytest.raises(rbdgen.ModelError, match="moves no mass"):
            ref.aba(model, s.q, s.v, s.tau)
        return
    assert_close("aba", ref.aba(model, s.q, s.v, s.tau), pin.aba(pm, pd, s.q_pin, s.v, s.tau), REL_TOL_PINOCCHIO)
    assert_close("aba f_ext", ref.aba(model, s.q, s.v, s.tau, s.f_ext),
                 pin.aba(pm, pd, s.q_pin, s.v, s.tau, pin_fext(s.f_ext)), REL_TOL_PINOCCHIO)


# ------------------------------------------------------------------ kinematics -------------

def test_frame_placements(setup):
    model, pm, pd, s = setup
    pin.framesForwardKinematics(pm, pd, s.q_pin)
    for frame in model.frames:
        R, p = ref.frame_placement(model, s.q, frame.name)
        oMf = pd.oMf[pin_frame_id(pm, frame.name)]
        assert_close(f"frame_placement {frame.name} R", R, oMf.rotation, REL_TOL_PINOCCHIO)
        assert_close(f"frame_placement {frame.name} p", p, oMf.translation, REL_TOL_PINOCCHIO)


@pytest.mark.parametrize("reference", sorted(REFERENCES))
def test_frame_jacobians(setup, reference):
    model, pm, pd, s = setup
    for name in jacobian_frames(model):
        J = ref.frame_jacobian(model, s.q, name, reference)
        Jp = pin.computeFrameJacobian(pm, pd, s.q_pin, pin_frame_id(pm, name), REFERENCES[reference])
        assert_close(f"frame_jacobian {name} {reference}", J, Jp, REL_TOL_PINOCCHIO)


def test_last_link_is_checked():
    """The last link of the tree (the deepest frame added last) is among the Jacobian frames."""
    for name in ROBOT_NAMES:
        model, _ = models(name)
        assert model.frames[-1].name in jacobian_frames(model)


# ------------------------------------------------------------------ energy -----------------

def test_com_and_energies(setup):
    model, pm, pd, s = setup
    assert_close("com", ref.com(model, s.q), pin.centerOfMass(pm, pd, s.q_pin), REL_TOL_PINOCCHIO)
    assert_close("kinetic_energy", ref.kinetic_energy(model, s.q, s.v),
                 pin.computeKineticEnergy(pm, pd, s.q_pin, s.v), REL_TOL_PINOCCHIO)
    assert_close("potential_energy", ref.potential_energy(model, s.q),
                 pin.computePotentialEnergy(pm, pd, s.q_pin), REL_TOL_PINOCCHIO)
    assert np.ndim(ref.kinetic_energy(model, s.q, s.v)) == 0
    assert np.ndim(ref.potential_energy(model, s.q)) == 0


# ------------------------------------------------------------------ batches ----------------

B = 5
BATCH_FUNCTIONS = ["rnea", "rnea f_ext", "nle", "gravity", "crba", "aba", "aba f_ext", "frame_placement R",
                   "frame_placement p", "frame_jacobian local", "frame_jacobian world",
                   "frame_jacobian local_world_aligned", "com", "kinetic_energy", "potential_energy"]


def batch_call(model, what, q, v, a, tau, f_ext):
    """The reference function `what` on full arrays (batched) or on single rows."""
    frame = model.frames[-1].name
    if what.startswith("frame_jacobian"):
        return ref.frame_jacobian(model, q, frame, what.split()[1])
    if what.startswith("frame_placement"):
        R, p = ref.frame_placement(model, q, frame)
        return R if what.endswith("R") else p
    return {
        "rnea": lambda: ref.rnea(model, q, v, a),
        "rnea f_ext": lambda: ref.rnea(model, q, v, a, f_ext),
        "nle": lambda: ref.nle(model, q, v),
        "gravity": lambda: ref.gravity(model, q),
        "crba": lambda: ref.crba(model, q),
        "aba": lambda: ref.aba(model, q, v, tau),
        "aba f_ext": lambda: ref.aba(model, q, v, tau, f_ext),
        "com": lambda: ref.com(model, q),
        "kinetic_energy": lambda: ref.kinetic_energy(model, q, v),
        "potential_energy": lambda: ref.potential_energy(model, q),
    }[what]()


@pytest.mark.parametrize("what", BATCH_FUNCTIONS)
@pytest.mark.parametrize("name", ["double_pendulum_continuous", "panda", "solo12"])
def test_batch_equals_single_calls(name, what):
    """q of shape (B, nq) (and v, a, tau (B, nv), f_ext (B, njoints, 6)) gives (B, ...) = the single calls."""
    model, _ = models(name)
    rng = np.random.default_rng(42)
    q = random_configuration(model, rng, batch=B)
    v, a, tau = (rng.normal(size=(B, model.nv)) for _ in range(3))
    f_ext = rng.normal(size=(B, model.nbodies, 6))
    batched = batch_call(model, what, q, v, a, tau, f_ext)
    singles = np.stack([batch_call(model, what, *pick(k, q, v, a, tau, f_ext)) for k in range(B)])
    assert batched.shape == singles.shape, f"{what}: batch shape {batched.shape}, single calls stacked {singles.shape}"
    assert_close(f"{what} (batch)", batched, singles, 1e-13)


def pick(k, *arrays):
    """All arrays (k is None) or row k of each."""
    return arrays if k is None else tuple(x[k] for x in arrays)


# ------------------------------------------------------------------ bad shapes -------------

def test_wrong_shapes_raise_value_error():
    model, _ = models("panda")
    nq, nv, nb = model.nq, model.nv, model.nbodies
    q, v = np.zeros(nq), np.zeros(nv)
    bad_q, bad_v = np.zeros(nq - 1), np.zeros(nv + 1)
    frame = model.frames[-1].name
    bad_calls = {
        "rnea q": lambda: ref.rnea(model, bad_q, v, v),
        "rnea v": lambda: ref.rnea(model, q, bad_v, v),
        "rnea a": lambda: ref.rnea(model, q, v, bad_v),
        "nle q": lambda: ref.nle(model, bad_q, v),
        "nle v": lambda: ref.nle(model, q, bad_v),
        "gravity": lambda: ref.gravity(model, bad_q),
        "crba": lambda: ref.crba(model, bad_q),
        "crba 3-d": lambda: ref.crba(model, np.zeros((2, 2, nq))),
        "aba q": lambda: ref.aba(model, bad_q, v, v),
        "aba tau": lambda: ref.aba(model, q, v, bad_v),
        "frame_placement": lambda: ref.frame_placement(model, bad_q, frame),
        "frame_jacobian": lambda: ref.frame_jacobian(model, bad_q, frame),
        "com": lambda: ref.com(model, bad_q),
        "kinetic_energy q": lambda: ref.kinetic_energy(model, bad_q, v),
        "kinetic_energy v": lambda: ref.kinetic_energy(model, q, bad_v),
        "potential_energy": lambda: ref.potential_energy(model, bad_q),
        "batch q (B, nq-1)": lambda: ref.crba(model, np.zeros((3, nq - 1))),
        "batches disagree": lambda: ref.nle(model, np.zeros((3, nq)), np.zeros((4, nv))),
        "batch q, single v": lambda: ref.nle(model, np.zeros((3, nq)), v),
    }
    for what, call in bad_calls.items():
        with pytest.raises(ValueError, match="expected"):
            call()
        try:
            call()
        except ValueError as exc:
            assert "\n" not in str(exc), f"{what}: message is not one line"

    for shape in [(nb - 1, 6), (nb, 3), (6,), (nb * 6,), (nb, 6, 1), (2, 3, nb, 6)]:
        f_ext = np.zeros(shape)
        with pytest.raises(ValueError, match="expected"):
            ref.rnea(model, q, v, v, f_ext)
        with pytest.raises(ValueError, match="expected"):
            ref.aba(model, q, v, v, f_ext)
    # a batched f_ext whose batch disagrees with q's
    with pytest.raises(ValueError, match="expected"):
        ref.rnea(model, np.zeros((3, nq)), np.zeros((3, nv)), np.zeros((3, nv)), np.zeros((4, nb, 6)))


def test_unknown_frame_and_reference():
    model, _ = models("ur5")
    q = np.zeros(model.nq)
    with pytest.raises(ValueError, match="no_such_link"):
        ref.frame_placement(model, q, "no_such_link")
    with pytest.raises(ValueError, match="sideways"):
        ref.frame_jacobian(model, q, model.frames[-1].name, "sideways")


# ------------------------------------------------------------------ all of example-robot-data

def all_urdfs():
    root = robots_dir()
    return sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True))


# URDFs of example-robot-data that Pinocchio refuses: rbdgen may refuse them too (in one line).
PINOCCHIO_REFUSES = {os.path.join("ur_description", "urdf", "ur3.urdf")}  # an empty xacro stub


@pytest.mark.filterwarnings("ignore::UserWarning")  # invalid inertias and <mimic>, loaded as Pinocchio does
@pytest.mark.parametrize("relpath", all_urdfs())
def test_every_urdf_pinocchio_loads_loads_and_matches(relpath):
    """Fixed base, mimic joints independent (Pinocchio's defaults); rnea and crba at one seeded state."""
    path = os.path.join(robots_dir(), relpath)
    try:
        pm = pin.buildModelFromUrdf(path)
    except ValueError:
        assert relpath in PINOCCHIO_REFUSES, f"Pinocchio refuses {relpath}; check why, then list it"
        try:
            rbdgen.load_urdf(path)
        except rbdgen.URDFError as exc:
            assert "\n" not in str(exc)
        return
    assert relpath not in PINOCCHIO_REFUSES, f"Pinocchio now loads {relpath}"
    model = rbdgen.load_urdf(path)
    assert [j.name for j in model.joints] == list(pm.names)[1:]
    assert model.nv == pm.nv
    s = State(model, seed=len(relpath))
    assert s.q_pin.shape == (pm.nq,)
    pd = pm.createData()
    assert_close(f"{relpath} rnea", ref.rnea(model, s.q, s.v, s.a), pin.rnea(pm, pd, s.q_pin, s.v, s.a),
                 REL_TOL_PINOCCHIO)
    Mp = np.array(pin.crba(pm, pd, s.q_pin))
    M = ref.crba(model, s.q).reshape(model.nv, model.nv)  # reshape: with nv = 0 (iris) the reference gives (0,)
    assert_close(f"{relpath} crba", M, np.triu(Mp) + np.triu(Mp, 1).T, REL_TOL_PINOCCHIO)
