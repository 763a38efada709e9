"""What the benchmark scripts share: robot arguments, logging, the CPU's name."""

import argparse
import os
import platform
import sys

from rbdgen import examples


def log(message):
    print(message, file=sys.stderr, flush=True)


def robot_spec(arg, floating_flag, script):
    """(name, URDF path, floating base) for a name of rbdgen.examples.ROBOTS or a .urdf path."""
    if arg.endswith(".urdf"):
        return os.path.splitext(os.path.basename(arg))[0], os.path.abspath(arg), floating_flag
    if arg not in examples.ROBOTS:
        sys.exit(f"{script}: unknown robot {arg!r}; choose from {', '.join(examples.ROBOTS)} or give a .urdf")
    return arg, examples.robot_path(arg), examples.ROBOTS[arg][1]


def robot_parser(doc, default_robots):
    """An argument parser with the robots, --out, --fresh, --seed and --floating-base options."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robots", nargs="*", default=list(default_robots),
                        help="names from rbdgen.examples.ROBOTS or .urdf paths (default: %(default)s)")
    parser.add_argument("--out", default="generated", help="where modules are built/reused (default: generated)")
    parser.add_argument("--fresh", action="store_true", help="build into a new temporary folder instead of --out")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random states (default: 0)")
    parser.add_argument("--floating-base", action="store_true", help="for robots given as .urdf paths")
    return parser


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
