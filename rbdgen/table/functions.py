"""What a generated module contains: one entry per C function, holding every fact about it.

Each entry names its inputs (rows of rbdgen.table.inputs), its output shape and parts, how to
run the shared algorithm on symbols and its variants, which derivative functions give its
Jacobians (CasADi and JAX), and its Pinocchio counterpart (verification, rbdgen bench and the
benchmarks). The generated package's binding is built from the same table (through
model.json), so the two cannot disagree. Every entry runs through rbdgen.algorithms.mimic,
which is the algorithm itself for a model without mimic joints and maps it to the model's own
coordinates otherwise; sizes are the model's (nq, nv).
"""

from ..algorithms import (configuration, constrained, derivatives, kinematics, loops, mimic, minv,
                          parameter_derivatives, regressor, rnea_derivatives)
from ..algorithms.solves import Block, FactorSolve
from ..errors import CodegenError
from ..model.parameters import changes_kinematics, parameters_of
from ..spatial import Force
from .frames import frame_functions
from .description import ADDED, FORCES, INVERSE, PIVOTS, Overload, block
from .factored import STATES, contact_derivatives_factored, derivative_parts, loop_derivatives_factored
from .spec import Counterpart, FunctionSpec, Variant, always, copied, never


def _solved_after(function, blocks, factors, applies=always, preferred=never):
    """`function` as a variant whose program leaves solves with M's factors to a loop after it
    (algorithms.solves): `solve(model)` says which output blocks, and where the factors are."""
    return Variant(function, applies, preferred,
                   lambda model: FactorSolve(tuple(mimic.elimination_parents(model)), factors(model),
                                             tuple(blocks(model))))


def _analytic(function, **solve):
    """The analytical derivatives of inverse dynamics (algorithms.rnea_derivatives) where every
    joint's motion subspace is fixed in its body; preferred: fewer operations than forward mode
    on every robot measured (docs/performance.md, Choices in the generated programs), so forward
    mode is not recorded beside them."""
    if solve:
        return _solved_after(function, solve["blocks"], solve["factors"], rnea_derivatives.applies, always)
    return Variant(function, rnea_derivatives.applies, always)


# aba_derivatives' three blocks: -M^-1 d rnea / dq, -M^-1 d rnea / dv, and M^-1 where the
# program left the factors
_ABA_DERIVATIVE_BLOCKS = dict(
    blocks=lambda m: (Block(0, -1), Block(m.nv * m.nv, -1), Block(2 * m.nv * m.nv, 1, True)),
    factors=lambda m: ((2 * m.nv * m.nv, m.nv * m.nv),))


def _fext(model, flat):
    """Pinocchio's external-force rows [force; torque], one per body, as Forces [torque; force]."""
    return [Force(tuple(flat[6 * i + 3:6 * i + 6]), tuple(flat[6 * i:6 * i + 3])) for i in range(model.nbodies)]


def _placements(model, ops, q):
    rows = []
    for X in mimic.body_placements(model, ops, q):
        R, p = kinematics.placement_as_rotation_translation(X)
        rows.append([x for row in R for x in row] + p)
    return rows


# The derivative with respect to the model parameters of inverse and forward dynamics, as a
# Jacobian choice's block for the input `params` (taken by a module with parameters only:
# the bindings count a block only for an input the function takes)
_BY_PARAMS = {"rnea": {"params": block("rnea_parameter_derivatives")},
              "aba": {"params": block("aba_parameter_derivatives")}}


def _with_params(choice, dynamics):
    """A Jacobian choice with the block of `params` from `dynamics`' parameter derivatives."""
    return {output: {**blocks, **_BY_PARAMS[dynamics]} for output, blocks in choice.items()}


# the last part of a contact or loop solve: the pivots of G M^-1 G^T (+ damping), by which callers
# judge redundancy
_PIVOTS = (("pivots", PIVOTS),)

