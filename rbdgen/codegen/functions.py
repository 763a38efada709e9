"""What a generated module contains: one entry per C function.

Each entry names its inputs (array name and size), its output shape, and how to run the
shared algorithm on symbols. The generated package's wrapper is built from the same table
(through model.json), so the two cannot disagree. Every entry runs through
rbdgen.algorithms.mimic, which is the algorithm itself for a model without mimic joints and
maps it to the model's own coordinates otherwise; sizes are the model's (nq, nv).
"""

from dataclasses import dataclass
from typing import Callable

from ..algorithms import configuration, constrained, derivatives, kinematics, mimic, minv, regressor, rnea_derivatives
from ..algorithms.frames import REFERENCE_FRAMES
from ..spatial import forces_from_rows
from .solves import Block, FactorSolve


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
    parts: Callable = None   # model -> ((name, shape), ...): the flat output is returned as these arrays
    declared: bool = False   # of the contacts declared at build time: the public function also takes
                             # call-time contacts, so the generated one is private (_declared_<name>)
    default: bool = True     # in a build that names no functions
    variants: tuple = ()     # other algorithms for the same outputs (each with .applies(model)); the
                             # generator records every one that applies and keeps the shortest program
                             # (only the variants, if one that applies is .preferred)


def _solved_after(function, blocks, factors):
    """`function` as a variant whose program leaves solves with M's factors to a loop after it
    (codegen.solves): its `solve(model)` says which output blocks, and where the factors are."""
    function.solve = lambda model: FactorSolve(tuple(mimic.elimination_parents(model)), factors(model),
                                               tuple(blocks(model)))
    return function


# aba_derivatives' three blocks: -M^-1 d rnea / dq, -M^-1 d rnea / dv, and M^-1 where the
# program left the factors
_ABA_DERIVATIVE_BLOCKS = (lambda m: (Block(0, -1), Block(m.nv * m.nv, -1), Block(2 * m.nv * m.nv, 1, True)),
                          lambda m: ((2 * m.nv * m.nv, m.nv * m.nv),))
_solved_after(mimic.factors_of_m, lambda m: (Block(0, 1, True),), lambda m: ((0, m.nv * m.nv),))
_solved_after(derivatives.aba_derivatives_factored, *_ABA_DERIVATIVE_BLOCKS)
_solved_after(rnea_derivatives.analytic_aba_derivatives_factored, *_ABA_DERIVATIVE_BLOCKS)


def contact_derivatives_factored(contacts, rows):
    """contact_dynamics_derivatives' variant whose KKT solves run after the program: the
    blocks d/dq, d/dv and d/dtau, each q-ddot's n x n with the multipliers' rows x n as its
    head; the factors of the KKT matrix in the d/dtau block (the identity's)."""
    def contact_dynamics_derivatives_factored(model, ops, q, v, tau, d):
        return derivatives.contact_dynamics_derivatives_factored(model, ops, contacts, q, v, tau, d)

    def solve(model):
        n = model.nv
        head = 3 * n * n
        blocks = tuple(Block(k * n * n, 1 if k == 2 else -1, k == 2, head + k * rows * n) for k in range(3))
        return FactorSolve(tuple(derivatives.kkt_parents(mimic.elimination_parents(model), rows)),
                           ((2 * n * n, n * n), (head + 2 * rows * n, rows * n)), blocks, rows)

    contact_dynamics_derivatives_factored.solve = solve
    contact_dynamics_derivatives_factored.applies = lambda model: solve(model).fits()
    return contact_dynamics_derivatives_factored


