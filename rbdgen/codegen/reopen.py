"""What a pickled module becomes in another process (multiprocessing, concurrent.futures, Dask,
Ray): the module a folder holds, by the folder's path and the build key.

The process loads the compiled module from the same folder when it is there (a shared file
system, or the same machine), and builds it there from the build's recipe (model.json's source
and options) when the folder is absent: the robot's file must then be at the same path.
"""

import os

from ..errors import BuildError
from . import cache
from .options import BuildOptions


_OPENED = {}   # (folder, build key) -> module: a Dask worker unpickles the module with every task


def module_at(folder, build_key, recipe):
    """The module in `folder` with `build_key`, built from `recipe` if the folder is absent."""
    module = _OPENED.get((folder, build_key))
    if module is None:
        module = _OPENED[folder, build_key] = _open(folder, build_key, recipe)
    return module


def _open(folder, build_key, recipe):
    from .build import build, load, source_changed
    from .compiler import compile_flags
    try:
        meta = cache.read_json(os.path.join(folder, "model.json"))
        found, machine = meta.get("build_key"), meta.get("machine")
    except (OSError, ValueError, AttributeError):
        found = machine = None
    options = recipe["options"]
    if found == build_key:
        if machine is not None and machine != cache.machine_digest(compile_flags(options.get("native", True))):
            raise BuildError(f"'{folder}' was compiled for another machine (CPU, compiler or Python differ from "
                             "this one's); build with native=False for machines that share it, or give each kind "
                             "of machine a folder of its own")
        return load(folder)
    if found is not None:
        raise BuildError(f"'{folder}' holds another build of the module than the one pickled (rebuilt since); "
                         "pickle the module again after the build")
    source = recipe["source"]
    path = source.get("urdf")
    if not (isinstance(path, str) and os.path.isfile(path)):
        raise BuildError(f"'{folder}' is not on this machine, nor the robot's file {path!r} to build it from; "
                         "put the module folder (or the robot's file) on storage every process sees")
    if source_changed(source):
        raise BuildError(f"'{folder}' is not on this machine, and {path} changed since the module was built: "
                         "building it would give another robot; put the module folder on storage every "
                         "process sees")
    module = build(path, os.path.dirname(folder), BuildOptions.of_recipe(source, options, recipe["module"]))
    if module._META["build_key"] != build_key:   # rbdgen, its compiler or this machine differ
        raise BuildError(f"'{folder}' was absent and is now built here, but not as the module pickled (rbdgen, the "
                         "C compiler or the machine differ); put the module folder on storage every process sees")
    return module
