"""Straight-line programs -> C source and header, through Jinja2 templates (data only)."""

import jinja2

from ..version import __version__
from .cprinter import LanesPrinter, SlotPrinter, c_comment_text, c_string, slot_map
from .costs import flops
from .expr import Expr, free_symbols
from ..algorithms.solves import runs
from ..model.parameters import parameters_of
from ..table.description import MODULE_KEYWORDS, signature_text
from .recorder import SinCos

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("rbdgen", "templates"),
    undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    keep_trailing_newline=True, autoescape=False)
_ENV.filters["c_string"] = c_string   # any text as a C string literal


def template(name):
    return _ENV.get_template(name)


def signature(description):
    """What the header, the glue and the function's C need about a function (a
    table.description.Description), known before generating it."""
    d = description
    return {
        "description": d, "name": d.name, "cname": d.cname, "inputs": d.inputs, "parts": d.parts,
        "entry_parts": d.entry_parts, "pivots": d.pivots is not None,
        "doc": d.public_doc.replace("*/", "* /"),
        # the module's public function (calls.c's entry point documents its signature)
        "text_signature": signature_text(d.name, d.parameters(MODULE_KEYWORDS)),
        "declarations": declarations(d.cname, d.per_body, d.inputs),
        "per_body": d.per_body, "declared": d.declared, "solves": d.solves, "scalar": d.scalar,
        "family": d.family, "reference": d.reference, "default_reference": d.default_reference,
        # the generic C entry point (calls.c) takes it: vectors of states and numbers (dt) in,
        # one array, a float or a tuple of arrays (the parts) out
        "direct": not (d.per_body or d.declared),
        "shape": d.shape, "out_size": d.size,
    }


# The uniform entry of every generated function, and its batch form (rbdgen's one calling
# convention: the hosts call any function through these, whatever its inputs; module.h.j2).
UNIFORM_ENTRY = "(const double *const *in, double *const *out, long body)"
UNIFORM_BATCH = "(long n, int threads, const double *const *in, double *const *out, long body)"


def declarations(cname, per_body, inputs):
    """The C prototypes of a generated function: named and typed (for C users), its _batch
    form, and its uniform entry _eval and _eval_batch. The public header prints them and
    cffi's declarations are these, so the two cannot differ. In the _batch form an input that
    may be one for every state (`broadcast`: the model parameters) is followed by a flag,
    `<name>_shared` (1: one for the whole batch, 0: one per state)."""
    body = "long body, " if per_body else ""
    named = "".join(f"const double *{x.name}, " for x in inputs) + "double *out"
    batched = "".join(f"const double *{x.name}, " + (f"int {x.name}_shared, " if x.broadcast else "")
                      for x in inputs) + "double *out"
    return [f"void {cname}({body}{named})", f"void {cname}_batch(long n, int threads, {body}{batched})",
            f"void {cname}_eval{UNIFORM_ENTRY}", f"void {cname}_eval_batch{UNIFORM_BATCH}"]


def build_info_declaration(module):
    return f"const char *rbdgen_{module}_build_info(void)"


# gcc's register allocation grows much faster than linearly with the length of a function
# (Talos' Coriolis matrix, 4 400 statements in one function: over two minutes at -O1). Long
# programs are therefore cut into parts of at most this many statements, each its own
# non-inlined function; values that cross a part boundary go through a thread-local array.
PART_STATEMENTS = 600


def function_data(description, programs, part_statements=PART_STATEMENTS):
    """Everything the templates need about one generated function, as plain data.

    `programs`: [(bodies, program)]: one program (bodies None), or, for a function of a frame
    (`per_body`), the programs of the bodies that carry frames (programs.frame_programs: one
    body's, or one that serves several down a chain); the C function then takes the body and
    dispatches to its program. The operation count is the costliest body's.
    """
    kernels = [dict(kernel_data(program, part_statements) if bodies is None or len(bodies) == 1
                    else chain_kernel_data(program, bodies), bodies=list(bodies or ()), slot=k)
               for k, (bodies, program) in enumerate(programs)]
    return dict(signature(description), kernels=kernels,
                operations=max(k["most"] for k in kernels), sincos=max(k["sincos"] for k in kernels),
                workspace=max(k["workspace"] for k in kernels),
                bodies=[body for bodies, _ in programs for body in bodies] if description.per_body else None)


def _chunked(items, size):
    return [items[k:k + size] for k in range(0, len(items), size)]


