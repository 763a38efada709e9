"""module.torch(name) on the CPU (issue 47): the operators equal the module, their gradients
pass torch.autograd.gradcheck (central differences), and they trace under torch.compile and
torch.func.vmap. The same operators on CUDA tensors: test_cuda.py's GPU tests."""

import inspect
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

STATES = 5
SEED = 4747


def tensors(model, rng, count, *sizes):
    return [torch.tensor(rng.normal(size=(count, n)), dtype=torch.float64, requires_grad=True) for n in sizes]


def numpy(x):
    return x.detach().numpy()


@pytest.mark.parametrize("robot", ["ur5", "panda", "solo12"])
def test_operators_equal_the_module(bridge_modules, robot):
    """Every function of states, a batch and one state, and a function of a frame."""
    module, model = bridge_modules[robot]
    rng = np.random.default_rng(SEED)
    from rbdgen.runtime.verify import random_inputs
    states = random_inputs(model, rng, STATES)
    for name, d in module._DESCRIPTIONS.items():
        if d.kind != "state":
            continue
        args = [states[p.name] if p.per_state else np.full(p.size, 0.3) for p in d.inputs if not p.broadcast]
        expected = getattr(module, name)(*args)
        actual = module.torch(name)(*[torch.tensor(a) for a in args])
        for e, a in zip(expected if d.parts else [expected], actual if d.parts else [actual]):
            assert np.array_equal(np.asarray(e), numpy(a)), name
        one = module.torch(name)(*[torch.tensor(a[0] if p.per_state else a) for a, p in zip(args, d.inputs)])
        first = one[0] if d.parts else one
        assert tuple(first.shape) == (tuple(d.parts[0].shape) if d.parts else (() if d.scalar else tuple(d.shape))), name
    frame = module.frames[-1]
    q = states["q"]
    J = module.torch("frame_jacobian_local_world_aligned")(torch.tensor(q), frame)
    assert np.array_equal(numpy(J), module.frame_jacobian(q, frame, "local_world_aligned"))


def test_families_and_points_as_the_module(bridge_modules):
    """The module's functions of a frame by family and reference (frame_jacobian(q, frame,
    reference)) and of a point in a frame (point_jacobian(q, frame, point), ...) through
    module.torch: equal to the module's; a point's velocity passes gradcheck (its frame
    function's derivatives)."""
    module, model = bridge_modules["panda"]
    rng = np.random.default_rng(SEED)
    from rbdgen.runtime.verify import random_inputs
    states = random_inputs(model, rng, STATES)
    frame, point = module.frames[-1], np.array([0.01, -0.02, 0.1])
    tried = []
    for name in (*module._FAMILIES, *module._META["points"]):
        if not callable(getattr(module, name, None)):
            continue
        public = getattr(module, name)
        args = [states[x] for x in inspect.signature(public).parameters if x in states]
        extra = (point,) if name in module._META["points"] else ()
        try:
            expected = public(*args, frame, *extra)
        except ValueError as error:   # (its default reference not built: the same error)
            with pytest.raises(ValueError, match=str(error)):
                module.torch(name)(*map(torch.tensor, args), frame, *extra)
            continue
        actual = module.torch(name)(*map(torch.tensor, args), frame, *extra)
        wanted, got = (x if isinstance(x, tuple) else (x,) for x in (expected, actual))   # (parts: frame_placement)
        assert all(np.array_equal(numpy(a), e) for a, e in zip(got, wanted, strict=True)), name
        tried.append(name)
    points = [name for name in tried if name in module._META["points"]]
    assert len(tried) >= 5 and "point_jacobian" in points, tried
    q, v = (torch.tensor(states[x], requires_grad=True) for x in ("q", "v"))   # (by family: frame_velocity_local's)
    assert torch.autograd.gradcheck(lambda q, v: module.torch("frame_velocity")(q, v, frame, reference="local"), (q, v),
                                    eps=1e-6, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="reference"):
        module.torch("frame_jacobian")(q.detach(), frame, reference="sideways")


