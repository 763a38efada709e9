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
import dataclasses
import functools
import multiprocessing
import os
import signal
import subprocess
import time
import zlib

import numpy

from ..bindings import cuda as cuda_lib
from ..errors import BuildError
from ..table import functions as fn_table
from .cache import python_abi
from .compiler import c_compiler, long_program_flags
from .objects import digest
from .programs import describe_choice, frame_programs, generate_program
from .render import cuda_header_name, function_data, kernels_header_name, render_cuda_function, render_function

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


@dataclasses.dataclass(frozen=True)
class Target:
    """What a worker needs to generate a function's C file (sent with each job): the model,
    the module's name, CSE, the work folder, the compiler flags, the bodies that carry frames,
    the contacts declared, the machine the flags compile for (costs.Machine: what the
    choice among a function's programs is measured for) and the functions' descriptions."""
    model: object
    module: str
    cse: bool
    work: str
    flags: tuple
    bodies: tuple
    contacts: tuple
    machine: object
    descriptions: dict


class Compilation:
    """Every function's program and C file, and the objects of functions and glue files, made
    by parallel workers and the per-function cache `store`. glue: {file: its flags};
    fingerprint: what every program depends on (program_key); beside, (function, arguments) or
    None: one more job for the workers, the last to start (verification's reference values: it
    fills the time the last compilations leave a worker idle); cuda, None or the architectures
    to compile the CUDA dialect for: each function's .cu file is written as its program is
    there, and NVRTC compiles it among the other jobs (`cubins`), not after them. run()
    returns (each spec's data, the object files, the shared files {file: names of the
    functions it includes}, what `beside` answered)."""

    def __init__(self, target, specs, *, glue, store, fingerprint, progress, beside=None, cuda=None):
        self.target, self.specs, self.glue, self.store = target, specs, glue, store
        self.fingerprint, self.progress, self.beside = fingerprint, progress, beside
        self.cuda, self.cubins, self.cached_cubins = cuda, {}, 0   # (cname, arch) -> its cubin
        # (no NVRTC: no cached cubin either; the first compilation says why)
        self.nvrtc = cuda_lib.nvrtc_identity() if cuda is not None and cuda_lib.nvrtc_available() else None
        self.kernels = self._read(kernels_header_name(target.module))
        self.cuda_header = self._read(cuda_header_name(target.module)) if cuda is not None else None
        self.by_name = {spec.name: spec for spec in specs}
        self.results, self.sources, self.objects, self.shared, self.answer = {}, {}, [], {}, None
        self.waiting = {}   # shared file -> the functions it waits for
        for spec in specs:
            self.waiting.setdefault(shared_file(spec), set()).add(spec.name)
        self.members = {place: [] for place in self.waiting}   # shared file -> its small functions so far
        # (cost, tag, function, arguments): submitted costliest first as workers free up, so that a
        # shared file whose functions are all there compiles before the cheaper jobs still waiting
        self.jobs = []
        self.pending = {}   # future -> (what it makes, the object's cache key, the function or file)
        self.workers = max(1, min(len(specs) + len(glue), os.cpu_count() or 1))

    def run(self):
        work = self.target.work
        # the glue includes the module's headers, the entry points' code and (calls.c, cffi's
        # wrappers) Python's and NumPy's headers, whose versions stand for them
        glue_includes = [self._read(name) for name in sorted(os.listdir(work)) if name.endswith(".h") and not
                         name.endswith("_cuda.h") or
                         name in ("rbdgen_entry_points.c", "rbdgen_arrays.c")] + [python_abi(), numpy.__version__]
        for name, glue_flags in self.glue.items():
            self._compile_or_reuse(os.path.join(work, name), [self._read(name)] + glue_includes, glue_flags, "glue",
                                   GLUE_COST)
        for spec in self.specs:
            key = program_key(self.fingerprint, spec, list(self.target.bodies), list(self.target.contacts))
            cached = self.store.program(key)
            if cached is not None:
                data, text = cached
                source = os.path.join(work, f"rbdgen_{self.target.module}_{spec.name}.c")
                with open(source, "w") as f:
                    f.write(text)
                self._ready(data, source, None, None)
            else:
                self.jobs.append((cost_of(spec), ("generate", key, spec.name), _generate_function,
                                  (self.target, spec.name, self.cuda is None)))
        if self.beside is not None:
            self.jobs.append((BESIDE_COST, ("beside", None, self.beside[0].__name__), *self.beside))
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(self.workers, mp_context=context, initializer=die_with_parent,
                                                    initargs=(os.getpid(),)) as pool:
            self._submit(pool)
            started = last = time.perf_counter()
            while self.pending:
                done, _ = concurrent.futures.wait(self.pending, PROGRESS_SECONDS,
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
                now = time.perf_counter()
                if now - started > QUIET_SECONDS and now - last > PROGRESS_SECONDS:
                    self.progress("  " + self._still_working(now - started))
                    last = now
                for future in done:
                    self._finished(future)
                self._submit(pool)
        return [self.results[spec.name] for spec in self.specs], self.objects, self.shared, self.answer

    def _read(self, name):
        return _read(os.path.join(self.target.work, name))

    def _submit(self, pool):
        self.jobs.sort(key=lambda job: -job[0])
        while self.jobs and len(self.pending) < self.workers:
            _, tag, run, args = self.jobs.pop(0)
            self.pending[pool.submit(run, *args)] = tag

    def _finished(self, future):
        kind, key, _ = self.pending.pop(future)
        if kind == "generate":
            data, obj, source, seconds = future.result()
            self._ready(data, source, obj, key, seconds)
        elif kind == "beside":
            self.answer = future.result()
        elif kind == "cuda":
            cname, arch, cache_key = key
            try:
                self.cubins[cname, arch], _ = future.result()
            except cuda_lib.CudaError as error:
                raise BuildError(str(error)) from None
            if cache_key is not None:
                self.store.keep_cubin(cache_key, self.cubins[cname, arch])
        else:
            obj, seconds = future.result()
            self.objects.append(obj)
            self.store.keep_object(key, obj)
            if kind == "shared":
                names = self.shared[obj[:-2] + ".c"]
                self.progress(f"  compiled {_small(names)} in one file (compile {seconds:.1f} s): {', '.join(names)}")
            elif kind == "function":
                self.progress(f"  compiled {os.path.basename(obj)} (compile {seconds:.1f} s)")

    def _compile_or_reuse(self, source, texts, source_flags, kind, cost):
        """Take the object of `source` from the cache (True), or queue its compilation (False)."""
        key = self.store.object_key(texts, source_flags)
        obj = source[:-2] + ".o"
        if self.store.object(key, obj):
            self.objects.append(obj)
            return True
        self.jobs.append((cost, (kind, key, os.path.basename(source)), _timed,
                          (compile_source, source, source_flags, self.target.work)))
        return False

    def _ready(self, data, source, obj, key_of_program, seconds=None):
        """A function's program is there (generated or cached): its object, alone or shared."""
        name, flags = data["name"], function_flags(self.target.flags, data)
        self.results[name], self.sources[name] = data, source
        text = _read(source)
        if key_of_program is not None:
            self.store.keep_program(key_of_program, data, text)
        small = operations([data]) < SMALL_FUNCTION_OPERATIONS
        if seconds is not None:
            compiled = ("compiled with other small functions" if small else
                        f"compile {seconds[2]:.1f} s" if obj is not None else "compiled by a job of its own")
            self.progress(f"  {name}: {data['operations']} operations "
                          f"(symbolic {seconds[0]:.1f} s, C {seconds[1]:.1f} s, {compiled})")
            if data["accuracy"]:
                self.progress("    " + describe_choice(name, data["accuracy"]))
        else:
            self.progress(f"  {name}: {data['operations']} operations (program cached)")
        if obj is not None:
            self.objects.append(obj)
            self.store.keep_object(self.store.object_key([text, self.kernels], flags), obj)
        elif not small and self._compile_or_reuse(source, [text, self.kernels], flags, "function",
                                                  cost_of(self.by_name[name])):
            self.progress(f"  {name}: object cached")
        if self.cuda is not None:
            self._cuda_dialect(data)
        place = shared_file(self.by_name[name])
        if small:
            self.members[place].append(name)
        self.waiting[place].discard(name)
        if not self.waiting[place] and self.members[place]:
            self._together(place)

    def _cuda_dialect(self, data):
        """A function's CUDA dialect (its .cu file), and its compilation for each architecture asked."""
        module, work, cname = self.target.module, self.target.work, data["cname"]
        text = render_cuda_function(module, data)
        with open(os.path.join(work, cname + ".cu"), "w") as f:
            f.write(text)
        for arch in self.cuda:
            # (rbdgen's sources, in the fingerprint, stand for NVRTC's options)
            key = None if self.nvrtc is None else self.store.cubin_key(
                [text, self.cuda_header], arch, (self.nvrtc, self.fingerprint))
            cubin = None if key is None else self.store.cubin(key)
            if cubin is not None:
                self.cubins[cname, arch] = cubin
                self.cached_cubins += 1
                continue
            self.jobs.append((cost_of(self.by_name[data["name"]]), ("cuda", (cname, arch, key), f"{cname}.cu for {arch}"),
                              _timed, (cuda_lib.compile_module_function, work, module, cname, arch)))

    def _together(self, place):
        """The file of the small functions that share `place`, all there now: its object."""
        names = sorted(self.members[place])
        path = os.path.join(self.target.work, f"rbdgen_{self.target.module}_shared_{place[0]}{place[1]}.c")
        text = "".join(f'#include "{os.path.basename(self.sources[n])}"\n' for n in names)
        with open(path, "w") as f:
            f.write(text)
        self.shared[path] = names
        if self._compile_or_reuse(path, [text, self.kernels] + [_read(self.sources[n]) for n in names],
                                  list(self.target.flags), "shared", GLUE_COST):
            self.progress(f"  reused the object of {_small(names)}: {', '.join(names)}")

    def _still_working(self, seconds):
        """One line: what the workers do now and how much is left."""
        generating = [item for kind, _, item in self.pending.values() if kind == "generate"]
        compiling = [item for kind, _, item in self.pending.values() if kind not in ("generate", "beside")]
        return (f"after {seconds:.0f} s: {len(self.results)} of {len(self.specs)} functions generated"
                + (f"; generating {', '.join(generating)}" if generating else "")
                + (f"; compiling {', '.join(compiling)}" if compiling else "")
                + (f"; {len(self.jobs)} more jobs waiting" if self.jobs else ""))


# A worker lives no longer than its build: a worker whose build was killed would wait on its
# pipe forever (its siblings hold the pipe's other end). Linux kills it with its parent
# (PR_SET_PDEATHSIG), and the C compiler it runs with it. Elsewhere (macOS) such workers stay
# until ended by hand; they hold no build lock (cache.locked), so later builds go on.
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


def _small(names):
    return f"{len(names)} small function{'s' if len(names) > 1 else ''}"


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _generate_function(target, name, compile_now=True):
    """One function: symbolic run, optimization, C file, and (unless it is small, or not
    compile_now) object file, in a worker process. A function of a frame gets the programs of
    the bodies that carry frames (frame_programs). Returns its data, object (None: compiled
    with others, or by a job of its own), C file and seconds."""
    model, module = target.model, target.module
    spec = fn_table.lookup(name, target.contacts)
    t0 = time.perf_counter()
    choice = {}
    programs = frame_programs(model, spec, list(target.bodies), target.cse) if spec.per_body else \
        [(None, generate_program(model, spec, target.cse, choice, target.machine))]
    t1 = time.perf_counter()
    data = dict(function_data(target.descriptions[name], programs), accuracy=choice or None)
    source = os.path.join(target.work, f"rbdgen_{module}_{name}.c")
    with open(source, "w") as f:
        f.write(render_function(module, data))
    t2 = time.perf_counter()
    obj = compile_source(source, function_flags(list(target.flags), data), target.work) \
        if compile_now and operations([data]) >= SMALL_FUNCTION_OPERATIONS else None
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
