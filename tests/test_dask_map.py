"""rbdgen.dask.map builds its graph without computing anything, names a failing state by its row
in the whole batch, splits NumPy params per state with the chunks and takes an empty batch. Its
results are those of the module's direct batch call, bit for bit (the same C).

One small module (UR5 with its inertias and gravity as parameters) is built once for the file.
"""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import dask  # noqa: E402

import rbdgen  # noqa: E402
import rbdgen.dask  # noqa: E402
from rbdgen.dask import _renumbered  # noqa: E402

from helpers import robot_path  # noqa: E402

SEED = 50
# Sizes in multiples of 8 states: a batch runs up to 8 states per vector instruction and its last
# few one by one, whose roundings may differ; so every state takes the same path in a chunk as
# in the direct call, and the results are equal bit for bit.
B = 1_024
CHUNK = 128
BAD_ROW = 777    # in the seventh chunk: the chunk's own numbering would say 9
FRAME = "tool0"


@pytest.fixture(scope="module")
def ur5(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rbdgen.build(robot_path("ur5"), out_dir=str(tmp_path_factory.mktemp("dask_map")),
                            parameters=["inertia:all", "gravity"],
                            algorithms=["rnea", "aba", "frame_placement", "frame_jacobian_local_world_aligned"])


def states(module, count):
    rng = np.random.default_rng(SEED)
    q, v, tau = (rng.uniform(-1.0, 1.0, (count, module.nv)) for _ in range(3))
    params = module.nominal_params * rng.uniform(0.5, 1.5, (count, 1))   # a scaled robot: physical
    return q, v, tau, params


def counted(x, calls):
    """x as a Dask array whose every chunk, when computed, adds one to calls[its chunk's index]."""
    def chunk(block, block_info=None):
        calls[block_info[0]["chunk-location"][0]] += 1
        return block
    return da.from_array(x, chunks=(CHUNK, -1)).map_blocks(chunk, dtype=float)


class Spy:
    """A module's function that keeps the number of states of each call (and pickles, as map's
    task names need)."""

    def __init__(self, function):
        self.__wrapped__, self.rows = function, []

    def __call__(self, q, *args, **keywords):
        self.rows.append(len(q))
        return self.__wrapped__(q, *args, **keywords)


def test_map_computes_nothing_until_compute(ur5):
    """Building the graph runs no upstream step; computing runs each of its chunks once, also for
    a function in parts (both parts computed together) and with params per state."""
    q, v, tau, params = states(ur5, B)
    calls = [0] * (B // CHUNK)
    lazy = rbdgen.dask.map(ur5.aba, counted(q, calls), v, tau, params=counted(params, calls))
    rotation, position = rbdgen.dask.map(ur5.frame_placement, counted(q, calls), FRAME)
    assert calls == [0] * (B // CHUNK)
    np.testing.assert_array_equal(lazy.compute(scheduler="synchronous"), ur5.aba(q, v, tau, params=params))
    assert calls == [2] * (B // CHUNK)   # q and params: one chunk each
    got = dask.compute(rotation, position, scheduler="synchronous")
    assert calls == [3] * (B // CHUNK)
    for part, expected in zip(got, ur5.frame_placement(q, FRAME)):
        np.testing.assert_array_equal(part, expected)


def test_inputs_derived_from_one_upstream_compute_it_once(ur5):
    """q, v and tau made from one Dask array: each of its chunks is computed once, and every
    input sees the same values (a random upstream would otherwise give inconsistent states)."""
    q, _, _, _ = states(ur5, B)
    calls = [0] * (B // CHUNK)
    Q = counted(q, calls)
    lazy = rbdgen.dask.map(ur5.aba, Q, Q * 0.5, Q + 1.0)
    np.testing.assert_array_equal(lazy.compute(scheduler="synchronous"), ur5.aba(q, q * 0.5, q + 1.0))
    assert calls == [1] * (B // CHUNK)


def test_an_error_names_the_row_of_the_whole_batch(ur5):
    """A negative mass in row 777, in chunks of 128: the module's message, naming state 777."""
    q, v, tau, params = states(ur5, B)
    params[BAD_ROW, ur5.param_names.index("m_shoulder_link")] = -1.0
    with pytest.raises(ValueError, match=f"^state {BAD_ROW} of the batch: link 'shoulder_link': mass "
                                         "m_shoulder_link = -1 is negative; robot.check_params"):
        rbdgen.dask.map(ur5.aba, da.from_array(q, chunks=CHUNK), v, tau,
                        params=da.from_array(params, chunks=(CHUNK, -1))).compute(scheduler="synchronous")
    # a chunk of that one state (the module names no state for one of some errors)
    single = ((BAD_ROW, 1, B - BAD_ROW - 1), (ur5.nv,))
    with pytest.raises(ValueError, match=f"^state {BAD_ROW} of the batch: link 'shoulder_link'"):
        rbdgen.dask.map(ur5.aba, da.from_array(q, chunks=single), v, tau, params=params).compute(scheduler="threads")


def test_renumbered_shifts_every_format_of_the_modules_messages():
    """The formats of rbdgen/bindings/arguments.py and rbdgen/bindings/contact.py, shifted by
    the chunk's first row; one state's chunk gets the state first; other errors are left alone."""
    assert _renumbered("state 17 of the batch: parameter m is nan", 700, 100, B) == \
        "state 717 of the batch: parameter m is nan"
    assert _renumbered("params: M is singular at state 3 of the batch (a joint moves no mass)", 100, 100, B) == \
        "params: M is singular at state 103 of the batch (a joint moves no mass)"
    assert _renumbered("contacts are redundant: a give a singular G M^-1 G^T (state 0 of the batch); pass damping",
                       900, 50, B) == \
        "contacts are redundant: a give a singular G M^-1 G^T (state 900 of the batch); pass damping"
    assert _renumbered("params: M is singular (a joint moves no mass)", 42, 1, B) == \
        "state 42 of the batch: params: M is singular (a joint moves no mass)"
    assert _renumbered("params: M is singular (a joint moves no mass)", 0, 1, 1) is None
    assert _renumbered("threads: expected 0 or 1 to 64", 300, 100, B) is None


def test_numpy_params_per_state_are_split_with_the_chunks(ur5):
    """params= a NumPy (B, np): state k's params go with state k, as in the direct batch call;
    a (np,) vector is shared by all states; and by position as well as by keyword."""
    q, v, tau, params = states(ur5, B)
    Q = da.from_array(q, chunks=CHUNK)
    np.testing.assert_array_equal(rbdgen.dask.map(ur5.aba, Q, v, tau, params=params).compute(scheduler="threads"),
                                  ur5.aba(q, v, tau, params=params))
    np.testing.assert_array_equal(rbdgen.dask.map(ur5.rnea, Q, v, tau, None, params).compute(scheduler="threads"),
                                  ur5.rnea(q, v, tau, None, params))
    np.testing.assert_array_equal(
        rbdgen.dask.map(ur5.frame_jacobian, Q, FRAME, params=params).compute(scheduler="threads"),
        ur5.frame_jacobian(q, FRAME, params=params))
    np.testing.assert_array_equal(rbdgen.dask.map(ur5.aba, Q, v, tau, params=params[3]).compute(scheduler="threads"),
                                  ur5.aba(q, v, tau, params=params[3]))
    with pytest.raises(ValueError, match=rf"params: expected \({len(ur5.nominal_params)},\) or a batch "
                                         rf"\(B, {len(ur5.nominal_params)}\), got \({B}, 5\)"):
        rbdgen.dask.map(ur5.aba, Q, v, tau, params=params[:, :5])


def test_an_empty_batch_gives_empty_results(ur5):
    """B = 0: empty Dask arrays of the results' shapes, with and without params per state, and
    the function is never called on the (empty) inputs."""
    q, v, tau, params = (x[:0] for x in states(ur5, 1))
    Q = da.from_array(q, chunks=CHUNK)
    aba = Spy(ur5.aba)
    for keywords in ({}, {"params": params}, {"params": da.from_array(params)}):
        lazy = rbdgen.dask.map(aba, Q, v, tau, **keywords)
        assert lazy.shape == (0, ur5.nv)
        assert lazy.compute(scheduler="synchronous").shape == (0, ur5.nv)
    assert 0 not in aba.rows, aba.rows
    rotation, position = rbdgen.dask.map(ur5.frame_placement, Q, FRAME, params=params)
    assert [x.shape for x in dask.compute(rotation, position, scheduler="synchronous")] == [(0, 3, 3), (0, 3)]
