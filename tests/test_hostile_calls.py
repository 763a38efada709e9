"""Hostile calls into a generated module (issue 10): wrong shapes, non-real dtypes, overlapping
out=, bad thread counts, batches that do not fit, bad contact arguments.

Each bad call must raise ValueError or TypeError with a one-line message naming the argument,
never crash the interpreter or return numbers silently computed from something else. The calls
run in one subprocess (a segmentation fault is then a signal the test sees, with the case that
caused it); it reports every outcome as JSON, with warnings turned into errors so that numpy's
"discarding the imaginary part" cannot pass either.
"""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import rbdgen
from helpers import robot_path

# Enough for every kind of call: vectors, matrices, a scalar, f_ext, and the contact functions.
ALGORITHMS = ["rnea", "rnea_fext", "nle", "crba", "aba", "kinetic_energy", "placements", "jacobians", "body_motion",
              "minv", "frame_placement", "frame_jacobian_local_world_aligned", "frame_jacobian_local",
              "frame_classical_acceleration_local_world_aligned", "frame_velocity_local_world_aligned", "eom",
              "contact_dynamics", "impulse_dynamics", "contact_inertia", "rnea_derivatives", "integrate", "difference",
              "regressor", "base_regressor"]
CONTACTS = ["tool0:3d"]

