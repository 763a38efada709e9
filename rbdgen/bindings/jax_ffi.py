"""robot.jax's XLA FFI handlers (the same file in every module, as _jax_ffi.py; docs/jax.md):
_jax_ffi.c compiled against the installed jaxlib, and the GPUs' branch. On JAX's CUDA platform,
a function's FFI call is one launch of its batch kernel (the module's CUDA dialect, _cuda.py) on
XLA's stream, on the buffers XLA holds on the device: no copy through the host. _jax.py chooses
the handler by platform when the computation is lowered (jax.lax.platform_dependent), so one
jitted function runs on the CPU and on a GPU, under vmap and with the generated derivatives."""

import ctypes
import hashlib
import os
import shlex
import subprocess
import sysconfig
import tempfile
import threading

import jax
import jax.numpy as jnp
import numpy as np

from . import _cuda

_HERE = os.path.dirname(os.path.abspath(__file__))
_LOCK = threading.Lock()


def handler(symbol="rbdgen_jax_call"):
    """The address of a handler of _jax_ffi.c (rbdgen_jax_call; rbdgen_jax_cuda_call, GPUs'),
    compiled once per jax version and handler source beside the module (or in the temporary
    directory when the module's directory is read-only)."""
    source = os.path.join(_HERE, "_jax_ffi.c")
    with open(source, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    version = jax.__version__.replace(".", "_")
    with _LOCK:   # (threads of one process: one compiles, the others wait for its library)
        for directory in (_HERE, os.path.join(tempfile.gettempdir(), f"rbdgen_jax_{os.getuid()}")):
            library = os.path.join(directory, f"_jax_ffi_{version}_{digest}.so")
            if os.path.exists(library):
                break
            try:
                os.makedirs(directory, exist_ok=True)
                _compile(source, library)
                break
            except OSError:
                continue
    return ctypes.cast(getattr(ctypes.CDLL(library), symbol), ctypes.c_void_p).value


def _compile(source, library):
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    partial = f"{library}.{os.getpid()}"
    command = compiler + ["-O2", "-shared", "-fPIC", "-I", jax.ffi.include_dir(), source, "-o", partial]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"compiling rbdgen's JAX handler failed ({' '.join(command)}): {done.stderr.strip()}")
    os.replace(partial, library)   # atomic: a concurrent process sees all of it or nothing


class _Kernel(ctypes.Structure):
    """rbdgen_cuda_kernel_t of _jax_ffi.c: a kernel loaded on one device."""
    _fields_ = [("function", ctypes.c_void_p), ("block", ctypes.c_long)]


def gpu_ordinals():
    """The CUDA ordinals of the GPUs JAX uses ([] where JAX has no GPU backend)."""
    try:
        return sorted(d.local_hardware_id for d in jax.local_devices(backend="cuda"))
    except RuntimeError:
        return []


class Launcher:
    """The GPU branch of one module's JAX functions. `platform` is the lowering platform it
    serves ("cuda"; the tests run the same handler on "cpu", with `launch` and `stream` of
    their own)."""

    def __init__(self, module, handler, target, platform="cuda"):
        self.m, self.target, self.platform = module, target, platform
        jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(handler), platform="CUDA" if platform == "cuda" else platform)
        self.ordinals = gpu_ordinals()
        self.tables = {}   # cname -> a _Kernel per device ordinal (kept alive: the handler reads it)
        self.reasons = {}  # cname -> why it has no kernels (kept alive: the handler reads it)
        self.stream = -1   # XLA's
        self.launch = None
        self.context = {"context_of": 0, "push": 0, "pop": 0}

    def table(self, cname):
        """(the address of cname's kernels on JAX's GPUs, their count, 0), or (0, 0, the address
        of why there are none): a module built without CUDA, a kernel NVRTC or the driver could
        not make. That is the handler's error when the call runs on a GPU, and no error on the
        CPU, whose branch XLA lowers instead."""
        kernels = self.m._FUNCTIONS.kernels()
        if cname not in self.tables and cname not in self.reasons:
            try:
                if not kernels.built:
                    raise _cuda.CudaError("this module was built without CUDA: rebuild it with rbdgen build --cuda, "
                                          'or run its JAX functions on the CPU (jax.default_device(jax.devices("cpu")[0]))')
                table = (_Kernel * (max(self.ordinals) + 1))()
                for ordinal in self.ordinals:
                    function, block = kernels.function(ordinal, cname)
                    table[ordinal] = _Kernel(getattr(function, "value", function), block)
                self.tables[cname] = table
            except _cuda.CudaError as error:
                self.reasons[cname] = ctypes.create_string_buffer(f"rbdgen: {error}".encode())
        if cname in self.reasons:
            return 0, 0, ctypes.addressof(self.reasons[cname])
        return ctypes.addressof(self.tables[cname]), len(self.tables[cname]), 0

    def branch(self, d, body, lead, parts):
        """{platform: the function of d's inputs (..., size), broadcast to `lead`, that launches
        its kernel}: its whole output in one buffer, sliced into d's parts as the CPU's handler
        returns them (separate buffers)."""
        if self.launch is None:
            driver = _cuda.driver()
            address = lambda name: ctypes.cast(getattr(driver, name), ctypes.c_void_p).value
            self.launch = address("cuLaunchKernel")
            self.context = {"context_of": address("cuStreamGetCtx"), "push": address("cuCtxPushCurrent_v2"),
                            "pop": address("cuCtxPopCurrent_v2")}
        table, devices, reason = self.table(d.cname)
        flagged = sum(1 << k for k, port in enumerate(d.inputs) if not port.per_state)

        def launch(*xs):
            out = jax.ffi.ffi_call(self.target, jax.ShapeDtypeStruct(lead + (d.size,), jnp.float64),
                                   vmap_method="broadcast_all")(
                *xs, kernels=np.int64(table), devices=np.int64(devices), reason=np.int64(reason),
                launch=np.int64(self.launch), **{k: np.int64(v) for k, v in self.context.items()},
                per_body=np.int64(d.per_body), body=np.int64(body), flagged=np.int64(flagged),
                stream=np.int64(self.stream))
            return [out[..., start:stop] for start, stop, _ in parts]
        return {self.platform: launch}
