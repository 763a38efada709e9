"""The advanced algorithms: Coriolis matrix, Christoffel symbols, M^-1, M^-1 tau, LTDL forward
dynamics, momentum, body motion, points, contacts and impacts.

1. rbdgen.reference against Pinocchio on real robots (example-robot-data), 2 states each.
2. Identities of the reference on the robots and on seeded random trees (every joint type,
   fixed and floating base): the algorithms against each other, against dense linear
   algebra and against central finite differences along q(t) = integrate(q, t v).
3. Generated modules (ur5, solo12 and two random trees, fixed and floating, that between
   them have every joint type) against the reference, function by function.
4. The Christoffel program of a branched tree costs well under that of a chain.

Conventions bridged for Pinocchio (see also test_reference_pinocchio.py): continuous joints
are (cos, sin) there (helpers.to_pinocchio_q); computeMinverse fills the upper triangle only;
a contact point p (frame coordinates) on frame f is Pinocchio's RigidConstraintModel on
f's parent joint at placement frames[f].placement * SE3(1, p), LOCAL_WORLD_ALIGNED.
"""

import functools
import os
import time
import warnings
import zlib

import numpy as np
import pytest

import rbdgen
from helpers import (REL_TOL_GENERATED, REL_TOL_IDENTITY, REL_TOL_PINOCCHIO, ROBOTS, assert_close,
                     pinocchio_model, random_configuration, robot_path, to_pinocchio_q)
from rbdgen import ModelBuilder
from rbdgen import reference as ref
from rbdgen.bindings.contact import point_placement
from rbdgen.algorithms.frames import placement_entries
from rbdgen.model.joints import Revolute
from trees import (ALL_JOINT_TYPES, QDOT_IS_V, integrate, random_inertia, random_transform,
                   random_tree, random_unit_vector)

# panda and talos have <mimic> joints: rbdgen warns and treats them as independent.
pytestmark = pytest.mark.filterwarnings("ignore:.*<mimic> is ignored:UserWarning")

FD_STEP = 1e-6          # central differences
FD_TOL = 1e-7           # central differences (observed errors <= 8e-10: roundoff eps |M| / FD_STEP)
DAMPING = 1e-6          # damped least squares for redundant contacts
DAMPED_TOL = 1e-3       # damped solution vs the undamped one of the non-redundant contacts
DAMPED_IDENTITY_TOL = 1e-7  # exact identities of damped solves: (A + damping 1) has condition ~ |A| / damping
MIN_CONTACT_EIGENVALUE = 5e-3  # 1/kg: effective masses below 200 kg (DAMPING / this = 2e-4)
STATES = (0, 1)         # two states per model everywhere

# Robots with an invertible M (romeo's is singular: left out).
ROBOT_NAMES = ["ur5", "panda", "solo12", "anymal", "talos"]
# 3-D contacts compared with Pinocchio's constrained dynamics and impulses.
ROBOT_CONTACT_FRAMES = {"ur5": ["tool0"], "panda": ["panda_hand_tcp"], "solo12": ["FL_FOOT", "HR_FOOT"],
                        "anymal": ["LF_FOOT", "RH_FOOT"], "talos": ["left_sole_link", "right_sole_link"]}


def skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def central_difference(fn, step=FD_STEP):
    """d/dt fn(t) at t = 0."""
    return (np.asarray(fn(step)) - np.asarray(fn(-step))) / (2 * step)


def assert_zero(name, actual, scale, rel_tol):
    """|actual| <= rel_tol * max(scale, 1): a residual that should vanish, relative to the size
    of the terms it is made of."""
    assert_close(name, actual, np.zeros_like(np.asarray(actual, dtype=float)), rel_tol, abs_floor=max(1.0, scale))


# ====================================================================== models and states ===

@functools.lru_cache(maxsize=None)
def robot_model(name):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*<mimic> is ignored", category=UserWarning)
        return rbdgen.load_urdf(robot_path(name), floating_base=ROBOTS[name][1])


# Random trees: (id, seed, nbodies, joint types, floating base, branched). The "mixed" ones
# have every joint type (random_tree puts each kind once when there is room: 10 moving
# bodies besides the free-flyer); the single-kind ones isolate each joint.
TREES = [
    ("mixed-tree-fixed", 501, len(ALL_JOINT_TYPES) + 1, ALL_JOINT_TYPES, False, True),
    ("mixed-chain-fixed", 502, len(ALL_JOINT_TYPES), ALL_JOINT_TYPES, False, False),
    ("mixed-tree-floating", 503, len(ALL_JOINT_TYPES) + 2, ALL_JOINT_TYPES, True, True),
    ("mixed-chain-floating", 504, len(ALL_JOINT_TYPES) + 1, ALL_JOINT_TYPES, True, False),
    ("qdot_is_v-chain-fixed", 505, 7, QDOT_IS_V, False, False),
    ("qdot_is_v-tree-fixed", 506, 9, QDOT_IS_V, False, True),
    # several bodies hang from the world: algorithms that work in the root body's frame fall back
    ("mixed-forest-fixed", 507, len(ALL_JOINT_TYPES) + 1, ALL_JOINT_TYPES, False, True, 3),
]
for _k, _kind in enumerate(ALL_JOINT_TYPES):
    TREES.append((f"{_kind}-chain-fixed", 600 + _k, 4, (_kind,), False, False))
    TREES.append((f"{_kind}-tree-floating", 700 + _k, 4, (_kind,), True, True))
TREE_IDS = [t[0] for t in TREES]
assert {k for t in TREES if t[0].startswith("mixed") for k in t[3]} == set(ALL_JOINT_TYPES)

MODEL_IDS = ROBOT_NAMES + TREE_IDS


@functools.lru_cache(maxsize=None)
def tree_model(case_id):
    _, seed, nbodies, kinds, floating, branched, *roots = next(t for t in TREES if t[0] == case_id)
    return random_tree(seed, nbodies, kinds, floating_base=floating, branched=branched, roots=(roots or [1])[0])


def model_for(model_id):
    return robot_model(model_id) if model_id in ROBOTS else tree_model(model_id)


def qdot_is_v(model):
    return all(j.type in QDOT_IS_V for j in model.joints)


