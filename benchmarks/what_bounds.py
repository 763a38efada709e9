#!/usr/bin/env python3
"""What bounds a generated function's single call: the CPU's limits against its machine code.

For each robot and function, from the module's own C file compiled as rbdgen compiles it
(clang or gcc, compile_flags(native=True)), the code of one call (the single-state function
and its parts, without the C library's sine and cosine for angles beyond 1e6 rad) is counted,
and three lower bounds on its time are printed, each in nanoseconds at the clock measured here
(a chain of dependent integer additions, one a cycle):

- multiply pipes: multiplications and fused multiply-adds (two pipes on Zen 3 and 4, as on most
  x86 cores: one instruction of up to 256 bits a cycle each; a 512-bit one counts twice);
- front end: its instructions decoded four a cycle once the code is larger than the op cache
  (OP_CACHE_INSTRUCTIONS), and its bytes fetched 32 a cycle; six a cycle from the op cache;
- critical path: the longest chain of dependent statements of its C, each sum a chain of
  fused multiply-adds as clang contracts it (LATENCY: Zen 4's latencies).
The operation count alone is not a bound: a program's multiplications are.

With --json from bench_c.py (the same robots and functions), the measured times and
Pinocchio + CppADCodeGen's (CG) are printed beside the bounds, and the time that 3x CG asks for.

    python benchmarks/bench_c.py ur5 panda solo12 talos --algorithms rnea,crba,aba,minv \\
        --pin-cg PIN_CG_BENCH --no-casadi --json /tmp/c.json
    python benchmarks/what_bounds.py ur5 panda solo12 talos --algorithms rnea,crba,aba,minv --json /tmp/c.json

A script, not a test: pytest never collects it.
"""

import ast
import json
import os
import re
import subprocess
import tempfile

import rbdgen
from common import cpu_name, log, robot_parser, robot_spec
from rbdgen.codegen.compiler import c_compiler, compile_flags, long_program_flags

DEFAULT_ROBOTS = ("ur5", "panda", "solo12", "talos")
DEFAULT_FUNCTIONS = "rnea,crba,aba,minv"
# Zen 4 (AMD's Software Optimization Guide for family 19h): cycles from operands to result
LATENCY = {"mul": 3, "add": 3, "fma": 4, "div": 13, "sqrt": 21, "sincos": 40}
OP_CACHE_INSTRUCTIONS = 6144      # Zen 4's op cache holds 6 750 macro-ops; straight-line code uses each once
MULTIPLY = re.compile(r"^v(mul|fn?m(add|sub)\d*)[sp][sd]$")
ADD = re.compile(r"^v(add|sub)[sp][sd]$")
PIECES = r"_(?:part|out|copy)\d+"   # the functions a long program is split into, its output stores
LIBRARY_CALL = re.compile(r"\bcall\w*\s+(sincos|sin|cos)\b")

CLOCK_C = r"""
#include <stdio.h>
#include <time.h>
int main(void) {
    struct timespec a, b; long x = 0, n = 500000000L;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++)
        __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%f\n", 4.0 * n / ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)));
    return x == 0;
}
"""


def measured_clock_ghz():
    """Cycles per nanosecond of one core: four dependent additions a loop, one a cycle."""
    with tempfile.TemporaryDirectory() as folder:
        source, exe = os.path.join(folder, "clock.c"), os.path.join(folder, "clock")
        with open(source, "w") as f:
            f.write(CLOCK_C)
        subprocess.run([c_compiler(), "-O2", source, "-o", exe], check=True)
        return max(float(subprocess.run([exe], capture_output=True, text=True, check=True).stdout)
                   for _ in range(3))


def one_call_code(assembly, function):
    """The instructions of one call: `function` and its parts, without the basic blocks that
    call the C library (sine and cosine beyond 1e6 rad)."""
    names = {function} | set(re.findall(rf"^({function}{PIECES}):", assembly, re.M))
    blocks, block, inside = [], [], False
    for line in assembly.splitlines():
        label = re.match(r"^([\w.$]+):", line)
        if label:
            if label.group(1) in names:
                inside = True
            blocks.append(block)
            block = []
            continue
        text = line.split("#")[0].strip()
        if text.startswith(".cfi_endproc"):
            inside = False
        if inside and text and not text.startswith("."):
            block.append(text)
    blocks.append(block)
    return [ins for b in blocks if not any(LIBRARY_CALL.search(i) for i in b) for ins in b]


def instruction_counts(code):
    counts = {"instructions": len(code), "multiply": 0, "add": 0, "other_fp": 0}
    for ins in code:
        op = ins.split()[0]
        width = 2 if "zmm" in ins else 1
        if MULTIPLY.match(op):
            counts["multiply"] += width
        elif ADD.match(op):
            counts["add"] += width
        elif op.startswith("v") and "(" not in ins:
            counts["other_fp"] += width
    return counts


def code_bytes(obj, function):
    sizes = subprocess.run(["nm", "-S", obj], capture_output=True, text=True, check=True).stdout
    total = 0
    for line in sizes.splitlines():
        words = line.split()
        if len(words) == 4 and re.fullmatch(rf"{function}({PIECES})?", words[3]):
            total += int(words[1], 16)
    return total


