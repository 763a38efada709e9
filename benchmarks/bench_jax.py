#!/usr/bin/env python3
"""The JAX bridge's cost: a jitted call against the module's own Python call and its C time,
and a jitted vmap over --batch states against the module's batch call.

For each function (one state, the same 64 random states cycled): the C time (one batch call of
4096 states on one thread, per state), the module's Python call, the jitted JAX function
(block_until_ready; inputs already JAX arrays), a jitted function with the same inputs and
outputs that only fills its outputs (JAX's own dispatch floor, which grows with the count of
inputs and outputs) and, for rnea, jax.pure_callback (the other way of calling C from JAX,
which the bridge does not use). Then jax.jit(jax.vmap(f)) over
--batch states against module.f on the same arrays, both on all cores (threads=0). Medians of
--rounds rounds, in interleaved order.

    python benchmarks/bench_jax.py panda solo12

A script, not a test: pytest never collects it.
"""

import os
import platform
import statistics
import time
import warnings

import numpy as np

import rbdgen
from common import cpu_name, log, robot_parser, robot_spec, timed
from rbdgen.model.states import random_state

warnings.filterwarnings("ignore", message=".*<mimic> is ignored.*")
DEFAULT_ROBOTS = ("panda", "solo12")
ALGORITHMS = ["rnea", "crba", "aba", "rnea_derivatives", "aba_derivatives", "frame_placement",
              "frame_jacobian_local_world_aligned"]
FUNCTIONS = ("rnea", "crba", "aba", "rnea_derivatives", "aba_derivatives")
INPUTS = {"rnea": ("q", "v", "a"), "crba": ("q",), "aba": ("q", "v", "tau"), "rnea_derivatives": ("q", "v", "a"),
          "aba_derivatives": ("q", "v", "tau")}
K = 64
C_BATCH = 4096
JIT_TARGET_US = 5.0       # issue 18: a jitted call's overhead above the C time
VMAP_TARGET = 1.5         # issue 18: vmap over the batch / the module's batch call


def call_shapes(jitted, fn, frame, *x):
    return jitted(*x, frame) if fn == "frame_placement" else jitted(*x)


def median_of(variants, rounds, calls):
    """{key: median ns per call} of common.timed's interleaved rounds."""
    return {key: statistics.median(runs) for key, runs in timed(variants, rounds, calls).items()}