def test_plain_calls_run_the_kernel_without_the_dispatcher(bridge_modules):
    """Tensors that need no gradient run the op's kernel directly (PyTorch's autograd layer
    for an op defined in Python costs more than a small batch's kernel); under autograd,
    torch.func and torch.compile the op runs: equal values either way."""
    import sys
    module, model = bridge_modules["ur5"]
    rnea = module.torch("rnea")
    ops = sys.modules[module.__name__ + "._torch"]
    rng = np.random.default_rng(SEED)
    q, v, a = (torch.tensor(rng.normal(size=(STATES, model.nv))) for _ in range(3))
    assert ops._direct([q, v, a]) and not ops._direct([q.requires_grad_(), v, a])
    with torch.no_grad():
        assert ops._direct([q, v, a])
    seen = []
    torch.func.vmap(lambda x: seen.append(ops._direct([x])) or x)(v)
    assert seen == [False]
    through_op = rnea(q, v, a)
    with torch.no_grad():
        direct = rnea(q, v, a)
    assert through_op.requires_grad and not direct.requires_grad
    assert torch.equal(through_op.detach(), direct) and np.array_equal(numpy(direct), module.rnea(*map(numpy, (q, v, a))))
    with warnings.catch_warnings():   # (the checks of the inputs' shapes: constants of the trace, as they should be)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(lambda q, v, a: rnea(q, v, a), (q.detach(), v, a), check_trace=False)   # records the op
    other = [x + 0.5 for x in (q.detach(), v, a)]
    assert np.array_equal(numpy(traced(*other)), module.rnea(*map(numpy, other)))


def test_operators_with_model_parameters(tmp_path):
    """A module built with parameters: params left out (nominal), one set for the batch and one
    per state, through rnea (whose module function takes f_ext before params) and aba, plain
    and under autograd: equal to the module."""
    import rbdgen
    from helpers import robot_path
    module = rbdgen.build(robot_path("ur5"), str(tmp_path), algorithms=["rnea", "aba", "rnea_fext"],
                          parameters=["payload:wrist_3_link"])
    rng = np.random.default_rng(SEED)
    q, v, a = rng.normal(size=(3, STATES, 6))
    nominal = np.asarray(module.nominal_params)
    for params in (None, nominal * 1.3, nominal * (1 + 0.1 * rng.random((STATES, nominal.size)))):
        for name in ("rnea", "aba"):
            expected = getattr(module, name)(q, v, a, params=params)
            given = None if params is None else torch.tensor(params)
            plain = module.torch(name)(*map(torch.tensor, (q, v, a)), params=given)
            tracked = module.torch(name)(*(torch.tensor(x, requires_grad=True) for x in (q, v, a)), params=given)
            assert np.array_equal(numpy(plain), expected) and not plain.requires_grad, name
            assert np.array_equal(numpy(tracked), expected) and tracked.requires_grad, name


@pytest.mark.parametrize("robot", ["ur5", "panda"])
def test_gradients_pass_gradcheck(bridge_modules, robot):
    """Autograd from the generated derivatives against central differences: rnea, aba (their
    derivatives), a frame's velocity and placement (its Jacobian, the rotation through the
    angular rows) and, for Panda, the declared contact's dynamics."""
    module, model = bridge_modules[robot]
    rng = np.random.default_rng(SEED)
    q, v, a = tensors(model, rng, 3, model.nq, model.nv, model.nv)
    frame = module.frames[-1]
    checks = {
        "rnea": lambda q, v, a: module.torch("rnea")(q, v, a),
        "aba": lambda q, v, a: module.torch("aba")(q, v, a),
        "frame_velocity_local": lambda q, v, a: module.torch("frame_velocity_local")(q, v, frame),
        "frame_placement": lambda q, v, a: module.torch("frame_placement")(q, frame),
    }
    if "contact_dynamics" in module._DESCRIPTIONS:
        checks["contact_dynamics"] = lambda q, v, a: module.torch("contact_dynamics")(q, v, a)
    for name, f in checks.items():
        assert torch.autograd.gradcheck(f, (q, v, a), eps=1e-6, atol=1e-5, rtol=1e-4), name


