"""Mimic joints (issue 10) as Pinocchio 3+ models them (`mimic=True`).

A mimic joint has no coordinate of its own: q_mimic = multiplier * q_master + offset. Checked
against Pinocchio's mimic model (pin.buildModelFromUrdf(..., mimic=True)) for everything
Pinocchio computes with one: rnea (with external forces), nle, gravity, crba, frame placements,
frame Jacobians, frame velocities and accelerations, centre of mass and its velocity, the
centroidal momentum and its map. Pinocchio 4.1 refuses aba, computeMinverse and the energies on
a mimic model, and its computeCoriolisMatrix there does not satisfy C v = nle - g; those are
checked by identities instead (M M^-1 = 1, aba(rnea(a)) = a, tau = P^T tau_full, ...). Its crba
on a mimic model depends on what the Data held before, so it gets fresh Data.
"""

import functools
import os
import warnings

import numpy as np
import pytest

import rbdgen
from rbdgen import ModelBuilder, ModelError, URDFError
from rbdgen import reference as ref
from rbdgen.algorithms import mimic as mimic_algorithms
from rbdgen.algorithms import rnea as rnea_algorithm
from rbdgen.codegen.build import model_fingerprint
from rbdgen.errors import InertiaWarning
from rbdgen.model import Helical, Revolute
from rbdgen.model.mimic import expand_q, velocity_map, with_mimic
from rbdgen.model.urdf import model_from_urdf_string
from rbdgen.runtime.reference import OPS
from rbdgen.spatial import Inertia, Transform

from helpers import (REL_TOL_GENERATED, REL_TOL_IDENTITY, REL_TOL_PINOCCHIO, assert_close, random_state, robot_path,
                     pin_fext, robots_dir, to_pinocchio_q, write_urdf)

pin = pytest.importorskip("pinocchio")

SEEDS = (0, 1, 2)
FD_STEP = 1e-6          # central differences of M along v
FD_TOL = 1e-6           # their truncation and rounding error, relative
REFERENCES = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
IGNORED = "ignore:.*<mimic> is ignored:UserWarning"

# example-robot-data robots with <mimic> that Pinocchio loads with mimic=True (romeo's and alex's
# it refuses: a master after its mimic joint, a master that does not exist).
ROBOT_FILES = {"panda": robot_path("panda"),
               "baxter": os.path.join(robots_dir(), "baxter_description/urdf/baxter.urdf"),
               "pr2": os.path.join(robots_dir(), "pr2_description/urdf/pr2.urdf")}
CASES = {"panda": ("panda", False), "panda-floating": ("panda", True), "baxter": ("baxter", False),
         "pr2": ("pr2", False)}


def _lim():
    return '<limit effort="10" velocity="2" lower="-3" upper="3"/>'


def _link(name, mass=1.0):
    return (f'<link name="{name}"><inertial><origin xyz="0.05 -0.02 0.1" rpy="0.1 0.2 0.3"/><mass value="{mass}"/>'
            '<inertia ixx="0.02" iyy="0.03" izz="0.025" ixy="0.001" ixz="-0.002" iyz="0.003"/></inertial></link>')


def _joint(name, jtype, parent, child, axis, xyz="0.1 0.05 0.2", mimic=""):
    limit = _lim() if jtype in ("revolute", "prismatic") else ""
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="0.3 -0.2 0.1"/><axis xyz="{axis}"/>{limit}{mimic}</joint>')