# rnea's and aba's keywords: f_ext (calls the _fext function), passive (adds passive_torque(v) to tau)
_F_EXT = lambda function: Overload("f_ext", FORCES, function, "fext",
                                   "external forces, shape (nbodies, 6) or (B, nbodies, 6): rows [force; torque] "
                                   "on each body, in its frame")
_PASSIVE = Overload("passive", ADDED, "passive_torque", "tau", "True: add the joints' damping torque passive_torque(v)")

FUNCTIONS = [
    FunctionSpec("rnea", ("q", "v", "a"), lambda m: (m.nv,), mimic.rnea,
                 "Inverse dynamics tau = M(q) a + C(q, v) v + g(q) (RNEA: RBDL paper Alg. 1, seed 000).", cost=3,
                 jacobians=({None: {"q": block("rnea_derivatives", "dtau_dq"),
                                    "v": block("rnea_derivatives", "dtau_dv"), "a": block("crba"),
                                    **_BY_PARAMS["rnea"]}},),
                 overloads=(_F_EXT("rnea_fext"),),
                 pinocchio=Counterpart("rnea", ("q", "v", "a"), "rnea")),
    FunctionSpec("rnea_fext", ("q", "v", "a", "fext"), lambda m: (m.nv,),
                 lambda m, ops, q, v, a, f: mimic.rnea(m, ops, q, v, a, _fext(m, f)),
                 "Inverse dynamics with external forces: tau = M a + C v + g - sum_i J_i^T f_i.", cost=3),
    FunctionSpec("nle", ("q", "v"), lambda m: (m.nv,), mimic.nle,
                 "Nonlinear effects C(q, v) v + g(q).", cost=3,
                 jacobians=(_with_params(copied("nle_derivatives", q="dnle_dq", v="dnle_dv"), "rnea"),
                            _with_params(copied("rnea_derivatives", q="dtau_dq", v="dtau_dv"), "rnea")),
                 pinocchio=Counterpart("nonLinearEffects", ("q", "v"), "nle")),
    FunctionSpec("gravity", ("q",), lambda m: (m.nv,), mimic.gravity,
                 "Generalized gravity g(q).",
                 jacobians=(_with_params(copied("gravity_derivatives", q=None), "rnea"),
                            _with_params(copied("rnea_derivatives", q="dtau_dq"), "rnea")),
                 pinocchio=Counterpart("computeGeneralizedGravity", ("q",))),
    FunctionSpec("crba", ("q",), lambda m: (m.nv, m.nv), mimic.crba,
                 "Joint-space inertia matrix M(q), full and symmetric (CRBA: RBDL paper Alg. 2, seed 000).", cost=3,
                 jacobians=({None: {"q": block("crba_derivatives")}},),
                 pinocchio=Counterpart("crba", ("q",), "crba", upper=("",))),
    FunctionSpec("aba", ("q", "v", "tau"), lambda m: (m.nv,), mimic.aba,
                 "Forward dynamics a = M^-1 (tau - C v - g) (ABA: RBDL paper Alg. 3, seed 000).", solves=True, cost=5,
                 jacobians=(_with_params(copied("aba_derivatives", q="ddq_dq", v="ddq_dv", tau="ddq_dtau"), "aba"),),
                 overloads=(_F_EXT("aba_fext"), _PASSIVE),
                 pinocchio=Counterpart("aba", ("q", "v", "tau"), "aba")),
    FunctionSpec("aba_fext", ("q", "v", "tau", "fext"), lambda m: (m.nv,),
                 lambda m, ops, q, v, t, f: mimic.aba(m, ops, q, v, t, _fext(m, f)),
                 "Forward dynamics with external forces: a = M^-1 (tau - C v - g + sum_i J_i^T f_i).",
                 solves=True, cost=6),
    FunctionSpec("placements", ("q",), lambda m: (m.nbodies, 12), _placements,
                 "Every body's placement: rotation (row-major, body -> world) and origin."),
    FunctionSpec("jacobians", ("q",), lambda m: (6, m.full.nv),
                 lambda m, ops, q: mimic.joint_jacobians(m, ops, q)[0],
                 "Every joint axis in world coordinates at the world origin, rows [linear; angular] "
                 "(mimic joints too: 6 x nv of the tree, as Pinocchio's data.J).",
                 pinocchio=Counterpart("computeJointJacobians", ("q",), "jacobians")),
    FunctionSpec("body_motion", ("q", "v", "a"), lambda m: (m.nbodies, 12), mimic.body_motion,
                 "Every body's [w, v_O, w-dot, a_O] in body coordinates, without gravity."),
    FunctionSpec("com", ("q",), lambda m: (3,), mimic.com, "Centre of mass in world coordinates.",
                 pinocchio=Counterpart("centerOfMass", ("q",))),
    FunctionSpec("kinetic_energy", ("q", "v"), lambda m: (1,), mimic.kinetic_energy,
                 "Kinetic energy v^T M(q) v / 2.", scalar=True, cost=2,
                 pinocchio=Counterpart("computeKineticEnergy", ("q", "v"))),
    FunctionSpec("passive_torque", ("v",), lambda m: (m.nv,), mimic.passive_torque,
                 "Passive joint torque -D v of the joints' viscous damping (URDF <dynamics damping>, MJCF "
                 "damping; MuJoCo's qfrc_passive without springs): add it to tau for damped dynamics, as "
                 "aba(q, v, tau, passive=True) does."),
    FunctionSpec("potential_energy", ("q",), lambda m: (1,), mimic.potential_energy,
                 "Potential energy -m g . c.", scalar=True, pinocchio=Counterpart("computePotentialEnergy", ("q",))),
    FunctionSpec("coriolis", ("q", "v"), lambda m: (m.nv, m.nv), mimic.coriolis,
                 "Christoffel-consistent Coriolis matrix C(q, v): C v = nle - g, M-dot - 2C skew "
                 "(Coriolis paper Alg. 1, seed 002).",
                 cost=9, pinocchio=Counterpart("computeCoriolisMatrix", ("q", "v"), "coriolis")),
    FunctionSpec("christoffel", ("q",), lambda m: (m.nv, m.nv, m.nv), mimic.christoffel,
                 "Christoffel symbols of the first kind Gamma[i, j, k]: C[i, j] = sum_k Gamma[i, j, k] v[k].",
                 costly=True, cost=56),
    # (crba's and minv's derivatives for the front ends: built when named)
    FunctionSpec("crba_derivatives", ("q",), lambda m: (m.nv, m.nv, m.nv), mimic.crba_derivatives,
                 "dM/dq: [i, j, k] = d M[i, j] / d q[k], in the tangent space (Gamma[i, j, k] + Gamma[j, i, k]).",
                 costly=True, cost=56, default=False),
    FunctionSpec("minv", ("q",), lambda m: (m.nv, m.nv), mimic.minv,
                 "Inverse joint-space inertia M(q)^-1 by articulated-body impulses (Drumwright, seed 001).",
                 solves=True, cost=5, jacobians=({None: {"q": block("crba_derivatives", transform=INVERSE)}},),
                 # On a tree with branches M^-1 across them keeps the table's digits in fewer operations
                 # than any other (Talos, Solo12, ANYmal, Go1, Allegro, dm_control's dog): tried alone
                 # first there, it spares the others' generation (docs/performance.md, Cold builds).
                 variants=(Variant(minv.minv_in_fixed_frame, lambda model: not model.has_mimic),
                           Variant(minv.minv_across_branches, lambda model: not model.has_mimic,
                                   preferred=minv.has_branches),
                           Variant(minv.minv_across_branches_in_fixed_frame, minv.has_branches),
                           _solved_after(mimic.factors_of_m, lambda m: (Block(0, 1, True),), lambda m: ((0, m.nv * m.nv),))),
                 pinocchio=Counterpart("computeMinverse", ("q",), "minv", upper=("",))),
    FunctionSpec("minv_times", ("q", "tau"), lambda m: (m.nv,), mimic.minv_times,
                 "M(q)^-1 tau in O(n).", solves=True, cost=3),
    FunctionSpec("fd_crba", ("q", "v", "tau"), lambda m: (m.nv,), mimic.fd_crba,
                 "Forward dynamics through CRBA and a sparse L^T D L factorization of M.", solves=True, cost=4,
                 pinocchio=Counterpart("aba", ("q", "v", "tau")),   # the same quantity: Pinocchio's is aba
                 jacobians=(_with_params(copied("aba_derivatives", q="ddq_dq", v="ddq_dv", tau="ddq_dtau"), "aba"),)),
    FunctionSpec("com_velocity", ("q", "v"), lambda m: (3,), mimic.com_velocity,
                 "Velocity of the centre of mass."),
    FunctionSpec("spatial_momentum", ("q", "v"), lambda m: (6,), mimic.spatial_momentum,
                 "Spatial momentum [linear; angular] about the world origin, world axes."),
    FunctionSpec("centroidal_momentum", ("q", "v"), lambda m: (6,), mimic.centroidal_momentum,
                 "Centroidal momentum h_G = [linear; angular about the centre of mass].", cost=4),
    FunctionSpec("centroidal_map", ("q",), lambda m: (6, m.nv), mimic.centroidal_map,
                 "Centroidal momentum matrix A_G, A_G v = h_G.",
                 # ccrba computes A_G and needs v for h_G
                 pinocchio=Counterpart("ccrba", ("q", "v"), "ccrba")),
]


