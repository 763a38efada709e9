"""URDF -> symbolic run -> C -> cffi extension -> generated/<robot>/, verified and cached.

The build writes into a temporary folder beside the target and renames it into place under
a lock, so an interrupted or concurrent build never leaves a broken module. The C files are
compiled in parallel by the C compiler; cffi (API mode, out of line) compiles only its small
wrapper, in a child process so that its output can be captured and its chdir stays there.
"""

import concurrent.futures
import contextlib
import fcntl
import functools
import hashlib
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .. import __version__
from ..algorithms import contact as contact_algorithms
from ..errors import BuildError, CodegenError
from ..model.urdf import load_urdf
from . import functions as fn_table
from .cprinter import sanitize_identifier
from .optimize import optimize
from .recorder import record
from .render import (function_data, render_batch, render_calls, render_function, render_header, render_wrapper,
                     signature)

OPT_FLAGS = ["-O3", "-fno-math-errno", "-fPIC", "-std=gnu11"]


def _noop(message):
    pass


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@functools.lru_cache(maxsize=None)
def code_fingerprint():
    """A hash of rbdgen's own sources and templates: a changed generator never reuses a module
    built by the old one, even under the same version number."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".py", ".j2")):
                h.update(name.encode())
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def model_fingerprint(model):
    """A hash of everything the generated code depends on (exact float reprs)."""
    h = hashlib.sha256()
    parts = [repr(model.gravity)]
    for i, joint in enumerate(model.joints):
        parts.append(repr((joint.name, joint.type, sorted(vars(joint.model).items()), model.parent[i],
                           model.X_T[i], model.inertia[i])))
    parts += [repr((f.name, f.body, f.placement)) for f in model.frames]
    h.update("\n".join(parts).encode())
    return h.hexdigest()


def generate_program(model, spec, cse=True):
    """Record one function's algorithm on symbols and optimize the straight-line program."""
    inputs = [(name, fn_table.INPUT_SIZES[name](model)) for name in spec.inputs]
    program = record(lambda ops, *args: spec.run(model, ops, *args), inputs, spec.output(model))
    return optimize(program, cse=cse)


def _metadata(model, module, extension, datas, key, options, source):
    support = []
    for b in range(model.nbodies):
        mask = [False] * model.nv
        for j in model.support(b):
            joint = model.joints[j]
            mask[joint.idx_v:joint.idx_v + joint.nv] = [True] * joint.nv
        support.append(mask)
    frames = {}
    for f in model.frames:
        E = f.placement.E
        frames[f.name] = {"body": f.body, "rotation": [float(E[j][i]) for i in range(3) for j in range(3)],
                          "translation": [float(x) for x in f.placement.r]}
    return {
        "name": model.name, "module": module, "extension": extension, "rbdgen_version": __version__,
        "build_key": key, "options": options, "source": source or {},
        "nq": model.nq, "nv": model.nv, "gravity": [float(g) for g in model.gravity],
        "total_mass": model.total_mass,
        "joints": [{"name": j.name, "type": j.type, "idx_q": j.idx_q, "idx_v": j.idx_v, "nq": j.nq, "nv": j.nv}
                   for j in model.joints],
        "frames": frames, "support": support,
        "functions": {d["name"]: {"inputs": [[a["name"], a["size"]] for a in d["inputs"]], "shape": d["shape"],
                                  "operations": d["operations"], "sincos": d["sincos"]} for d in datas},
    }


