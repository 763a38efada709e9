"""rbdgen's derivatives and regressor against Pinocchio's on random trees with every joint type.

tests/test_derivatives.py compares them with Pinocchio on URDF robots, whose joints are only
revolute, continuous, prismatic and the free-flyer, and checks the other joint types against
finite differences of rbdgen itself. Here each random tree (tests/trees.random_tree) is rebuilt
as a pinocchio.Model (PinocchioTree, built with addJoint / appendBodyToJoint), so that every
joint type is checked against an outside implementation:

1. the conversion: Pinocchio's rnea and crba equal rbdgen's (1e-9), and its inertial
   parameters are rbdgen's (after the frame rotations below);
2. at two seeded states per tree, 1e-8 relative: rnea_derivatives against
   computeRNEADerivatives, aba_derivatives against computeABADerivatives (Minv symmetrized),
   gravity_derivatives against computeGeneralizedGravityDerivatives, regressor against
   computeJointTorqueRegressor, and the world-frame analytic_rnea_derivatives (on the trees
   where `applies`) against computeRNEADerivatives;
3. euler_zyx against Pinocchio's own JointModelSphericalZYX, whose derivatives Pinocchio 4.1
   gets wrong (see test_spherical_zyx).

How the tree becomes a Pinocchio model:
- Bodies are added depth-first. rbdgen only needs a parent before its children; Pinocchio's
  CRBA (and what uses it) assumes each subtree's velocities are contiguous: on tree 1 below,
  added in rbdgen's order, pin.crba is off by 6.6 (absolute) while pin.rnea agrees. Vectors and matrices
  are permuted back to rbdgen's order (PinocchioTree.v_index).
- rbdgen's X_T = (E, r) (E: parent to child coordinates) is the placement SE3(E^T, r), and
  Inertia(m, h = m c, I at the origin) is pin.Inertia(m, c, I - m (|c|^2 1 - c c^T)).
- revolute -> RevoluteUnaligned, prismatic -> PrismaticUnaligned, helical ->
  HelicalUnaligned (same pitch: rotation q and translation pitch q along the axis),
  spherical -> Spherical, free_flyer -> FreeFlyer, translation -> Translation.
- continuous -> RUBZ and planar -> Planar in a rotated frame: Pinocchio 4.1's Python
  RevoluteUnboundedUnaligned has no axis argument, and its Planar moves in the xy plane. The
  Pinocchio joint's frame is rbdgen's joint frame turned by R = [x y axis] (planar: [u w
  normal]), the body hangs from it at R^T; the motion and v are the same, the body's
  inertial parameters are those rotated by R (the regressor's columns are mapped).
- euler_zyx and euler_xyz -> three revolute joints RZ RY RX (RX RY RZ) with two massless
  bodies between them: the same rotation, q, v = q-dot and generalized forces. Pinocchio has
  no XYZ joint; its SphericalZYX is only used in test_spherical_zyx.
"""

import functools

import numpy as np
import pinocchio as pin
import pytest

from helpers import REL_TOL_PINOCCHIO, assert_close
from rbdgen.runtime.pinocchio_bridge import joint_q_to_pinocchio
from rbdgen import reference as ref
from rbdgen.algorithms import rnea_derivatives as world_frame
from rbdgen.algorithms.regressor import INERTIA_ENTRIES, PER_BODY
from rbdgen.runtime.reference import OPS
from trees import ALL_JOINT_TYPES, random_state, random_tree

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

REL_TOL_DERIVATIVES = 1e-8    # against Pinocchio's derivatives and regressor
FD_STEP = 1e-6
FD_TOL = 1e-6                 # central differences: O(h^2) truncation, O(eps / h) rounding
STATES = 2                    # seeded states per tree