def offsets_urdf():
    """Offsets, a prismatic joint mimicking a revolute one, continuous mimicking continuous, a body
    below a mimic joint and a <mimic> on a fixed joint (ignored, as by Pinocchio)."""
    return "<robot name='offsets'>" + "".join([
        _link("base"), _link("arm"), _link("slider", 0.7), _link("under_slider", 0.4), _link("wheel_a", 0.3),
        _link("wheel_b", 0.3), _link("tool", 0.2),
        _joint("a_shoulder", "revolute", "base", "arm", "0 0 1"),
        _joint("b_slide", "prismatic", "arm", "slider", "1 0 0",
               mimic='<mimic joint="a_shoulder" multiplier="1.5" offset="0.3"/>'),
        _joint("c_under", "revolute", "slider", "under_slider", "0 1 0"),
        _joint("d_wheel", "continuous", "arm", "wheel_a", "0 1 0"),
        _joint("e_wheel", "continuous", "arm", "wheel_b", "0 1 0",
               mimic='<mimic joint="d_wheel" multiplier="-2" offset="0.1"/>'),
        '<joint name="f_tool" type="fixed"><parent link="under_slider"/><child link="tool"/>'
        '<origin xyz="0 0 0.1"/><mimic joint="a_shoulder"/></joint>']) + "</robot>"


def late_master_urdf():
    """A mimic joint before its master in the joint order (children by name): Pinocchio refuses
    this ("not in the kinematic tree"), rbdgen takes it."""
    return "<robot name='late'>" + "".join([
        _link("base"), _link("arm"), _link("left"), _link("right"),
        _joint("arm_joint", "revolute", "base", "arm", "0 0 1"),
        _joint("finger_follow", "revolute", "arm", "left", "0 1 0",
               mimic='<mimic joint="grip" multiplier="-0.5" offset="0.2"/>'),
        _joint("grip", "revolute", "arm", "right", "1 0 0")]) + "</robot>"


@functools.lru_cache(maxsize=None)
def load(name, floating):
    """(rbdgen mimic model, Pinocchio mimic model), loaded once."""
    path = ROBOT_FILES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaWarning)  # pr2's sensor mount
        model = rbdgen.load_urdf(path, floating_base=floating, mimic=True)
    args = [path] + ([pin.JointModelFreeFlyer()] if floating else [])
    return model, pin.buildModelFromUrdf(*args, mimic=True)


@functools.lru_cache(maxsize=None)
def load_offsets(floating):
    model = model_from_urdf_string(offsets_urdf(), floating_base=floating, mimic=True)
    args = [offsets_urdf()] + ([pin.JointModelFreeFlyer()] if floating else [])
    return model, pin.buildModelFromXML(*args, mimic=True)


def state(model, seed):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    return q, v, a, rng.normal(size=(model.nbodies, 6))


def pin_crba(pm, qp):
    """Pinocchio's M, symmetrized from its upper triangle, on fresh Data: with mimic joints its
    crba (4.1) depends on what the Data held before (a second call can differ)."""
    M = pin.crba(pm, pm.createData(), qp)
    return np.triu(M) + np.triu(M, 1).T


def frame_id(pm, name):
    return pm.getFrameId(name, pin.FrameType.BODY)


