"""URDF -> symbolic run -> C -> cffi extension -> generated/<robot>/, verified and cached.

A module is built and verified in a temporary folder and installed under a lock by one
atomic rename; when it may be reused instead is decided in codegen/cache.py. The C files,
the functions' and the glue's, are compiled in parallel by the C compiler; cffi (API mode, out
of line) only writes the C of its small wrapper, which compiles beside them, and the objects
are linked into the extension directly.
"""

import functools
import hashlib
import json
import os
import shutil
import sys
import time

import numpy as np

from ..version import __version__
from ..algorithms import constrained
from ..algorithms.frames import placement_entries
from ..errors import BuildError, CodegenError, ModelError, did_you_mean
from ..model.parameters import parameters_of, with_parameters
from ..model.sources import load_model, source_kind
from ..runtime import reference
from . import cache
from .compiler import GLUE_FLAGS, compile_flags, openmp_flags
from ..table import functions as fn_table
from .cprinter import sanitize_identifier
from .compilation import generate_and_compile
from .objects import BuildCache
from .options import BuildOptions
from .package import (BINDINGS, copy_binding, emit_cffi_source, link_extension, metadata,
                      ENTRY_POINT_FLAGS, python_extension_flags)
from .render import (build_info_declaration, params_problem_declaration, kernels_header_name, render_batch, render_calls, render_casadi, render_header, render_info, render_kernels_header, signature)



def _noop(message):
    pass


def _to_stderr(message):
    """Where a quiet build says that it waits for another one (it would seem to hang)."""
    print(message, file=sys.stderr, flush=True)