class State:
    """A seeded random state (q, v, a, tau) of a model, with a generator for further draws."""

    def __init__(self, model, key, seed):
        self.rng = np.random.default_rng([zlib.crc32(key.encode()), seed])
        self.q = random_configuration(model, self.rng)
        self.v = self.rng.uniform(-2, 2, model.nv)
        self.a = self.rng.uniform(-2, 2, model.nv)
        self.tau = self.rng.uniform(-5, 5, model.nv)


def depth(model, body):
    return len(model.support(body)) if body >= 0 else 0


def pick_frames(model):
    """A few frames: the deepest, one in the middle, the last one, a fixed body (trees) and the
    world-fixed frame if any (its Jacobian is zero)."""
    frames = list(model.frames)
    deepest = max(frames, key=lambda f: depth(model, f.body))
    picks = [deepest, frames[len(frames) // 2], frames[-1]]
    picks += [f for f in frames if f.name.startswith("fixed")][:1]
    picks += [f for f in frames if f.body < 0][:1]
    return list(dict.fromkeys(f.name for f in picks))


def pick_contacts(model, q, rng, count=3):
    """Up to `count` well-conditioned contacts on distinct bodies, deepest first: a 3-D point
    contact, then a 1-D one along a random world normal, then 3-D again, each kept only if the
    stacked constraint Jacobian stays well conditioned."""
    candidates = sorted((f for f in model.frames if f.body >= 0), key=lambda f: -depth(model, f.body))
    contacts, rows, used = [], [], set()
    for frame in candidates:
        if len(contacts) == count or frame.body in used:
            continue
        point = rng.uniform(-0.1, 0.1, 3)
        normal = random_unit_vector(rng) if len(contacts) % 2 == 1 else None
        J = ref.point_jacobian(model, q, frame.name, point)
        G = J if normal is None else normal[None, :] @ J
        stacked = np.vstack(rows + [G])
        s = np.linalg.svd(stacked, compute_uv=False)
        if stacked.shape[0] > model.nv or s[-1] < 1e-2 * s[0]:
            continue
        contacts.append((frame.name, point, normal))
        rows.append(G)
        used.add(frame.body)
    assert contacts, f"{model.name}: no usable contact"
    return contacts


def triples(contacts):
    """(frame, point, normal or None) for contacts given as pairs or triples."""
    return [tuple(c) if len(c) == 3 else tuple(c) + (None,) for c in contacts]


def constraint_jacobian(model, q, contacts):
    """G stacked from point_jacobian (3 rows per point, 1 row n^T J per normal)."""
    rows = []
    for frame, point, normal in triples(contacts):
        J = ref.point_jacobian(model, q, frame, point)
        rows.append(J if normal is None else (normal / np.linalg.norm(normal))[None, :] @ J)
    return np.vstack(rows)


def constraint_acceleration(model, q, v, a, contacts):
    """G a + G-dot v, stacked from point_acceleration."""
    rows = []
    for frame, point, normal in triples(contacts):
        acc = ref.point_acceleration(model, q, v, a, frame, point)
        rows.append(acc if normal is None else np.array([normal @ acc / np.linalg.norm(normal)]))
    return np.concatenate(rows)


# ============================================================ 1. reference vs Pinocchio =====

pin = None


def _pinocchio():
    global pin
    if pin is None:
        pin = pytest.importorskip("pinocchio")
    return pin


@functools.lru_cache(maxsize=None)
def pin_model(name):
    _pinocchio()
    return pinocchio_model(name)


def pin_frame_id(pm, name):
    frame_id = pm.getFrameId(name, pin.FrameType.BODY)
    if frame_id >= pm.nframes:
        frame_id = pm.getFrameId(name)
    assert frame_id < pm.nframes, f"Pinocchio has no frame {name!r}"
    return frame_id


@pytest.fixture(params=[(r, s) for r in ROBOT_NAMES for s in STATES], ids=lambda p: f"{p[0]}-{p[1]}")
def pin_setup(request):
    """(model, Pinocchio model, Pinocchio data, state, q in Pinocchio's layout)."""
    _pinocchio()
    name, seed = request.param
    model, pm = robot_model(name), pin_model(name)
    s = State(model, name, seed)
    return name, model, pm, pm.createData(), s, to_pinocchio_q(model, s.q)


def test_pinocchio_coriolis(pin_setup):
    name, model, pm, pd, s, qp = pin_setup
    assert_close(f"{name} coriolis", ref.coriolis(model, s.q, s.v),
                 pin.computeCoriolisMatrix(pm, pd, qp, s.v), REL_TOL_PINOCCHIO)


def test_pinocchio_minv(pin_setup):
    name, model, pm, pd, s, qp = pin_setup
    upper = np.triu(pin.computeMinverse(pm, pd, qp))
    assert_close(f"{name} minv", ref.minv(model, s.q), upper + np.triu(upper, 1).T, REL_TOL_PINOCCHIO)


def test_pinocchio_centroidal(pin_setup):
    name, model, pm, pd, s, qp = pin_setup
    Ag = np.array(pin.ccrba(pm, pd, qp, s.v))
    hg_ccrba = np.array(pd.hg.vector)
    assert_close(f"{name} centroidal_map", ref.centroidal_map(model, s.q), Ag, REL_TOL_PINOCCHIO)
    hG = ref.centroidal_momentum(model, s.q, s.v)
    assert_close(f"{name} centroidal_momentum vs ccrba hg", hG, hg_ccrba, REL_TOL_PINOCCHIO)
    hg = np.array(pin.computeCentroidalMomentum(pm, pd, qp, s.v).vector)
    assert_close(f"{name} centroidal_momentum", hG, hg, REL_TOL_PINOCCHIO)


def test_pinocchio_com_velocity_and_spatial_momentum(pin_setup):
    name, model, pm, pd, s, qp = pin_setup
    pin.centerOfMass(pm, pd, qp, s.v)
    com, vcom = np.array(pd.com[0]), np.array(pd.vcom[0])
    assert_close(f"{name} com_velocity", ref.com_velocity(model, s.q, s.v), vcom, REL_TOL_PINOCCHIO)
    hg = np.array(pin.computeCentroidalMomentum(pm, pd, qp, s.v).vector)
    linear = pin.computeTotalMass(pm) * vcom
    expected = np.concatenate([linear, hg[3:] + np.cross(com, linear)])
    assert_close(f"{name} spatial_momentum", ref.spatial_momentum(model, s.q, s.v), expected, REL_TOL_PINOCCHIO)


def test_pinocchio_point_jacobian(pin_setup):
    name, model, pm, pd, s, qp = pin_setup
    for frame in pick_frames(model):
        if model.frame(frame).body < 0:
            continue
        fid = pin_frame_id(pm, frame)
        J = np.array(pin.computeFrameJacobian(pm, pd, qp, fid, pin.LOCAL_WORLD_ALIGNED))
        pin.updateFramePlacements(pm, pd)
        R = np.array(pd.oMf[fid].rotation)
        assert_close(f"{name} point_jacobian({frame!r}, origin)", ref.point_jacobian(model, s.q, frame, np.zeros(3)),
                     J[:3], REL_TOL_PINOCCHIO)
        p = s.rng.uniform(-0.2, 0.2, 3)
        assert_close(f"{name} point_jacobian({frame!r}, {p})", ref.point_jacobian(model, s.q, frame, p),
                     J[:3] - skew(R @ p) @ J[3:], REL_TOL_PINOCCHIO)


def test_pinocchio_point_gamma(pin_setup):
    name, model, pm, pd, s, qp = pin_setup
    # an extra Pinocchio frame at an offset point checks points off the frame origin too
    pm = pin.Model(pm)
    extras = {}
    for frame in pick_frames(model):
        if model.frame(frame).body < 0:
            continue
        fid = pin_frame_id(pm, frame)
        p = s.rng.uniform(-0.2, 0.2, 3)
        f = pm.frames[fid]
        extras[frame] = (p, pm.addFrame(pin.Frame(f"{frame}_offset", f.parentJoint, fid,
                                                  f.placement * pin.SE3(np.eye(3), p), pin.FrameType.OP_FRAME)))
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, qp, s.v, np.zeros(model.nv))
    pin.updateFramePlacements(pm, pd)
    for frame, (p, offset_id) in extras.items():
        acc = pin.getFrameClassicalAcceleration(pm, pd, pin_frame_id(pm, frame), pin.LOCAL_WORLD_ALIGNED).linear
        assert_close(f"{name} point_gamma({frame!r}, origin)", ref.point_gamma(model, s.q, s.v, frame, np.zeros(3)),
                     -np.array(acc), REL_TOL_PINOCCHIO)
        acc = pin.getFrameClassicalAcceleration(pm, pd, offset_id, pin.LOCAL_WORLD_ALIGNED).linear
        assert_close(f"{name} point_gamma({frame!r}, {p})", ref.point_gamma(model, s.q, s.v, frame, p),
                     -np.array(acc), REL_TOL_PINOCCHIO)


def pin_contacts(pm, contacts):
    """Pinocchio's 3-D rigid constraints (against the world) for [(frame, point, None)]."""
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for frame, point, normal in contacts:
        assert normal is None
        f = pm.frames[pin_frame_id(pm, frame)]
        cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, f.parentJoint,
                                      f.placement * pin.SE3(np.eye(3), point), pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        models.append(cm)
        datas.append(cm.createData())
    return models, datas


def robot_contacts(name, rng):
    return [(frame, rng.uniform(-0.05, 0.05, 3), None) for frame in ROBOT_CONTACT_FRAMES[name]]


def test_pinocchio_contact_dynamics(pin_setup):
    name, model, pm, pd, s, qp = pin_setup
    contacts = robot_contacts(name, s.rng)
    models, datas = pin_contacts(pm, contacts)
    pin.initConstraintDynamics(pm, pd, models, datas)
    qdd_pin = np.array(pin.constraintDynamics(pm, pd, qp, s.v, s.tau, models, datas))
    lam_pin = np.concatenate([np.array(d.contact_force.linear) for d in datas])
    qdd, lam = ref.contact_dynamics(model, s.q, s.v, s.tau, contacts)
    assert_close(f"{name} contact_dynamics q-ddot", qdd, qdd_pin, REL_TOL_PINOCCHIO)
    assert_close(f"{name} contact_dynamics lambda", lam, lam_pin, REL_TOL_PINOCCHIO)
    assert_close(f"{name} contact_dynamics lambda (data.lambda_c)", lam, np.array(pd.lambda_c), REL_TOL_PINOCCHIO)


@pytest.mark.parametrize("restitution", [0.0, 0.5, 1.0])
def test_pinocchio_impulse_dynamics(pin_setup, restitution):
    name, model, pm, pd, s, qp = pin_setup
    contacts = robot_contacts(name, s.rng)
    models, datas = pin_contacts(pm, contacts)
    pin.initConstraintDynamics(pm, pd, models, datas)
    v_plus_pin = np.array(pin.impulseDynamics(pm, pd, qp, s.v, models, datas, restitution))
    impulses_pin = np.concatenate([np.array(d.contact_force.linear) for d in datas])
    v_plus, impulses = ref.impulse_dynamics(model, s.q, s.v, contacts, restitution=restitution)
    assert_close(f"{name} impulse_dynamics v+ (e={restitution})", v_plus, v_plus_pin, REL_TOL_PINOCCHIO)
    assert_close(f"{name} impulse_dynamics impulses (e={restitution})", impulses, impulses_pin, REL_TOL_PINOCCHIO)
    assert_close(f"{name} impulse_dynamics impulses (data.impulse_c)", impulses, np.array(pd.impulse_c),
                 REL_TOL_PINOCCHIO)


# ============================================================ 2. identities ===================

@pytest.fixture(params=[(m, s) for m in MODEL_IDS for s in STATES], ids=lambda p: f"{p[0]}-{p[1]}")
def case(request):
    model_id, seed = request.param
    model = model_for(model_id)
    return model_id, model, State(model, model_id, seed)


def m_dot(model, q, v):
    """d/dt M(q(t)) at t = 0 along q(t) = integrate(q, t v), by central differences."""
    return central_difference(lambda t: ref.crba(model, integrate(model, q, t * v)))


def test_coriolis_times_v_is_nle_minus_gravity(case):
    name, model, s = case
    nle = ref.nle(model, s.q, s.v)
    assert_close(f"{name} C v", ref.coriolis(model, s.q, s.v) @ s.v, nle - ref.gravity(model, s.q), REL_TOL_IDENTITY)


def test_coriolis_m_dot_identities(case):
    name, model, s = case
    C = ref.coriolis(model, s.q, s.v)
    Md = m_dot(model, s.q, s.v)
    N = Md - 2 * C
    assert_zero(f"{name} (M-dot - 2C) + its transpose", N + N.T, np.abs(Md).max(), FD_TOL)
    assert_close(f"{name} M-dot = C + C^T", C + C.T, Md, FD_TOL)


def on_one_path(model):
    """P[r, c]: the bodies of coordinates r and c lie on one root-to-leaf path."""
    body = [i for i, joint in enumerate(model.joints) for _ in range(joint.nv)]
    return np.array([[body[r] in model.support(body[c]) or body[c] in model.support(body[r]) for c in range(model.nv)]
                     for r in range(model.nv)])


def test_christoffel_contracts_to_coriolis(case):
    name, model, s = case
    Gamma = ref.christoffel(model, s.q)
    C = ref.coriolis(model, s.q, s.v)
    assert Gamma.shape == (model.nv,) * 3
    assert_close(f"{name} sum_k Gamma[i, j, k] v_k", np.einsum("ijk,k->ij", Gamma, s.v), C, REL_TOL_IDENTITY)
    # the tree's sparsity: C vanishes between branches, Gamma off the triples on one path
    P = on_one_path(model)
    assert not C[~P].any(), f"{name}: C non-zero between different branches"
    triples = P[:, :, None] & P[:, None, :] & P[None, :, :]
    assert not Gamma[~triples].any(), f"{name}: Gamma non-zero off the root-to-leaf paths"


# Only models whose joints all have v = q-dot: elsewhere v are generalized speeds and Gamma is
# not symmetric in (j, k) (see algorithms/christoffel.py); sum_k Gamma v_k = C is tested above.
HOLONOMIC_IDS = [m for m in MODEL_IDS if qdot_is_v(model_for(m))]


@pytest.fixture(params=[(m, s) for m in HOLONOMIC_IDS for s in STATES], ids=lambda p: f"{p[0]}-{p[1]}")
def holonomic_case(request):
    model_id, seed = request.param
    model = model_for(model_id)
    return model_id, model, State(model, model_id, seed)


def test_christoffel_symmetry_and_partials(holonomic_case):
    """Where q-dot = v: Gamma[i, j, k] = Gamma[i, k, j] = (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) / 2."""
    name, model, s = holonomic_case
    Gamma = ref.christoffel(model, s.q)
    assert_close(f"{name} Gamma symmetric in (j, k)", Gamma, Gamma.transpose(0, 2, 1), REL_TOL_IDENTITY)
    eye = np.eye(model.nv)
    dM = np.array([central_difference(lambda t: ref.crba(model, integrate(model, s.q, t * eye[k])))
                   for k in range(model.nv)])          # dM[k, i, j] = dM_ij / dq_k
    expected = 0.5 * (dM.transpose(1, 2, 0) + dM.transpose(1, 0, 2) - dM)
    assert_close(f"{name} Gamma by finite differences of M", Gamma, expected, FD_TOL)


def test_minv_and_forward_dynamics(case):
    name, model, s = case
    M = ref.crba(model, s.q)
    Minv = ref.minv(model, s.q)
    assert np.array_equal(Minv, Minv.T), f"{name}: minv is not exactly symmetric"
    assert_close(f"{name} minv @ crba", Minv @ M, np.eye(model.nv), REL_TOL_IDENTITY)
    assert_close(f"{name} minv_times", ref.minv_times(model, s.q, s.tau), np.linalg.solve(M, s.tau), REL_TOL_IDENTITY)
    assert_close(f"{name} fd_crba", ref.fd_crba(model, s.q, s.v, s.tau), ref.aba(model, s.q, s.v, s.tau),
                 REL_TOL_IDENTITY)


def test_momentum_identities(case):
    name, model, s = case
    hG = ref.centroidal_momentum(model, s.q, s.v)
    assert_close(f"{name} centroidal_map @ v", ref.centroidal_map(model, s.q) @ s.v, hG, REL_TOL_IDENTITY)
    vcom = ref.com_velocity(model, s.q, s.v)
    com_fd = central_difference(lambda t: ref.com(model, integrate(model, s.q, t * s.v)))
    assert_close(f"{name} com_velocity by finite differences", vcom, com_fd, FD_TOL)
    linear = ref.total_mass(model) * vcom
    h = ref.spatial_momentum(model, s.q, s.v)
    assert_close(f"{name} spatial momentum", h,
                 np.concatenate([linear, hG[3:] + np.cross(ref.com(model, s.q), linear)]), REL_TOL_IDENTITY)
    assert_close(f"{name} linear momentum", hG[:3], linear, REL_TOL_IDENTITY)
    M = ref.crba(model, s.q)
    assert_close(f"{name} kinetic energy", ref.kinetic_energy(model, s.q, s.v), 0.5 * s.v @ M @ s.v, REL_TOL_IDENTITY)


@pytest.mark.parametrize("model_id", ["ur5", "solo12", "mixed-tree-fixed", "mixed-tree-floating"])
def test_batched_reference_matches_single_states(model_id):
    """The new reference functions take a leading batch dimension like the others."""
    model = model_for(model_id)
    states = [State(model, model_id, seed) for seed in range(3)]
    Q = np.array([s.q for s in states])
    V, A, T = (np.array([getattr(s, x) for s in states]) for x in ("v", "a", "tau"))
    for fn, args in (("coriolis", (Q, V)), ("christoffel", (Q,)), ("minv", (Q,)), ("minv_times", (Q, T)),
                     ("fd_crba", (Q, V, T)), ("com_velocity", (Q, V)), ("spatial_momentum", (Q, V)),
                     ("centroidal_momentum", (Q, V)), ("centroidal_map", (Q,)), ("body_motion", (Q, V, A))):
        batched = getattr(ref, fn)(model, *args)
        single = np.array([getattr(ref, fn)(model, *(x[k] for x in args)) for k in range(len(states))])
        assert_close(f"{model_id} batched {fn}", batched, single, REL_TOL_IDENTITY)


def test_body_motion(case):
    """body_motion rows [w, v_O, w-dot, a_O] against each body's local Jacobian."""
    name, model, s = case
    motion = ref.body_motion(model, s.q, s.v, s.a)
    rest = ref.body_motion(model, s.q, s.v, np.zeros(model.nv))
    assert motion.shape == (model.nbodies, 12)
    for b, body in enumerate(model.body_names):
        frame = model.frame(body)
        assert frame.body == b
        J = ref.frame_jacobian(model, s.q, body, "local")     # rows [v_O; w], body axes
        tag = f"{name} body_motion[{body!r}]"
        assert_close(f"{tag} velocity", motion[b, :6], np.concatenate([J[3:] @ s.v, J[:3] @ s.v]), REL_TOL_IDENTITY)
        assert_close(f"{tag} acceleration linear in a", motion[b, 6:] - rest[b, 6:],
                     np.concatenate([J[3:] @ s.a, J[:3] @ s.a]), REL_TOL_IDENTITY)


def point_position(model, q, frame, point):
    R, o = ref.frame_placement(model, q, frame)
    return R @ point + o


def test_point_kinematics(case):
    name, model, s = case
    for frame in pick_frames(model):
        point = s.rng.uniform(-0.2, 0.2, 3)
        tag = f"{name} {frame!r} {point}"
        J = ref.point_jacobian(model, s.q, frame, point)
        assert J.shape == (3, model.nv)
        vel = ref.point_velocity(model, s.q, s.v, frame, point)
        assert_close(f"{tag} point_velocity = J v", vel, J @ s.v, REL_TOL_IDENTITY)
        fd = central_difference(lambda t: point_position(model, integrate(model, s.q, t * s.v), frame, point))
        assert_close(f"{tag} point_velocity by finite differences", vel, fd, FD_TOL)
        gamma = ref.point_gamma(model, s.q, s.v, frame, point)
        acc = ref.point_acceleration(model, s.q, s.v, s.a, frame, point)
        assert_close(f"{tag} point_acceleration = J a - gamma", acc, J @ s.a - gamma, REL_TOL_IDENTITY)
        fd = central_difference(lambda t: ref.point_velocity(model, integrate(model, s.q, t * s.v), s.v + t * s.a,
                                                             frame, point))
        assert_close(f"{tag} point_acceleration by finite differences", acc, fd, FD_TOL)
        if model.frame(frame).body < 0:
            assert not J.any() and not vel.any() and not acc.any(), f"{tag}: a world-fixed point moves"


def test_contact_dynamics(case):
    name, model, s = case
    contacts = pick_contacts(model, s.q, s.rng)
    qdd, lam = ref.contact_dynamics(model, s.q, s.v, s.tau, contacts)
    G = constraint_jacobian(model, s.q, contacts)
    assert qdd.shape == (model.nv,) and lam.shape == (G.shape[0],)
    scale = max(np.abs(G).max() * np.abs(qdd).max(), np.abs(ref.point_gamma(model, s.q, s.v, *contacts[0][:2])).max())
    assert_zero(f"{name} G q-ddot + G-dot v", constraint_acceleration(model, s.q, s.v, qdd, contacts), scale,
                REL_TOL_IDENTITY)
    M, nle = ref.crba(model, s.q), ref.nle(model, s.q, s.v)
    assert_close(f"{name} M q-ddot + nle", M @ qdd + nle, s.tau + G.T @ lam, REL_TOL_IDENTITY)
    # the dense KKT system gives the same solution
    gamma = -constraint_acceleration(model, s.q, s.v, np.zeros(model.nv), contacts)
    m = G.shape[0]
    K = np.block([[M, -G.T], [G, np.zeros((m, m))]])
    x = np.linalg.solve(K, np.concatenate([s.tau - nle, gamma]))
    assert_close(f"{name} contact q-ddot vs KKT", qdd, x[:model.nv], REL_TOL_IDENTITY)
    assert_close(f"{name} contact lambda vs KKT", lam, x[model.nv:], REL_TOL_IDENTITY)
    # the normal of a 1-D contact need not be unit
    scaled = [(f, p, None if n is None else 3.0 * n) for f, p, n in contacts]
    qdd2, lam2 = ref.contact_dynamics(model, s.q, s.v, s.tau, scaled)
    assert_close(f"{name} contact with a scaled normal", np.concatenate([qdd2, lam2]), np.concatenate([qdd, lam]),
                 REL_TOL_IDENTITY)


@pytest.mark.parametrize("restitution", [0.0, 0.5, 1.0])
def test_impulse_dynamics(case, restitution):
    name, model, s = case
    contacts = pick_contacts(model, s.q, s.rng)
    v_plus, impulses = ref.impulse_dynamics(model, s.q, s.v, contacts, restitution=restitution)
    G = constraint_jacobian(model, s.q, contacts)
    assert_close(f"{name} G v+ = -e G v- (e={restitution})", G @ v_plus, -restitution * (G @ s.v), REL_TOL_IDENTITY,
                 abs_floor=np.abs(G).max() * np.abs(s.v).max())
    M = ref.crba(model, s.q)
    assert_close(f"{name} M (v+ - v-) = G^T impulses", M @ (v_plus - s.v), G.T @ impulses, REL_TOL_IDENTITY)
    if restitution == 1.0:
        single = contacts[:1]
        v1, _ = ref.impulse_dynamics(model, s.q, s.v, single, restitution=1.0)
        assert_close(f"{name} kinetic energy kept (e=1, one contact)", ref.kinetic_energy(model, s.q, v1),
                     ref.kinetic_energy(model, s.q, s.v), REL_TOL_IDENTITY)
        assert_close(f"{name} kinetic energy kept (e=1, all contacts)", ref.kinetic_energy(model, s.q, v_plus),
                     ref.kinetic_energy(model, s.q, s.v), REL_TOL_IDENTITY)


def test_contact_inertia(case):
    name, model, s = case
    contacts = pick_contacts(model, s.q, s.rng)
    G = constraint_jacobian(model, s.q, contacts)
    M = ref.crba(model, s.q)
    A = ref.contact_inertia(model, s.q, contacts)
    assert_close(f"{name} contact_inertia = G M^-1 G^T", A, G @ np.linalg.solve(M, G.T), REL_TOL_IDENTITY)
    assert_close(f"{name} contact_inertia with minv", A, G @ ref.minv(model, s.q) @ G.T, REL_TOL_IDENTITY)
    # one 3-D contact: the inverse of the operational-space inertia, i.e. the point's
    # acceleration per unit force pushing on it, from rest (ABA with an external force)
    frame, point, _ = next(c for c in contacts if c[2] is None)
    A1 = ref.contact_inertia(model, s.q, [(frame, point)])
    body = model.frame(frame).body
    p_body = point_placement(placement_entries(model.frame(frame).placement), point)[9:]   # in body coordinates
    R, zero = ref.frame_placement(model, s.q, model.body_names[body])[0], np.zeros(model.nv)
    J = ref.point_jacobian(model, s.q, frame, point)
    a0 = ref.aba(model, s.q, zero, zero)
    response = np.zeros((3, 3))
    for k in range(3):
        f_ext = np.zeros((model.nbodies, 6))
        force = R.T[:, k]                       # world unit force e_k in body coordinates
        f_ext[body] = np.concatenate([force, np.cross(p_body, force)])
        response[:, k] = J @ (ref.aba(model, s.q, zero, zero, f_ext) - a0)
    assert_close(f"{name} contact_inertia = Lambda^-1 (operational space)", A1, response, REL_TOL_IDENTITY)
    Lambda = np.linalg.inv(J @ np.linalg.solve(M, J.T))
    assert_close(f"{name} contact_inertia @ Lambda", A1 @ Lambda, np.eye(3), REL_TOL_IDENTITY)


def well_conditioned_point(model, q, rng):
    """A 3-D contact whose contact inertia G M^-1 G^T has its smallest eigenvalue (the inverse
    of the largest effective mass) above MIN_CONTACT_EIGENVALUE, so that DAMPING changes the
    solution by about DAMPING / eigenvalue < DAMPED_TOL / 10; None if the model has none."""
    for frame in sorted((f for f in model.frames if f.body >= 0), key=lambda f: -depth(model, f.body)):
        point = rng.uniform(-0.1, 0.1, 3)
        if np.linalg.eigvalsh(ref.contact_inertia(model, q, [(frame.name, point)]))[0] >= MIN_CONTACT_EIGENVALUE:
            return frame.name, point
    return None


def test_redundant_contacts(case):
    name, model, s = case
    frame, point, _ = next(c for c in pick_contacts(model, s.q, s.rng) if c[2] is None)
    twice = [(frame, point, None), (frame, point)]
    with pytest.raises(ValueError, match="redundant"):
        ref.contact_dynamics(model, s.q, s.v, s.tau, twice)
    with pytest.raises(ValueError, match="redundant"):
        ref.impulse_dynamics(model, s.q, s.v, twice)
    # Damped least squares. Exactly: the residual G q-ddot - gamma is -damping * lambda, and
    # the same contact listed twice with damping d is the single contact with damping d / 2,
    # its force shared equally (lambda = [x; x] with (2 A + d) x = b).
    qdd, lam = ref.contact_dynamics(model, s.q, s.v, s.tau, twice, damping=DAMPING)
    assert np.isfinite(qdd).all() and np.isfinite(lam).all()
    residual = constraint_acceleration(model, s.q, s.v, qdd, twice)
    scale = np.abs(ref.point_gamma(model, s.q, s.v, frame, point)).max() + np.abs(qdd).max()
    assert_zero(f"{name} damped residual + damping lambda", residual + DAMPING * lam, scale, DAMPED_IDENTITY_TOL)
    qdd_half, lam_half = ref.contact_dynamics(model, s.q, s.v, s.tau, twice[:1], damping=DAMPING / 2)
    assert_close(f"{name} damped twice = single with damping / 2: q-ddot", qdd, qdd_half, DAMPED_IDENTITY_TOL)
    assert_close(f"{name} damped twice = single with damping / 2: lambda", lam[:3] + lam[3:], lam_half,
                 DAMPED_IDENTITY_TOL)
    assert_close(f"{name} damped lambda shared equally", lam[:3], lam[3:], DAMPED_IDENTITY_TOL)
    v_plus, impulses = ref.impulse_dynamics(model, s.q, s.v, twice, restitution=0.5, damping=DAMPING)
    assert np.isfinite(v_plus).all() and np.isfinite(impulses).all()
    G = constraint_jacobian(model, s.q, twice)
    assert_zero(f"{name} damped impulse residual", G @ v_plus + 0.5 * G @ s.v + DAMPING * impulses,
                np.abs(G).max() * np.abs(s.v).max(), DAMPED_IDENTITY_TOL)
    v_half, _ = ref.impulse_dynamics(model, s.q, s.v, twice[:1], restitution=0.5, damping=DAMPING / 2)
    assert_close(f"{name} damped twice = single with damping / 2: v+", v_plus, v_half, DAMPED_IDENTITY_TOL)
    # a point fixed to the world constrains nothing: its rows of G are zero
    world = [f.name for f in model.frames if f.body < 0]
    if world:
        with pytest.raises(ValueError, match="redundant"):
            ref.contact_dynamics(model, s.q, s.v, s.tau, [(world[0], np.zeros(3))])
    # ... and with a well-conditioned contact, the constraint nearly holds: the result is
    # close to the undamped one of the contact listed once
    picked = well_conditioned_point(model, s.q, s.rng)
    if picked is None:
        return
    frame, point = picked
    twice = [(frame, point), (frame, point)]
    qdd, lam = ref.contact_dynamics(model, s.q, s.v, s.tau, twice, damping=DAMPING)
    qdd1, lam1 = ref.contact_dynamics(model, s.q, s.v, s.tau, twice[:1])
    assert_close(f"{name} damped q-ddot", qdd, qdd1, DAMPED_TOL)
    assert_close(f"{name} damped lambda", lam[:3] + lam[3:], lam1, DAMPED_TOL)
    scale = np.abs(ref.point_gamma(model, s.q, s.v, frame, point)).max() + np.abs(qdd).max()
    assert_zero(f"{name} damped constraint nearly holds", constraint_acceleration(model, s.q, s.v, qdd, twice),
                scale, DAMPED_TOL)
    v_plus, _ = ref.impulse_dynamics(model, s.q, s.v, twice, restitution=0.5, damping=DAMPING)
    v1, _ = ref.impulse_dynamics(model, s.q, s.v, twice[:1], restitution=0.5)
    assert_close(f"{name} damped v+", v_plus, v1, DAMPED_TOL)
    G = constraint_jacobian(model, s.q, twice[:1])
    assert_zero(f"{name} damped impulse constraint nearly holds", G @ v_plus + 0.5 * G @ s.v,
                np.abs(G).max() * np.abs(s.v).max(), DAMPED_TOL)


def bad_contact_lists(model, frame):
    """(what, contacts) that must raise ValueError."""
    return [("zero normal", [(frame, np.zeros(3), np.zeros(3))]),
            ("point of shape (2,)", [(frame, np.zeros(2))]),
            ("point of shape (3, 1)", [(frame, np.zeros((3, 1)))]),
            ("normal of shape (2,)", [(frame, np.zeros(3), np.ones(2))]),
            ("unknown frame", [("no_such_frame", np.zeros(3))]),
            ("no contacts", []),
            ("a 4-tuple", [(frame, np.zeros(3), None, 1.0)])]


@pytest.mark.parametrize("model_id", ["ur5", "solo12", "mixed-tree-fixed", "mixed-tree-floating"])
def test_bad_contacts_raise_value_error(model_id):
    model = model_for(model_id)
    s = State(model, model_id, 0)
    frame = pick_contacts(model, s.q, s.rng)[0][0]
    for what, contacts in bad_contact_lists(model, frame):
        for fn, args in ((ref.contact_dynamics, (s.q, s.v, s.tau, contacts)),
                         (ref.impulse_dynamics, (s.q, s.v, contacts)),
                         (ref.contact_inertia, (s.q, contacts))):
            with pytest.raises(ValueError):
                fn(model, *args)
                pytest.fail(f"{fn.__name__}: {what} accepted")
    with pytest.raises(ValueError, match="zero length"):
        ref.contact_dynamics(model, s.q, s.v, s.tau, [(frame, np.zeros(3), np.zeros(3))])
    with pytest.raises(ValueError, match="unknown frame"):
        ref.contact_inertia(model, s.q, [("no_such_frame", np.zeros(3))])
    with pytest.raises(ValueError):
        ref.point_jacobian(model, s.q, frame, np.zeros(2))
    with pytest.raises(ValueError):
        ref.point_velocity(model, s.q, s.v, "no_such_frame", np.zeros(3))


# ============================================================ 3. generated modules ============

# Two robots and two random trees, one fixed and one floating, that between them have every
# joint type. A single tree with every joint type has nv >= 19 (25 floating), and its
# Christoffel function (nv^3 outputs) alone took ~10 minutes to compile (61568 operations,
# 26 DoF); set RBDGEN_TEST_FULL_TREES=1 to build such trees instead.
_FIXED_KINDS = ("revolute", "revolute_aligned", "continuous", "prismatic", "helical", "spherical", "planar")
_FLOATING_KINDS = ("euler_zyx", "euler_xyz", "translation")
if os.environ.get("RBDGEN_TEST_FULL_TREES"):
    _FIXED_KINDS = _FLOATING_KINDS = ALL_JOINT_TYPES
GENERATED = {
    "ur5": ("robot", "ur5"),
    "solo12": ("robot", "solo12"),
    "tree-fixed": ("tree", (801, len(_FIXED_KINDS), _FIXED_KINDS, False)),
    "tree-floating": ("tree", (802, len(_FLOATING_KINDS) + 1, _FLOATING_KINDS, True)),
}
assert set(_FIXED_KINDS) | set(_FLOATING_KINDS) == set(ALL_JOINT_TYPES)
NEW_FUNCTIONS = ("coriolis", "christoffel", "minv", "minv_times", "fd_crba", "com_velocity", "spatial_momentum",
                 "centroidal_momentum", "centroidal_map", "body_motion")
BUILD_TIMES = {}


@pytest.fixture(scope="session")
def generated(tmp_path_factory):
    """id -> (module, model), each built once per session (build timings in BUILD_TIMES)."""
    out = str(tmp_path_factory.mktemp("advanced"))
    built = {}

    def get(key):
        if key not in built:
            kind, arg = GENERATED[key]
            t0 = time.perf_counter()
            if kind == "robot":
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=".*<mimic> is ignored", category=UserWarning)
                    module = rbdgen.build(robot_path(arg), out_dir=out, floating_base=ROBOTS[arg][1])
                model = robot_model(arg)
            else:
                seed, nbodies, kinds, floating = arg
                model = random_tree(seed, nbodies, kinds, floating_base=floating, branched=True)
                module = rbdgen.build_model(model, out_dir=out)
            BUILD_TIMES[key] = time.perf_counter() - t0
            print(f"\nbuilt {key} (nq={model.nq}, nv={model.nv}) in {BUILD_TIMES[key]:.1f} s")
            built[key] = (module, model)
        return built[key]

    return get


