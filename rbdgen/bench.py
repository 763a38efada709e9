"""`rbdgen bench`: how fast a generated module is, next to Pinocchio, measured in one run.

Per function: its operation count; ns per call of the generated C (a batch of states looped
in C on one thread, divided by the batch size: no Python in the loop); ns per call from
Python (one state); batch throughput on all threads; and, when Pinocchio is installed, its
Python call (and its C++ time from pin_bench, when given). Medians of several rounds, the
two sides interleaved; the machine is noisy, so read the ratios.
"""

import functools
import json
import os
import statistics
import subprocess
import time
import warnings

import numpy as np

from .errors import RbdgenError
from .runtime.pinocchio_bridge import PinocchioDisagrees, comparable_model, to_pinocchio_q
from .table.functions import BY_NAME, lookup

ROUNDS = 5
BATCH = 2000
def c_function(module, model, name):
    """(callable, arguments for one state, arguments for `batch` states) of the C function
    `name`, as the verification calls it: a function of a frame on the deepest body's first
    frame (its placement is an argument), a declared-contact function through its private
    entry point (the public one takes call-time contacts)."""
    from .algorithms import constrained
    from .algorithms.frames import placement_entries
    from .table.description import PLACEMENT
    from .table.inputs import INPUTS
    spec = lookup(name, constrained.parse_contacts(model, getattr(module, "contacts", ())))
    function = getattr(module, ("_declared_" if spec.declared else "") + name, None)
    shared = {}
    if spec.per_body:
        frame = max((model.frame(f) for f in module.frames), key=lambda f: (f.body, -len(f.name)))
        function = functools.partial(getattr(module, "_" + name), frame.body)
        shared.update({arg: np.array(placement_entries(frame.placement), dtype=float) for arg in spec.inputs
                       if INPUTS[arg].role == PLACEMENT})

    def arguments(inputs, batch):
        return [shared[arg] if arg in shared else inputs[arg][0] if INPUTS[arg].shared or batch is None
                else inputs[arg] for arg in spec.arguments(model)]
    return function, arguments


def _median_time(call, number):
    samples = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def check_pin_bench(path):
    """A one-line error, before any work, when `path` (--pin-bench) is given but cannot be run."""
    if path and not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise RbdgenError(f"--pin-bench {path} is not an executable; build it with ../shared/bench/build_pin_bench.sh")


def _pin_bench(path, urdf, floating):
    """pin_bench's ns per call, by its line names; {} without it (a warning says why when it fails)."""
    if not path:
        return {}
    check_pin_bench(path)
    result = subprocess.run([path, urdf, "1" if floating else "0", "20000"], capture_output=True, text=True)
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[0]
        warnings.warn(f"pin_bench failed on {urdf} ({reason}); no C++ column", stacklevel=2)
        return {}
    figures = {}
    for line in result.stdout.splitlines():
        name, _, value = line.partition(" ")
        if name.endswith("_ns"):
            figures[name[:-3]] = float(value)
    return figures


def bench(module, model, urdf, floating, *, pin_bench=None, seed=0, out=print, mimic=False, calls=None, batch=BATCH):
    """Measure every function of `module`; print the table and return the rows.

    `calls`: calls per round from Python (default: about 2e5 operations' worth, 20 to 2000);
    `batch`: states per batched C call. Pinocchio's columns are empty (and a line says why)
    when it is not installed or cannot load the URDF."""
    if batch < 1 or (calls is not None and calls < 1):
        raise ValueError(f"calls and batch must be >= 1, got calls={calls}, batch={batch}")
    with open(os.path.join(os.path.dirname(module.__file__), "model.json"), encoding="utf-8") as f:
        meta = json.load(f)
    from .runtime.verify import random_inputs
    inputs = random_inputs(model, np.random.default_rng(seed), batch)
    single = {name: values[0] for name, values in inputs.items()}
    pin, notes = _pinocchio(urdf, floating, model, mimic)
    if pin_bench and mimic:   # its model would have the mimic joints as independent joints
        notes.append("pin_bench builds Pinocchio's model without mimic joints: no C++ column")
    cpp = _pin_bench(pin_bench, urdf, floating) if not mimic else {}
    rows = []
    for name, spec in meta["functions"].items():
        fn, arguments = c_function(module, model, name)
        args, bargs = arguments(inputs, None), arguments(inputs, batch)
        number = calls or max(20, min(2000, int(2e5 / max(spec["operations"], 1))))
        py = _median_time(lambda: fn(*args), number) * 1e9
        c = _median_time(lambda: fn(*bargs, threads=1), 3) / batch * 1e9
        throughput = batch / _median_time(lambda: fn(*bargs), 3)
        row = {"function": name, "operations": spec["operations"], "c_ns": c, "python_ns": py,
               "states_per_s": throughput, "pin_python_ns": None, "pin_cpp_ns": None}
        counterpart = BY_NAME[name].pinocchio if name in BY_NAME else None   # contacts: none
        if pin and counterpart:
            pm, pd = pin
            call = getattr(__import__("pinocchio"), counterpart.call)
            pin_args = [to_pinocchio_q(model, single["q"]) if arg == "q" else single[arg] for arg in counterpart.inputs]
            try:
                call(pm, pd, *pin_args)
            except RuntimeError as exc:   # Pinocchio 4.1's aba has no mimic joints, for one
                notes.append(f"Pinocchio cannot compute {name} for this model ({str(exc).rstrip('.')})")
            else:
                row["pin_python_ns"] = _median_time(lambda: call(pm, pd, *pin_args), number) * 1e9
        row["pin_cpp_ns"] = cpp.get(counterpart.bench) if counterpart else None
        rows.append(row)
    _print_table(rows, model, out, batch)
    for note in notes:
        out(note)
    return rows


def _pinocchio(urdf, floating, model, mimic):
    """((Pinocchio model, data), []), or (None, [a line saying why there are no Pinocchio columns])."""
    try:
        pm, why = comparable_model(urdf, floating, model, mimic)
    except PinocchioDisagrees as exc:
        return None, [f"{exc}: no Pinocchio columns"]
    if pm is None:
        return None, [f"{why}: no Pinocchio columns"]
    return (pm, pm.createData()), []


def _print_table(rows, model, out, batch):
    def f(x, fmt="{:.0f}"):
        return "-" if x is None else fmt.format(x)
    name = model.name if model.name.isprintable() else repr(model.name)
    out(f"{name}: nq={model.nq} nv={model.nv}; medians of {ROUNDS} rounds; C time = batch of {batch} "
        f"on one thread / {batch}; load average {os.getloadavg()[0]:.2f}")
    out(f"{'function':20s} {'ops':>7s} {'C ns':>9s} {'Python ns':>10s} {'states/s':>11s} "
        f"{'pin C++ ns':>11s} {'pin Py ns':>10s} {'C++/C':>7s} {'ours/pin Py':>12s}")
    for r in rows:
        cpp_ratio = r["pin_cpp_ns"] / r["c_ns"] if r["pin_cpp_ns"] else None
        py_ratio = r["python_ns"] / r["pin_python_ns"] if r["pin_python_ns"] else None
        out(f"{r['function']:20s} {r['operations']:7d} {f(r['c_ns']):>9s} {f(r['python_ns']):>10s} "
            f"{f(r['states_per_s'], '{:.3g}'):>11s} {f(r['pin_cpp_ns']):>11s} {f(r['pin_python_ns']):>10s} "
            f"{f(cpp_ratio, '{:.1f}x'):>7s} {f(py_ratio, '{:.2f}'):>12s}")
