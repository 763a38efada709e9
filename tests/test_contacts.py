"""Contacts declared at build time and the equation of motion in one call
(rbdgen/algorithms/constrained.py).

1. The reference against Pinocchio's constraintDynamics and impulseDynamics (exact solve,
   LOCAL constraints) on fixed and floating robots: 3d feet, 6d soles, a 3d point off the
   frame's origin.
2. Identities: G q-ddot = gamma after contact_dynamics; G v+ = -e G v- after an impact; the
   kinetic energy is kept by an elastic impact (e = 1) on one contact; eom = (crba, nle);
   contact_eom = (M, nle, G, gamma); contact_inertia = G M^-1 G^T; 1d contacts are n^T of 3d.
3. Generated modules against the reference, batches and out=; redundant contacts raise
   ValueError naming them unless damped; bad declarations are one-line errors.
"""


import numpy as np
import pinocchio as pin
import pytest

import rbdgen
from helpers import (robot_model, REL_TOL_GENERATED, REL_TOL_IDENTITY, REL_TOL_PINOCCHIO, ROBOTS, assert_close,
                     pinocchio_model, random_state, robot_path, to_pinocchio_q)
from rbdgen.algorithms import constrained
from rbdgen.runtime.pinocchio_bridge import pinocchio_constraints
from rbdgen.runtime.reference import OPS
from trees import ALL_JOINT_TYPES, random_tree

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

PIN_CASES = {
    "solo12": ["FL_FOOT:3d", "FR_FOOT:3d", "HL_FOOT:3d", "HR_FOOT:3d"],
    "anymal": ["LF_FOOT:3d", "RH_FOOT:3d"],
    "talos": ["left_sole_link:6d", "right_sole_link:6d"],
    "ur5": ["tool0:3d@0.01,0.02,0.03"],
    "panda": ["panda_hand:6d"],
    "go1": ["FL_foot:3d", "RR_foot:3d@0,0,-0.01"],
}
STATES = (0, 1)


def tree_model():
    return random_tree(911, len(ALL_JOINT_TYPES) + 2, ALL_JOINT_TYPES, floating_base=True, branched=True)


def deepest_frames(model, count):
    """Frames on the `count` deepest bodies (one each)."""
    bodies = sorted({f.body for f in model.frames if f.body >= 0}, key=lambda b: -len(model.support(b)))[:count]
    return [next(f.name for f in model.frames if f.body == b) for b in bodies]


def independent_contacts(model, candidates, rows=12):
    """The candidates (specs) kept in order while G keeps full row rank at a few states."""
    rng = np.random.default_rng(0)
    states = [random_state(model, rng)[0] for _ in range(3)]
    kept = []
    for spec in candidates:
        contacts = constrained.parse_contacts(model, kept + [spec])
        m = sum(c.rows for c in contacts)
        if m <= rows and all(np.linalg.matrix_rank(run(constrained.constraint_rows, model, contacts, q)) == m
                             for q in states):
            kept.append(spec)
    return kept


def tree_contacts(model):
    frames = deepest_frames(model, 6)
    return independent_contacts(model, [f"{frames[0]}:6d", f"{frames[1]}:1d@0,0.1,0/0,1,1"] +
                                [f"{f}:3d@0.1,0,0" for f in frames[2:]])


def run(function, model, *args, **keywords):
    listed = lambda a: list(a) if isinstance(a, np.ndarray) else a
    return np.array(function(model, OPS, *map(listed, args), **{k: listed(a) for k, a in keywords.items()}),
                    dtype=float)


def solve(model, contacts, q, v, tau, damping=0.0):
    out = run(constrained.contact_dynamics, model, contacts, q, v, tau, damping=[damping])
    m = sum(c.rows for c in contacts)
    return out[:model.nv], out[model.nv:model.nv + m], out[model.nv + m:]


def impact(model, contacts, q, v, e, damping=0.0):
    out = run(constrained.impulse_dynamics, model, contacts, q, v, restitution=[e], damping=[damping])
    m = sum(c.rows for c in contacts)
    return out[:model.nv], out[model.nv:model.nv + m]