def mimic_frames(model):
    """Frames on bodies a mimic joint moves, and a few others."""
    moved = [f.name for f in model.frames if f.body >= 0 and any(model.joints[j].type == "mimic"
                                                                   for j in model.support(f.body))]
    return list(dict.fromkeys(moved + [model.frames[0].name, model.frames[len(model.frames) // 2].name,
                                       model.frames[-1].name]))


def full_state(model, q, v, a=None):
    """The tree's state: q_full, P v, P a."""
    P = np.array(velocity_map(model))
    return np.array(expand_q(model, list(q))), P @ v, None if a is None else P @ a


@pytest.fixture(params=sorted(CASES))
def case(request):
    return CASES[request.param]


# ------------------------------------------------------------------ structure ---------------

def test_structure_matches_pinocchio(case):
    """Joint order, names, nv, each joint's idx_v and nv (a mimic joint: nv 0 and its master's
    idx_v), nq (through Pinocchio's (cos, sin) of continuous joints), the tree's nv."""
    model, pm = load(*case)
    assert [j.name for j in model.joints] == list(pm.names)[1:]
    assert model.nv == pm.nv and model.nbodies == pm.njoints - 1 and model.full.nv == pm.nvExtended
    for joint, pj in zip(model.joints, list(pm.joints)[1:]):
        assert (joint.idx_v, joint.nv) == (pj.idx_v, pj.nv), joint.name
        assert (joint.type == "mimic") == (pj.shortname() == "JointModelMimic"), joint.name
    q, v, a = random_state(model, np.random.default_rng(0))
    assert q.shape == (model.nq,) and v.shape == a.shape == (model.nv,)
    assert to_pinocchio_q(model, q).shape == (pm.nq,)
    mimics = [j for j in model.joints if j.type == "mimic"]
    assert mimics and all(j.nq == j.nv == 0 for j in mimics)
    for j in mimics:
        master = next(m for m in model.joints if m.name == j.model.master)
        assert (j.idx_q, j.idx_v) == (master.idx_q, master.idx_v)


# ------------------------------------------------------------------ against Pinocchio -------

@pytest.mark.parametrize("seed", SEEDS)
def test_dynamics_match_pinocchio(case, seed):
    model, pm = load(*case)
    pd = pm.createData()
    q, v, a, f_ext = state(model, seed)
    qp = to_pinocchio_q(model, q)
    assert_close("rnea", ref.rnea(model, q, v, a), pin.rnea(pm, pd, qp, v, a), REL_TOL_PINOCCHIO)
    assert_close("rnea f_ext", ref.rnea(model, q, v, a, f_ext), pin.rnea(pm, pd, qp, v, a, pin_fext(f_ext)),
                 REL_TOL_PINOCCHIO)
    assert_close("nle", ref.nle(model, q, v), pin.nonLinearEffects(pm, pd, qp, v), REL_TOL_PINOCCHIO)
    assert_close("gravity", ref.gravity(model, q), pin.computeGeneralizedGravity(pm, pd, qp), REL_TOL_PINOCCHIO)
    assert_close("crba", ref.crba(model, q), pin_crba(pm, qp), REL_TOL_PINOCCHIO)
    assert_close("com", ref.com(model, q), pin.centerOfMass(pm, pd, qp, v), REL_TOL_PINOCCHIO)
    assert_close("com_velocity", ref.com_velocity(model, q, v), pd.vcom[0], REL_TOL_PINOCCHIO)
    assert_close("centroidal_momentum", ref.centroidal_momentum(model, q, v),
                 pin.computeCentroidalMomentum(pm, pd, qp, v).vector, REL_TOL_PINOCCHIO)
    assert_close("centroidal_map", ref.centroidal_map(model, q), pin.computeCentroidalMap(pm, pd, qp),
                 REL_TOL_PINOCCHIO)
    assert_close("total_mass", ref.total_mass(model), pin.computeTotalMass(pm), REL_TOL_PINOCCHIO)


def test_kinematics_match_pinocchio(case):
    """Every frame's placement; Jacobians in the three references, velocity and classical
    acceleration of frames moved by mimic joints (and a few others)."""
    model, pm = load(*case)
    pd = pm.createData()
    q, v, a, _ = state(model, 7)
    qp = to_pinocchio_q(model, q)
    pin.forwardKinematics(pm, pd, qp, v, a)
    pin.updateFramePlacements(pm, pd)
    pin.computeJointJacobians(pm, pd, qp)
    for frame in model.frames:
        R, p = ref.frame_placement(model, q, frame.name)
        placement = pd.oMf[frame_id(pm, frame.name)]
        assert_close(f"R {frame.name}", R, placement.rotation, REL_TOL_PINOCCHIO)
        assert_close(f"p {frame.name}", p, placement.translation, REL_TOL_PINOCCHIO)
    for name in mimic_frames(model):
        fid = frame_id(pm, name)
        for reference, pin_reference in REFERENCES.items():
            assert_close(f"J {name} {reference}", ref.frame_jacobian(model, q, name, reference),
                         pin.getFrameJacobian(pm, pd, fid, pin_reference), REL_TOL_PINOCCHIO)
        origin = np.zeros(3)
        assert_close(f"point velocity {name}", ref.point_velocity(model, q, v, name, origin),
                     pin.getFrameVelocity(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).linear, REL_TOL_PINOCCHIO)
        assert_close(f"point acceleration {name}", ref.point_acceleration(model, q, v, a, name, origin),
                     pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).linear,
                     REL_TOL_PINOCCHIO)
        assert_close(f"point jacobian {name}", ref.point_jacobian(model, q, name, origin),
                     pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)[:3], REL_TOL_PINOCCHIO)


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
def test_offsets_and_mixed_types_match_pinocchio(floating):
    """multiplier 1.5 and offset 0.3 (prismatic following a revolute joint), continuous joints
    (-2, 0.1), a body below a mimic joint, a <mimic> on a fixed joint."""
    model, pm = load_offsets(floating)
    assert model.nv == pm.nv == model.full.nv - 2
    pd = pm.createData()
    for seed in SEEDS:
        q, v, a, f_ext = state(model, seed)
        qp = to_pinocchio_q(model, q)
        assert_close("rnea", ref.rnea(model, q, v, a, f_ext), pin.rnea(pm, pd, qp, v, a, pin_fext(f_ext)),
                     REL_TOL_PINOCCHIO)
        assert_close("crba", ref.crba(model, q), pin_crba(pm, qp), REL_TOL_PINOCCHIO)
        assert_close("com", ref.com(model, q), pin.centerOfMass(pm, pd, qp), REL_TOL_PINOCCHIO)
        pin.computeJointJacobians(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        for frame in model.frames:
            fid = frame_id(pm, frame.name)
            R, p = ref.frame_placement(model, q, frame.name)
            assert_close(f"R {frame.name}", R, pd.oMf[fid].rotation, REL_TOL_PINOCCHIO)
            assert_close(f"p {frame.name}", p, pd.oMf[fid].translation, REL_TOL_PINOCCHIO)
            for reference, pin_reference in REFERENCES.items():
                assert_close(f"J {frame.name} {reference}", ref.frame_jacobian(model, q, frame.name, reference),
                             pin.getFrameJacobian(pm, pd, fid, pin_reference), REL_TOL_PINOCCHIO)


# ------------------------------------------------------------------ identities --------------

def check_identities(model, seed, christoffel=True):
    """What Pinocchio does not compute on a mimic model, against the tree (model.full) at the
    expanded state and against algebra."""
    q, v, a, f_ext = state(model, seed)
    qf, vf, af = full_state(model, q, v, a)
    P = np.array(velocity_map(model))
    tree = model.full
    M = ref.crba(model, q)
    tau = ref.rnea(model, q, v, a)
    assert_close("tau = P^T tau_full", tau, P.T @ ref.rnea(tree, qf, vf, af), REL_TOL_IDENTITY)
    assert_close("tau f_ext = P^T tau_full", ref.rnea(model, q, v, a, f_ext),
                 P.T @ ref.rnea(tree, qf, vf, af, f_ext), REL_TOL_IDENTITY)
    assert_close("M = P^T M_full P", M, P.T @ ref.crba(tree, qf) @ P, REL_TOL_IDENTITY)
    assert np.array_equal(M, M.T), "crba is not exactly symmetric"
    assert_close("tau = M a + nle", tau, M @ a + ref.nle(model, q, v), REL_TOL_IDENTITY)
    Minv = ref.minv(model, q)
    assert np.array_equal(Minv, Minv.T), "minv is not exactly symmetric"
    assert_close("M minv = 1", M @ Minv, np.eye(model.nv), REL_TOL_IDENTITY)
    assert_close("aba(rnea(a)) = a", ref.aba(model, q, v, tau), a, REL_TOL_IDENTITY)
    assert_close("aba(rnea(a, f), f) = a", ref.aba(model, q, v, ref.rnea(model, q, v, a, f_ext), f_ext), a,
                 REL_TOL_IDENTITY)
    assert_close("fd_crba(rnea(a)) = a", ref.fd_crba(model, q, v, tau), a, REL_TOL_IDENTITY)
    assert_close("minv_times(M a) = a", ref.minv_times(model, q, M @ a), a, REL_TOL_IDENTITY)
    C = ref.coriolis(model, q, v)
    assert_close("C = P^T C_full P", C, P.T @ ref.coriolis(tree, qf, vf) @ P, REL_TOL_IDENTITY)
    assert_close("C v = nle - g", C @ v, ref.nle(model, q, v) - ref.gravity(model, q), REL_TOL_IDENTITY)
    if christoffel:
        assert_close("sum_k Gamma v_k = C", np.einsum("ijk,k->ij", ref.christoffel(model, q), v), C, REL_TOL_IDENTITY)
    assert_close("kinetic energy", ref.kinetic_energy(model, q, v), 0.5 * v @ M @ v, REL_TOL_IDENTITY)
    assert_close("potential energy", ref.potential_energy(model, q), ref.potential_energy(tree, qf), REL_TOL_IDENTITY)
    assert_close("spatial momentum", ref.spatial_momentum(model, q, v), ref.spatial_momentum(tree, qf, vf),
                 REL_TOL_IDENTITY)
    assert_close("body motion", ref.body_motion(model, q, v, a), ref.body_motion(tree, qf, vf, af), REL_TOL_IDENTITY)
    for name in mimic_frames(model):
        assert_close(f"J {name} = J_full P", ref.frame_jacobian(model, q, name, "local"),
                     ref.frame_jacobian(tree, qf, name, "local") @ P, REL_TOL_IDENTITY)


def test_identities(case):
    model, _ = load(*case)
    for seed in SEEDS:
        check_identities(model, seed, christoffel=model.full.nv <= 20)


def test_contact_dynamics():
    """A point contact on the right finger (moved by the mimic joint): G a = gamma and
    M a = tau - nle + G^T lambda in the model's coordinates."""
    model, _ = load("panda", False)
    q, v, _, _ = state(model, 3)
    tau = np.random.default_rng(4).normal(size=model.nv)
    contacts = [("panda_rightfinger", np.array([0.0, 0.01, 0.04]), None)]
    qdd, lam = ref.contact_dynamics(model, q, v, tau, contacts)
    G = ref.point_jacobian(model, q, *contacts[0][:2])
    gamma = ref.point_gamma(model, q, v, *contacts[0][:2])
    assert_close("G a = gamma", G @ qdd, gamma, REL_TOL_IDENTITY)
    assert_close("M a = tau - nle + G^T lambda", ref.crba(model, q) @ qdd,
                 tau - ref.nle(model, q, v) + G.T @ lam, REL_TOL_IDENTITY)


def test_coriolis_is_christoffel_consistent():
    """M-dot - 2C is skew (M-dot by central differences along v; panda: v = q-dot). Pinocchio
    4.1's computeCoriolisMatrix on a mimic model breaks C v = nle - g, so it is not the oracle."""
    model, _ = load("panda", False)
    q, v, _, _ = state(model, 5)
    M_dot = (ref.crba(model, q + FD_STEP * v) - ref.crba(model, q - FD_STEP * v)) / (2 * FD_STEP)
    S = M_dot - 2 * ref.coriolis(model, q, v)
    assert_close("M-dot - 2C skew", S + S.T, np.zeros_like(S), FD_TOL)


def test_master_after_its_mimic_joint():
    """Pinocchio refuses a master after its mimic joint; rbdgen takes it: the mimic joint gets
    the (later) master's indices and every quantity is the tree's at the expanded state."""
    model = model_from_urdf_string(late_master_urdf(), mimic=True)
    names = [j.name for j in model.joints]
    follow, grip = model.joints[names.index("finger_follow")], model.joints[names.index("grip")]
    assert names.index("finger_follow") < names.index("grip")
    assert (follow.type, follow.idx_q, follow.idx_v) == ("mimic", grip.idx_q, grip.idx_v)
    assert (model.nq, model.nv, model.full.nv) == (2, 2, 3)
    q = np.array([0.4, -0.7])
    assert_close("q_full", expand_q(model, list(q)), [0.4, -0.5 * -0.7 + 0.2, -0.7], 0.0)
    for seed in SEEDS:
        check_identities(model, seed)


# ------------------------------------------------------------------ without mimic=True ------

def test_without_mimic_joints_are_independent_with_a_warning():
    path = ROBOT_FILES["panda"]
    with pytest.warns(UserWarning, match=r"joint 'panda_finger_joint2': <mimic> is ignored; the joint is treated "
                                         r"as independent"):
        model = rbdgen.load_urdf(path)
    assert (model.nq, model.nv, model.has_mimic) == (9, 9, False)
    assert model.full is model and velocity_map(model) is None
    assert all(j.type != "mimic" for j in model.joints)
    q, v, a, _ = state(model, 0)
    qs = list(q)
    assert expand_q(model, qs) is qs
    assert mimic_algorithms.rnea(model, OPS, qs, list(v), list(a)) == rnea_algorithm.rnea(model, OPS, qs, list(v),
                                                                                           list(a))
    pm = pin.buildModelFromUrdf(path)
    pd = pm.createData()
    assert_close("rnea (independent fingers)", ref.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a), REL_TOL_PINOCCHIO)


