"""The stages of one build, in order, under the module folder's lock: reuse the folder or
generate every function and its C (compilation.py), print the glue, compile, link, package,
verify, install (the rules of reuse and installation are in cache.py).

A Build holds what the build was asked for and what it selected before any work (build.py's
build_model makes it): the model with its parameters, the functions, the frames and contacts,
the compiler flags and the build key. Every file is named rbdgen_<module>_*, so no robot name
can shadow a system header.
"""

import dataclasses
import functools
import hashlib
import json
import os
import shutil
import sys
import time
from typing import Callable

import numpy as np

from ..algorithms.frames import placement_entries
from ..bindings import cuda
from ..errors import BuildError, CodegenError
from ..model.parameters import parameters_of
from ..runtime import reference
from . import cache, costs
from .compilation import Compilation, Target
from .compiler import GLUE_FLAGS, openmp_flags
from .loading import build_info, load
from .objects import BuildCache
from .package import (BINDINGS, ENTRY_POINT_FLAGS, copy_binding, emit_cffi_source, link_extension, metadata,
                      python_extension_flags)
from .glue import params_problem_declaration, render_batch, render_calls, render_casadi, render_info
from .render import (build_info_declaration, cuda_header_name, kernels_header_name,
                     render_cuda_header, render_header, render_kernels_header, signature)


