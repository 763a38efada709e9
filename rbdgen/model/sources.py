"""Where robots are described: URDF, xacro (expanded by the PyPI xacro package, no ROS needed),
MJCF (compiled by MuJoCo) and SDFormat (read here, closed chains included), read into one Model.
`load_model` tells them apart by the file: a .xacro name, a xacro element or a ${...} / $(...)
substitution is xacro (a namespace declaration alone is not), a <mujoco> root is MJCF, an <sdf>
root SDFormat, anything else URDF.
"""

import contextlib
import os
import re
import xml.etree.ElementTree as ET

from ..errors import ModelError, URDFError
from .model import with_joint_dynamics
from . import urdf as _urdf   # by module: a test (or a user) may replace its functions

XACRO_NAMESPACE = "http://www.ros.org/wiki/xacro"


def source_kind(path):
    """"urdf", "xacro", "mjcf" or "sdf", from the file's name and what it contains."""
    if str(path).endswith(".xacro"):
        return "xacro"
    return "xacro" if xacro_use(path) else _root_kind(path)


def _root_kind(path):
    try:
        for _, element in ET.iterparse(path, events=("start",)):
            return {"mujoco": "mjcf", "sdf": "sdf"}.get(element.tag, "urdf")
    except (ET.ParseError, OSError):
        pass
    return "urdf"    # the URDF reader says what is wrong with it


# What makes a file xacro: an element of xacro's (<xacro:macro>, <xacro:property>, ...) or a
# substitution (${expression}, $(arg name), $(find package)) in an attribute or a text. Files
# expanded from xacro, as most ROS URDFs are, keep the namespace declaration and nothing else:
# they are plain URDF, read without the xacro package.
_SUBSTITUTION = re.compile(r"\$[{(]")


def xacro_use(path):
    """The first thing in the file that only xacro reads, as a phrase ("<xacro:macro>",
    "${...} in <origin xyz>"), or None for a file that needs no xacro."""
    prefixes = {XACRO_NAMESPACE}     # the namespaces a "xacro" prefix is declared for
    try:
        for event, item in ET.iterparse(path, events=("start-ns", "start")):
            if event == "start-ns":
                if item[0] == "xacro":
                    prefixes.add(item[1])
                continue
            uri, _, tag = item.tag[1:].partition("}") if item.tag.startswith("{") else ("", "", item.tag)
            if uri in prefixes:
                return f"<xacro:{tag}>"
            for place, value in [(f"<{tag} {name}>", value) for name, value in item.attrib.items()] \
                    + [(f"the text of <{tag}>", item.text or "")]:
                found = _SUBSTITUTION.search(value)
                if found:
                    return f"{'${...}' if found.group() == '${' else '$(...)'} in {place}"
    except (ET.ParseError, OSError):
        pass
    return None


def load_model(path, floating_base=False, *, strict=False, mimic=False, armature=None, xacro_args=None,
               packages=None, loops=None, files_read=None):
    """The Model of a URDF, xacro, MJCF or SDFormat file, with the loop closures `loops`
    (rbdgen.model.closures: "FRAME_A[@x,y,z]:FRAME_B[@x,y,z][:3d|:6d]") added. See read_model."""
    model = read_model(path, floating_base, strict=strict, mimic=mimic, armature=armature, xacro_args=xacro_args,
                       packages=packages, files_read=files_read)
    if loops:
        from .closures import with_loops
        model = with_loops(model, [loops] if isinstance(loops, str) else list(loops))
    return model