_SCRIPT = textwrap.dedent(r'''
    import json, sys, warnings
    from fractions import Fraction
    import numpy as np
    import rbdgen

    warnings.simplefilter("error")
    m = rbdgen.load(sys.argv[1])
    n, nj, MAX = m.nv, len(m.joint_names), m.MAX_THREADS
    rng = np.random.default_rng(0)
    q, v, a = (rng.uniform(-1.0, 1.0, n) for _ in range(3))
    B = 5
    Q, V, A = (rng.uniform(-1.0, 1.0, (B, n)) for _ in range(3))
    F = rng.normal(size=(nj, 6))
    frame = m.frames[-1]
    contacts = [(frame, [0.0, 0.0, 0.1], None)]

    def read_only(x):
        x = x.copy()
        x.flags.writeable = False
        return x

    # (case, the name the message must contain, call): each must raise ValueError or TypeError
    BAD = [
        ("q too short", "q", lambda: m.rnea(q[:-1], v, a)),
        ("v too long", "v", lambda: m.rnea(q, np.zeros(n + 1), a)),
        ("a as a row", "a", lambda: m.rnea(q, v, a[None, :])),
        ("q a scalar", "q", lambda: m.crba(1.0)),
        ("q empty", "q", lambda: m.crba([])),
        ("q 3-D", "q", lambda: m.rnea(np.zeros((2, 2, n)), np.zeros((2, 2, n)), np.zeros((2, 2, n)))),
        ("q None", "q", lambda: m.crba(None)),
        ("q a dict", "q", lambda: m.crba({})),
        ("q a string", "q", lambda: m.crba("abcdef")),
        ("q bytes", "q", lambda: m.crba(b"abcdef")),
        ("q complex", "q", lambda: m.rnea(q + 1j, v, a)),
        ("q complex, zero imaginary part", "q", lambda: m.rnea(q.astype(complex), v, a)),
        ("v complex64", "v", lambda: m.nle(q, v.astype(np.complex64))),
        ("q complex list", "q", lambda: m.crba([1 + 2j] * n)),
        ("q complex batch", "q", lambda: m.rnea(Q + 0j, V, A)),
        ("a complex batch", "a", lambda: m.rnea(Q, V, A + 1j)),
        ("q objects None", "q", lambda: m.crba(np.array([None] * n))),
        ("q objects str", "q", lambda: m.crba(np.array(["1"] * n, dtype=object))),
        ("q objects mixed", "q", lambda: m.crba([1.0] * (n - 1) + [{}])),
        ("q objects complex", "q", lambda: m.crba(np.array([1j] * n, dtype=object))),
        ("q str array", "q", lambda: m.crba(np.array(["1"] * n))),
        ("q list of str", "q", lambda: m.rnea(["a"] * n, v, a)),
        ("q bool", "q", lambda: m.crba(np.ones(n, dtype=bool))),
        ("q list of bool", "q", lambda: m.crba([True] * n)),
        ("q datetime", "q", lambda: m.crba(np.zeros(n, dtype="datetime64[s]"))),
        ("q structured", "q", lambda: m.crba(np.zeros(n, dtype=[("x", float)]))),
        ("kinetic_energy v complex", "v", lambda: m.kinetic_energy(q, v + 1j)),
        ("batch B mismatch", "v", lambda: m.rnea(Q, V[:-1], A)),
        ("batch huge B mismatch", "a", lambda: m.rnea(np.zeros((100000, n)), np.zeros((100000, n)),
                                                      np.zeros((99999, n)))),
        ("batch q, single v", "v", lambda: m.rnea(Q, v, A)),
        ("single q, batch v", "v", lambda: m.rnea(q, V, a)),
        ("batch wrong width", "q", lambda: m.crba(np.zeros((B, n + 1)))),
        ("batch v 3-D", "v", lambda: m.rnea(Q, V[:, :, None], A)),
        ("empty batch, B mismatch", "v", lambda: m.rnea(np.zeros((0, n)), np.zeros((1, n)), np.zeros((0, n)))),
        ("batch out too few rows", "out", lambda: m.rnea(Q, V, A, out=np.empty((B - 1, n)))),
        ("batch out too wide", "out", lambda: m.rnea(Q, V, A, out=np.empty((B, n + 1)))),
        ("batch out single-state shape", "out", lambda: m.rnea(Q, V, A, out=np.empty(n))),
        ("batch out float32", "out", lambda: m.crba(Q, out=np.empty((B, n, n), dtype=np.float32))),
        ("batch out strided", "out", lambda: m.rnea(Q, V, A, out=np.empty((B, 2 * n))[:, ::2])),
        ("batch out read-only", "out", lambda: m.rnea(Q, V, A, out=read_only(np.empty((B, n))))),
        ("empty batch out wrong", "out", lambda: m.rnea(np.zeros((0, n)), np.zeros((0, n)), np.zeros((0, n)),
                                                         out=np.empty((1, n)))),
        ("scalar batch out", "out", lambda: m.kinetic_energy(Q, V, out=np.empty((B, 1)))),
        ("out too long", "out", lambda: m.rnea(q, v, a, out=np.empty(n + 1))),
        ("out int64", "out", lambda: m.rnea(q, v, a, out=np.empty(n, dtype=np.int64))),
        ("out complex", "out", lambda: m.rnea(q, v, a, out=np.empty(n, dtype=complex))),
        ("out a list", "out", lambda: m.rnea(q, v, a, out=[0.0] * n)),
        ("out read-only", "out", lambda: m.rnea(q, v, a, out=read_only(np.empty(n)))),
        ("crba out flat", "out", lambda: m.crba(q, out=np.empty(n * n))),
        ("scalar out shape ()", "out", lambda: m.kinetic_energy(q, v, out=np.empty(()))),
        ("f_ext rows of 3", "f_ext", lambda: m.rnea(q, v, a, np.zeros((nj, 3)))),
        ("f_ext flat", "f_ext", lambda: m.rnea(q, v, a, np.zeros(6 * nj))),
        ("f_ext batch for one state", "f_ext", lambda: m.rnea(q, v, a, np.zeros((2, nj, 6)))),
        ("f_ext single for a batch", "f_ext", lambda: m.rnea(Q, V, A, F)),
        ("f_ext batch B mismatch", "f_ext", lambda: m.rnea(Q, V, A, np.zeros((B + 1, nj, 6)))),
        ("f_ext complex", "f_ext", lambda: m.rnea(q, v, a, F + 1j)),
        ("f_ext strings", "f_ext", lambda: m.rnea(q, v, a, [["x"] * 6] * nj)),
        ("too many arguments", "positional", lambda: m.crba(q, None, None, 0, 1)),
        ("unknown keyword", "bogus", lambda: m.crba(q, bogus=1)),
    ]
    for t, what in [(-1, ValueError), (MAX + 1, ValueError), (100000, ValueError), (2 ** 31, ValueError),
                    (2 ** 64, ValueError), (-2 ** 63, ValueError), (np.int64(-3), ValueError), (1.5, TypeError),
                    (np.float64(2.0), TypeError), ("2", TypeError), (None, TypeError), (True, TypeError),
                    (np.bool_(True), TypeError), (1j, TypeError)]:
        BAD.append((f"batch threads={t!r}", "threads", lambda t=t: m.rnea(Q, V, A, threads=t)))
    BAD.append(("single-state threads=-1", "threads", lambda: m.rnea(q, v, a, threads=-1)))
    BAD.append(("single-state threads=100000", "threads", lambda: m.crba(q, threads=100000)))
    for value in (float("nan"), float("inf"), -float("inf"), -1.0, -1e-300, 1j, "0.1", None, [0.1, 0.2]):
        BAD.append((f"damping={value!r}", "damping",
                    lambda value=value: m.contact_dynamics(q, v, a, contacts, damping=value)))
        BAD.append((f"impulse damping={value!r}", "damping",
                    lambda value=value: m.impulse_dynamics(q, v, contacts, damping=value)))
    for value in (float("nan"), float("inf"), -0.1, 1.5, 1j, None):
        BAD.append((f"restitution={value!r}", "restitution",
                    lambda value=value: m.impulse_dynamics(q, v, contacts, restitution=value)))
    # frames: by name or index only; references of the build only
    for value in ("nowhere", "", ["tool0"], {"tool0": 1}, 1.0, None, True, -1, len(m.frames), 2 ** 70, np.float64(0)):
        BAD.append((f"frame={value!r}", "frame", lambda value=value: m.frame_jacobian(q, value)))
        BAD.append((f"frame_placement frame={value!r}", "frame", lambda value=value: m.frame_placement(q, value)))
    for value in ("global", "WORLD", "", None, 3, b"local"):
        BAD.append((f"reference={value!r}", "reference", lambda value=value: m.frame_jacobian(q, frame, value)))
    BAD.append(("reference not built", "frame_jacobian_world", lambda: m.frame_jacobian(q, frame, "world")))
    BAD.append(("frame_jacobian q short", "q", lambda: m.frame_jacobian(q[:-1], frame)))
    BAD.append(("frame_jacobian q complex", "q", lambda: m.frame_jacobian(q + 1j, frame)))
    BAD.append(("frame_jacobian q 3-D", "q", lambda: m.frame_jacobian(np.zeros((2, 2, n)), frame)))
    BAD.append(("frame_jacobian out wrong", "out", lambda: m.frame_jacobian(q, frame, out=np.empty((3, n)))))
    BAD.append(("frame_jacobian batch out wrong", "out", lambda: m.frame_jacobian(Q, frame, out=np.empty((6, n)))))
    BAD.append(("frame_jacobian threads", "threads", lambda: m.frame_jacobian(Q, frame, threads=-2)))
    BAD.append(("point of 2", "point", lambda: m.point_jacobian(q, frame, [0.0, 1.0])))
    BAD.append(("point complex", "point", lambda: m.point_velocity(q, v, frame, [0.0, 1.0, 1j])))
    BAD.append(("point a string", "point", lambda: m.point_acceleration(q, v, a, frame, "abc")))
    BAD.append(("velocity v short", "v", lambda: m.frame_velocity(q, v[:-1], frame)))
    # contacts declared at build time
    BAD.append(("declared q short", "q", lambda: m.contact_dynamics(q[:-1], v, a)))
    BAD.append(("declared v complex", "v", lambda: m.contact_dynamics(q, v + 1j, a)))
    BAD.append(("declared tau long", "tau", lambda: m.contact_dynamics(q, v, np.zeros(n + 1))))
    BAD.append(("declared batch mismatch", "v", lambda: m.contact_dynamics(Q, V[:-1], A)))
    BAD.append(("declared damping nan", "damping", lambda: m.contact_dynamics(q, v, a, damping=float("nan"))))
    BAD.append(("declared out wrong", "out", lambda: m.contact_dynamics(q, v, a, out=np.empty(n))))
    BAD.append(("declared restitution 2", "restitution", lambda: m.impulse_dynamics(q, v, restitution=2.0)))
    BAD.append(("declared contact_inertia q bool", "q", lambda: m.contact_inertia(np.ones(n, dtype=bool))))
    BAD.append(("eom q short", "q", lambda: m.eom(q[:-1], v)))
    BAD.append(("eom out wrong", "out", lambda: m.eom(q, v, out=np.empty((n, n)))))
    BAD.append(("contact tau complex", "tau", lambda: m.contact_dynamics(q, v, a + 1j, contacts)))
    BAD.append(("contact q complex", "q", lambda: m.contact_dynamics(q + 1j, v, a, contacts)))
    # derivatives, configuration operations, identification
    BAD.append(("rnea_derivatives q short", "q", lambda: m.rnea_derivatives(q[:-1], v, a)))
    BAD.append(("rnea_derivatives out one part", "out", lambda: m.rnea_derivatives(q, v, a, out=np.empty((n, n)))))
    BAD.append(("rnea_derivatives batch mismatch", "v", lambda: m.rnea_derivatives(Q, V[:-1], A)))
    for value in ([0.1, 0.2], np.zeros((B, 1)), "0.1", None, 1j, np.array([])):
        BAD.append((f"integrate dt={value!r}", "dt", lambda value=value: m.integrate(q, v, value)))
    BAD.append(("integrate v long", "v", lambda: m.integrate(q, np.zeros(n + 1))))
    BAD.append(("difference q1 complex", "q1", lambda: m.difference(q, q + 1j)))
    BAD.append(("difference batch mismatch", "q1", lambda: m.difference(Q, Q[:-1])))
    BAD.append(("regressor a complex", "a", lambda: m.regressor(q, v, a + 1j)))
    for value in (np.ones(3), np.ones((2, 7)), "pi", np.ones(60) + 1j):
        BAD.append((f"base_parameters pi={value!r:.20}", "pi", lambda value=value: m.base_parameters(value)))

    def shifted(X):
        """(X', out): X' equal to X, and out one element further along the same buffer."""
        buf = np.empty(X.size + 1)
        X2 = buf[:X.size].reshape(X.shape)
        X2[...] = X
        return X2, buf[1:].reshape(X.shape)

    def overlap_cases():
        """(case, function, arguments, out): out shares memory with an argument; the result must
        be the one of the same call on separate arrays, in the very array out."""
        x = q.copy()
        yield "out is q", m.rnea, [x, v, a], x
        x = v.copy()
        yield "out is v", m.rnea, [q, x, a], x
        x = a.copy()
        yield "out is a", m.aba, [q, v, x], x
        x = a.copy()
        yield "out is a (Python path)", lambda *s, out: m.aba(*s, out=out, threads=1), [q, v, x], x
        x, out = shifted(q)
        yield "out one element after q", m.rnea, [x, v, a], out
        M = np.empty((n, n))
        M[2] = q
        yield "q is a row of out", m.crba, [M[2]], M
        f = np.zeros((nj, 6))
        f[...] = F
        yield "out is the start of f_ext", lambda *s, out: m.rnea(*s[:3], s[3], out=out), [q, v, a, f], \
            f.reshape(-1)[:n]
        x = np.zeros(n + 2)
        x[:n] = q
        yield "scalar out inside q", m.kinetic_energy, [x[:n], v], x[n - 1:n]
        X = Q.copy()
        yield "batch out is Q", m.rnea, [X, V, A], X
        X, out = shifted(Q)
        yield "batch out one element after Q", m.rnea, [X, V, A], out
        buf = np.empty((B + 1, n))
        buf[:B] = Q
        yield "batch out one row after Q", m.rnea, [buf[:B], V, A], buf[1:]
        buf = np.empty((B + 1, n))
        buf[1:] = A
        yield "batch out one row before A", m.aba, [Q, V, buf[1:]], buf[:B]
        X = np.zeros((B, n * n))
        X[:, :n] = Q
        yield "batch crba, q inside out", m.crba, [X[:, :n]], X.reshape(B, n, n)

    report = {"bad": {}, "overlap": {}, "good": {}}
    for case, what, call in BAD:
        print(case, file=sys.stderr, flush=True)   # the last line names a case that crashed
        try:
            call()
        except Exception as exc:
            report["bad"][case] = [what, type(exc).__name__, str(exc)]
        else:
            report["bad"][case] = [what, "no error", ""]

    for case, fn, args, out in overlap_cases():
        print(case, file=sys.stderr, flush=True)
        fresh = fn(*[np.array(x, copy=True) for x in args], out=None)
        before = [np.array(x, copy=True) for x in args]
        try:
            result = fn(*args, out=out)
        except Exception as exc:
            report["overlap"][case] = f"{type(exc).__name__}: {exc}"
            continue
        scalar = np.ndim(fresh) == 0
        report["overlap"][case] = {
            "returned": bool(np.array_equal(result, fresh)),
            "in out": bool(np.array_equal(out[0] if scalar else out, fresh)),
            "is out": scalar or result is out,
            "inputs unchanged but out": all(np.array_equal(x, y) or np.may_share_memory(x, out)
                                            for x, y in zip(args, before)),
        }

    # Unusual but valid calls: the same numbers as the plain float64 call.
    GOOD = [
        ("int list", lambda: m.crba([1, 0, -1, 2, 0, 1]), lambda: m.crba(np.array([1.0, 0, -1, 2, 0, 1]))),
        ("int8 array", lambda: m.crba(np.arange(n, dtype=np.int8)), lambda: m.crba(np.arange(n, dtype=float))),
        ("uint64 array", lambda: m.crba(np.arange(n, dtype=np.uint64)), lambda: m.crba(np.arange(n, dtype=float))),
        ("Fractions", lambda: m.crba([Fraction(1, 2)] * n), lambda: m.crba(np.full(n, 0.5))),
        ("float32 batch", lambda: m.crba(Q.astype(np.float32)), lambda: m.crba(Q.astype(np.float32).astype(float))),
        ("big-endian", lambda: m.rnea(q.astype(">f8"), v, a), lambda: m.rnea(q, v, a)),
        ("strided batch", lambda: m.rnea(np.repeat(Q, 2, axis=0)[::2], V, A), lambda: m.rnea(Q, V, A)),
        ("threads=np.int64(1)", lambda: m.rnea(Q, V, A, threads=np.int64(1)), lambda: m.rnea(Q, V, A)),
        ("threads=np.uint8(2)", lambda: m.rnea(Q, V, A, threads=np.uint8(2)), lambda: m.rnea(Q, V, A)),
        ("threads=MAX", lambda: m.rnea(Q, V, A, threads=MAX), lambda: m.rnea(Q, V, A)),
        ("threads on one state", lambda: m.rnea(q, v, a, threads=3), lambda: m.rnea(q, v, a)),
        ("batch f_ext", lambda: m.rnea(Q, V, A, np.stack([F] * B)),
         lambda: np.stack([m.rnea(Q[k], V[k], A[k], F) for k in range(B)])),
        ("batch of one", lambda: m.aba(Q[:1], V[:1], A[:1]), lambda: m.aba(Q[0], V[0], A[0])[None]),
        ("empty batch", lambda: m.rnea(np.zeros((0, n)), np.zeros((0, n)), np.zeros((0, n))),
         lambda: np.zeros((0, n))),
        ("empty batch, matrices", lambda: m.crba(np.zeros((0, n))), lambda: np.zeros((0, n, n))),
        ("empty batch, scalar", lambda: m.kinetic_energy(np.zeros((0, n)), np.zeros((0, n))), lambda: np.zeros(0)),
        ("empty batch with out", lambda: m.crba(np.zeros((0, n)), out=np.empty((0, n, n))),
         lambda: np.zeros((0, n, n))),
        ("damping float32", lambda: m.contact_dynamics(q, v, a, contacts, damping=np.float32(0.5))[0],
         lambda: m.contact_dynamics(q, v, a, contacts, damping=0.5)[0]),
        ("restitution 1", lambda: m.impulse_dynamics(q, v, contacts, restitution=1)[0],
         lambda: m.impulse_dynamics(q, v, contacts, restitution=1.0)[0]),
        ("frame by index", lambda: m.frame_jacobian(q, len(m.frames) - 1), lambda: m.frame_jacobian(q, frame)),
        ("frame by numpy index", lambda: m.frame_jacobian(q, np.int64(len(m.frames) - 1)),
         lambda: m.frame_jacobian(q, frame)),
        ("frame_jacobian list q", lambda: m.frame_jacobian(list(q), frame), lambda: m.frame_jacobian(q, frame)),
        ("frame_jacobian batch", lambda: m.frame_jacobian(Q, frame, "local"),
         lambda: np.stack([m.frame_jacobian(Q[k], frame, "local") for k in range(B)])),
        ("frame_jacobian out", lambda: m.frame_jacobian(q, frame, out=np.empty((6, n))),
         lambda: m.frame_jacobian(q, frame)),
        ("declared contact_dynamics batch", lambda: m.contact_dynamics(Q, V, A)[1],
         lambda: np.stack([m.contact_dynamics(Q[k], V[k], A[k])[1] for k in range(B)])),
        ("declared contact_dynamics int lists", lambda: m.contact_dynamics([0] * n, [1] * n, [0] * n)[0],
         lambda: m.contact_dynamics(np.zeros(n), np.ones(n), np.zeros(n))[0]),
        ("eom batch", lambda: m.eom(Q, V)[0], lambda: m.crba(Q)),
        ("integrate dt int", lambda: m.integrate(q, v, 2), lambda: m.integrate(q, 2 * v)),
        ("integrate dt array of one", lambda: m.integrate(Q, V, np.array([0.5])), lambda: m.integrate(Q, 0.5 * V)),
        ("integrate dt default", lambda: m.integrate(q, v), lambda: m.integrate(q, v, 1.0)),
        ("rnea_derivatives batch", lambda: m.rnea_derivatives(Q, V, A)[1],
         lambda: np.stack([m.rnea_derivatives(Q[k], V[k], A[k])[1] for k in range(B)])),
    ]
    for case, call, expected in GOOD:
        print(case, file=sys.stderr, flush=True)
        try:
            got, want = call(), expected()
            report["good"][case] = (bool(got.shape == want.shape and np.array_equal(got, want))
                                    or f"got {got!r}, expected {want!r}")
        except Exception as exc:
            report["good"][case] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(report))
''')