def test_mimic_model_loads_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = rbdgen.load_urdf(ROBOT_FILES["panda"], mimic=True)
    assert (model.nq, model.nv, model.full.nv) == (8, 8, 9)


# ------------------------------------------------------------------ bad input ---------------

def _two_joints(mimic, second_type="revolute", first_type="revolute"):
    return "<robot name='bad'>" + "".join([
        _link("base"), _link("one"), _link("two"), _link("three"),
        _joint("first", first_type, "base", "one", "0 0 1"),
        _joint("second", second_type, "one", "two", "0 1 0", mimic=mimic),
        '<joint name="bolt" type="fixed"><parent link="two"/><child link="three"/></joint>']) + "</robot>"


BAD = {
    "unknown master": (_two_joints('<mimic joint="nope"/>'),
                       "joint 'second' <mimic joint='nope'>: the robot has no moving joint of that name; "
                       "name the joint it follows"),
    "itself": (_two_joints('<mimic joint="second"/>'), "a joint cannot mimic itself"),
    "no joint attribute": (_two_joints('<mimic multiplier="2"/>'), "joint 'second' <mimic>: no joint="),
    "fixed master": (_two_joints('<mimic joint="bolt"/>'), "joint 'bolt' is fixed, so there is no coordinate"),
    "nan multiplier": (_two_joints('<mimic joint="first" multiplier="nan"/>'), "multiplier='nan' must be one finite"),
    "inf offset": (_two_joints('<mimic joint="first" offset="-inf"/>'), "offset='-inf' must be one finite"),
    "text multiplier": (_two_joints('<mimic joint="first" multiplier="two"/>'), "multiplier='two' must be one"),
    "two numbers": (_two_joints('<mimic joint="first" offset="1 2"/>'), "offset='1 2' must be one finite"),
    "two mimic elements": (_two_joints('<mimic joint="first"/><mimic joint="first"/>'),
                           "joint 'second' has two <mimic> elements; keep one"),
    "planar mimic": (_two_joints('<mimic joint="first"/>', second_type="planar"),
                     "the mimic joint 'second' is planar with nq=3, nv=3; mimic joints and their masters need one "
                     "coordinate"),
    "planar master": (_two_joints('<mimic joint="first"/>', first_type="planar"),
                      "the master joint 'first' is planar with nq=3, nv=3"),
    "floating master": (_two_joints('<mimic joint="first"/>', first_type="floating"),
                        "the master joint 'first' is free_flyer with nq=7, nv=6"),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_bad_mimic_is_a_one_line_urdf_error(what):
    text, message = BAD[what]
    with pytest.raises(URDFError) as info:
        model_from_urdf_string(text, mimic=True)
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)
    with pytest.warns(UserWarning, match="<mimic> is ignored"):   # without mimic=True: today's behaviour
        model_from_urdf_string(text)