FUNCTIONS += frame_functions()


def _square_parts(*names):
    return lambda m: tuple((name, (m.nv, m.nv)) for name in names)


FUNCTIONS += [
    FunctionSpec("rnea_derivatives", ("q", "v", "a"), lambda m: (2 * m.nv * m.nv,), derivatives.rnea_derivatives,
                 "d tau / dq and d tau / dv (q in the tangent space, as Pinocchio's computeRNEADerivatives).",
                 parts=_square_parts("dtau_dq", "dtau_dv"), costly=True, cost=17,
                 pinocchio=Counterpart("computeRNEADerivatives", ("q", "v", "a"), "rnea_derivs",
                                       fields=("dtau_dq", "dtau_dv")),
                 variants=(_analytic(rnea_derivatives.analytic_rnea_derivatives),)),
    FunctionSpec("aba_derivatives", ("q", "v", "tau"), lambda m: (3 * m.nv * m.nv,), derivatives.aba_derivatives,
                 "d qdd / dq, d qdd / dv and d qdd / d tau = M^-1 (Pinocchio's computeABADerivatives).",
                 parts=_square_parts("ddq_dq", "ddq_dv", "ddq_dtau"), costly=True, solves=True, cost=42,
                 pinocchio=Counterpart("computeABADerivatives", ("q", "v", "tau"), "aba_derivs",
                                       fields=("ddq_dq", "ddq_dv", "Minv"), upper=("Minv",)),
                 variants=(_analytic(rnea_derivatives.analytic_aba_derivatives),
                           _analytic(rnea_derivatives.analytic_aba_derivatives_factored, **_ABA_DERIVATIVE_BLOCKS),
                           _solved_after(derivatives.aba_derivatives_factored, **_ABA_DERIVATIVE_BLOCKS))),
    # rnea_derivatives(q, v, 0) gives the same: built when named
    FunctionSpec("nle_derivatives", ("q", "v"), lambda m: (2 * m.nv * m.nv,), derivatives.nle_derivatives,
                 "d nle / dq and d nle / dv.", parts=_square_parts("dnle_dq", "dnle_dv"), default=False,
                 variants=(_analytic(rnea_derivatives.analytic_nle_derivatives),)),
    FunctionSpec("integrate", ("q", "v", "dt"), lambda m: (m.nq,), configuration.integrate,
                 "q (+) v dt: the configuration reached from q by the constant velocity v in time dt "
                 "(Pinocchio's integrate; quaternions on the group)."),
    FunctionSpec("difference", ("q", "q1"), lambda m: (m.nv,), configuration.difference,
                 "The velocity that reaches q1 from q in unit time: integrate(q, difference(q, q1), 1) = q1 "
                 "(Pinocchio's difference)."),
    FunctionSpec("regressor", ("q", "v", "a"), lambda m: (m.nv, regressor.PER_BODY * m.full.nbodies),
                 regressor.regressor,
                 "The inertial-parameter regressor Y: Y pi = rnea(q, v, a), pi = parameters() "
                 "(Pinocchio's computeJointTorqueRegressor).", cost=12,
                 pinocchio=Counterpart("computeJointTorqueRegressor", ("q", "v", "a"), "regressor")),
    FunctionSpec("base_regressor", ("q", "v", "a"), lambda m: (m.nv, len(regressor.base_parameters(m).columns)),
                 regressor.base_regressor,
                 "The regressor's base columns Y_b: Y_b beta = rnea(q, v, a), beta = base_parameters().", cost=9,
                 kinematic_numbers=True),
    FunctionSpec("gravity_derivatives", ("q",), lambda m: (m.nv, m.nv), derivatives.gravity_derivatives,
                 "d g / dq (Pinocchio's computeGeneralizedGravityDerivatives).", cost=3,
                 pinocchio=Counterpart("computeGeneralizedGravityDerivatives", ("q",)),
                 variants=(_analytic(rnea_derivatives.analytic_gravity_derivatives),)),
]
_parameter_columns = lambda m: (m.nv, len(parameters_of(m)))


