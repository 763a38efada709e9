"""CUDA for a generated module, through ctypes only: NVRTC compiles the module's .cu files (at
build time for the architectures asked, else at the first call on a GPU), the driver API loads
the kernels and launches them on the caller's device arrays (PyTorch, CuPy, anything with
__cuda_array_interface__), on the caller's stream. It imports nothing of rbdgen: the build uses
it (rbdgen.bindings.cuda), and every module carries it as _cuda.py.

NVRTC is looked for in the NVIDIA wheels (pip install "rbdgen[cuda]": nvidia-cuda-nvrtc-cu12),
then in CUDA_HOME / CUDA_PATH and /usr/local/cuda, then on the loader's path; RBDGEN_NVRTC
names the library itself. The driver (libcuda.so.1) comes with the GPU's driver."""

import ctypes
import functools
import glob
import os
import sys
import threading


class CudaError(RuntimeError):
    """A one-line error of the CUDA target: no NVRTC, no driver or GPU, a failed compilation."""


# ------------------------------------------------------------------------------ NVRTC ---

def _nvrtc_candidates():
    named = os.environ.get("RBDGEN_NVRTC")
    if named:
        yield named
        return
    for root in sys.path:
        for sub in ("nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"):
            yield from sorted(glob.glob(os.path.join(root, sub, "libnvrtc.so*")), reverse=True)
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            for lib in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
                yield from sorted(glob.glob(os.path.join(home, lib, "libnvrtc.so*")), reverse=True)
    yield from ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12")


_LOCK = threading.Lock()
_LIBRARIES = {}


def nvrtc():
    """The NVRTC library (ctypes), or CudaError saying how to install it."""
    with _LOCK:
        if "nvrtc" not in _LIBRARIES:
            for path in _nvrtc_candidates():
                if "builtins" in os.path.basename(path) or "alt" in os.path.basename(path):
                    continue
                try:
                    lib = ctypes.CDLL(path)
                    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
                    _LIBRARIES["nvrtc"], _LIBRARIES["nvrtc path"] = lib, path
                    break
                except OSError:
                    continue
            else:
                _LIBRARIES["nvrtc"] = None
        lib = _LIBRARIES["nvrtc"]
    if lib is None:
        raise CudaError('compiling CUDA needs NVRTC, which was not found: pip install "rbdgen[cuda]" '
                        "(or set RBDGEN_NVRTC to libnvrtc.so)")
    return lib


def nvrtc_available():
    try:
        nvrtc()
        return True
    except CudaError:
        return False


def nvrtc_version():
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


def nvrtc_identity():
    """What a cubin NVRTC made depends on besides its source and options: the version, and the
    library itself (two of one version, a wheel's and a toolkit's, may differ in their fixes)."""
    version, path = nvrtc_version(), _LIBRARIES.get("nvrtc path", "")
    try:   # (a bare name, found by the loader: its name only)
        return version, os.path.realpath(path), os.path.getsize(path)
    except OSError:
        return version, path


def supported_architectures():
    """The sm_XX NVRTC compiles for."""
    lib, count = nvrtc(), ctypes.c_int()
    lib.nvrtcGetNumSupportedArchs(ctypes.byref(count))
    archs = (ctypes.c_int * count.value)()
    lib.nvrtcGetSupportedArchs(archs)
    return [f"sm_{a}" for a in archs]


def _strings(texts):
    return (ctypes.c_char_p * max(1, len(texts)))(*[t.encode() for t in texts])