@functools.lru_cache(maxsize=None)
def code_fingerprint():
    """A hash of rbdgen's own sources and templates: a changed generator never reuses a module
    built by the old one, even under the same version number."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".py", ".j2", ".c", ".h")):
                h.update(name.encode())
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def model_fingerprint(model):
    """A hash of everything the generated code depends on (exact float reprs)."""
    h = hashlib.sha256()
    parts = [repr(model.name), repr(model.gravity), repr(model.full.armature), repr(model.full.damping),
             repr(model.parameters)]
    for i, joint in enumerate(model.joints):
        parts.append(repr((joint.name, joint.type, sorted(vars(joint.model).items()), model.parent[i],
                           model.X_T[i], model.inertia[i])))
    parts += [repr((f.name, f.body, f.placement)) for f in model.frames]
    h.update("\n".join(parts).encode())
    return h.hexdigest()


def check_moves(model):
    """CodegenError (one line) for a model with nothing to move: every function would be of
    no coordinates at all (a fixed-base URDF with no joints, hector's quadrotor_base.urdf)."""
    if model.nv == 0:
        raise CodegenError(f"robot {model.name!r} has no joints (nv = 0): with a fixed base there is nothing to "
                           "compute; build it with --floating-base (floating_base=True) for its rigid-body motion")


def check_task_space(model, frames, contacts):
    """(the declared contacts, the frames served): CodegenError (one line naming the frame and
    the closest known ones) for an unknown frame or a bad contact declaration."""
    try:
        declared = constrained.parse_contacts(model, contacts or ())
    except ModelError as exc:
        raise CodegenError(str(exc)) from None
    return declared, select_frames(model, frames)


def apply_parameters(model, specs):
    """The model whose functions take the parameters `specs` names (rbdgen.model.parameters)
    as their last input; CodegenError (one line) for an unknown one."""
    if not specs:
        return model
    try:
        return with_parameters(model, specs)
    except ModelError as exc:
        raise CodegenError(str(exc)) from None


def select_frames(model, names=None):
    """The frames a build serves: all of the model's, or those named (one-line error for an
    unknown name, with the closest known ones)."""
    if names is None:
        return list(model.frames)
    from ..errors import ModelError
    chosen = []
    for name in names:
        try:
            chosen.append(model.frame(name))
        except ModelError:
            hint = did_you_mean(name, [f.name for f in model.frames], "rbdgen info lists the frames")
            raise CodegenError(f"unknown frame {name!r} in --frames; {hint}") from None
    return list(dict.fromkeys(chosen))


def module_name(raw):
    """The identifier of the module (folder, Python package, C prefix) for a robot name.

    A name that is already an identifier is kept. Any other (`my-bot`, `my.bot`, a name
    longer than 64 characters) gets a short hash of the original after its sanitized form,
    so two names never share one folder. A name that Python would import as something else
    (`numpy`, `json`) gets the suffix `_robot`, so `import NAME` from the output folder
    never shadows a real package.
    """
    raw = str(raw)
    ident = sanitize_identifier(raw)
    if ident != raw:
        ident = f"{ident[:57]}_{hashlib.sha256(raw.encode()).hexdigest()[:6]}"
    if _importable_elsewhere(ident):
        ident += "_robot"
    return ident


def _importable_elsewhere(name):
    import importlib.util
    if name in sys.stdlib_module_names or name in sys.builtin_module_names or name in ("rbdgen", "cffi"):
        return True
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    # our own generated modules (a folder with model.json) are not "something else"
    return spec is not None and not (spec.origin and os.path.isfile(
        os.path.join(os.path.dirname(spec.origin), "model.json")))


def build_model(model, out_dir="generated", options=None, progress=_noop, source=None, expected_key=None, **changes):
    """Generate, compile, verify and load the module for `model`; reuse it when nothing
    changed (the rules are in codegen/cache.py). options: a BuildOptions (codegen/options.py),
    with `changes` by keyword (name=, algorithms=, frames=, contacts=, native=, cse=, verify=):
    frames are the names of the frames the module serves (None: every frame of the model);
    contacts the contacts declared at build time, as "FRAME:6d", "FRAME:3d@x,y,z",
    "FRAME:1d@x,y,z/nx,ny,nz" (rbdgen.algorithms.constrained). expected_key: the build key the
    module must have (a pickled module's, rebuilt in another process): BuildError, with nothing
    built, when this build's differs."""
    options = BuildOptions.of(options, **changes)
    name, algorithms, native, verify = options.name, options.algorithms, options.native, options.verify
    frames, contacts = options.frames, options.contacts
    module = module_name(name or model.name)
    check_moves(model)
    model = apply_parameters(model, options.parameters)
    declared, chosen = check_task_space(model, frames, contacts)
    specs = fn_table.select(algorithms, model, declared)
    if algorithms is None and model.massless_joints():
        progress(f"left out forward dynamics and M^-1 ({', '.join((f.name for f in fn_table.FUNCTIONS if f.solves))}): "
                 f"joint {model.massless_joints()[0]!r} moves no mass, so M is singular")
    if algorithms is None and model.full.nv > fn_table.COSTLY_MAX_NV:
        costly = [f.name for f in fn_table.FUNCTIONS if f.costly and (model.parameters or not f.parametric)]
        progress(f"left out {', '.join(costly)} (nv = {model.full.nv} > {fn_table.COSTLY_MAX_NV}: its size grows as "
                 "nv^3); name it in --algorithms to build it")
    asked = {"algorithms": [s.name for s in specs], "native": bool(native), "cse": bool(options.cse),
             "frames": None if frames is None else [f.name for f in chosen],
             "contacts": [c.describe() for c in declared], "parameters": list(model.parameters)}
    flags = compile_flags(native)
    key = cache.build_key(model_fingerprint(model), asked, __version__, code_fingerprint(), flags=flags)
    if expected_key is not None and key != expected_key:
        raise BuildError(f"'{os.path.join(out_dir, module)}' is not on this machine, and building it here would give "
                         "another module than the one pickled (rbdgen, the C compiler or the machine differ): nothing "
                         "was built; put the module folder on storage every process sees")
    _make_output_folder(out_dir)
    target = os.path.join(out_dir, module)
    if os.path.lexists(target) and not os.path.isdir(target):
        raise BuildError(f"'{target}' exists and is not a module folder; remove it or choose another --name")
    with cache.locked(out_dir, module, say=progress if progress is not _noop else _to_stderr):
        cache.remove_stale(out_dir, module)
        problem = cache.reuse_problem(target, key, verify)
        if problem is None:
            try:
                loaded = load(target)
                progress(f"{module}: up to date, reusing {target}")
                return loaded
            except BuildError as exc:
                problem = str(exc)
        if problem != "no module yet":
            progress(f"{module}: rebuilding ({problem})")
        _replacing_another_robot(target, model, progress)
        with cache.workspace(out_dir, module) as work:
            expected = _generate_into(work, model, module, specs, key, asked, source, flags, options.cse, progress,
                                      chosen, declared, out_dir, verify)
            report = None
            if verify:
                report = _verify(work, model, module, progress, expected)
            cache.write_verification(work, key, report)
            cache.install(work, target)
        return load(target)


def _make_output_folder(out_dir):
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"cannot create the output folder '{out_dir}' ({exc.strerror}); choose another -o") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise BuildError(f"the output folder '{out_dir}' is not writable; choose another -o")