def read_model(path, floating_base=False, *, strict=False, mimic=False, armature=None, xacro_args=None,
               packages=None, files_read=None):
    """The Model of a URDF, xacro, MJCF or SDFormat file.

    floating_base: a free-flyer root for a URDF or xacro (an MJCF says itself which bodies
    are free); strict, mimic: as load_urdf; armature: {joint: rotor inertia} added to (for MJCF:
    replacing) the file's; xacro_args: {name: value} for xacro's <xacro:arg>; packages:
    {package: folder} for xacro's $(find package); files_read: a list that receives the absolute
    paths of the other files the model depends on (see expand_xacro and mjcf.files_read; a URDF's
    meshes do not enter its dynamics, so none for a URDF)."""
    path = os.fsdecode(os.fspath(path))
    kind = source_kind(path)
    if kind == "mjcf":
        if floating_base:
            raise ModelError(f"{path}: --floating-base is for URDF; an MJCF gives its free bodies a <freejoint/>")
        if mimic:
            raise ModelError(f"{path}: --mimic is for URDF's <mimic>; MJCF couples joints by equality "
                             "constraints, which rbdgen leaves out")
        from .mjcf import files_read as mjcf_files, load_mjcf
        model = load_mjcf(path)
        if files_read is not None:
            files_read.extend(mjcf_files(path))
        return with_joint_dynamics(model, armature=armature) if armature else model
    if kind == "sdf":
        if floating_base or mimic:
            raise ModelError(f"{path}: --floating-base and --mimic are for URDF; an SDFormat model floats unless a "
                             "joint attaches it to the world")
        from .sdf import load_sdf
        model = load_sdf(path)
        return with_joint_dynamics(model, armature=armature) if armature else model
    if kind == "xacro":
        text = expand_xacro(path, xacro_args, packages, files_read)
        return _urdf.model_from_urdf_string(text, source=path, floating_base=floating_base, strict=strict, mimic=mimic,
                                      armature=armature)
    return _urdf.load_urdf(path, floating_base=floating_base, strict=strict, mimic=mimic, armature=armature)


def expand_xacro(path, args=None, packages=None, files_read=None):
    """The URDF text of a xacro file, with `args` ({name: value}) for its <xacro:arg>s and
    $(find package) resolved from `packages` ({name: folder}) or ROS_PACKAGE_PATH; `files_read`,
    a list, receives the absolute paths of the files xacro read besides `path` (its includes,
    whatever their depth, and the YAML of load_yaml; an optional include that is absent too, as
    its appearing would change the robot)."""
    try:
        import xacro
        import xacro.substitution_args as substitution
    except ImportError:
        uses = xacro_use(path) if not str(path).endswith(".xacro") else "a .xacro file"
        raise ModelError(f"{path} is xacro ({uses}): reading it needs the xacro package: "
                         "pip install xacro (or rbdgen[xacro])") from None
    if not os.path.isfile(path):
        raise URDFError(f"xacro file {path!r} not found; check the path")
    missing = []

    def find(package):
        folder = (packages or {}).get(package) or _on_ros_package_path(package)
        if folder is None:
            missing.append(package)
            raise ModelError(package)
        return folder

    mappings = {str(k): str(v) for k, v in (args or {}).items()}
    with _replaced(substitution, "_eval_find", find), open(os.devnull, "w") as quiet, \
            contextlib.redirect_stderr(quiet):
        # xacro appends every file it opens to a list of its own that it never clears
        known = len(xacro.all_includes)
        try:
            document = xacro.process_file(path, mappings=mappings)
        except Exception as exc:   # xacro raises its own exceptions and whatever its expressions raise
            if missing:
                raise ModelError(f"{path}: xacro cannot find package {missing[0]!r} for $(find {missing[0]}); "
                                 f"point at its folder with --package {missing[0]}=FOLDER (or ROS_PACKAGE_PATH)") \
                    from None
            message = " ".join(str(exc).split()) or type(exc).__name__
            if type(exc).__name__ == "ArgException" or "Undefined substitution argument" in message:
                message += "; give it with --xacro-arg NAME:=VALUE"
            raise ModelError(f"{path}: xacro: {message}") from None
    if files_read is not None:
        top = os.path.abspath(path)
        for name in map(os.path.abspath, xacro.all_includes[known:]):
            if name != top and name not in files_read:
                files_read.append(name)
    return document.toxml()


@contextlib.contextmanager
def _replaced(owner, attribute, value):
    original = getattr(owner, attribute)
    setattr(owner, attribute, value)
    try:
        yield
    finally:
        setattr(owner, attribute, original)


def _on_ros_package_path(package):
    """The folder of `package` below a ROS_PACKAGE_PATH entry (one holding package.xml), or None."""
    for root in filter(None, os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep)):
        for folder, _, files in os.walk(root):
            if "package.xml" in files and os.path.basename(folder) == package:
                return folder
    return None