def _parameter_solve(inverse):
    """aba_parameter_derivatives' solve after the program: one block of a column per parameter,
    whose factors (M's, or M^-1 itself: `inverse`) the program leaves after its outputs, to be
    placed among their zeros (FactorSolve.placed; n x n entries are room enough for either)."""
    def solve(model):
        n, columns = model.nv, len(parameters_of(model))
        return FactorSolve(tuple(mimic.elimination_parents(model)), ((n * columns, n * n),),
                           (Block(0, -1, width=columns),), inverse=inverse)
    return solve


FUNCTIONS += [
    FunctionSpec("rnea_parameter_derivatives", ("q", "v", "a"), _parameter_columns,
                 parameter_derivatives.rnea_parameter_derivatives,
                 "d tau / d params of rnea (the model parameters, param_names): the regressor's columns for "
                 "inertial and payload parameters, forward mode for the others.", parametric=True, cost=6),
    FunctionSpec("aba_parameter_derivatives", ("q", "v", "tau"), _parameter_columns,
                 parameter_derivatives.aba_parameter_derivatives,
                 "d qdd / d params of aba: -M^-1 d rnea / d params at (q, v, qdd).",
                 parametric=True, solves=True, costly=True, cost=12,
                 variants=(Variant(parameter_derivatives.aba_parameter_derivatives_factored,
                                   parameter_derivatives.solves_densely),
                           Variant(parameter_derivatives.aba_parameter_derivatives_deferred,
                                   parameter_derivatives.solves_densely, solve=_parameter_solve(inverse=True)),
                           Variant(parameter_derivatives.aba_parameter_derivatives_solved,
                                   lambda m: not parameter_derivatives.solves_densely(m),
                                   solve=_parameter_solve(inverse=False)))),
]
FUNCTIONS.append(FunctionSpec(
    "eom", ("q", "v"), lambda m: (m.nv * m.nv + m.nv,), constrained.eom,
    "The equation of motion's terms (M, nle) in one program: the kinematics is computed once.", cost=3,
    parts=lambda m: (("M", (m.nv, m.nv)), ("nle", (m.nv,)))))