# ===================================================================== against Pinocchio ===

@pytest.mark.parametrize("name", list(PIN_CASES))
@pytest.mark.parametrize("seed", STATES)
def test_contact_dynamics_and_impacts_match_pinocchio(name, seed):
    model = robot_model(name)
    contacts = constrained.parse_contacts(model, PIN_CASES[name])
    pm = pinocchio_model(name)
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    models, datas = pinocchio_constraints(pm, contacts)
    pin.initConstraintDynamics(pm, pd, models, datas)
    exact = pin.ProximalSettings(1e-14, 0.0, 1)
    qp = to_pinocchio_q(model, q)
    qdd, lam, pivots = solve(model, contacts, q, v, tau)
    tag = f"{name} state {seed}"
    assert_close(f"{tag} q-ddot", qdd, pin.constraintDynamics(pm, pd, qp, v, tau, models, datas, exact),
                 REL_TOL_PINOCCHIO)
    assert_close(f"{tag} lambda", lam, pd.lambda_c, REL_TOL_PINOCCHIO)
    assert (pivots > 0).all()
    for e in (0.0, 0.5):
        v_plus, impulses = impact(model, contacts, q, v, e)
        assert_close(f"{tag} v+ (e={e})", v_plus, pin.impulseDynamics(pm, pd, qp, v, models, datas, e, exact),
                     REL_TOL_PINOCCHIO)
        assert_close(f"{tag} impulses (e={e})", impulses, pd.impulse_c, REL_TOL_PINOCCHIO)


# ============================================================================ identities ===

def identity_cases():
    tree = tree_model()
    return [(name, robot_model(name), PIN_CASES[name]) for name in ("solo12", "talos")] + [
        ("tree", tree, tree_contacts(tree)),
    ]


@pytest.mark.parametrize("case", identity_cases(), ids=lambda c: c[0])
def test_contact_identities(case):
    name, model, specs = case
    contacts = constrained.parse_contacts(model, specs)
    rng = np.random.default_rng(21)
    q, v, _ = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    G = run(constrained.constraint_rows, model, contacts, q)
    gamma = run(constrained.constraint_drift, model, contacts, q, v)
    M = np.array(rbdgen.reference.crba(model, q))
    nle = rbdgen.reference.nle(model, q, v)
    qdd, lam, _ = solve(model, contacts, q, v, tau)
    assert_close(f"{name}: G q-ddot = gamma", G @ qdd, gamma, REL_TOL_IDENTITY)
    assert_close(f"{name}: M q-ddot = tau - nle + G^T lambda", M @ qdd, tau - nle + G.T @ lam, REL_TOL_IDENTITY,
                 abs_floor=np.abs(G.T @ lam).max())
    assert_close(f"{name}: contact_inertia", run(constrained.contact_inertia, model, contacts, q),
                 G @ np.linalg.solve(M, G.T), REL_TOL_IDENTITY)
    for e in (0.0, 0.3, 1.0):
        v_plus, _ = impact(model, contacts, q, v, e)
        assert_close(f"{name}: G v+ = -e G v- (e={e})", G @ v_plus, -e * (G @ v), REL_TOL_IDENTITY)
    eom = run(constrained.eom, model, q, v)
    assert_close(f"{name}: eom = (crba, nle)", eom, np.concatenate([M.ravel(), nle]), REL_TOL_IDENTITY)
    full = run(constrained.contact_eom, model, contacts, q, v)
    assert_close(f"{name}: contact_eom", full, np.concatenate([M.ravel(), nle, G.ravel(), gamma]), REL_TOL_IDENTITY)


def test_elastic_impact_keeps_kinetic_energy():
    model = robot_model("solo12")
    contacts = constrained.parse_contacts(model, ["FL_FOOT:3d"])
    q, v, _ = random_state(model, np.random.default_rng(4))
    v_plus, _ = impact(model, contacts, q, v, 1.0)
    energy = rbdgen.reference.kinetic_energy
    assert_close("kinetic energy before and after", energy(model, q, v_plus), energy(model, q, v), REL_TOL_IDENTITY)