def _replacing_another_robot(target, model, progress):
    """Say so when the folder about to be replaced holds another robot's module."""
    try:
        old = cache.read_json(os.path.join(target, "model.json"))["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    if old != model.name:
        progress(f"replacing the module of robot {old!r} in {target} with robot {model.name!r}")


def _verify(work, model, module, progress, expected=None):
    """Load the new module from its temporary folder and compare it with the reference (its
    values `expected`, from verify.reference_table, where given); CodegenError (and the folder is
    discarded) on any mismatch or non-finite value."""
    from ..runtime.verify import failure_line, verify_module
    t0 = time.perf_counter()
    # under a package name of its own: the installed copy is loaded again from its final place
    loaded = load(work, package=f"rbdgen_verifying_{module}_{hashlib.sha256(work.encode()).hexdigest()[:12]}")
    report = verify_module(loaded, model, expected=expected)
    bad = {k: v for k, v in report.items() if not v["ok"]}
    if bad:
        name_, worst = next(iter(bad.items()))
        raise CodegenError(f"{module}: {failure_line(name_, worst)}; cond(M) {_condition(model):.1e} at the first "
                           "state" + ("" if "bound" in worst else "; please report this"))
    progress(f"verified against the reference ({len(report)} functions, {time.perf_counter() - t0:.1f} s)")
    return report


def _condition(model):
    """cond(M) at the first verification state (what a solve's digits depend on)."""
    from ..runtime.verify import random_inputs
    q = random_inputs(model, np.random.default_rng(0), 1)["q"][0]
    return float(np.linalg.cond(reference.crba(model, q)))


def _generate_into(work, model, module, specs, key, options, source, flags, cse, progress, frames, contacts,
                   out_dir, verify=False):
    """Generate, render and compile every function (in parallel processes), then link. With
    `verify`, the workers also compute the reference values verification compares with, and
    this returns them (verify.reference_table).

    Every file is named rbdgen_<module>_*, so no robot name can shadow a system header."""
    extension = f"_{module}_{key[:12]}"
    prefix = f"rbdgen_{module}"
    header = f"{prefix}.h"
    signatures = [signature(module, spec, model) for spec in specs]
    with open(os.path.join(work, header), "w") as f:
        f.write(render_header(module, signatures, model, frames, contacts))
    with open(os.path.join(work, kernels_header_name(module)), "w") as f:
        f.write(render_kernels_header(module, header))
    bodies = sorted({f.body for f in frames})
    frame_entries = [(fr.name, fr.body, placement_entries(fr.placement)) for fr in frames]
    # The glue needs only the signatures, so it compiles beside the functions rather than after them.
    glue = {}   # file -> its compiler flags

    def write_glue(name, text, glue_flags):
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
        glue[name] = glue_flags

    write_glue(f"{prefix}_batch.c", render_batch(module, header, signatures), flags + openmp_flags())
    write_glue(f"{prefix}_info.c", render_info(module, header, build_info(key, model.nq, model.nv, len(specs)),
                                               frame_entries, signatures), flags)
    # CasADi's external interface (in the extension and in an export, for casadi.external)
    api = f"{prefix}_casadi_api.h"
    shutil.copyfile(os.path.join(BINDINGS, "casadi_api.h"), os.path.join(work, api))
    write_glue(f"{prefix}_casadi.c", render_casadi(module, header, api, [dict(sig, bodies=bodies) for sig in signatures],
                                                   model.nq == model.nv, frame_entries), GLUE_FLAGS)
    # the entry points' fixed code, which the rendered tables of calls.c include
    for name in ("entry_points.c", "entry_points.h", "arrays.c", "physical.c"):
        shutil.copyfile(os.path.join(BINDINGS, name), os.path.join(work, "rbdgen_" + name))
    params = parameters_of(model)
    # with the functions' flags: its test of each state's parameters (rbdgen_physical.c) runs on
    # vectors of states, where code compiled for any CPU ran at under half the speed
    # (docs/performance.md, Model parameters at run time)
    write_glue(f"{prefix}_calls.c", render_calls(module, header, signatures, model.nq, model.nv, frame_entries,
                                                 params.nominal, [i for _, i in params.bodies()], params.nonnegative()),
               python_extension_flags(*flags, *ENTRY_POINT_FLAGS))
    emit_cffi_source(work, extension, header, f"rbdgen_{module}_entry_points",
                      [build_info_declaration(module), params_problem_declaration(module)]
                      + [line for sig in signatures for line in sig["declarations"]])
    # cffi's wrappers serve only the calls the entry points hand back (batches, out=, conversions),
    # whose time is Python's: optimizing them took most of their compilation and sped up nothing
    # (docs/performance.md, Cold builds).
    glue[f"{extension}.c"] = python_extension_flags("-O0")
    store = BuildCache(out_dir)
    fingerprint = (code_fingerprint(), model_fingerprint(model), module, bool(cse))
    beside = None
    if verify:
        from ..runtime.verify import reference_table
        beside = (reference_table, (model, [spec.name for spec in specs], [f.name for f in frames], contacts))
    datas, objects, shared, expected = generate_and_compile(work, model, module, specs, flags, cse, progress, bodies,
                                                            contacts, glue, store, fingerprint, beside)
    with open(os.path.join(work, header), "w") as f:   # now with each function's cost and workspace
        f.write(render_header(module, datas, model, frames, contacts))
    copy_binding(work)
    with open(os.path.join(work, "model.json"), "w", encoding="utf-8") as f:
        json.dump(metadata(model, module, extension, datas, key, options, source, frames, contacts, flags), f,
                  indent=1)
    t0 = time.perf_counter()
    link_extension(work, extension, sorted(objects))   # in finishing order until sorted: one layout per build
    progress(f"linked the extension ({time.perf_counter() - t0:.1f} s)")
    for obj in objects:  # needed only for linking
        os.remove(obj)
    for together in shared:   # #include lines only: an export compiles each function's file
        os.remove(together)
    store.prune()
    return expected


def build(urdf_path, out_dir="generated", options=None, progress=_noop, **changes):
    """Build (or reuse) the module for a URDF, xacro or MJCF file and load it. See the README
    for its functions.

    options: a BuildOptions (codegen/options.py), with `changes` by keyword: floating_base;
    strict (an invalid inertia is an error instead of a warning); mimic (<mimic> joints follow
    their master, Pinocchio's mimic=True model, instead of moving freely); armature ({joint:
    rotor inertia}); xacro_args and packages (a xacro file's arguments and $(find) folders);
    name, algorithms, frames, contacts ("l_sole:6d", "FL_FOOT:3d", ...), native, cse, verify
    (see build_model)."""
    options = BuildOptions.of(options, **changes)
    model, source = load_source(urdf_path, options, progress)
    return build_model(model, out_dir, options, progress, source)


def file_digest(path):
    """The SHA-256 of a robot's file, or of a file it reads, as model.json's source records them
    (urdf_sha256, files); None where no file can be read."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def source_changed(source, current=None):
    """The first file (its path) that differs from model.json's source record `source`, or None:
    the robot's file (urdf_sha256), then every other file the description read (files: {path:
    digest}, None for an optional xacro include that was absent). Compared with the files as
    they are now, or, given `current`, with the record of a load_source since (the files that
    load read, which may be others). A record made before files were recorded checks the
    robot's file alone, one without urdf_sha256 nothing."""
    top = source["urdf"]
    if source.get("urdf_sha256") is None:
        return None
    recorded = {top: source["urdf_sha256"], **(source.get("files") or {})}
    if current is None:
        now = {path: file_digest(path) for path in recorded}
    else:
        now = {top: current.get("urdf_sha256"), **(current.get("files") or {})}
    if "files" not in source:
        recorded, now = {top: recorded[top]}, {top: now.get(top)}
    for path in list(recorded) + [path for path in now if path not in recorded]:
        if path not in recorded or path not in now or recorded[path] != now[path]:
            return path
    return None


