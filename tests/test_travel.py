"""Modules travel to other processes: a module and its functions pickle (by the module's folder
and build key), so multiprocessing, concurrent.futures and Dask call them; a process that lacks
the folder builds it from the recipe in model.json; rbdgen.dask.map runs a function over Dask
arrays of states, chunk by chunk, each chunk one batch call in C.
"""

import concurrent.futures
import multiprocessing
import os
import pickle
import shutil
import time

import numpy as np
import pytest

import rbdgen
from helpers import tiny_urdf, unpickle_elsewhere, write_urdf

SEED = 7


@pytest.fixture(scope="module")
def panda(bridge_modules):
    return bridge_modules["panda"][0]


def states(robot, count, seed=SEED):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(count, robot.nq)), rng.normal(size=(count, robot.nv)), rng.normal(size=(count, robot.nv))


def test_module_and_every_function_pickle(panda):
    assert pickle.loads(pickle.dumps(panda)) is panda
    public = [name for name in dir(panda) if not name.startswith("_") and callable(getattr(panda, name))]
    assert {"rnea", "aba_derivatives", "frame_jacobian", "point_jacobian", "casadi", "to_mujoco"} <= set(public)
    for name in public:
        function = getattr(panda, name)
        assert pickle.loads(pickle.dumps(function)) == function, name
    # the functions written in Python stay functions to help(): signature and doc
    import inspect
    import pydoc
    assert inspect.isroutine(panda.casadi) and "reference" in str(inspect.signature(panda.casadi))
    assert "casadi(function, frame=None, reference=None)" in pydoc.render_doc(panda, renderer=pydoc.plaintext)


def _spawned(module):
    """What a freshly spawned process makes of a pickled module (its folder and a call)."""
    q = np.linspace(-1, 1, module.nq)
    return module.__file__, module.rnea(q, q, q)


def test_spawned_processes_call_the_module(panda):
    q, v, a = states(panda, 6)
    context = multiprocessing.get_context("spawn")   # nothing inherited: the module arrives by pickle
    with context.Pool(2) as pool:
        rows = pool.starmap(panda.rnea, zip(q, v, a))
    np.testing.assert_array_equal(rows, panda.rnea(q, v, a))
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        folder, tau = pool.submit(_spawned, panda).result()
        jacobians = list(pool.map(panda.frame_jacobian, q, ["panda_hand"] * len(q)))
    assert folder == panda.__file__
    x = np.linspace(-1, 1, panda.nq)
    np.testing.assert_array_equal(tau, panda.rnea(x, x, x))
    np.testing.assert_array_equal(jacobians, panda.frame_jacobian(q, "panda_hand"))


def test_absent_folder_is_built_from_the_recipe(tmp_path):
    urdf = write_urdf(tmp_path, tiny_urdf())
    module = rbdgen.build(urdf, out_dir=str(tmp_path / "gen"), algorithms=["rnea"], contacts=["tip:3d"])
    blob = pickle.dumps(module)
    q = np.linspace(-1, 1, module.nq)
    expected = module.rnea(q, q, q)
    folder = os.path.dirname(module.__file__)
    shutil.rmtree(folder)
    code, out, err = unpickle_elsewhere(blob)
    assert code == 0, err
    path, tau = out.splitlines()
    assert path == module.__file__ and os.path.isfile(path)
    np.testing.assert_array_equal(eval(tau), expected)
    rebuilt = rbdgen.load(folder)
    assert rebuilt.contacts == module.contacts and set(rebuilt.operation_counts) == set(module.operation_counts)


def test_what_cannot_travel_says_why(tmp_path):
    urdf = write_urdf(tmp_path, tiny_urdf())
    module = rbdgen.build(urdf, out_dir=str(tmp_path / "gen"), algorithms=["rnea"])
    blob = pickle.dumps(module)
    rbdgen.build(urdf, out_dir=str(tmp_path / "gen"), algorithms=["rnea", "crba"])   # the folder rebuilt since
    code, _, err = unpickle_elsewhere(blob)
    assert code != 0 and "holds another build of the module than the one pickled" in err
    shutil.rmtree(tmp_path / "gen")
    with open(urdf, "a", encoding="utf-8") as f:
        f.write("<!-- edited -->\n")
    code, _, err = unpickle_elsewhere(blob)    # rebuilding would give another robot
    assert code != 0 and "changed since the module was built: building it would give another robot" in err
    assert not os.path.exists(tmp_path / "gen" / "tiny")
    os.remove(urdf)
    code, _, err = unpickle_elsewhere(blob)
    assert code != 0 and "put the module folder (or the robot's file) on storage every process sees" in err


def test_the_same_build_in_two_folders_is_two_modules(tmp_path):
    """A module object belongs to its folder: the same robot built into a second folder is
    loaded from there, so that pickling it names that folder (the first may be deleted)."""
    urdf = write_urdf(tmp_path, tiny_urdf(robot="twice"))
    first, second = (rbdgen.build(urdf, out_dir=str(tmp_path / out), algorithms=["rnea"]) for out in ("a", "b"))
    assert first is not second and first._META["build_key"] == second._META["build_key"]
    assert os.path.dirname(second.__file__) == str(tmp_path / "b" / "twice")
    assert rbdgen.load(str(tmp_path / "b" / "twice")) is second
    shutil.rmtree(tmp_path / "a")
    code, out, err = unpickle_elsewhere(pickle.dumps(second))
    assert code == 0 and out.splitlines()[0] == second.__file__, err


