"""rbdgen export (issue 17): the C library, built and installed with CMake, used from C and C++
through find_package and pkg-config, under AddressSanitizer and UndefinedBehaviorSanitizer,
and with gcc and clang at -Wall -Wextra -Werror -std=c99; every exported function, single and
batched, equals the reference on seeded states."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import rbdgen
from rbdgen.algorithms import constrained
from rbdgen.model.parameters import with_parameters
from rbdgen.table import description
from rbdgen.table import functions as fn_table
from rbdgen.codegen.cprinter import c_string
from rbdgen.errors import BuildError
from rbdgen.runtime.accuracy import double_values
from rbdgen.runtime.verify import random_inputs

from helpers import ROBOTS, robot_model, robot_path, tiny_urdf, write_urdf

REL_TOL = 1e-12      # the library against the reference (the issue's)
STATES = 3
WARNINGS = "-Wall -Wextra -Werror"

# Each robot with a small set of functions that covers every shape of C the generator writes:
# one program and programs in parts (rnea_derivatives), a frame's per-body dispatch, a scalar,
# inputs shared by a batch (dt, damping), declared contacts, model parameters (Panda's: one
# set per state in a batch, and one set for all).
EXPORTS = {
    "panda": dict(frame="panda_hand", contacts=None, parameters=["payload:panda_hand", "gravity"],
                  algorithms=["rnea", "nle", "crba", "aba", "minv", "rnea_derivatives", "frame_placement",
                              "frame_jacobian_world", "kinetic_energy", "integrate", "com"]),
    "solo12": dict(frame="FL_FOOT", contacts=["FL_FOOT:3d", "FR_FOOT:3d", "HL_FOOT:3d", "HR_FOOT:3d"],
                   algorithms=["crba", "aba", "integrate", "centroidal_map", "frame_jacobian_local",
                               "contact_dynamics", "impulse_dynamics", "contact_inertia"]),
}

needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")


def run(cmd, cwd=None, env=None):
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{result.stdout}\n{result.stderr}"
    return result


def cmake_build(source, build, install=None, cc=None, flags=WARNINGS, extra=()):
    env = dict(os.environ, **({"CC": cc} if cc else {}))
    run(["cmake", "-S", str(source), "-B", str(build), f"-DCMAKE_C_FLAGS={flags}", *extra,
         *([f"-DCMAKE_INSTALL_PREFIX={install}"] if install else [])], env=env)
    run(["cmake", "--build", str(build), "-j", "2"], env=env)
    if install:
        run(["cmake", "--install", str(build)], env=env)


class Export:
    """An exported, installed library and what a consumer needs to check it."""

    def __init__(self, robot, folder, prefix, model, meta, frame, contacts):
        self.robot, self.folder, self.prefix, self.model, self.meta = robot, folder, prefix, model, meta
        self.module, self.frame, self.contacts = meta["module"], frame, contacts
        self.inputs = random_inputs(model, np.random.default_rng(17), STATES)
        placement = model.frame(frame)
        from rbdgen.algorithms.frames import placement_entries
        self.inputs["placement"] = np.tile(np.array(placement_entries(placement.placement), dtype=float), (STATES, 1))
        self.body = placement.body

    def functions(self):
        """(name, description) of every function the export's model.json describes."""
        return list(description.read(self.meta["functions"]).items())

    def driver(self):
        """A C program (also valid C++) that calls every function on the states of inputs.bin,
        one by one and then as a batch on two threads, and writes the outputs to outputs.bin."""
        m = self.module
        lines = ["#include <stdio.h>", "#include <stdlib.h>", f'#include "rbdgen_{m}.h"', "",
                 "static FILE *in, *out;",
                 "static void take(double *x, size_t n) { if (fread(x, sizeof(double), n, in) != n) exit(3); }",
                 "static void give(const double *x, size_t n) { if (fwrite(x, sizeof(double), n, out) != n) exit(4); }",
                 "", "int main(int argc, char **argv)", "{", "    long body;", "    double placement[12];",
                 "    if (argc != 3 || !(in = fopen(argv[1], \"rb\")) || !(out = fopen(argv[2], \"wb\")))",
                 "        return 2;",
                 f"    if (rbdgen_{m}_frame({c_string(self.frame)}, &body, placement) < 0 || body != {self.body})",
                 "        return 5;"]
        for name, d in self.functions():
            size = d.size
            args = [(port.name, port.size) for port in d.inputs if port.role != description.PLACEMENT]
            lines.append(f"    {{   /* {name} */")
            for a, s in args:
                lines.append(f"        static double {a}[{s}], {a}_n[{STATES * s}];")
            lines.append(f"        static double o[{size}], o_n[{STATES * size}];")
            call = ", ".join(d.names)
            lead = "body, " if d.per_body else ""
            lines.append(f"        for (int k = 0; k < {STATES}; ++k) {{")
            lines += [f"            take({a}, {s});" for a, s in args]
            lines.append(f"            rbdgen_{m}_{name}({lead}{call}, o);")
            lines.append(f"            give(o, {size});")
            lines.append("        }")
            for port in d.inputs:
                if port.role != description.PLACEMENT:
                    count = port.size if port.shared else STATES * port.size
                    lines.append(f"        take({port.name}_n, {count});")
            batch_call = ", ".join(port.name if port.role == description.PLACEMENT else f"{port.name}_n, 0" if port.broadcast
                                   else f"{port.name}_n" for port in d.inputs)
            lines.append(f"        rbdgen_{m}_{name}_batch({STATES}, 2, {lead}{batch_call}, o_n);")
            lines.append(f"        give(o_n, {STATES * size});")
            if any(port.broadcast for port in d.inputs):   # the last state's params for all
                one_set = ", ".join(port.name if port.role == description.PLACEMENT else f"{port.name}, 1" if port.broadcast
                                    else f"{port.name}_n" for port in d.inputs)
                lines.append(f"        rbdgen_{m}_{name}_batch({STATES}, 2, {lead}{one_set}, o_n);")
                lines.append(f"        give(o_n, {STATES * size});")
            lines.append("    }")
        lines += ["    fclose(in);", "    return fclose(out) == 0 ? 0 : 6;", "}", ""]
        return "\n".join(lines)

    def write_inputs(self, path):
        chunks = []
        for _, d in self.functions():
            ports = [port for port in d.inputs if port.role != description.PLACEMENT]
            chunks += [self.inputs[port.name][k] for k in range(STATES) for port in ports]
            chunks += [self.inputs[port.name][0] if port.shared else self.inputs[port.name].ravel() for port in ports]
        np.concatenate(chunks).astype(np.float64).tofile(path)

    def check_outputs(self, path, what):
        got = np.fromfile(path, dtype=np.float64)
        offset = 0
        for name, d in self.functions():
            spec = fn_table.lookup(name, self.contacts)
            size = d.size
            inputs = {a: self.inputs[a] for a in spec.arguments(self.model)}
            expected = {label: double_values(self.model, spec, inputs, self.body if spec.per_body else None)
                        .reshape(STATES, size) for label in ("single", "batch")}
            if "params" in inputs:   # then the batch with the last state's params for every state
                inputs["params"] = np.tile(inputs["params"][-1], (STATES, 1))
                expected["shared"] = double_values(self.model, spec, inputs, self.body if spec.per_body else None
                                                   ).reshape(STATES, size)
            for label, expected in expected.items():
                actual = got[offset:offset + STATES * size].reshape(STATES, size)
                offset += STATES * size
                scale = max(1.0, np.abs(expected).max())
                err = np.abs(actual - expected).max()
                assert err <= REL_TOL * scale, f"{what}: {name} ({label}) differs by {err:.2e} (scale {scale:.2e})"
        assert offset == got.size, f"{what}: {got.size} values written, {offset} expected"

    def run_consumer(self, executable, tmp, what, env=None):
        inputs, outputs = os.path.join(tmp, "inputs.bin"), os.path.join(tmp, "outputs.bin")
        self.write_inputs(inputs)
        run([executable, inputs, outputs], env=env)
        self.check_outputs(outputs, what)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """robot -> Export: exported once, built with gcc at -Wall -Wextra -Werror and installed."""
    made = {}

    def get(robot):
        if robot not in made:
            options = EXPORTS[robot]
            root = tmp_path_factory.mktemp(f"export_{robot}")
            folder = rbdgen.export(robot_path(robot), str(root / "lib"), floating_base=ROBOTS[robot][1],
                                   algorithms=options["algorithms"], contacts=options["contacts"],
                                   parameters=options.get("parameters", ()))
            cmake_build(folder, root / "build", install=root / "prefix", cc="gcc")
            with open(os.path.join(folder, "model.json"), encoding="utf-8") as f:
                meta = json.load(f)
            model = with_parameters(robot_model(robot), options.get("parameters", ()))
            contacts = constrained.parse_contacts(model, options["contacts"] or ())
            made[robot] = Export(robot, folder, str(root / "prefix"), model, meta, options["frame"], contacts)
        return made[robot]

    return get