def bench_robot(name, urdf, floating, args):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    log(f"== {name}: building (or reusing) the module in {args.out} ...")
    module = rbdgen.build(urdf, out_dir=args.out, floating_base=floating, algorithms=ALGORITHMS)
    model = rbdgen.load_urdf(urdf, floating_base=floating)
    rng = np.random.default_rng(args.seed)
    states = []
    for _ in range(K):
        q, v, a = random_state(model, rng)
        states.append({"q": q, "v": v, "a": a, "tau": rng.normal(size=model.nv)})
    frame = module.frames[-1]
    rows = []
    for fn in FUNCTIONS + ("frame_placement",):
        names = INPUTS.get(fn, ("q",))
        numbers = [tuple(s[n] for n in names) for s in states]
        arrays = [tuple(jnp.asarray(x) for x in xs) for xs in numbers]
        ours = getattr(module, fn)
        jitted = module.jax(fn)
        if fn == "frame_placement":
            numbers = [xs + (frame,) for xs in numbers]
            jitted = jax.jit(jitted, static_argnums=1)
            call = lambda *x: jax.block_until_ready(jitted(*x, frame))   # noqa: E731
        else:
            jitted = jax.jit(jitted)
            call = lambda *x: jax.block_until_ready(jitted(*x))   # noqa: E731
        # JAX's own cost of a jitted call with these inputs and outputs: one that only fills them
        shapes = jax.tree_util.tree_leaves(jax.eval_shape(lambda *x: call_shapes(jitted, fn, frame, *x), *arrays[0]))
        filler = jax.jit(lambda *x: tuple(jnp.full(s.shape, x[0][0]) for s in shapes))
        floor = lambda *x: jax.block_until_ready(filler(*x))   # noqa: E731
        variants = [("module", ours, numbers), ("jax", call, arrays), ("floor", floor, arrays)]
        if fn == "rnea":
            shape = jax.ShapeDtypeStruct((model.nv,), jnp.float64)
            callback = jax.jit(lambda q, v, a: jax.pure_callback(
                lambda q, v, a: module.rnea(np.asarray(q), np.asarray(v), np.asarray(a)), shape, q, v, a))
            variants.append(("pure_callback", lambda *x: callback(*x).block_until_ready(), arrays))
        times = median_of(variants, args.rounds, args.calls)
        picks = [k % K for k in range(C_BATCH)]
        batch = [np.array([numbers[k][i] for k in picks]) for i in range(len(names))]
        extra = (frame,) if fn == "frame_placement" else ()
        c_runs = []
        for _ in range(7):
            t0 = time.perf_counter_ns()
            ours(*batch, *extra, threads=1)
            c_runs.append((time.perf_counter_ns() - t0) / C_BATCH)
        c_ns = statistics.median(c_runs)
        rows.append({"function": fn, "c_ns": c_ns, "module_ns": times["module"], "jax_ns": times["jax"],
                     "floor_ns": times["floor"], "callback_ns": times.get("pure_callback")})
    # vmap over the batch against the module's batch call
    big = [random_state(model, rng) for _ in range(args.batch)]
    Q, V = (np.array([s[k] for s in big]) for k in range(2))
    T = rng.normal(size=(args.batch, model.nv))
    vmaps = []
    for fn in ("rnea", "aba", "crba"):
        xs = (Q,) if fn == "crba" else (Q, V, T)
        vmapped = jax.jit(jax.vmap(module.jax(fn)))
        jx = tuple(jnp.asarray(x) for x in xs)
        ours = getattr(module, fn)
        times = median_of([("module", ours, [xs]), ("jax", lambda *x: vmapped(*x).block_until_ready(), [jx])],
                          args.rounds, 3)
        vmaps.append({"function": fn, "module_ns": times["module"] / args.batch, "jax_ns": times["jax"] / args.batch})
    return {"robot": name, "nq": model.nq, "nv": model.nv, "rows": rows, "vmaps": vmaps}


def print_result(result, batch):
    print(f"\n{result['robot']} (nq {result['nq']}, nv {result['nv']}), one state, ns per call. JAX floor: a jitted "
          "function with the same inputs and outputs that only fills them (JAX's own dispatch); the bridge adds "
          "jax.jit - floor - C")
    print(f"{'function':18} {'C':>7} {'module':>7} {'jax.jit':>8} {'jit - C':>8} {'floor':>7} {'bridge adds':>12} "
          f"{'pure_callback':>14}")
    for row in result["rows"]:
        over = row["jax_ns"] - row["c_ns"]
        callback = f"{row['callback_ns']:14.0f}" if row["callback_ns"] else ""
        print(f"{row['function']:18} {row['c_ns']:7.0f} {row['module_ns']:7.0f} {row['jax_ns']:8.0f} "
              f"{over:7.0f}{'' if over <= JIT_TARGET_US * 1e3 else '!'} {row['floor_ns']:7.0f} "
              f"{row['jax_ns'] - row['floor_ns'] - row['c_ns']:12.0f} {callback}")
    print(f"jax.jit(jax.vmap(f)) over {batch} states against the module's batch call, ns per state (threads=0):")
    for row in result["vmaps"]:
        ratio = row["jax_ns"] / row["module_ns"]
        print(f"  {row['function']:8} module {row['module_ns']:8.0f}  jax {row['jax_ns']:8.0f}  "
              f"ratio {ratio:.2f}{'' if ratio <= VMAP_TARGET else ' !'}")


def main(argv=None):
    parser = robot_parser(__doc__, DEFAULT_ROBOTS)
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed block (default: 2000)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default: 7)")
    parser.add_argument("--batch", type=int, default=10000, help="states of the vmap (default: 10000)")
    args = parser.parse_args(argv)
    import jax
    print(f"Python {platform.python_version()}, jax {jax.__version__}, {cpu_name()}; "
          f"load average {os.getloadavg()[0]:.2f}")
    for arg in args.robots:
        name, urdf, floating = robot_spec(arg, args.floating_base, "bench_jax")
        print_result(bench_robot(name, urdf, floating, args), args.batch)


if __name__ == "__main__":
    main()