# The loop closures of a closed chain (Model.loops: SDFormat loop joints, MJCF connects, --loop): built by default
# for a model with loops, and only for one.
FUNCTIONS += [
    FunctionSpec("loop_residual", ("q",), lambda m: (loops.rows(m),), loops.loop_residual,
                 "The loops' residual, world axes: for each, p_a - p_b (and for 6d the rotation error "
                 "vee(R_a R_b^T - R_b R_a^T) / 2): zero where the loops are closed.", needs_loops=True),
    FunctionSpec("loop_jacobian", ("q",), lambda m: (loops.rows(m), m.nv), loops.loop_jacobian,
                 "The loops' Jacobian G: frame a's rows of the local_world_aligned frame Jacobian minus frame "
                 "b's (the residual's rate is G v; for 6d rows where the loop is closed).", needs_loops=True),
    FunctionSpec("loop_gamma", ("q", "v"), lambda m: (loops.rows(m),), loops.loop_gamma,
                 "gamma = -G-dot v of the loops: G q-ddot = gamma keeps closed loops closed.", needs_loops=True),
    FunctionSpec("loop_newton_step", ("q",), lambda m: (m.nq + loops.rows(m),), loops.loop_newton_step,
                 "One Newton step onto the loops: q (+) dq with dq = -G^T (G G^T + mu I)^-1 residual (the "
                 "least-norm step, mu tiny: redundant rows), and the residual at q (project_configuration "
                 "repeats it).", parts=lambda m: (("q_next", (m.nq,)), ("residual", (loops.rows(m),))),
                 needs_loops=True),
]


