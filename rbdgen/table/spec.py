"""The rows of the function table: a function's facts (FunctionSpec), its other algorithms
(Variant) and its Pinocchio counterpart (Counterpart)."""

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..model.parameters import parameters_of
from .description import Description, JacobianSource, Part, Port, block
from .inputs import INPUTS


def always(model):
    return True


def never(model):
    return False


@dataclass(frozen=True)
class Variant:
    """Another algorithm for a function's outputs. The generator records every variant that
    `applies` to the model and keeps the cheapest program within the accuracy budget (only the
    ones `preferred` for the model, if one of them keeps its digits). `solve(model)`: the solves
    with M's factors its program leaves to a loop after it (algorithms.solves.FactorSolve)."""
    run: Callable
    applies: Callable = always
    preferred: Callable = never
    solve: Callable = None

    @property
    def name(self):
        return self.run.__name__


@dataclass(frozen=True)
class Counterpart:
    """Pinocchio's function for the same quantity: its Python call with the arguments after
    (model, data), the line of the C++ yardstick pin_bench that times it (None: not timed), the
    fields of Pinocchio's Data that hold the outputs after the call (none: what it returns), and
    those of which Pinocchio fills only the upper triangle ("": what it returns)."""
    call: str
    inputs: tuple
    bench: str = None
    fields: tuple = ()
    upper: tuple = ()

    def values(self, pin, model, data, q, inputs):
        """Pinocchio's outputs as rbdgen's, one flat array: `pin` the pinocchio module, q in
        Pinocchio's layout, `inputs` rbdgen's other inputs by name."""
        result = getattr(pin, self.call)(model, data, q, *(inputs[name] for name in self.inputs[1:]))
        named = [(field, getattr(data, field)) for field in self.fields] or [("", result)]
        return np.concatenate([np.ravel(np.triu(x) + np.triu(x, 1).T if field in self.upper else x)
                               for field, x in named])


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    inputs: tuple            # argument names, each a row of INPUTS
    output: Callable         # model -> output shape
    run: Callable            # (model, ops, *inputs) -> nested list of scalars
    doc: str
    scalar: bool = False     # the wrapper returns a float (energies)
    costly: bool = False     # output grows as nv^3: left out of default builds of big robots
    kind: str = "state"      # "state"; "frame": run(model, ops, body, *inputs), one program per body,
                             # public as `family` by frame name and reference; "contact": of the
                             # contacts declared at build time
    parts: Callable = None   # model -> ((name, shape), ...): the flat output is returned as these arrays
    declared: bool = False   # the public function also takes call-time contacts, so the generated
                             # one is private (_declared_<name>)
    default: bool = True     # in a build that names no functions
    variants: tuple = ()     # Variant rows: other algorithms for the same outputs
    solves: bool = False     # its outputs solve with M (or G M^-1 G^T): needs an invertible M, and
                             # verification grants it eps cond(M)
    cost: int = None         # relative cost of generating and compiling it (tenths of a second on
                             # Panda), to schedule the big ones first; None: a small one
    jacobians: tuple = ()    # where its Jacobians come from: choices in order (the first whose
                             # functions are all built wins); a choice maps each output (None: the
                             # only one) and input to its source (description.block: derivative
                             # function, part, first row, transform); an input the source does not take is 0
    pinocchio: Counterpart = None
    kinematic_numbers: bool = False   # found on the model's kinematics and gravity as numbers (the base
                                      # parameters): not built with gravity or origin parameters
    parametric: bool = False  # its algorithm takes the parameters' values (`params`, last) rather than
                             # running on the model with them (rbdgen.algorithms.parameter_derivatives):
                             # a function of a model with parameters only, built by default for one
    family: str = None       # a function of a frame: the public function (frame_jacobian)
    reference: str = None    # ... and the reference frame of this program (None: it takes none)
    default_reference: str = None
    family_doc: str = None   # ... and the public function's documentation
    needs_loops: bool = False   # of a model's loop closures (Model.loops): built for a model with loops only
    part_roles: tuple = ()   # (part name, role) of the parts that are not values (description.PIVOTS)
    overloads: tuple = ()    # description.Overload rows: public keywords that call another function

    @property
    def per_body(self):
        return self.kind == "frame"

    def arguments(self, model):
        """Its inputs on `model`: the table's, then `params` when the model has parameters."""
        return self.inputs + ("params",) if model.parameters else self.inputs

    def input_sizes(self, model):
        return [(name, INPUTS[name].size(model)) for name in self.arguments(model)]

    def bind(self, model, module):
        """Its description on `model` in module `module` (rbdgen.table.description)."""
        parts, offset, roles = [], 0, dict(self.part_roles)
        for name, shape in (self.parts(model) if self.parts else ()):
            part = Part(name, tuple(int(d) for d in shape), offset, *((roles[name],) if name in roles else ()))
            parts.append(part)
            offset = part.stop
        inputs = tuple(Port(name, int(size), INPUTS[name].batching, INPUTS[name].role, INPUTS[name].default,
                            INPUTS[name].meaning) for name, size in self.input_sizes(model))
        jacobians = tuple(tuple(JacobianSource(output=output, input=x, **source) for output, blocks in choice.items()
                                for x, source in blocks.items()) for choice in self.jacobians)
        return Description(
            name=self.name, cname=f"rbdgen_{module}_{self.name}", doc=self.doc, inputs=inputs,
            shape=tuple(int(d) for d in self.output(model)), parts=tuple(parts), kind=self.kind, scalar=self.scalar,
            solves=self.solves, declared=self.declared, family=self.family, reference=self.reference,
            default_reference=self.default_reference, family_doc=self.family_doc, jacobians=jacobians,
            overloads=self.overloads)

    def evaluate(self, model, ops, body, *args, run=None):
        """`run` (default: its algorithm) on `model` with `ops` and its arguments (a function of
        a frame on `body`); a model with parameters runs as the model with the last argument's
        values (rbdgen.model.parameters), or, for a `parametric` function, takes them as they are
        (its algorithm builds the model with them)."""
        run = run or self.run
        if model.parameters and not self.parametric:
            model, args = parameters_of(model).model_with(args[-1]), args[:-1]
        return run(model, ops, body, *args) if self.per_body else run(model, ops, *args)


def copied(source, **parts):
    """A Jacobian choice: each input's block is the part of `source` named."""
    return {None: {x: block(source, part) for x, part in parts.items()}}
