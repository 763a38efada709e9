"""dM/dq (crba_derivatives, built when named) and the derivatives of crba and minv it gives the
front ends (issue 47: PyTorch's autograd of crba and minv; JAX and CasADi read the same table
row): central differences of the generated M, in the tangent space with a free-flyer; M-dot =
C + C^T; d(M^-1) = -M^-1 dM M^-1 by JAX, PyTorch (gradcheck), CasADi and differences; CasADi's
Jacobian of crba; a module without dM/dq refuses in one line."""

import numpy as np
import pytest

import rbdgen
from helpers import robot_path

SEED = 4701
STEP = 1e-6          # central differences of M
DIFFERENCE_TOL = 1e-8
IDENTITY_TOL = 1e-12


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("crba_derivatives"))
    fixed = rbdgen.build(robot_path("ur5"), folder, algorithms=["crba", "minv", "crba_derivatives", "coriolis", "rnea",
                                                              "rnea_derivatives"])
    floating = rbdgen.build(robot_path("ur5"), folder + "/floating", floating_base=True,
                            algorithms=["crba", "crba_derivatives", "coriolis", "integrate"])
    return fixed, floating


def differences(module, q, function):
    """d function(q) / dq_k by central differences along the tangent's directions."""
    steps = [(module.integrate(q, e * STEP) if module.nq != module.nv else q + e * STEP,
              module.integrate(q, -e * STEP) if module.nq != module.nv else q - e * STEP) for e in np.eye(module.nv)]
    return np.stack([(function(plus) - function(minus)) / (2 * STEP) for plus, minus in steps], axis=-1)


def random_q(module, rng):
    q = rng.uniform(-1, 1, module.nq)
    if module.nq != module.nv:
        q[3:7] /= np.linalg.norm(q[3:7])
    return q


@pytest.mark.parametrize("which", ["fixed", "floating"])
def test_dm_dq_is_the_derivative_of_m(modules, which):
    module = modules[0] if which == "fixed" else modules[1]
    rng = np.random.default_rng(SEED)
    for _ in range(3):
        q, v = random_q(module, rng), rng.normal(size=module.nv)
        D = module.crba_derivatives(q)
        assert np.abs(D - differences(module, q, module.crba)).max() < DIFFERENCE_TOL
        C = module.coriolis(q, v)
        assert np.abs(np.einsum("ijk,k->ij", D, v) - (C + C.T)).max() < IDENTITY_TOL


def test_front_ends_differentiate_crba_and_minv(modules):
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    jax.config.update("jax_enable_x64", True)
    module = modules[0]
    rng = np.random.default_rng(SEED)
    q = random_q(module, rng)
    D, Minv = module.crba_derivatives(q), module.minv(q)
    expected = {"crba": D, "minv": -np.einsum("ia,abk,bj->ijk", Minv, D, Minv)}
    for name, J in expected.items():
        assert np.abs(J - differences(module, q, getattr(module, name))).max() < DIFFERENCE_TOL, name
        for derivative in (jax.jacfwd, jax.jacrev):
            assert np.allclose(np.asarray(derivative(module.jax(name))(q)), J, rtol=1e-12, atol=1e-12), name
        states = torch.tensor(rng.uniform(-1, 1, (3, module.nv)), requires_grad=True)
        assert torch.autograd.gradcheck(module.torch(name), (states,), eps=1e-6, atol=1e-6, rtol=1e-5), name
    casadi = pytest.importorskip("casadi")
    symbol = casadi.MX.sym("q", module.nv)
    for name, J in expected.items():   # (CasADi's vec(.) is column-major: J[i, j, k] as (j, i) rows)
        jacobian = casadi.Function("J", [symbol], [casadi.jacobian(module.casadi(name)(symbol), symbol)])
        column_major = np.swapaxes(J, 0, 1).reshape(-1, module.nv)
        assert np.allclose(np.array(jacobian(q)), column_major, rtol=1e-12, atol=1e-12), name


def test_without_dm_dq_the_derivative_is_refused(tmp_path):
    """(A second build of UR5 in this process, beside the fixture's: JAX registers each module's
    handler under a name of its own.)"""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    module = rbdgen.build(robot_path("ur5"), str(tmp_path), algorithms=["crba"])
    with pytest.raises(ValueError, match="crba_derivatives"):
        jax.jacfwd(module.jax("crba"))(np.zeros(module.nq))


def test_batches_of_mixed_shapes_and_none(modules):
    """The rules take each source's own batch: one q beside a batch of v and a (rnea's jvp), and
    empty batches (PyTorch's backward, JAX's jvp)."""
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    jax.config.update("jax_enable_x64", True)
    module = modules[0]
    rng = np.random.default_rng(SEED)
    q, dq = rng.uniform(-1, 1, (2, module.nv))
    Q, dQ = rng.uniform(-1, 1, (2, 3, module.nv))
    _, tangent = jax.jvp(module.jax("crba"), (Q,), (dQ,))
    assert np.allclose(tangent, np.einsum("bijk,bk->bij", module.crba_derivatives(Q), dQ), rtol=1e-12, atol=1e-12)
    _, mixed = jax.jvp(module.jax("rnea"), (q, Q, dQ), (dq, dQ, Q))   # one q beside batches of v and a
    dtau_dq, dtau_dv = module.rnea_derivatives(np.broadcast_to(q, Q.shape), Q, dQ)
    expected = np.einsum("bij,j->bi", dtau_dq, dq) + np.einsum("bij,bj->bi", dtau_dv, dQ) + \
        np.einsum("ij,bj->bi", module.crba(q), Q)
    assert np.allclose(mixed, expected, rtol=1e-12, atol=1e-12)
    _, empty = jax.jvp(module.jax("crba"), (np.zeros((0, module.nv)),), (np.zeros((0, module.nv)),))
    assert empty.shape == (0, module.nv, module.nv)
    none = torch.zeros((0, module.nv), dtype=torch.float64, requires_grad=True)
    module.torch("minv")(none).sum().backward()
    assert none.grad.shape == (0, module.nv)


def test_casadi_gives_no_jacobian_it_cannot_complete(tmp_path):
    """With model parameters, crba and minv have no derivative in params: CasADi's Jacobian
    would be incomplete, so there is none (CasADi refuses to differentiate), not a zero block."""
    casadi = pytest.importorskip("casadi")
    module = rbdgen.build(robot_path("ur5"), str(tmp_path), algorithms=["crba", "minv", "crba_derivatives"],
                          parameters=["payload:wrist_3_link"])
    q = casadi.MX.sym("q", module.nv)
    for name in ("crba", "minv"):
        f = module.casadi(name)
        assert np.allclose(np.array(f(np.zeros(module.nv), module.nominal_params)), getattr(module, name)(np.zeros(6)))
        with pytest.raises(RuntimeError, match="Derivatives cannot be calculated"):
            casadi.Function("J", [q], [casadi.jacobian(f(q, module.nominal_params), q)])(np.zeros(module.nv))