def loop_dynamics(contacts=()):
    """The closed chain's dynamics, its derivatives and the velocity projection, with the
    contacts declared at build time held too (their rows after the loops'): functions of a
    model with loops only."""
    contacts = tuple(contacts)
    rows = lambda m: loops.rows(m, contacts)
    and_contacts = " and the declared contacts" if contacts else ""
    return [
        FunctionSpec("constrained_dynamics", ("q", "v", "tau", "kp", "kd", "damping"),
                     lambda m: (m.nv + 2 * rows(m),),
                     lambda m, ops, q, v, tau, kp, kd, d: loops.constrained_dynamics(m, ops, q, v, tau, kp=kp, kd=kd,
                                                                                     damping=d, contacts=contacts),
                     f"Forward dynamics of the closed chain: q-ddot, the multipliers lambda of the loops{and_contacts} "
                     "(M q-ddot = tau - nle + G^T lambda) and the pivots of G M^-1 G^T + damping, with G q-ddot = "
                     "gamma - kd G v - kp residual (Baumgarte); damping > 0 regularizes redundant constraints.",
                     parts=lambda m: (("qdd", (m.nv,)), ("multipliers", (rows(m),)), ("pivots", (rows(m),))),
                     part_roles=_PIVOTS, solves=True, needs_loops=True, cost=4,
                     jacobians=({"qdd": {x: block("constrained_dynamics_derivatives", f"ddq_d{x}")
                                         for x in loops.DIFFERENTIATED},
                                 "multipliers": {x: block("constrained_dynamics_derivatives", f"dlambda_d{x}")
                                                 for x in loops.DIFFERENTIATED}},)),
        FunctionSpec("constrained_dynamics_derivatives", ("q", "v", "tau", "kp", "kd", "damping"),
                     lambda m: ((m.nv + rows(m)) * (3 * m.nv + 2),),
                     lambda m, ops, q, v, tau, kp, kd, d: loops.constrained_dynamics_derivatives(
                         m, ops, q, v, tau, kp=kp, kd=kd, damping=d, contacts=contacts),
                     "d/dq, d/dv, d/dtau, d/dkp and d/dkd of constrained_dynamics' q-ddot, then of its multipliers "
                     "(q in the tangent space; the dynamics' KKT system solved for each direction).",
                     parts=lambda m: derivative_parts(m, rows(m), loops.DIFFERENTIATED),
                     solves=True, needs_loops=True, default=False, costly=True, cost=8,
                     variants=(loop_derivatives_factored(contacts),)),
        FunctionSpec("project_velocity", ("q", "v", "damping"), lambda m: (m.nv + 2 * rows(m),),
                     lambda m, ops, q, v, d: loops.project_velocity(m, ops, q, v, damping=d, contacts=contacts),
                     f"The velocity nearest v in M's metric that the loops{and_contacts} allow (G v+ = 0), "
                     "the impulses (M (v+ - v) = G^T impulses) and the pivots of G M^-1 G^T + damping: for initial "
                     "states.",
                     parts=lambda m: (("v_plus", (m.nv,)), ("impulses", (rows(m),)), ("pivots", (rows(m),))),
                     part_roles=_PIVOTS, solves=True, needs_loops=True, cost=3),
    ]


