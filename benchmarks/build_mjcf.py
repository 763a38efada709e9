#!/usr/bin/env python3
"""Every MJCF model installed with gymnasium and dm_control, built cold with the default functions
and checked against MuJoCo: nq, nv, build time, worst relative error of rnea, crba, nle, aba
and passive_torque (rbdgen.runtime.mujoco_bridge), as the README's table.

    python benchmarks/build_mjcf.py [--skip dog,humanoid_CMU | --only humanoid_CMU] [--states 5]

A script, not a test: pytest never collects it. Needs mujoco, gymnasium, dm_control.
"""

import argparse
import os
import shutil
import tempfile
import time
import warnings

import rbdgen
from common import cpu_name, log
from rbdgen.errors import RbdgenError
from rbdgen.runtime.mujoco_bridge import against_mujoco, installed_models, module_functions

TOLERANCE = 1e-9


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip", default="", help="comma-separated models not to build: NAME, or PACKAGE:NAME")
    parser.add_argument("--only", default="", help="comma-separated models to build, all others skipped silently")
    parser.add_argument("--states", type=int, default=5, help="random states compared (default: 5)")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    only = set(filter(None, args.only.split(",")))
    print(f"{cpu_name()}, {os.cpu_count()} cores; cold builds, default functions")
    print("| package | model | nq | nv | build (s) | worst error vs MuJoCo |")
    print("|---|---|---:|---:|---:|---:|")
    for package, name, path in installed_models():
        if only and not {name, f"{package}:{name}"} & only:
            continue
        if name in skip or f"{package}:{name}" in skip:
            print(f"| {package} | {name} | | | skipped | |")
            continue
        folder = tempfile.mkdtemp(prefix="rbdgen-mjcf-")
        try:
            log(f"== {package} {name}")
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    module = rbdgen.build(path, out_dir=folder)
            except RbdgenError as exc:
                print(f"| {package} | {name} | | | failed | {str(exc)[:160]} |", flush=True)
                continue
            seconds = time.perf_counter() - t0
            worst = max(against_mujoco(path, module_functions(module), states=args.states).values())
            mark = "" if worst <= TOLERANCE else " !"
            print(f"| {package} | {name} | {module.nq} | {module.nv} | {seconds:.1f} | {worst:.1e}{mark} |", flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