def test_chains_are_refused():
    """A master that is itself a mimic joint (Pinocchio refuses chains too)."""
    text = "<robot name='chain'>" + "".join([
        _link("base"), _link("one"), _link("two"), _link("three"),
        _joint("first", "revolute", "base", "one", "0 0 1"),
        _joint("second", "revolute", "one", "two", "0 1 0", mimic='<mimic joint="first" multiplier="2"/>'),
        _joint("third", "revolute", "two", "three", "1 0 0", mimic='<mimic joint="second"/>')]) + "</robot>"
    with pytest.raises(URDFError, match=r"^joint 'third' <mimic joint='second'>: 'second' is itself a mimic joint "
                                        r"\(of 'first'\); mimic 'first' directly"):
        model_from_urdf_string(text, mimic=True)


def test_long_and_odd_names_stay_one_line():
    name = "x\n" * 300
    text = _two_joints(f'<mimic joint="{name.replace(chr(10), "&#10;")}"/>')
    with pytest.raises(URDFError) as info:
        model_from_urdf_string(text, mimic=True)
    assert "\n" not in str(info.value) and len(str(info.value)) < 400


def test_with_mimic_in_python():
    """rbdgen.model.mimic.with_mimic on a builder model (helical joints have one coordinate too)."""
    b = ModelBuilder("helix")
    inertia = Inertia.from_com(1.0, (0.1, 0.0, 0.05), ((0.02, 0, 0), (0, 0.03, 0), (0, 0, 0.025)))
    first = b.add_body(-1, Helical((0, 0, 1), 0.05), "screw", "nut", inertia=inertia)
    b.add_body(first, Revolute((1, 0, 0)), "follow", "flap", X_T=Transform(r=(0.2, 0, 0)), inertia=inertia)
    plain = b.finish()
    model = with_mimic(plain, {"follow": ("screw", -0.5, 0.25)})
    assert (model.nq, model.nv, plain.nv) == (1, 1, 2)
    check_identities(model, 0)
    for bad, message in (({"follow": ("screw", float("nan"), 0.0)}, "multiplier nan is not a finite number"),
                         ({"follow": ("screw", 1.0, True)}, "offset True is not a finite number"),
                         ({"nut": ("screw", 1.0, 0.0)}, "the robot has no moving joint 'nut'")):
        with pytest.raises(ModelError, match=message):
            with_mimic(plain, bad)
    with pytest.raises(ModelError, match="already has mimic joints"):
        with_mimic(model, {"screw": ("follow", 1.0, 0.0)})
    with pytest.raises(ModelError, match="has no coordinate of its own"):
        rnea_algorithm.rnea(model, OPS, [0.1], [0.2], [0.3])   # the algorithms run on model.full