CONSTANT_SUBSPACE = tuple(k for k in ALL_JOINT_TYPES if not k.startswith("euler"))
# id: (seed, bodies, joint types, floating base, branched). Every kind occurs in each tree;
# the last two have no Euler joint, so that the world-frame algorithm applies to them.
TREES = {
    "fixed": (1, len(ALL_JOINT_TYPES) + 2, ALL_JOINT_TYPES, False, True),
    "floating": (2, len(ALL_JOINT_TYPES) + 3, ALL_JOINT_TYPES, True, True),
    "fixed-constant-subspace": (4, len(CONSTANT_SUBSPACE) + 2, CONSTANT_SUBSPACE, False, True),
    "floating-chain": (5, len(CONSTANT_SUBSPACE) + 2, CONSTANT_SUBSPACE, True, False),
}


@functools.lru_cache(maxsize=None)
def tree_model(key):
    seed, n, kinds, floating, branched = TREES[key]
    return random_tree(seed, n, kinds, floating_base=floating, branched=branched)


# ================================================================ the conversion ==========

def _se3(transform):
    """rbdgen Transform (E: parent -> child coordinates, r: child origin) -> the child's placement."""
    return pin.SE3(np.array(transform.E, dtype=float).T, np.array(transform.r, dtype=float))


def _rotation(R):
    return pin.SE3(np.asarray(R, dtype=float), np.zeros(3))