@pytest.fixture(scope="session")
def hostile_report(tmp_path_factory):
    """Builds UR5 once and runs every hostile call on it in one subprocess: its JSON report."""
    out = tmp_path_factory.mktemp("hostile")
    module = rbdgen.build(robot_path("ur5"), out_dir=str(out), algorithms=ALGORITHMS, contacts=CONTACTS)
    folder = os.path.dirname(os.path.abspath(module.__file__))
    result = subprocess.run([sys.executable, "-c", _SCRIPT, folder], capture_output=True, text=True, timeout=300)
    last = result.stderr.strip().splitlines()[-1:] or ["(before the first case)"]
    assert result.returncode >= 0, f"the calls died of signal {-result.returncode} at case {last[0]!r}"
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def test_bad_calls_raise_value_or_type_error(hostile_report):
    assert len(hostile_report["bad"]) >= 100
    wrong = {case: outcome for case, outcome in hostile_report["bad"].items()
             if outcome[1] not in ("ValueError", "TypeError")}
    assert not wrong, f"{len(wrong)} bad calls did not raise ValueError or TypeError: {wrong}"
    unclear = {case: message for case, (what, _, message) in hostile_report["bad"].items()
               if what not in message or "\n" in message}
    assert not unclear, f"messages that do not name the argument in one line: {unclear}"