def kernel_data(program, part_statements):
    """The C of one straight-line program: its parts, workspace and output stores."""
    inputs = slot_map(program)
    batched, statements = _sincos_first(program.statements, inputs)
    parts = _chunked(statements, part_statements) or [[]]
    defined_in = {}
    for index, part in enumerate(parts):
        for st in part:
            for sym in _targets(st):
                defined_in[sym] = index
    # entries the solve after the program overwrites (an identity block) need no zeros first
    computed, copies, zeros = _stores(program.outputs, program.solve.overwritten() if program.solve else ())
    # An output that is a value of the program is stored by the part that computes it, from a
    # register, rather than stored to the workspace and loaded back by an output function
    # (docs/performance.md, outputs stored by the part that computes them); an entry equal to an
    # earlier one is still copied after the barrier.
    direct = {}   # value -> the output entry the part stores it to
    if len(parts) > 1:
        direct = {program.outputs[k]: k for k in computed
                  if isinstance(program.outputs[k], Expr) and program.outputs[k] in defined_in}
    left = [k for k in computed if program.outputs[k] not in direct]   # to output functions
    # A value is kept in the workspace when a later part or the other outputs read it.
    crossing = set()
    if len(parts) > 1:
        for index, part in enumerate(parts):
            for st in part:
                for sym in _reads(st):
                    if defined_in.get(sym, index) != index:
                        crossing.add(sym)
        for k in left:
            crossing |= {sym for sym in free_symbols(program.outputs[k]) if sym in defined_in}
    slot = {sym: k for k, sym in enumerate(sorted(crossing, key=lambda s: (defined_in[s], s.name)))}
    # the program on vectors of states too, where its expressions have a vector form
    lanes = LanesPrinter.prints([st.expr for st in statements if not isinstance(st, SinCos)] + list(program.outputs))
    dialects = (SlotPrinter, LanesPrinter) if lanes else (SlotPrinter,)
    rendered = []
    for index, part in enumerate(parts):
        imported = {sym: f"w[{slot[sym]}]" for sym in crossing if defined_in[sym] < index}
        rendered.append(_lines(part, [dialect({**inputs, **imported}) for dialect in dialects],
                               batched if index == 0 else [], slot, direct))
    final = [dialect({**inputs, **{sym: f"w[{k}]" for sym, k in slot.items()}}) for dialect in dialects]
    # the arguments a C function of a part does not read, named so that -Wextra stays quiet
    unused = [_unread(program, part, program.outputs if len(parts) == 1 else ()) for part in parts]
    if len(parts) > 1:
        uses_w = [any(sym in crossing for st in part for sym in (*_targets(st), *_reads(st))) for part in parts]
        stores_out = [any(sym in direct for st in part for sym in _targets(st)) for part in parts]
        unused = [u + ([] if w else ["w"]) + ([] if o else ["out"]) for u, w, o in zip(unused, uses_w, stores_out)]
    outputs, *lanes_outputs = ([(k, printer.output(program.outputs[k])) for k in left] for printer in final)
    lanes_outputs = lanes_outputs[0] if lanes else []
    # A program in parts stores its outputs from functions of at most PART_STATEMENTS stores
    # each, as it computes them: gcc's time on one function of 34 000 stores (dm_control dog's
    # regressor) grows faster than linearly.
    chunked = len(parts) > 1
    chunks = lambda stores: _chunked(stores, part_statements) if chunked else []
    output_chunks, lanes_output_chunks, copy_chunks = chunks(outputs), chunks(lanes_outputs), chunks(copies)
    return dict(chain=None, parts=rendered, lanes=lanes, solve=program.solve.c_data() if program.solve else None, unused=unused,
                # one entry at least: C has no arrays of none (parts may share nothing, each storing its outputs)
                workspace=max(1, len(slot)), outputs=outputs, copies=copies, lanes_outputs=lanes_outputs,
                output_chunks=output_chunks, lanes_output_chunks=lanes_output_chunks, copy_chunks=copy_chunks, zero_outputs=len(zeros),
                zero_runs=runs(zeros), operations=program.counts["operations"],
                most=program.counts["operations"], sincos=program.counts["sincos"])


