"""GPU timings (issue 47), one run on one GPU: ns per state of rbdgen's CUDA kernels, bare (the
driver launch, CUDA events) and through module.torch (CUDA tensors in and out), beside our C
batch on all the host's cores and, where mujoco.mjx is installed, MJX's jit(vmap(...)) in
float64 and float32 on the same GPU (the robot's URDF compiled by MuJoCo, meshes dropped).
Medians of --repeats timed runs after a warm-up.

    python benchmarks/bench_gpu.py [--robots panda,talos] [--sizes 1024,16384,131072,1048576]
"""

import argparse
import os
import re
import statistics
import tempfile
import time

import numpy as np
import torch

import rbdgen
from rbdgen.examples import ROBOTS, robot_path

FUNCTIONS = ["rnea", "crba", "aba", "minv", "rnea_derivatives", "aba_derivatives"]
MJX = {"rnea": "inverse", "crba": "crb", "aba": "forward"}


def gpu_ns(run, count, repeats):
    """ns per state of run() on the GPU (CUDA events), median of `repeats`."""
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e6 / count)
    return statistics.median(times)


def host_ns(run, count, repeats):
    run()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e9 / count)
    return statistics.median(times)


def states(module, count, device):
    rng = np.random.default_rng(0)
    nq, nv = module.nq, module.nv
    q = rng.uniform(-1, 1, size=(count, nq))
    if nq != nv:   # a free-flyer's unit quaternion
        quat = rng.normal(size=(count, 4))
        q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    host = {"q": q, "v": rng.normal(size=(count, nv)), "a": rng.normal(size=(count, nv)),
            "tau": rng.normal(size=(count, nv))}
    return host, {k: torch.tensor(x, device=device) for k, x in host.items()}


def bare(module, name, device_states, count):
    """The kernel alone: pointers of CUDA tensors, launched on the current stream."""
    from importlib import import_module
    function = module._FUNCTIONS.table[name]
    d = function.description
    cuda = import_module(module.__name__ + "._cuda")
    kernels = module._FUNCTIONS.kernels()
    nominal = torch.as_tensor(module._PARAMETERS.nominal, device="cuda")
    args = [device_states[p.name] if p.per_state else nominal for p in d.inputs]
    out = torch.empty((count, d.size), dtype=torch.float64, device="cuda")
    pointers = []
    for p, x in zip(d.inputs, args):
        pointers.append(cuda.ctypes.c_void_p(x.data_ptr()))
        if p.broadcast:
            pointers.append(cuda.ctypes.c_int(1))
    pointers.append(cuda.ctypes.c_void_p(out.data_ptr()))
    stream = torch.cuda.current_stream().cuda_stream
    return lambda: kernels.launch(0, d.cname, stream, pointers, count)


def mjx_runs(path, count, dtype):
    """MJX's functions of `count` states, or {} without mujoco.mjx (or a model it cannot load)."""
    try:
        import jax
        import mujoco
        from mujoco import mjx
        jax.config.update("jax_enable_x64", True)
        text = open(path).read()
        text = re.sub(r"<visual>.*?</visual>|<collision>.*?</collision>", "", text, flags=re.S)
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
            f.write(text)
        model = mjx.put_model(mujoco.MjModel.from_xml_path(f.name))
    except Exception as error:   # noqa: BLE001  (reported, and the column left out)
        print(f"  MJX left out: {type(error).__name__}: {error}")
        return {}
    data = mjx.make_data(model)
    cast = lambda tree: jax.tree_util.tree_map(lambda x: x.astype(dtype) if hasattr(x, "dtype") and x.dtype.kind == "f" else x, tree)
    model, data = cast(model), cast(data)
    rng = np.random.default_rng(1)
    batch = jax.vmap(lambda q, v: data.replace(qpos=q, qvel=v, qacc=v, qfrc_applied=v))(
        jax.numpy.asarray(rng.uniform(-1, 1, (count, model.nq)), dtype), jax.numpy.asarray(rng.normal(size=(count, model.nv)), dtype))
    runs = {}
    for ours, theirs in MJX.items():
        step = jax.jit(jax.vmap(getattr(mjx, theirs), in_axes=(None, 0)))
        runs[ours] = lambda step=step: jax.block_until_ready(step(model, batch))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default="panda,talos")
    parser.add_argument("--sizes", default="1024,16384,131072,1048576")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--output", default="generated_gpu")
    args = parser.parse_args()
    print(f"GPU: {torch.cuda.get_device_name()}, host: {os.cpu_count()} cores, torch {torch.__version__}")
    for robot in args.robots.split(","):
        path, floating = robot_path(robot), ROBOTS[robot][1]
        t0 = time.perf_counter()
        module = rbdgen.build(path, args.output, floating_base=floating, algorithms=FUNCTIONS, cuda=True)
        print(f"\n{robot}: built with CUDA in {time.perf_counter() - t0:.1f} s (nv {module.nv})")
        print(f"{'function':18} {'B':>8} {'kernel':>9} {'torch':>9} {'C, host':>9} {'MJX f64':>9} {'MJX f32':>9}  ns/state")
        for count in [int(s) for s in args.sizes.split(",")]:
            host, device = states(module, count, "cuda")
            mjx64 = mjx_runs(path, count, np.float64) if count <= 131072 else {}
            mjx32 = mjx_runs(path, count, np.float32) if count <= 131072 else {}
            for name in FUNCTIONS:
                d = module._DESCRIPTIONS[name]
                ins = [p.name for p in d.inputs if p.per_state]
                kernel = gpu_ns(bare(module, name, device, count), count, args.repeats)
                op = module.torch(name)
                through = gpu_ns(lambda: op(*[device[n] for n in ins]), count, args.repeats)
                c = host_ns(lambda: getattr(module, name)(*[host[n] for n in ins]), count, max(3, args.repeats // 3))
                cells = [f"{gpu_ns(runs[name], count, args.repeats):9.2f}" if name in runs else f"{'':>9}"
                         for runs in (mjx64, mjx32)]
                print(f"{name:18} {count:8d} {kernel:9.2f} {through:9.2f} {c:9.2f} {' '.join(cells)}", flush=True)


if __name__ == "__main__":
    main()
