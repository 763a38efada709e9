"""The module cache: when a generated folder may be reused, and how a new one takes its place.

The rules, in the order a build applies them:

1. The key. A module depends on the model, the build options, rbdgen's own sources, the
   Python ABI it was linked for, the platform, the C compiler and its flags, and (with
   -march=native) the CPU features the compiler targeted. All of them go into `build_key`,
   so a folder shared between Python versions or machines is rebuilt, never imported.
2. The lock. One file lock per module folder is held for the whole build: check, generate,
   compile, verify and install. A concurrent build of the same folder waits (saying which
   process holds the lock), then finds the module it asked for or builds it; it never loads
   another process's half-swapped module. The build's worker processes neither inherit the
   lock nor outlive the build (codegen/compilation.py), so a killed build leaves the lock free.
3. Validation. A folder is reused only if its model.json reads and carries the key, its
   verification record says it passed and vouches for the extension file (by hash: a
   truncated shared object can crash the process that maps it), and it imports with compiled
   constants (build key, nq, nv, function count) equal to model.json's. Anything else is
   rebuilt, with one line saying why.
4. Installation. A module is built and verified in a temporary folder beside the target and
   put in place by one atomic rename (an exchange when the target exists). Temporary folders
   are removed on any exit; those left by killed builds are removed by the next build.
"""

import contextlib
import ctypes
import errno
import fcntl
import functools
import hashlib
import json
import os
import platform
import shutil
import sys
import sysconfig
import tempfile

from ..errors import BuildError
from .compiler import compiler_identity

VERIFICATION_FILE = "verification.json"


# ------------------------------------------------------------------------------ the key ----

@functools.lru_cache(maxsize=None)
def python_abi():
    """The ABI an extension is linked for: interpreter, version and build flavour."""
    return f"{sys.implementation.cache_tag} {sysconfig.get_config_var('SOABI')}"


def build_key(*parts, flags):
    """One hash over the model's and the options' parts and everything of this machine that
    decides whether a compiled module can run here."""
    return hashlib.sha256(json.dumps([list(parts), _machine(flags)], default=repr).encode()).hexdigest()


def machine_digest(flags):
    """A hash of what of this machine a module compiled with `flags` depends on (model.json
    keeps it: another process checks that the module can run where it is unpickled)."""
    return hashlib.sha256(json.dumps(_machine(flags), default=repr).encode()).hexdigest()


def _machine(flags):
    return [python_abi(), sys.platform, platform.machine(), compiler_identity(flags)]


# ----------------------------------------------------------------------------- the lock ----
# flock belongs to the open file, which every forked copy of the descriptor shares: a child
# process that outlived its build would keep the module locked, and every later build of it
# would wait forever. So a forked child closes the descriptors of the locks its parent holds
# (os.register_at_fork), and the lock file names its holder, for the builds that wait on it.

_HELD = set()   # the descriptors of the build locks this process holds


def _forget_held_locks():
    for fd in _HELD:
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_held_locks)


