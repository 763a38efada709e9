"""The JAX bridge: module.jax(name) runs the generated C through the XLA FFI, under jax.jit and
jax.vmap, and differentiates through the generated derivatives.

1. Every function of states gives the module's values, jitted (UR5, Panda; Solo12 on a
   free-flyer), and so do rnea / aba with f_ext and the frame and point functions (jitted with
   the frame a constant of the traced function too).
2. jax.vmap over 10 000 states equals the module's batch; nested vmaps and leading batch
   dimensions of its own too; a vmap over dt (an input a batch entry point takes once) equals
   state-by-state calls.
3. jacfwd and jacrev of rnea, nle, gravity, aba and fd_crba equal rnea_derivatives /
   aba_derivatives / crba and central differences; grad of a scalar loss through aba and
   through frame_placement equals central differences; the f_ext tangent too.
4. A payload's mass on Panda's hand, fitted by gradient descent through rnea with f_ext to
   Pinocchio's torques of the robot carrying it, is recovered.
5. On a free-flyer, d/dv works and d/dq raises; a function without derivatives raises when
   differentiated, naming what can be; float32 JAX is refused with the fix.
"""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

from helpers import assert_close, bridge_inputs, central_differences, pinocchio_model  # noqa: E402
from rbdgen.model.states import random_state  # noqa: E402

REL_TOL = 1e-12          # the same C: values equal to rounding
DERIVATIVE_TOL = 1e-10   # the JVP rules against the derivative functions (einsum's rounding)
FD_TOL = 1e-6            # central differences, relative to the largest entry
DIFFERENTIATED = {"rnea": ("q", "v", "a"), "nle": ("q", "v"), "gravity": ("q",), "aba": ("q", "v", "tau"),
                  "fd_crba": ("q", "v", "tau")}
BATCH = 10_000


def close(got, want, tol=REL_TOL, what=""):
    assert_close(what, np.asarray(got), want, tol)


@pytest.mark.parametrize("key", ["ur5", "panda", "solo12"])
def test_values_of_every_function(bridge_modules, key):
    module, model = bridge_modules[key]
    x = bridge_inputs(model, 3)
    for name, d in module._DESCRIPTIONS.items():
        if d.per_body:
            continue
        args = [x[n] for n in d.names]
        if d.declared:     # the public function takes contacts first, then these by keyword
            keywords = {n: x[n] for n in d.names if n in ("restitution", "damping")}
            ours = getattr(module, name)(*args[:len(args) - len(keywords)], **keywords)
        else:
            ours = getattr(module, name)(*args)
        got = jax.jit(module.jax(name))(*args)
        if isinstance(ours, tuple):
            assert isinstance(got, tuple) and len(got) == len(ours), name
            for g, want in zip(got, ours):
                assert g.shape == want.shape, name
                close(g, want, what=name)
        else:
            assert np.shape(got) == np.shape(ours), name
            close(got, ours, what=name)


def test_forces_frames_and_points(bridge_modules):
    module, model = bridge_modules["panda"]
    x = bridge_inputs(model, 4)
    q, v, a, tau = x["q"], x["v"], x["a"], x["tau"]
    f_ext = np.random.default_rng(4).normal(size=(len(module.joint_names), 6))
    close(jax.jit(module.jax("rnea"))(q, v, a, f_ext), module.rnea(q, v, a, f_ext), what="rnea f_ext")
    close(module.jax("aba")(q, v, tau, f_ext), module.aba(q, v, tau, f_ext), what="aba f_ext")
    frame = "panda_hand"
    for got, want in zip(jax.jit(module.jax("frame_placement"), static_argnums=1)(q, frame),
                         module.frame_placement(q, frame)):
        close(got, want, what="frame_placement")
    close(module.jax("frame_jacobian")(q, frame), module.frame_jacobian(q, frame), what="frame_jacobian")
    close(module.jax("frame_velocity")(q, v, frame, "local"), module.frame_velocity(q, v, frame, "local"),
          what="frame_velocity")
    point = np.array([0.01, -0.02, 0.1])
    close(module.jax("point_jacobian")(q, frame, point), module.point_jacobian(q, frame, point),
          what="point_jacobian")
    # under jit, with the frame (and the point) a constant of the traced function
    jacobian, time_variation = module.jax("frame_jacobian"), module.jax("frame_jacobian_time_variation")
    close(jax.jit(lambda q: jacobian(q, frame))(q), module.frame_jacobian(q, frame), what="jit frame_jacobian")
    close(jax.jit(lambda q, v: time_variation(q, v, frame, "local"))(q, v),
          module.frame_jacobian_time_variation(q, v, frame, "local"), what="jit frame_jacobian_time_variation")
    close(jax.jit(lambda q: module.jax("point_jacobian")(q, frame, point))(q), module.point_jacobian(q, frame, point),
          what="jit point_jacobian")