def test_1d_contact_is_the_normal_row_of_the_3d_one():
    model = tree_model()
    frame = deepest_frames(model, 1)[0]
    n = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    one = constrained.parse_contacts(model, [f"{frame}:1d@0.1,0.2,0/1,-2,0.5"])
    three = constrained.parse_contacts(model, [f"{frame}:3d@0.1,0.2,0"])
    q, v, _ = random_state(model, np.random.default_rng(8))
    assert_close("1d row", run(constrained.constraint_rows, model, one, q)[0],
                 n @ run(constrained.constraint_rows, model, three, q), REL_TOL_IDENTITY)
    assert_close("1d drift", run(constrained.constraint_drift, model, one, q, v)[0],
                 n @ run(constrained.constraint_drift, model, three, q, v), REL_TOL_IDENTITY)


@pytest.mark.parametrize("spec, message", [
    ("nowhere:3d", "unknown frame 'nowhere'"),
    ("FL_FOT:3d", "did you mean 'FL_FOOT'"),
    ("FL_FOOT:2d", "kind '2d' is unknown"),
    ("FL_FOOT:3d@1,2", "three finite numbers"),
    ("FL_FOOT:3d@1,2,nan", "three finite numbers"),
    ("FL_FOOT:3d/0,0,1", "for 1d contacts only"),
    ("FL_FOOT:1d/0,0,0", "zero length"),
    ("FL_FOOT:6d@0,0,1", "holds the whole frame"),
])
def test_bad_declarations_are_one_line_errors(spec, message):
    with pytest.raises(rbdgen.ModelError, match=message) as info:
        constrained.parse_contacts(robot_model("solo12"), [spec])
    assert "\n" not in str(info.value)


def test_build_refuses_unknown_contact_frames_before_generating(tmp_path):
    with pytest.raises(rbdgen.CodegenError, match="unknown frame 'FL_FOT'; did you mean 'FL_FOOT'"):
        rbdgen.build(robot_path("solo12"), out_dir=str(tmp_path), floating_base=True, contacts=["FL_FOT:3d"])
    with pytest.raises(rbdgen.CodegenError, match="declared twice"):
        rbdgen.build(robot_path("solo12"), out_dir=str(tmp_path), floating_base=True,
                     contacts=["FL_FOOT:3d", "FL_FOOT:3d"])
    with pytest.raises(rbdgen.CodegenError, match="needs contacts declared"):
        rbdgen.build(robot_path("solo12"), out_dir=str(tmp_path), floating_base=True, algorithms=["contact_dynamics"])


# ============================================================================ generated ===

CONTACT_ALGORITHMS = ["eom", "crba", "nle", "contact_jacobian", "contact_gamma", "contact_dynamics", "impulse_dynamics",
                      "contact_inertia", "contact_eom"]


@pytest.fixture(scope="session")
def contact_module(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("contacts"))
    built = {}

    def get(key):
        if key not in built:
            if key == "tree":
                model = tree_model()
                specs = tree_contacts(model)
                module = rbdgen.build_model(model, out_dir=out, algorithms=CONTACT_ALGORITHMS, contacts=specs)
            else:
                model = robot_model(key)
                specs = PIN_CASES[key]
                module = rbdgen.build(robot_path(key), out_dir=out, floating_base=ROBOTS[key][1],
                                      algorithms=CONTACT_ALGORITHMS, contacts=specs)
            built[key] = (module, model, constrained.parse_contacts(model, specs))
        return built[key]

    return get