FUNCTIONS += loop_dynamics()
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
                     "The declared contacts' Jacobian G, rows in each contact frame's axes.", kind="contact"),
        FunctionSpec("contact_gamma", ("q", "v"), lambda model: (m,),
                     lambda model, ops, q, v: constrained.constraint_drift(model, ops, contacts, q, v),
                     "gamma = -G-dot v of the declared contacts: G q-ddot = gamma keeps them still.", kind="contact"),
        FunctionSpec("contact_dynamics", ("q", "v", "tau", "damping"), lambda model: (model.nv + 2 * m,),
                     lambda model, ops, q, v, tau, d: constrained.contact_dynamics(model, ops, contacts, q, v, tau, damping=d),
                     "Forward dynamics with the declared contacts held (RBDL paper eq. 7, seed 000): q-ddot, "
                     "multipliers, and the pivots of G M^-1 G^T + damping (not positive: redundant contacts).",
                     parts=outcome("qdd"), part_roles=_PIVOTS, declared=True, kind="contact", solves=True,
                     jacobians=({"qdd": {x: block("contact_dynamics_derivatives", f"ddq_d{x}") for x in ("q", "v", "tau")},
                                 "multipliers": {x: block("contact_dynamics_derivatives", f"dlambda_d{x}")
                                                 for x in ("q", "v", "tau")}},)),
        FunctionSpec("contact_dynamics_derivatives", ("q", "v", "tau", "damping"), lambda model: (3 * (model.nv + m) * model.nv,),
                     lambda model, ops, q, v, tau, d: derivatives.contact_dynamics_derivatives(model, ops, contacts, q, v, tau, damping=d),
                     "d/dq, d/dv and d/dtau of contact_dynamics' q-ddot and multipliers "
                     "(Pinocchio's computeConstraintDynamicsDerivatives).",
                     parts=lambda model: derivative_parts(model, m, STATES), default=False, kind="contact", solves=True,
                     variants=(contact_derivatives_factored(contacts, m),)),
        FunctionSpec("impulse_dynamics", ("q", "v", "restitution", "damping"), lambda model: (model.nv + 2 * m,),
                     lambda model, ops, q, v, e, d: constrained.impulse_dynamics(model, ops, contacts, q, v, restitution=e, damping=d),
                     "Velocity after an impact on the declared contacts (RBDL paper eq. 10, seed 000): v+, "
                     "impulses, pivots.",
                     parts=outcome("v_plus"), part_roles=_PIVOTS, declared=True, kind="contact", solves=True),
        FunctionSpec("contact_inertia", ("q",), lambda model: (m, m),
                     lambda model, ops, q: constrained.contact_inertia(model, ops, contacts, q),
                     "The declared contacts' inverse inertia G M^-1 G^T.", declared=True, kind="contact", solves=True),
        FunctionSpec("contact_eom", ("q", "v"), lambda model: (model.nv * model.nv + model.nv + m * model.nv + m,),
                     lambda model, ops, q, v: constrained.contact_eom(model, ops, contacts, q, v),
                     "M, nle, G and gamma of the declared contacts in one program.", kind="contact",
                     parts=lambda model: (("M", (model.nv, model.nv)), ("nle", (model.nv,)), ("G", (m, model.nv)),
                                          ("gamma", (m,)))),
    ]