def test_vmap_runs_the_batch(bridge_modules):
    module, model = bridge_modules["panda"]
    rng = np.random.default_rng(5)
    states = [random_state(model, rng) for _ in range(BATCH)]
    Q, V = (np.array([s[k] for s in states]) for k in range(2))
    T = rng.normal(size=(BATCH, model.nv))
    aba = jax.jit(jax.vmap(module.jax("aba")))
    close(aba(Q, V, T), module.aba(Q, V, T), what="vmap aba")
    # leading dimensions of its own, a vmap over one input only, and a vmap of a vmap
    close(module.jax("aba")(Q.reshape(100, 100, -1), V.reshape(100, 100, -1), T.reshape(100, 100, -1)),
          module.aba(Q, V, T).reshape(100, 100, -1), what="leading dimensions")
    close(jax.vmap(module.jax("rnea"), in_axes=(0, None, None))(Q[:50], V[0], T[0]),
          module.rnea(Q[:50], np.tile(V[0], (50, 1)), np.tile(T[0], (50, 1))), what="vmap over q")
    nested = jax.vmap(jax.vmap(module.jax("crba")))(Q[:60].reshape(6, 10, -1))
    close(nested, module.crba(Q[:60]).reshape(6, 10, model.nv, model.nv), what="vmap of vmap")
    # dt differs between states: each state with its own
    dts = np.linspace(0.1, 1.0, 7)
    got = jax.vmap(module.jax("integrate"), in_axes=(0, 0, 0))(Q[:7], V[:7], dts)
    close(got, np.array([module.integrate(Q[k], V[k], dts[k]) for k in range(7)]), what="vmap over dt")


@pytest.mark.parametrize("key", ["ur5", "panda"])
@pytest.mark.parametrize("name", sorted(DIFFERENTIATED))
def test_jacobians_from_generated_derivatives(bridge_modules, key, name):
    module, model = bridge_modules[key]
    x = bridge_inputs(model, 6)
    names = DIFFERENTIATED[name]
    args = [x[n] for n in names]
    if name in ("aba", "fd_crba"):
        exact = list(module.aba_derivatives(*args))
    elif name == "gravity":
        exact = [module.rnea_derivatives(x["q"], 0 * x["v"], 0 * x["v"])[0]]
    else:
        dq, dv = module.rnea_derivatives(x["q"], x["v"], x["a"] if name == "rnea" else 0 * x["v"])
        exact = [dq, dv, module.crba(x["q"])][:len(names)]
    f = module.jax(name)
    forward = jax.jit(jax.jacfwd(f, argnums=tuple(range(len(names)))))(*args)
    reverse = jax.jacrev(f, argnums=tuple(range(len(names))))(*args)
    for k, want in enumerate(exact):
        close(forward[k], want, DERIVATIVE_TOL, f"{name} jacfwd d/d{names[k]}")
        close(reverse[k], want, DERIVATIVE_TOL, f"{name} jacrev d/d{names[k]}")
        close(forward[k], central_differences(getattr(module, name), args, k), FD_TOL,
              f"{name} d/d{names[k]} against finite differences")


def test_contact_dynamics_differentiates_through_its_derivative_function(bridge_modules):
    """Panda with a contact declared at the hand: jacfwd of contact_dynamics (q-ddot and the
    multipliers) in q, v and tau equals contact_dynamics_derivatives (the table's `jacobians`
    for it, as CasADi reads them) and central differences; the damping has none."""
    module, model = bridge_modules["panda"]
    x = bridge_inputs(model, 7)
    args = [x["q"], x["v"], x["tau"]]
    f = module.jax("contact_dynamics")
    forward = jax.jacfwd(lambda *a: f(*a, 0.0), argnums=(0, 1, 2))(*args)
    exact = module.contact_dynamics_derivatives(*args)
    for output, (blocks, offset) in enumerate(((exact[:3], 0), (exact[3:], 1))):
        for k, what in enumerate(("q", "v", "tau")):
            close(forward[output][k], blocks[k], DERIVATIVE_TOL, f"contact_dynamics output {output} d/d{what}")
            numbers = lambda *a: module.contact_dynamics(*a)[offset]
            close(forward[output][k], central_differences(numbers, args, k), FD_TOL,
                  f"contact_dynamics output {output} d/d{what} against finite differences")
    with pytest.raises(ValueError, match="no derivative with respect to damping"):
        jax.jacfwd(f, argnums=3)(*args, 0.0)


