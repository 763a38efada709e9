"""MuJoCo as outside truth: rbdgen's functions against MuJoCo's on the same MJCF, with
MuJoCo's simulation parts (contacts, limits, actuation, springs, equality constraints,
friction loss) turned off, and each side's conventions converted (rbdgen.model.conventions).
Needs the mujoco package.
"""

import numpy as np

from ..model.conventions import mujoco_layout
from ..model.sources import load_model

OFF = ("mjDSBL_CONTACT", "mjDSBL_LIMIT", "mjDSBL_ACTUATION", "mjDSBL_SPRING", "mjDSBL_DAMPER",
       "mjDSBL_EQUALITY", "mjDSBL_FRICTIONLOSS")
COMPARED = ("rnea", "crba", "nle", "aba", "passive_torque")


def installed_models():
    """(package, name, path) of every MJCF robot model installed with gymnasium and dm_control
    (dm_control's lqr.xml is a template without joints)."""
    import importlib
    import os
    found = []
    for package, folder in (("gymnasium", ("envs", "mujoco", "assets")), ("dm_control", ("suite",))):
        try:
            module = importlib.import_module(package)
        except Exception:     # not installed, or it fails to import on this machine
            continue
        where = os.path.join(os.path.dirname(module.__file__), *folder)
        if os.path.isdir(where):
            found += [(package, f[:-4], os.path.join(where, f)) for f in sorted(os.listdir(where))
                      if f.endswith(".xml") and f != "lqr.xml"]
    return found


def compiled(path):
    """(MjModel, MjData) of an MJCF with its simulation parts off."""
    import warnings

    import mujoco
    from ..model.mjcf import compile_mjcf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # MuJoCo's compiler notes: load_model gives them
        m = compile_mjcf(path)
    for flag in OFF:
        m.opt.disableflags |= int(getattr(mujoco.mjtDisableBit, flag))
    return m, mujoco.MjData(m)


def full_inertia(m, d):
    import mujoco
    M = np.zeros((m.nv, m.nv))
    try:
        mujoco.mj_fullM(m, d, M)          # MuJoCo 4
    except TypeError:
        mujoco.mj_fullM(m, M, d.qM)       # MuJoCo 3
    return M


def velocity_map(model, q):
    """T with MuJoCo's qvel = T v: a free joint's linear velocity turned to world axes."""
    from ..model.conventions import rotation
    T = np.eye(model.nv)
    for joint in model.joints:
        if joint.type == "free_flyer":
            k = joint.idx_v
            T[k:k + 3, k:k + 3] = rotation(np.asarray(q[joint.idx_q + 3:joint.idx_q + 7], dtype=float))
    return T


def mujoco_acceleration(model, q, v, a):
    """MuJoCo's qacc for rbdgen's a: d/dt (T v) = T a + T-dot v (a free joint's R (w x v_linear))."""
    T = velocity_map(model, q)
    qacc = T @ a
    for joint in model.joints:
        if joint.type == "free_flyer":
            k = joint.idx_v
            qacc[k:k + 3] += T[k:k + 3, k:k + 3] @ np.cross(v[k + 3:k + 6], v[k:k + 3])
    return qacc


def mujoco_truth(model, m, d, states):
    """MuJoCo's rnea, crba, nle, aba and passive_torque at (q, v, a, tau), in rbdgen's conventions
    (forces: T^T times MuJoCo's, since T^T f_mujoco . v = f_mujoco . qvel)."""
    import mujoco
    q, v, a, tau = states
    kinds = tuple((j.type, j.idx_q, j.idx_v) for j in model.joints)
    T = velocity_map(model, q)
    drift = mujoco_acceleration(model, q, v, np.zeros(model.nv))
    d.qpos[:], d.qvel[:] = mujoco_layout(kinds, model.nq, model.nv, q, v, to=True)
    d.qacc[:] = mujoco_acceleration(model, q, v, a)
    mujoco.mj_inverse(m, d)
    M = full_inertia(m, d)
    truth = {"rnea": T.T @ d.qfrc_inverse, "crba": T.T @ M @ T, "nle": T.T @ (d.qfrc_bias + M @ drift)}
    d.qfrc_applied[:] = np.linalg.solve(T.T, tau)
    mujoco.mj_forward(m, d)
    truth["aba"] = np.linalg.solve(T, d.qacc - drift)
    d.qfrc_applied[:] = 0
    damper = int(mujoco.mjtDisableBit.mjDSBL_DAMPER)
    m.opt.disableflags &= ~damper
    mujoco.mj_forward(m, d)
    truth["passive_torque"] = T.T @ d.qfrc_damper
    m.opt.disableflags |= damper
    return truth


def module_functions(module):
    """The module's functions that MuJoCo can check, as callables (q, v, a, tau)."""
    every = {"rnea": lambda q, v, a, tau: module.rnea(q, v, a), "crba": lambda q, v, a, tau: module.crba(q),
             "nle": lambda q, v, a, tau: module.nle(q, v), "aba": lambda q, v, a, tau: module.aba(q, v, tau),
             "passive_torque": lambda q, v, a, tau: module.passive_torque(v)}
    return {name: f for name, f in every.items() if name in module.operation_counts}


def against_mujoco(path, functions, states=3, seed=0):
    """{function: worst error relative to MuJoCo's largest entry} over random states; functions
    maps names of COMPARED to callables (q, v, a, tau) of the side under test."""
    import warnings
    from ..model.states import random_state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # what the MJCF leaves out
        model = load_model(path)
    m, d = compiled(path)
    rng = np.random.default_rng(seed)
    worst = dict.fromkeys(functions, 0.0)
    for _ in range(states):
        q, v, a = random_state(model, rng)
        tau = rng.normal(size=model.nv)
        truth = mujoco_truth(model, m, d, (q, v, a, tau))
        for name, function in functions.items():
            ours = np.asarray(function(q, v, a, tau), dtype=float)
            scale = float(np.abs(truth[name]).max()) or 1.0
            error = float(np.abs(ours - truth[name]).max()) / scale
            worst[name] = max(worst[name], error if error == error else float("inf"))
    return worst