def test_free_flyer_configuration_gradient_is_refused(bridge_modules):
    """Solo12: d/dq is in the tangent space (nv of nq coordinates); the gradient with respect to
    v is given, the one with respect to q refused in one line."""
    module, model = bridge_modules["solo12"]
    rng = np.random.default_rng(SEED)
    from rbdgen.runtime.verify import random_inputs
    states = random_inputs(model, rng, 2)
    q = torch.tensor(states["q"], requires_grad=True)
    v, a = (torch.tensor(states[n], requires_grad=True) for n in ("v", "a"))
    tau = module.torch("rnea")(q.detach(), v, a)
    tau.sum().backward()
    assert v.grad is not None and torch.isfinite(v.grad).all()
    with pytest.raises(RuntimeError, match="tangent space"):
        module.torch("rnea")(q, v.detach(), a.detach()).sum().backward()


def test_compile_and_vmap(bridge_modules):
    """torch.compile traces the operator through its fake kernel (fullgraph); vmap over states
    gives one batch of the C."""
    module, model = bridge_modules["ur5"]
    rng = np.random.default_rng(SEED)
    q, v, a = (torch.tensor(rng.normal(size=(3, 4, model.nv))) for _ in range(3))
    rnea = module.torch("rnea")
    expected = module.rnea(q.reshape(-1, model.nv).numpy(), v.reshape(-1, model.nv).numpy(),
                           a.reshape(-1, model.nv).numpy()).reshape(3, 4, model.nv)
    compiled = torch.compile(lambda q, v, a: rnea(q, v, a), backend="aot_eager", fullgraph=True)
    assert np.array_equal(numpy(compiled(q, v, a)), expected)
    # a setting and a frame given as numbers and a name: constants of the graph
    integrate, frame = module.torch("integrate"), module.torch("frame_jacobian_local_world_aligned")
    step = torch.compile(lambda q, v: (integrate(q, v, 0.1), frame(q, module.frames[-1])), backend="aot_eager",
                         fullgraph=True)
    flat = q.reshape(-1, model.nv)
    for actual, wanted in zip(step(flat, flat), (integrate(flat, flat, 0.1), frame(flat, module.frames[-1]))):
        assert torch.equal(actual, wanted)
    assert np.array_equal(numpy(torch.func.vmap(rnea)(q, v, a)), expected)
    dt = torch.tensor(0.1, dtype=torch.float64)   # (a 0-d setting, not vmapped)
    assert torch.equal(torch.func.vmap(lambda q, v: integrate(q, v, dt))(q, v), integrate(q, v, 0.1))
    assert np.array_equal(numpy(torch.func.vmap(torch.func.vmap(rnea))(q, v, a)), expected)


