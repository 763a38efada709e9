"""The CUDA dialect (issue 47), where there is no GPU: the .cu files compiled as host C (their
qualifiers are macros; a kernel is a loop over the states) equal the C module entry by entry,
bit for bit where the operation order is the same; NVRTC compiles them for sm_80 and sm_90; the
errors of device calls. Tests that launch kernels are marked `gpu` and skipped without one
(benchmarks/gpu_check.sh runs them where a GPU is lent)."""

import ctypes
import os
import subprocess
import warnings

import numpy as np
import pytest

from rbdgen.bindings import cuda
from rbdgen.codegen.compiler import c_compiler, compile_flags
from rbdgen.runtime.verify import random_inputs

STATES = 9   # more than one vector of lanes, and a tail
SEED = 47

gpu = pytest.mark.skipif(not cuda.present_architectures(), reason="no CUDA GPU")


_HOST_LIBRARIES = {}   # (module, names) -> its library: several tests run a bridge module's kernels


def host_library(module, folder, names):
    """The CUDA files of `names` compiled as host C (with the module's compiler and flags), once
    a session."""
    key = (module.__name__, tuple(names))
    if key not in _HOST_LIBRARIES:
        files = [os.path.join(module._HERE, meta_cname(module, n) + ".cu") for n in names]
        library = os.path.join(folder, f"host_{module._META['module']}.so")
        subprocess.run([c_compiler(), *compile_flags(True), "-x", "c", "-shared", "-o", library, *files],
                       check=True, capture_output=True)
        _HOST_LIBRARIES[key] = ctypes.CDLL(library)
    return _HOST_LIBRARIES[key]


def meta_cname(module, name):
    return module._DESCRIPTIONS[name].cname


def inputs_of(module, model, d, rng, count):
    """Every input of description `d` for `count` states, as the C batch takes them."""
    states = random_inputs(model, rng, count)
    values = []
    for port in d.inputs:
        if port.per_state:
            values.append(np.ascontiguousarray(states[port.name]) if port.name in states
                          else rng.normal(size=(count, port.size)))
        elif port.broadcast:
            values.append(np.asarray(module._PARAMETERS.nominal, dtype=float))
        elif port.role == "placement":
            values.append(np.array([1.0, 0, 0, 0, 1, 0, 0, 0, 1, 0.01, -0.02, 0.03]))
        else:
            values.append(np.full(port.size, port.default if port.default is not None else 0.3))
    return values


def host_kernel(library, d, values, count, body=None):
    out = np.full((count, d.size), np.nan)
    arguments = [ctypes.c_long(count)] + ([ctypes.c_long(body)] if d.per_body else [])
    for port, x in zip(d.inputs, values):
        arguments.append(x.ctypes.data_as(ctypes.c_void_p))
        if not port.per_state:
            arguments.append(ctypes.c_int(1))
    getattr(library, d.cname + "_kernel")(*arguments, out.ctypes.data_as(ctypes.c_void_p))
    return out


@pytest.mark.parametrize("robot", ["ur5", "panda", "solo12"])
def test_cuda_dialect_on_the_host_equals_the_c_module(bridge_modules, tmp_path, robot):
    """Every function of the bridges' modules (joint space, derivatives, solves, a declared
    contact, the frame functions by body): the .cu file's kernel, compiled as host C, against
    the C module's batch, bit for bit: the same statements in the same parts, and the solves'
    operations in the panels' order, column by column."""
    module, model = bridge_modules[robot]
    names = list(module._DESCRIPTIONS)
    library = host_library(module, str(tmp_path), names)
    rng = np.random.default_rng(SEED)
    bodies = sorted({body for body, _ in module._FRAME_TABLE.values()})
    for name in names:
        d = module._DESCRIPTIONS[name]
        function = module._FUNCTIONS.table[name]
        values = inputs_of(module, model, d, rng, STATES)
        for body in (bodies if d.per_body else [None]):
            expected = np.asarray(function(body, values, None, 1)).reshape(STATES, -1) if not function.parts else \
                np.concatenate([np.reshape(p, (STATES, -1)) for p in function(body, values, None, 1)], axis=1)
            actual = host_kernel(library, d, values, STATES, body)
            assert np.array_equal(actual, expected), f"{robot} {name} body {body}: " \
                f"{np.abs(actual - expected).max():.2e} off"


