"""Batches run each program on vectors of states (RBDGEN_LANES a time, rbdgen_<robot>_kernels.h):
the same operations in the same order as one state's program, so the same numbers, up to the
last bit where the compiler fuses a multiply-add differently in the two.

1. Every function of states and of the declared contacts, on a batch whose size is not a
   multiple of the lanes (the last states go one by one), equals its single calls, on UR5,
   Panda (a declared contact) and Solo12 (a free-flyer: square roots, quaternions).
2. The vector program is there: the C of rnea, crba, aba and aba_derivatives (long enough to
   be cut into parts) has it; a program with a conditional (integrate's series) keeps the
   state-by-state loop.
3. Threads split the batch by blocks of lanes: two threads give one thread's numbers.
4. From Python, a batch of float64 arrays (out= and threads= too) is taken by the C entry
   point, with no Python run, and gives what the Python function gives; so is a frame
   quantity's batch (a frame by name).
5. A batch beyond the cache streams its outputs (non-temporal stores): the same numbers.
"""

import os

import numpy as np
import pytest

from helpers import bridge_inputs

EPS = np.finfo(float).eps
LANES_TOL = 8 * EPS          # relative to the largest entry of the state's output
BATCH = 19                   # two blocks of 8 (or four of 4) and three states one by one


def batch_inputs(model, names, count):
    rows = [bridge_inputs(model, 100 + k) for k in range(count)]
    return [np.array([r[n] for r in rows]) if n not in ("dt", "restitution", "damping") else rows[0][n]
            for n in names]


@pytest.mark.parametrize("key", ["ur5", "panda", "solo12"])
def test_batch_equals_single_calls(bridge_modules, key):
    module, model = bridge_modules[key]
    checked = 0
    for name, d in module._DESCRIPTIONS.items():
        if d.per_body:
            continue
        names = list(d.names)
        function = getattr(module, ("_declared_" if d.declared else "") + name)
        args = batch_inputs(model, names, BATCH)
        batch = function(*args, threads=1)
        batch = np.concatenate([np.reshape(p, (BATCH, -1)) for p in batch], axis=1) if isinstance(batch, tuple) \
            else np.reshape(batch, (BATCH, -1))
        for k in range(BATCH):
            one = function(*[a[k] if isinstance(a, np.ndarray) and a.ndim == 2 else a for a in args])
            one = np.concatenate([np.ravel(p) for p in one]) if isinstance(one, tuple) else np.ravel(one)
            scale = max(np.abs(one).max(initial=0.0), 1e-300)
            assert np.abs(batch[k] - one).max() <= LANES_TOL * scale, f"{name}, state {k}"
        checked += 1
    assert checked >= 15


def c_source(module, name):
    folder = os.path.dirname(module.__file__)
    with open(os.path.join(folder, f"rbdgen_{module._META['module']}_{name}.c")) as f:
        return f.read()


def test_programs_run_on_vectors_of_states(bridge_modules):
    module, _ = bridge_modules["panda"]
    for name in ("rnea", "crba", "aba", "aba_derivatives"):
        source = c_source(module, name)
        assert "rbdgen_lanes q[9];" in source, name
    assert "_lanes_part1(" in c_source(module, "aba_derivatives")
    solo, _ = bridge_modules["solo12"]
    assert "rbdgen_lanes q[" not in c_source(solo, "integrate")   # its series below a threshold: a conditional


def test_threads_split_the_batch_by_blocks(bridge_modules):
    module, model = bridge_modules["panda"]
    args = batch_inputs(model, ["q", "v", "tau"], 45)
    assert np.array_equal(module.aba(*args, threads=1), module.aba(*args, threads=2))


def python_calls_in(call):
    """call()'s result, after checking that it ran no Python function: the C entry point took
    the call rather than handing it to the Python function."""
    import sys
    called = []
    sys.setprofile(lambda frame, event, _: called.append(frame.f_code.co_name) if event == "call" else None)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    assert called == ["<lambda>"], called
    return result


