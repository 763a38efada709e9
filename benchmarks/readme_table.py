"""The README's speed table from one run of bench_c.py.

    python benchmarks/bench_c.py ur5 panda solo12 talos --json c.json
    python benchmarks/readme_table.py c.json

Prints one Markdown row per robot: for each core function the generated ns, the speed-up
against Pinocchio and, where adam + CasADi has the function, against it ("-" where the
other side has no counterpart). Bold marks a speed-up that meets bench_c.py's target.
"""

import argparse
import json

COLUMNS = ["rnea", "nle", "crba", "aba", "coriolis", "minv", "centroidal_map"]
NAMES = {"ur5": "UR5", "panda": "Panda", "solo12": "Solo12", "talos": "Talos"}
# issue 11's goals beyond bench_c.py's own targets (which cover rnea, nle, crba, aba)
GOALS = {"coriolis": 5.0, "minv": 4.0, "centroidal_map": 4.0}


def cell(row):
    if row is None:
        return "-"
    ns = row["generated_ns"]
    text = f"{ns:.0f} ns" if ns < 1000 else f"{ns / 1000:.2f} µs"
    goal = row.get("target") or GOALS.get(row["function"])
    if row.get("speedup"):
        ratio = f"{row['speedup']:.1f}×"
        text += ", " + (f"**{ratio}**" if goal and row["speedup"] >= goal else ratio)
    if row.get("casadi_speedup"):
        text += f" / {row['casadi_speedup']:.1f}×"
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="the file bench_c.py --json wrote")
    args = parser.parse_args(argv)
    with open(args.json) as f:
        data = json.load(f)
    print(f"| robot (nv) | {' | '.join(COLUMNS)} |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for result in data["results"]:
        rows = {row["function"]: row for row in result["rows"]}
        base = ", floating" if result["floating_base"] else ""
        name = NAMES.get(result["robot"], result["robot"])
        print(f"| {name} ({result['nv']}{base}) | " + " | ".join(cell(rows.get(fn)) for fn in COLUMNS) + " |")
    print(f"\nCPU: {data.get('cpu', '?')}. Each cell: generated ns, speed-up against Pinocchio / against adam + CasADi.")


if __name__ == "__main__":
    main()