@pytest.mark.parametrize("key", ["solo12", "tree"])
def test_generated_contacts_match_reference(contact_module, key):
    module, model, contacts = contact_module(key)
    assert module.contacts == tuple(c.describe() for c in contacts)
    rng = np.random.default_rng(31)
    q, v, _ = random_state(model, rng)
    qb, vb, _ = random_state(model, rng, batch=4)
    tau, taub = rng.normal(size=model.nv), rng.normal(size=(4, model.nv))
    tol = REL_TOL_GENERATED
    qdd, lam, _ = solve(model, contacts, q, v, tau)
    got = module.contact_dynamics(q, v, tau)
    assert_close(f"{key} q-ddot", got[0], qdd, tol)
    assert_close(f"{key} lambda", got[1], lam, tol)
    batch = module.contact_dynamics(qb, vb, taub)
    for k in range(4):
        want = solve(model, contacts, qb[k], vb[k], taub[k])
        assert_close(f"{key} batch q-ddot {k}", batch[0][k], want[0], tol)
        assert_close(f"{key} batch lambda {k}", batch[1][k], want[1], tol)
    v_plus, impulses = impact(model, contacts, q, v, 0.4)
    got = module.impulse_dynamics(q, v, restitution=0.4)
    assert_close(f"{key} v+", got[0], v_plus, tol)
    assert_close(f"{key} impulses", got[1], impulses, tol)
    # the common call (states only) takes the C entry point; restitution= the Python function
    for name, got in (("C entry", module.impulse_dynamics(q, v)), ("Python", module.impulse_dynamics(q, v, None))):
        want = impact(model, contacts, q, v, 0.0)
        assert_close(f"{key} v+ ({name})", got[0], want[0], tol)
        assert_close(f"{key} impulses ({name})", got[1], want[1], tol)
    assert_close(f"{key} G", module.contact_jacobian(q), run(constrained.constraint_rows, model, contacts, q), tol)
    assert_close(f"{key} gamma", module.contact_gamma(q, v), run(constrained.constraint_drift, model, contacts, q, v),
                 tol)
    assert_close(f"{key} contact_inertia", module.contact_inertia(q), run(constrained.contact_inertia, model, contacts,
                                                                          q), tol)
    M, nle = module.eom(q, v)
    assert_close(f"{key} eom M", M, module.crba(q), tol)
    assert_close(f"{key} eom nle", nle, module.nle(q, v), tol)
    Mb, nleb, Gb, gammab = module.contact_eom(qb, vb)
    assert Mb.shape == (4, model.nv, model.nv) and Gb.shape[:2] == (4, sum(c.rows for c in contacts))
    assert_close(f"{key} contact_eom G", Gb[2], module.contact_jacobian(qb[2]), tol)
    assert_close(f"{key} contact_eom gamma", gammab[2], module.contact_gamma(qb[2], vb[2]), tol)
    flat = np.empty(model.nv + 2 * len(lam))
    qdd_out, lam_out = module.contact_dynamics(q, v, tau, out=flat)
    assert np.shares_memory(qdd_out, flat) and np.shares_memory(lam_out, flat)
    assert_close(f"{key} out=", flat[:model.nv], qdd, tol)


def test_generated_redundant_contacts_raise_unless_damped(tmp_path):
    model = robot_model("solo12")
    specs = ["FL_FOOT:3d", "FL_FOOT:1d"]   # the 1d row repeats one of the 3d rows
    module = rbdgen.build(robot_path("solo12"), out_dir=str(tmp_path), floating_base=True,
                          algorithms=["contact_dynamics", "impulse_dynamics"], contacts=specs)
    q, v, _ = random_state(model, np.random.default_rng(2))
    tau = np.zeros(model.nv)
    with pytest.raises(ValueError, match="contacts are redundant: FL_FOOT:3d, FL_FOOT:1d"):
        module.contact_dynamics(q, v, tau)
    with pytest.raises(ValueError, match=r"redundant.*state 0 of the batch"):
        module.impulse_dynamics(np.stack([q, q]), np.stack([v, v]))
    with pytest.raises(ValueError, match="contacts are redundant"):   # the C entry point's common call
        module.impulse_dynamics(q, v)
    qdd, lam = module.contact_dynamics(q, v, tau, damping=1e-6)
    assert np.isfinite(qdd).all() and np.isfinite(lam).all()
    with pytest.raises(ValueError, match="damping"):
        module.contact_dynamics(q, v, tau, damping=-1.0)
