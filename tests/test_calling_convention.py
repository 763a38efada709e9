"""One C calling convention for every generated function: the uniform entry <fn>_eval(in, out,
body) and <fn>_eval_batch(n, threads, in, out, body) give what the named function gives, and the
metadata the C answers (rbdgen_<m>_function(name), a rbdgen_function_t) is the function table's,
as model.json has it (names, sizes, sharing and defaults of the inputs)."""

import ctypes

import numpy as np
import pytest

from rbdgen.table.inputs import INPUTS



class FunctionInfo(ctypes.Structure):   # rbdgen_function_t (the module's header)
    _fields_ = [("name", ctypes.c_char_p), ("n_in", ctypes.c_int), ("name_in", ctypes.POINTER(ctypes.c_char_p)),
                ("size_in", ctypes.POINTER(ctypes.c_long)), ("shared_in", ctypes.POINTER(ctypes.c_int)),
                ("default_in", ctypes.POINTER(ctypes.c_double)),
                ("n_out", ctypes.c_int), ("name_out", ctypes.POINTER(ctypes.c_char_p)),
                ("size_out", ctypes.POINTER(ctypes.c_long)), ("per_body", ctypes.c_int),
                ("eval", ctypes.c_void_p), ("eval_batch", ctypes.c_void_p)]


def inputs(d, rng, count=None):
    lead = () if count is None else (count,)
    return [rng.standard_normal((() if port.shared else lead) + (port.size,)) for port in d.inputs]


def body_of(module, d):
    return next(iter(module._META["frames"].values()))["body"] if d.per_body else -1


@pytest.mark.parametrize("key", ["panda", "solo12"])
def test_the_uniform_entry_gives_what_the_named_function_gives(bridge_modules, key):
    module, _ = bridge_modules[key]
    ffi, lib, prefix = module._ffi, module._lib, f"rbdgen_{module._META['module']}_"
    rng = np.random.default_rng(0)
    for name, d in module._DESCRIPTIONS.items():
        body, size = body_of(module, d), d.size
        lead = (body,) if d.per_body else ()
        xs = inputs(d, rng)
        expected, got = np.empty(size), np.empty(size)
        getattr(lib, prefix + name)(*lead, *[ffi.from_buffer("double[]", x) for x in xs],
                                    ffi.from_buffer("double[]", expected))
        getattr(lib, prefix + name + "_eval")(ffi.new("const double *[]", [ffi.from_buffer("double[]", x) for x in xs]),
                                              ffi.new("double *[]", [ffi.from_buffer("double[]", got)]), body)
        np.testing.assert_array_equal(got, expected, err_msg=f"{key} {name}_eval")
        batch = inputs(d, rng, 5)
        expected, got = np.empty((5, size)), np.empty((5, size))
        getattr(lib, prefix + name + "_batch")(5, 1, *lead, *[ffi.from_buffer("double[]", x) for x in batch],
                                               ffi.from_buffer("double[]", expected))
        getattr(lib, prefix + name + "_eval_batch")(
            5, 1, ffi.new("const double *[]", [ffi.from_buffer("double[]", x) for x in batch]),
            ffi.new("double *[]", [ffi.from_buffer("double[]", got)]), body)
        np.testing.assert_array_equal(got, expected, err_msg=f"{key} {name}_eval_batch")


def test_the_c_answers_each_functions_inputs_and_outputs(bridge_modules):
    module, _ = bridge_modules["panda"]
    library = ctypes.CDLL(module._ext.__file__)
    lookup = getattr(library, f"rbdgen_{module._META['module']}_function")
    lookup.restype, lookup.argtypes = ctypes.POINTER(FunctionInfo), [ctypes.c_char_p]
    assert not lookup(b"no_such_function")
    for name, d in module._DESCRIPTIONS.items():
        info = lookup(name.encode()).contents
        assert info.name.decode() == name
        assert [(info.name_in[i].decode(), info.size_in[i]) for i in range(info.n_in)] == \
            [(port.name, port.size) for port in d.inputs], name
        assert [info.shared_in[i] for i in range(info.n_in)] == [int(port.shared) for port in d.inputs], name
        defaults = [info.default_in[i] for i in range(info.n_in)]
        assert [None if np.isnan(x) else x for x in defaults] == [port.default for port in d.inputs], name
        assert (info.n_out, info.size_out[0], info.per_body) == (1, d.size, int(d.per_body))
        cname = f"rbdgen_{module._META['module']}_{name}"
        assert info.eval == ctypes.cast(getattr(library, cname + "_eval"), ctypes.c_void_p).value
        assert info.eval_batch == ctypes.cast(getattr(library, cname + "_eval_batch"), ctypes.c_void_p).value
