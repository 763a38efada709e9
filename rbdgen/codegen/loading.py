"""Loading a generated module from its folder: the one step a built module needs of rbdgen
(needs only numpy and cffi, and the folder's files)."""

import hashlib
import os
import sys

from ..errors import BuildError
from . import cache


def build_info(key, nq, nv, nfunctions):
    """What a compiled module says about itself; `load` compares it with model.json."""
    return f"{key} {nq} {nv} {nfunctions}"


def load(path, package=None):
    """Load a generated package from its folder (needs only numpy and cffi).

    BuildError (one line) when the folder is not a module or its files disagree: a garbled
    model.json, an extension that does not import, or compiled constants (build key, nq, nv,
    function count) other than model.json's (the package's __init__ checks those).
    """
    import importlib.util
    path = os.path.abspath(os.fspath(path))
    init = os.path.join(path, "__init__.py")
    meta_path = os.path.join(path, "model.json")
    if not (os.path.isfile(init) and os.path.isfile(meta_path)):
        raise BuildError(f"'{path}' is not a generated rbdgen module (no __init__.py and model.json); run rbdgen build")
    try:
        meta = cache.read_json(meta_path)
        module_id, key = str(meta["module"]), str(meta["build_key"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BuildError(f"'{path}': model.json is damaged ({type(exc).__name__}); rebuild the module") from None
    # one module object per build and folder: the same build in another folder is another module
    # (its __file__, and the folder a pickled module names, are that folder's)
    where = hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:8]
    package = package or f"rbdgen_generated_{module_id}_{key[:12]}_{where}"
    if package in sys.modules:
        return sys.modules[package]
    try:
        record = cache.read_json(os.path.join(path, cache.VERIFICATION_FILE))
    except (OSError, ValueError):
        record = None   # a module being verified, or one built before records existed
    problem = cache.extension_problem(path, meta, record) if isinstance(record, dict) else None
    if problem:
        raise BuildError(f"'{path}': {problem}; rebuild it")
    spec = importlib.util.spec_from_file_location(package, init, submodule_search_locations=[path])
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    try:
        spec.loader.exec_module(module)  # the module checks its compiled constants itself
    except Exception as exc:
        del sys.modules[package]
        detail = " ".join(str(exc).split())[:200]
        raise BuildError(f"'{path}': the module does not load ({type(exc).__name__}: {detail}); rebuild it") from None
    return module
