"""The per-function cache, beside the module cache (`<out_dir>/.rbdgen-cache`): a build that adds
a contact, a function or a frame generates and compiles only what changed.

Three kinds of entries, each a file named by its key:

- programs/: a function's generated program (its data and C text), keyed by everything its
  generation reads: rbdgen's sources, the model, the module's name, the function, CSE, and the
  declared contacts (for the contacts' functions) or the bodies that carry frames (for the
  functions of a frame). A rebuild skips the symbolic run of every function found here.
- objects/: a compiled object, keyed by the C it compiles (the file and the files it
  includes; for the glue, Python's ABI and NumPy's version for their headers) and the
  compiler's identity and flags. A function's file includes the module's
  header through the kernels header; the key leaves that header out: it declares the functions
  and defines sizes for C users, and no function's code reads either.
- cubins/: a function's CUDA kernels for one GPU architecture, keyed by its CUDA dialect,
  the dialect's header, the architecture, NVRTC (its version and library) and rbdgen's sources.

The rules are the module cache's (codegen/cache.py): each entry is written to a temporary file
and renamed into place, so a reader sees a whole entry or none; each starts with the SHA-256 of
the rest, and an entry that does not match it (a disk fault, an interrupted copy) is removed
and made again. Entries are touched when used; beyond CACHE_BYTES the least recently used go.
"""

import hashlib
import os
import pickle
import tempfile

from .compiler import compiler_identity

FOLDER = ".rbdgen-cache"
CACHE_BYTES = 1 << 30


def digest(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()


class BuildCache:
    def __init__(self, out_dir):
        self.root = os.path.join(out_dir, FOLDER)

    # --------------------------------------------------------------------- programs ---

    def program(self, key):
        """(data, C text) of a function generated before, or None."""
        payload = self._read("programs", key)
        if payload is None:
            return None
        try:
            return pickle.loads(payload)
        except Exception:   # whole but unreadable (written by another version of Python): made again
            self._remove("programs", key)
            return None

    def keep_program(self, key, data, c_text):
        self._write("programs", key, pickle.dumps((data, c_text), protocol=pickle.HIGHEST_PROTOCOL))

    # ---------------------------------------------------------------------- objects ---

    @staticmethod
    def object_key(texts, flags):
        """The key of the object compiled from `texts` (the file's and its includes') with `flags`."""
        return digest(*[t.encode() for t in texts], compiler_identity(flags), flags)

    def object(self, key, path):
        """Write the object cached under `key` to `path`; False when there is none."""
        payload = self._read("objects", key)
        if payload is None:
            return False
        with open(path, "wb") as f:
            f.write(payload)
        return True

    def keep_object(self, key, path):
        with open(path, "rb") as f:
            self._write("objects", key, f.read())

    # ----------------------------------------------------------------------- cubins ---

    @staticmethod
    def cubin_key(texts, arch, compiler):
        return digest(*[t.encode() for t in texts], arch, compiler)

    def cubin(self, key):
        """The cubin cached under `key` (bytes), or None."""
        return self._read("cubins", key)

    def keep_cubin(self, key, cubin):
        self._write("cubins", key, cubin)

    # ---------------------------------------------------------------------- storage ---

    def _path(self, kind, key):
        return os.path.join(self.root, kind, key)

    def _read(self, kind, key):
        path = self._path(kind, key)
        try:
            with open(path, "rb") as f:
                head, payload = f.read(64), f.read()
        except OSError:
            return None
        if head.decode("ascii", "replace") != hashlib.sha256(payload).hexdigest():
            self._remove(kind, key)
            return None
        try:
            os.utime(path)   # recently used
        except OSError:
            pass
        return payload

    def _write(self, kind, key, payload):
        folder = os.path.join(self.root, kind)
        try:
            os.makedirs(folder, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(hashlib.sha256(payload).hexdigest().encode("ascii"))
                    f.write(payload)
                os.replace(temporary, self._path(kind, key))
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            pass   # a cache that cannot be written (a full disk, a read-only folder) is no cache

    def _remove(self, kind, key):
        try:
            os.unlink(self._path(kind, key))
        except OSError:
            pass

    def prune(self, limit=CACHE_BYTES):
        """Remove the least recently used entries beyond `limit` bytes (and temporary files a
        killed build left)."""
        entries = []
        for kind in ("programs", "objects", "cubins"):
            folder = os.path.join(self.root, kind)
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                path = os.path.join(folder, name)
                try:
                    stat = os.stat(path)
                except OSError:
                    continue
                entries.append((stat.st_mtime, stat.st_size, path, name.startswith(".tmp-")))
        total = sum(size for _, size, _, _ in entries)
        newest = max((e[0] for e in entries), default=0)
        for mtime, size, path, temporary in sorted(entries):
            stale_temporary = temporary and mtime < newest - 3600
            if total > limit or stale_temporary:
                try:
                    os.unlink(path)
                    total -= size
                except OSError:
                    pass
