"""Shared test helpers: robots from example-robot-data, Pinocchio conversions, tolerances."""

import os

import numpy as np

from rbdgen.examples import ROBOTS, robot_path, robots_dir  # noqa: F401  (re-exported for tests)
from rbdgen.runtime.pinocchio_bridge import pinocchio_model as _pinocchio_model
from rbdgen.runtime.pinocchio_bridge import to_pinocchio_q  # noqa: F401  (re-exported for tests)
from rbdgen.runtime.states import random_configuration, random_state  # noqa: F401  (re-exported for tests)

REL_TOL_PINOCCHIO = 1e-9     # reference against Pinocchio (issue 2)
REL_TOL_GENERATED = 1e-10    # generated C against the reference (issue 3)
REL_TOL_IDENTITY = 1e-9      # algebraic identities on random trees


def assert_close(name, actual, expected, rel_tol, abs_floor=1.0):
    """|actual - expected| <= rel_tol * max(|expected|, abs_floor), element-wise, naming the quantity."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != {expected.shape}"
    scale = np.maximum(np.abs(expected).max(initial=0.0), abs_floor)
    err = np.abs(actual - expected).max(initial=0.0)
    assert err <= rel_tol * scale, f"{name}: max error {err:.3e} > {rel_tol:.0e} x {scale:.3e}"


def pinocchio_model(name):
    path, floating = ROBOTS[name]
    return _pinocchio_model(os.path.join(robots_dir(), path), floating)