@contextlib.contextmanager
def locked(out_dir, module, say=None):
    """Hold the module's build lock (a file beside its folder) for the whole block. say(line):
    where to say that the build waits for another one (and which process holds the lock), or
    that it takes over the lock of a build that was killed."""
    path = os.path.join(out_dir, f".{module}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    _HELD.add(fd)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if say:
                say(f"{module}: waiting for another build of it to finish ({_holder(fd) or 'its lock'}: {path})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        killed = _holder(fd)   # a build that ends releases the lock with its file emptied
        if killed and say:
            say(f"{module}: taking over the lock of a build that was killed ({killed})")
        _claim(fd)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        _HELD.discard(fd)
        os.close(fd)


def _holder(fd):
    """Who holds, or held, the lock: its file's line, or '' (none, or unreadable)."""
    try:
        return os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _claim(fd):
    import datetime
    since = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    line = f"process {os.getpid()} on {platform.node()} since {since}\n".encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, line, 0)


# ------------------------------------------------------------------------ validation -------

def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def reuse_problem(target, key, verify):
    """Why the folder cannot be reused under `key` (a short phrase), or None if it can.

    Only the files are read here; `load` then imports the module and checks its compiled
    constants (a failure there is a reason to rebuild too).
    """
    if not os.path.exists(target):
        return "no module yet"
    try:
        meta = read_json(os.path.join(target, "model.json"))
    except (OSError, ValueError):
        return "its model.json is missing or unreadable"
    if not isinstance(meta, dict) or meta.get("build_key") != key:
        return "the model, the options, rbdgen or this machine changed"
    try:
        record = read_json(os.path.join(target, VERIFICATION_FILE))
    except (OSError, ValueError):
        return "it has no verification record (an interrupted build?)"
    if not isinstance(record, dict) or record.get("build_key") != key:
        return "its verification record belongs to another build"
    if verify and record.get("passed") is not True:
        return "it was never verified"
    return extension_problem(target, meta, record)


def extension_problem(folder, meta, record):
    """Why the compiled extension is not the one that was verified, or None. Checked before
    importing it: a truncated shared object can crash the process that maps it (SIGBUS)."""
    try:
        path = extension_file(folder, meta)
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except (OSError, KeyError, TypeError, StopIteration):
        return "its compiled extension is missing"
    if digest != record.get("extension_sha256"):
        return "its compiled extension changed after it was verified"
    return None


def extension_file(folder, meta):
    """The path of the module's compiled extension (named after model.json's "extension")."""
    prefix = str(meta["extension"]) + "."
    return os.path.join(folder, next(n for n in sorted(os.listdir(folder)) if n.startswith(prefix)))


def write_verification(folder, key, report):
    """The record that makes a folder reusable, with the hash of the extension it vouches
    for: written only after verification (or its explicit omission), before installation."""
    meta = read_json(os.path.join(folder, "model.json"))
    with open(extension_file(folder, meta), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    record = {"build_key": key, "passed": None if report is None else all(r["ok"] for r in report.values()),
              "extension_sha256": digest, "functions": report or {}}
    with open(os.path.join(folder, VERIFICATION_FILE), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)


# ---------------------------------------------------------------------- installation -------

def _temporary_prefix(module):
    # Module names are identifiers, so '.<module>-' never prefixes another module's folders.
    return f".{module}-"


@contextlib.contextmanager
def workspace(out_dir, module):
    """A fresh temporary folder beside the target, removed on any exit of the block."""
    work = os.path.abspath(tempfile.mkdtemp(prefix=_temporary_prefix(module), dir=out_dir))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(work, 0o777 & ~mask)  # mkdtemp makes it private; the module is not
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def remove_stale(out_dir, module):
    """Remove the temporary folders of builds of this module that were killed (call it
    holding the lock: no live build of this module can own them then)."""
    prefix = _temporary_prefix(module)
    for name in os.listdir(out_dir):
        path = os.path.join(out_dir, name)
        if name.startswith(prefix) and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)


def _renameat2():
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return function


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def install(work, target):
    """Put the folder `work` in place of `target` in one atomic step; the old module (if
    any) ends up in `work`, which the caller's `workspace` removes.

    An existing target is swapped with Linux's renameat2(RENAME_EXCHANGE): at every instant
    the target path holds either the old or the new module. Where the exchange is not
    available, the old folder is moved aside first (the only window without a module).
    """
    if not os.path.lexists(target):
        os.rename(work, target)
        os.mkdir(work)  # the workspace is expected to exist until its block ends
        return
    exchange = _renameat2()
    if exchange is not None:
        if exchange(_AT_FDCWD, os.fsencode(work), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE) == 0:
            return
        if ctypes.get_errno() not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), target)
    aside = tempfile.mkdtemp(prefix=os.path.basename(work) + "-old-", dir=os.path.dirname(work))
    try:
        os.rename(target, os.path.join(aside, "module"))
        os.rename(work, target)
        os.rename(aside, work)
    except BaseException:
        shutil.rmtree(aside, ignore_errors=True)
        raise
