"""rbdgen export: the generated C of a robot as a library anyone can link (CMake, pkg-config).

The export is the module's own C: the same build (generate, compile, verify against the
reference, cache) produces the folder, and the export takes from it every source but the
Python binding (rbdgen_<module>_calls.c), lays them out as include/ and src/, and adds a
CMakeLists.txt that builds a static and a shared library and installs a CMake package
(`find_package(rbdgen_<module>)` gives `rbdgen::<module>`), a pkg-config file, model.json
and a README. Nothing in it needs rbdgen, Python or a GNU compiler. A module built with the
CUDA dialect (--cuda) adds its .cu files, their declarations (rbdgen_<module>.cuh) and a
static library of the kernels, rbdgen::<module>_cuda, built by nvcc (CMake's CUDA language).
"""

import json
import os
import re
import shutil
import tempfile

from ..version import __version__
from ..table import description
from ..errors import BuildError
from .build import build_model, check_architectures, load_source
from .options import BuildOptions
from .compiler import GCC_FLAGS
from .cprinter import c_comment_text
from .render import template

# The file that marks a folder as an export, so that exporting again replaces it and a
# folder of something else is never overwritten.
MARKER = ".rbdgen-export"
PYTHON_ONLY = ("_calls.c",)   # the binding's C, which includes Python.h
# The CUDA target's default architectures (CMAKE_CUDA_ARCHITECTURES) when the build named none:
# the GPUs of the issue, A100 and H100/H200
DEFAULT_CUDA_ARCHITECTURES = ("sm_80", "sm_90")


def export(urdf_path, out_dir, options=None, *, native=False, module_dir=None, progress=None, **changes):
    """Write the C library of a URDF's robot to `out_dir`: options, and `changes` by keyword,
    as build's; native and module_dir as in export_model. Returns the path of the export."""
    progress = progress or (lambda message: None)
    _check_destination(out_dir)
    options = BuildOptions.of(options, **changes)
    model, source = load_source(urdf_path, options, progress)
    return export_model(model, out_dir, options, native=native, module_dir=module_dir, progress=progress, source=source)


def export_model(model, out_dir, options=None, *, native=False, module_dir=None, progress=None, source=None,
                 **changes):
    """Build (or reuse) the module for `model` and write its C library to `out_dir`.

    native: the default of the CMake option RBDGEN_NATIVE (-march=native); the sources are the
    same either way, and the module built to take them from is compiled for this machine.
    module_dir: where the module is built or reused (default: a temporary folder; give a
    build's output folder to reuse a module built with the same options). Returns the path of
    the export."""
    progress = progress or (lambda message: None)
    _check_destination(out_dir)
    options = BuildOptions.of(options, **changes, native=True)
    # the CUDA sources for nvcc, for the architectures asked (CMake's default; NVRTC compiles nothing)
    architectures = check_architectures(options.cuda_arch, nvrtc=False)
    options = BuildOptions.of(options, cuda=options.cuda or bool(architectures), cuda_arch=None)
    with tempfile.TemporaryDirectory(prefix="rbdgen-export-") as scratch:
        module = build_model(model, module_dir or scratch, options, progress, source)
        folder = os.path.dirname(os.path.abspath(module.__file__))
        write_library(folder, out_dir, model, native, architectures)
    progress(f"exported the C library of {model.name!r} to {out_dir}")
    return os.path.abspath(out_dir)


def write_library(module_folder, out_dir, model, native=False, cuda_architectures=None):
    """Lay out a built module's C sources as a CMake project in `out_dir` (replacing an
    earlier export there); written in a sibling folder first, then renamed into place.
    cuda_architectures: CMake's default for the CUDA kernels ("sm_XY" names; None: sm_80, sm_90)."""
    with open(os.path.join(module_folder, "model.json"), encoding="utf-8") as f:
        meta = json.load(f)
    module = meta["module"]
    prefix = f"rbdgen_{module}"
    header = f"{prefix}.h"
    sources = sorted(n for n in os.listdir(module_folder)
                     if n.startswith(prefix + "_") and n.endswith((".c", ".h", ".cu")) and not n.endswith(PYTHON_ONLY))
    cuda = [n for n in sources if n.endswith(".cu")]   # a module built with the CUDA dialect
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".rbdgen-export-", dir=parent)
    try:
        for sub in ("include", "src", "cmake"):
            os.mkdir(os.path.join(staging, sub))
        shutil.copyfile(os.path.join(module_folder, header), os.path.join(staging, "include", header))
        for name in sources:
            shutil.copyfile(os.path.join(module_folder, name), os.path.join(staging, "src", name))
        library_meta = {k: v for k, v in meta.items() if k not in ("extension",)}
        with open(os.path.join(staging, "model.json"), "w", encoding="utf-8") as f:
            json.dump(library_meta, f, indent=1)
        if cuda:   # the kernels' declarations for CUDA C++ users
            with open(os.path.join(staging, "include", f"{prefix}.cuh"), "w", encoding="utf-8") as f:
                f.write(template("export/kernels.cuh.j2").render(
                    version=__version__, module=module, robot=c_comment_text(model.name),
                    functions=list(description.read(meta["functions"]).values())))
        data = dict(version=__version__, cmake_version=_cmake_version(__version__), module=module,
                    robot=c_comment_text(model.name), native=native, nq=model.nq, nv=model.nv,
                    gravity=[repr(float(g)) for g in model.gravity],
                    sources=[n for n in sources if n.endswith(".c")], functions=list(meta["functions"]),
                    cuda_sources=cuda, cuda_architectures=";".join(
                        a[3:] for a in cuda_architectures or DEFAULT_CUDA_ARCHITECTURES),
                    has_rnea="rnea" in meta["functions"], gcc_flags=" ".join(GCC_FLAGS),
                    quaternion_w=next((j.idx_q + 6 for j in model.joints if j.type == "free_flyer"), None))
        for template_name, target in (("CMakeLists.txt.j2", "CMakeLists.txt"),
                                      ("Config.cmake.in.j2", f"cmake/{prefix}Config.cmake.in"),
                                      ("pc.in.j2", f"{prefix}.pc.in"), ("README.md.j2", "README.md")):
            with open(os.path.join(staging, target), "w", encoding="utf-8") as f:
                f.write(template("export/" + template_name).render(**data))
        with open(os.path.join(staging, MARKER), "w") as f:
            f.write(f"rbdgen {__version__} export of {module}\n")
        if os.path.isdir(out_dir):
            old = tempfile.mkdtemp(prefix=".rbdgen-export-old-", dir=parent)
            os.rename(out_dir, os.path.join(old, "previous"))
            os.rename(staging, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _check_destination(out_dir):
    """BuildError (one line) for a destination that is a file, or a folder with other things
    in it than an earlier export."""
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise BuildError(f"'{out_dir}' exists and is not a folder; give a new or empty folder with -o")
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not os.path.isfile(os.path.join(out_dir, MARKER)):
        raise BuildError(f"'{out_dir}' is not empty and holds no rbdgen export; give a new or empty folder with -o")


def _cmake_version(version):
    """CMake's project VERSION takes numbers only: 0.1.0.dev3 -> 0.1.0."""
    numbers = re.match(r"\d+(\.\d+){0,3}", version)
    return numbers.group(0) if numbers else "0"
