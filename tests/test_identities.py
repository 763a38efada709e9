"""Identities of the NumPy reference (rbdgen.reference) on seeded random trees.

Every model comes from trees.random_tree: chains and branched trees, each joint type on its
own and all of them mixed, fixed and floating base. The identities tie the algorithms to
each other (ABA inverts RNEA, CRBA columns are RNEA differences, ...) and to finite
differences of the kinematics and energies, so that a wrong motion subspace or joint bias
c_J shows up even though every algorithm shares them. The spatial algebra is checked
against explicit 6x6 matrices.
"""

import functools
import zlib

import numpy as np
import pytest

from helpers import REL_TOL_IDENTITY, assert_close
from rbdgen import ModelBuilder
from rbdgen import reference as ref
from rbdgen.algorithms import kinematics as kinematics_alg
from rbdgen.algorithms.linalg import symmetric_inverse, symmetric_solve
from rbdgen.model.joints import EulerXYZ, EulerZYX, FreeFlyer, Revolute, Spherical
from rbdgen.runtime.reference import OPS
from rbdgen.spatial import combine, Force, Inertia, Motion, Transform
from trees import (ALL_JOINT_TYPES, QDOT_IS_V, integrate, make_joint, quaternion_matrix, random_inertia,
                   random_state, random_transform, random_tree)

FD_STEP = 1e-6     # central differences
FD_TOL = 1e-5      # relative tolerance of quantities obtained by central differences

# ---------------------------------------------------------------- the random models -----

# (id, seed, nbodies, joint types, floating base, branched)
CASES = []
for _k, _kind in enumerate(ALL_JOINT_TYPES):
    CASES.append((f"{_kind}-chain-fixed", 100 + _k, 4, (_kind,), False, False))
    CASES.append((f"{_kind}-tree-floating", 200 + _k, 5, (_kind,), True, True))
for _seed in range(2):
    for _branched in (False, True):
        for _floating in (False, True):
            _shape = "tree" if _branched else "chain"
            _base = "floating" if _floating else "fixed"
            CASES.append((f"mixed-{_shape}-{_base}-{_seed}", 300 + 4 * _seed + 2 * _branched + _floating,
                          len(ALL_JOINT_TYPES) + 1, ALL_JOINT_TYPES, _floating, _branched))
# Joints with q-dot = v only: the Lagrange equations hold in plain coordinates.
CASES.append(("qdot_is_v-chain-fixed", 400, 7, QDOT_IS_V, False, False))
CASES.append(("qdot_is_v-tree-fixed", 401, 8, QDOT_IS_V, False, True))
CASES.append(("euler-chain-fixed", 402, 6, ("euler_zyx", "euler_xyz"), False, False))
CASES.append(("euler-tree-floating", 403, 6, ("euler_zyx", "euler_xyz"), True, True))

CASE_IDS = [c[0] for c in CASES]


@functools.lru_cache(maxsize=None)
def model_for(case_id):
    _, seed, nbodies, kinds, floating, branched = next(c for c in CASES if c[0] == case_id)
    return random_tree(seed, nbodies, kinds, floating_base=floating, branched=branched)


def state_for(case_id, salt=0):
    model = model_for(case_id)
    rng = np.random.default_rng(zlib.crc32(case_id.encode()) + salt)
    return model, rng, random_state(model, rng)


def qdot_is_v(model):
    return all(j.type in QDOT_IS_V for j in model.joints)


def central_difference(fn, step=FD_STEP):
    """d/dt fn(t) at t = 0."""
    return (np.asarray(fn(step)) - np.asarray(fn(-step))) / (2 * step)


def vee(W):
    """The vector w of a (nearly) skew-symmetric W = w~ (antisymmetric part)."""
    A = (W - W.T) / 2
    return np.array([A[2, 1], A[0, 2], A[1, 0]])


def random_f_ext(model, rng):
    return rng.uniform(-3, 3, (model.nbodies, 6))


# ---------------------------------------------------------------- dynamics identities ---