def test_massless_joints_follow_the_coordinates():
    """A massless master whose mimic joint moves mass: M is regular (forward dynamics works);
    without mimic=True the master's coordinate moves nothing."""
    text = "<robot name='massless'>" + "".join([
        _link("base"), '<link name="one"/>', _link("two"),
        _joint("first", "revolute", "base", "one", "0 0 1"),
        _joint("second", "revolute", "base", "two", "0 1 0", mimic='<mimic joint="first" multiplier="2"/>')]) + \
        "</robot>"
    with pytest.warns(UserWarning, match="<mimic> is ignored"):
        assert model_from_urdf_string(text).massless_joints() == ["first"]
    model = model_from_urdf_string(text, mimic=True)
    assert model.massless_joints() == []
    check_identities(model, 1)


def test_fingerprint_covers_mimic_joints():
    """The build key sees mimic joints, their multipliers, and is the same for two loads."""
    def fingerprint(text, mimic=True):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*<mimic> is ignored")
            return model_fingerprint(model_from_urdf_string(text, mimic=mimic))
    text = offsets_urdf()
    assert fingerprint(text) == fingerprint(text)
    assert fingerprint(text) != fingerprint(text, mimic=False)
    assert fingerprint(text) != fingerprint(text.replace('multiplier="1.5"', 'multiplier="1.25"'))
    assert fingerprint(text) != fingerprint(text.replace('offset="0.3"', 'offset="0.35"'))
    assert fingerprint(text) != fingerprint(text.replace('<axis xyz="1 0 0"/>', '<axis xyz="0 1 0"/>', 1))