def test_non_real_input_is_a_type_error(hostile_report):
    for case, (what, kind, message) in hostile_report["bad"].items():
        if any(word in case for word in ("complex", "objects", "str", "bool", "datetime", "structured")) \
                and what != "out":
            assert kind == "TypeError", f"{case}: {kind}: {message}"
    assert hostile_report["bad"]["q complex"][2] == "q: expected real numbers (float or integer), got complex128"


def test_thread_counts_are_checked(hostile_report):
    bad = hostile_report["bad"]
    kind, message = bad["batch threads=100000"][1:]
    assert kind == "ValueError"
    assert re.fullmatch(r"threads: expected 0 \(OMP_NUM_THREADS, else all cores\) or 1 to \d+, got 100000", message)
    assert bad["batch threads=2147483648"][1] == "ValueError"
    assert bad["batch threads=1.5"][1] == "TypeError"
    assert bad["batch threads=True"][1] == "TypeError"


def test_damping_and_restitution_are_checked(hostile_report):
    bad = hostile_report["bad"]
    assert bad["damping=nan"][1:] == ["ValueError", "damping: expected a finite number >= 0, got nan"]
    assert bad["damping=-1.0"][1:] == ["ValueError", "damping: expected a finite number >= 0, got -1.0"]
    assert bad["restitution=1.5"][1:] == ["ValueError", "restitution: expected a number from 0 to 1, got 1.5"]
    assert bad["restitution=1j"][1] == "TypeError"


