"""One function's description, bound to a model: what every consumer of a generated function
reads, the C printer and header, the module's binding, the reference, CasADi, JAX.

FunctionSpec.bind(model) makes it once per build; model.json holds it (to_json / from_json,
an exact round trip), and the module's binding reads it back. Inputs are ports, outputs parts,
the Jacobians typed records and the public keywords that call another function (f_ext,
passive) overloads. Standard library only: every generated module carries this file as
_description.py.
"""

from dataclasses import dataclass, fields
import inspect
import math

# How a batch call takes an input (Port.batching).
PER_STATE = "per state"    # one value per state: q, v, tau, ...
SHARED = "shared"          # one value for the whole batch: a frame's placement, dt, damping
BROADCAST = "broadcast"    # either: the model parameters

# What an input is (Port.role).
STATE = "state"            # the state and what acts on it: q, v, a, tau, f_ext
SETTING = "setting"        # a number of the call: dt, restitution, Baumgarte's gains
DAMPING = "damping"        # the regularization of a constrained solve (0: rigid): redundant constraints are
                           # refused without it, and CasADi holds it at zero (no derivative is generated)
PLACEMENT = "placement"    # the placement of the frame a function of a frame is evaluated at
PARAMETERS = "parameters"  # the model parameters, last, for a module built with them

# A public function's parameter without a default (parameters' (name, default) pairs), and the
# entry after which its parameters are keyword-only.
REQUIRED = inspect.Parameter.empty
KEYWORD_ONLY = ("*", None)

# The generated module's own keywords, last in each of its public functions, by keyword only
# (as its C entry points take them).
MODULE_KEYWORDS = (KEYWORD_ONLY, ("out", None), ("threads", 0))

# What an output part is (Part.role).
VALUE = "value"            # a result
PIVOTS = "pivots"          # the pivots of a contact solve: the caller judges redundancy by them

# How a Jacobian block is read from its source (JacobianSource.transform).
COPY = "copy"              # the rows as they are
ROTATION = "rotation"      # angular-velocity rows, applied to a rotation matrix (frame_placement's R)
INVERSE = "inverse"        # the rows of dB where the function's value is A = B^-1: dA = -A dB A (minv from dM)

# What an overload does (Overload.kind).
FORCES = "forces"          # f_ext (one [force; torque] row per body) selects `function`, which takes it as `input`
ADDED = "added"            # keyword=True adds `function`'s value (of the function's own inputs) to `input`


class Batched:
    """How a batch takes an input with a `batching` (PER_STATE, SHARED, BROADCAST)."""

    @property
    def shared(self):
        return self.batching == SHARED

    @property
    def per_state(self):
        return self.batching == PER_STATE

    @property
    def broadcast(self):
        return self.batching == BROADCAST


@dataclass(frozen=True)
class Port(Batched):
    """An input: its `size`, how a batch takes it, what it is, the public function's default
    (None: none) and its meaning."""
    name: str
    size: int
    batching: str
    role: str
    default: float = None
    meaning: str = ""


@dataclass(frozen=True)
class Part:
    """An output part: entries offset .. offset + size of the flat result, of `shape`."""
    name: str
    shape: tuple
    offset: int
    role: str = VALUE

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def stop(self):
        return self.offset + self.size


@dataclass(frozen=True)
class JacobianSource:
    """Where the block d output / d input of one Jacobian choice comes from: part `part`
    (None: the whole output) of the generated `function`, from row `row` on, read as
    `transform` says. `output` None: the function's only output."""
    output: str
    input: str
    function: str
    part: str
    row: int
    transform: str = COPY


def block(function, part=None, row=0, transform=COPY):
    """A Jacobian block's source as the function table writes it, under its output and input
    (JacobianSource's other fields)."""
    return dict(function=function, part=part, row=row, transform=transform)


@dataclass(frozen=True)
class Overload:
    """A public keyword that calls another generated function (see FORCES, ADDED)."""
    keyword: str
    kind: str
    function: str
    input: str
    meaning: str = ""

    @property
    def default(self):
        return None if self.kind == FORCES else False

    def given(self, value):
        """Whether a call's value of the keyword asks for it (f_ext: not None; passive: true)."""
        return value is not None if self.kind == FORCES else bool(value)


def public_doc(doc, overloads):
    """A function's documentation, with its overloads' keywords."""
    return "\n\n".join([doc] + [f"{o.keyword}: {o.meaning}." for o in overloads])


def apply_overloads(overloads, given, added, forces):
    """Apply the overloads a call asks for, in every front end the same way: their keywords
    are popped from `given` (the call's values by name); ADDED adds added(function), the
    other function's value at `given`, to its input; FORCES puts forces(overload, value) in
    as the other function's input. Returns the function to call: the last FORCES overload's,
    else None (the function's own)."""
    chosen = None
    for overload in overloads:
        value = given.pop(overload.keyword)
        if not overload.given(value):
            continue
        if overload.kind == ADDED:   # (+: NumPy arrays, lists, JAX and device arrays alike)
            given[overload.input] = given[overload.input] + added(overload.function)
        else:
            given[overload.input] = forces(overload, value)
            chosen = overload.function
    return chosen