@pytest.mark.parametrize("case", CASE_IDS)
def test_aba_inverts_rnea(case):
    model, rng, (q, v, a) = state_for(case)
    tau = ref.rnea(model, q, v, a)
    assert_close("aba(q, v, rnea(q, v, a))", ref.aba(model, q, v, tau), a, REL_TOL_IDENTITY)
    f_ext = random_f_ext(model, rng)
    tau_f = ref.rnea(model, q, v, a, f_ext)
    assert_close("aba(q, v, rnea(q, v, a, f_ext), f_ext)", ref.aba(model, q, v, tau_f, f_ext), a,
                 REL_TOL_IDENTITY)
    # and aba(rnea) the other way round: rnea(aba(tau)) == tau
    tau2 = rng.uniform(-5, 5, model.nv)
    assert_close("rnea(q, v, aba(q, v, tau, f_ext), f_ext)",
                 ref.rnea(model, q, v, ref.aba(model, q, v, tau2, f_ext), f_ext), tau2, REL_TOL_IDENTITY)


@pytest.mark.parametrize("case", CASE_IDS)
def test_external_forces_enter_through_local_jacobians(case):
    """rnea(f_ext) = rnea - sum_i J_i^T f_i, f_i rows [force; torque] in body i's frame."""
    model, rng, (q, v, a) = state_for(case)
    f_ext = random_f_ext(model, rng)
    expected = ref.rnea(model, q, v, a)
    for i, name in enumerate(model.body_names):
        expected = expected - ref.frame_jacobian(model, q, name, "local").T @ f_ext[i]
    assert_close("rnea(q, v, a, f_ext)", ref.rnea(model, q, v, a, f_ext), expected, REL_TOL_IDENTITY)


@pytest.mark.parametrize("case", CASE_IDS)
def test_crba_columns_symmetry_definiteness(case):
    model, _, (q, _, _) = state_for(case)
    M = ref.crba(model, q)
    assert M.shape == (model.nv, model.nv)
    zero = np.zeros(model.nv)
    g = ref.rnea(model, q, zero, zero)
    columns = np.empty_like(M)
    for i in range(model.nv):
        e = np.zeros(model.nv)
        e[i] = 1.0
        columns[:, i] = ref.rnea(model, q, zero, e) - g
    assert_close("crba columns vs rnea(q, 0, e_i) - rnea(q, 0, 0)", M, columns, REL_TOL_IDENTITY)
    assert_close("crba symmetric", M, M.T, REL_TOL_IDENTITY)
    eig = np.linalg.eigvalsh((M + M.T) / 2)
    assert eig.min() > 1e-9 * max(eig.max(), 1.0), f"crba not positive definite: eigenvalues {eig}"
    np.linalg.cholesky(M)


@pytest.mark.parametrize("case", CASE_IDS)
def test_rnea_splits_into_crba_and_nle(case):
    model, _, (q, v, a) = state_for(case)
    M = ref.crba(model, q)
    assert_close("rnea == crba a + nle", ref.rnea(model, q, v, a), M @ a + ref.nle(model, q, v),
                 REL_TOL_IDENTITY)
    zero = np.zeros(model.nv)
    assert_close("nle(q, 0) == gravity(q)", ref.nle(model, q, zero), ref.gravity(model, q), REL_TOL_IDENTITY)
    assert_close("rnea(q, 0, 0) == gravity(q)", ref.rnea(model, q, zero, zero), ref.gravity(model, q),
                 REL_TOL_IDENTITY)


@pytest.mark.parametrize("case", CASE_IDS)
def test_kinetic_energy_is_quadratic_form_of_crba(case):
    model, _, (q, v, _) = state_for(case)
    M = ref.crba(model, q)
    assert_close("kinetic_energy == v^T M v / 2", ref.kinetic_energy(model, q, v), 0.5 * v @ M @ v,
                 REL_TOL_IDENTITY)


@pytest.mark.parametrize("case", CASE_IDS)
def test_gravity_is_gradient_of_potential(case):
    """g_i = d/deps V(integrate(q, eps e_i)): the partial derivative for q-dot = v joints,
    the derivative along the joint's velocity direction for quaternion and planar joints."""
    model, _, (q, _, _) = state_for(case)
    grad = np.empty(model.nv)
    for i in range(model.nv):
        e = np.zeros(model.nv)
        e[i] = 1.0
        grad[i] = central_difference(lambda t: ref.potential_energy(model, integrate(model, q, t * e)))
    assert_close("gravity(q) vs finite-difference dV/dq", ref.gravity(model, q), grad, FD_TOL)
    if qdot_is_v(model):  # here integrate is plain addition: the ordinary gradient
        plain = np.array([central_difference(lambda t: ref.potential_energy(model, q + t * np.eye(model.nq)[k]))
                          for k in range(model.nq)])
        assert_close("gravity(q) vs plain dV/dq", ref.gravity(model, q), plain, FD_TOL)