INPUT_SIZES = {
    "q": lambda m: m.nq, "v": lambda m: m.nv, "a": lambda m: m.nv, "tau": lambda m: m.nv,
    "fext": lambda m: 6 * m.nbodies, "placement": lambda m: 12, "damping": lambda m: 1, "restitution": lambda m: 1,
    "q1": lambda m: m.nq, "dt": lambda m: 1,
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
    FunctionSpec("passive_torque", ("v",), lambda m: (m.nv,), mimic.passive_torque,
                 "Passive joint torque -D v of the joints' viscous damping (URDF <dynamics damping>, MJCF "
                 "damping; MuJoCo's qfrc_passive without springs): add it to tau for damped dynamics, as "
                 "aba(q, v, tau, passive=True) does."),
    FunctionSpec("potential_energy", ("q",), lambda m: (1,), mimic.potential_energy,
                 "Potential energy -m g . c.", scalar=True),
    FunctionSpec("coriolis", ("q", "v"), lambda m: (m.nv, m.nv), mimic.coriolis,
                 "Christoffel-consistent Coriolis matrix C(q, v): C v = nle - g, M-dot - 2C skew (seed 002 Alg. 1)."),
    FunctionSpec("christoffel", ("q",), lambda m: (m.nv, m.nv, m.nv), mimic.christoffel,
                 "Christoffel symbols of the first kind Gamma[i, j, k]: C[i, j] = sum_k Gamma[i, j, k] v[k].",
                 costly=True),
    FunctionSpec("minv", ("q",), lambda m: (m.nv, m.nv), mimic.minv,
                 "Inverse joint-space inertia M(q)^-1 by articulated-body impulses (seed 001).",
                 variants=(minv.minv_in_fixed_frame, mimic.factors_of_m)),
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
            # built when named: getFrameJacobianTimeVariation, getFrameVelocityDerivatives,
            # getFrameAccelerationDerivatives
            FunctionSpec(f"frame_jacobian_time_variation_{reference}", ("q", "v", "placement"), lambda m: (6, m.nv),
                         _frame_run(derivatives.frame_jacobian_time_variation, reference),
                         f"dJ/dt of a frame's Jacobian in {reference} coordinates as q moves along v, rows "
                         "[linear; angular].", per_body=True, default=False),
            FunctionSpec(f"frame_velocity_derivatives_{reference}", ("q", "v", "placement"), lambda m: (12 * m.nv,),
                         _frame_derivatives(mimic.frame_velocity, reference, ("q", "v")),
                         f"d/dq and d/dv of a frame's spatial velocity in {reference} coordinates.", per_body=True,
                         parts=_six_by_nv("dv_dq", "dv_dv"), default=False),
            FunctionSpec(f"frame_acceleration_derivatives_{reference}", ("q", "v", "a", "placement"),
                         lambda m: (18 * m.nv,), _frame_derivatives(mimic.frame_acceleration, reference, ("q", "v", "a")),
                         f"d/dq, d/dv and d/da of a frame's spatial acceleration in {reference} coordinates.",
                         per_body=True, parts=_six_by_nv("da_dq", "da_dv", "da_da"), default=False),
        ]
    return specs


def _six_by_nv(*names):
    return lambda m: tuple((name, (6, m.nv)) for name in names)


def _frame_derivatives(function, reference, wrt):
    """The derivatives of a function of a frame with respect to its states `wrt` (forward mode)."""
    def run(model, ops, body, *inputs):
        *states, placement = inputs
        return derivatives.derivatives_of(
            model, ops, lambda m, o, *x: function(m, o, body, placement, *x, reference), list(zip(wrt, states)), wrt)
    return run


def _frame_run(function, *extra):
    """run(model, ops, body, *states, placement) -> function(model, ops, body, placement,
    *states, *extra): the spec's inputs end with the placement, the algorithms take it first."""
    def run(model, ops, body, *inputs):
        *states, placement = inputs
        return function(model, ops, body, placement, *states, *extra)
    return run


FUNCTIONS += _frame_functions()


def _base(model):
    from ..runtime.reference import base_parameters
    return base_parameters(model)


def _square_parts(*names):
    return lambda m: tuple((name, (m.nv, m.nv)) for name in names)