@pytest.mark.parametrize("key", list(GENERATED))
@pytest.mark.parametrize("seed", STATES)
def test_generated_matches_reference(generated, key, seed):
    module, model = generated(key)
    assert set(NEW_FUNCTIONS) <= set(module.operation_counts), sorted(module.operation_counts)
    s = State(model, f"generated-{key}", seed)
    q, v, a, tau = s.q, s.v, s.a, s.tau
    tag = f"{key} state {seed}"
    tol = REL_TOL_GENERATED
    for fn, args in (("coriolis", (q, v)), ("christoffel", (q,)), ("minv", (q,)), ("minv_times", (q, tau)),
                     ("fd_crba", (q, v, tau)), ("com_velocity", (q, v)), ("spatial_momentum", (q, v)),
                     ("centroidal_momentum", (q, v)), ("centroidal_map", (q,)), ("body_motion", (q, v, a))):
        assert_close(f"{tag} {fn}", getattr(module, fn)(*args), getattr(ref, fn)(model, *args), tol)
    assert_close(f"{tag} total_mass", module.total_mass(), ref.total_mass(model), tol)
    for frame in pick_frames(model):
        point = s.rng.uniform(-0.2, 0.2, 3)
        t = f"{tag} {frame!r}"
        assert_close(f"{t} point_jacobian", module.point_jacobian(q, frame, point),
                     ref.point_jacobian(model, q, frame, point), tol)
        assert_close(f"{t} point_velocity", module.point_velocity(q, v, frame, point),
                     ref.point_velocity(model, q, v, frame, point), tol)
        assert_close(f"{t} point_acceleration", module.point_acceleration(q, v, a, frame, point),
                     ref.point_acceleration(model, q, v, a, frame, point), tol)
        assert_close(f"{t} point_gamma", module.point_gamma(q, v, frame, point),
                     ref.point_gamma(model, q, v, frame, point), tol)
    contacts = pick_contacts(model, q, s.rng)
    for got, want, what in ((module.contact_dynamics(q, v, tau, contacts),
                             ref.contact_dynamics(model, q, v, tau, contacts), "contact_dynamics"),
                            (module.impulse_dynamics(q, v, contacts, restitution=0.5),
                             ref.impulse_dynamics(model, q, v, contacts, restitution=0.5), "impulse_dynamics")):
        assert_close(f"{tag} {what} (first)", got[0], want[0], tol)
        assert_close(f"{tag} {what} (multipliers)", got[1], want[1], tol)
    assert_close(f"{tag} contact_inertia", module.contact_inertia(q, contacts), ref.contact_inertia(model, q, contacts),
                 tol)
    # redundant and bad contacts are refused by the module as well
    frame, point, _ = next(c for c in contacts if c[2] is None)
    twice = [(frame, point), (frame, point)]
    with pytest.raises(ValueError, match="redundant"):
        module.contact_dynamics(q, v, tau, twice)
    with pytest.raises(ValueError, match="redundant"):
        module.impulse_dynamics(q, v, twice)
    # a damped redundant solve has condition ~ |A| / damping: the 1e-16 differences between
    # the module's M^-1 and the reference's grow to ~1e-9, hence the looser tolerance
    got = module.contact_dynamics(q, v, tau, twice, damping=DAMPING)
    want = ref.contact_dynamics(model, q, v, tau, twice, damping=DAMPING)
    assert_close(f"{tag} damped contact_dynamics", np.concatenate(got), np.concatenate(want), DAMPED_IDENTITY_TOL)
    got = module.impulse_dynamics(q, v, twice, restitution=0.5, damping=DAMPING)
    want = ref.impulse_dynamics(model, q, v, twice, restitution=0.5, damping=DAMPING)
    assert_close(f"{tag} damped impulse_dynamics", np.concatenate(got), np.concatenate(want), DAMPED_IDENTITY_TOL)
    for what, bad in bad_contact_lists(model, frame):
        for call in (lambda: module.contact_dynamics(q, v, tau, bad), lambda: module.impulse_dynamics(q, v, bad),
                     lambda: module.contact_inertia(q, bad)):
            with pytest.raises(ValueError):
                call()
                pytest.fail(f"{key}: {what} accepted")


