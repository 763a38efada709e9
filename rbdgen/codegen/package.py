"""What makes a module a Python package: its binding's files (the same for every module),
model.json (every fact the binding reads), and cffi's extension, compiled and linked with the
functions' objects."""

import contextlib
import io
import os
import shutil
import subprocess
import sys

from ..algorithms.frames import REFERENCE_FRAMES, placement_entries
from ..errors import BuildError
from ..model import conventions, physical
from ..model.parameters import parameters_of
from ..runtime import reference
from ..table import description
from ..table.frames import POINTS
from ..version import __version__
from . import cache
from .compiler import c_compiler, openmp_flags

BINDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bindings")


def copy_binding(work):
    """The Python binding: one fixed file that reads model.json, and its siblings; points and
    contacts run on NumPy, in the very file the reference uses."""
    shutil.copyfile(os.path.join(BINDINGS, "runtime.py"), os.path.join(work, "__init__.py"))
    others = ("arguments", "call_time", "casadi", "contact", "cuda", "device", "function", "jax", "jax_ffi", "pickling",
              "torch", "torch_overloads")
    for name in others:   # the binding's other files, as _<name>.py
        shutil.copyfile(os.path.join(BINDINGS, name + ".py"), os.path.join(work, f"_{name}.py"))
    shutil.copyfile(description.__file__, os.path.join(work, "_description.py"))
    shutil.copyfile(conventions.__file__, os.path.join(work, "_conventions.py"))
    shutil.copyfile(physical.__file__, os.path.join(work, "_physical.py"))
    # robot.jax's XLA FFI handler, compiled on first use
    shutil.copyfile(os.path.join(BINDINGS, "jax_ffi.c"), os.path.join(work, "_jax_ffi.c"))


def metadata(build, extension, datas):
    """model.json: every fact of a build (a stages.Build) and of its functions (`datas`) that the
    module's binding, reopen and export read."""
    model, frames, contacts = build.model, build.frames, build.contacts
    return {
        "name": model.name, "module": build.module, "extension": extension, "rbdgen_version": __version__,
        "build_key": build.key, "machine": cache.machine_digest(build.flags), "options": build.asked,
        "source": build.source or {},
        "nq": model.nq, "nv": model.nv, "gravity": [float(g) for g in model.gravity],
        "total_mass": model.total_mass,
        # the inertial parameters pi the regressor multiplies, and (with base_regressor) beta = K pi
        "parameters": reference.parameters(model).tolist(),
        **({"base_parameters": reference.base_parameters(model).to_json()}
           if any(d["name"] == "base_regressor" for d in datas) else {}),
        # the model parameters every function takes last (Model.parameters): their names, nominal
        # values, and what check_params reads (rbdgen.model.physical)
        "params": _parameters_json(model),
        "joints": [{"name": j.name, "type": j.type, "idx_q": j.idx_q, "idx_v": j.idx_v, "nq": j.nq, "nv": j.nv,
                    **({"mimic": {"master": j.model.master, "multiplier": j.model.multiplier,
                                  "offset": j.model.offset}} if j.type == "mimic" else {})}
                   for j in model.joints],
        # each frame's body (-1: the world) and placement on it (body -> frame: E row-major, then r)
        "frames": {f.name: {"body": f.body, "placement": [float(x) for x in placement_entries(f.placement)]}
                   for f in frames},
        "contacts": [{"spec": c.describe(), "frame": c.frame, "kind": c.kind, "rows": c.rows} for c in contacts],
        # the loop closures of a closed chain (Model.loops): two frames held together
        "loops": [{"name": loop.name, "a": loop.a, "b": loop.b, "kind": loop.kind} for loop in model.loops],
        # every fact the Python binding needs (rbdgen/bindings/runtime.py reads them)
        "references": list(REFERENCE_FRAMES),
        "points": {name: point.to_json() for name, point in POINTS.items()},
        # each function's description (rbdgen.table.description), and what its build measured
        "functions": {d["name"]: {**d["description"].to_json(), "operations": d["operations"], "sincos": d["sincos"],
                                  "bodies": d["bodies"], **({"accuracy": d["accuracy"]} if d.get("accuracy") else {})}
                      for d in datas},
    }


def _parameters_json(model):
    params = parameters_of(model)
    return {"specs": list(model.parameters), "names": list(params.names), "nominal": list(params.nominal),
            "bodies": [[label, indices] for label, indices in params.bodies()], "nonnegative": params.nonnegative()}


def emit_cffi_source(work, extension, header, entry_points, declarations):
    """Write the C of the cffi extension, <extension>.c: the C functions' Python wrappers
    (cffi's out-of-line API mode) and the function that makes the direct entry points, which
    calls.c defines. Compiled and linked here, with the function objects, rather than through
    setuptools, so that it compiles beside them. declarations: the C prototypes (the
    signatures' own, which the header prints too)."""
    from cffi import FFI
    made_by_calls = f"void *{entry_points}(void *fallbacks);"
    ffi = FFI()
    ffi.cdef("\n".join([made_by_calls] + [d + ";" for d in declarations]))
    ffi.set_source(extension, f'#include "{header}"\n{made_by_calls}\n')
    with contextlib.redirect_stdout(io.StringIO()):   # cffi says "generating <path>"
        ffi.emit_c_code(os.path.join(work, f"{extension}.c"))


# The entry points' C (calls.c) beside the functions' flags: rbdgen_physical.c's test of the
# parameters must round as rbdgen/model/physical.py does, in a group of states and alone. Fused
# multiply-adds (gcc's default, clang's within an expression) accepted a body at the tolerance
# that physical.py refuses: in groups of 8 states (gcc), or always (clang).
ENTRY_POINT_FLAGS = ("-ffp-contract=off",)


def python_extension_flags(*optimization):
    import numpy
    import sysconfig
    return [*optimization, "-fPIC", "-D_CFFI_NO_LIMITED_API", "-I", sysconfig.get_paths()["include"],
            "-I", numpy.get_include()]


def link_extension(work, extension, objects):
    """Link the objects into the module's Python extension; BuildError with the linker's output."""
    import sysconfig
    cc = c_compiler()
    shared = ["-bundle", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
    target = os.path.join(work, extension + sysconfig.get_config_var("EXT_SUFFIX"))
    cmd = [cc, *shared, *objects, "-o", target, *openmp_flags(), "-lm"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"linking the extension {extension} failed: {' '.join(cmd)}", command=cmd,
                         output=result.stdout + result.stderr)
    os.remove(os.path.join(work, f"{extension}.c"))
