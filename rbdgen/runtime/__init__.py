"""Runtime: the NumPy reference backend and the loader of generated packages."""
