"""Generating and compiling a module's functions, in parallel processes, through the per-function
cache (codegen/objects.py): a function whose program is cached skips its symbolic run, and a
C file whose object is cached is not compiled.

Small functions compile together: the compiler spends a fixed time on a file before its first
function, which small functions would pay many times over one file each (docs/performance.md,
Cold builds). Which file a small function shares is decided by its name and kind alone, so
that a build which adds a contact, a function or a frame finds the other files, and their
objects, as before.
"""

import concurrent.futures
import ctypes
import functools
import multiprocessing
import os
import signal
import subprocess
import time
import zlib

import numpy

from ..errors import BuildError
from ..table import functions as fn_table
from .cache import python_abi
from .compiler import c_compiler, long_program_flags
from .objects import digest
from .programs import describe_choice, frame_programs, generate_program
from .render import function_data, kernels_header_name, render_function

# A function of fewer operations shares a file with other small ones (see above)
SMALL_FUNCTION_OPERATIONS = 1500
# The files small functions share, by kind: the functions of a frame change with the frames
# served, those of contacts with the contacts declared; the others with neither.
SHARED_FILES = {"state": 4, "frame": 2, "contact": 1}

# Relative cost of generating and compiling a function (its table entry's `cost` where it has
# one; the glue files, batch.c and casadi.c, each about as long as one of the larger functions:
# docs/performance.md, Cold builds), to schedule the big ones first. Any other function of
# states comes before the functions of a frame: the files it shares with other small functions
# compile once all of them are there, beside the frames' generation.
GLUE_COST, STATE_COST, FRAME_COST, BESIDE_COST = 15, 2, 1, 0


def cost_of(spec):
    return spec.cost or (FRAME_COST if spec.per_body else STATE_COST)


def operations(datas):
    """The operations of functions' C: every body's program."""
    return sum(k["operations"] for data in datas for k in data["kernels"])


def function_flags(flags, data):
    """The flags that compile a function's own C file (compiler.long_program_flags of its
    longest program: a function of a frame has one for each chain of bodies)."""
    return long_program_flags(flags, max((k["operations"] for k in data["kernels"]), default=0))


def shared_file(spec):
    """(kind, index) of the file a small function of `spec` shares."""
    return spec.kind, zlib.crc32(spec.name.encode()) % SHARED_FILES[spec.kind]


def program_key(fingerprint, spec, bodies, contacts):
    """What a function's program depends on: rbdgen's sources, the model, the module's name and
    CSE (`fingerprint`), the function, and the bodies with frames or the contacts it reads."""
    return digest(*fingerprint, spec.name, bodies if spec.per_body else None,
                  [c.describe() for c in contacts] if spec.kind == "contact" else None)