def consumer_project(tmp, export, language, target):
    """A CMake project that finds the installed package and builds the driver."""
    src = tmp / f"consumer_{language}"
    src.mkdir()
    ext = "c" if language == "C" else "cpp"
    (src / f"driver.{ext}").write_text(export.driver())
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.15)\n"
        f"project(consumer LANGUAGES {'C' if language == 'C' else 'CXX'})\n"
        f"find_package(rbdgen_{export.module} REQUIRED)\n"
        f"add_executable(driver driver.{ext})\n"
        f"target_link_libraries(driver PRIVATE {target})\n")
    build = tmp / f"consumer_{language}_build"
    cmake_build(src, build, extra=[f"-DCMAKE_PREFIX_PATH={export.prefix}",
                                   *([f"-DCMAKE_CXX_FLAGS={WARNINGS}"] if language == "CXX" else [])])
    return str(build / "driver")


@needs_cmake
@pytest.mark.parametrize("robot", list(EXPORTS))
def test_c_program_through_find_package(exported, tmp_path, robot):
    export = exported(robot)
    export.run_consumer(consumer_project(tmp_path, export, "C", f"rbdgen::{export.module}"), str(tmp_path),
                        f"{robot}, C, shared library")


@needs_cmake
@pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler")
@pytest.mark.parametrize("robot", list(EXPORTS))
def test_cxx_program_through_find_package_static(exported, tmp_path, robot):
    export = exported(robot)
    export.run_consumer(consumer_project(tmp_path, export, "CXX", f"rbdgen::{export.module}_static"),
                        str(tmp_path), f"{robot}, C++, static library")


