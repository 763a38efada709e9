#!/usr/bin/env python3
"""Cold build times: every robot built from scratch (all functions) into a fresh temporary
output folder, with rbdgen's stage-by-stage progress and the total.

    python benchmarks/bench_build.py             # panda
    python benchmarks/bench_build.py --talos     # panda, then talos (takes minutes)
    python benchmarks/bench_build.py panda --plus-contact     # then Panda again with one contact more
    python benchmarks/bench_build.py tiago_dual dog           # the largest: TIAGo dual's URDF, dm_control's dog

"Cold" means no cached module; the Python process itself is warm (rbdgen and the
robot list are imported once, before the first build, and that import time is printed
separately). The sums of each function's symbolic and compilation seconds (CPU time in the
workers, which run in parallel) say where the time goes. The total includes loading the URDF, symbolic generation of every function,
C compilation, the cffi extension and rbdgen's verification against its reference.

A script, not a test: pytest never collects it.
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time
import warnings

T_IMPORT = time.perf_counter()
import rbdgen  # noqa: E402
from rbdgen import examples  # noqa: E402
from rbdgen.codegen.compiler import c_compiler  # noqa: E402

T_IMPORT = time.perf_counter() - T_IMPORT
TARGETS = {"panda": 8.0, "talos": 25.0, "tiago_dual": 180.0, "dog": 120.0, "panda + 1 contact": 5.0}   # on 2 cores

# Robots beyond rbdgen.examples: (where, relative path, floating base)
LARGE = {"tiago_dual": ("example-robot-data", "tiago_description/robots/tiago_dual.urdf", False),
         "dog": ("dm_control", "suite/dog.xml", False)}


def robot_file(name):
    """(path, floating base) of a robot of rbdgen.examples or LARGE."""
    if name in examples.ROBOTS:
        return examples.robot_path(name), examples.ROBOTS[name][1]
    where, path, floating = LARGE[name]
    if where == "dm_control":
        import dm_control
        return os.path.join(os.path.dirname(dm_control.__file__), path), floating
    return os.path.join(examples.robots_dir(), path), floating


def build_once(name, keep, algorithms=None, out=None, contacts=None, label=None):
    """Build `name` into `out` (default: a new temporary folder) and report where the time went."""
    urdf, floating = robot_file(name)
    out = out or tempfile.mkdtemp(prefix=f"rbdgen-build-{name}-")
    name = label or name
    t0 = time.perf_counter()
    last = [t0]
    stages = []

    def progress(message):
        now = time.perf_counter()
        stages.append({"message": message.strip(), "at_s": now - t0, "delta_s": now - last[0]})
        print(f"  [{now - t0:7.2f} s  +{now - last[0]:6.2f} s] {message.strip()}", flush=True)
        last[0] = now

    print(f"\n{name}: cold build into {out} (floating base: {floating}; "
          f"functions: {', '.join(algorithms) if algorithms else 'rbdgen default'})", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # e.g. talos' <mimic> joints
        module = rbdgen.build(urdf, out_dir=out, floating_base=floating, algorithms=algorithms,
                              contacts=contacts, progress=progress)
    total = time.perf_counter() - t0
    target = TARGETS.get(name)
    verdict = "" if target is None else f"  (target {target:.0f} s: {'met' if total <= target else 'NOT met'})"
    def summed(pattern):
        return sum(float(m[1]) for st in stages for m in [re.search(pattern, st["message"])] if m)
    symbolic, rendering = summed(r"symbolic ([\d.]+) s"), summed(r", C ([\d.]+) s")
    compiling = summed(r"compile ([\d.]+) s")   # a function's own file, or a file of small functions
    print(f"  total {total:.2f} s for {len(module.operation_counts)} functions, "
          f"{sum(module.operation_counts.values())} operations{verdict}; summed over the workers: "
          f"symbolic {symbolic:.1f} s, C rendering {rendering:.1f} s, compilation {compiling:.1f} s", flush=True)
    if not keep:
        import shutil
        shutil.rmtree(out, ignore_errors=True)
    return {"robot": name, "out": out, "total_s": total, "target_s": target, "stages": stages, "symbolic_s": symbolic,
            "rendering_s": rendering, "compile_s": compiling,
            "functions": len(module.operation_counts), "operations": sum(module.operation_counts.values())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robots", nargs="*", default=["panda"],
                        help="names from rbdgen.examples.ROBOTS (default: panda)")
    parser.add_argument("--talos", action="store_true", help="also build talos (minutes)")
    parser.add_argument("--plus-contact", action="store_true",
                        help="after Panda's cold build, build it again with one contact more (panda_hand:3d), "
                             "from the per-function cache")
    parser.add_argument("--algorithms", help="comma-separated functions (default: rbdgen's default set)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary output folders")
    parser.add_argument("--json", help="write the times to this JSON file")
    args = parser.parse_args(argv)
    robots = list(args.robots) + (["talos"] if args.talos and "talos" not in args.robots else [])
    for r in robots:
        if r not in examples.ROBOTS and r not in LARGE:
            sys.exit(f"bench_build: unknown robot {r!r}; choose from {', '.join(list(examples.ROBOTS) + list(LARGE))}")
    if args.plus_contact and "panda" not in robots:
        robots.insert(0, "panda")
    print(f"import rbdgen: {T_IMPORT:.2f} s; {os.cpu_count()} CPUs; C compiler: {c_compiler()} (CC={os.environ.get('CC', 'unset')})")
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()] if args.algorithms else None
    results = []
    for r in robots:
        results.append(build_once(r, args.keep or (args.plus_contact and r == "panda"), algorithms))
        if args.plus_contact and r == "panda":
            results.append(build_once("panda", args.keep, algorithms, out=results[-1]["out"],
                                      contacts=["panda_hand:3d"], label="panda + 1 contact"))
    print("\nrobot              total s   target s  met")
    for r in results:
        tgt = "-" if r["target_s"] is None else f"{r['target_s']:.0f}"
        met = "" if r["target_s"] is None else ("yes" if r["total_s"] <= r["target_s"] else "NO")
        print(f"{r['robot']:<18} {r['total_s']:7.2f} {tgt:>10}  {met}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"import_s": T_IMPORT, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
