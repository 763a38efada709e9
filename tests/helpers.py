"""Shared test helpers: robots from example-robot-data, Pinocchio conversions, tolerances."""

import functools
import os
import subprocess
import sys
import warnings
from xml.sax.saxutils import quoteattr

import numpy as np

from rbdgen.examples import ROBOTS, robot_path, robots_dir  # noqa: F401  (re-exported for tests)
from rbdgen.runtime.pinocchio_bridge import pinocchio_model as _pinocchio_model
from rbdgen.runtime.pinocchio_bridge import to_pinocchio_q  # noqa: F401  (re-exported for tests)
from rbdgen.model.states import random_configuration, random_state  # noqa: F401  (re-exported for tests)

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


@functools.lru_cache(maxsize=None)
def robot_model(name):
    """rbdgen's model of an example robot, loaded once per session (warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import rbdgen
        return rbdgen.load_urdf(robot_path(name), floating_base=ROBOTS[name][1])


def pinocchio_model(name):
    path, floating = ROBOTS[name]
    return _pinocchio_model(os.path.join(robots_dir(), path), floating)


def tiny_urdf(robot="tiny", links=("base", "link1", "link2", "tip"), joints=("j1", "j2", "tip_joint")):
    """base -revolute-> link1 -continuous-> link2 -fixed-> tip; names are XML-escaped here."""
    def link(name, mass):
        return (f"<link name={quoteattr(name)}><inertial><origin xyz='0.01 0.02 0.1'/>"
                f"<mass value='{mass}'/><inertia ixx='0.01' iyy='0.02' izz='0.015' ixy='0.001' "
                "ixz='0' iyz='0'/></inertial></link>")

    def joint(name, jtype, parent, child, xyz, axis):
        limit = "<limit effort='1' velocity='1' lower='-3' upper='3'/>" if jtype == "revolute" else ""
        return (f"<joint name={quoteattr(name)} type='{jtype}'><parent link={quoteattr(parent)}/>"
                f"<child link={quoteattr(child)}/><origin xyz='{xyz}' rpy='0.1 0.2 0.3'/>"
                f"<axis xyz='{axis}'/>{limit}</joint>")

    base, l1, l2, tip = links
    body = [link(base, 2.0), link(l1, 1.0), link(l2, 0.5), link(tip, 0.2),
            joint(joints[0], "revolute", base, l1, "0 0 0.1", "0 0 1"),
            joint(joints[1], "continuous", l1, l2, "0.3 0 0", "0 1 0"),
            joint(joints[2], "fixed", l2, tip, "0.2 0 0", "1 0 0")]
    # quoteattr turns a newline into &#10; so that it survives attribute normalization
    return "<?xml version='1.0' encoding='utf-8'?>\n<robot name=" + quoteattr(robot) + ">\n" + \
        "\n".join(body) + "\n</robot>\n"


def write_urdf(folder, text, filename="robot.urdf"):
    path = os.path.join(str(folder), filename)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def pin_fext(f_ext):
    """rbdgen f_ext (njoints, 6) -> Pinocchio's list of Forces, one per joint including the universe."""
    import pinocchio as pin
    forces = pin.StdVec_Force()
    forces.append(pin.Force.Zero())
    for row in f_ext:
        forces.append(pin.Force(row[:3], row[3:]))
    return forces


def bridge_inputs(model, seed):
    """Every input a function of states takes (q, v, a, tau, q1, dt, fext, and the declared
    contacts' restitution and damping), for the bridges' tests."""
    rng = np.random.default_rng(seed)
    q, v, a = random_state(model, rng)
    return {"q": q, "v": v, "a": a, "tau": rng.normal(size=model.nv), "q1": random_state(model, rng)[0],
            "dt": 0.3, "fext": rng.normal(size=6 * model.nbodies), "restitution": 0.4, "damping": 0.0}


def central_differences(function, args, k, step=1e-6):
    """d function / d args[k] by central differences, column by column (function of NumPy arrays)."""
    columns = []
    for j in range(len(args[k])):
        plus, minus = [np.array(a, dtype=float) for a in args], [np.array(a, dtype=float) for a in args]
        plus[k][j] += step
        minus[k][j] -= step
        columns.append((np.ravel(function(*plus)) - np.ravel(function(*minus))) / (2 * step))
    return np.stack(columns, axis=1)


def temporary_entries(folder):
    """The temporary build folders in an output folder: entries whose name starts with '.', other
    than lock files and the per-function cache, which stays."""
    from rbdgen.codegen.objects import FOLDER
    return sorted(n for n in os.listdir(folder) if n.startswith(".") and not n.endswith(".lock") and n != FOLDER)


# A fresh interpreter unpickles a module and calls it: the folder may be absent there.
_UNPICKLE = """
import pickle, sys
import numpy as np
module = pickle.loads(sys.stdin.buffer.read())
q = np.linspace(-1, 1, module.nq)
print(module.__file__)
print(repr(module.rnea(q, q, q).tolist()))
"""


def unpickle_elsewhere(blob):
    """(status, stdout, stderr) of a fresh interpreter that unpickles a module and prints its
    __file__ and rnea at q = v = a = linspace(-1, 1, nq)."""
    done = subprocess.run([sys.executable, "-c", _UNPICKLE], input=blob, capture_output=True, timeout=300)
    return done.returncode, done.stdout.decode(), done.stderr.decode()