@needs_cmake
@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="pkg-config is not installed")
def test_c_program_through_pkg_config(exported, tmp_path):
    export = exported("panda")
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(export.prefix, "lib", "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", f"rbdgen_{export.module}"], env=env).stdout.split()
    (tmp_path / "driver.c").write_text(export.driver())
    executable = str(tmp_path / "driver")
    run(["cc", "-std=c99", *WARNINGS.split(), str(tmp_path / "driver.c"), *flags, "-o", executable])
    env["LD_LIBRARY_PATH"] = os.path.join(export.prefix, "lib")
    export.run_consumer(executable, str(tmp_path), "panda, pkg-config", env=env)


@needs_cmake
@pytest.mark.parametrize("robot", list(EXPORTS))
def test_sanitizers(exported, tmp_path, robot):
    """The library's sources and the driver under AddressSanitizer and UndefinedBehaviorSanitizer:
    no out-of-bounds access, no undefined behaviour on any function or batch."""
    export = exported(robot)
    (tmp_path / "driver.c").write_text(export.driver())
    sources = [os.path.join(export.folder, "src", n) for n in sorted(os.listdir(os.path.join(export.folder, "src")))
               if n.endswith(".c")]
    executable = str(tmp_path / "driver")
    run(["cc", "-std=c99", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
         "-fno-omit-frame-pointer", "-fopenmp", "-I", os.path.join(export.folder, "include"),
         "-I", os.path.join(export.folder, "src"), str(tmp_path / "driver.c"), *sources, "-lm", "-o", executable])
    # libgomp's thread pool is left to the OS at exit: not a leak of the generated code
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    export.run_consumer(executable, str(tmp_path), f"{robot}, sanitizers", env=env)


CLANG = shutil.which("clang")


@needs_cmake
@pytest.mark.skipif(CLANG is None and not os.environ.get("RBDGEN_REQUIRE_CLANG"),
                    reason="clang is not installed (CI installs it and sets RBDGEN_REQUIRE_CLANG)")
@pytest.mark.parametrize("robot", list(EXPORTS))
def test_clang_builds_without_warnings(exported, tmp_path, robot):
    assert CLANG, "RBDGEN_REQUIRE_CLANG is set and clang is not installed"
    export = exported(robot)
    cmake_build(export.folder, tmp_path / "build", cc=CLANG, flags=f"{WARNINGS} -Wpedantic")


@needs_cmake
def test_names_from_the_urdf_reach_c_escaped(tmp_path):
    """A robot, link and joint named to break out of C comments and strings: the library builds
    at -Werror, and the frame is found by its exact name."""
    nasty = 'tip*/ "x" ??/ \\ é'
    path = write_urdf(tmp_path, tiny_urdf(robot='bot*/ #include "evil.h"', links=("base", "l1", "l2", nasty),
                                          joints=("j1 */", 'j2"', "tip_joint")))
    folder = rbdgen.export(path, str(tmp_path / "lib"), algorithms=["rnea", "frame_placement"])
    cmake_build(folder, tmp_path / "build", install=tmp_path / "prefix", cc="gcc", flags=f"{WARNINGS} -Wpedantic")
    model = rbdgen.load_urdf(path)
    with open(os.path.join(folder, "model.json"), encoding="utf-8") as f:
        meta = json.load(f)
    export = Export("nasty", folder, str(tmp_path / "prefix"), model, meta, nasty, [])
    export.run_consumer(consumer_project(tmp_path, export, "C", f"rbdgen::{export.module}"), str(tmp_path),
                        "escaped names")


