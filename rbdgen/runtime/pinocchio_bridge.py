"""Conversions to Pinocchio, the outside oracle (used by `rbdgen verify` and the tests)."""

import numpy as np


def to_pinocchio_q(model, q):
    """rbdgen q -> Pinocchio q: a continuous joint's angle becomes (cos, sin); planar likewise."""
    out = []
    for joint in model.joints:
        x = q[joint.idx_q:joint.idx_q + joint.nq]
        if joint.type == "continuous":
            out += [np.cos(x[0]), np.sin(x[0])]
        elif joint.type == "planar":
            out += [x[0], x[1], np.cos(x[2]), np.sin(x[2])]
        else:
            out += list(x)
    return np.array(out)


def pinocchio_model(urdf_path, floating_base):
    """Pinocchio's model of the same URDF (free-flyer root when `floating_base`)."""
    import pinocchio as pin
    if floating_base:
        return pin.buildModelFromUrdf(str(urdf_path), pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(str(urdf_path))