def compile_cuda(source, name, headers, arch, extra=(), log=None):
    """CUDA source -> the cubin for `arch` ("sm_90"): bytes. headers {include name: text};
    extra: more NVRTC options (the benchmarks try --maxrregcount, ask ptxas for its report);
    log, a list: NVRTC's log lines are appended to it."""
    lib = nvrtc()
    program = ctypes.c_void_p()
    names = list(headers)
    check = lambda code, what: code == 0 or _fail(lib, program, code, what, name, arch)
    check(lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), len(names),
                                 _strings([headers[n] for n in names]), _strings(names)), "create")
    try:
        options = [f"--gpu-architecture={arch}", "--std=c++17", "--device-as-default-execution-space", *extra]
        check(lib.nvrtcCompileProgram(program, len(options), _strings(options)), "compile")
        if log is not None:
            log.extend(_log(lib, program).splitlines())
        size = ctypes.c_size_t()
        check(lib.nvrtcGetCUBINSize(program, ctypes.byref(size)), "read the cubin of")
        cubin = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetCUBIN(program, cubin), "read the cubin of")
        return cubin.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def _log(lib, program):
    size = ctypes.c_size_t()
    if not program.value or lib.nvrtcGetProgramLogSize(program, ctypes.byref(size)) != 0 or size.value <= 1:
        return ""
    text = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(program, text)
    return text.value.decode(errors="replace").strip()


def _fail(lib, program, code, what, name, arch):
    log = (_log(lib, program).splitlines() or [""])[0]
    reason = lib.nvrtcGetErrorString(code).decode()
    raise CudaError(f"NVRTC could not {what} {name} for {arch}: {reason}" + (f" ({log})" if log else ""))


# ----------------------------------------------------------------------------- driver ---

_CAPABILITY_MAJOR, _CAPABILITY_MINOR = 75, 76      # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
_POINTER_DEVICE_ORDINAL = 9                        # CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
_FUNCTION_MAX_THREADS, _FUNCTION_REGISTERS = 0, 4  # CU_FUNC_ATTRIBUTE_*


def driver():
    """The CUDA driver (ctypes), initialized, or CudaError when this machine has none."""
    lib = _LIBRARIES.get("driver")
    if lib is not None:   # (every launch asks: no lock once it is there)
        return lib
    with _LOCK:
        if "driver" not in _LIBRARIES:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
                lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
                _LIBRARIES["driver"] = lib if lib.cuInit(0) == 0 else None
            except OSError:
                _LIBRARIES["driver"] = None
        lib = _LIBRARIES["driver"]
    if lib is None:
        raise CudaError("no CUDA GPU here: the driver (libcuda.so.1) is missing or finds no device")
    return lib


def _check(code, what):
    if code != 0:
        text = ctypes.c_char_p()
        driver().cuGetErrorString(code, ctypes.byref(text))
        raise CudaError(f"CUDA: {what} failed: {(text.value or b'error %d' % code).decode()}")


_PRIMARY = {}   # a GPU's ordinal -> its primary context (retained once, never released)


def _enter(ordinal):
    """Make `ordinal`'s primary context (the one PyTorch, CuPy and JAX use) current for a load
    or a launch. True when it was pushed: the caller then pops it (_leave), and the context
    current before (the caller's own, or another GPU's) is current again."""
    lib, context = driver(), ctypes.c_void_p()
    _check(lib.cuCtxGetCurrent(ctypes.byref(context)), "cuCtxGetCurrent")
    primary = _PRIMARY.get(ordinal)
    if primary is None:
        device, primary = ctypes.c_int(), ctypes.c_void_p()
        _check(lib.cuDeviceGet(ctypes.byref(device), ordinal), "cuDeviceGet")
        _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(primary), device), "cuDevicePrimaryCtxRetain")
        _PRIMARY[ordinal] = primary
    if context.value == primary.value:   # (a launch from PyTorch, CuPy or JAX: one driver call)
        return False
    _check(lib.cuCtxPushCurrent_v2(primary), "cuCtxPushCurrent")
    return True


def _leave(pushed):
    if pushed:
        _check(driver().cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p())), "cuCtxPopCurrent")


def architecture(ordinal=0):
    """The sm_XX of a GPU."""
    lib, major, minor = driver(), ctypes.c_int(), ctypes.c_int()
    _check(lib.cuDeviceGetAttribute(ctypes.byref(major), _CAPABILITY_MAJOR, ordinal), "cuDeviceGetAttribute")
    _check(lib.cuDeviceGetAttribute(ctypes.byref(minor), _CAPABILITY_MINOR, ordinal), "cuDeviceGetAttribute")
    return f"sm_{major.value}{minor.value}"


