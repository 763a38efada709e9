#!/usr/bin/env python3
"""A function over many states through Dask (rbdgen.dask.map on a LocalCluster of worker
processes, one thread each) against the same batch in one local call on all cores
(threads=0), in one run: medians of --repeat runs each, and the ratio.

Three Dask figures: on the cluster, the results kept on the workers (persist: what a dataset
written chunk by chunk, or a reduction, costs) and gathered into this process (compute: the
results copied across processes); and Dask's threaded scheduler in this process (no cluster:
each chunk's batch call runs without the GIL, and nothing is copied). The inputs are made on the
workers (dask.array.random) and, for the local call and the threads, in this process; no
figure includes them.

    python benchmarks/bench_dask.py                        # panda aba_derivatives, 10^6 states
    python benchmarks/bench_dask.py talos --function rnea --states 2000000 --chunk 100000

A script, not a test: pytest never collects it.
"""

import os
import statistics
import sys
import tempfile
import time
import warnings


from common import cpu_name, log, robot_spec


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("robot", nargs="?", default="panda", help="a name of rbdgen.examples.ROBOTS or a .urdf")
    parser.add_argument("--function", default="aba_derivatives")
    parser.add_argument("--states", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=125_000, help="states per chunk (one batch call each)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="generated", help="where the module is built/reused (default: generated)")
    args = parser.parse_args()
    import dask
    import dask.array as da
    import rbdgen
    import rbdgen.dask
    from distributed import Client, LocalCluster, wait

    name, urdf, floating = robot_spec(args.robot, False, "bench_dask.py")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = rbdgen.build(urdf, out_dir=args.out, floating_base=floating, algorithms=[args.function], progress=log)
    function = getattr(robot, args.function)
    log(f"{name} {args.function}: {args.states} states, chunks of {args.chunk}, {args.workers} workers")
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      local_directory=tempfile.mkdtemp()) as cluster, Client(cluster) as client:
        rng = da.random.default_rng(0)
        inputs = [rng.standard_normal((args.states, n), chunks=(args.chunk, -1))
                  for n in (robot.nq, robot.nv, robot.nv)]
        inputs = client.persist(inputs)
        wait(inputs)
        local_inputs = [x.compute() for x in inputs]
        times = {"local": [], "dask kept": [], "dask gathered": [], "dask threads": []}
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            local = function(*local_inputs, threads=0)
            times["local"].append(time.perf_counter() - t0)
            del local
            lazy = rbdgen.dask.map(function, *inputs)
            lazy = list(lazy) if isinstance(lazy, tuple) else [lazy]
            t0 = time.perf_counter()
            kept = client.persist(lazy)
            wait(kept)
            times["dask kept"].append(time.perf_counter() - t0)
            del kept
            t0 = time.perf_counter()
            gathered = dask.compute(*lazy)
            times["dask gathered"].append(time.perf_counter() - t0)
            del gathered
            local_lazy = rbdgen.dask.map(function, *[da.from_array(x, chunks=(args.chunk, -1)) for x in local_inputs])
            local_lazy = list(local_lazy) if isinstance(local_lazy, tuple) else [local_lazy]
            t0 = time.perf_counter()
            threaded = dask.compute(*local_lazy, scheduler="threads", num_workers=args.workers)
            times["dask threads"].append(time.perf_counter() - t0)
            del threaded
    local = statistics.median(times["local"])
    print(f"{name} {args.function}, {args.states} states (chunks of {args.chunk}); {cpu_name()}, "
          f"{os.cpu_count()} cores; medians of {args.repeat}")
    for key, values in times.items():
        median = statistics.median(values)
        print(f"  {key:14s} {median:7.3f} s  {median / local:5.2f}x the local call  "
              f"({1e9 * median / args.states:6.0f} ns a state)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
