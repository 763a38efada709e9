"""How a generated module and its functions pickle: the module by its folder and build key
(another process, multiprocessing, Dask or Ray, loads the same compiled module from that folder,
or builds it there from the recipe in model.json when the folder is absent:
rbdgen.codegen.reopen), a public function as getattr(module, name). The same file in every
module (a copy of rbdgen/bindings/pickling.py, as _pickling.py)."""

import functools
import inspect
import sys


class Module(type(sys)):
    """This module's type: a module that pickles by its folder and build key."""

    def __reduce__(self):
        from rbdgen.codegen.reopen import module_at   # only where a module is pickled
        meta = self._META
        return module_at, (self._HERE, meta["build_key"], {"source": meta["source"], "options": meta["options"],
                                                      "module": meta["module"]})


class Bound(tuple):
    """An entry point's self in C, (the Python function, its row); pickles as the module."""
    __slots__ = ()

    def __reduce__(self):
        return sys.modules[self[0].__module__].__reduce__()


class Public(functools.partial):
    # A public function written in Python, as itself but for pickling (by module and name): a
    # partial, which calls in C, where a class's __call__ would add a Python frame to every call
    # (docs/performance.md, Calls from Python).

    def __new__(cls, function):
        self = super().__new__(cls, function)
        self.__wrapped__, self.__signature__ = function, inspect.signature(function)
        self.__name__, self.__qualname__ = function.__name__, function.__qualname__
        self.__doc__, self.__module__ = function.__doc__, function.__module__
        return self

    def __reduce__(self):
        return getattr, (sys.modules[self.__module__], self.__name__)

    def __get__(self, instance, owner=None):
        # a method descriptor to inspect: help() documents it as a function, with its signature
        return self

    def __repr__(self):
        return f"<function {self.__qualname__} of {sys.modules[self.__module__].name}>"
