"""Frame Jacobians (RBDL paper §6.1, seed 000) in Pinocchio's three reference frames.

Column k of the Jacobian is joint axis S_k carried to the world, X_0j^-1 S_k, for every
joint j on the path from the root to the frame's body (the other columns are zero). Rows
are [linear; angular] as in Pinocchio. J v is the frame's velocity:
- "world": the spatial velocity in world coordinates at the world origin;
- "local": the spatial velocity in the frame's own coordinates at its origin;
- "local_world_aligned": the frame origin's velocity and the angular velocity, in world axes.
"""

from ..errors import ModelError
from ..spatial import Motion, add3, cross3
from .frames import REFERENCE_FRAMES
from .kinematics import body_placements, frame_placement_transform, joint_kinematics


def joint_jacobians(model, ops, q):
    """All joint axes in world coordinates at the world origin: 6 x nv, rows [linear; angular].

    Returns the matrix and the body placements X_0 it was computed from.
    """
    kin = joint_kinematics(model, ops, q)
    X_0 = body_placements(model, ops, kin)
    J = [[0] * model.nv for _ in range(6)]
    for j, joint in enumerate(model.joints):
        for k, s in enumerate(kin[j].S):
            column = ops.let("J", j, X_0[j].inv_apply_motion(s))
            for row, value in enumerate(column.lin + column.ang):
                J[row][joint.idx_v + k] = value
    return J, X_0


def frame_jacobian(model, ops, q, frame, reference="local_world_aligned"):
    """The frame's 6 x nv Jacobian in `reference` (see the module docstring)."""
    if reference not in REFERENCE_FRAMES:
        raise ModelError(f"reference {reference!r} is unknown; use one of {', '.join(REFERENCE_FRAMES)}")
    J_world, X_0 = joint_jacobians(model, ops, q)
    X_0f = frame_placement_transform(model, ops, X_0, frame)
    support = model.support(frame.body) if frame.body >= 0 else []
    J = [[0] * model.nv for _ in range(6)]
    for j in support:
        joint = model.joints[j]
        for col in range(joint.idx_v, joint.idx_v + joint.nv):
            m = Motion([J_world[r][col] for r in (3, 4, 5)], [J_world[r][col] for r in (0, 1, 2)])
            m = express(m, X_0f, reference)
            for row, value in enumerate(m.lin + m.ang):
                J[row][col] = value
    return J


def express(m_world, X_0f, reference):
    """A world-origin motion in the requested reference frame of the frame X_0f."""
    if reference == "world":
        return m_world
    if reference == "local":
        return X_0f.apply_motion(m_world)
    return Motion(m_world.ang, add3(m_world.lin, cross3(m_world.ang, X_0f.r)))
