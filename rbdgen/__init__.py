"""rbdgen: fast, verified rigid-body dynamics modules generated from a URDF, xacro, MJCF or
SDFormat file."""

from .errors import BuildError, CodegenError, InertiaWarning, ModelError, RbdgenError, URDFError
from .model import ModelBuilder, load_urdf
from .model.sources import load_model
from .runtime import reference
from .version import __version__

__all__ = ["BuildError", "CodegenError", "InertiaWarning", "ModelError", "RbdgenError", "URDFError", "ModelBuilder",
           "load_urdf", "load_model", "reference", "__version__"]

from .codegen.build import build, build_model, load  # noqa: E402
from .codegen.export import export, export_model  # noqa: E402
from .codegen.options import BuildOptions  # noqa: E402

__all__ += ["build", "build_model", "load", "export", "export_model", "BuildOptions"]
from .symbolic import symbolic  # noqa: E402  (the module's name is taken by the function)

__all__ += ["symbolic"]
