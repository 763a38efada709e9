"""`rbdgen bench`: how fast a generated module is, next to Pinocchio, measured in one run.

Per function: its operation count; ns per call of the generated C (a batch of states looped
in C on one thread, divided by the batch size: no Python in the loop); ns per call from
Python (one state); batch throughput on all threads; and, when Pinocchio is installed, its
Python call (and its C++ time from pin_bench, when given). Medians of several rounds, the
two sides interleaved; the machine is noisy, so read the ratios.
"""

import json
import os
import statistics
import subprocess
import time

import numpy as np

from .runtime.states import random_state

ROUNDS = 5
BATCH = 2000
# rbdgen function -> (Pinocchio Python call, pin_bench line) where Pinocchio has the quantity
PINOCCHIO = {
    "rnea": ("rnea", "rnea"), "nle": ("nonLinearEffects", "nle"), "gravity": ("computeGeneralizedGravity", None),
    "crba": ("crba", "crba"), "aba": ("aba", "aba"), "minv": ("computeMinverse", "minv"),
    "coriolis": ("computeCoriolisMatrix", "coriolis"), "jacobians": ("computeJointJacobians", "jacobians"),
    "centroidal_map": ("ccrba", "ccrba"),
}


def _inputs(meta, model, rng, batch=None):
    """Seeded arrays for every input name a module uses."""
    q, v, a = random_state(model, rng, batch)
    shape = (model.nv,) if batch is None else (batch, model.nv)
    values = {"q": q, "v": v, "a": a, "tau": rng.normal(size=shape)}
    fext_size = 6 * model.nbodies
    values["fext"] = rng.normal(size=(fext_size,) if batch is None else (batch, fext_size))
    return values


def _median_time(call, number):
    samples = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def _pin_bench(path, urdf, floating):
    if not path:
        return {}
    result = subprocess.run([path, urdf, "1" if floating else "0", "20000"], capture_output=True, text=True)
    figures = {}
    for line in result.stdout.splitlines():
        name, _, value = line.partition(" ")
        if name.endswith("_ns"):
            figures[name[:-3]] = float(value)
    return figures


def bench(module, model, urdf, floating, pin_bench=None, seed=0, out=print):
    """Measure every function of `module`; print the table and return the rows."""
    with open(os.path.join(os.path.dirname(module.__file__), "model.json"), encoding="utf-8") as f:
        meta = json.load(f)
    rng = np.random.default_rng(seed)
    single = _inputs(meta, model, rng)
    batch = _inputs(meta, model, rng, BATCH)
    pin = _pinocchio(urdf, floating, model)
    cpp = _pin_bench(pin_bench, urdf, floating)
    rows = []
    for name, spec in meta["functions"].items():
        fn = getattr(module, name)
        args = [single[arg] for arg, _ in spec["inputs"]]
        bargs = [batch[arg] for arg, _ in spec["inputs"]]
        number = max(20, min(2000, int(2e5 / max(spec["operations"], 1))))
        py = _median_time(lambda: fn(*args), number) * 1e9
        c = _median_time(lambda: fn(*bargs, threads=1), 3) / BATCH * 1e9
        throughput = BATCH / _median_time(lambda: fn(*bargs), 3)
        row = {"function": name, "operations": spec["operations"], "c_ns": c, "python_ns": py,
               "states_per_s": throughput, "pin_python_ns": None, "pin_cpp_ns": None}
        if pin and name in PINOCCHIO:
            pm, pd, pq = pin
            call = getattr(__import__("pinocchio"), PINOCCHIO[name][0])
            extra = [single[arg] for arg, _ in spec["inputs"] if arg != "q"]
            row["pin_python_ns"] = _median_time(lambda: call(pm, pd, pq, *extra), number) * 1e9
            row["pin_cpp_ns"] = cpp.get(PINOCCHIO[name][1]) if PINOCCHIO[name][1] else None
        rows.append(row)
    _print_table(rows, model, out)
    return rows


def _pinocchio(urdf, floating, model):
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        return None
    from .runtime.pinocchio_bridge import pinocchio_model, to_pinocchio_q
    pm = pinocchio_model(urdf, floating)
    q, _, _ = random_state(model, np.random.default_rng(1))
    return pm, pm.createData(), to_pinocchio_q(model, q)


def _print_table(rows, model, out):
    def f(x, fmt="{:.0f}"):
        return "-" if x is None else fmt.format(x)
    out(f"{model.name}: nq={model.nq} nv={model.nv}; medians of {ROUNDS} rounds; C time = batch of {BATCH} "
        f"on one thread / {BATCH}; load average {os.getloadavg()[0]:.2f}")
    out(f"{'function':20s} {'ops':>7s} {'C ns':>9s} {'Python ns':>10s} {'states/s':>11s} "
        f"{'pin C++ ns':>11s} {'pin Py ns':>10s} {'C++/C':>7s} {'ours/pin Py':>12s}")
    for r in rows:
        cpp_ratio = r["pin_cpp_ns"] / r["c_ns"] if r["pin_cpp_ns"] else None
        py_ratio = r["python_ns"] / r["pin_python_ns"] if r["pin_python_ns"] else None
        out(f"{r['function']:20s} {r['operations']:7d} {f(r['c_ns']):>9s} {f(r['python_ns']):>10s} "
            f"{f(r['states_per_s'], '{:.3g}'):>11s} {f(r['pin_cpp_ns']):>11s} {f(r['pin_python_ns']):>10s} "
            f"{f(cpp_ratio, '{:.1f}x'):>7s} {f(py_ratio, '{:.2f}'):>12s}")