def _frame_with_z(axis):
    """A rotation whose third column is the unit `axis`."""
    z = np.array(axis, dtype=float)
    x = np.cross((1.0, 0.0, 0.0) if abs(z[0]) < 0.9 else (0.0, 1.0, 0.0), z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def pinocchio_joints(joint, spherical_zyx=False):
    """(Pinocchio joint models chained from the joint frame, rotation C of the first one's frame
    in rbdgen's joint frame). The body hangs from the last one at C^-1."""
    kind, jm, same = joint.type, joint.model, pin.SE3.Identity()
    axis = np.array(jm.axis, dtype=float) if hasattr(jm, "axis") else None
    if kind == "revolute":
        return [pin.JointModelRevoluteUnaligned(axis)], same
    if kind == "continuous":
        return [pin.JointModelRUBZ()], _rotation(_frame_with_z(jm.axis))
    if kind == "prismatic":
        return [pin.JointModelPrismaticUnaligned(axis)], same
    if kind == "helical":
        return [pin.JointModelHelicalUnaligned(axis, float(jm.pitch))], same
    if kind == "planar":
        return [pin.JointModelPlanar()], _rotation(np.array([jm.u, jm.w, jm.normal], dtype=float).T)
    if kind == "euler_zyx" and spherical_zyx:
        return [pin.JointModelSphericalZYX()], same
    simple = {"spherical": [pin.JointModelSpherical], "free_flyer": [pin.JointModelFreeFlyer],
              "translation": [pin.JointModelTranslation],
              "euler_zyx": [pin.JointModelRZ, pin.JointModelRY, pin.JointModelRX],
              "euler_xyz": [pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ]}
    return [make() for make in simple[kind]], same


def pinocchio_inertia(inertia):
    """rbdgen Inertia(m, h = m c, I about the origin) -> pin.Inertia(m, c, I about the COM)."""
    m = float(inertia.m)
    h = np.array(inertia.h, dtype=float)
    c = h / m if m else np.zeros(3)
    I = np.array(inertia.I, dtype=float)
    return pin.Inertia(m, c, I - m * (c @ c * np.eye(3) - np.outer(c, c)))


def rotated_parameters(R):
    """The 10 x 10 map from a body's inertial parameters (m, m c, I at the origin; regressor
    order) to the same body's in a frame with the same origin whose coordinates are R times its own."""
    T = np.zeros((PER_BODY, PER_BODY))
    for k, p in enumerate(np.eye(PER_BODY)):
        I = np.zeros((3, 3))
        for (r, c), x in zip(INERTIA_ENTRIES, p[4:]):
            I[r, c] = I[c, r] = x
        J = R @ I @ R.T
        T[:, k] = np.concatenate([p[:1], R @ p[1:4], [J[r, c] for r, c in INERTIA_ENTRIES]])
    return T


def depth_first(model):
    """The bodies in depth-first order, children in index order."""
    order, stack = [], [i for i in reversed(range(model.nbodies)) if model.parent[i] < 0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack += reversed(model.children(i))
    return order


class PinocchioTree:
    """Pinocchio's model of an rbdgen Model (see the module docstring) and the maps between
    their coordinates: Pinocchio's velocity k is rbdgen's v_index[k]; Pinocchio's inertial
    parameters are param_map @ rbdgen's."""

    def __init__(self, model, spherical_zyx=False):
        self.rbdgen = model
        self.order = depth_first(model)
        pm = pin.Model()
        pm.gravity = pin.Motion(np.array(model.gravity, dtype=float), np.zeros(3))
        last, body_placement = {}, {}   # per rbdgen body: its Pinocchio joint, its placement there
        blocks = []                     # (Pinocchio joint, rbdgen body, rotation)
        for i in self.order:
            joint, p = model.joints[i], model.parent[i]
            parent = last[p] if p >= 0 else 0
            placement = (body_placement[p] if p >= 0 else pin.SE3.Identity()) * _se3(model.X_T[i])
            models, C = pinocchio_joints(joint, spherical_zyx)
            for k, jm in enumerate(models):
                parent = pm.addJoint(parent, jm, placement * C if k == 0 else pin.SE3.Identity(), f"{joint.name}/{k}")
            body_placement[i], last[i] = C.inverse(), parent
            pm.appendBodyToJoint(parent, pinocchio_inertia(model.inertia[i]), C.inverse())
            blocks.append((parent, i, C.inverse().rotation))
        self.model = pm
        self.v_index = np.array([model.joints[i].idx_v + k for i in self.order for k in range(model.joints[i].nv)])
        self.param_map = np.zeros((PER_BODY * (pm.njoints - 1), PER_BODY * model.nbodies))
        for jid, i, R in blocks:
            self.param_map[PER_BODY * (jid - 1):PER_BODY * jid, PER_BODY * i:PER_BODY * (i + 1)] = rotated_parameters(R)

    def q(self, q):
        """rbdgen q -> Pinocchio's: depth-first, continuous and planar angles as (cos, sin)."""
        return np.array([x for i in self.order for x in joint_q_to_pinocchio(self.rbdgen.joints[i], q)])

    def v(self, v):
        """A velocity-like rbdgen vector in Pinocchio's order."""
        return np.asarray(v)[self.v_index]

    def rows(self, M):
        """Pinocchio rows (or entries) in rbdgen's order."""
        out = np.empty_like(M)
        out[self.v_index] = M
        return out

    def matrix(self, M):
        """An nv x nv Pinocchio matrix in rbdgen's order."""
        out = np.empty_like(M)
        out[np.ix_(self.v_index, self.v_index)] = M
        return out

    def regressor(self, Y):
        """Pinocchio's regressor as rbdgen's: rows reordered, columns those of rbdgen's bodies."""
        return self.rows(Y) @ self.param_map


@functools.lru_cache(maxsize=None)
def pinocchio_tree(key, spherical_zyx=False):
    return PinocchioTree(tree_model(key), spherical_zyx)


def states(model, seed):
    """STATES seeded (q, v, a, tau)."""
    rng = np.random.default_rng(seed)
    return [random_state(model, rng) + (rng.uniform(-2, 2, model.nv),) for _ in range(STATES)]


def _symmetric(upper):
    return np.triu(upper) + np.triu(upper, 1).T


# ================================================================ tests ===================

def test_trees_cover_every_joint_type():
    """Every kind, a planar joint with a normal other than z and a continuous joint off the z
    axis (the rotated frames), a chain, and trees the world-frame algorithm applies to."""
    joints = [j for key in TREES for j in tree_model(key).joints]
    assert {j.type for j in joints} >= {"revolute", "continuous", "prismatic", "helical", "spherical", "free_flyer",
                                        "translation", "planar", "euler_zyx", "euler_xyz"}
    assert any(j.type == "planar" and j.model.normal != (0, 0, 1) for j in joints)
    assert any(j.type == "continuous" and j.model.axis != (0, 0, 1) for j in joints)
    assert [world_frame.applies(tree_model(key)) for key in TREES] == [False, False, True, True]


@pytest.mark.parametrize("key", list(TREES))
def test_conversion(key):
    """Pinocchio's model is rbdgen's: rnea and crba agree, and so do the inertial parameters."""
    model, tree = tree_model(key), pinocchio_tree(key)
    pm, data = tree.model, tree.model.createData()
    assert (pm.nv, pm.nq) == (model.nv, len(tree.q(model.neutral_configuration())))
    pi = np.concatenate([I.toDynamicParameters() for I in pm.inertias[1:]])
    assert_close(f"{key} parameters", tree.param_map @ ref.parameters(model), pi, REL_TOL_PINOCCHIO)
    for k, (q, v, a, _) in enumerate(states(model, 11)):
        qp = tree.q(q)
        assert_close(f"{key} state {k} rnea", ref.rnea(model, q, v, a),
                     tree.rows(pin.rnea(pm, data, qp, tree.v(v), tree.v(a))), REL_TOL_PINOCCHIO)
        assert_close(f"{key} state {k} crba", ref.crba(model, q), tree.matrix(_symmetric(pin.crba(pm, data, qp))),
                     REL_TOL_PINOCCHIO)


@pytest.mark.parametrize("key", list(TREES))
def test_derivatives_match_pinocchio(key):
    model, tree = tree_model(key), pinocchio_tree(key)
    pm, data = tree.model, tree.model.createData()
    for k, (q, v, a, tau) in enumerate(states(model, 13)):
        name = f"{key} state {k}"
        qp, vp = tree.q(q), tree.v(v)
        pin.computeRNEADerivatives(pm, data, qp, vp, tree.v(a))
        dtau_dq, dtau_dv = tree.matrix(data.dtau_dq), tree.matrix(data.dtau_dv)
        dq, dv = ref.rnea_derivatives(model, q, v, a)
        assert_close(f"{name} dtau_dq", dq, dtau_dq, REL_TOL_DERIVATIVES)
        assert_close(f"{name} dtau_dv", dv, dtau_dv, REL_TOL_DERIVATIVES)
        if world_frame.applies(model):
            dq, dv = world_frame.analytic_rnea_derivatives(model, OPS, *([float(x) for x in s] for s in (q, v, a)))
            assert_close(f"{name} world-frame dtau_dq", np.array(dq, dtype=float), dtau_dq, REL_TOL_DERIVATIVES)
            assert_close(f"{name} world-frame dtau_dv", np.array(dv, dtype=float), dtau_dv, REL_TOL_DERIVATIVES)
        pin.computeABADerivatives(pm, data, qp, vp, tree.v(tau))
        for label, ours, theirs in zip(("ddq_dq", "ddq_dv", "ddq_dtau"), ref.aba_derivatives(model, q, v, tau),
                                       (data.ddq_dq, data.ddq_dv, _symmetric(data.Minv))):
            assert_close(f"{name} {label}", ours, tree.matrix(theirs), REL_TOL_DERIVATIVES)
        assert_close(f"{name} dg_dq", ref.gravity_derivatives(model, q),
                     tree.matrix(pin.computeGeneralizedGravityDerivatives(pm, data, qp)), REL_TOL_DERIVATIVES)
        assert_close(f"{name} regressor", ref.regressor(model, q, v, a),
                     tree.regressor(pin.computeJointTorqueRegressor(pm, data, qp, vp, tree.v(a))), REL_TOL_DERIVATIVES)


def _central(f, x0, n, move):
    """Columns (f(move(x0, h e_k)) - f(move(x0, -h e_k))) / 2h, k < n (f's results copied:
    Pinocchio may return a view of its Data)."""
    def at(step):
        return np.array(f(move(x0, step)), dtype=float)
    return np.stack([(at(FD_STEP * e) - at(-FD_STEP * e)) / (2 * FD_STEP) for e in np.eye(n)], axis=-1)


@pytest.mark.parametrize("key", ["fixed", "floating"])
def test_spherical_zyx(key):
    """euler_zyx as Pinocchio's own JointModelSphericalZYX (q = the angles about z, y, x, v = q-dot).

    Its dynamics agree with rbdgen's (rnea, crba, the regressor), but Pinocchio 4.1's
    derivatives there are not the derivatives of its own dynamics. Against central differences
    of pin.rnea, pin.aba and pin.computeGeneralizedGravity along pin.integrate, at this test's
    state, relative to the largest entry: computeRNEADerivatives is off by 0.52 (dtau_dq) and
    0.43 (dtau_dv) on the "fixed" tree, 0.0094 and 0.0016 on "floating" (dtau_dq in the columns
    of the joint's second and third angles, where its motion subspace depends on q);
    computeABADerivatives by 0.062 and 0.28 ("fixed"), 1.0 and 0.14 ("floating");
    computeGeneralizedGravityDerivatives by 0.56 and 0.0052. rbdgen's agree with the same
    differences to 4e-10. So euler_zyx meets Pinocchio's derivatives only as three revolute
    joints (test_derivatives_match_pinocchio); here rbdgen's derivatives are compared with
    differences of Pinocchio's dynamics.
    """
    model, tree = tree_model(key), pinocchio_tree(key, spherical_zyx=True)
    pm = tree.model
    data = pm.createData()

    def along_q(f, qp):
        return tree.matrix(_central(f, qp, pm.nv, lambda x, e: pin.integrate(pm, x, e)))

    def along_v(f, x):
        return tree.matrix(_central(f, x, pm.nv, lambda x, e: x + e))

    q, v, a, tau = states(model, 17)[0]
    qp, vp, ap, taup = tree.q(q), tree.v(v), tree.v(a), tree.v(tau)
    assert_close(f"{key} rnea", ref.rnea(model, q, v, a), tree.rows(pin.rnea(pm, data, qp, vp, ap)), REL_TOL_PINOCCHIO)
    assert_close(f"{key} crba", ref.crba(model, q), tree.matrix(_symmetric(pin.crba(pm, data, qp))), REL_TOL_PINOCCHIO)
    assert_close(f"{key} regressor", ref.regressor(model, q, v, a),
                 tree.regressor(pin.computeJointTorqueRegressor(pm, data, qp, vp, ap)), REL_TOL_DERIVATIVES)
    dq, dv = ref.rnea_derivatives(model, q, v, a)
    ddq_dq, ddq_dv, _ = ref.aba_derivatives(model, q, v, tau)
    assert_close(f"{key} dtau_dq", dq, along_q(lambda x: pin.rnea(pm, data, x, vp, ap), qp), FD_TOL)
    assert_close(f"{key} dtau_dv", dv, along_v(lambda x: pin.rnea(pm, data, qp, x, ap), vp), FD_TOL)
    assert_close(f"{key} ddq_dq", ddq_dq, along_q(lambda x: pin.aba(pm, data, x, vp, taup), qp), FD_TOL)
    assert_close(f"{key} ddq_dv", ddq_dv, along_v(lambda x: pin.aba(pm, data, qp, x, taup), vp), FD_TOL)
    assert_close(f"{key} dg_dq", ref.gravity_derivatives(model, q),
                 along_q(lambda x: pin.computeGeneralizedGravity(pm, data, x), qp), FD_TOL)