def generate_and_compile(work, model, module, specs, flags, cse, progress, bodies, contacts, glue, store,
                         fingerprint, beside=None):
    """Every function's program and C file, and the objects of functions and glue files
    ({file: flags}), reusing what `store` holds. `beside`, (function, arguments) or None, is one
    more job for the workers, the last to start (verification's reference values: it fills the
    time the last compilations leave a worker idle). Returns (each spec's data, the object files,
    the shared files {file: names of the functions it includes}, what `beside` answered)."""
    read = lambda name: _read(os.path.join(work, name))
    kernels = read(kernels_header_name(module))
    # the glue includes the module's headers, the entry points' code and (calls.c, cffi's wrappers)
    # Python's and NumPy's headers, whose versions stand for them
    glue_includes = [read(name) for name in sorted(os.listdir(work)) if name.endswith(".h") or
                     name in ("rbdgen_entry_points.c", "rbdgen_arrays.c")] + [python_abi(), numpy.__version__]
    results, sources, objects, shared, answer = {}, {}, [], {}, None
    by_name = {spec.name: spec for spec in specs}
    waiting = {}   # shared file -> the functions it waits for
    for spec in specs:
        waiting.setdefault(shared_file(spec), set()).add(spec.name)
    members = {place: [] for place in waiting}
    workers = max(1, min(len(specs) + len(glue), os.cpu_count() or 1))
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=die_with_parent,
                                                initargs=(os.getpid(),)) as pool:
        pending = {}   # future -> (what it makes, the object's cache key, the function or file)
        # (cost, tag, function, arguments): submitted costliest first as workers free up, so that a
        # shared file whose functions are all there compiles before the cheaper jobs still waiting
        jobs = []

        def compile_or_reuse(source, texts, source_flags, kind, cost):
            """Take the object of `source` from the cache (True), or compile it (False)."""
            key = store.object_key(texts, source_flags)
            obj = source[:-2] + ".o"
            if store.object(key, obj):
                objects.append(obj)
                return True
            jobs.append((cost, (kind, key, os.path.basename(source)), _timed, (compile_source, source, source_flags,
                                                                                 work)))
            return False

        def ready(data, source, obj, key_of_program, seconds=None):
            """A function's program is there (generated or cached): its object, alone or shared."""
            name = data["name"]
            results[name], sources[name] = data, source
            text = _read(source)
            if key_of_program is not None:
                store.keep_program(key_of_program, data, text)
            small = operations([data]) < SMALL_FUNCTION_OPERATIONS
            if seconds is not None:
                compiled = "compiled with other small functions" if small else f"compile {seconds[2]:.1f} s"
                progress(f"  {name}: {data['operations']} operations "
                         f"(symbolic {seconds[0]:.1f} s, C {seconds[1]:.1f} s, {compiled})")
                if data["accuracy"]:
                    progress("    " + describe_choice(name, data["accuracy"]))
            else:
                progress(f"  {name}: {data['operations']} operations (program cached)")
            if obj is not None:
                objects.append(obj)
                store.keep_object(store.object_key([text, kernels], function_flags(flags, data)), obj)
            elif not small and compile_or_reuse(source, [text, kernels], function_flags(flags, data), "function",
                                                cost_of(by_name[name])):
                progress(f"  {name}: object cached")
            spec_place = shared_file(by_name[name])
            if small:
                members[spec_place].append(name)
            waiting[spec_place].discard(name)
            if not waiting[spec_place] and members[spec_place]:
                together(spec_place)

        def together(place):
            names = sorted(members[place])
            path = os.path.join(work, f"rbdgen_{module}_shared_{place[0]}{place[1]}.c")
            text = "".join(f'#include "{os.path.basename(sources[n])}"\n' for n in names)
            with open(path, "w") as f:
                f.write(text)
            shared[path] = names
            if compile_or_reuse(path, [text, kernels] + [_read(sources[n]) for n in names], flags, "shared", GLUE_COST):
                progress(f"  reused the object of {_small(names)}: {', '.join(names)}")

        for name, glue_flags in glue.items():
            compile_or_reuse(os.path.join(work, name), [read(name)] + glue_includes, glue_flags, "glue", GLUE_COST)
        for spec in specs:
            key = program_key(fingerprint, spec, bodies, contacts)
            cached = store.program(key)
            if cached is not None:
                data, text = cached
                source = os.path.join(work, f"rbdgen_{module}_{spec.name}.c")
                with open(source, "w") as f:
                    f.write(text)
                ready(data, source, None, None)
            else:
                jobs.append((cost_of(spec), ("generate", key, spec.name), _generate_function,
                             (model, module, spec.name, cse, work, flags, bodies, contacts)))
        if beside is not None:
            jobs.append((BESIDE_COST, ("beside", None, beside[0].__name__), *beside))

        def submit_jobs():
            jobs.sort(key=lambda job: -job[0])
            while jobs and len(pending) < workers:
                _, tag, run, args = jobs.pop(0)
                pending[pool.submit(run, *args)] = tag

        submit_jobs()
        started = last = time.perf_counter()
        while pending:
            done, _ = concurrent.futures.wait(pending, PROGRESS_SECONDS, return_when=concurrent.futures.FIRST_COMPLETED)
            now = time.perf_counter()
            if now - started > QUIET_SECONDS and now - last > PROGRESS_SECONDS:
                progress("  " + _still_working(pending, len(jobs), specs, results, now - started))
                last = now
            for future in done:
                kind, key, _ = pending.pop(future)
                if kind == "generate":
                    data, obj, source, seconds = future.result()
                    ready(data, source, obj, key, seconds)
                elif kind == "beside":
                    answer = future.result()
                else:
                    obj, seconds = future.result()
                    objects.append(obj)
                    store.keep_object(key, obj)
                    if kind == "shared":
                        names = shared[obj[:-2] + ".c"]
                        progress(f"  compiled {_small(names)} in one file (compile {seconds:.1f} s): "
                                 f"{', '.join(names)}")
                    elif kind == "function":
                        progress(f"  compiled {os.path.basename(obj)} (compile {seconds:.1f} s)")
            submit_jobs()
    return [results[spec.name] for spec in specs], objects, shared, answer