@pytest.mark.parametrize("case", CASE_IDS)
def test_power_balance(case):
    """v . nle(q, v) = d/dt (T + V) along q(t) = integrate(q, t v) with v held fixed."""
    model, _, (q, v, _) = state_for(case)
    dE = central_difference(lambda t: ref.kinetic_energy(model, integrate(model, q, t * v), v)
                            + ref.potential_energy(model, integrate(model, q, t * v)))
    power = v @ ref.nle(model, q, v)
    assert_close("v . nle(q, v) vs d(T + V)/dt", power, dE, FD_TOL, abs_floor=np.abs(v).max())


@pytest.mark.parametrize("case", [c for c in CASE_IDS if qdot_is_v(model_for(c))])
def test_lagrange_equations(case):
    """For q-dot = v: nle(q, v) = (dM/dt) v - dT/dq + g(q) (Lagrange), all by finite differences.

    This checks the Coriolis terms and so every joint bias c_J independently of RNEA/ABA.
    """
    model, _, (q, v, _) = state_for(case)
    dM = central_difference(lambda t: ref.crba(model, q + t * v))
    dTdq = np.array([central_difference(lambda t: ref.kinetic_energy(model, q + t * np.eye(model.nq)[k], v))
                     for k in range(model.nq)])
    expected = dM @ v - dTdq + ref.gravity(model, q)
    assert_close("nle vs Lagrange (dM/dt v - dT/dq + g)", ref.nle(model, q, v), expected, FD_TOL)


@pytest.mark.parametrize("case", CASE_IDS)
def test_body_accelerations_are_velocity_derivatives(case):
    """The forward pass a_i = X a_p + S a + c_J + v_i x S v (gravity off) equals the time
    derivative of the body velocity J_local(q(t)) v(t), with q(t) = integrate(q, t v) and
    v(t) = v + t a. A wrong c_J (or S) breaks this for its body and all its descendants."""
    model, _, (q, v, a) = state_for(case)
    kin = kinematics_alg.joint_kinematics(model, OPS, list(q), list(v))
    vel = kinematics_alg.body_velocities(model, OPS, kin, list(v))
    acc = kinematics_alg.body_accelerations(model, OPS, kin, vel, list(v), list(a), a_root=Motion())
    for i, name in enumerate(model.body_names):
        def body_velocity(t):
            return ref.frame_jacobian(model, integrate(model, q, t * v), name, "local") @ (v + t * a)
        expected = central_difference(body_velocity)
        actual = np.array(acc[i].lin + acc[i].ang, dtype=float)      # [linear; angular]
        assert_close(f"acceleration of {name} ({model.joints[i].type})", actual, expected, FD_TOL)
        assert_close(f"velocity of {name}", np.array(vel[i].lin + vel[i].ang, dtype=float),
                     ref.frame_jacobian(model, q, name, "local") @ v, REL_TOL_IDENTITY)


# ---------------------------------------------------------------- kinematics ------------

def frame_velocity_fd(model, q, v, frame):
    """(dp/dt, w_world) of a frame along q(t) = integrate(q, t v), and its placement (R, p)."""
    R, p = ref.frame_placement(model, q, frame)
    dp = central_difference(lambda t: ref.frame_placement(model, integrate(model, q, t * v), frame)[1])
    dR = central_difference(lambda t: ref.frame_placement(model, integrate(model, q, t * v), frame)[0])
    return dp, vee(dR @ R.T), R, p


@pytest.mark.parametrize("case", CASE_IDS)
def test_frame_jacobians_match_finite_differences(case):
    model, _, (q, v, _) = state_for(case)
    for frame in model.frames:
        dp, w, R, p = frame_velocity_fd(model, q, v, frame.name)
        scale = max(np.abs(v).max(), 1.0)
        expected = {
            "local_world_aligned": np.concatenate([dp, w]),
            "local": np.concatenate([R.T @ dp, R.T @ w]),
            "world": np.concatenate([dp - np.cross(w, p), w]),
        }
        for reference, velocity in expected.items():
            J = ref.frame_jacobian(model, q, frame.name, reference)
            assert J.shape == (6, model.nv)
            assert_close(f"{reference} Jacobian of {frame.name} (body {frame.body}) times v",
                         J @ v, velocity, FD_TOL, abs_floor=scale)