# ------------------------------------------------------------------ generated modules -------

GENERATED = ["rnea", "rnea_fext", "crba", "aba", "minv", "com", "frame_placement"]


@pytest.fixture(scope="module")
def panda_module(tmp_path_factory):
    return rbdgen.build(ROBOT_FILES["panda"], out_dir=str(tmp_path_factory.mktemp("mimic")), mimic=True,
                        algorithms=GENERATED)


def test_generated_module_matches_reference(panda_module):
    module = panda_module
    model, _ = load("panda", False)
    assert (module.nq, module.nv) == (8, 8)
    assert module.joint_names == tuple(j.name for j in model.joints)
    for seed in SEEDS:
        q, v, a, f_ext = state(model, seed)
        assert_close("rnea", module.rnea(q, v, a), ref.rnea(model, q, v, a), REL_TOL_GENERATED)
        assert_close("rnea f_ext", module.rnea(q, v, a, f_ext), ref.rnea(model, q, v, a, f_ext), REL_TOL_GENERATED)
        assert_close("crba", module.crba(q), ref.crba(model, q), REL_TOL_GENERATED)
        assert_close("aba", module.aba(q, v, a), ref.aba(model, q, v, a), REL_TOL_GENERATED)
        assert_close("minv", module.minv(q), ref.minv(model, q), REL_TOL_GENERATED)
        assert_close("com", module.com(q), ref.com(model, q), REL_TOL_GENERATED)
        for name in mimic_frames(model):
            for x, y in zip(module.frame_placement(q, name), ref.frame_placement(model, q, name)):
                assert_close(f"placement {name}", x, y, REL_TOL_GENERATED)
    q, v, a = random_state(model, np.random.default_rng(9), batch=5)
    assert_close("aba batch", module.aba(q, v, a), ref.aba(model, q, v, a), REL_TOL_GENERATED)


def test_generated_jacobians_with_offsets(tmp_path):
    """Offsets and a body below a mimic joint in C: frame Jacobians (J_full P) in the three
    references; `jacobians` is the tree's joint axes, 6 x nv_full (Pinocchio's data.J)."""
    model, _ = load_offsets(False)
    path = write_urdf(tmp_path, offsets_urdf(), "offsets.urdf")
    algorithms = ["rnea", "aba", "jacobians", "frame_placement"] + [f"frame_jacobian_{r}" for r in REFERENCES]
    module = rbdgen.build(path, out_dir=str(tmp_path / "out"), mimic=True, algorithms=algorithms)
    assert module.jacobians(np.zeros(model.nq)).shape == (6, model.full.nv)
    for seed in SEEDS:
        q, v, a, _ = state(model, seed)
        assert_close("aba", module.aba(q, v, a), ref.aba(model, q, v, a), REL_TOL_GENERATED)
        for frame in model.frames:
            for reference in REFERENCES:
                assert_close(f"J {frame.name} {reference}", module.frame_jacobian(q, frame.name, reference),
                             ref.frame_jacobian(model, q, frame.name, reference), REL_TOL_GENERATED)