def chain_kernel_data(program, bodies):
    """The C of a program that serves several bodies down a chain (programs.frame_programs):
    one function of the body. Each body in turn gets the statements that every later body
    needs too (`shared`: what its outputs need from the chain above it), then, when it is the
    body asked for, the others that it needs (`private`; a statement needed by bodies that
    are not all those from one to the last, such as a product with the frame's placement that
    CSE found in two bodies' outputs, is repeated in each of their blocks), its outputs and a
    return: a body runs the statements its own program would. Its operations: the whole
    program's, and (`most`) the costliest body's."""
    count = len(bodies)
    size = len(program.outputs) // count
    ends = [program.outputs[k * size:(k + 1) * size] for k in range(count)]
    defining = {t: st for st in program.statements for t in _targets(st)}
    needed = {}   # statement -> the bodies that need it
    for k, exprs in enumerate(ends):
        stack = [sym for e in exprs for sym in free_symbols(e)]
        while stack:
            st = defining.get(stack.pop())
            if st is not None and k not in needed.setdefault(id(st), set()):
                needed[id(st)].add(k)
                stack.extend(_reads(st))
    shared_from = {}   # statement -> the first body from which every body to the last needs it
    for key, bodies_needing in needed.items():
        start = count
        while start - 1 in bodies_needing:
            start -= 1
        shared_from[key] = start
    inputs = slot_map(program)
    # the sin/cos of the chain's joint angles, all at once first (one vector loop, as in the
    # last body's own program; the first bodies compute a few more lanes of it)
    batched, _ = _sincos_first(program.statements, inputs)
    for st in batched:
        needed[id(st)], shared_from[id(st)] = set(range(count)), 0
    printer = SlotPrinter(inputs)   # (a chain's program runs one state at a time)
    groups, done, done_sincos, most = [], 0, 0, 0
    for k, (body, exprs) in enumerate(zip(bodies, ends)):
        lines, ops, sincos = {}, {}, {}
        for kind, statements in (
                ("shared", [st for st in program.statements if shared_from.get(id(st)) == k]),
                ("private", [st for st in program.statements if k in needed.get(id(st), ()) and shared_from[id(st)] > k])):
            batched, statements = _sincos_first(statements, inputs)
            lines[kind] = _lines(statements, [printer], batched, {})
            ops[kind] = sum(flops(st.expr) for st in statements if not isinstance(st, SinCos))
            sincos[kind] = sum(isinstance(st, SinCos) for st in statements)
        computed, copies, zeros = _stores(exprs)
        outputs = [(k, printer.output(exprs[k])) for k in computed]
        operations = done + ops["shared"] + ops["private"] + sum(flops(e) for e in exprs)
        most = max(most, operations)
        done += ops["shared"]
        done_sincos += sincos["shared"]
        groups.append(dict(body=body, shared=lines["shared"], private=lines["private"], outputs=outputs,
                           copies=copies, output_chunks=[], copy_chunks=[], zero_outputs=len(zeros),
                           zero_runs=runs(zeros), operations=operations, sincos=done_sincos + sincos["private"]))
    return dict(chain=groups, parts=[], lanes=False, solve=None, workspace=0,
                unused=[_unread(program, program.statements, program.outputs)],
                operations=program.counts["operations"], most=most,
                sincos=max(g["sincos"] for g in groups))


def _unread(program, statements, outputs):
    """The program's inputs that `statements` and `outputs` do not read (a C function's unused
    arguments, named so that -Wextra stays quiet)."""
    read = {sym for st in statements for sym in _reads(st)} | {sym for e in outputs for sym in free_symbols(e)}
    return [name for name, syms in program.inputs.items() if not read.intersection(syms)]


def _sincos_first(statements, inputs):
    """(the sin/cos of inputs alone, all the statements with those first): the sin/cos of the
    joint angles are computed together by one vector loop, when there are enough of them."""
    batched = [st for st in statements if isinstance(st, SinCos) and free_symbols(st.arg) <= inputs.keys()]
    batched = batched if len(batched) >= SINCOS_BATCH_MIN else []
    first = {id(st) for st in batched}
    return batched, batched + [st for st in statements if id(st) not in first]


def _lines(statements, printers, batched, slot, direct=None):
    """The template's lines of `statements` (the `batched` sin/cos first, together), printed in
    each dialect of `printers` (scalar C; then, for a program that runs on vectors of states,
    lanes C); a value in `slot` is stored to the workspace too, one in `direct` to its output
    entries."""
    direct = direct or {}
    scalar, lanes = printers[0], printers[-1] if len(printers) > 1 else None
    outputs = lambda targets: [(direct[t], t.name) for t in targets if t in direct]
    lines = []
    if batched:
        targets = [t for st in batched for t in (st.sin, st.cos)]
        lines.append({"kind": "sincos_batch", "args": [scalar.expression(st.arg) for st in batched],
                      "lanes_args": [lanes.expression(st.arg) for st in batched] if lanes else None,
                      "pairs": [(st.sin.name, st.cos.name) for st in batched],
                      "store": [(slot[t], t.name) for t in targets if t in slot], "outputs": outputs(targets)})
    for st in statements[len(batched):]:
        if isinstance(st, SinCos):
            lines.append({"kind": "sincos", "sin": st.sin.name, "cos": st.cos.name,
                          "arg": scalar.expression(st.arg), "lanes_arg": lanes.expression(st.arg) if lanes else None,
                          "store": [(slot[t], t.name) for t in (st.sin, st.cos) if t in slot],
                          "outputs": outputs((st.sin, st.cos))})
        else:
            lines.append({"kind": "let", "target": st.target.name, "expr": scalar.statement(st.expr),
                          "lanes": lanes.statement(st.expr) if lanes else None,
                          "store": [(slot[st.target], st.target.name)] if st.target in slot else [],
                          "outputs": outputs((st.target,))})
    return lines