@pytest.mark.skipif(not cuda.nvrtc_available(), reason="NVRTC is not installed (pip install 'rbdgen[cuda]')")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvrtc_compiles_the_cuda_dialect(bridge_modules, arch):
    """The joint-space functions, a solve, a function of a frame and a declared contact's
    dynamics compile for the GPUs of the issue (A100, H100/H200): a cubin with its kernel."""
    module, _ = bridge_modules["panda"]
    for name in ("rnea", "aba", "minv", "aba_derivatives", "frame_jacobian_local_world_aligned",
                 "contact_dynamics"):
        cname = meta_cname(module, name)
        cubin = cuda.compile_module_function(module._HERE, module._META["module"], cname, arch)
        assert cubin[:4] == b"\x7fELF" and (cname + "_kernel").encode() in cubin, name


@pytest.mark.skipif(not cuda.nvrtc_available(), reason="NVRTC is not installed (pip install 'rbdgen[cuda]')")
def test_build_compiles_the_kernels_among_the_c_jobs(tmp_path):
    """--cuda-arch: every function's cubin, made by NVRTC among the build's jobs, is kept in
    cuda/<arch>/ and is what NVRTC makes of the module's .cu file; a later build that adds a
    function compiles its kernels alone, the others' from the per-function cache. A long
    function's C compiles in a job of its own, beside its NVRTC job (the build verifies the
    module it links)."""
    import rbdgen
    from helpers import robot_path
    for attempt in range(2):
        said = []
        module = rbdgen.build(robot_path("ur5"), str(tmp_path), algorithms=["rnea", "aba_derivatives", "frame_placement"]
                              + ["crba"] * attempt, cuda_arch=["sm_80"], progress=said.append)
        compiled = [line for line in said if "compiled the CUDA kernels for sm_80" in line]
        assert len(compiled) == 1 and compiled[0].endswith("; 3 of 4 from the cache)" if attempt else "both)"), said
        if not attempt:
            assert any(line.startswith("  aba_derivatives: ") and line.endswith("compiled by a job of its own)")
                       for line in said), said
            assert any(line.startswith("  compiled rbdgen_ur5_aba_derivatives.o") for line in said), said
        for d in module._DESCRIPTIONS.values():
            with open(os.path.join(module._HERE, "cuda", "sm_80", d.cname + ".cubin"), "rb") as f:
                cubin = f.read()
            assert cubin[:4] == b"\x7fELF" and (d.cname + "_kernel").encode() in cubin, d.name
            assert cubin == cuda.compile_module_function(module._HERE, module._META["module"], d.cname, "sm_80")


class HostDevice(np.ndarray):
    """A NumPy array standing for a GPU array, so that a module's device path (bindings/device.py:
    marshalling, shared inputs, parameters, out=, parts) runs on the CPU, its kernels compiled as
    host C."""


class _HostKind:
    """bindings/device.py's interface of an array kind (as _Torch, _CuPy), over HostDevice arrays."""

    def __init__(self, x):
        pass

    ordinal = stream = staticmethod(lambda: 0)
    is_float64 = staticmethod(lambda x: x.dtype == np.float64)
    dtype = staticmethod(lambda x: str(x.dtype))
    contiguous = staticmethod(lambda x: x if x.flags.c_contiguous else np.ascontiguousarray(x).view(HostDevice))
    pointer = staticmethod(lambda x: x.ctypes.data)
    empty = staticmethod(lambda shape: np.empty(shape).view(HostDevice))
    from_host = staticmethod(lambda value: np.asarray(value, dtype=float).view(HostDevice))
    same = staticmethod(lambda x: isinstance(x, HostDevice))
    where = staticmethod(lambda x: "the device" if isinstance(x, HostDevice) else "the host")
    unclear = staticmethod(lambda p, clear: ~(p > clear * np.abs(p).max(axis=-1, keepdims=True)).all(axis=-1))
    blank = staticmethod(lambda rows, bad: np.copyto(rows, np.nan, where=bad[:, None]))


class _HostKernels:
    """A module's kernels (bindings/cuda.Kernels) run by the CUDA files compiled as host C."""
    built = True

    def __init__(self, library):
        self.library = library

    def launch(self, device, cname, stream, arguments, n):
        getattr(self.library, cname + "_kernel")(ctypes.c_long(n), *arguments)