@pytest.mark.parametrize("case", CASE_IDS)
def test_rotations_are_orthonormal(case):
    model, _, (q, _, _) = state_for(case)
    for frame in model.frames:
        R, _ = ref.frame_placement(model, q, frame.name)
        assert_close(f"R^T R of {frame.name}", R.T @ R, np.eye(3), REL_TOL_IDENTITY)
        assert abs(np.linalg.det(R) - 1) < 1e-9, f"{frame.name}: det R = {np.linalg.det(R)}"


def homogeneous(R, p):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def transform_homogeneous(X):
    """A Plücker transform (E, r) from A to B as the pose of B in A: rotation E^T, origin r."""
    return homogeneous(np.array(X.E, dtype=float).T, np.array(X.r, dtype=float))


def rotvec_matrix(w):
    """Rodrigues' formula: the rotation by |w| about w / |w|."""
    w = np.asarray(w, dtype=float)
    angle = np.linalg.norm(w)
    if angle == 0.0:
        return np.eye(3)
    k = w / angle
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def intrinsic_euler_matrix(axes, angles):
    """Turns about the moving axes, the first applied first: "ZYX" is Rz(a) Ry(b) Rx(c)."""
    R = np.eye(3)
    for axis, angle in zip(axes, angles):
        R = R @ rotvec_matrix(np.eye(3)["XYZ".index(axis)] * angle)
    return R


def joint_homogeneous(joint, qj):
    """The pose of the child in the joint frame, computed independently of rbdgen."""
    kind, jm = joint.type, joint.model
    if kind in ("revolute", "continuous"):
        return homogeneous(rotvec_matrix(np.array(jm.axis) * qj[0]), np.zeros(3))
    if kind == "prismatic":
        return homogeneous(np.eye(3), np.array(jm.axis) * qj[0])
    if kind == "helical":
        return homogeneous(rotvec_matrix(np.array(jm.axis) * qj[0]),
                           np.array(jm.axis) * jm.pitch * qj[0])
    if kind == "spherical":
        return homogeneous(quaternion_matrix(qj / np.linalg.norm(qj)), np.zeros(3))
    if kind == "free_flyer":
        return homogeneous(quaternion_matrix(qj[3:7] / np.linalg.norm(qj[3:7])), qj[0:3])
    if kind == "translation":
        return homogeneous(np.eye(3), qj)
    if kind == "planar":
        n, u, w = (np.array(x, dtype=float) for x in (jm.normal, jm.u, jm.w))
        assert_close("planar u x w == normal", np.cross(u, w), n, 1e-12)
        return homogeneous(rotvec_matrix(n * qj[2]), qj[0] * u + qj[1] * w)
    if kind == "euler_zyx":
        return homogeneous(intrinsic_euler_matrix("ZYX", qj), np.zeros(3))
    if kind == "euler_xyz":
        return homogeneous(intrinsic_euler_matrix("XYZ", qj), np.zeros(3))
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ALL_JOINT_TYPES + ("free_flyer",))
def test_two_body_placement_by_hand(kind):
    """Body frames (identity placement) and fixed frames are the composition of the
    placements X_T and the joint poses, computed here with 4x4 matrices."""
    rng = np.random.default_rng(7)
    other = ALL_JOINT_TYPES[(ALL_JOINT_TYPES.index(kind) + 1) % len(ALL_JOINT_TYPES)] \
        if kind != "free_flyer" else "spherical"
    b = ModelBuilder("two")
    X0, X1, Xf, Xg = (random_transform(rng) for _ in range(4))
    b.add_body(-1, make_joint(kind, rng), "j0", "b0", X_T=X0, inertia=random_inertia(rng))
    b.add_fixed_body("b0", "plate", X_T=Xf, inertia=random_inertia(rng))
    b.add_body("plate", make_joint(other, rng), "j1", "b1", X_T=X1, inertia=random_inertia(rng))
    b.add_frame("tool", "b1", Xg)
    model = b.finish()
    for trial in range(3):
        q, _, _ = random_state(model, rng)
        j0, j1 = model.joints
        T0 = transform_homogeneous(X0) @ joint_homogeneous(j0, q[j0.idx_q:j0.idx_q + j0.nq])
        Tplate = T0 @ transform_homogeneous(Xf)
        T1 = Tplate @ transform_homogeneous(X1) @ joint_homogeneous(j1, q[j1.idx_q:j1.idx_q + j1.nq])
        Ttool = T1 @ transform_homogeneous(Xg)
        for name, T in (("b0", T0), ("plate", Tplate), ("b1", T1), ("tool", Ttool)):
            R, p = ref.frame_placement(model, q, name)
            assert_close(f"{kind}/{other}: rotation of {name}", R, T[:3, :3], REL_TOL_IDENTITY)
            assert_close(f"{kind}/{other}: position of {name}", p, T[:3, 3], REL_TOL_IDENTITY)