def test_grad_through_aba_frame_placement_and_forces(bridge_modules):
    module, model = bridge_modules["panda"]
    x = bridge_inputs(model, 7)
    q, v, tau = x["q"], x["v"], x["tau"]
    aba, placement = module.jax("aba"), module.jax("frame_placement")
    target = np.array([0.3, -0.2, 0.5])

    def loss(q, v, tau):
        R, p = placement(q, "panda_hand")
        return jnp.sum(aba(q, v, tau) ** 2) * 1e-3 + jnp.sum((p - target) ** 2) + R[0, 2]

    def numbers(q, v, tau):
        R, p = module.frame_placement(q, "panda_hand")
        return np.sum(module.aba(q, v, tau) ** 2) * 1e-3 + np.sum((p - target) ** 2) + R[0, 2]

    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(q, v, tau)
    for k, what in enumerate(("q", "v", "tau")):
        close(grads[k], central_differences(numbers, [q, v, tau], k)[0], FD_TOL, f"grad d/d{what}")
    # the f_ext tangent of rnea and aba: exact, against differences
    f_ext = np.random.default_rng(8).normal(size=(len(module.joint_names), 6))
    for name, third in (("rnea", x["a"]), ("aba", tau)):
        f = module.jax(name)
        J = jax.jacfwd(lambda f_ext: f(q, v, third, f_ext))(f_ext).reshape(model.nv, -1)
        fd = central_differences(lambda flat: getattr(module, name)(q, v, third, flat.reshape(-1, 6)),
                                 [f_ext.ravel()], 0)
        close(J, fd, FD_TOL, f"{name} d/df_ext")


def test_payload_mass_fitted_through_rnea(bridge_modules):
    """Static torques of Pinocchio's Panda carrying a 1.3 kg point mass at a point of panda_link7;
    rbdgen's rnea without it, plus the payload's weight as f_ext, fitted by gradient descent."""
    import pinocchio as pin
    module, model = bridge_modules["panda"]
    pin_model = pinocchio_model("panda")
    joint = module.joint_names.index("panda_joint7")
    mass, at = 1.3, np.array([0.02, -0.01, 0.12])
    pin_model.inertias[pin_model.getJointId("panda_joint7")] += pin.Inertia(mass, at, np.zeros((3, 3)))
    pin_data = pin_model.createData()
    rng = np.random.default_rng(9)
    Q = np.array([random_state(model, rng)[0] for _ in range(8)])
    measured = np.array([pin.rnea(pin_model, pin_data, q, np.zeros(model.nv), np.zeros(model.nv)) for q in Q])
    rnea, placement = module.jax("rnea"), module.jax("frame_placement")
    R = placement(Q, "panda_link7")[0]
    gravity = jnp.array([0.0, 0.0, -9.81])

    def loss(m):
        force = m * jnp.einsum("kji,j->ki", R, gravity)          # the weight, in the body's axes
        wrench = jnp.concatenate([force, jnp.cross(at, force)], -1)
        f_ext = jnp.zeros((len(Q), len(module.joint_names), 6)).at[:, joint].set(wrench)
        zero = jnp.zeros((len(Q), model.nv))
        return jnp.sum((rnea(Q, zero, zero, f_ext) - measured) ** 2)

    step = 1.0 / float(jax.hessian(loss)(0.0))   # the loss is quadratic in m: one step size fits
    m = 0.0
    for _ in range(10):
        m = m - step * float(jax.grad(loss)(m))
    assert abs(m - mass) <= 1e-9 * mass


def test_free_flyer_differentiates_in_v_not_q(bridge_modules):
    module, model = bridge_modules["solo12"]
    x = bridge_inputs(model, 10)
    aba = module.jax("aba")
    dv = jax.jacfwd(aba, argnums=1)(x["q"], x["v"], x["tau"])
    close(dv, module.aba_derivatives(x["q"], x["v"], x["tau"])[1], DERIVATIVE_TOL, "solo12 aba d/dv")
    with pytest.raises(ValueError, match="tangent space"):
        jax.jacfwd(aba, argnums=0)(x["q"], x["v"], x["tau"])


def test_errors(bridge_modules):
    module, model = bridge_modules["ur5"]
    x = bridge_inputs(model, 11)
    with pytest.raises(ValueError, match="no derivative of kinetic_energy"):
        jax.jacfwd(module.jax("kinetic_energy"))(x["q"], x["v"])
    with pytest.raises(ValueError, match="rebuild it with crba_derivatives"):
        jax.jacfwd(module.jax("crba"))(x["q"])
    with pytest.raises(ValueError, match="not a function of this module"):
        module.jax("rnae")
    with pytest.raises(ValueError, match=r"q: expected \(\.\.\., 6\)"):
        module.jax("rnea")(np.zeros(5), x["v"], x["a"])
    with pytest.raises(TypeError, match="q is complex"):   # (float64 would drop the imaginary part)
        module.jax("rnea")(x["q"] + 1j, x["v"], x["a"])
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(RuntimeError, match="jax_enable_x64"):
            module.jax("rnea")(x["q"], x["v"], x["a"])
    finally:
        jax.config.update("jax_enable_x64", True)