@pytest.mark.parametrize("robot", ["ur5", "solo12"])
def test_device_path_on_the_host(bridge_modules, tmp_path, monkeypatch, robot):
    """The module's functions given 'device' arrays: what bindings/device.py hands the kernels
    (pointers, the body, shared flags, settings and the nominal parameters copied over, out=,
    the parts of the result) is checked on the CPU, the kernels run as host C: equal to the C
    module, one state and a batch."""
    import sys
    module, model = bridge_modules[robot]
    library = host_library(module, str(tmp_path), list(module._DESCRIPTIONS))
    device = sys.modules[module.__name__ + "._device"]
    monkeypatch.setattr(device, "kind_of", lambda x: _HostKind(x) if isinstance(x, HostDevice) else None)
    monkeypatch.setattr(module._FUNCTIONS, "_kernels", _HostKernels(library))
    rng = np.random.default_rng(SEED)
    bodies = sorted({body for body, _ in module._FRAME_TABLE.values()})
    for name, d in module._DESCRIPTIONS.items():
        function = module._FUNCTIONS.table[name]
        for count in (1, STATES):
            values = inputs_of(module, model, d, rng, count)
            for body in (bodies[-1:] if d.per_body else [None]):
                expected = function(body, values, None, 1)
                states = [x.view(HostDevice) if p.per_state else x for x, p in zip(values, d.inputs)]
                if count == 1:   # one state: (n,) arrays
                    states = [x[0] if p.per_state else x for x, p in zip(states, d.inputs)]
                    expected = tuple(e[0] for e in expected) if function.parts else expected[0]
                actual = function(body, states, None, 0)
                for e, a in zip(expected if function.parts else [expected], actual if function.parts else [actual]):
                    assert isinstance(a, HostDevice) and np.array_equal(np.asarray(a), np.asarray(e)), name
        out = np.empty((STATES,) + (() if function.scalar else d.shape)).view(HostDevice)
        if not d.per_body and not function.parts:
            values = inputs_of(module, model, d, rng, STATES)
            states = [x.view(HostDevice) if p.per_state else x for x, p in zip(values, d.inputs)]
            assert function(None, states, out, 0) is out, name
            assert np.array_equal(np.asarray(out), function(None, values, None, 1)), name
    q = np.zeros((2, model.nq)).view(HostDevice)
    with pytest.raises(TypeError, match="v is on the host"):
        module.rnea(q, np.zeros((2, model.nv)), np.zeros((2, model.nv)).view(HostDevice))
    with pytest.raises(TypeError, match="float32"):
        module.rnea(q, q[:, :model.nv].astype(np.float32).view(HostDevice), q[:, :model.nv].copy())


def test_torch_device_path_on_the_host(bridge_modules, tmp_path, monkeypatch):
    """module.torch's ops on 'CUDA' tensors (CPU tensors standing for them: the PyTorch kind of
    bindings/device.py, its stream and device aside): what the op hands the kernels, and the
    (states, size) result it returns, equal the C module on every function of Panda (parts, a
    declared contact's pivots, settings given as numbers, frames by name); gradcheck through it."""
    import sys
    torch = pytest.importorskip("torch")
    module, model = bridge_modules["panda"]
    library = host_library(module, str(tmp_path), list(module._DESCRIPTIONS))
    module.torch("rnea")   # (loads the module's _torch)
    device, ops = sys.modules[module.__name__ + "._device"], sys.modules[module.__name__ + "._torch"]

    class Kind(device._Torch):   # (a CPU tensor's device has no ordinal or stream)
        ordinal = stream = staticmethod(lambda: 0)
    monkeypatch.setattr(device, "kind_of", lambda x: Kind(x) if isinstance(x, torch.Tensor) else None)
    monkeypatch.setattr(module._FUNCTIONS, "_kernels", _HostKernels(library))
    run = ops._run
    monkeypatch.setattr(ops, "_run", lambda function, d, args, entry: run(function, d, args, None))
    rng = np.random.default_rng(SEED)
    frame = module.frames[-1]
    body, placement = module._frame(frame)
    for name, d in module._DESCRIPTIONS.items():
        function = module._FUNCTIONS.table[name]
        full = [placement if d.per_body and p.role == "placement" else x
                for x, p in zip(inputs_of(module, model, d, rng, STATES), d.inputs)]
        expected = function(body if d.per_body else None, full, None, 1)
        values = [frame if d.per_body and p.role == "placement" else torch.from_numpy(x) if p.per_state else x
                  for x, p in zip(full, d.inputs) if not p.broadcast]   # (settings as numbers)
        for _ in range(2):   # (the second call: the settings' tensors made by the first)
            actual = module.torch(name)(*values)
            for e, a in zip(expected if d.parts else [expected], actual if d.parts else [actual]):
                assert np.array_equal(a.numpy(), np.asarray(e)), name
    assert 0 < len(module._TORCH_OPERATORS["operators"].constants) <= 8   # (a placement and a few settings)
    q, v, a = (torch.tensor(rng.normal(size=(2, model.nv))) for _ in range(3))
    v.requires_grad_(), a.requires_grad_()   # (the backward's derivative functions through the device path too)
    for name in ("rnea", "aba"):
        op = module.torch(name)
        assert torch.autograd.gradcheck(lambda v, a: op(q, v, a), (v, a), eps=1e-6, atol=1e-5, rtol=1e-4), name
    with pytest.raises(TypeError, match="dt is float32"):   # (a setting on the host, as a state on the GPU is)
        module.torch("integrate")(q.detach(), v.detach(), torch.tensor([0.1], dtype=torch.float32))
    zero_d = module.torch("integrate")(q.detach(), v.detach(), torch.tensor(0.1, dtype=torch.float64))   # (as on the CPU)
    assert np.array_equal(zero_d.numpy(), module.integrate(q.detach().numpy(), v.detach().numpy(), 0.1))
    with pytest.raises(TypeError, match="no model parameters"):
        module.torch("rnea")(q, v, a, params=torch.zeros(3, dtype=torch.float64))
    rows = torch.ones((3, 4), dtype=torch.float64)   # a redundant solve's states: NaN by a mask, the pivots kept
    Kind(rows).blank(rows[:, :3], torch.tensor([True, False, True]))
    assert torch.isnan(rows[[0, 2], :3]).all() and (rows[1] == 1).all() and (rows[:, 3] == 1).all()