def test_a_folder_compiled_for_another_machine_is_refused(tmp_path):
    """model.json says which machine (CPU, compiler, Python) the module was compiled for; a
    process on another one refuses it with one line instead of running foreign code."""
    import json
    urdf = write_urdf(tmp_path, tiny_urdf(robot="foreign"))
    module = rbdgen.build(urdf, out_dir=str(tmp_path / "gen"), algorithms=["rnea"])
    blob = pickle.dumps(module)
    meta_path = os.path.join(os.path.dirname(module.__file__), "model.json")
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    meta["machine"] = "0" * 64      # as another machine would have written it
    with open(meta_path, "w", encoding="utf-8") as f:
        json.dump(meta, f)
    code, _, err = unpickle_elsewhere(blob)
    assert code != 0 and "was compiled for another machine" in err and "native=False" in err


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        yield client


MILLIONS = 2_000_000


def test_dask_over_millions_of_states_equals_the_local_batch(panda, cluster):
    """rnea over two million states in worker processes, in chunks of 250 000, bit for bit the
    local batch; and a function in parts (aba_derivatives), a frame's and a number's."""
    import dask.array as da
    import rbdgen.dask
    rng = da.random.default_rng(SEED)
    Q, V, A = (rng.standard_normal((MILLIONS, n), chunks=(250_000, -1)) for n in (panda.nq, panda.nv, panda.nv))
    q, v, a = (x.compute() for x in (Q, V, A))
    t0 = time.perf_counter()
    tau = rbdgen.dask.map(panda.rnea, Q, V, A).compute()
    t1 = time.perf_counter()
    local = panda.rnea(q, v, a)
    t2 = time.perf_counter()
    print(f"rnea over {MILLIONS} states: Dask (2 worker processes) {t1 - t0:.2f} s, one local batch {t2 - t1:.2f} s")
    np.testing.assert_array_equal(tau, local)
    few = slice(0, 5_000)
    Q, V, A = (da.from_array(x[few], chunks=(1_024, -1)) for x in (q, v, a))
    parts = rbdgen.dask.map(panda.aba_derivatives, Q, V, A)
    for got, expected in zip(da.compute(*parts), panda.aba_derivatives(q[few], v[few], a[few])):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(rbdgen.dask.map(panda.frame_jacobian, Q, "panda_hand").compute(),
                                  panda.frame_jacobian(q[few], "panda_hand"))
    energy = rbdgen.dask.map(panda.kinetic_energy, Q, V).compute()
    assert energy.shape == (5_000,)
    np.testing.assert_array_equal(energy, panda.kinetic_energy(q[few], v[few]))
    # NumPy batches are taken too, cut as the first Dask array
    np.testing.assert_array_equal(rbdgen.dask.map(panda.rnea, Q, v[few], a[few]).compute(), local[few])


def test_dask_map_names_its_tasks_and_takes_constants(panda):
    """Tasks named after the function and the same for the same call; f_ext, (B, njoints, 6),
    cut as the states; to_mujoco (no threads=) works."""
    import dask
    import dask.array as da
    import rbdgen.dask
    q, v, a = states(panda, 40)
    Q, V, A = (da.from_array(x, chunks=(16, -1)) for x in (q, v, a))
    f_ext = np.random.default_rng(SEED).normal(size=(40, len(panda.joint_names), 6))
    first, second = (rbdgen.dask.map(panda.rnea, Q, V, A, f_ext) for _ in range(2))
    assert first.name == second.name
    chunk_tasks = [key for key in dict(first.__dask_graph__())
                   if isinstance(key, tuple) and str(key[0]).startswith("rbdgen-")]
    assert len(chunk_tasks) == 3 and all(key[0].startswith("rbdgen-rnea-") for key in chunk_tasks), chunk_tasks
    np.testing.assert_array_equal(first.compute(scheduler="threads"), panda.rnea(q, v, a, f_ext))
    qpos, qvel = dask.compute(*rbdgen.dask.map(panda.to_mujoco, Q, V), scheduler="threads")
    for got, want in zip((qpos, qvel), panda.to_mujoco(q, v)):
        np.testing.assert_array_equal(got, want)


def test_dask_map_refuses_what_is_not_a_batch(panda):
    import dask.array as da
    import rbdgen.dask
    q = np.zeros(panda.nq)
    with pytest.raises(ValueError, match="no batch of states among the arguments"):
        rbdgen.dask.map(panda.rnea, q, q, q)
    Q = da.zeros((10, panda.nq), chunks=5)
    with pytest.raises(ValueError, match="argument 1 has 9 states, argument 0 10"):
        rbdgen.dask.map(panda.rnea, da.zeros((10, panda.nq), chunks=5), da.zeros((9, panda.nv), chunks=5),
                        np.zeros((10, panda.nv)))
    masked = Q[Q[:, 0] >= 0]     # chunks of unknown sizes
    with pytest.raises(ValueError, match="argument 0 has chunks of unknown sizes .* compute_chunk_sizes"):
        rbdgen.dask.map(panda.rnea, masked, masked, masked)
    with pytest.raises(ValueError, match="takes no out="):
        rbdgen.dask.map(panda.rnea, Q, Q, Q, out=np.zeros((10, panda.nv)))
