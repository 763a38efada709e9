"""What a build is asked for, beside the robot's file and the output folder: one value that
rbdgen.build, build_model, export, the command line and a pickled module's rebuild pass on,
rather than the same dozen arguments each."""

from dataclasses import dataclass, fields, replace


# The options that are lists of names; a string given for one is a list: for the functions and
# parameters, the names it separates by commas (as on the command line), for a frame or a
# contact ("l_sole:3d@0,0,0.01") the one name. "" is then an empty name, which the checks refuse.
LISTS = ("algorithms", "frames", "contacts", "parameters", "loops", "cuda_arch")
COMMA_SEPARATED = ("algorithms", "parameters", "cuda_arch")


def _listed(option, value):
    if option not in LISTS or not isinstance(value, str):
        return value
    return value.split(",") if option in COMMA_SEPARATED else [value]


@dataclass(frozen=True)
class BuildOptions:
    # how the robot's file is read (rbdgen.model.sources.load_model)
    floating_base: bool = False   # a free-flyer root for a URDF or xacro
    strict: bool = False          # an invalid inertia is an error, not a warning
    mimic: bool = False           # <mimic> joints follow their master (Pinocchio's mimic=True)
    armature: dict = None         # {joint: rotor inertia}
    xacro_args: dict = None       # a xacro file's arguments {name: value}
    packages: dict = None         # the folders of xacro's $(find package)
    loops: tuple = None           # loop closures between two frames ("A@x,y,z:B:3d": rbdgen.model.closures)
    # what the module has
    name: str = None              # the module's name (default: the robot's, sanitized)
    algorithms: tuple = None      # the functions (None: the defaults for the robot)
    frames: tuple = None          # the frames served (None: every link and fixed frame)
    contacts: tuple = None        # contacts declared at build time ("l_sole:6d", "FL_FOOT:3d@0,0,0.01", ...)
    parameters: tuple = None      # model entries taken at run time ("inertia:all", "payload:panda_hand", "gravity", ...)
    native: bool = True           # compiled with -march=native
    cse: bool = True              # common subexpressions eliminated
    verify: bool = True           # compared with the reference before it is installed
    cuda: bool = False            # the CUDA dialect too: .cu sources, compiled for cuda_arch or the GPUs present
    cuda_arch: tuple = None       # the GPU architectures to compile for at build time ("sm_90", ...; implies cuda)

    @classmethod
    def of(cls, options=None, **changes):

        """`options` (default: the defaults) with `changes`, as keyword arguments name them;
        None for a change means the default."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unknown build option {unknown[0]!r}; the options are {', '.join(sorted(known))}")
        defaults = {f.name: f.default for f in fields(cls)}
        changes = {k: defaults[k] if v is None else _listed(k, v) for k, v in changes.items()}
        return replace(options or cls(), **changes)

    @classmethod
    def of_recipe(cls, source, options, name):
        """The options a module was built with, from its model.json ("source" and "options")
        and its name: what another process needs to build it again."""
        return cls(floating_base=bool(source.get("floating_base")), mimic=bool(source.get("mimic")),
                   armature=source.get("armature"), xacro_args=source.get("xacro_args"),
                   packages=source.get("packages"), loops=source.get("loops"), name=name, algorithms=options.get("algorithms"),
                   frames=options.get("frames"), contacts=options.get("contacts"),
                   parameters=options.get("parameters") or None,
                   native=options.get("native", True), cse=options.get("cse", True),
                   cuda=bool(options.get("cuda")), cuda_arch=options.get("cuda_arch") or None)

    def reading(self):
        """load_model's options for the file: armature, xacro_args, packages and loops that are given."""
        return {k: v for k, v in (("armature", self.armature), ("xacro_args", self.xacro_args),
                                  ("packages", self.packages), ("loops", self.loops)) if v}
