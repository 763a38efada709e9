"""Straight-line programs -> C source and header, through Jinja2 templates (data only)."""

import jinja2

from .. import __version__
from .cprinter import SlotPrinter, slot_map
from .recorder import SinCos

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("rbdgen", "templates"),
    undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    keep_trailing_newline=True, autoescape=False)


def template(name):
    return _ENV.get_template(name)


def signature(module, spec, model):
    """What the header and the wrapper need about a function, known before generating it."""
    from .functions import INPUT_SIZES
    shape = tuple(spec.output(model))
    size = 1
    for d in shape:
        size *= d
    return {
        "name": spec.name,
        "cname": f"rbdgen_{module}_{spec.name}",
        "doc": spec.doc.replace("*/", "* /"),
        "inputs": [{"name": name, "size": INPUT_SIZES[name](model)} for name in spec.inputs],
        "shape": list(shape),
        "shape_text": repr(shape),
        "out_size": size,
        "scalar": spec.scalar,
    }


def function_data(module, spec, model, program):
    """Everything the templates need about one generated function, as plain data."""
    printer = SlotPrinter(slot_map(program))
    statements = []
    for st in program.statements:
        if isinstance(st, SinCos):
            statements.append({"kind": "sincos", "sin": st.sin.name, "cos": st.cos.name,
                               "arg": printer.expression(st.arg)})
        else:
            statements.append({"kind": "let", "target": st.target.name, "expr": printer.expression(st.expr)})
    outputs = [(k, printer.expression(e)) for k, e in enumerate(program.outputs) if e != 0]
    return dict(signature(module, spec, model), statements=statements, outputs=outputs,
                zero_outputs=len(program.outputs) - len(outputs),
                operations=program.counts["operations"], sincos=program.counts["sincos"])


def render_header(module, functions):
    return template("module.h.j2").render(version=__version__, module=module, functions=functions)


def render_function(header, fn):
    return template("function.c.j2").render(version=__version__, header=header, fn=fn)


def render_batch(module, header, functions):
    return template("batch.c.j2").render(version=__version__, module=module, header=header, functions=functions)


def render_wrapper(module, functions):
    names = {fn["name"] for fn in functions}
    return template("wrapper.py.j2").render(version=__version__, module=module, functions=functions, names=names)
