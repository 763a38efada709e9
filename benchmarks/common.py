"""What the benchmark scripts share: robot arguments, logging, the CPU's name."""

import argparse
import gc
import os
import platform
import sys
import time

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


# The contacts each benchmark declares at build time (rbdgen.build(contacts=...)); the first
# one's frame is the frame whose functions (placement, Jacobian, ...) are timed. Robots given
# as .urdf paths and the other example robots have none unless --contact names some.
CONTACTS = {
    "ur5": ("tool0:3d",),
    "panda": ("panda_hand:3d",),
    "solo12": ("FL_FOOT:3d", "FR_FOOT:3d", "HL_FOOT:3d", "HR_FOOT:3d"),
    "talos": ("left_sole_link:6d", "right_sole_link:6d"),
}


def robot_contacts(name, args):
    """(contacts to declare, benchmark frame or None) for a robot, from --contact / --no-contacts
    (the frame stays the first contact's even with --no-contacts)."""
    specs = tuple(args.contact) if args.contact else CONTACTS.get(name, ())
    frame = split_contact(specs[0])[0] if specs else None
    return (() if args.no_contacts else specs), frame


def split_contact(spec):
    """'FRAME[:KIND][@x,y,z][/nx,ny,nz]' -> (FRAME, KIND, whether it has a point offset or a normal),
    as rbdgen.algorithms.constrained.parse_contact reads it (KIND 3d by default)."""
    head = spec.split("/", 1)[0].split("@", 1)[0]
    frame, _, kind = head.rpartition(":") if ":" in head else (head, "", "3d")
    return frame, kind, head != spec


def robot_parser(doc, default_robots):
    """An argument parser with the robots, --out, --fresh, --seed, --floating-base, --contact and
    --no-contacts options."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robots", nargs="*", default=list(default_robots),
                        help="names from rbdgen.examples.ROBOTS or .urdf paths (default: %(default)s)")
    parser.add_argument("--out", default="generated", help="where modules are built/reused (default: generated)")
    parser.add_argument("--fresh", action="store_true", help="build into a new temporary folder instead of --out")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random states (default: 0)")
    parser.add_argument("--floating-base", action="store_true", help="for robots given as .urdf paths")
    parser.add_argument("--contact", action="append", metavar="FRAME:KIND",
                        help="a contact declared at build time, for every robot given (repeat it; as rbdgen build "
                             "--contact; default: per robot, see common.CONTACTS); the first one's frame is the "
                             "benchmark frame")
    parser.add_argument("--no-contacts", action="store_true",
                        help="build without declared contacts (the contact functions are not timed)")
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


def block(fn, args_list, calls):
    """ns per call of fn(*args) cycling over args_list, `calls` calls, GC off (as timeit)."""
    n = len(args_list)
    items = [args_list[i % n] for i in range(calls)]
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        for args in items:
            fn(*args)
        t1 = time.perf_counter_ns()
    finally:
        if gc_was:
            gc.enable()
    return (t1 - t0) / calls


def timed(variants, rounds, calls):
    """Per-call ns of each (key, fn, args_list): one warm-up block each, then `rounds` rounds
    of one block each, in an order reversed every round. {key: [ns per round]}."""
    for _, f_, a_ in variants:
        block(f_, a_, 200)
    times = {key: [] for key, _, _ in variants}
    for r in range(rounds):
        for key, f_, a_ in (variants[::-1] if r % 2 else variants):
            times[key].append(block(f_, a_, calls))
    return times