@pytest.mark.parametrize("case", CASE_IDS[::3])
def test_neutral_configuration_is_identity_joint(case):
    """At the neutral q every X_J is the identity: body poses compose the X_T alone."""
    model = model_for(case)
    q0 = np.array(model.neutral_configuration())
    poses = []
    for i in range(model.nbodies):
        parent = model.parent[i]
        base = np.eye(4) if parent < 0 else poses[parent]
        poses.append(base @ transform_homogeneous(model.X_T[i]))
        R, p = ref.frame_placement(model, q0, model.body_names[i])
        assert_close(f"neutral pose of {model.body_names[i]}", homogeneous(R, p), poses[i], REL_TOL_IDENTITY)


def test_quaternion_joints_neutral_and_axis_rotation():
    b = ModelBuilder("quat")
    b.add_body(-1, FreeFlyer(), "root", "base")
    b.add_body("base", Spherical(), "ball", "ball")
    model = b.finish()
    R, p = ref.frame_placement(model, model.neutral_configuration(), "base")
    assert_close("free-flyer neutral rotation", R, np.eye(3), 0)
    assert_close("free-flyer neutral position", p, np.zeros(3), 0)
    R, p = ref.frame_placement(model, model.neutral_configuration(), "ball")
    assert_close("spherical neutral rotation", R, np.eye(3), 0)
    # a quaternion (sin(t/2) axis, cos(t/2)) turns by t about the axis, like a revolute joint
    rng = np.random.default_rng(3)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = 0.7
    rev = ModelBuilder("rev")
    rev.add_body(-1, Revolute(tuple(axis)), "hinge", "link")
    R_rev, _ = ref.frame_placement(rev.finish(), [angle], "link")
    q = [0, 0, 0, 0, 0, 0, 1] + list(np.sin(angle / 2) * axis) + [np.cos(angle / 2)]
    R_ball, _ = ref.frame_placement(model, q, "ball")
    assert_close("spherical quaternion vs revolute", R_ball, R_rev, REL_TOL_IDENTITY)


# ---------------------------------------------------------------- Euler joints ----------

@pytest.mark.parametrize("joint_cls", [EulerZYX, EulerXYZ])
@pytest.mark.parametrize("placed", [False, True])
def test_euler_joint_angular_velocity(joint_cls, placed):
    """A single Euler-joint body: J v's angular rows equal the finite difference of its
    rotation (w~ = dR/dt R^T in world axes, R^T dR/dt in the body), over many angles
    including near the pitch singularity."""
    rng = np.random.default_rng(11 + placed)
    b = ModelBuilder("euler")
    X_T = random_transform(rng) if placed else None
    b.add_body(-1, joint_cls(), "j", "link", X_T=X_T, inertia=random_inertia(rng))
    model = b.finish()
    angles = [rng.uniform(-np.pi, np.pi, 3) for _ in range(6)]
    angles += [np.array([0.3, np.pi / 2 - 1e-3, -0.4]), np.zeros(3)]
    for q in angles:
        v = rng.uniform(-2, 2, 3)
        dR = central_difference(lambda t: ref.frame_placement(model, q + t * v, "link")[0])
        R, _ = ref.frame_placement(model, q, "link")
        J_world = ref.frame_jacobian(model, q, "link", "local_world_aligned")
        J_local = ref.frame_jacobian(model, q, "link", "local")
        assert_close(f"{joint_cls.type} world angular velocity at q={q}", J_world[3:] @ v, vee(dR @ R.T),
                     FD_TOL, abs_floor=np.abs(v).max())
        assert_close(f"{joint_cls.type} body angular velocity at q={q}", J_local[3:] @ v, vee(R.T @ dR),
                     FD_TOL, abs_floor=np.abs(v).max())
        assert_close(f"{joint_cls.type} no linear velocity", J_world[:3] @ v, np.zeros(3), REL_TOL_IDENTITY)
        # the motion subspace itself: S(q) = J_local (identity body frame)
        X_J, S, S_dot = joint_cls().calc(OPS, list(q), list(v))
        c_J = combine(S_dot, list(v))
        S_mat = np.array([s.ang for s in S]).T
        assert_close(f"{joint_cls.type} S vs local Jacobian", S_mat, J_local[3:], REL_TOL_IDENTITY)
        # c_J = d/dt (S(q(t))) v along q(t) = q + t v
        dS = central_difference(lambda t: np.array(
            [s.ang for s in joint_cls().calc(OPS, list(q + t * v), list(v))[1]]).T)
        assert_close(f"{joint_cls.type} c_J vs dS/dt v", np.array(c_J.ang, dtype=float), dS @ v, FD_TOL,
                     abs_floor=np.abs(v).max() ** 2)
        assert_close(f"{joint_cls.type} c_J linear part", np.array(c_J.lin, dtype=float), np.zeros(3), 0)