def test_errors_name_the_input(bridge_modules):
    module, model = bridge_modules["ur5"]
    q = torch.zeros(model.nq, dtype=torch.float32)
    with pytest.raises(TypeError, match="q is float32.*float64"):
        module.torch("rnea")(q, q.double(), q.double())
    with pytest.raises(ValueError, match="no function 'rneaa'"):
        module.torch("rneaa")
    rnea, x = module.torch("rnea"), torch.zeros((2, 3, model.nv), dtype=torch.float64)
    for call, error, message in (
            (lambda: rnea(x[0, 0, :5], x[0, 0], x[0, 0]), ValueError, r"q has shape \(5,\), expected \(\.\.\., 6\)"),
            (lambda: rnea(x[0, 0].numpy(), x[0, 0], x[0, 0]), TypeError, "q is a ndarray; .* float64 tensors"),
            (lambda: rnea(x, x.transpose(0, 1), x), ValueError, r"v has shape \(3, 2, 6\), expected \(2, 3, 6\)"),
            (lambda: rnea(x, x.to("meta"), x), ValueError, "v is on meta, q on cpu"),
            (lambda: rnea(x, x), TypeError, "missing required argument: 'a'"),
            (lambda: rnea(x, x, x, f_ext=x), ValueError, r"f_ext has shape \(2, 3, 6\), expected \(2, 3, 6, 6\)"),
            (lambda: module.torch("integrate")(x, x, 0.1j), TypeError, r"dt: expected real numbers .* complex"),
            (lambda: module.torch("integrate")(x, x, dt=None), TypeError, "dt is None"),
            (lambda: module.torch("integrate")(x, x, "0.1"), TypeError, "integrate: dt: expected real numbers"),
            (lambda: module.torch("integrate")(x, x, True), TypeError, "integrate: dt: expected real numbers"),
            (lambda: module.torch("frame_placement")(x), TypeError, "missing required argument: 'frame'"),
            (lambda: module.torch("aba")(x, x, x, passive=True), ValueError, "built without passive_torque")):
        with pytest.raises(error, match=message):
            call()
    same = rnea(q=x, v=x, a=x)   # (by keyword, as the module takes them)
    assert np.array_equal(numpy(same), module.rnea(*(numpy(x).reshape(-1, model.nv),) * 3).reshape(2, 3, -1))


def test_external_forces_and_settings_as_the_module(bridge_modules):
    """rnea and aba with f_ext (rows [force; torque] per body, in its frame) equal the module's,
    a batch and one state; their gradients with respect to v, a (tau) and f_ext pass gradcheck
    (f_ext's through the bodies' Jacobians and rotations), q's is refused. Settings left out
    take the module's defaults (impulse_dynamics' restitution 0)."""
    module, model = bridge_modules["ur5"]
    rng = np.random.default_rng(SEED)
    q, v, a = (torch.tensor(rng.normal(size=(STATES, model.nv)), requires_grad=True) for _ in range(3))
    f_ext = torch.tensor(rng.normal(size=(STATES, model.nv, 6)), requires_grad=True)
    for name in ("rnea", "aba"):
        op = module.torch(name)
        expected = getattr(module, name)(*(numpy(x) for x in (q, v, a, f_ext)))
        assert np.array_equal(numpy(op(q, v, a, f_ext)), expected), name
        assert np.array_equal(numpy(op(q[0], v[0], a[0], f_ext=f_ext[0])), expected[0]), name
        assert torch.autograd.gradcheck(lambda v, a, f: op(q.detach(), v, a, f), (v, a, f_ext), eps=1e-6, atol=1e-5,
                                        rtol=1e-4), name
        with pytest.raises(RuntimeError, match=f"{name} with f_ext has no derivative with respect to q"):
            op(q, v.detach(), a.detach(), f_ext.detach()).sum().backward()
    panda, panda_model = bridge_modules["panda"]
    from rbdgen.runtime.verify import random_inputs
    states = random_inputs(panda_model, rng, STATES)
    plus, impulses = panda.torch("impulse_dynamics")(torch.tensor(states["q"]), torch.tensor(states["v"]))
    for actual, wanted in zip((plus, impulses), panda.impulse_dynamics(states["q"], states["v"]), strict=True):
        assert np.array_equal(numpy(actual), wanted)
    with pytest.raises(ValueError, match="restitution: expected a number from 0 to 1"):
        panda.torch("impulse_dynamics")(torch.tensor(states["q"]), torch.tensor(states["v"]), 2.0)
    step = module.torch("integrate")(q.detach(), v.detach())
    assert np.array_equal(numpy(step), module.integrate(numpy(q), numpy(v)))


