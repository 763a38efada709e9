"""Modules shared between test files, built once per session (each build costs seconds)."""

import warnings

import pytest

import rbdgen
from helpers import ROBOTS, robot_path

# What the bridges (CasADi, JAX) are tested on: every kind of output (vector, matrix, parts,
# scalar, a float parameter), the derivatives their Jacobians read, external forces and the
# frame functions JAX differentiates.
BRIDGE_ALGORITHMS = ["rnea", "rnea_fext", "nle", "gravity", "crba", "aba", "aba_fext", "fd_crba", "minv",
                     "rnea_derivatives", "aba_derivatives", "eom", "kinetic_energy", "integrate", "jacobians",
                     "frame_placement", "frame_jacobian_local_world_aligned", "frame_velocity_local",
                     "frame_velocity_derivatives_local", "frame_acceleration_local", "frame_acceleration_derivatives_local",
                     "frame_jacobian_time_variation_local"]
# and with declared contacts
BRIDGE_CONTACT_ALGORITHMS = ["contact_dynamics", "contact_dynamics_derivatives", "impulse_dynamics", "contact_eom"]

BRIDGE_CONTACTS = {"panda": ["panda_hand:3d"]}


@pytest.fixture(scope="session")
def bridge_modules(tmp_path_factory):
    """{robot: (module, model)} for UR5 and Panda (fixed base, Panda with a declared contact) and
    Solo12 (free-flyer), with the CUDA dialect's sources."""
    folder = str(tmp_path_factory.mktemp("bridges"))
    built = {}
    for key in ("ur5", "panda", "solo12"):
        floating = ROBOTS[key][1]
        with warnings.catch_warnings():   # Panda's fingers: <mimic> ignored
            warnings.simplefilter("ignore")
            module = rbdgen.build(robot_path(key), out_dir=folder, floating_base=floating,
                                  algorithms=BRIDGE_ALGORITHMS + (BRIDGE_CONTACT_ALGORITHMS if key in BRIDGE_CONTACTS else []),
                                  contacts=BRIDGE_CONTACTS.get(key), cuda=True)
            built[key] = (module, rbdgen.load_urdf(robot_path(key), floating_base=floating))
    return built


def pytest_collection_modifyitems(items):
    """The JAX tests last: importing JAX starts XLA's threads, and a build afterwards forks its
    worker processes (rbdgen.codegen.build), which JAX warns may deadlock. The workers run no
    JAX code; the order keeps the warning, and the risk, out of the suite."""
    items.sort(key=lambda item: item.fspath.basename == "test_jax.py"
               or (item.fspath.basename == "test_parameter_derivatives.py" and "jax" in item.name))
