"""rbdgen's version: a module of its own at the bottom of the package, so that the build,
the renderer and the export read it without importing the package's public API (and
pyproject.toml reads it without importing anything)."""

__version__ = "0.1.0"