def test_export_refuses_a_folder_of_something_else(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "notes.txt").write_text("mine")
    with pytest.raises(BuildError, match="not empty and holds no rbdgen export"):
        rbdgen.export(robot_path("ur5"), str(tmp_path / "lib"), algorithms=["rnea"])
    assert (tmp_path / "lib" / "notes.txt").read_text() == "mine"


def test_export_replaces_an_earlier_export(tmp_path):
    path = write_urdf(tmp_path, tiny_urdf())
    lib = str(tmp_path / "lib")
    rbdgen.export(path, lib, algorithms=["rnea", "crba"], module_dir=str(tmp_path / "gen"))
    rbdgen.export(path, lib, algorithms=["gravity"], module_dir=str(tmp_path / "gen"))
    assert sorted(os.listdir(os.path.join(lib, "src"))) == [
        "rbdgen_tiny_batch.c", "rbdgen_tiny_casadi.c", "rbdgen_tiny_casadi_api.h", "rbdgen_tiny_gravity.c",
        "rbdgen_tiny_info.c", "rbdgen_tiny_kernels.h"]
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".rbdgen-export")]


def test_cli_export(tmp_path):
    path = write_urdf(tmp_path, tiny_urdf())
    result = subprocess.run([sys.executable, "-m", "rbdgen.cli", "export", path, "-o", str(tmp_path / "lib"),
                             "--algorithms", "rnea", "--native"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "exported" in result.stdout
    with open(tmp_path / "lib" / "CMakeLists.txt") as f:
        assert 'option(RBDGEN_NATIVE "Compile for this machine\'s CPU (-march=native): faster here, may not run ' \
               'elsewhere" ON)' in f.read()


def test_casadi_loads_the_installed_library(exported):
    """The installed shared library is a CasADi external-function library as well."""
    casadi = pytest.importorskip("casadi")
    export = exported("panda")
    library = next(os.path.join(folder, name) for folder, _, names in os.walk(export.prefix) for name in names
                   if name.startswith(f"librbdgen_{export.meta['module']}.so"))
    model = export.model
    x = random_inputs(model, np.random.default_rng(4), 1)
    for name in ("rnea", "crba"):
        spec = fn_table.lookup(name, [])
        f = casadi.external(f"{export.meta['module']}_{name}", library)
        got = np.array(f(*(x[n][0] for n in spec.arguments(model))))   # params last
        want = double_values(model, spec, {n: x[n] for n in spec.arguments(model)})[0]
        assert np.abs(got.reshape(want.shape) - want).max() <= 1e-12 * max(1.0, np.abs(want).max()), name


needs_nvcc = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("nvcc") is None,
                                reason="the CUDA target needs cmake and nvcc (CUDA's toolkit)")

CUDA_DRIVER = """#include <cstdio>
#include "rbdgen_ur5.cuh"

int main()
{
    const long n = 1000;
    double *q, *v, *a, *tau;
    if (cudaMalloc(&q, 4 * n * 6 * sizeof(double)) != cudaSuccess) {
        std::printf("no GPU\\n");
        return 0;
    }
    v = q + n * 6; a = v + n * 6; tau = a + n * 6;
    rbdgen_ur5_rnea_kernel<<<(n + 127) / 128, 128>>>(n, q, v, a, tau);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
"""


@needs_nvcc
def test_cuda_kernels_through_find_package(tmp_path):
    """rbdgen export --cuda-arch: nvcc builds the kernels' library from the module's .cu files,
    and a CUDA C++ program that launches one, through find_package(rbdgen_ur5) and
    rbdgen_ur5.cuh, compiles and links (it needs no GPU to be built)."""
    folder = rbdgen.export(robot_path("ur5"), str(tmp_path / "lib"), algorithms=["rnea", "aba", "frame_placement"],
                           cuda_arch=["sm_80"])
    assert os.path.isfile(os.path.join(folder, "include", "rbdgen_ur5.cuh"))
    cmake_build(folder, tmp_path / "build", install=tmp_path / "prefix", cc="gcc")
    src = tmp_path / "consumer_cuda"
    src.mkdir()
    (src / "driver.cu").write_text(CUDA_DRIVER)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\n"
        "project(consumer LANGUAGES CXX CUDA)\n"
        "set(CMAKE_CUDA_ARCHITECTURES 80)\n"
        "find_package(rbdgen_ur5 REQUIRED)\n"
        "add_executable(driver driver.cu)\n"
        "target_link_libraries(driver PRIVATE rbdgen::ur5_cuda)\n")
    cmake_build(src, tmp_path / "consumer_cuda_build", extra=[f"-DCMAKE_PREFIX_PATH={tmp_path / 'prefix'}"])
    assert os.path.isfile(tmp_path / "consumer_cuda_build" / "driver")
