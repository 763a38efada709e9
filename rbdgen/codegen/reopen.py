"""What a pickled module becomes in another process (multiprocessing, concurrent.futures, Dask,
Ray): the module a folder holds, by the folder's path and the build key.

The process loads the compiled module from the same folder when it is there (a shared file
system, or the same machine), and builds it there from the build's recipe (model.json's source
and options) when the folder is absent: the robot's file must then be at the same path, with the
files it reads (xacro and MJCF includes, the meshes an MJCF's inertias come from) as they were at
the build, which model.json's source records by digest.
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
    from .build import build_model, load, load_source, source_changed
    from .compiler import compile_flags
    try:
        meta = cache.read_json(os.path.join(folder, "model.json"))
        found, machine = meta.get("build_key"), meta.get("machine")
    except (OSError, ValueError, AttributeError):
        found = machine = None
    asked = recipe["options"]
    if found == build_key:
        if machine is not None and machine != cache.machine_digest(compile_flags(asked.get("native", True))):
            raise BuildError(f"'{folder}' was compiled for another machine (CPU, compiler or Python differ from "
                             "this one's); build with native=False for machines that share it, or give each kind "
                             "of machine a folder of its own")
        return load(folder)
    if found is not None:
        raise BuildError(f"'{folder}' holds another build of the module than the one pickled (rebuilt since); "
                         "pickle the module again after the build")
    source = recipe["source"]
    path = source.get("urdf")
    if path is None:   # build_model(model) records no source
        raise BuildError(f"'{folder}' is not on this machine, and its module was built from a Model in Python "
                         "(build_model), with no robot file to build it from; put the module folder on storage "
                         "every process sees")
    if not (isinstance(path, str) and os.path.isfile(path)):
        raise BuildError(f"'{folder}' is not on this machine, nor the robot's file {path!r} to build it from; "
                         "put the module folder (or the robot's file) on storage every process sees")
    _unchanged(folder, source, source_changed(source))
    options = BuildOptions.of_recipe(source, asked, recipe["module"])
    model, now = load_source(path, options)
    _unchanged(folder, source, source_changed(source, now))   # the files this read, as they were read
    return build_model(model, os.path.dirname(folder), options, source=now, expected_key=build_key)


def _unchanged(folder, source, changed):
    """BuildError when `changed`, a file the robot is read from, differs from the build's."""
    if changed is None:
        return
    what = "is gone" if not os.path.isfile(changed) else "changed"
    if changed != source["urdf"]:
        what = f"(read by {source['urdf']}) {what}"
    raise BuildError(f"'{folder}' is not on this machine, and the robot file {changed} {what} since the module was "
                     "built: building it would give another robot; put the module folder on storage every "
                     "process sees")