@pytest.mark.parametrize("key", ["panda", "solo12"])
def test_batch_entry_point_returns_what_the_python_function_does(bridge_modules, key):
    """A batch of float64 arrays goes through the C entry point (calls.c), out= and threads=
    included, without a line of Python. The Python function, which converts arguments and raises the errors, must give
    the same: the same types and shapes, views of one array for a result in parts, the same
    numbers; with out=, the results are written into it."""
    module, model = bridge_modules[key]
    checked = 0
    for name, d in module._DESCRIPTIONS.items():
        if d.per_body or d.declared:
            continue
        names = list(d.names)
        args = batch_inputs(model, names, BATCH)
        python = module._TABLE[name](None, tuple(args), None, 1)
        c = python_calls_in(lambda: getattr(module, name)(*args, out=None, threads=1))
        assert type(c) is type(python), name
        for got, want in zip(*((c, python) if isinstance(c, tuple) else ((c,), (python,)))):
            assert got.shape == want.shape and got.flags.writeable, name
            assert np.array_equal(got, want), name
        flat = np.concatenate([np.reshape(p, (BATCH, -1)) for p in c], axis=1) if isinstance(c, tuple) else c
        out = np.full(flat.shape, np.nan)
        written = python_calls_in(lambda: getattr(module, name)(*args, out=out, threads=2))
        assert all(np.shares_memory(p, out) for p in (written if isinstance(written, tuple) else (written,))), name
        assert np.array_equal(out, flat), name
        checked += 1
    assert checked >= 15


def test_a_batch_beyond_the_cache_streams_the_same_numbers(bridge_modules):
    """A batch whose outputs exceed RBDGEN_STREAM_BYTES (16 MB) writes whole cache lines with
    non-temporal stores, each state's from its own first line boundary: Panda's rnea_derivatives
    (1 296 bytes a state: the states start at 0, 16, 32 and 48 bytes into a line) on 13 000
    states equals the same batch in chunks of 1 000, written by ordinary stores, bit for bit; so
    does the batch into an out= 8 bytes further (the other four starts)."""
    module, model = bridge_modules["panda"]
    count, size = 13000, module._DESCRIPTIONS["rnea_derivatives"].size
    assert count * size * 8 > 16 << 20 and size * 8 % 64 == 16
    q, v, a = (np.resize(x, (count, x.shape[1])) for x in batch_inputs(model, ["q", "v", "a"], BATCH))
    streamed = module.rnea_derivatives(q, v, a, threads=1)
    chunked = [module.rnea_derivatives(q[k:k + 1000], v[k:k + 1000], a[k:k + 1000], threads=1)
               for k in range(0, count, 1000)]
    for got, want in zip(streamed, zip(*chunked)):
        assert np.array_equal(got, np.concatenate(want))
    buffer = np.empty(count * size + 8)
    start = next(k for k in range(8) if (buffer.ctypes.data + 8 * k) % 64 == 8)
    out = buffer[start:start + count * size].reshape(count, size)
    written = module.rnea_derivatives(q, v, a, out=out, threads=2)
    assert all(np.shares_memory(p, buffer) for p in written)
    assert np.array_equal(out, np.concatenate([np.reshape(p, (count, -1)) for p in streamed], axis=1))


@pytest.mark.parametrize("key", ["panda", "solo12"])
def test_frame_batches_take_the_c_entry_point(bridge_modules, key):
    """A frame quantity of a batch (float64 arrays, a frame by name) is taken by the C entry point
    too, without a line of Python: each state's result is its single call's (a function of a frame
    runs state by state), with the batch first in every part; with out=, written into it."""
    module, model = bridge_modules[key]
    frame = module.frames[-1]
    states = dict(zip(["q", "v", "a"], batch_inputs(model, ["q", "v", "a"], BATCH)))
    calls = {"frame_placement": "q", "frame_jacobian": "q", "frame_velocity": "qv", "frame_acceleration": "qva",
             "frame_velocity_derivatives": "qv", "frame_acceleration_derivatives": "qva"}
    checked = 0
    for name, inputs in calls.items():
        if not hasattr(module, name):
            continue
        function = getattr(module, name)
        args = [states[x] for x in inputs]
        batch = python_calls_in(lambda: function(*args, frame, threads=1))
        parts = batch if isinstance(batch, tuple) else (batch,)
        for k in range(BATCH):
            one = function(*[x[k] for x in args], frame)
            for got, want in zip(parts, one if isinstance(one, tuple) else (one,)):
                assert got.shape == (BATCH,) + want.shape and np.array_equal(got[k], want), f"{name}, state {k}"
        flat = np.concatenate([np.reshape(p, (BATCH, -1)) for p in parts], axis=1)
        out = np.full(flat.shape if isinstance(batch, tuple) else batch.shape, np.nan)
        written = python_calls_in(lambda: function(*args, frame, out=out, threads=2))
        assert all(np.shares_memory(p, out) for p in (written if isinstance(written, tuple) else (written,))), name
        assert np.array_equal(out.reshape(BATCH, -1), flat), name
        checked += 1
    assert checked == 6
