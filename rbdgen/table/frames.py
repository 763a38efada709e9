"""The functions of a frame in the function table: one program per body that carries frames (the
bodies down a chain share one: codegen.programs.frame_programs), the frame's placement on the
body its last input, public by frame name (or index) and reference frame; and the points of
frames."""

from dataclasses import dataclass

from ..algorithms import derivatives, mimic
from ..algorithms.frames import REFERENCE_FRAMES
from .description import ROTATION, block
from .spec import FunctionSpec, copied


# The reference frame each public function of a frame takes by default (the others: local).
_DEFAULT_REFERENCE = {"frame_jacobian": "local_world_aligned", "frame_jacobian_time_variation": "local_world_aligned"}
_REFERENCE_DOC = ('"local" (frame axes, at the frame origin), "world" (world axes, at the world origin) or '
                  '"local_world_aligned" (world axes, at the frame origin)')
# The public functions of a frame (the module's, the reference's, JAX's: rbdgen.bindings.contact)
FAMILY_DOCS = {
    "frame_placement": "(R, p): the frame's rotation (frame -> world axes) and origin in world coordinates.\n\n"
                       "frame: a name or an index in `frames`. With a batch q (B, nq): R (B, 3, 3), p (B, 3).\n"
                       "out: a (12,) or (B, 12) array for R row-major, then p (R and p are views of it).",
    "frame_jacobian": "6 x nv Jacobian of the frame, rows [linear; angular], J v = the frame's velocity.\n\n"
                      f"reference: {_REFERENCE_DOC}. Columns of joints that do not move the frame are zero.",
    "frame_velocity": "The frame's spatial velocity [linear; angular] in `reference` (see frame_jacobian).",
    "frame_acceleration": "The frame's spatial acceleration [linear; angular] (no gravity) in `reference`.",
    "frame_classical_acceleration": "The classical acceleration of the frame's origin and its angular acceleration, "
                                    "rows [linear; angular], in `reference` (Pinocchio's "
                                    "getFrameClassicalAcceleration).",
    "frame_jacobian_time_variation": "dJ/dt of the frame's 6 x nv Jacobian in `reference` as q moves along v, rows "
                                     "[linear; angular] (Pinocchio's getFrameJacobianTimeVariation). J-dot v is the "
                                     "frame's acceleration at zero q-ddot: spatial in local and world, classical in "
                                     "local_world_aligned.",
    "frame_velocity_derivatives": "(d/dq, d/dv) of the frame's spatial velocity in `reference`, each 6 x nv, rows "
                                  "[linear; angular], q in the tangent space (Pinocchio's "
                                  "getFrameVelocityDerivatives).",
    "frame_acceleration_derivatives": "(d/dq, d/dv, d/da) of the frame's spatial acceleration in `reference`, each "
                                      "6 x nv (Pinocchio's getFrameAccelerationDerivatives: its a_partial_dq, "
                                      "a_partial_dv, a_partial_da).",
}


def _of_frame(family, inputs, output, run, doc, reference=None, **facts):
    """A function of a frame: one program per body that carries frames, the frame's placement
    on the body its last input; public as `family` (with `reference`, one of three programs)."""
    name = f"{family}_{reference}" if reference else family
    return FunctionSpec(name, inputs + ("placement",), output, run, doc, kind="frame", family=family,
                        reference=reference, family_doc=FAMILY_DOCS[family],
                        default_reference=_DEFAULT_REFERENCE.get(family, "local") if reference else None, **facts)