FUNCTIONS += [
    FunctionSpec("rnea_derivatives", ("q", "v", "a"), lambda m: (2 * m.nv * m.nv,), derivatives.rnea_derivatives,
                 "d tau / dq and d tau / dv (q in the tangent space, as Pinocchio's computeRNEADerivatives).",
                 parts=_square_parts("dtau_dq", "dtau_dv"), costly=True,
                 variants=(rnea_derivatives.analytic_rnea_derivatives,)),
    FunctionSpec("aba_derivatives", ("q", "v", "tau"), lambda m: (3 * m.nv * m.nv,), derivatives.aba_derivatives,
                 "d qdd / dq, d qdd / dv and d qdd / d tau = M^-1 (Pinocchio's computeABADerivatives).",
                 parts=_square_parts("ddq_dq", "ddq_dv", "ddq_dtau"), costly=True,
                 variants=(rnea_derivatives.analytic_aba_derivatives, rnea_derivatives.analytic_aba_derivatives_factored,
                           derivatives.aba_derivatives_factored)),
    # rnea_derivatives(q, v, 0) gives the same: built when named
    FunctionSpec("nle_derivatives", ("q", "v"), lambda m: (2 * m.nv * m.nv,), derivatives.nle_derivatives,
                 "d nle / dq and d nle / dv.", parts=_square_parts("dnle_dq", "dnle_dv"), default=False,
                 variants=(rnea_derivatives.analytic_nle_derivatives,)),
    FunctionSpec("integrate", ("q", "v", "dt"), lambda m: (m.nq,), configuration.integrate,
                 "q (+) v dt: the configuration reached from q by the constant velocity v in time dt "
                 "(Pinocchio's integrate; quaternions on the group)."),
    FunctionSpec("difference", ("q", "q1"), lambda m: (m.nv,), configuration.difference,
                 "The velocity that reaches q1 from q in unit time: integrate(q, difference(q, q1), 1) = q1 "
                 "(Pinocchio's difference)."),
    FunctionSpec("regressor", ("q", "v", "a"), lambda m: (m.nv, regressor.PER_BODY * m.full.nbodies),
                 regressor.regressor,
                 "The inertial-parameter regressor Y: Y pi = rnea(q, v, a), pi = parameters() "
                 "(Pinocchio's computeJointTorqueRegressor)."),
    FunctionSpec("base_regressor", ("q", "v", "a"), lambda m: (m.nv, len(_base(m).columns)),
                 regressor.base_regressor,
                 "The regressor's base columns Y_b: Y_b beta = rnea(q, v, a), beta = base_parameters()."),
    FunctionSpec("gravity_derivatives", ("q",), lambda m: (m.nv, m.nv), derivatives.gravity_derivatives,
                 "d g / dq (Pinocchio's computeGeneralizedGravityDerivatives).",
                 variants=(rnea_derivatives.analytic_gravity_derivatives,)),
]
FUNCTIONS.append(FunctionSpec(
    "eom", ("q", "v"), lambda m: (m.nv * m.nv + m.nv,), constrained.eom,
    "The equation of motion's terms (M, nle) in one program: the kinematics is computed once.",
    parts=lambda m: (("M", (m.nv, m.nv)), ("nle", (m.nv,)))))

BY_NAME = {f.name: f for f in FUNCTIONS}


def contact_functions(contacts):
    """The functions of the contacts declared at build time (rbdgen.algorithms.constrained):
    their Jacobian G and drift gamma, dynamics, impacts, contact-space inertia, and the
    equation of motion with them, each one straight-line program."""
    contacts = tuple(contacts)
    m = sum(c.rows for c in contacts)
    outcome = lambda first: lambda model: ((first, (model.nv,)), ("multipliers", (m,)), ("pivots", (m,)))
    return [
        FunctionSpec("contact_jacobian", ("q",), lambda model: (m, model.nv),
                     lambda model, ops, q: constrained.constraint_rows(model, ops, contacts, q),
                     "The declared contacts' Jacobian G, rows in each contact frame's axes."),
        FunctionSpec("contact_gamma", ("q", "v"), lambda model: (m,),
                     lambda model, ops, q, v: constrained.constraint_drift(model, ops, contacts, q, v),
                     "gamma = -G-dot v of the declared contacts: G q-ddot = gamma keeps them still."),
        FunctionSpec("contact_dynamics", ("q", "v", "tau", "damping"), lambda model: (model.nv + 2 * m,),
                     lambda model, ops, q, v, tau, d: constrained.contact_dynamics(model, ops, contacts, q, v, tau, d),
                     "Forward dynamics with the declared contacts held (seed 000 eq. 7): q-ddot, multipliers, "
                     "and the pivots of G M^-1 G^T + damping (not positive: redundant contacts).",
                     parts=outcome("qdd"), declared=True),
        FunctionSpec("contact_dynamics_derivatives", ("q", "v", "tau", "damping"), lambda model: (3 * (model.nv + m) * model.nv,),
                     lambda model, ops, q, v, tau, d: derivatives.contact_dynamics_derivatives(model, ops, contacts, q, v, tau, d),
                     "d/dq, d/dv and d/dtau of contact_dynamics' q-ddot and multipliers "
                     "(Pinocchio's computeConstraintDynamicsDerivatives).",
                     parts=lambda model: _contact_derivative_parts(model, m), default=False,
                     variants=(contact_derivatives_factored(contacts, m),)),
        FunctionSpec("impulse_dynamics", ("q", "v", "restitution", "damping"), lambda model: (model.nv + 2 * m,),
                     lambda model, ops, q, v, e, d: constrained.impulse_dynamics(model, ops, contacts, q, v, e, d),
                     "Velocity after an impact on the declared contacts (seed 000 eq. 10): v+, impulses, pivots.",
                     parts=outcome("v_plus"), declared=True),
        FunctionSpec("contact_inertia", ("q",), lambda model: (m, m),
                     lambda model, ops, q: constrained.contact_inertia(model, ops, contacts, q),
                     "The declared contacts' inverse inertia G M^-1 G^T.", declared=True),
        FunctionSpec("contact_eom", ("q", "v"), lambda model: (model.nv * model.nv + model.nv + m * model.nv + m,),
                     lambda model, ops, q, v: constrained.contact_eom(model, ops, contacts, q, v),
                     "M, nle, G and gamma of the declared contacts in one program.",
                     parts=lambda model: (("M", (model.nv, model.nv)), ("nle", (model.nv,)), ("G", (m, model.nv)),
                                          ("gamma", (m,)))),
    ]