def test_device_path_with_parameters_per_state(tmp_path, monkeypatch):
    """Domain randomization's call: model parameters (a payload) nominal, one set for the batch
    and one set per state, through the device path (host-run, as above): equal to the C."""
    import sys
    import rbdgen
    from helpers import robot_path
    module = rbdgen.build(robot_path("ur5"), str(tmp_path), algorithms=[
        "rnea", "aba", "frame_placement", "frame_jacobian_local_world_aligned", "frame_velocity_local_world_aligned",
        "frame_classical_acceleration_local_world_aligned"], parameters=["payload:wrist_3_link"], cuda=True)
    library = host_library(module, str(tmp_path), list(module._DESCRIPTIONS))
    device = sys.modules[module.__name__ + "._device"]
    monkeypatch.setattr(device, "kind_of", lambda x: _HostKind(x) if isinstance(x, HostDevice) else None)
    monkeypatch.setattr(module._FUNCTIONS, "_kernels", _HostKernels(library))
    rng = np.random.default_rng(SEED)
    q, v, a = rng.normal(size=(3, STATES, 6))
    nominal = np.asarray(module._PARAMETERS.nominal)
    per_state = nominal * (1 + 0.1 * rng.random((STATES, nominal.size)))
    on = lambda x: x.view(HostDevice)
    for params in (None, nominal * 1.2, per_state):
        for name in ("rnea", "aba"):
            expected = getattr(module, name)(q, v, a, params=params)
            given = params if params is None or params.ndim == 1 else on(params)
            actual = getattr(module, name)(on(q), on(v), on(a), params=given)
            assert isinstance(actual, HostDevice) and np.array_equal(np.asarray(actual), expected), name
        frame = module.frames[-1]
        expected = module.frame_placement(q, frame, params=params)
        actual = module.frame_placement(on(q), frame, params=params if params is None or params.ndim == 1 else on(params))
        assert all(np.array_equal(np.asarray(x), y) for x, y in zip(actual, expected))
    # the points: frame functions at a point, their rows sliced (point_gamma: q-ddot zero on the device)
    point = [0.01, -0.02, 0.03]
    for name, row in module._META["points"].items():
        host = [dict(q=q, v=v, a=a)[s] for s in row["states"]]
        expected = getattr(module, name)(*host, frame, point)
        actual = getattr(module, name)(*map(on, host), frame, point)
        assert isinstance(actual, HostDevice) and np.array_equal(np.asarray(actual), expected), name
        out = np.empty_like(expected).view(HostDevice)
        assert getattr(module, name)(*map(on, host), frame, point, out=out) is out and np.array_equal(out, expected)


def test_device_path_marks_redundant_loops(tmp_path, monkeypatch):
    """A planar four-bar closed by a ball joint (redundant loops): on the host the module
    refuses the numbers; on the device (host-run) the states' results are NaN, the pivots kept;
    damped, they equal the C."""
    import sys
    import rbdgen
    from test_sdf import four_bar
    path = tmp_path / "four_bar.sdf"
    path.write_text(four_bar())
    module = rbdgen.build(str(path), out_dir=str(tmp_path), algorithms=["constrained_dynamics"], cuda=True)
    library = host_library(module, str(tmp_path), ["constrained_dynamics"])
    device = sys.modules[module.__name__ + "._device"]
    monkeypatch.setattr(device, "kind_of", lambda x: _HostKind(x) if isinstance(x, HostDevice) else None)
    monkeypatch.setattr(module._FUNCTIONS, "_kernels", _HostKernels(library))
    q, v, tau = (np.tile(x, (3, 1)).view(HostDevice) for x in ([0.1, -0.2, 0.3], [0.5, 0.1, -0.3], [0.2, 0.0, -0.1]))
    qdd, lam, pivots = module.constrained_dynamics(q, v, tau)
    assert np.isnan(np.asarray(qdd)).all() and np.isnan(np.asarray(lam)).all() and np.isfinite(np.asarray(pivots)).all()
    damped = module.constrained_dynamics(q, v, tau, damping=1e-8)
    expected = module.constrained_dynamics(np.asarray(q), np.asarray(v), np.asarray(tau), damping=1e-8)
    assert all(np.array_equal(np.asarray(x), y) for x, y in zip(damped, expected))


_LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)


def _host_launcher(module, library, target):
    """robot.jax's GPU branch (_jax_ffi.Launcher, rbdgen_jax_cuda_call) lowered for the CPU: a
    stand-in for cuLaunchKernel reads the kernel's arguments as the driver would (n, the body,
    each input's pointer and flag, out) and runs the kernel compiled as host C."""
    import sys
    ffi = sys.modules[module.__name__ + "._jax_ffi"]
    launcher = ffi.Launcher(module, ffi.handler("rbdgen_jax_cuda_call"), target, platform="cpu")
    by_handle = {k + 1: d for k, d in enumerate(module._DESCRIPTIONS.values())}
    handles = {d.cname: k for k, d in by_handle.items()}
    launches = []

    def launch(function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, stream, arguments, extra):
        d = by_handle[function]
        value = lambda k, kind: ctypes.cast(arguments[k], ctypes.POINTER(kind))[0]
        n, k = value(0, ctypes.c_long), 1
        passed = [ctypes.c_long(n)]
        if d.per_body:
            passed.append(ctypes.c_long(value(1, ctypes.c_long)))
            k = 2
        for port in d.inputs:
            passed.append(ctypes.c_void_p(value(k, ctypes.c_void_p)))
            k += 1
            if not port.per_state:
                passed.append(ctypes.c_int(value(k, ctypes.c_int)))
                k += 1
        passed.append(ctypes.c_void_p(value(k, ctypes.c_void_p)))
        launches.append((d.name, n, grid_x * block_x, stream, [p.value for p in passed if isinstance(p, ctypes.c_int)]))
        getattr(library, d.cname + "_kernel")(*passed)
        return 0

    class Kernels:
        built = True
        function = staticmethod(lambda ordinal, cname: (handles[cname], 64))

    launcher.ordinals, launcher.stream = [0], 0
    launcher.stub = _LAUNCH(launch)
    launcher.launch = ctypes.cast(launcher.stub, ctypes.c_void_p).value
    return launcher, Kernels(), launches


def test_jax_gpu_branch_on_the_host(bridge_modules, tmp_path, monkeypatch, request):
    """robot.jax on a GPU, without one: the CUDA platform's branch (one FFI result sliced into
    the parts, every input broadcast to the states with its flag 0) and its handler, lowered for
    the CPU with the kernels as host C, equal the C handler's results bit for bit: every function
    of Panda (a declared contact's parts and pivots, frame functions by body), under jit, vmap
    over a setting (integrate's dt per state) and jvp."""
    import sys
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    previous = jax.config.jax_default_device   # (where JAX has a GPU too: lowered for the CPU)
    jax.config.update("jax_default_device", jax.devices("cpu")[0])
    request.addfinalizer(lambda: jax.config.update("jax_default_device", previous))
    module, model = bridge_modules["panda"]
    library = host_library(module, str(tmp_path), list(module._DESCRIPTIONS))
    module.jax("rnea")   # imports the module's _jax
    bridges = sys.modules[module.__name__ + "._jax"]
    cpu, gpu = bridges.Bridge(module), bridges.Bridge(module)
    gpu.gpu, kernels, launches = _host_launcher(module, library, cpu.target + "_host_test")
    monkeypatch.setattr(module._FUNCTIONS, "_kernels", kernels)
    rng = np.random.default_rng(SEED)
    for name, d in module._DESCRIPTIONS.items():
        values = inputs_of(module, model, d, rng, 3)
        body = [max(body for body, _ in module._FRAME_TABLE.values())] if d.per_body else []
        expected = cpu.function(name)(*body, *values)
        actual = jax.jit(gpu.function(name), static_argnums=(0,) if d.per_body else ())(*body, *values)
        for e, a in zip(*(x if isinstance(x, tuple) else (x,) for x in (expected, actual))):
            assert a.shape == e.shape and np.array_equal(np.asarray(a), np.asarray(e)), name
        assert launches[-1][:3] == (name, 3, 64) and launches[-1][3] is None and not any(launches[-1][4]), name
    q, v = rng.normal(size=(2, 4, model.nq))
    dt = np.array([0.01, 0.02, 0.03, 0.04])
    integrate = [jax.vmap(bridge.make("integrate")) for bridge in (cpu, gpu)]
    assert np.array_equal(*(np.asarray(f(q, v, dt)) for f in integrate))
    assert len(set(np.asarray(integrate[1](q, v, dt))[:, 0] - q[:, 0])) == 4   # each state its own dt
    tau = rng.normal(size=(4, model.nv))
    tangents = [jax.jvp(bridge.make("aba"), (q, v, tau), (v, tau, q)) for bridge in (cpu, gpu)]
    assert all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(*tangents))
    # no kernels (built without CUDA, or NVRTC or the driver failed): the GPU's branch says why
    # when it runs, and not before (on a GPU machine the CPU's branch still runs)
    for kernels, why in ((type("Unbuilt", (), {"built": False})(), "built without CUDA"),
                         (type("Failing", (), {"built": True, "function": lambda self, ordinal, cname: (_ for _ in ()).throw(
                             sys.modules[module.__name__ + "._cuda"].CudaError("NVRTC could not compile it"))})(),
                          "NVRTC could not compile it")):
        monkeypatch.setattr(module._FUNCTIONS, "_kernels", kernels)
        gpu.gpu.tables.clear()
        gpu.gpu.reasons.clear()
        function = gpu.function("rnea")   # (made without an error)
        with pytest.raises(Exception, match=why):
            jax.block_until_ready(jax.jit(function)(q, v, tau))


