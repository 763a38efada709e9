"""The glue of a module around its functions' C, through Jinja2 templates (data only): the
batch loops (batch.c), what the module says about itself (info.c), the Python entry points
(calls.c) and CasADi's external interface (casadi.c)."""

from ..algorithms.frames import REFERENCE_FRAMES
from ..bindings.contact import PIVOT_CLEAR
from ..table.description import (COPY, DAMPING, INVERSE, MODULE_KEYWORDS, PIVOTS, PLACEMENT, REQUIRED, ROTATION,
                                 signature_text)
from ..table.frames import POINT_REFERENCE, POINTS
from ..version import __version__
from .cprinter import c_string
from .render import kernels_header_name, template


def render_batch(module, header, functions):
    return template("batch.c.j2").render(version=__version__, module=module, kernels_header=kernels_header_name(module),
                                         functions=functions)


def render_info(module, header, info, frames, functions):
    """build_info, the frame table and every function's metadata (its rbdgen_function_t).
    frames: [(name, body, placement entries)]; functions: their signatures."""
    assert all(c.isalnum() or c == " " for c in info)  # hex key and counts: nothing to escape
    return template("info.c.j2").render(
        version=__version__, module=module, header=header, info=info, functions=functions,
        frames=[{"literal": c_string(name), "body": int(body), "placement": [repr(float(x)) for x in placement]}
                for name, body, placement in frames])


def params_problem_declaration(module):
    return f"long rbdgen_{module}_params_problem(const double *params, long n, long first, int strict)"


def render_calls(module, header, functions, nq, nv, frames, *, nominal=(), bodies=(), nonnegative=()):
    """The direct entry points: every function of states (`direct`), every frame quantity by
    frame name and reference (frame_kinds), the points of frames (point_kinds) and the functions
    of the declared contacts. frames: [(name, body, placement)] in the module's order; nominal:
    the model parameters' values, which a function of states takes when params is not given;
    bodies and nonnegative: what rbdgen_params_problem checks (model.json's params).
    With parameters, the calls of frames, points and declared contacts are the Python
    functions' (which pass params on)."""
    direct = [fn for fn in functions if fn["direct"]]
    declared = [fn for fn in functions if fn["declared"] and not nominal]
    kinds, points = (frame_kinds(functions), point_kinds(functions)) if not nominal else ([], [])
    return template("calls.c.j2").render(
        max_inputs=max(len(fn["inputs"]) for fn in functions), pivot_clear=repr(PIVOT_CLEAR),
        max_parts=max([1] + [len(fn["entry_parts"]) for fn in direct + declared] + [len(k["parts"]) for k in kinds]),
        version=__version__, module=module, header=header, functions=direct, declared=declared, nq=nq, nv=nv,
        nominal=[repr(float(x)) for x in nominal], param_bodies=[list(b) for b in bodies],
        param_nonnegative=list(nonnegative),
        references=REFERENCE_FRAMES, frames=[{"body": body, "placement": [repr(float(x)) for x in placement]} for _, body, placement in frames]
        if kinds else [], frame_kinds=kinds, point_kinds=points)


def frame_kinds(functions):
    """The public frame functions that get a direct entry point, from the per-body functions
    built: name, state inputs, the C function in each reference (None where not built), the
    default reference, and the output (parts)."""
    kinds = {}
    for fn in functions:
        if not fn["per_body"]:
            continue
        reference = fn["reference"]
        kind = kinds.setdefault(fn["family"], {
            "name": fn["family"], "inputs": [a for a in fn["inputs"] if a.role != PLACEMENT],
            "cnames": [None] * len(REFERENCE_FRAMES),
            "takes_reference": reference is not None, "out_size": fn["out_size"],
            "text_signature": signature_text(fn["family"], [(x.name, REQUIRED) for x in fn["description"].states]
                                             + [("frame", REQUIRED)]
                                             + ([("reference", fn["default_reference"])] if reference else [])
                                             + list(MODULE_KEYWORDS)),
            "default": REFERENCE_FRAMES.index(fn["default_reference"] or "local"), "parts": fn["entry_parts"]})
        kind["cnames"][REFERENCE_FRAMES.index(reference) if reference else 0] = fn["cname"]
    return list(kinds.values())


def point_kinds(functions):
    """The point functions whose frame function was built: name, its C function, the state
    inputs the public function takes, and the columns of the result."""
    by_name = {fn["name"]: fn for fn in functions}
    kinds = []
    for name, point in POINTS.items():
        fn = by_name.get(f"{point.family}_{POINT_REFERENCE}")
        if fn is None:
            continue
        kinds.append({"name": name, "cname": fn["cname"], "inputs": [a for a in fn["inputs"] if a.name in point.states],
                      "zero_acceleration": point.at_rest, "cols": fn["shape"][1] if point.matrix else 0,
                      "text_signature": signature_text(name, [(x, REQUIRED) for x in (*point.states, "frame", "point")]
                                                       + list(MODULE_KEYWORDS))})
    return kinds




def casadi_symbol(module, name, frame=None):
    """The name of a function in CasADi (and of its symbol in the library); a function of a
    frame has one per frame, by the frame's index in the module's list."""
    return f"{module}_{name}" if frame is None else f"{module}_{name}_f{frame}"