def lookup(name, contacts=()):
    """The spec of a function a module may have (those of contacts need the contacts, and the
    closed chain's dynamics hold them too)."""
    if contacts:
        for spec in contact_functions(contacts) + loop_dynamics(contacts):
            if spec.name == name:
                return spec
    return BY_NAME[name]


DEFAULT = tuple(f.name for f in FUNCTIONS)
# The functions of declared contacts, by name (their specs depend on the contacts)
CONTACT_NAMES = tuple(spec.name for spec in contact_functions(()))
LOOP_NAMES = tuple(spec.name for spec in FUNCTIONS if spec.needs_loops)
# Above this many velocity coordinates a default build leaves the costly functions out: Talos'
# (nv = 38) Christoffel symbols alone are more operations than all its default functions
# together (docs/performance.md, Christoffel symbols).
COSTLY_MAX_NV = 24


def select(names=None, model=None, contacts=()):
    """The specs for `names` (the defaults for `model` when None); unknown names raise a
    one-line error. With declared contacts, their functions are among the defaults.

    By default, the functions that solve with M are left out of a model whose M is singular (a
    joint that moves no mass: there is nothing finite to compute), and the costly functions out
    of a model whose tree has more than COSTLY_MAX_NV velocity coordinates. Naming them builds them.
    The derivatives with respect to model parameters (`parametric`) are built by default for a
    model with parameters only, and named for one without they are a one-line error.
    """
    table = FUNCTIONS + (contact_functions(contacts) if contacts else [])
    if contacts:   # the closed chain's dynamics hold the declared contacts too
        holding = {spec.name: spec for spec in loop_dynamics(contacts)}
        table = [holding.get(f.name, f) for f in table]
    singular = model is not None and model.massless_joints()
    parameters = model is not None and bool(model.parameters)
    moving = model is not None and changes_kinematics(model.parameters)
    if model is not None and not model.loops:
        table = [f for f in table if not f.needs_loops]
    if names is None:
        big = model is not None and model.full.nv > COSTLY_MAX_NV   # the tree's: mimic joints are computed too
        return [f for f in table if f.default and not (singular and f.solves) and not (big and f.costly)
                and (parameters or not f.parametric) and not (moving and f.kinematic_numbers)]
    known = [f.name for f in table]
    unknown = [n for n in names if n not in known]
    if unknown:
        needs = " (it needs contacts declared with --contact FRAME:6d)" if unknown[0] in CONTACT_NAMES else \
            " (it needs a closed chain: an SDFormat loop joint, an MJCF connect or --loop)" if unknown[0] in LOOP_NAMES else ""
        raise CodegenError(f"unknown algorithm {unknown[0]!r}{needs}; choose from {', '.join(known)}")
    unparametric = [f.name for f in table if f.name in names and f.parametric] if model is not None and not parameters else []
    if unparametric:
        raise CodegenError(f"{unparametric[0]} is a derivative with respect to model parameters, and this build "
                           "has none; build with parameters=[...] (--parameters)")
    fixed = [f.name for f in table if f.name in names and f.kinematic_numbers] if moving else []
    if fixed:
        raise CodegenError(f"{fixed[0]}: its base parameters are found on the model's kinematics and gravity as "
                           f"numbers, and gravity or origin:JOINT are parameters of this build; build it without "
                           "them, or use regressor")
    return [f for f in table if f.name in names]


def check_names(names):
    """Before a model is loaded: a one-line error for a name no build can have."""
    for name in names or ():
        if name not in BY_NAME and name not in CONTACT_NAMES:
            raise CodegenError(f"unknown algorithm {name!r}; choose from {', '.join(DEFAULT + CONTACT_NAMES)}")
