"""URDF -> symbolic run -> C -> cffi extension -> generated/<robot>/, verified and cached.

build_model decides what a build is (the model with its parameters, the functions, frames and
contacts, the flags and the build key) and hands it to a Build (codegen/stages.py), which runs
the stages under the folder's lock: a module is built and verified in a temporary folder and
installed by one atomic rename; when it may be reused instead is decided in codegen/cache.py.
The C files, the functions' and the glue's, are compiled in parallel by the C compiler; cffi
(API mode, out of line) only writes the C of its small wrapper, which compiles beside them,
and the objects are linked into the extension directly.
"""

import functools
import hashlib
import os
import sys
import time

from ..version import __version__
from ..algorithms import constrained
from ..errors import BuildError, CodegenError, ModelError, did_you_mean
from ..model.parameters import with_parameters
from ..model.sources import load_model, source_kind
from . import cache
from .compiler import compile_flags
from ..table import functions as fn_table
from .cprinter import sanitize_identifier
from .loading import load  # noqa: F401  (rbdgen.codegen.build.load: the public loader)
from .options import BuildOptions
from .stages import Build


def _noop(message):
    pass


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
             repr(model.parameters), repr(model.loops)]
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
             "contacts": [c.describe() for c in declared], "parameters": list(model.parameters),
             "cuda": bool(options.cuda or options.cuda_arch), "cuda_arch": check_architectures(options.cuda_arch)}
    flags = compile_flags(native)
    key = cache.build_key(model_fingerprint(model), asked, __version__, code_fingerprint(), flags=flags)
    if expected_key is not None and key != expected_key:
        raise BuildError(f"'{os.path.join(out_dir, module)}' is not on this machine, and building it here would give "
                         "another module than the one pickled (rbdgen, the C compiler or the machine differ): nothing "
                         "was built; put the module folder on storage every process sees")
    return Build(model=model, out_dir=out_dir, module=module, specs=specs, frames=chosen, contacts=declared,
                 asked=asked, flags=flags, key=key,
                 fingerprint=(code_fingerprint(), model_fingerprint(model), module, bool(options.cse)),
                 cse=options.cse, verify=verify, source=source, progress=progress, quiet=progress is _noop).run()


def check_architectures(archs, nvrtc=True):
    """The GPU architectures asked for, as sorted "sm_XY" names (None: none), or BuildError:
    not such a name, or (nvrtc: the build compiles for them) one NVRTC, where installed, does
    not compile for."""
    if not archs:
        return None
    for arch in archs:
        if arch[-1:] in ("a", "f") and arch[:-1].startswith("sm_") and arch[3:-1].isdigit():
            raise BuildError(f"--cuda-arch: {arch!r} names one GPU's own features, which rbdgen's kernels do not "
                             f"use; give {arch[:-1]}")
        if not (arch.startswith("sm_") and arch[3:].isdigit() and len(arch) >= 5):
            raise BuildError(f"--cuda-arch: {arch!r} is not a GPU architecture; give sm_XY names, such as sm_80 or sm_90")
    from ..bindings import cuda
    if nvrtc and cuda.nvrtc_available():
        supported = cuda.supported_architectures()
        for arch in archs:
            if arch not in supported:
                raise BuildError(f"--cuda-arch: NVRTC {'.'.join(map(str, cuda.nvrtc_version()))} does not compile "
                                 f"for {arch}; it compiles for {', '.join(supported)}")
    return sorted(set(archs))


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
              **{k: {str(n): v for n, v in value.items()} if isinstance(value, dict) else list(value)
                 for k, value in reading.items()}}
    progress(f"loaded {model.name}: nq={model.nq} nv={model.nv} ({time.perf_counter() - t0:.1f} s)")
    return model, source