def frame_functions():
    """Functions of a frame, one program per body (its placement on the body is an input):
    the placement, and the Jacobian, velocity, spatial and classical acceleration in each of
    Pinocchio's three reference frames."""
    specs = [_of_frame("frame_placement", ("q",), lambda m: (12,), _frame_run(mimic.frame_placement),
                       "A frame's rotation (row-major, frame -> world) and origin.",
                       parts=lambda m: (("R", (3, 3)), ("p", (3,))),
                       jacobians=({"R": {"q": block("frame_jacobian_local_world_aligned", None, 3, ROTATION)},
                                   "p": {"q": block("frame_jacobian_local_world_aligned")}},))]
    for reference in REFERENCE_FRAMES:
        specs += [
            _of_frame("frame_jacobian", ("q",), lambda m: (6, m.nv), _frame_run(mimic.frame_jacobian_of_body, reference=reference),
                      f"A frame's Jacobian in {reference} coordinates, rows [linear; angular].", reference),
            _of_frame("frame_velocity", ("q", "v"), lambda m: (6,), _frame_run(mimic.frame_velocity, reference=reference),
                      f"A frame's spatial velocity in {reference} coordinates, [linear; angular].", reference,
                      jacobians=(copied(f"frame_velocity_derivatives_{reference}", q="dv_dq", v="dv_dv"),)),
            _of_frame("frame_acceleration", ("q", "v", "a"), lambda m: (6,), _frame_run(mimic.frame_acceleration, reference=reference),
                      f"A frame's spatial acceleration in {reference} coordinates, [linear; angular].", reference,
                      jacobians=(copied(f"frame_acceleration_derivatives_{reference}", q="da_dq", v="da_dv", a="da_da"),)),
            _of_frame("frame_classical_acceleration", ("q", "v", "a"), lambda m: (6,),
                      _frame_run(mimic.frame_acceleration, reference=reference, classical=True),
                      f"The classical acceleration of a frame's origin in {reference} coordinates.", reference),
            # built when named: getFrameJacobianTimeVariation, getFrameVelocityDerivatives,
            # getFrameAccelerationDerivatives
            _of_frame("frame_jacobian_time_variation", ("q", "v"), lambda m: (6, m.nv),
                      _frame_run(derivatives.frame_jacobian_time_variation, reference=reference),
                      f"dJ/dt of a frame's Jacobian in {reference} coordinates as q moves along v, rows "
                      "[linear; angular].", reference, default=False),
            _of_frame("frame_velocity_derivatives", ("q", "v"), lambda m: (12 * m.nv,),
                      _frame_derivatives(mimic.frame_velocity, reference, ("q", "v")),
                      f"d/dq and d/dv of a frame's spatial velocity in {reference} coordinates.", reference,
                      parts=_six_by_nv("dv_dq", "dv_dv"), default=False),
            _of_frame("frame_acceleration_derivatives", ("q", "v", "a"), lambda m: (18 * m.nv,),
                      _frame_derivatives(mimic.frame_acceleration, reference, ("q", "v", "a")),
                      f"d/dq, d/dv and d/da of a frame's spatial acceleration in {reference} coordinates.", reference,
                      parts=_six_by_nv("da_dq", "da_dv", "da_da"), default=False),
        ]
    return specs


def _six_by_nv(*names):
    return lambda m: tuple((name, (6, m.nv)) for name in names)


def _frame_derivatives(function, reference, wrt):
    """The derivatives of a function of a frame with respect to its states `wrt` (forward mode)."""
    def run(model, ops, body, *inputs):
        *states, placement = inputs
        return derivatives.derivatives_of(
            model, ops, lambda m, o, *x: function(m, o, (body, placement), *x, reference=reference),
            list(zip(wrt, states)), wrt)
    return run


def _frame_run(function, **extra):
    """run(model, ops, body, *states, placement) -> function(model, ops, (body, placement),
    *states, **extra): the spec's inputs end with the placement, the algorithms take the frame
    first."""
    def run(model, ops, body, *inputs):
        *states, placement = inputs
        return function(model, ops, (body, placement), *states, **extra)
    return run


# The reference frame of the frame quantities the points read
POINT_REFERENCE = "local_world_aligned"


@dataclass(frozen=True)
class Point:
    """A public function of the states, a frame and a point fixed in it (frame coordinates): the
    linear rows of the frame quantity `family` in POINT_REFERENCE at the point. `matrix`: the
    quantity is a matrix (its first three rows are taken); `at_rest`: at zero q-ddot, negated
    (gamma = -J-dot v)."""
    family: str
    states: tuple
    doc: str
    matrix: bool = False
    at_rest: bool = False

    def to_json(self):
        return {"family": self.family, "states": list(self.states), "doc": self.doc, "matrix": self.matrix,
                "at_rest": self.at_rest, "reference": POINT_REFERENCE}


POINTS = {
    "point_jacobian": Point("frame_jacobian", ("q",),
                            "3 x nv: the world velocity of a point fixed in `frame` (frame coordinates) is J v.",
                            matrix=True),
    "point_velocity": Point("frame_velocity", ("q", "v"),
                            "World velocity of a point fixed in `frame` (given in frame coordinates)."),
    "point_acceleration": Point("frame_classical_acceleration", ("q", "v", "a"),
                                "World acceleration of the point: J a + J-dot v."),
    "point_gamma": Point("frame_classical_acceleration", ("q", "v"),
                         "The contact Hessian term gamma = -J-dot v of the point (RBDL paper §6.4).", at_rest=True),
}
