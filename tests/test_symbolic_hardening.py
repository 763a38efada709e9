"""rbdgen.symbolic and `rbdgen symbolic` under hostile use (issue 50).

A. The derivatives with respect to model parameters as SymPy are the nv x np Jacobian: equal to
   the C module's and to central differences of the reference; without parameters, a one-line
   error saying to pass them.
B. A closed form over the bounds is refused before anything is simplified; one under them
   reports its progress entry by entry.
C. `rbdgen symbolic ... | head`: a reader that closes stdout early ends the command quietly.
D. An empty parameter SPEC, or inertia / payload / origin without their element, is a one-line
   error from the command line and from Python.
"""

import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import sympy

import rbdgen
from helpers import assert_close, central_differences, random_state, robot_path
from rbdgen.cli import main
from rbdgen.errors import CodegenError, ModelError, RbdgenError
from rbdgen.model.parameters import model_parameters, with_parameters
from rbdgen.symbolic import SympyFunction

PENDULUM = robot_path("double_pendulum_continuous")
SPECS = ["gravity", "inertia:link2", "armature", "damping"]
DERIVATIVES = ["rnea_parameter_derivatives", "aba_parameter_derivatives"]
EXACT_TOL = 1e-10    # the same program evaluated by Python's math and by the C
FD_TOL = 1e-6        # central differences (step 1e-6), relative to the largest entry
SEED = 50


@pytest.fixture(scope="module")
def pendulum():
    return rbdgen.load_urdf(PENDULUM)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The double pendulum's module with SPECS as parameters, the two derivative functions only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rbdgen.build(PENDULUM, out_dir=str(tmp_path_factory.mktemp("hardening")), name="pendulum_hardening",
                            parameters=SPECS, algorithms=DERIVATIVES)


def as_python(model, function, parameters):
    """The function as SymPy, printed as Python (listing "python") and made callable."""
    namespace = {}
    exec(SympyFunction.of(model, function, parameters).listing("python"), namespace)
    return namespace[function]


def points(model):
    """(q, v, a or tau, params): the nominal parameters, then random physical ones (seeded)."""
    rng = np.random.default_rng(SEED)
    params = model_parameters(model, SPECS)
    for values in (np.array(params.nominal), params.sample(rng, 1)[0]):
        q, v, a = random_state(model, rng)
        yield q, v, a, values


# A

@pytest.mark.parametrize("function", DERIVATIVES)
def test_parameter_derivatives_equal_the_modules(pendulum, built, function):
    f = as_python(pendulum, function, SPECS)
    for q, v, a, p in points(pendulum):
        symbolic = np.array(f(q, v, a, p), dtype=float)
        assert symbolic.shape == (pendulum.nv, len(p))
        assert_close(function, symbolic, getattr(built, function)(q, v, a, p), EXACT_TOL)


def test_parameter_derivatives_equal_central_differences(pendulum):
    params = model_parameters(pendulum, SPECS)
    reference = {"rnea_parameter_derivatives": rbdgen.reference.rnea, "aba_parameter_derivatives": rbdgen.reference.aba}
    for function, dynamics in reference.items():
        f = as_python(pendulum, function, SPECS)
        for q, v, a, p in points(pendulum):
            expected = central_differences(lambda p: dynamics(params.model_with(list(p)), q, v, a), [p], 0)
            assert_close(function, np.array(f(q, v, a, p), dtype=float), expected, FD_TOL)


def test_gravity_alone_is_nv_by_three(pendulum):
    """Gravity alone: three columns (the shape is the model's with its parameters)."""
    _, (D,) = rbdgen.symbolic(pendulum, "rnea_parameter_derivatives", parameters=["gravity"])
    assert D.shape == (2, 3) and D != sympy.zeros(2, 3)


@pytest.mark.parametrize("function", DERIVATIVES)
def test_parameter_derivatives_without_parameters(pendulum, function, capsys):
    with pytest.raises(CodegenError, match=r"^\S+ is a derivative with respect to model parameters.*parameters="):
        rbdgen.symbolic(pendulum, function)
    assert main(["symbolic", PENDULUM, function]) == 2
    err = capsys.readouterr().err
    assert "--parameters" in err and "missing" not in err and len(err.strip().splitlines()) == 1


# B

def test_closed_form_over_the_bound_is_refused_before_simplifying(pendulum, monkeypatch, capsys):
    """aba of the double pendulum with its inertias, gravity, armature and damping as symbols:
    an entry of about 2000 nodes, which sympy.simplify does not close in reasonable time."""
    def never(*args, **kwargs):
        raise AssertionError("simplify called on a closed form over the bounds")
    monkeypatch.setattr(sympy, "simplify", never)
    specs = ["inertia:all", "gravity", "armature", "damping"]
    with pytest.raises(CodegenError, match=r"^aba: its closed form would have .* use the cse form"):
        rbdgen.symbolic(pendulum, "aba", parameters=specs, closed_form=True)
    assert main(["symbolic", PENDULUM, "aba", "--closed-form", "--parameters", ",".join(specs)]) == 2
    err = capsys.readouterr().err
    assert "without --closed-form" in err and len(err.strip().splitlines()) == 1


def test_closed_form_reports_its_progress(pendulum, capsys):
    messages = []
    _, (M,) = rbdgen.symbolic(pendulum, "crba", parameters=["inertia:link2"], closed_form=True,
                              progress=messages.append)
    assert M.shape == (2, 2) and sympy.Symbol("m_link2") in M.free_symbols
    assert messages[0].startswith("crba: 4 entries") and messages[-1].startswith("simplifying entry 4 of 4")
    assert main(["symbolic", PENDULUM, "crba", "--closed-form"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("crba = Matrix(") and "simplifying entry 1 of 4" in err


# C

def test_a_closed_stdout_ends_quietly():
    """The reader's end of stdout is closed before the command writes: the write fails with
    EPIPE, which is a quiet stop (141, as a shell reports SIGPIPE), not an error."""
    process = subprocess.Popen([sys.executable, "-m", "rbdgen.cli", "symbolic", PENDULUM, "aba"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, err
    assert "Broken pipe" not in err and "BrokenPipeError" not in err and "error" not in err, err


# D

EMPTY = r"empty (parameter )?SPEC.*; give inertia:LINK, inertia:all, .* or origin:JOINT"


@pytest.mark.parametrize("spec, message", [("", EMPTY), ("gravity,", EMPTY),
                                           ("inertia", r"parameter 'inertia' names no link; give inertia:LINK "
                                                       r"or inertia:all"),
                                           ("payload", r"names no frame; give payload:FRAME"),
                                           ("origin:", r"names no joint; give origin:JOINT")])
def test_parameter_specs_that_name_nothing(pendulum, spec, message, capsys):
    assert main(["symbolic", PENDULUM, "rnea", "--parameters", spec]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("rbdgen: error: ")
    assert re.search(message, err), err
    specs = spec.split(",")
    with pytest.raises(RbdgenError, match=message):
        rbdgen.symbolic(pendulum, "rnea", parameters=specs)
    with pytest.raises(ModelError, match=message):
        with_parameters(pendulum, specs)     # what a build applies