def load_source(urdf_path, options, progress=_noop):
    """(model, source record) for a robot's file read with `options` (a BuildOptions), after
    checking the names of functions, frames and contacts, so that a mistake fails before any
    work."""
    t0 = time.perf_counter()
    fn_table.check_names(options.algorithms)
    reading = options.reading()
    # the digest before the read: a file edited meanwhile then reads as changed, not as the same
    digest = file_digest(urdf_path)
    read = []
    model = load_model(urdf_path, floating_base=options.floating_base, strict=options.strict, mimic=options.mimic,
                       files_read=read, **reading)
    check_moves(model)
    check_task_space(model, options.frames, options.contacts)
    apply_parameters(model, options.parameters)
    source = {"urdf": os.path.abspath(urdf_path), "urdf_sha256": digest,
              "files": {path: file_digest(path) for path in read},
              "floating_base": bool(options.floating_base), "mimic": bool(options.mimic),
              "kind": source_kind(urdf_path),
              **{k: {str(n): v for n, v in value.items()} for k, value in reading.items()}}
    progress(f"loaded {model.name}: nq={model.nq} nv={model.nv} ({time.perf_counter() - t0:.1f} s)")
    return model, source


def build_info(key, nq, nv, nfunctions):
    """What a compiled module says about itself; `load` compares it with model.json."""
    return f"{key} {nq} {nv} {nfunctions}"