class _FakeDeviceArray:
    """An array that says it lives on a GPU (__cuda_array_interface__), of no known kind."""
    __cuda_array_interface__ = {"shape": (6,), "typestr": "<f8", "data": (0, False), "version": 3}


class _DLPackDeviceArray:
    """An array that says through DLPack only that it lives on a GPU (kDLCUDA), and whose
    library would copy it to the host if asked."""
    def __dlpack_device__(self):
        return (2, 0)

    def __array__(self, dtype=None, copy=None):
        return np.ones(6)


def test_device_calls_refuse_in_one_line(bridge_modules):
    module, model = bridge_modules["ur5"]
    q = np.zeros(model.nq)
    for array in (_FakeDeviceArray(), _DLPackDeviceArray()):
        with pytest.raises(TypeError, match="PyTorch tensor, a CuPy array or a JAX array"):
            module.rnea(array, q, q)
    with pytest.raises(TypeError, match="v: a GPU array .* among host arrays"):
        module.rnea(q, _FakeDeviceArray(), q)
    if cuda.present_architectures():
        return
    # (the module's own copy of rbdgen.bindings.cuda raises its CudaError, a RuntimeError)
    with pytest.raises(RuntimeError, match="no CUDA GPU here"):
        module._FUNCTIONS.kernels().function(0, meta_cname(module, "rnea"))


def test_build_option_checks_the_architectures(tmp_path):
    from rbdgen.codegen.build import check_architectures
    from rbdgen.errors import BuildError
    assert check_architectures(["sm_90", "sm_80", "sm_90"]) == ["sm_80", "sm_90"]
    with pytest.raises(BuildError, match="sm_XY"):
        check_architectures(["hopper"])
    with pytest.raises(BuildError, match="give sm_90$"):   # (architecture-specific features: not used)
        check_architectures(["sm_90a"])
    if cuda.nvrtc_available():   # refused before the build, naming what NVRTC compiles for
        with pytest.raises(BuildError, match="does not compile for sm_35; it compiles for .*sm_90"):
            check_architectures(["sm_90", "sm_35"])
    assert check_architectures(["sm_35"], nvrtc=False) == ["sm_35"]   # (export: nvcc compiles, not NVRTC)
    from rbdgen.cli import main
    from helpers import robot_path
    # an empty --cuda-arch is not a build without CUDA
    assert main(["build", robot_path("ur5"), "-o", str(tmp_path), "--algorithms", "rnea", "--cuda-arch", ""]) == 2
    assert not os.path.exists(os.path.join(str(tmp_path), "ur5"))


def _close(name, actual, expected):
    scale = max(np.abs(expected).max(initial=0.0), 1.0)
    assert np.abs(actual - expected).max(initial=0.0) <= GPU_REL_TOL * scale, name


GPU_REL_TOL = 1e-12   # the GPU's FMA and sin/cos against the C: the issue's bound


