"""GPU timings (issue 47), one run on one GPU: ns per state of rbdgen's CUDA kernels, bare (the
driver launch, CUDA events) and through module.torch (CUDA tensors in and out: a call, twenty
back to back, and one replayed from a CUDA graph), beside our C batch on all the host's cores
and, where mujoco.mjx is installed, MJX's jit(vmap(...)) in float64 and float32 on the same GPU
(the robot's URDF compiled by MuJoCo, meshes dropped).
Medians of --repeats timed runs after a warm-up. Then, as asked:
  --peers URDF   GRiD's robot: ours beside GRiD's kernels (the lines benchmarks/grid_timing.cu
                 printed, --grid-results; its check file, --grid-check, held against our module)
                 and adam's batched PyTorch (mass_matrix for crba, bias_force for rnea: a = 0,
                 free base), where adam is installed;
  --parameters   Panda with every inertial parameter per state (inertia:all, B x np);
  --build        Panda's default build without and with the CUDA target;
  --registers    each kernel with its registers capped (64,128: NVRTC's --maxrregcount), its
                 parts inlined (inline) or long programs in parts of N statements (partsN).

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


def pipelined_ns(run, count, repeats, calls=20):
    """ns per state of `calls` back-to-back runs (the host's work on one call overlapping the
    GPU's on the one before, as in a loop of steps), median of `repeats`."""
    return gpu_ns(lambda: [run() for _ in range(calls)], count * calls, repeats)


def graphed(run):
    """run() captured once in a CUDA graph (as torch.compile's reduce-overhead mode does): its
    replay, the host's work of a call gone; None where the capture fails (said why)."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):   # (the kernels loaded before the capture)
            run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run()
        return graph.replay
    except Exception as error:   # noqa: BLE001  (reported, and the cell left empty)
        print(f"  no CUDA graph: {type(error).__name__}: {error}")
        return None


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


def bare(module, name, device_states, count, kernels=None):
    """The kernel alone: pointers of CUDA tensors, launched on the current stream."""
    from importlib import import_module
    function = module._FUNCTIONS.table[name]
    d = function.description
    cuda = import_module(module.__name__ + "._cuda")
    kernels = kernels or module._FUNCTIONS.kernels()
    nominal = torch.as_tensor(module._PARAMETERS.nominal, device="cuda")
    setting = lambda p: nominal if p.broadcast else torch.full((p.size,), float(p.default or 0), device="cuda")
    args = [device_states[p.name] if p.per_state else setting(p) for p in d.inputs]
    out = torch.empty((count, d.size), dtype=torch.float64, device="cuda")
    pointers = []
    for p, x in zip(d.inputs, args):
        pointers.append(cuda.ctypes.c_void_p(x.data_ptr()))
        if not p.per_state:
            pointers.append(cuda.ctypes.c_int(1))
    pointers.append(cuda.ctypes.c_void_p(out.data_ptr()))
    stream = torch.cuda.current_stream().cuda_stream
    return lambda: kernels.launch(0, d.cname, stream, pointers, count)


def variant(module, choice):
    """The module's kernels compiled another way: a number, with at most that many registers a
    thread (NVRTC's --maxrregcount; ptxas keeps the rest in local memory: more threads an SM,
    more traffic); "inline", a long program's parts inlined (no workspace between them);
    "partsN", long programs cut into parts of N statements rather than 600 (fewer registers and
    spills, more workspace traffic: docs/performance.md), the module built again so."""
    from importlib import import_module
    if choice.startswith("parts"):
        from rbdgen.codegen import render
        defaults = render.function_data.__defaults__
        render.function_data.__defaults__ = (int(choice[5:]),)   # (the build's workers fork after)
        try:
            source = module._META["source"]
            other = rbdgen.build(source["urdf"], tempfile.mkdtemp(prefix=choice), floating_base=source["floating_base"],
                                 algorithms=list(module._DESCRIPTIONS), cuda=True, verify=False)
        finally:
            render.function_data.__defaults__ = defaults
        return other._FUNCTIONS.kernels()
    cuda = import_module(module.__name__ + "._cuda")
    extra = ("-DRBDGEN_NOINLINE=",) if choice == "inline" else (f"--maxrregcount={int(choice)}",)

    class Variant(cuda.Kernels):
        def cubin(self, cname, arch):   # (not kept: the module's cubins stay as built)
            return cuda.compile_module_function(self.folder, self.module, cname, arch, extra)
    return Variant(module._HERE, module._META["module"])


def variants(module, names, count, choices, repeats):
    """ns a state of each kernel as compiled, and compiled another way (variant)."""
    _, device = states(module, count, "cuda")
    print(f"  kernels compiled otherwise ({count} states), ns/state: " + " ".join(f"{c:>7}" for c in ["as is", *choices]))
    kernels = [None] + [variant(module, choice) for choice in choices]
    for name in names:
        times = [gpu_ns(bare(module, name, device, count, k), count, repeats) for k in kernels]
        print(f"  {name:18} " + " ".join(f"{t:7.2f}" for t in times), flush=True)


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


GRID = {"rnea": "ID", "minv": "Minv", "aba": "FD", "rnea_derivatives": "dID", "aba_derivatives": "dFD"}


def grid_results(paths):
    """{(GRiD's function, float|double, states): ns a state} from grid_timing's output files."""
    found = {}
    for path in paths:
        for line in open(path):
            if line.startswith("GRiD "):
                _, function, real, count, ns = line.split()
                found[(function, real, int(count))] = float(ns)
    return found


def grid_check(path, module):
    """GRiD's outputs for four states (grid_timing's check file) against our module's: the
    largest difference relative to the largest entry, per function (in the layout, among the
    few a GRiD output may have, that agrees best: its matrices are column-major)."""
    rows = {line.split()[0]: np.array(line.split()[1:], dtype=float) for line in open(path)}
    n, count = int(rows["joints"][0]), int(rows["states"][0])
    q, v, u = (rows["q_qd_u"].reshape(count, 3, n)[:, k] for k in range(3))
    qdd = rows["qdd"].reshape(count, n)
    ours = {"ID": module.rnea(q, v, qdd), "FD": module.aba(q, v, u),
            "Minv": np.triu(module.minv(q)),
            "dID": np.concatenate(module.rnea_derivatives(q, v, qdd)[:2], axis=-1),
            "dFD": np.concatenate(module.aba_derivatives(q, v, u)[:2], axis=-1)}
    errors = {}
    for name, expected in ours.items():
        theirs = rows[name].reshape(count, -1)
        shape = expected.shape[1:]
        layouts = [theirs.reshape(count, *shape)]
        if len(shape) == 2:
            layouts.append(theirs.reshape(count, *shape[::-1]).transpose(0, 2, 1))
            if name == "Minv":
                layouts = [np.triu(x) for x in layouts] + [np.triu(np.swapaxes(x, 1, 2)) for x in layouts]
        scale = max(np.abs(expected).max(), 1e-300)
        errors[name] = min(np.abs(x - expected).max() / scale for x in layouts)
    return errors


def adam_runs(urdf, module, count, device):
    """adam's batched PyTorch (float64) on `count` states: {our function: run}, after checking
    that adam's joint block agrees with ours; {} without adam."""
    rng = np.random.default_rng(2)
    q, v = rng.uniform(-1, 1, (count, module.nq)), rng.normal(size=(count, module.nv))
    try:
        from adam.pytorch import KinDynComputationsBatch
        adam = KinDynComputationsBatch(urdf, list(module.joint_names), device=torch.device(device), dtype=torch.float64,
                                       gravity=torch.tensor([0, 0, -9.81, 0, 0, 0], dtype=torch.float64))
        H = torch.eye(4, dtype=torch.float64, device=device).expand(count, 4, 4).contiguous()
        Q, V = (torch.tensor(x, device=device) for x in (q, v))
        base = torch.zeros(count, 6, dtype=torch.float64, device=device)
        M = adam.mass_matrix(H, Q)[:4, 6:, 6:].cpu().numpy()
        h = adam.bias_force(H, Q, base, V)[:4, 6:].cpu().numpy()
    except Exception as error:   # noqa: BLE001  (reported, and the column left out)
        print(f"  adam left out: {type(error).__name__}: {error}")
        return {}
    print(f"  adam against ours (4 states): M {np.abs(M - module.crba(q[:4])).max():.1e}, "
          f"bias {np.abs(h - module.rnea(q[:4], v[:4], np.zeros((4, module.nv)))).max():.1e}")
    return {"crba": lambda: adam.mass_matrix(H, Q), "rnea": lambda: adam.bias_force(H, Q, base, V)}


def peers(args):
    """GRiD's robot: our kernels, GRiD's in float and double, adam's batch; ns a state."""
    module = rbdgen.build(args.peers, args.output, algorithms=list(GRID) + ["crba"], cuda=True)
    found = grid_results(args.grid_results.split(",")) if args.grid_results else {}
    if args.grid_check:
        errors = grid_check(args.grid_check, module)
        print("GRiD (double) against our module, 4 states: " + ", ".join(f"{k} {e:.1e}" for k, e in errors.items()))
    print(f"\n{module.name} (nv {module.nv}): ours against GRiD (float, double) and adam (float64), ns/state")
    print(f"{'function':18} {'B':>8} {'ours':>9} {'GRiD f32':>9} {'GRiD f64':>9} {'adam':>9}  ratios")
    for count in [int(x) for x in args.sizes.split(",")]:
        _, device = states(module, count, "cuda")
        adam = adam_runs(args.peers, module, count, "cuda") if count <= 131072 else {}
        for name in list(GRID) + ["crba"]:
            ours = gpu_ns(bare(module, name, device, count), count, args.repeats)
            theirs = [found.get((GRID.get(name), real, count)) for real in ("float", "double")]
            theirs.append(gpu_ns(adam[name], count, args.repeats) if name in adam else None)
            cells = " ".join(f"{t:9.2f}" if t else f"{'':>9}" for t in theirs)
            ratios = " ".join(f"{t / ours:.1f}x" for t in theirs if t)
            print(f"{name:18} {count:8d} {ours:9.2f} {cells}  {ratios}", flush=True)


def parameters_per_state(args):
    """Panda, every inertial parameter per state (domain randomization): aba and
    rnea_derivatives with params (B, np) on the GPU."""
    names = ["aba", "rnea_derivatives"]
    module = rbdgen.build(robot_path("panda"), args.output, algorithms=names, parameters=["inertia:all"], cuda=True)
    nominal = np.asarray(module._PARAMETERS.nominal)
    print(f"\npanda, inertia:all ({nominal.size} parameters a state), ns/state")
    for count in [int(x) for x in args.sizes.split(",")]:
        host, device = states(module, count, "cuda")
        params = torch.tensor(nominal * (1 + 0.05 * np.random.default_rng(3).random((count, nominal.size))), device="cuda")
        for name in names:
            op = module.torch(name)
            ins = [device[p.name] for p in module._DESCRIPTIONS[name].inputs if p.per_state]
            print(f"{name:18} {count:8d} {gpu_ns(lambda: op(*ins, params=params), count, args.repeats):9.2f} (torch)",
                  flush=True)


def build_cost(args):
    """Panda's default build (fresh folders, verification included) without and with CUDA."""
    times = []
    for cuda in (False, True):
        with tempfile.TemporaryDirectory() as folder:
            t0 = time.perf_counter()
            rbdgen.build(robot_path("panda"), folder, cuda=cuda)
            times.append(time.perf_counter() - t0)
    print(f"\npanda default build: {times[0]:.1f} s, with CUDA {times[1]:.1f} s ({times[1] / times[0]:.2f}x)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default="panda,talos")
    parser.add_argument("--sizes", default="1024,16384,131072,1048576")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--output", default="generated_gpu")
    parser.add_argument("--mjx-sizes", default="131072", help="the sizes MJX is timed at (each compiles anew)")
    parser.add_argument("--peers", help="GRiD's URDF: ours beside GRiD and adam on it")
    parser.add_argument("--grid-results", help="grid_timing's outputs, comma-separated")
    parser.add_argument("--grid-check", help="grid_timing's check file")
    parser.add_argument("--parameters", action="store_true")
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--registers", default="", help="register caps (inline: parts inlined; partsN: parts of N "
                                                       "statements) to try at 131 072 states, as 64,128,inline,parts300")
    args = parser.parse_args()
    print(f"GPU: {torch.cuda.get_device_name()}, host: {os.cpu_count()} cores, torch {torch.__version__}")
    mjx_sizes = [int(x) for x in args.mjx_sizes.split(",") if x]
    for robot in [r for r in args.robots.split(",") if r]:
        path, floating = robot_path(robot), ROBOTS[robot][1]
        t0 = time.perf_counter()
        module = rbdgen.build(path, args.output, floating_base=floating, algorithms=FUNCTIONS, cuda=True)
        print(f"\n{robot}: built with CUDA in {time.perf_counter() - t0:.1f} s (nv {module.nv})")
        print(f"{'function':18} {'B':>8} {'kernel':>9} {'torch':>9} {'torch, 20':>9} {'graph':>9} {'C, host':>9} "
              f"{'MJX f64':>9} {'MJX f32':>9}  ns/state (torch, 20: twenty calls back to back; graph: the torch "
              "call in a CUDA graph, replayed)")
        for count in [int(s) for s in args.sizes.split(",")]:
            host, device = states(module, count, "cuda")
            mjx64 = mjx_runs(path, count, np.float64) if count in mjx_sizes else {}
            mjx32 = mjx_runs(path, count, np.float32) if count in mjx_sizes else {}
            for name in FUNCTIONS:
                d = module._DESCRIPTIONS[name]
                ins = [p.name for p in d.inputs if p.per_state]
                kernel = gpu_ns(bare(module, name, device, count), count, args.repeats)
                op = module.torch(name)
                through = gpu_ns(lambda: op(*[device[n] for n in ins]), count, args.repeats)
                piped = pipelined_ns(lambda: op(*[device[n] for n in ins]), count, args.repeats)
                replay = graphed(lambda: op(*[device[n] for n in ins]))
                graph = f"{gpu_ns(replay, count, args.repeats):9.2f}" if replay else f"{'':>9}"
                c = host_ns(lambda: getattr(module, name)(*[host[n] for n in ins]), count, 3) if count <= 131072 else None
                cells = [f"{gpu_ns(runs[name], count, args.repeats):9.2f}" if name in runs else f"{'':>9}"
                         for runs in (mjx64, mjx32)]
                host_cell = f"{c:9.2f}" if c is not None else f"{'':>9}"
                print(f"{name:18} {count:8d} {kernel:9.2f} {through:9.2f} {piped:9.2f} {graph} {host_cell} {' '.join(cells)}",
                      flush=True)
        if args.registers:
            variants(module, FUNCTIONS, 131072, args.registers.split(","), args.repeats)
    if args.peers:
        peers(args)
    if args.parameters:
        parameters_per_state(args)
    if args.build:
        build_cost(args)


if __name__ == "__main__":
    main()
