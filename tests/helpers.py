"""Shared test helpers: robots from example-robot-data, Pinocchio conversions, tolerances."""

import os
import sysconfig

import numpy as np

from rbdgen.runtime.states import random_configuration, random_state  # noqa: F401  (re-exported for tests)

REL_TOL_PINOCCHIO = 1e-9     # reference against Pinocchio (issue 2)
REL_TOL_GENERATED = 1e-10    # generated C against the reference (issue 3)
REL_TOL_IDENTITY = 1e-9      # algebraic identities on random trees


def robots_dir():
    """example-robot-data ships its URDFs under the cmeel prefix of site-packages."""
    for key in ("purelib", "platlib"):
        path = os.path.join(sysconfig.get_paths()[key], "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(path):
            return path
    raise RuntimeError("example-robot-data is not installed: pip install -e .[test]")


# name -> (URDF path inside robots/, floating base)
ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "allegro": ("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    "kinova": ("kinova_description/robots/kinova.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "double_pendulum_continuous": ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", False),
    "go1": ("go1_description/urdf/go1.urdf", True),
}


def robot_path(name):
    return os.path.join(robots_dir(), ROBOTS[name][0])


def assert_close(name, actual, expected, rel_tol, abs_floor=1.0):
    """|actual - expected| <= rel_tol * max(|expected|, abs_floor), element-wise, naming the quantity."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != {expected.shape}"
    scale = np.maximum(np.abs(expected).max(initial=0.0), abs_floor)
    err = np.abs(actual - expected).max(initial=0.0)
    assert err <= rel_tol * scale, f"{name}: max error {err:.3e} > {rel_tol:.0e} x {scale:.3e}"


def to_pinocchio_q(model, q):
    """rbdgen q -> Pinocchio q: continuous joints (one angle) become (cos, sin); planar too."""
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


def pinocchio_model(name):
    import pinocchio as pin
    path, floating = ROBOTS[name]
    full = os.path.join(robots_dir(), path)
    return pin.buildModelFromUrdf(full, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(full)