def _stores(exprs, solved=()):
    """An output's stores: the index of each entry to compute, (index, earlier index) of each
    entry equal to an earlier one, and the structurally zero entries but those `solved` (a solve
    after the program overwrites them). An equal entry (M[j, i] = M[i, j]) is copied, not
    computed again: one value, so symmetry is exact whatever the compiler does with each copy.
    The zeros are cleared run by run (solves.runs: a memset of a constant size, which gcc turns
    into a few vector stores) rather than by clearing the whole output and then writing it,
    which measured slower on Talos' crba; one by one they were no faster than the whole."""
    computed, copies, first = [], [], {}
    for k, e in enumerate(exprs):
        if e == 0:
            continue
        if e in first:
            copies.append((k, first[e]))
        else:
            first[e] = k
            computed.append(k)
    zeros = sorted(set(k for k, e in enumerate(exprs) if e == 0) - set(solved))
    return computed, copies, zeros


# From this many sin/cos pairs of joint angles on, they are computed together by one loop that
# the compiler vectorizes (rbdgen_sincos_n), faster than one pair at a time.
SINCOS_BATCH_MIN = 2


def _targets(st):
    return (st.sin, st.cos) if isinstance(st, SinCos) else (st.target,)


def _reads(st):
    return free_symbols(st.arg if isinstance(st, SinCos) else st.expr)


def render_header(module, functions, model, frames, contacts):
    """The public header: conventions, constants, the joints, frames and contacts, and every
    function's prototype with its inputs, output layout and cost (when `functions` are the
    generated ones rather than their signatures)."""
    params = parameters_of(model)
    return template("module.h.j2").render(
        version=__version__, module=module, robot=c_comment_text(model.name), nq=model.nq, nv=model.nv,
        nbodies=model.nbodies, gravity=[repr(float(g)) for g in model.gravity],
        joints=[{"name": c_comment_text(j.name), "type": j.type, "idx_q": j.idx_q, "idx_v": j.idx_v}
                for j in model.joints],
        frames=[{"name": c_comment_text(f.name), "body": f.body} for f in frames],
        contacts=[{"spec": c_comment_text(c.describe()), "rows": c.rows} for c in contacts],
        contact_rows=sum(c.rows for c in contacts), functions=functions,
        params=[{"name": c_comment_text(n), "nominal": repr(float(x))} for n, x in zip(params.names, params.nominal)],
        param_specs=c_comment_text(",".join(model.parameters)), build_info=build_info_declaration(module))


def kernels_header_name(module):
    return f"rbdgen_{module}_kernels.h"


def render_kernels_header(module, header):
    return template("kernels.h.j2").render(version=__version__, module=module, header=header)


def render_function(module, fn):
    return template("function.c.j2").render(version=__version__, kernels_header=kernels_header_name(module), fn=fn,
                                            device="")


def cuda_header_name(module):
    return f"rbdgen_{module}_cuda.h"


def render_cuda_header(module):
    return template("cuda.h.j2").render(version=__version__, module=module)


# NVVM's optimizer takes time growing faster than linearly with the loads and stores of one
# function: a program in parts stores the outputs left to after its parts from functions of at
# most this many stores in the CUDA dialect (docs/performance.md, NVVM and one function's stores).
CUDA_OUTPUT_STORES = 100


def render_cuda_function(module, fn):
    """The CUDA dialect of a function (its template data, `fn`, as the C dialect has it): a
    device function of one state, the same statements in the same parts, and a batch kernel."""
    kernels = [dict(k, output_chunks=_chunked(k["outputs"], CUDA_OUTPUT_STORES)) if k.get("output_chunks") else k
               for k in fn["kernels"]]
    return template("function.cu.j2").render(version=__version__, cuda_header=cuda_header_name(module),
                                             fn=dict(fn, kernels=kernels), device="RBDGEN_DEVICE ")