def _contact_derivative_parts(model, m):
    n = model.nv
    return tuple((f"ddq_d{x}", (n, n)) for x in ("q", "v", "tau")) + \
        tuple((f"dlambda_d{x}", (m, n)) for x in ("q", "v", "tau"))


def lookup(name, contacts=()):
    """The spec of a function a module may have (those of contacts need the contacts)."""
    if name in BY_NAME:
        return BY_NAME[name]
    return {spec.name: spec for spec in contact_functions(contacts)}[name]
DEFAULT = tuple(f.name for f in FUNCTIONS)


NEED_INVERTIBLE_M = ("aba", "aba_fext", "minv", "minv_times", "fd_crba", "aba_derivatives")
# Above this many velocity coordinates a default build leaves the costly functions out:
# Talos' (nv = 38) Christoffel symbols alone are 200 000 operations and 90 s of symbolic work.
COSTLY_MAX_NV = 24


def select(names=None, model=None, contacts=()):
    """The specs for `names` (the defaults for `model` when None); unknown names raise a
    one-line error. With declared contacts, their functions are among the defaults.

    By default, forward dynamics is left out of a model whose M is singular (a joint that
    moves no mass: there is nothing finite to compute), and the costly functions out of a
    model whose tree has more than COSTLY_MAX_NV velocity coordinates. Naming them builds them.
    """
    from ..errors import CodegenError
    table = FUNCTIONS + (contact_functions(contacts) if contacts else [])
    singular = model is not None and model.massless_joints()
    if names is None:
        big = model is not None and model.full.nv > COSTLY_MAX_NV   # the tree's: mimic joints are computed too
        return [f for f in table if f.default and not (singular and (f.name in NEED_INVERTIBLE_M or f.declared))
                and not (big and f.costly)]
    known = [f.name for f in table]
    unknown = [n for n in names if n not in known]
    if unknown:
        needs = " (it needs contacts declared with --contact FRAME:6d)" if unknown[0] in CONTACT_NAMES else ""
        raise CodegenError(f"unknown algorithm {unknown[0]!r}{needs}; choose from {', '.join(known)}")
    return [f for f in table if f.name in names]


def check_names(names):
    """Before a model is loaded: a one-line error for a name no build can have."""
    from ..errors import CodegenError
    for name in names or ():
        if name not in BY_NAME and name not in CONTACT_NAMES:
            raise CodegenError(f"unknown algorithm {name!r}; choose from {', '.join(DEFAULT + CONTACT_NAMES)}")


CONTACT_NAMES = ("contact_jacobian", "contact_gamma", "contact_dynamics", "impulse_dynamics", "contact_inertia",
                 "contact_eom", "contact_dynamics_derivatives")