def render_casadi(module, header, api, functions, tangent_is_q, frames):
    """CasADi's external interface of every function: of states, of the declared contacts, and
    of each frame served (frames: [(name, body, placement entries)] in the module's order),
    with Jacobians where the table's `jacobians` finds the derivatives built (only when q is its own
    tangent space: with quaternions, d/dq of the derivative functions is not the derivative in
    q's coordinates). A module with parameters differentiates in params too, from the parameter
    derivatives (rnea_parameter_derivatives, aba_parameter_derivatives): without them built, a
    function whose choice names them has no Jacobian rather than a zero block."""
    by_name = {fn["name"]: fn for fn in functions}
    rows, symbols = [], []
    for fn in functions:
        d = fn["description"]
        # the damping held at zero (rigid: no derivative is generated); the pivots left out below
        names = [x.name for x in d.inputs if x.role not in (PLACEMENT, DAMPING)]
        inputs = [{"name": x.name, "sparsity": [x.size, 1, 1]} for x in d.inputs if x.name in names]
        outputs = [{"name": p.name, "start": p.offset, "sparsity": _matrix(p.shape)} for p in d.entry_parts
                   if p.role != PIVOTS]
        # a choice's blocks count for the inputs this function takes (params: with model parameters);
        # CasADi's Jacobian is whole, so a choice without a block for one of them (crba, minv and the
        # frame functions in params) gives none rather than a zero block
        outputs_of = lambda c: {b.output for b in c}
        choice = next((c for c in d.jacobians if tangent_is_q and all(
            block.function in by_name for block in c if block.input in names) and all(
            any(b.output == o and b.input == n for b in c) for o in outputs_of(c) for n in names)), None)
        blocks = {} if choice is None else {(b.output, b.input): b for b in choice}
        sources = []

        def source_index(source):
            if source not in [s["name"] for s in sources]:
                sources.append(_casadi_call(by_name[source], names))
            return [s["name"] for s in sources].index(source)

        block_source = [[-1] * len(inputs) for _ in outputs]
        block_start = [[0] * len(inputs) for _ in outputs]
        block_kind = [[0] * len(inputs) for _ in outputs]
        value_source = 0
        for o, output in enumerate(outputs):
            for i, n in enumerate(names):
                block = blocks.get((None if len(outputs) == 1 else output["name"], n))
                if block is None:
                    continue
                block_source[o][i] = source_index(block.function)
                source = by_name[block.function]["description"]
                first = source.part(block.part).offset if block.part else 0
                block_start[o][i] = first + block.row * inputs[i]["sparsity"][0]
                block_kind[o][i] = {COPY: 0, ROTATION: 1, INVERSE: 2}[block.transform]
                if block.transform in (ROTATION, INVERSE):   # (read with the function's own value)
                    value_source = source_index(fn["name"])
        size = lambda sparsity: sparsity[0] * sparsity[1]
        jac_out = [(o, x) for o in outputs for x in inputs]
        zeros = max([x["sparsity"][0] for x in inputs] + [x.size for x in d.inputs])
        row = len(rows)
        rows.append({
            "call": _casadi_call(fn, names), "inputs": inputs, "outputs": outputs, "sources": sources,
            "block_source": block_source, "block_start": block_start, "block_kind": block_kind,
            "value_source": value_source,
            "jac_in_names": names + ["out_" + o["name"] for o in outputs],
            "jac_out_names": [f"jac_{o['name']}_{x['name']}" for o, x in jac_out],
            "jac_sparsity": [[size(o["sparsity"]), size(x["sparsity"]), 1] for o, x in jac_out],
            "zeros": zeros, "work": max(fn["out_size"], sum(by_name[s["name"]]["out_size"] for s in sources)) + zeros})
        served = [k for k, (_, body, _) in enumerate(frames) if body in (fn["bodies"] or ())] if fn["per_body"] \
            else [None]
        symbols += [{"symbol": casadi_symbol(module, fn["name"], k), "row": row, "frame": k, "jacobian": bool(sources),
                     "first": casadi_symbol(module, fn["name"], served[0]) if k != served[0] else None}
                    for k in served]
    return template("casadi.c.j2").render(
        version=__version__, header=header, api=api, functions=rows, symbols=symbols,
        frames=[{"body": int(body), "placement": [repr(float(x)) for x in placement]} for _, body, placement in frames],
        max_in=max([1] + [len(r["inputs"]) for r in rows]), max_out=max([1] + [len(r["outputs"]) for r in rows]),
        max_sources=max([1] + [len(r["sources"]) for r in rows]),
        max_call_in=max(len(fn["inputs"]) for fn in functions))


def _casadi_call(fn, names):
    """A C function of the module as the CasADi table calls it: which of the CasADi function's
    inputs (`names`) it reads, in its own order; the placement is the frame's, held inputs zero."""
    where = lambda x: "RBDGEN_CASADI_PLACEMENT" if x.role == PLACEMENT else \
        str(names.index(x.name)) if x.name in names else "RBDGEN_CASADI_ZEROS"
    return {"name": fn["name"], "cname": fn["cname"], "inputs": [where(x) for x in fn["inputs"]]}


def _matrix(shape):
    """CasADi's dense sparsity of an output of this shape: a vector is a column, a scalar 1 x 1."""
    shape = list(shape) or [1]
    columns = 1
    for d in shape[1:]:   # a 3-D output (christoffel) is its first index by the other two
        columns *= d
    return [shape[0], columns, 1]