def _on_the_gpu_as_in_c(module, model, label, params=None, kinds=None):
    """Every function of `module` on CUDA tensors (PyTorch), then CuPy and JAX arrays where
    installed (or `kinds`: functions that put a host array there), at 1 and 1 000 states,
    against the C batch (params: per state, (states, np))."""
    rng = np.random.default_rng(SEED)
    bodies = sorted({body for body, _ in module._FRAME_TABLE.values()})
    if kinds is None:
        torch = pytest.importorskip("torch")
        kinds = [lambda x: torch.tensor(x, device="cuda")]
        for name in ("cupy", "jax"):
            try:
                lib = __import__(name)
                kinds.append(lib.asarray if name == "cupy" else (lambda x, lib=lib: lib.device_put(x, lib.devices("gpu")[0])))
            except Exception:
                pass
    for name, d in module._DESCRIPTIONS.items():
        function = module._FUNCTIONS.table[name]
        for count in (1, 1000):
            values = inputs_of(module, model, d, rng, count)
            if params is not None:
                values = [params(count) if p.broadcast else x for x, p in zip(values, d.inputs)]
            for body in (bodies[:2] if d.per_body else [None]):
                flat = lambda r: np.concatenate([np.reshape(np.asarray(p), (count, -1)) for p in r], axis=1) \
                    if function.parts else np.reshape(np.asarray(r), (count, -1))
                expected = flat(function(body, values, None, 1))
                for kind in kinds:
                    device = [kind(x) if p.per_state or (p.broadcast and x.ndim == 2) else x
                              for x, p in zip(values, d.inputs)]
                    result = function(body, device, None, 0)
                    host = lambda x: x.cpu().numpy() if hasattr(x, "cpu") else (x.get() if hasattr(x, "get") else np.asarray(x))
                    actual = np.concatenate([host(p).reshape(count, -1) for p in result], axis=1) if function.parts \
                        else host(result).reshape(count, -1)
                    _close(f"{label} {name} ({count} states)", actual, expected)


@gpu
@pytest.mark.parametrize("robot", ["ur5", "panda", "solo12"])
def test_gpu_equals_the_c_module(bridge_modules, robot):
    """The bridges' modules: joint space, derivatives, solves, a declared contact, frames."""
    module, model = bridge_modules[robot]
    _on_the_gpu_as_in_c(module, model, robot)


@gpu
def test_gpu_torch_operator_gradcheck_and_a_million_states(bridge_modules):
    torch = pytest.importorskip("torch")
    module, model = bridge_modules["panda"]
    rng = np.random.default_rng(SEED)
    q, v, a = (torch.tensor(rng.normal(size=(3, model.nv)), device="cuda", requires_grad=True) for _ in range(3))
    f_ext = torch.tensor(rng.normal(size=(3, model.nv, 6)), device="cuda", requires_grad=True)
    for name in ("rnea", "aba"):
        op = module.torch(name)
        assert torch.autograd.gradcheck(lambda q, v, a: op(q, v, a), (q, v, a), eps=1e-6, atol=1e-5, rtol=1e-4), name
        assert torch.autograd.gradcheck(lambda v, a, f: op(q.detach(), v, a, f), (v, a, f_ext), eps=1e-6, atol=1e-5,
                                        rtol=1e-4), name   # (f_ext's rows through the bodies' Jacobians, on the GPU)
    dt = torch.tensor(0.1, dtype=torch.float64)   # a setting as a host scalar beside states on the GPU, as PyTorch allows
    step = module.torch("integrate")(q.detach(), v.detach(), dt)
    _close("integrate", step.cpu().numpy(), module.integrate(q.detach().cpu().numpy(), v.detach().cpu().numpy(), 0.1))
    count = 1 << 20
    q, v, a = (torch.tensor(rng.normal(size=(count, model.nv)), device="cuda") for _ in range(3))
    tau = module.torch("rnea")(q, v, a)
    picked = rng.choice(count, 1000, replace=False)
    expected = module.rnea(q.cpu().numpy()[picked], v.cpu().numpy()[picked], a.cpu().numpy()[picked])
    _close("rnea, a million states", tau.cpu().numpy()[picked], expected)


@gpu
def test_gpu_torch_calls_captured_in_a_cuda_graph(bridge_modules):
    """A loop's calls captured once in a CUDA graph (torch.cuda.graph, as torch.compile's
    reduce-overhead mode does): the launches are on PyTorch's capturing stream, settings and a
    frame given as numbers are tensors made before (by the warm-up call), a declared contact's
    redundancy check fills by a mask; replays with new states in the captured tensors equal the
    C batch."""
    torch = pytest.importorskip("torch")
    module, model = bridge_modules["panda"]
    rng = np.random.default_rng(SEED)
    q, v, a = (torch.zeros((64, model.nv), dtype=torch.float64, device="cuda") for _ in range(3))
    rnea, aba = module.torch("rnea"), module.torch("aba")
    contact, frame = module.torch("contact_dynamics"), module.torch("frame_jacobian_local_world_aligned")

    def step():
        tau = rnea(q, v, a)
        return tau, aba(q, v, tau), contact(q, v, tau, damping=0.0), frame(q, "panda_hand")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # (loads the kernels and makes the settings' tensors: neither in a capture)
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        results = step()
    for _ in range(2):
        values = [rng.normal(size=(64, model.nv)) for _ in range(3)]
        for tensor, x in zip((q, v, a), values):
            tensor.copy_(torch.from_numpy(x))
        graph.replay()
        torch.cuda.synchronize()
        tau, back, (qdd, forces), J = (r.cpu().numpy() if isinstance(r, torch.Tensor) else
                                       tuple(p.cpu().numpy() for p in r) for r in results)
        _close("rnea, replayed", tau, module.rnea(*values))
        _close("aba(rnea), replayed", back, values[2])
        expected = module.contact_dynamics(values[0], values[1], tau)
        for actual, e in zip((qdd, forces), expected, strict=True):
            _close("contact_dynamics, replayed", actual, e)
        _close("frame jacobian, replayed", J, module.frame_jacobian(values[0], "panda_hand", "local_world_aligned"))


