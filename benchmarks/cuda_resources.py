"""What each kernel of the CUDA dialect asks of a GPU, without one (issue 47: register pressure
and occupancy of long programs): NVRTC compiles every function's .cu file for --arch with
ptxas' report, and this prints the kernel's registers a thread, the bytes its functions spill
and keep on the stack (the parts' calls, the solves' arrays), and the occupancy those
registers allow: resident threads of an SM (65 536 registers, at most 2 048 threads, blocks of
128 as the module launches them) over 2 048.

    python benchmarks/cuda_resources.py [--robots panda,talos] [--arch sm_90] [--algorithms ...]
"""

import argparse
import re
import tempfile
import time
import warnings

import rbdgen
from rbdgen.bindings import cuda
from rbdgen.examples import ROBOTS, robot_path

REGISTERS_PER_SM, THREADS_PER_SM, BLOCK, WARP, GRANULE = 65536, 2048, 128, 32, 256


def report(folder, module, cname, arch):
    """(seconds, ptxas' lines) of NVRTC on one function's .cu file, with ptxas -v."""
    lines = []
    t0 = time.perf_counter()
    cuda.compile_module_function(folder, module, cname, arch, ("--ptxas-options=-v",), lines)
    return time.perf_counter() - t0, lines


def resources(lines, kernel):
    """The kernel's registers, and its file's spill stores and loads and largest stack frame."""
    registers, spills, stack, current = 0, [0, 0], 0, None
    for line in lines:
        entry = re.search(r"(?:Compiling entry function|Function properties for) '?([\w]+)'?", line)
        if entry:
            current = entry.group(1)
        used = re.search(r"Used (\d+) registers", line)
        if used and current == kernel:
            registers = int(used.group(1))
        frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if frame:
            stack = max(stack, int(frame.group(1)))
            spills[0] += int(frame.group(2))
            spills[1] += int(frame.group(3))
    return registers, spills, stack


def occupancy(registers):
    """Resident threads of an SM over its most, for blocks of BLOCK threads."""
    per_warp = -(-registers * WARP // GRANULE) * GRANULE
    warps = REGISTERS_PER_SM // max(per_warp, 1)
    blocks = warps // (BLOCK // WARP)
    return min(blocks * BLOCK, THREADS_PER_SM) / THREADS_PER_SM


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default="panda,talos")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--algorithms", default="rnea,crba,aba,minv,rnea_derivatives,aba_derivatives")
    args = parser.parse_args()
    major, minor = cuda.nvrtc_version()
    print(f"NVRTC {major}.{minor}, {args.arch}; blocks of {BLOCK}")
    for robot in args.robots.split(","):
        with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = rbdgen.build(robot_path(robot), out, floating_base=ROBOTS[robot][1],
                                  algorithms=args.algorithms.split(","), cuda=True)
            print(f"\n{robot} (nv {module.nv})")
            print(f"{'function':20} {'operations':>10} {'registers':>9} {'spilled (B)':>12} {'stack (B)':>9} "
                  f"{'occupancy':>9} {'NVRTC (s)':>9}")
            meta = module._META["functions"]
            for name, d in module._DESCRIPTIONS.items():
                seconds, lines = report(module._HERE, module._META["module"], d.cname, args.arch)
                registers, (stores, loads), stack = resources(lines, d.cname + "_kernel")
                print(f"{name:20} {meta[name]['operations']:10d} {registers:9d} {f'{stores}/{loads}':>12} {stack:9d} "
                      f"{occupancy(registers):9.0%} {seconds:9.1f}", flush=True)


if __name__ == "__main__":
    main()