@contextlib.contextmanager
def _lock(path):
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cached(target, key):
    try:
        with open(os.path.join(target, "model.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    return meta.get("build_key") == key and any(
        name.startswith(meta["extension"] + ".") for name in os.listdir(target))


def build_model(model, out_dir="generated", name=None, algorithms=None, native=True, cse=True,
                verify=True, progress=_noop, source=None):
    """Generate, compile and load the module for `model`; reuse it when nothing changed."""
    module = sanitize_identifier(name or model.name)
    specs = fn_table.select(algorithms, model)
    if algorithms is None and model.massless_joints():
        progress(f"left out forward dynamics and M^-1 ({', '.join(fn_table.NEED_INVERTIBLE_M)}): "
                 f"joint {model.massless_joints()[0]!r} moves no mass, so M is singular")
    if algorithms is None and model.nv > fn_table.COSTLY_MAX_NV:
        costly = [f.name for f in fn_table.FUNCTIONS if f.costly]
        progress(f"left out {', '.join(costly)} (nv = {model.nv} > {fn_table.COSTLY_MAX_NV}: its size grows as nv^3); "
                 "name it in --algorithms to build it")
    options = {"algorithms": [s.name for s in specs], "native": bool(native), "cse": bool(cse)}
    key = hashlib.sha256(json.dumps([model_fingerprint(model), options, __version__, code_fingerprint()]).encode()
                         ).hexdigest()
    os.makedirs(out_dir, exist_ok=True)
    target = os.path.join(out_dir, module)
    with _lock(os.path.join(out_dir, f".{module}.lock")):
        if _cached(target, key):
            progress(f"{module}: up to date, reusing {target}")
            return load(target)
        work = os.path.abspath(tempfile.mkdtemp(prefix=f".{module}-", dir=out_dir))
        os.chmod(work, 0o777 & ~_umask())  # mkdtemp makes it private; the module is not
        try:
            _generate_into(work, model, module, specs, key, options, source, native, cse, progress)
            trash = None
            if os.path.exists(target):
                trash = tempfile.mkdtemp(prefix=f".{module}-old-", dir=out_dir)
                os.rename(target, os.path.join(trash, module))
            os.rename(work, target)
            if trash:
                shutil.rmtree(trash, ignore_errors=True)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    loaded = load(target)
    if verify:
        from ..runtime.verify import verify_module
        t0 = time.perf_counter()
        report = verify_module(loaded, model, states=2)
        bad = {k: v for k, v in report.items() if not v["ok"]}
        if bad:
            name_, worst = next(iter(bad.items()))
            shutil.rmtree(target, ignore_errors=True)  # never leave a wrong module to be reused
            raise CodegenError(f"{module}: generated {name_} disagrees with the reference "
                               f"(relative error {worst['error']:.2e}); please report this")
        progress(f"verified against the reference ({time.perf_counter() - t0:.1f} s)")
    return loaded


def _generate_into(work, model, module, specs, key, options, source, native, cse, progress):
    """Generate, render and compile every function (in parallel processes), then link."""
    extension = f"_{module}_{key[:12]}"
    header = f"{module}.h"
    flags = OPT_FLAGS + (["-march=native"] if native else [])
    signatures = [signature(module, spec, model) for spec in specs]
    with open(os.path.join(work, header), "w") as f:
        f.write(render_header(module, signatures))
    batch_source = os.path.join(work, f"{module}_batch.c")
    with open(batch_source, "w") as f:
        f.write(render_batch(module, header, signatures))
    jobs = [(model, module, spec.name, cse, work, header, flags) for spec in specs]
    # The costliest functions first, so the workers finish together.
    jobs.sort(key=lambda job: -_COST.get(job[2], 1))
    results = {}
    workers = max(1, min(len(jobs), os.cpu_count() or 1))
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(_generate_function, *job) for job in jobs]
        for future in concurrent.futures.as_completed(futures):
            data, obj, seconds = future.result()
            results[data["name"]] = (data, obj)
            progress(f"  {data['name']}: {data['operations']} operations "
                     f"(symbolic {seconds[0]:.1f} s, C {seconds[1]:.1f} s, compile {seconds[2]:.1f} s)")
    datas = [results[spec.name][0] for spec in specs]
    objects = [results[spec.name][1] for spec in specs] + [compile_source(batch_source, flags + ["-fopenmp"], work)]
    with open(os.path.join(work, "__init__.py"), "w") as f:
        f.write(render_wrapper(module, datas))
    # Points and contacts run on NumPy, in the very file the reference uses.
    shutil.copyfile(os.path.join(os.path.dirname(contact_algorithms.__file__), "contact.py"),
                    os.path.join(work, "_contact.py"))
    with open(os.path.join(work, "model.json"), "w", encoding="utf-8") as f:
        json.dump(_metadata(model, module, extension, datas, key, options, source), f, indent=1)
    with open(os.path.join(work, f"{module}_calls.c"), "w") as f:
        f.write(render_calls(module, header, signatures))
    t0 = time.perf_counter()
    _cffi_extension(work, extension, header, objects, f"{module}_calls.c", f"rbdgen_{module}_entry_points")
    progress(f"linked the extension ({time.perf_counter() - t0:.1f} s)")
    for obj in objects:  # needed only for linking
        os.remove(obj)


# Relative cost of generating and compiling each function, to schedule the big ones first.
_COST = {"aba_fext": 10, "aba": 10, "rnea_fext": 5, "rnea": 5, "nle": 5, "crba": 4, "kinetic_energy": 2}