def test_overlapping_out_gives_the_fresh_result(hostile_report):
    overlap = hostile_report["overlap"]
    assert len(overlap) == 13
    for case, outcome in overlap.items():
        assert isinstance(outcome, dict), f"{case}: {outcome}"
        assert all(outcome.values()), f"{case}: {outcome}"


def test_unusual_valid_calls_work(hostile_report):
    for case, outcome in hostile_report["good"].items():
        assert outcome is True, f"{case}: {outcome}"


def test_reference_checks_damping_and_restitution():
    """The reference shares the generated module's contact code, checks included."""
    from rbdgen import reference as ref
    model = rbdgen.load_urdf(robot_path("ur5"))
    zero = [0.0] * model.nv
    contacts = [("tool0", [0.0, 0.0, 0.1], None)]
    with pytest.raises(ValueError, match=r"^damping: expected a finite number >= 0, got inf$"):
        ref.contact_dynamics(model, zero, zero, zero, contacts, damping=float("inf"))
    with pytest.raises(ValueError, match=r"^restitution: expected a number from 0 to 1, got -0\.5$"):
        ref.impulse_dynamics(model, zero, zero, contacts, restitution=-0.5)
    with pytest.raises(TypeError, match=r"^damping: expected a real number, got complex$"):
        ref.impulse_dynamics(model, zero, zero, contacts, damping=0.1j)
