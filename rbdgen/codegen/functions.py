"""What a generated module contains: one entry per C function.

Each entry names its inputs (array name and size), its output shape, and how to run the
shared algorithm on symbols. The generated package's wrapper is built from the same table
(through model.json), so the two cannot disagree. Every entry runs through
rbdgen.algorithms.mimic, which is the algorithm itself for a model without mimic joints and
maps it to the model's own coordinates otherwise; sizes are the model's (nq, nv).
"""

from dataclasses import dataclass
from typing import Callable

from ..algorithms import kinematics, mimic
from ..algorithms.frames import REFERENCE_FRAMES
from ..spatial import forces_from_rows


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    inputs: tuple            # argument names, each one of INPUT_SIZES
    output: Callable         # model -> output shape
    run: Callable            # (model, ops, *inputs) -> nested list of scalars
    doc: str
    scalar: bool = False     # the wrapper returns a float (energies)
    costly: bool = False     # output grows as nv^3: left out of default builds of big robots
    per_body: bool = False   # a function of a frame: run(model, ops, body, *inputs), one program per body


INPUT_SIZES = {
    "q": lambda m: m.nq, "v": lambda m: m.nv, "a": lambda m: m.nv, "tau": lambda m: m.nv,
    "fext": lambda m: 6 * m.nbodies, "placement": lambda m: 12,
}


def _fext(model, flat):
    return forces_from_rows([flat[6 * i:6 * i + 6] for i in range(model.nbodies)])


def _placements(model, ops, q):
    rows = []
    for X in mimic.body_placements(model, ops, q):
        R, p = kinematics.placement_as_rotation_translation(X)
        rows.append([x for row in R for x in row] + p)
    return rows


FUNCTIONS = [
    FunctionSpec("rnea", ("q", "v", "a"), lambda m: (m.nv,), mimic.rnea,
                 "Inverse dynamics tau = M(q) a + C(q, v) v + g(q) (RNEA, seed 000 Algorithm 1)."),
    FunctionSpec("rnea_fext", ("q", "v", "a", "fext"), lambda m: (m.nv,),
                 lambda m, ops, q, v, a, f: mimic.rnea(m, ops, q, v, a, _fext(m, f)),
                 "Inverse dynamics with external forces: tau = M a + C v + g - sum_i J_i^T f_i."),
    FunctionSpec("nle", ("q", "v"), lambda m: (m.nv,), mimic.nle,
                 "Nonlinear effects C(q, v) v + g(q)."),
    FunctionSpec("gravity", ("q",), lambda m: (m.nv,), mimic.gravity,
                 "Generalized gravity g(q)."),
    FunctionSpec("crba", ("q",), lambda m: (m.nv, m.nv), mimic.crba,
                 "Joint-space inertia matrix M(q), full and symmetric (CRBA, seed 000 Algorithm 2)."),
    FunctionSpec("aba", ("q", "v", "tau"), lambda m: (m.nv,), mimic.aba,
                 "Forward dynamics a = M^-1 (tau - C v - g) (ABA, seed 000 Algorithm 3)."),
    FunctionSpec("aba_fext", ("q", "v", "tau", "fext"), lambda m: (m.nv,),
                 lambda m, ops, q, v, t, f: mimic.aba(m, ops, q, v, t, _fext(m, f)),
                 "Forward dynamics with external forces: a = M^-1 (tau - C v - g + sum_i J_i^T f_i)."),
    FunctionSpec("placements", ("q",), lambda m: (m.nbodies, 12), _placements,
                 "Every body's placement: rotation (row-major, body -> world) and origin."),
    FunctionSpec("jacobians", ("q",), lambda m: (6, m.full.nv),
                 lambda m, ops, q: mimic.joint_jacobians(m, ops, q)[0],
                 "Every joint axis in world coordinates at the world origin, rows [linear; angular] "
                 "(mimic joints too: 6 x nv of the tree, as Pinocchio's data.J)."),
    FunctionSpec("body_motion", ("q", "v", "a"), lambda m: (m.nbodies, 12), mimic.body_motion,
                 "Every body's [w, v_O, w-dot, a_O] in body coordinates, without gravity."),
    FunctionSpec("com", ("q",), lambda m: (3,), mimic.com, "Centre of mass in world coordinates."),
    FunctionSpec("kinetic_energy", ("q", "v"), lambda m: (1,), mimic.kinetic_energy,
                 "Kinetic energy v^T M(q) v / 2.", scalar=True),
    FunctionSpec("potential_energy", ("q",), lambda m: (1,), mimic.potential_energy,
                 "Potential energy -m g . c.", scalar=True),
    FunctionSpec("coriolis", ("q", "v"), lambda m: (m.nv, m.nv), mimic.coriolis,
                 "Christoffel-consistent Coriolis matrix C(q, v): C v = nle - g, M-dot - 2C skew (seed 002 Alg. 1)."),
    FunctionSpec("christoffel", ("q",), lambda m: (m.nv, m.nv, m.nv), mimic.christoffel,
                 "Christoffel symbols of the first kind Gamma[i, j, k]: C[i, j] = sum_k Gamma[i, j, k] v[k].",
                 costly=True),
    FunctionSpec("minv", ("q",), lambda m: (m.nv, m.nv), mimic.minv,
                 "Inverse joint-space inertia M(q)^-1 by articulated-body impulses (seed 001)."),
    FunctionSpec("minv_times", ("q", "tau"), lambda m: (m.nv,), mimic.minv_times,
                 "M(q)^-1 tau in O(n)."),
    FunctionSpec("fd_crba", ("q", "v", "tau"), lambda m: (m.nv,), mimic.fd_crba,
                 "Forward dynamics through CRBA and a sparse L^T D L factorization of M."),
    FunctionSpec("com_velocity", ("q", "v"), lambda m: (3,), mimic.com_velocity,
                 "Velocity of the centre of mass."),
    FunctionSpec("spatial_momentum", ("q", "v"), lambda m: (6,), mimic.spatial_momentum,
                 "Spatial momentum [linear; angular] about the world origin, world axes."),
    FunctionSpec("centroidal_momentum", ("q", "v"), lambda m: (6,), mimic.centroidal_momentum,
                 "Centroidal momentum h_G = [linear; angular about the centre of mass]."),
    FunctionSpec("centroidal_map", ("q",), lambda m: (6, m.nv), mimic.centroidal_map,
                 "Centroidal momentum matrix A_G, A_G v = h_G."),
]