def test_report_build_times(tmp_path):
    """A build reports, for every function it builds, its operation count and the seconds of
    each stage (symbolic run, C, compilation: small functions compile together, and the file
    they share reports its seconds), then the time to link and to verify."""
    import re
    model = revolute_model("timed3", [-1, 0, 1])
    lines = []
    module = rbdgen.build_model(model, out_dir=str(tmp_path), algorithms=["rnea", "crba", "com"],
                                progress=lines.append)
    seconds = r"(\d+\.\d) s"
    timed, together = {}, []
    for line in lines:
        m = re.fullmatch(rf"\s*(\w+): (\d+) operations \(symbolic {seconds}, C {seconds}, "
                         rf"(compile {seconds}|compiled with other small functions)\)", line)
        if m:
            assert m.group(1) not in timed, f"{m.group(1)} reported twice: {lines}"
            timed[m.group(1)] = int(m.group(2))
        m = re.fullmatch(rf"\s*compiled (\d+) small functions? in one file \(compile {seconds}\): ([\w, ]+)", line)
        if m:
            together += m.group(3).split(", ")
            assert int(m.group(1)) == len(m.group(3).split(", ")), line
    assert timed == dict(module.operation_counts) and set(timed) == {"rnea", "crba", "com"}, lines
    assert sorted(together) == ["com", "crba", "rnea"], lines   # each a few hundred operations
    assert any(re.fullmatch(rf"linked the extension \({seconds}\)", line) for line in lines), lines
    assert any(re.fullmatch(rf"verified against the reference \(.*{seconds}\)", line) for line in lines), lines