def to_stderr(message):
    """Where a quiet build says that it waits for another one (it would seem to hang)."""
    print(message, file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class Build:
    """One build of a module. model: with its parameters; specs: the functions' table rows;
    frames, contacts: the frames served and the contacts declared; asked: the options as
    model.json records them; fingerprint: what every program depends on (compilation's
    program_key); quiet: no progress was asked for (a wait for another build's lock is still
    said, on stderr)."""
    model: object
    out_dir: str
    module: str
    specs: list
    frames: list
    contacts: list
    asked: dict
    flags: list
    key: str
    fingerprint: tuple
    cse: bool
    verify: bool
    source: dict
    progress: Callable
    quiet: bool = False

    @functools.cached_property
    def descriptions(self):
        """Every function's description on the model (table.description), by name: made once."""
        return {spec.name: spec.bind(self.model, self.module) for spec in self.specs}

    @property
    def target(self):
        return os.path.join(self.out_dir, self.module)

    def run(self):
        """The module, reused when its folder is up to date, else built, verified and installed."""
        self._make_output_folder()
        target = self.target
        if os.path.lexists(target) and not os.path.isdir(target):
            raise BuildError(f"'{target}' exists and is not a module folder; remove it or choose another --name")
        with cache.locked(self.out_dir, self.module, say=to_stderr if self.quiet else self.progress):
            cache.remove_stale(self.out_dir, self.module)
            problem = cache.reuse_problem(target, self.key, self.verify)
            if problem is None:
                try:
                    loaded = load(target)
                    self.progress(f"{self.module}: up to date, reusing {target}")
                    return loaded
                except BuildError as exc:
                    problem = str(exc)
            if problem != "no module yet":
                self.progress(f"{self.module}: rebuilding ({problem})")
            self._replacing_another_robot()
            with cache.workspace(self.out_dir, self.module) as work:
                expected = self._generate(work)
                report = self._verify(work, expected) if self.verify else None
                cache.write_verification(work, self.key, report)
                cache.install(work, target)
            return load(target)

    def _generate(self, work):
        """Generate, render and compile every function (in parallel processes), then link. With
        `verify`, the workers also compute the reference values verification compares with, and
        this returns them (verify.reference_table)."""
        model, module, flags, specs = self.model, self.module, self.flags, self.specs
        extension = f"_{module}_{self.key[:12]}"
        prefix = f"rbdgen_{module}"
        header = f"{prefix}.h"
        signatures = [signature(self.descriptions[spec.name]) for spec in specs]
        self._write(work, header, render_header(module, signatures, model, self.frames, self.contacts))
        self._write(work, kernels_header_name(module), render_kernels_header(module, header))
        bodies = sorted({f.body for f in self.frames})
        frame_entries = [(fr.name, fr.body, placement_entries(fr.placement)) for fr in self.frames]
        # The glue needs only the signatures, so it compiles beside the functions rather than after them.
        glue = {}   # file -> its compiler flags
        glue[self._write(work, f"{prefix}_batch.c", render_batch(module, header, signatures))] = flags + openmp_flags()
        info = render_info(module, header, build_info(self.key, model.nq, model.nv, len(specs)), frame_entries,
                           signatures)
        glue[self._write(work, f"{prefix}_info.c", info)] = flags
        # CasADi's external interface (in the extension and in an export, for casadi.external)
        api = f"{prefix}_casadi_api.h"
        shutil.copyfile(os.path.join(BINDINGS, "casadi_api.h"), os.path.join(work, api))
        casadi = render_casadi(module, header, api, [dict(sig, bodies=bodies) for sig in signatures],
                               model.nq == model.nv, frame_entries)
        glue[self._write(work, f"{prefix}_casadi.c", casadi)] = GLUE_FLAGS
        # the entry points' fixed code, which the rendered tables of calls.c include
        for name in ("entry_points.c", "entry_points.h", "arrays.c", "physical.c"):
            shutil.copyfile(os.path.join(BINDINGS, name), os.path.join(work, "rbdgen_" + name))
        params = parameters_of(model)
        calls = render_calls(module, header, signatures, model.nq, model.nv, frame_entries, nominal=params.nominal,
                             bodies=[i for _, i in params.bodies()], nonnegative=params.nonnegative())
        # with the functions' flags: its test of each state's parameters (rbdgen_physical.c) runs on
        # vectors of states, where code compiled for any CPU ran at under half the speed
        # (docs/performance.md, Model parameters at run time)
        glue[self._write(work, f"{prefix}_calls.c", calls)] = python_extension_flags(*flags, *ENTRY_POINT_FLAGS)
        emit_cffi_source(work, extension, header, f"rbdgen_{module}_entry_points",
                         [build_info_declaration(module), params_problem_declaration(module)]
                         + [line for sig in signatures for line in sig["declarations"]])
        # cffi's wrappers serve only the calls the entry points hand back (batches, out=, conversions),
        # whose time is Python's: optimizing them took most of their compilation and sped up nothing
        # (docs/performance.md, Cold builds).
        glue[f"{extension}.c"] = python_extension_flags("-O0")
        store = BuildCache(self.out_dir)
        beside = None
        if self.verify:
            from ..runtime.verify import reference_table
            beside = (reference_table, (model, [spec.name for spec in specs], [f.name for f in self.frames],
                                        self.contacts))
        target = Target(model, module, self.cse, work, tuple(flags), tuple(bodies), tuple(self.contacts),
                        costs.machine(tuple(flags)), self.descriptions)
        archs = None
        if self.asked["cuda"]:   # the dialect's header first: NVRTC compiles each function as it is there
            self._write(work, cuda_header_name(module), render_cuda_header(module))
            archs = self.asked["cuda_arch"] or (cuda.present_architectures_apart() if cuda.nvrtc_available() else [])
        t0 = time.perf_counter()
        compilation = Compilation(target, specs, glue=glue, store=store, fingerprint=self.fingerprint,
                                  progress=self.progress, beside=beside, cuda=archs)
        datas, objects, shared, expected = compilation.run()
        # the header again, now with each function's cost and workspace
        self._write(work, header, render_header(module, datas, model, self.frames, self.contacts))
        if archs is not None:
            self._cubins(work, archs, compilation, time.perf_counter() - t0)
        copy_binding(work)
        with open(os.path.join(work, "model.json"), "w", encoding="utf-8") as f:
            json.dump(metadata(self, extension, datas), f, indent=1)
        t0 = time.perf_counter()
        link_extension(work, extension, sorted(objects))   # in finishing order until sorted: one layout per build
        self.progress(f"linked the extension ({time.perf_counter() - t0:.1f} s)")
        for obj in objects:  # needed only for linking
            os.remove(obj)
        for together in shared:   # #include lines only: an export compiles each function's file
            os.remove(together)
        store.prune()
        return expected

    def _cubins(self, work, archs, compilation, seconds):
        """The CUDA dialect's cubins for the architectures asked for, else for the GPUs present
        (none: compiled at the first call on a GPU), kept in cuda/<arch>/."""
        if not archs:
            self.progress("CUDA sources written; compiled at the first call on a GPU (no GPU here with NVRTC, "
                          "and no --cuda-arch)")
            return
        for (cname, arch), cubin in compilation.cubins.items():
            os.makedirs(os.path.join(work, "cuda", arch), exist_ok=True)
            with open(os.path.join(work, "cuda", arch, cname + ".cubin"), "wb") as f:
                f.write(cubin)
        cached = compilation.cached_cubins
        self.progress(f"compiled the CUDA kernels for {', '.join(archs)} (NVRTC, among the C's jobs: {seconds:.1f} s "
                      "for both" + (f"; {cached} of {len(compilation.cubins)} from the cache" if cached else "") + ")")

    @staticmethod
    def _write(work, name, text):
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
        return name

    def _verify(self, work, expected=None):
        """Load the new module from its temporary folder and compare it with the reference (its
        values `expected`, from verify.reference_table, where given); CodegenError (and the
        folder is discarded) on any mismatch or non-finite value."""
        from ..runtime.verify import failure_line, verify_module
        t0 = time.perf_counter()
        # under a package name of its own: the installed copy is loaded again from its final place
        loaded = load(work, package=f"rbdgen_verifying_{self.module}_{hashlib.sha256(work.encode()).hexdigest()[:12]}")
        report = verify_module(loaded, self.model, expected=expected)
        bad = {k: v for k, v in report.items() if not v["ok"]}
        if bad:
            name, worst = next(iter(bad.items()))
            raise CodegenError(f"{self.module}: {failure_line(name, worst)}; cond(M) {self._condition():.1e} at the "
                               "first state" + ("" if "bound" in worst else "; please report this"))
        self.progress(f"verified against the reference ({len(report)} functions, {time.perf_counter() - t0:.1f} s)")
        return report

    def _condition(self):
        """cond(M) at the first verification state (what a solve's digits depend on)."""
        from ..runtime.verify import random_inputs
        q = random_inputs(self.model, np.random.default_rng(0), 1)["q"][0]
        return float(np.linalg.cond(reference.crba(self.model, q)))

    def _make_output_folder(self):
        try:
            os.makedirs(self.out_dir, exist_ok=True)
        except OSError as exc:
            raise BuildError(f"cannot create the output folder '{self.out_dir}' ({exc.strerror}); choose another -o") \
                from None
        if not os.access(self.out_dir, os.W_OK | os.X_OK):
            raise BuildError(f"the output folder '{self.out_dir}' is not writable; choose another -o")

    def _replacing_another_robot(self):
        """Say so when the folder about to be replaced holds another robot's module."""
        try:
            old = cache.read_json(os.path.join(self.target, "model.json"))["name"]
        except (OSError, ValueError, KeyError, TypeError):
            return
        if old != self.model.name:
            self.progress(f"replacing the module of robot {old!r} in {self.target} with robot {self.model.name!r}")