def _frame_functions():
    """Functions of a frame, one program per body (its placement on the body is an input):
    the placement, and the Jacobian, velocity, spatial and classical acceleration in each of
    Pinocchio's three reference frames."""
    specs = [FunctionSpec("frame_placement", ("q", "placement"), lambda m: (12,),
                          _frame_run(mimic.frame_placement),
                          "A frame's rotation (row-major, frame -> world) and origin.", per_body=True)]
    for reference in REFERENCE_FRAMES:
        specs += [
            FunctionSpec(f"frame_jacobian_{reference}", ("q", "placement"), lambda m: (6, m.nv),
                         _frame_run(mimic.frame_jacobian_of_body, reference),
                         f"A frame's Jacobian in {reference} coordinates, rows [linear; angular].", per_body=True),
            FunctionSpec(f"frame_velocity_{reference}", ("q", "v", "placement"), lambda m: (6,),
                         _frame_run(mimic.frame_velocity, reference),
                         f"A frame's spatial velocity in {reference} coordinates, [linear; angular].", per_body=True),
            FunctionSpec(f"frame_acceleration_{reference}", ("q", "v", "a", "placement"), lambda m: (6,),
                         _frame_run(mimic.frame_acceleration, reference),
                         f"A frame's spatial acceleration in {reference} coordinates, [linear; angular].",
                         per_body=True),
            FunctionSpec(f"frame_classical_acceleration_{reference}", ("q", "v", "a", "placement"), lambda m: (6,),
                         _frame_run(mimic.frame_acceleration, reference, True),
                         f"The classical acceleration of a frame's origin in {reference} coordinates.", per_body=True),
        ]
    return specs


def _frame_run(function, *extra):
    """run(model, ops, body, *states, placement) -> function(model, ops, body, placement,
    *states, *extra): the spec's inputs end with the placement, the algorithms take it first."""
    def run(model, ops, body, *inputs):
        *states, placement = inputs
        return function(model, ops, body, placement, *states, *extra)
    return run


FUNCTIONS += _frame_functions()

BY_NAME = {f.name: f for f in FUNCTIONS}
DEFAULT = tuple(f.name for f in FUNCTIONS)


NEED_INVERTIBLE_M = ("aba", "aba_fext", "minv", "minv_times", "fd_crba")
# Above this many velocity coordinates a default build leaves the costly functions out:
# Talos' (nv = 38) Christoffel symbols alone are 200 000 operations and 90 s of symbolic work.
COSTLY_MAX_NV = 24


def select(names=None, model=None):
    """The specs for `names` (the defaults for `model` when None); unknown names raise a
    one-line error.

    By default, forward dynamics is left out of a model whose M is singular (a joint that
    moves no mass: there is nothing finite to compute), and the costly functions out of a
    model whose tree has more than COSTLY_MAX_NV velocity coordinates. Naming them builds them.
    """
    from ..errors import CodegenError
    if names is None:
        singular = model is not None and model.massless_joints()
        big = model is not None and model.full.nv > COSTLY_MAX_NV   # the tree's: mimic joints are computed too
        return [f for f in FUNCTIONS if not (singular and f.name in NEED_INVERTIBLE_M) and not (big and f.costly)]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise CodegenError(f"unknown algorithm {unknown[0]!r}; choose from {', '.join(DEFAULT)}")
    return [BY_NAME[n] for n in DEFAULT if n in names]