def _generate_function(model, module, name, cse, work, header, flags):
    """One function: symbolic run, optimization, C file, object file (in a worker process)."""
    spec = fn_table.BY_NAME[name]
    t0 = time.perf_counter()
    program = generate_program(model, spec, cse=cse)
    t1 = time.perf_counter()
    data = function_data(module, spec, model, program)
    source = os.path.join(work, f"{module}_{name}.c")
    with open(source, "w") as f:
        f.write(render_function(header, data))
    t2 = time.perf_counter()
    obj = compile_source(source, flags, work)
    return data, obj, (t1 - t0, t2 - t1, time.perf_counter() - t2)


def compile_source(source, flags, work):
    """Compile one C file to an object; BuildError with the command and compiler output."""
    cc = os.environ.get("CC", "cc")
    obj = source[:-2] + ".o"
    cmd = [cc, *flags, "-c", source, "-o", obj, "-I", work]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"compiling {os.path.basename(source)} failed: {' '.join(cmd)}",
                         command=cmd, output=result.stdout + result.stderr)
    return obj


_CFFI_SCRIPT = r"""
import json, sys
from cffi import FFI
spec = json.load(open(sys.argv[1]))
ffi = FFI()
ffi.cdef(spec["cdef"])
ffi.set_source(spec["extension"], open(spec["calls"]).read(), include_dirs=[spec["work"]],
               extra_objects=spec["objects"], extra_compile_args=["-O2"], extra_link_args=["-fopenmp"],
               libraries=["m"], py_limited_api=False, define_macros=[("_CFFI_NO_LIMITED_API", None)])
ffi.compile(tmpdir=spec["work"], verbose=False)
"""


def _cffi_extension(work, extension, header, objects, calls, entry_points):
    """The cffi extension: the C functions, and the direct Python entry points of `calls`."""
    cdef = [f"void *{entry_points}(void *fallbacks);"]
    with open(os.path.join(work, header)) as f:
        for line in f:
            if line.startswith("void "):
                cdef.append(line.strip())
    spec_path = os.path.join(work, "_cffi_spec.json")
    with open(spec_path, "w") as f:
        json.dump({"cdef": "\n".join(cdef), "extension": extension, "header": header, "work": work,
                   "objects": objects, "calls": os.path.join(work, calls)}, f)
    cmd = [sys.executable, "-c", _CFFI_SCRIPT, spec_path]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    if result.returncode != 0:
        raise BuildError(f"building the cffi extension {extension} failed", command=cmd,
                         output=result.stdout + result.stderr)
    for leftover in os.listdir(work):
        path = os.path.join(work, leftover)
        if leftover.startswith(extension) and leftover.endswith((".c", ".o")):
            os.remove(path)
        elif os.path.isdir(path):  # setuptools' build folders
            shutil.rmtree(path, ignore_errors=True)
    os.remove(spec_path)


def build(urdf_path, out_dir="generated", floating_base=False, name=None, algorithms=None, native=True,
          cse=True, verify=True, progress=_noop):
    """Build (or reuse) the module for a URDF and load it. See the README for its functions."""
    t0 = time.perf_counter()
    fn_table.select(algorithms)  # unknown names fail before any work
    model = load_urdf(urdf_path, floating_base=floating_base)
    with open(urdf_path, "rb") as f:
        source = {"urdf": os.path.abspath(urdf_path), "urdf_sha256": hashlib.sha256(f.read()).hexdigest(),
                  "floating_base": bool(floating_base)}
    progress(f"loaded {model.name}: nq={model.nq} nv={model.nv} ({time.perf_counter() - t0:.1f} s)")
    return build_model(model, out_dir, name, algorithms, native, cse, verify, progress, source)


def load(path):
    """Load a generated package from its folder (needs only numpy and cffi)."""
    import importlib.util
    path = os.path.abspath(os.fspath(path))
    init = os.path.join(path, "__init__.py")
    meta_path = os.path.join(path, "model.json")
    if not (os.path.isfile(init) and os.path.isfile(meta_path)):
        raise BuildError(f"'{path}' is not a generated rbdgen module (no __init__.py and model.json); run rbdgen build")
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    package = f"rbdgen_generated_{meta['module']}_{meta['build_key'][:12]}"
    if package in sys.modules:
        return sys.modules[package]
    spec = importlib.util.spec_from_file_location(package, init, submodule_search_locations=[path])
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[package]
        raise
    return module