# A worker lives no longer than its build: a worker whose build was killed would wait on its
# pipe forever. Linux kills it with its parent (PR_SET_PDEATHSIG), and the C compiler it runs
# with it; elsewhere a killed build's workers end when they next read their pipe.
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent):
    """In a child of process `parent`: be killed when the parent ends (Linux), or end now if
    it has ended already."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _libc_prctl():
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (AttributeError, OSError):
        return None


_prctl = _libc_prctl()


# A build that takes longer than QUIET_SECONDS says every PROGRESS_SECONDS what it is doing.
QUIET_SECONDS, PROGRESS_SECONDS = 30, 10


def _still_working(pending, queued, specs, results, seconds):
    """One line: what the workers do now and how much is left."""
    generating = [item for kind, _, item in pending.values() if kind == "generate"]
    compiling = [item for kind, _, item in pending.values() if kind not in ("generate", "beside")]
    return (f"after {seconds:.0f} s: {len(results)} of {len(specs)} functions generated"
            + (f"; generating {', '.join(generating)}" if generating else "")
            + (f"; compiling {', '.join(compiling)}" if compiling else "")
            + (f"; {queued} more jobs waiting" if queued else ""))


def _small(names):
    return f"{len(names)} small function{'s' if len(names) > 1 else ''}"


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _generate_function(model, module, name, cse, work, flags, bodies, contacts):
    """One function: symbolic run, optimization, C file, and (unless it is small) object file,
    in a worker process. A function of a frame gets the programs of the bodies that carry
    frames (frame_programs). Returns its data, object (None: compile it with others), C file and seconds."""
    spec = fn_table.lookup(name, contacts)
    t0 = time.perf_counter()
    choice = {}
    programs = frame_programs(model, spec, bodies, cse) if spec.per_body else \
        [(None, generate_program(model, spec, cse, choice))]
    t1 = time.perf_counter()
    data = dict(function_data(module, spec, model, programs), accuracy=choice or None)
    source = os.path.join(work, f"rbdgen_{module}_{name}.c")
    with open(source, "w") as f:
        f.write(render_function(module, data))
    t2 = time.perf_counter()
    obj = compile_source(source, function_flags(flags, data), work) \
        if operations([data]) >= SMALL_FUNCTION_OPERATIONS else None
    return data, obj, source, (t1 - t0, t2 - t1, time.perf_counter() - t2)


def _timed(run, *args):
    t0 = time.perf_counter()
    return run(*args), time.perf_counter() - t0


def compile_source(source, flags, work):
    """Compile one C file to an object; BuildError with the command and compiler output."""
    cc = c_compiler()
    obj = source[:-2] + ".o"
    cmd = [cc, *flags, "-c", source, "-o", obj, "-I", work]
    # (a worker is single-threaded, where preexec_fn is safe)
    result = subprocess.run(cmd, capture_output=True, text=True,
                            preexec_fn=functools.partial(die_with_parent, os.getpid()))
    if result.returncode != 0:
        raise BuildError(f"compiling {os.path.basename(source)} failed: {' '.join(cmd)}",
                         command=cmd, output=result.stdout + result.stderr)
    return obj