@pytest.mark.parametrize("joint_cls", [EulerZYX, EulerXYZ])
def test_euler_joint_dynamics_single_body(joint_cls):
    """Euler-joint rigid body: rnea against the Newton-Euler equations written by hand."""
    rng = np.random.default_rng(5)
    b = ModelBuilder("euler", gravity=(0.0, 0.0, 0.0))
    inertia = Inertia.from_com(1.5, (0.0, 0.0, 0.0), ((0.3, 0.01, 0.02), (0.01, 0.2, 0.03), (0.02, 0.03, 0.25)))
    b.add_body(-1, joint_cls(), "j", "link", inertia=inertia)
    model = b.finish()
    I = np.array(inertia.I, dtype=float)
    for _ in range(5):
        q, qd, qdd = (rng.uniform(-2, 2, 3) for _ in range(3))
        # body angular velocity and acceleration by finite differences of the rotation
        def omega(t):
            qt, qdt = q + t * qd + 0.5 * t * t * qdd, qd + t * qdd
            R = ref.frame_placement(model, qt, "link")[0]
            dR = central_difference(lambda s: ref.frame_placement(model, qt + s * qdt, "link")[0], 1e-5)
            return vee(R.T @ dR)
        w = omega(0.0)
        wd = central_difference(omega, 1e-4)
        torque_body = I @ wd + np.cross(w, I @ w)
        J = ref.frame_jacobian(model, q, "link", "local")[3:]
        assert_close(f"{joint_cls.type} rnea vs Euler's equations", ref.rnea(model, q, qd, qdd),
                     J.T @ torque_body, 1e-5)


# ---------------------------------------------------------------- batches ---------------

def pendulum():
    """One revolute body: every output scalar is a batch array (no literal zeros)."""
    b = ModelBuilder("pendulum")
    b.add_body(-1, Revolute((0, 1, 0)), "hinge", "link",
               inertia=Inertia.from_com(1.0, (0, 0, -0.5), ((0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1))))
    return b.finish()


@pytest.mark.parametrize("which", ["pendulum", "mixed-tree-floating-0", "spherical-chain-fixed"])
def test_batched_reference_matches_single_calls(which):
    """A leading batch dimension gives, row by row, the unbatched results."""
    model = pendulum() if which == "pendulum" else model_for(which)
    rng = np.random.default_rng(9)
    B = 3
    states = [random_state(model, rng) for _ in range(B)]
    Q, V, A = (np.array([s[k] for s in states]) for k in range(3))
    F = rng.uniform(-1, 1, (B, model.nbodies, 6))
    frame = model.body_names[-1]
    batched = {
        "rnea": ref.rnea(model, Q, V, A, F),
        "aba": ref.aba(model, Q, V, A, F),
        "crba": ref.crba(model, Q),
        "nle": ref.nle(model, Q, V),
        "gravity": ref.gravity(model, Q),
        "frame_jacobian": ref.frame_jacobian(model, Q, frame, "local"),
        "rotation": ref.frame_placement(model, Q, frame)[0],
        "position": ref.frame_placement(model, Q, frame)[1],
        "kinetic_energy": ref.kinetic_energy(model, Q, V),
        "potential_energy": ref.potential_energy(model, Q),
        "com": ref.com(model, Q),
    }
    for k in range(B):
        single = {
            "rnea": ref.rnea(model, Q[k], V[k], A[k], F[k]),
            "aba": ref.aba(model, Q[k], V[k], A[k], F[k]),
            "crba": ref.crba(model, Q[k]),
            "nle": ref.nle(model, Q[k], V[k]),
            "gravity": ref.gravity(model, Q[k]),
            "frame_jacobian": ref.frame_jacobian(model, Q[k], frame, "local"),
            "rotation": ref.frame_placement(model, Q[k], frame)[0],
            "position": ref.frame_placement(model, Q[k], frame)[1],
            "kinetic_energy": ref.kinetic_energy(model, Q[k], V[k]),
            "potential_energy": ref.potential_energy(model, Q[k]),
            "com": ref.com(model, Q[k]),
        }
        for name, value in single.items():
            assert batched[name].shape == (B,) + value.shape, \
                f"batched {name}: shape {batched[name].shape}, expected {(B,) + value.shape}"
            assert_close(f"batched {name}[{k}]", batched[name][k], value, REL_TOL_IDENTITY)
    tau = ref.rnea(model, Q, V, A)
    assert_close("batched aba(rnea)", ref.aba(model, Q, V, tau), A, REL_TOL_IDENTITY)


