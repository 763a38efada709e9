#!/usr/bin/env python3
"""A cold build's time on more cores than this machine has: the build runs here with its jobs
timed (each function's generation, each C compilation, each NVRTC compilation, the glue), then
its jobs are replayed on N workers as the build schedules them (costliest first, a job's
follow-ups, such as a function's compilations, ready when it ends), plus the measured time
before and after the workers.

    python benchmarks/build_schedule.py                         # panda: C, then with --cuda-arch sm_90
    python benchmarks/build_schedule.py --workers 2,16,64 --robot talos

The replay on this machine's own core count is printed beside the measured build, so that it
can be checked. It assumes a job takes as long on every core count (no memory-bandwidth or
clock change), which the GPU machine's own build measures (`bench_gpu.py --build`).

A script, not a test: pytest never collects it.
"""

import argparse
import heapq
import os
import tempfile
import time
import warnings

import rbdgen
from rbdgen import examples
from rbdgen.codegen import compilation


class Recorder:
    """Patches Compilation to time every job in its worker and to note which jobs a job's end
    made ready (its follow-ups)."""

    def __init__(self):
        self.jobs = {}        # tag -> [cost, seconds]
        self.first, self.after = [], {}
        self.pool = None

    def __enter__(self):
        self.saved = compilation.Compilation._submit, compilation.Compilation._finished, compilation.Compilation.run
        submit, finished, run = self.saved
        recorder = self

        def _submit(comp, pool):
            if not recorder.first and comp.jobs:
                recorder.first = [job[1] for job in comp.jobs]
            comp.jobs = [job if job[2] is _timed_job else (job[0], job[1], _timed_job, (job[1], job[2], *job[3]))
                         for job in comp.jobs]
            for cost, tag, _, _ in comp.jobs:
                recorder.jobs.setdefault(tag, [cost, None])
            submit(comp, pool)

        def _finished(comp, future):
            tag = comp.pending[future]
            value, seconds = future.result()
            future._result = value
            recorder.jobs[tag][1] = seconds
            before = {job[1] for job in comp.jobs}
            finished(comp, future)
            recorder.after[tag] = [job[1] for job in comp.jobs if job[1] not in before]

        def _run(comp):
            t0 = time.perf_counter()
            try:
                return run(comp)
            finally:
                recorder.pool = time.perf_counter() - t0

        compilation.Compilation._submit, compilation.Compilation._finished = _submit, _finished
        compilation.Compilation.run = _run
        return self

    def __exit__(self, *exc):
        compilation.Compilation._submit, compilation.Compilation._finished, compilation.Compilation.run = self.saved

    def replay(self, workers):
        """The workers' span on `workers` workers, costliest first as Compilation submits."""
        ready = [(-self.jobs[tag][0], order, tag) for order, tag in enumerate(self.first)]
        order, now, running = len(ready), 0.0, []
        while ready or running:
            ready.sort()
            while ready and len(running) < workers:
                _, _, tag = ready.pop(0)
                heapq.heappush(running, (now + self.jobs[tag][1], order, tag))
                order += 1
            now, _, tag = heapq.heappop(running)
            for follow in self.after.get(tag, []):
                ready.append((-self.jobs[follow][0], order, follow))
                order += 1
        return now


def _timed_job(tag, run, *args):
    t0 = time.perf_counter()
    return run(*args), time.perf_counter() - t0


def timed_build(path, floating, **options):
    """(the build's seconds, the Recorder of its jobs)."""
    with Recorder() as recorder, tempfile.TemporaryDirectory(prefix="rbdgen-schedule-") as out:
        t0 = time.perf_counter()
        rbdgen.build(path, out, floating_base=floating, **options)
        return time.perf_counter() - t0, recorder


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robot", default="panda", help="a robot of rbdgen.examples (default panda)")
    parser.add_argument("--workers", default=f"{os.cpu_count()},16", help="core counts to replay on (default: this machine's, 16)")
    parser.add_argument("--cuda-arch", default="sm_90", help="the architecture of the CUDA build (default sm_90)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    path, floating = examples.robot_path(args.robot), examples.ROBOTS[args.robot][1]
    counts = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="rbdgen-schedule-") as out:   # what a first build pays once
        rbdgen.build(path, out, floating_base=floating, algorithms=["rnea"])
    rows = {}
    for label, options in (("C", {}), (f"C + CUDA {args.cuda_arch}", {"cuda_arch": [args.cuda_arch]})):
        seconds, recorder = timed_build(path, floating, **options)
        outside = seconds - recorder.pool
        rows[label] = [seconds] + [outside + recorder.replay(w) for w in counts]
        longest = sorted(recorder.jobs.items(), key=lambda item: -item[1][1])[:3]
        print(f"{args.robot}, {label}: built in {seconds:.2f} s ({outside:.2f} s outside the workers); longest jobs: "
              + ", ".join(f"{tag[2]} {s:.2f} s" for tag, (_, s) in longest))
    print(f"\n| {args.robot} ({os.cpu_count()} cores here) | measured | "
          + " | ".join(f"replayed on {w}" for w in counts) + " |")
    print("|---|---:|" + "---:|" * len(counts))
    for label, values in rows.items():
        print(f"| {label} | " + " | ".join(f"{v:.2f} s" for v in values) + " |")
    c, cuda = rows.values()
    print("| ratio | " + " | ".join(f"{b / a:.2f}x" for a, b in zip(c, cuda)) + " |")


if __name__ == "__main__":
    main()