@gpu
def test_gpu_jax_functions_under_jit_and_grad(bridge_modules):
    """robot.jax lowered for the GPU (rbdgen_jax_cuda_call on XLA's stream): every function of
    Panda under jit on 1 000 states on the GPU, against the C batch; a frame function by body;
    grad through aba on the GPU against the same on the CPU."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    try:
        device = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX has no GPU backend here")
    module, model = bridge_modules["panda"]
    module.jax("rnea")
    bridge = module._JAX_BRIDGE["bridge"]
    assert bridge.gpu is not None
    rng = np.random.default_rng(SEED)
    body = max(body for body, _ in module._FRAME_TABLE.values())
    for name, d in module._DESCRIPTIONS.items():
        function = module._FUNCTIONS.table[name]
        values = inputs_of(module, model, d, rng, 1000)
        lead = [body] if d.per_body else []
        result = jax.jit(bridge.function(name), static_argnums=(0,) if d.per_body else ())(
            *lead, *[jax.device_put(x, device) for x in values])
        result = result if isinstance(result, tuple) else (result,)
        assert all(r.devices() == {device} for r in result), name
        expected = function(lead[0] if lead else None, values, None, 1)
        for a, e in zip(result, expected if function.parts else (expected,)):
            _close(f"jax {name}", np.asarray(a).reshape(1000, -1), np.reshape(e, (1000, -1)))
    q, v, tau = rng.normal(size=(3, 50, model.nv))
    loss = lambda q, v, tau: module.jax("aba")(q, v, tau).square().sum()
    on_gpu = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(*(jax.device_put(x, device) for x in (q, v, tau)))
    with jax.default_device(jax.devices("cpu")[0]):
        on_cpu = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(q, v, tau)
    for g, c in zip(on_gpu, on_cpu):
        _close("jax grad of aba", np.asarray(g), np.asarray(c))


@gpu
def test_gpu_equals_the_c_module_on_the_issues_robots(tmp_path):
    """(Last: its builds take the longest of the GPU tests.) The issue's others: Solo12 on its four feet (contact dynamics, their derivatives,
    impulses), Panda with a payload's parameters per state (domain randomization), Talos."""
    import rbdgen
    from helpers import robot_path
    from rbdgen.examples import ROBOTS
    solo = rbdgen.build(robot_path("solo12"), str(tmp_path), floating_base=True, cuda=True,
                        contacts=["FL_FOOT:3d", "FR_FOOT:3d", "HL_FOOT:3d", "HR_FOOT:3d"],
                        algorithms=["contact_dynamics", "contact_dynamics_derivatives", "impulse_dynamics", "contact_eom"])
    _on_the_gpu_as_in_c(solo, rbdgen.load_urdf(robot_path("solo12"), floating_base=True), "solo12, four feet")
    with warnings.catch_warnings():   # Panda's fingers: <mimic> ignored
        warnings.simplefilter("ignore")
        panda = rbdgen.build(robot_path("panda"), str(tmp_path), cuda=True, parameters=["payload:panda_hand"],
                             algorithms=["rnea", "aba", "crba", "rnea_derivatives", "aba_derivatives"])
        model = rbdgen.load_urdf(robot_path("panda"))
    nominal = np.asarray(panda._PARAMETERS.nominal)
    spread = np.random.default_rng(SEED)
    _on_the_gpu_as_in_c(panda, model, "panda, payload per state",
                        params=lambda count: nominal * (1 + 0.2 * spread.random((count, nominal.size))))
    talos = rbdgen.build(robot_path("talos"), str(tmp_path), floating_base=ROBOTS["talos"][1], cuda=True,
                         algorithms=["rnea", "crba", "aba", "minv"])
    _on_the_gpu_as_in_c(talos, rbdgen.load_urdf(robot_path("talos"), floating_base=ROBOTS["talos"][1]), "talos")