def test_a_long_build_says_what_it_is_doing(tmp_path, monkeypatch):
    """Past QUIET_SECONDS, every PROGRESS_SECONDS a line says how many functions are generated,
    which are being generated or compiled, and how many jobs wait (here made 0 and 50 ms)."""
    import re
    from rbdgen.codegen import compilation
    monkeypatch.setattr(compilation, "QUIET_SECONDS", 0)
    monkeypatch.setattr(compilation, "PROGRESS_SECONDS", 0.05)
    lines = []
    rbdgen.build_model(revolute_model("talkative", [-1, 0, 1, 2]), out_dir=str(tmp_path),
                       algorithms=["rnea", "crba", "aba", "aba_derivatives"], progress=lines.append)
    said = [line for line in lines if "functions generated" in line]
    assert said, lines
    for line in said:
        assert re.fullmatch(r"  after \d+ s: [0-4] of 4 functions generated(; generating [\w, ]+)?"
                            r"(; compiling [\w., ]+)?(; \d+ more jobs waiting)?", line), line
    assert any("generating" in line or "compiling" in line for line in said), said


# ============================================================ 4. Christoffel cost =============

def revolute_model(name, parents, seed=0):
    """Revolute joints with random axes, placements and inertias; body i hangs from parents[i]."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder(name)
    for i, parent in enumerate(parents):
        builder.add_body(parent, Revolute(tuple(random_unit_vector(rng))), f"j{i}", f"b{i}",
                         X_T=random_transform(rng), inertia=random_inertia(rng))
    return builder.finish()


def test_christoffel_operation_count_exploits_the_tree():
    from rbdgen.codegen.programs import generate_program
    from rbdgen.table.functions import BY_NAME
    n = 12
    chain = revolute_model("chain12", [i - 1 for i in range(n)])
    tree = revolute_model("tree12", [(i - 1) // 2 if i else -1 for i in range(n)])
    assert chain.nv == tree.nv == n
    counts = {}
    for model in (chain, tree):
        t0 = time.perf_counter()
        program = generate_program(model, BY_NAME["christoffel"])
        counts[model.name] = program.counts["operations"]
        print(f"\nchristoffel {model.name}: {counts[model.name]} operations "
              f"(generated in {time.perf_counter() - t0:.1f} s)")
    print(f"ratio tree / chain = {counts['tree12'] / counts['chain12']:.3f}")
    assert counts["tree12"] < 0.5 * counts["chain12"], counts