def test_redundant_contacts_are_refused_as_by_the_module(tmp_path):
    """UR5 held at tool0 (6d) with its wrist straight (q = 0): the contacts are redundant. The
    module refuses the state, and so do the operators on the CPU (their pivots are not among
    the results, as the module's); damped, they equal the module."""
    import rbdgen
    from helpers import robot_path
    module = rbdgen.build(robot_path("ur5"), str(tmp_path), algorithms=["contact_dynamics", "impulse_dynamics"],
                          contacts=["tool0:6d"])
    q, v, tau = np.zeros(6), np.full(6, 0.1), np.ones(6)
    for name, args in (("contact_dynamics", (q, v, tau)), ("impulse_dynamics", (q, v))):
        for call in (getattr(module, name), lambda *x, f=module.torch(name): f(*map(torch.tensor, x))):
            with pytest.raises(ValueError, match="redundant"):
                call(*args)
        for bad in (-1.0, torch.tensor(-1.0, dtype=torch.float64)):   # (out of range: refused, as by the module)
            with pytest.raises(ValueError, match="damping: expected a finite number >= 0"):
                module.torch(name)(*map(torch.tensor, args), damping=bad)
        damped = module.torch(name)(*map(torch.tensor, args), damping=0.1)
        for actual, wanted in zip(damped, getattr(module, name)(*args, damping=0.1), strict=True):
            assert np.array_equal(numpy(actual), wanted), name


def test_transforms_that_miss_the_operators_are_refused(bridge_modules):
    """Forward mode (torch.func.jvp, jacfwd, forward_ad) would give the operators zero tangents,
    and torch.func.grad raises PyTorch's own error: each is refused in one line naming what
    works; torch.autograd.functional.jacobian does work (rnea's d/da is M)."""
    import torch.autograd.forward_ad as forward_ad
    module, model = bridge_modules["ur5"]
    rng = np.random.default_rng(SEED)
    q, v, a = (torch.tensor(rng.normal(size=model.nv)) for _ in range(3))
    rnea = module.torch("rnea")
    for transform in (lambda: torch.func.jvp(lambda a: rnea(q, v, a), (a,), (a,)),
                      lambda: torch.func.jacfwd(lambda a: rnea(q, v, a))(a)):
        with pytest.raises(RuntimeError, match="forward-mode differentiation .* use reverse mode"):
            transform()
    with forward_ad.dual_level():
        with pytest.raises(RuntimeError, match="forward-mode differentiation"):
            rnea(q, v, forward_ad.make_dual(a, a))
        assert np.array_equal(numpy(rnea(q, v, a)), module.rnea(*map(numpy, (q, v, a))))   # (no tangent: it runs)
    _, tangent = torch.func.jvp(lambda x: x * rnea(q, v, a).sum(), (a,), (a,))   # (rnea's inputs carry none)
    assert torch.equal(tangent, a * rnea(q, v, a).sum())
    with pytest.raises(RuntimeError, match="torch.func.grad and jacrev .* torch.autograd.grad"):
        torch.func.grad(lambda a: rnea(q, v, a).sum())(a)
    M = torch.autograd.functional.jacobian(lambda a: rnea(q, v, a), a)
    assert np.allclose(numpy(M), module.crba(numpy(q)), rtol=0, atol=1e-12)


def test_inference_mode_leaves_later_gradients_alone(bridge_modules):
    """A frame by name and a setting as a number first given under torch.inference_mode: the
    tensors kept for them are made outside it, so a later call under autograd differentiates."""
    module, model = bridge_modules["ur5"]
    frame = module.frames[-1]
    q = torch.tensor(np.random.default_rng(SEED).normal(size=(2, model.nq)), requires_grad=True)
    with torch.inference_mode():
        module.torch("frame_velocity_local")(q.detach(), q.detach(), frame)
        module.torch("integrate")(q.detach(), q.detach(), 0.25)
    module.torch("frame_velocity_local")(q, q, frame).sum().backward()
    dv_dq, dv_dv = module.frame_velocity_derivatives(numpy(q), numpy(q), frame, "local")   # (q is v too: both terms)
    assert np.allclose(numpy(q.grad), (dv_dq + dv_dv).sum(axis=1), rtol=0, atol=1e-12)
    step = module.torch("integrate")(q, q.detach(), 0.25)   # (its kept dt, a normal tensor: no error under autograd)
    assert np.array_equal(numpy(step), module.integrate(numpy(q), numpy(q), 0.25))