def load(path, package=None):
    """Load a generated package from its folder (needs only numpy and cffi).

    BuildError (one line) when the folder is not a module or its files disagree: a garbled
    model.json, an extension that does not import, or compiled constants (build key, nq, nv,
    function count) other than model.json's (the package's __init__ checks those).
    """
    import importlib.util
    path = os.path.abspath(os.fspath(path))
    init = os.path.join(path, "__init__.py")
    meta_path = os.path.join(path, "model.json")
    if not (os.path.isfile(init) and os.path.isfile(meta_path)):
        raise BuildError(f"'{path}' is not a generated rbdgen module (no __init__.py and model.json); run rbdgen build")
    try:
        meta = cache.read_json(meta_path)
        module_id, key = str(meta["module"]), str(meta["build_key"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BuildError(f"'{path}': model.json is damaged ({type(exc).__name__}); rebuild the module") from None
    # one module object per build and folder: the same build in another folder is another module
    # (its __file__, and the folder a pickled module names, are that folder's)
    where = hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:8]
    package = package or f"rbdgen_generated_{module_id}_{key[:12]}_{where}"
    if package in sys.modules:
        return sys.modules[package]
    try:
        record = cache.read_json(os.path.join(path, cache.VERIFICATION_FILE))
    except (OSError, ValueError):
        record = None   # a module being verified, or one built before records existed
    problem = cache.extension_problem(path, meta, record) if isinstance(record, dict) else None
    if problem:
        raise BuildError(f"'{path}': {problem}; rebuild it")
    spec = importlib.util.spec_from_file_location(package, init, submodule_search_locations=[path])
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    try:
        spec.loader.exec_module(module)  # the module checks its compiled constants itself
    except Exception as exc:
        del sys.modules[package]
        detail = " ".join(str(exc).split())[:200]
        raise BuildError(f"'{path}': the module does not load ({type(exc).__name__}: {detail}); rebuild it") from None
    return module
