"""MuJoCo's layout of q and v against rbdgen's (Pinocchio's): the same file in the reference
(rbdgen.reference.to_mujoco) and in every generated module (module.to_mujoco, a copy). Needs
only NumPy.

A free joint is q = [x y z qx qy qz qw], v = [linear; angular] both in the body frame here, and
qpos = [x y z qw qx qy qz], qvel = [linear in world axes; angular in the body frame] in
MuJoCo; a ball joint's quaternion is [qx qy qz qw] here and [qw qx qy qz] in MuJoCo. Hinges
(revolute, continuous) and slides (prismatic) are the same number in both.
"""

import numpy as np


def mujoco_layout(kinds, nq, nv, q, v, to):
    """(qpos, qvel) from (q, v) when `to`, else (q, v) from (qpos, qvel); v may be None. kinds:
    (joint type, idx_q, idx_v) per joint. Leading batch dimensions are kept."""
    q = np.array(q, dtype=float)
    v = None if v is None else np.array(v, dtype=float)
    if q.shape[-1:] != (nq,) or (v is not None and v.shape != q.shape[:-1] + (nv,)):
        raise ValueError(f"expected q (..., {nq}) and v (..., {nv}) with the same leading dimensions, got "
                         f"{q.shape} and {None if v is None else v.shape}")
    for kind, iq, iv in kinds:
        if kind in ("free_flyer", "spherical"):
            at = iq + (3 if kind == "free_flyer" else 0)
            quaternion = q[..., at:at + 4].copy()
            q[..., at:at + 4] = quaternion[..., [3, 0, 1, 2]] if to else quaternion[..., [1, 2, 3, 0]]
            if kind == "free_flyer" and v is not None:
                R = rotation(quaternion if to else q[..., at:at + 4])      # body -> world
                linear = v[..., iv:iv + 3].copy()
                v[..., iv:iv + 3] = np.einsum("...ij,...j->...i" if to else "...ji,...j->...i", R, linear)
        elif kind not in ("revolute", "continuous", "prismatic"):
            raise ValueError(f"a {kind} joint has no MuJoCo equivalent")
    return q, v


def rotation(xyzw):
    """Rotation matrices (..., 3, 3) of quaternions (..., 4) [x y z w], normalized first."""
    x, y, z, w = (xyzw[..., k] for k in range(4))
    norm = np.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                     np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                     np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)
