"""Mass, centre of mass, energies (RBDL paper §6.5, seed 000) and the joints' viscous damping.

With X_0i = (E_i, r_i), body i's mass moment in world coordinates is m_i r_i + E_i^T h_i, so
the centre of mass needs no division but by the (constant) total mass.
"""

import numbers

from ..spatial import add3, dot3, matTvec3, scale3
from .kinematics import body_placements, body_velocities, joint_kinematics


def mass_moment(model, ops, X_0):
    """sum_i m_i c_i in world coordinates (the total mass times the centre of mass)."""
    total = (0, 0, 0)
    for i, inertia in enumerate(model.inertia):
        total = add3(total, add3(scale3(inertia.m, X_0[i].r), matTvec3(X_0[i].E, inertia.h)))
    return ops.let("mc", 0, total)


def com(model, ops, q):
    """Centre of mass of the whole robot in world coordinates."""
    X_0 = body_placements(model, ops, joint_kinematics(model, ops, q))
    mass = model.total_mass
    if isinstance(mass, numbers.Number) and mass == 0:   # masses >= 0: nothing moves (parameters: symbols, arrays)
        return [0, 0, 0]
    return list(scale3(1 / mass, mass_moment(model, ops, X_0)))


def potential_energy(model, ops, q):
    """-m g . c: zero with the centre of mass at the world origin."""
    X_0 = body_placements(model, ops, joint_kinematics(model, ops, q))
    return [-dot3(model.gravity, mass_moment(model, ops, X_0))]


def kinetic_energy(model, ops, q, v):
    """1/2 sum_i v_i . I_i v_i + 1/2 sum_k armature_k v_k^2, which equals 1/2 v^T M(q) v."""
    kin = joint_kinematics(model, ops, q, v)
    velocities = body_velocities(model, ops, kin, v)
    total = 0
    for i, inertia in enumerate(model.inertia):
        total = total + velocities[i].dot(inertia.apply(velocities[i]))
    for rotor, x in zip(model.armature, v):
        total = total + rotor * x * x
    return [ops.let("T", 0, total / 2)]


def passive_torque(model, ops, v):
    """-d v: the joints' viscous damping (per velocity coordinate; zero without damping)."""
    damping = model.damping or [0] * model.nv
    return [-d * x for d, x in zip(damping, v)]