# ---------------------------------------------------------------- spatial algebra -------

def skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def plucker(X):
    """The explicit 6x6 X = [E 0; -E r~ E] on [angular; linear] motion vectors."""
    E, r = np.array(X.E, dtype=float), np.array(X.r, dtype=float)
    out = np.zeros((6, 6))
    out[:3, :3] = E
    out[3:, 3:] = E
    out[3:, :3] = -E @ skew(r)
    return out


def vec(m):
    return np.array(m.ang + m.lin, dtype=float)


def random_motion(rng):
    return Motion(tuple(rng.normal(size=3)), tuple(rng.normal(size=3)))


def random_force(rng):
    return Force(tuple(rng.normal(size=3)), tuple(rng.normal(size=3)))


def random_symmetric6(rng, spd):
    A = rng.normal(size=(6, 6))
    return A @ A.T + 0.1 * np.eye(6) if spd else (A + A.T) / 2


def as_tuple66(M):
    return tuple(tuple(float(x) for x in row) for row in M)


SEEDS = range(6)


@pytest.mark.parametrize("seed", SEEDS)
def test_transform_actions_match_matrices(seed):
    rng = np.random.default_rng(seed)
    X = random_transform(rng, scale=2.0)
    Xm = plucker(X)
    m, f = random_motion(rng), random_force(rng)
    assert_close("apply_motion == X m", vec(X.apply_motion(m)), Xm @ vec(m), REL_TOL_IDENTITY)
    assert_close("apply_force == X^-T f", vec(X.apply_force(f)), np.linalg.inv(Xm).T @ vec(f), REL_TOL_IDENTITY)
    assert_close("inv_apply_motion == X^-1 m", vec(X.inv_apply_motion(m)), np.linalg.solve(Xm, vec(m)),
                 REL_TOL_IDENTITY)
    assert_close("inv_apply_force == X^T f", vec(X.inv_apply_force(f)), Xm.T @ vec(f), REL_TOL_IDENTITY)
    assert_close("inverse == X^-1", plucker(X.inverse()), np.linalg.inv(Xm), REL_TOL_IDENTITY)
    Y = random_transform(rng, scale=2.0)
    assert_close("compose == X Y", plucker(X.compose(Y)), Xm @ plucker(Y), REL_TOL_IDENTITY)
    # power is invariant: (X m) . (X* f) == m . f
    assert_close("power invariance", X.apply_motion(m).dot(X.apply_force(f)), m.dot(f), REL_TOL_IDENTITY)


