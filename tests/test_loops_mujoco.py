"""An MJCF <equality connect> against MuJoCo's own dynamics: MuJoCo's constraints are soft, so
the rigid closed-chain dynamics is assembled from MuJoCo's quantities (its mass matrix, bias
forces, the connect's point Jacobians and their time derivatives, mj_jacDot) and solved as a
KKT system; rbdgen's constrained_dynamics must equal it, multipliers included."""

import numpy as np
import pytest

import rbdgen
from rbdgen import reference

# two hinges to body b and a ball joint to body c, joined at a point: 5 dofs, 3 loop rows
MJCF_CONNECT = """<mujoco model="mjcf_connect"><worldbody>
<body name="a"><joint name="j1" type="hinge" axis="0 0 1"/><geom type="capsule" size="0.05" fromto="0 0 0 0 0.4 0"/>
  <body name="b" pos="0 0.4 0"><joint name="j2" type="hinge" axis="0.3 0 1"/>
    <geom type="capsule" size="0.05" fromto="0 0 0 1 0.1 0"/></body></body>
<body name="c" pos="1 0 0.1"><joint name="j3" type="ball" pos="0 0 0.05"/>
  <geom type="capsule" size="0.05" fromto="0 0 0 0 0.5 0"/></body>
</worldbody><equality><connect name="close" body1="b" body2="c" anchor="1 0.1 0"/></equality></mujoco>"""
REL_TOL = 1e-12


def rigid_mujoco(mujoco, m, d, tau):
    """(q-ddot, lambda) of M q-ddot = tau - bias + G^T lambda, G q-ddot = -G-dot v, from
    MuJoCo's quantities at d's state; G = the connect's point Jacobian of body1 minus body2's."""
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    data, bodies = m.eq_data[0], (m.eq_obj1id[0], m.eq_obj2id[0])
    G, G_dot = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    for body, anchor, sign in zip(bodies, (data[0:3], data[3:6]), (1, -1)):
        point = d.xpos[body] + d.xmat[body].reshape(3, 3) @ anchor
        J, J_dot = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mujoco.mj_jac(m, d, J, None, point, body)
        mujoco.mj_jacDot(m, d, J_dot, None, point, body)
        G, G_dot = G + sign * J, G_dot + sign * J_dot
    kkt = np.block([[M, -G.T], [G, np.zeros((3, 3))]])
    solution = np.linalg.solve(kkt, np.concatenate([tau - d.qfrc_bias, -G_dot @ d.qvel]))
    return solution[:m.nv], solution[m.nv:]


def test_an_mjcf_connect_moves_as_mujocos_rigid_kkt(tmp_path):
    mujoco = pytest.importorskip("mujoco")
    path = tmp_path / "connect.xml"
    path.write_text(MJCF_CONNECT)
    with pytest.warns(UserWarning, match="contacts"):
        model = rbdgen.load_model(path)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    for _ in range(3):
        d.qpos[:] = rng.normal(size=m.nq)
        mujoco.mj_normalizeQuat(m, d.qpos)
        d.qvel[:] = rng.normal(size=m.nv)
        tau_mujoco = rng.normal(size=m.nv)
        mujoco.mj_forward(m, d)
        qacc, lam_mujoco = rigid_mujoco(mujoco, m, d, tau_mujoco)
        q, v = reference.from_mujoco(model, d.qpos, d.qvel)
        _, tau = reference.from_mujoco(model, d.qpos, tau_mujoco)     # generalized forces: the velocities' basis
        _, want = reference.from_mujoco(model, d.qpos, qacc)
        qdd, lam, _ = reference.constrained_dynamics(model, q, v, tau)
        np.testing.assert_allclose(qdd, want, rtol=0, atol=REL_TOL * np.abs(want).max())
        np.testing.assert_allclose(lam, lam_mujoco, rtol=0, atol=REL_TOL * np.abs(lam_mujoco).max())