@dataclass(frozen=True)
class Description:
    """One generated function on one model. kind: "state", "frame" (one program per body; the
    public function is `family`, in `reference`) or "contact" (of the contacts declared at
    build time; public when `declared`, as the public function that also takes call-time
    contacts). scalar: the public function returns a float. solves: the result solves with M
    (the binding checks it is finite). parts: the arrays the flat result holds (none: one
    array of `shape`). jacobians: the choices in order, each a tuple of JacobianSource (the
    first choice whose functions were built is used)."""
    name: str
    cname: str
    doc: str
    inputs: tuple
    shape: tuple
    parts: tuple = ()
    kind: str = "state"
    scalar: bool = False
    solves: bool = False
    declared: bool = False
    family: str = None
    reference: str = None
    default_reference: str = None
    family_doc: str = None
    jacobians: tuple = ()
    overloads: tuple = ()

    def __post_init__(self):
        # the pivots are the last part: the entry points return the others (entry_points.c)
        if any(part.role == PIVOTS for part in self.parts[:-1]):
            raise ValueError(f"{self.name}: the pivots must be its last part")

    @property
    def public_doc(self):
        return public_doc(self.doc, self.overloads)

    @property
    def per_body(self):
        return self.kind == "frame"

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def names(self):
        return tuple(port.name for port in self.inputs)

    def port(self, name):
        return next(port for port in self.inputs if port.name == name)

    def part(self, name):
        return next(part for part in self.parts if part.name == name)

    @property
    def pivots(self):
        """The part of a contact solve's pivots, or None."""
        return next((part for part in self.parts if part.role == PIVOTS), None)

    @property
    def damping(self):
        """The index of the input that regularizes its solve (role DAMPING), or None."""
        return next((k for k, port in enumerate(self.inputs) if port.role == DAMPING), None)

    @property
    def entry_parts(self):
        """The parts a generic call returns: the parts, or the whole output as one."""
        return self.parts or (Part(self.name, self.shape, 0),)

    @property
    def states(self):
        """The inputs given per state (the others: settings, a frame's placement, parameters)."""
        return tuple(port for port in self.inputs if port.batching == PER_STATE)

    @property
    def public(self):
        """The public function's inputs after the states, with their defaults (public_keywords)."""
        return public_keywords(self.inputs, self.overloads)

    def parameters(self, extra=()):
        """The generated function's parameters, (name, default) each (REQUIRED: none): its
        states (and a frame's placement), its public keywords, then `extra` (a front end's:
        out=, threads=). The order of its ports, but for the overloads' keywords."""
        required = tuple((port.name, REQUIRED) for port in self.inputs if port.role in (STATE, PLACEMENT))
        return required + self.public + tuple(extra)

    def to_json(self):
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["inputs"] = [_record(port) for port in self.inputs]
        data["parts"] = [_record(part) for part in self.parts]
        data["jacobians"] = [[_record(source) for source in choice] for choice in self.jacobians]
        data["overloads"] = [_record(overload) for overload in self.overloads]
        data["shape"] = list(self.shape)
        return data

    @classmethod
    def from_json(cls, data):
        data = dict(data)
        data["inputs"] = tuple(Port(**row) for row in data["inputs"])
        data["parts"] = tuple(Part(**dict(row, shape=tuple(row["shape"]))) for row in data["parts"])
        data["jacobians"] = tuple(tuple(JacobianSource(**row) for row in choice) for choice in data["jacobians"])
        data["overloads"] = tuple(Overload(**row) for row in data["overloads"])
        data["shape"] = tuple(data["shape"])
        return cls(**data)


def public_keywords(inputs, overloads):
    """A public function's inputs after the states, with their defaults, in order: the settings,
    the overloads' keywords, the parameters (None: nominal). `inputs`: anything with a name,
    role and default (Ports, or the function table's Input rows). Every front end (module,
    reference, JAX) takes the states, then these; a function of a frame takes the frame
    between (frame_function)."""
    keywords = [(x.name, x.default) for x in inputs if x.role in (SETTING, DAMPING)]
    keywords += [(overload.keyword, overload.default) for overload in overloads]
    keywords += [(x.name, None) for x in inputs if x.role == PARAMETERS]
    return tuple(keywords)


def signature_text(name, parameters):
    """`name`(...) as Python writes a signature, for a C function's __text_signature__."""
    return f"{name}(" + ", ".join(n if d is REQUIRED or (n, d) == KEYWORD_ONLY else f"{n}={d!r}"
                                  for n, d in parameters) + ")"


def _record(row):
    data = {f.name: getattr(row, f.name) for f in fields(row)}
    if "shape" in data:
        data["shape"] = list(data["shape"])
    return data


def read(rows):
    """model.json's "functions" as descriptions, by name (its other keys, the build's
    measurements, ignored)."""
    names = {f.name for f in fields(Description)}
    return {name: Description.from_json({k: v for k, v in row.items() if k in names}) for name, row in rows.items()}