def critical_path(source, function):
    """Cycles of the longest chain of dependent statements of one call's C (LATENCY)."""
    start = source.find(f"{function}_part0(")
    start = start if start >= 0 else source.index(f"void {function}(")
    end = source.find(f"{function}_lanes", start)
    ready = {}

    def go(node):
        """(ready cycle, the ready cycles of a product's factors, for a sum to fuse)"""
        if isinstance(node, ast.Constant):
            return 0, None
        if isinstance(node, (ast.Name, ast.Subscript)):
            return ready.get(ast.unparse(node), 0), None
        if isinstance(node, ast.UnaryOp):
            return go(node.operand)
        if isinstance(node, ast.Call):
            return max([go(a)[0] for a in node.args] + [0]) + LATENCY["sqrt"], None
        left, right = go(node.left), go(node.right)
        if isinstance(node.op, ast.Mult):
            return max(left[0], right[0]) + LATENCY["mul"], (left[0], right[0])
        if isinstance(node.op, ast.Div):
            return max(left[0], right[0]) + LATENCY["div"], None
        for (t, _), (_, factors) in ((left, right), (right, left)):
            if factors is not None:        # x + a*b: one fused multiply-add
                return max(t, *factors) + LATENCY["fma"], None
        return max(left[0], right[0]) + LATENCY["add"], None

    worst = 0
    for line in source[start:end if end >= 0 else None].splitlines():
        line = line.strip()
        pair = re.match(r"const double (s_q_\w+) = .*, (c_q_\w+) = ", line)
        if pair:
            ready[pair.group(1)] = ready[pair.group(2)] = LATENCY["sincos"]
            continue
        statement = re.match(r"(?:const double )?([A-Za-z_]\w*(?:\[\d+\])?) = ([^{}]*);$", line)
        if not statement:
            continue
        try:
            expression = ast.parse(statement.group(2), mode="eval").body
        except SyntaxError:
            continue
        ready[statement.group(1)] = go(expression)[0]
        worst = max(worst, ready[statement.group(1)])
    return worst


def analyse(package, module, fn, operations):
    source_path = os.path.join(package, f"rbdgen_{module}_{fn}.c")
    function = f"rbdgen_{module}_{fn}"
    flags = long_program_flags(compile_flags(native=True), operations)
    with open(source_path, encoding="utf-8") as f:
        source = f.read()
    with tempfile.TemporaryDirectory() as folder:
        obj = os.path.join(folder, "f.o")
        base = [c_compiler(), *flags, "-I", package, source_path]
        assembly = subprocess.run(base + ["-S", "-o", "-"], capture_output=True, text=True, check=True).stdout
        subprocess.run(base + ["-c", "-o", obj], check=True)
        size = code_bytes(obj, function)
    counts = instruction_counts(one_call_code(assembly, function))
    loop = f"{function}_solve(" in source
    # from the op cache six a cycle; beyond it, decoded four a cycle from 32 bytes fetched a cycle
    front = (counts["instructions"] / 6 if counts["instructions"] <= OP_CACHE_INSTRUCTIONS
             else max(counts["instructions"] / 4, size / 32))
    return {"function": fn, "operations": operations, **counts, "bytes": size, "loop": loop,
            "pipes_cycles": max(counts["multiply"] / 2, (counts["multiply"] + counts["add"] + counts["other_fp"]) / 4),
            "front_cycles": front,
            "path_cycles": critical_path(source, function)}


def main(argv=None):
    parser = robot_parser(__doc__, DEFAULT_ROBOTS)
    parser.add_argument("--algorithms", default=DEFAULT_FUNCTIONS,
                        help=f"the functions (default: {DEFAULT_FUNCTIONS}); the module is built with these")
    parser.add_argument("--json", help="bench_c.py's --json of the same robots: measured and CG times beside")
    args = parser.parse_args(argv)
    functions = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    timings = {}
    if args.json:
        with open(args.json, encoding="utf-8") as f:
            for result in json.load(f)["results"]:
                for row in result["rows"]:
                    timings[result["robot"], row["function"]] = row
    ghz = measured_clock_ghz()
    print(f"CPU: {cpu_name()}, clock measured {ghz:.2f} GHz; compiler: {c_compiler()} "
          f"{' '.join(compile_flags(native=True))}")
    header = (f"{'robot':<8} {'function':<24} {'ops':>7} {'instr':>7} {'mul':>6} {'KB':>6}  "
              f"{'pipes ns':>8} {'front ns':>8} {'path ns':>8} {'ours ns':>8} {'CG/3 ns':>8}")
    print(header)
    print("-" * len(header))
    for name, urdf, floating in (robot_spec(r, args.floating_base, "what_bounds") for r in args.robots):
        log(f"== {name}: building (or reusing) the module in {args.out} ...")
        module = rbdgen.build(urdf, out_dir=args.out, floating_base=floating, algorithms=functions)
        package = os.path.dirname(os.path.abspath(module.__file__))
        with open(os.path.join(package, "model.json"), encoding="utf-8") as f:
            meta = json.load(f)
        for fn in functions:
            row = analyse(package, meta["module"], fn, module.operation_counts[fn])
            timed = timings.get((name, fn), {})
            ours, cg = timed.get("generated_ns"), timed.get("cg_ns")
            ns = lambda cycles: f"{cycles / ghz:8.0f}"
            print(f"{name:<8} {fn + (' (loop)' if row['loop'] else ''):<24} {row['operations']:>7} "
                  f"{row['instructions']:>7} {row['multiply']:>6} {row['bytes'] / 1024:6.1f}  "
                  f"{ns(row['pipes_cycles'])} {ns(row['front_cycles'])} {ns(row['path_cycles'])} "
                  f"{'-' if ours is None else round(ours):>8} {'-' if cg is None else round(cg / 3):>8}")
    print("pipes: the multiply pipes' or the four FP pipes' time, whichever is longer; front: decoding or "
          "fetching the call's code; path: the longest chain of dependent statements. A loop's "
          "iterations (a solve after the program) are not counted.")


if __name__ == "__main__":
    main()