@pytest.mark.parametrize("seed", SEEDS)
def test_matrix_and_inertia_to_parent(seed):
    rng = np.random.default_rng(100 + seed)
    X = random_transform(rng, scale=2.0)
    Xm = plucker(X)
    for spd in (False, True):
        M = random_symmetric6(rng, spd)
        out = np.array(X.matrix_to_parent(as_tuple66(M)), dtype=float)
        assert_close(f"matrix_to_parent == X^T M X (spd={spd})", out, Xm.T @ M @ Xm, REL_TOL_IDENTITY)
    inertia = random_inertia(rng)
    Im = np.array(inertia.matrix(), dtype=float)
    assert_close("inertia_to_parent == X^T I X", np.array(X.inertia_to_parent(inertia).matrix(), dtype=float),
                 Xm.T @ Im @ Xm, REL_TOL_IDENTITY)
    # massless inertia (a pure rotational part) must work too (no division by m)
    massless = Inertia(0, (0, 0, 0), inertia.I)
    Mm = np.array(massless.matrix(), dtype=float)
    assert_close("inertia_to_parent (m = 0)", np.array(X.inertia_to_parent(massless).matrix(), dtype=float),
                 Xm.T @ Mm @ Xm, REL_TOL_IDENTITY)
    # matrix_to_parent of an inertia's matrix agrees with inertia_to_parent
    assert_close("matrix_to_parent(I.matrix()) == inertia_to_parent(I).matrix()",
                 np.array(X.matrix_to_parent(inertia.matrix()), dtype=float),
                 np.array(X.inertia_to_parent(inertia).matrix(), dtype=float), REL_TOL_IDENTITY)
    # sums: (I1 + I2).matrix() == I1.matrix() + I2.matrix()
    other = random_inertia(rng)
    assert_close("inertia sum", np.array((inertia + other).matrix(), dtype=float),
                 Im + np.array(other.matrix(), dtype=float), REL_TOL_IDENTITY)


@pytest.mark.parametrize("seed", SEEDS)
def test_inertia_products_and_cross_operators(seed):
    rng = np.random.default_rng(200 + seed)
    inertia = random_inertia(rng)
    Im = np.array(inertia.matrix(), dtype=float)
    assert_close("inertia matrix symmetric", Im, Im.T, 0)
    assert np.linalg.eigvalsh(Im).min() > 0, "rigid-body inertia not positive definite"
    m = random_motion(rng)
    assert_close("Inertia.apply == I m", vec(inertia.apply(m)), Im @ vec(m), REL_TOL_IDENTITY)
    # Steiner: from_com equals the COM inertia moved by a pure translation
    mass, com = inertia.m, np.array(inertia.com)
    Ic = np.array(inertia.I) - mass * (com @ com * np.eye(3) - np.outer(com, com))
    at_com = np.zeros((6, 6))
    at_com[:3, :3], at_com[3:, 3:] = Ic, mass * np.eye(3)
    X_com = plucker(Transform(((1, 0, 0), (0, 1, 0), (0, 0, 1)), tuple(com)))  # body -> COM frame
    assert_close("Inertia.from_com vs translated COM inertia", Im, X_com.T @ at_com @ X_com, REL_TOL_IDENTITY)
    # crm and crf
    w, u = np.array(m.ang), np.array(m.lin)
    crm = np.zeros((6, 6))
    crm[:3, :3], crm[3:, :3], crm[3:, 3:] = skew(w), skew(u), skew(w)
    n = random_motion(rng)
    f = random_force(rng)
    assert_close("cross_motion == crm(v) m", vec(m.cross_motion(n)), crm @ vec(n), REL_TOL_IDENTITY)
    assert_close("cross_force == -crm(v)^T f", vec(m.cross_force(f)), -crm.T @ vec(f), REL_TOL_IDENTITY)
    # the velocity-product force v x* (I v)
    assert_close("Inertia.bias_force == crf(v) I v", vec(inertia.bias_force(m)), -crm.T @ Im @ vec(m),
                 REL_TOL_IDENTITY)


@pytest.mark.parametrize("n", range(1, 7))
def test_symmetric_inverse_and_solve(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        A = rng.normal(size=(n, n))
        D = A @ A.T + 0.5 * np.eye(n)
        inv = np.array(symmetric_inverse([[float(x) for x in row] for row in D]), dtype=float)
        expected = np.linalg.inv(D)
        assert_close(f"symmetric_inverse {n}x{n}", inv, expected, REL_TOL_IDENTITY)
        assert_close(f"symmetric_inverse {n}x{n} symmetric", inv, inv.T, 0)
        assert_close(f"D symmetric_inverse(D) {n}x{n}", D @ inv, np.eye(n), REL_TOL_IDENTITY)
        # ABA's root of several coordinates: one solve with the same factors, no inverse
        b = rng.normal(size=n)
        x = np.array(symmetric_solve([[float(x) for x in row] for row in D], list(b)), dtype=float)
        assert_close(f"D symmetric_solve(D, b) {n}x{n}", D @ x, b, REL_TOL_IDENTITY)
        assert_close(f"symmetric_solve {n}x{n}", x, np.linalg.solve(D, b), REL_TOL_IDENTITY)