def present_architectures_apart():
    """present_architectures(), asked of a process of its own: a build forks its workers after,
    and a process that has initialized the driver should not fork."""
    import subprocess
    try:
        done = subprocess.run([sys.executable, os.path.abspath(__file__)], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted(a for a in done.stdout.split() if a.startswith("sm_"))


def present_architectures():
    """The sm_XX of this machine's GPUs ([] without a driver or GPU)."""
    try:
        lib, count = driver(), ctypes.c_int()
        _check(lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        return sorted({architecture(k) for k in range(count.value)})
    except CudaError:
        return []


class Kernels:
    """A module's kernels on the GPUs: each function's cubin for a GPU's architecture (the
    module's cuda/<arch>/ folder, else compiled by NVRTC from its .cu file and kept there),
    loaded once per device."""

    BLOCK = 128   # threads a block, at most (fewer where a kernel's registers allow fewer)

    def __init__(self, folder, module):
        self.folder, self.module = folder, module
        self.loaded = {}   # (device, cname) -> (CUfunction, threads a block)
        self.lock = threading.Lock()
        self._built = False

    @property
    def built(self):
        if not self._built:   # (asked by every call on device arrays: the file system once it is there)
            self._built = os.path.isfile(os.path.join(self.folder, f"rbdgen_{self.module}_cuda.h"))
        return self._built

    def cubin(self, cname, arch):
        path = os.path.join(self.folder, "cuda", arch, cname + ".cubin")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                return f.read()
        cubin = compile_module_function(self.folder, self.module, cname, arch)
        try:   # kept for the next process (a read-only folder compiles again)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path + f".{os.getpid()}", "wb") as f:
                f.write(cubin)
            os.replace(path + f".{os.getpid()}", path)
        except OSError:
            pass
        return cubin

    def function(self, device, cname):
        loaded = self.loaded.get((device, cname))
        if loaded is not None:
            return loaded
        with self.lock:
            if (device, cname) not in self.loaded:
                lib, module, function = driver(), ctypes.c_void_p(), ctypes.c_void_p()
                image = self.cubin(cname, architecture(device))
                pushed = _enter(device)
                try:
                    _check(lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(image)), f"loading {cname}")
                    _check(lib.cuModuleGetFunction(ctypes.byref(function), module, (cname + "_kernel").encode()),
                           f"finding {cname}_kernel")
                finally:
                    _leave(pushed)
                most = ctypes.c_int()
                _check(lib.cuFuncGetAttribute(ctypes.byref(most), _FUNCTION_MAX_THREADS, function), "cuFuncGetAttribute")
                self.loaded[(device, cname)] = (function, max(32, min(self.BLOCK, most.value)))
            return self.loaded[(device, cname)]

    def launch(self, device, cname, stream, arguments, n):
        """cname_kernel(n, *arguments) on `stream` (a CUstream handle, 0: the default).
        arguments: ctypes values (pointers as c_void_p, flags as c_int, the body as c_long)."""
        function, block = self.function(device, cname)
        values = [ctypes.c_long(n), *arguments]
        pointers = _pointer_array(len(values))(*map(ctypes.addressof, values))
        pushed = _enter(device)
        try:
            code = driver().cuLaunchKernel(function, (n + block - 1) // block, 1, 1, block, 1, 1, 0, stream or None,
                                           pointers, None)
        finally:
            _leave(pushed)
        if code:
            _check(code, f"launching {cname}")


@functools.lru_cache(maxsize=None)
def _pointer_array(count):
    return ctypes.c_void_p * count


def compile_module_function(folder, module, cname, arch, extra=(), log=None):
    """The cubin of one function of the module in `folder`, for `arch` (extra, log: compile_cuda's)."""
    header = f"rbdgen_{module}_cuda.h"
    with open(os.path.join(folder, header)) as f:
        header_text = f.read()
    source = os.path.join(folder, f"{cname}.cu")
    with open(source) as f:
        return compile_cuda(f.read(), os.path.basename(source), {header: header_text}, arch, extra, log)


if __name__ == "__main__":   # (present_architectures_apart's process)
    print(" ".join(present_architectures()))
