#!/usr/bin/env python3
"""Chart of the speed-up against Pinocchio by robot size, from bench_c.py --json output.

    python benchmarks/bench_c.py ur5 panda solo12 talos --json c.json
    python benchmarks/plot_speedup.py c.json docs/speedup.svg

Writes a plain SVG (no plotting library needed): one group of bars per robot, ordered by nv,
one bar per function, the speed-up (Pinocchio ns / generated ns) as its height.
"""

import json
import sys

FUNCTIONS = ("rnea", "nle", "crba", "aba", "coriolis", "minv")
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def svg(results):
    results = sorted(results, key=lambda r: r["nv"])
    width, height, left, bottom, top = 760, 360, 50, 50, 30
    top_value = max(row["speedup"] or 0 for r in results for row in r["rows"] if row["function"] in FUNCTIONS)
    top_value = int(top_value) + 1
    scale = (height - bottom - top) / top_value
    group = (width - left - 20) / len(results)
    bar = group / (len(FUNCTIONS) + 1.5)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           'font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>']
    y0 = height - bottom
    for v in range(0, top_value + 1, 2):
        y = y0 - v * scale
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 20}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v}x</text>')
    for g, r in enumerate(results):
        x0 = left + g * group + bar * 0.75
        rows = {row["function"]: row for row in r["rows"]}
        for k, fn in enumerate(FUNCTIONS):
            s = rows.get(fn, {}).get("speedup")
            if not s:
                continue
            x, h = x0 + k * bar, s * scale
            out.append(f'<rect x="{x:.1f}" y="{y0 - h:.1f}" width="{bar * 0.9:.1f}" height="{h:.1f}" '
                       f'fill="{COLOURS[k]}"><title>{r["robot"]} {fn}: {s:.1f}x</title></rect>')
        out.append(f'<text x="{x0 + bar * len(FUNCTIONS) / 2:.1f}" y="{y0 + 18}" text-anchor="middle">'
                   f'{r["robot"]} (nv={r["nv"]})</text>')
    for k, fn in enumerate(FUNCTIONS):
        out.append(f'<rect x="{left + 10 + k * 90}" y="8" width="12" height="12" fill="{COLOURS[k]}"/>')
        out.append(f'<text x="{left + 26 + k * 90}" y="19">{fn}</text>')
    out.append(f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle">speed-up of generated C over '
               "Pinocchio's C++ (same machine, one run)</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_speedup.py BENCH_C.json OUT.svg")
    with open(sys.argv[1]) as f:
        data = json.load(f)
    with open(sys.argv[2], "w") as f:
        f.write(svg(data["results"]))
