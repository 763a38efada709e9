"""One description per function (rbdgen.table.description): model.json holds it exactly, and
every front end (the module, its C entry points, the reference, JAX, CasADi) exposes the
public signature generated from it."""

import inspect
import json

import pytest

from rbdgen.algorithms.constrained import parse_contacts
from rbdgen.model.parameters import with_parameters
from rbdgen.runtime import reference
from rbdgen.table import functions as fn_table
from rbdgen.table.description import DAMPING, KEYWORD_ONLY, MODULE_KEYWORDS, PLACEMENT, REQUIRED, Description
from rbdgen.table.frames import POINTS
from helpers import robot_model


def parameters(function):
    """(name, default) of each parameter of a function's signature (REQUIRED: none), with
    KEYWORD_ONLY before the keyword-only ones."""
    found = []
    for p in inspect.signature(function).parameters.values():
        if p.kind == p.KEYWORD_ONLY and KEYWORD_ONLY not in found:
            found.append(KEYWORD_ONLY)
        found.append((p.name, p.default))
    return tuple(found)


@pytest.mark.parametrize("specs", ["", "inertia:all,origin:shoulder_pan_joint"])
def test_model_json_holds_every_description_exactly(specs):
    model = robot_model("ur5")
    model = with_parameters(model, specs.split(",")) if specs else model
    bound = [spec.bind(model, "ur5") for spec in fn_table.FUNCTIONS]
    for d in bound:
        assert Description.from_json(json.loads(json.dumps(d.to_json()))) == d, d.name
        offsets = [p.offset for p in d.entry_parts] + [d.size]
        assert offsets == [0] + [p.stop for p in d.entry_parts], d.name   # the parts tile the output
    by_name = {d.name: d for d in bound}
    assert [o.keyword for o in by_name["aba"].overloads] == ["f_ext", "passive"]
    assert by_name["frame_placement"].port("placement").role == PLACEMENT
    assert (by_name["rnea"].port("params").broadcast if specs else "params" not in by_name["rnea"].names)


def test_contact_descriptions_name_their_pivots():
    model = robot_model("panda")
    for spec in fn_table.contact_functions(parse_contacts(model, ["panda_hand:3d"])):
        d = spec.bind(model, "panda")
        assert Description.from_json(json.loads(json.dumps(d.to_json()))) == d, d.name
        assert (d.pivots is not None) == (d.name in ("contact_dynamics", "impulse_dynamics")), d.name
        assert d.pivots is None or d.pivots == d.parts[-1]


@pytest.mark.parametrize("key", ["panda", "solo12"])
def test_every_front_end_exposes_the_description_s_signature(bridge_modules, key):
    """The module's functions (their C entry points and the Python functions behind them) and
    the reference's take what the description says, in its order (JAX's and CasADi's: below)."""
    module, _ = bridge_modules[key]
    checked = 0
    for name, d in module._DESCRIPTIONS.items():
        if d.per_body:
            continue
        public = "_declared_" + name if d.declared else name
        expected = d.parameters(MODULE_KEYWORDS)
        assert parameters(getattr(module, public)) == expected, name
        if not d.declared:
            # the C entry point documents the Python function's signature
            assert parameters(getattr(module, name).__self__[0]) == expected, name
            if d.kind != "contact":   # (the reference's functions of contacts take them as an argument)
                assert parameters(getattr(reference, name)) == (("model", REQUIRED),) + d.parameters() + \
                    (("params", None),), name
        checked += 1
    assert checked >= 15
    for family in {d.family for d in module._DESCRIPTIONS.values() if d.per_body}:
        d = next(d for d in module._DESCRIPTIONS.values() if d.family == family)
        states = tuple((port.name, REQUIRED) for port in d.states) + (("frame", REQUIRED),)
        reference_frame = (("reference", d.default_reference),) if d.reference else ()
        assert parameters(getattr(module, family)) == states + reference_frame + MODULE_KEYWORDS, family
        assert parameters(getattr(reference, family)) == (("model", REQUIRED),) + states + reference_frame + \
            (("params", None),), family
    for name, point in POINTS.items():
        if hasattr(module, name):
            states = tuple((x, REQUIRED) for x in (*point.states, "frame", "point"))
            assert parameters(getattr(module, name)) == states + MODULE_KEYWORDS, name
            assert parameters(getattr(reference, name)) == (("model", REQUIRED),) + states + (("params", None),)


@pytest.mark.parametrize("key", ["panda", "solo12"])
def test_jax_and_casadi_expose_the_description_s_signature(bridge_modules, key):
    """JAX's functions take the description's parameters; CasADi's inputs are its ports, but the
    damping of a solve, which CasADi holds rigid."""
    pytest.importorskip("jax")
    pytest.importorskip("casadi")
    module, _ = bridge_modules[key]
    for name, d in module._DESCRIPTIONS.items():
        if d.per_body:
            if d.family != "frame_placement" and d.name == next(e.name for e in module._DESCRIPTIONS.values()
                                                                if e.family == d.family):
                states = tuple((port.name, REQUIRED) for port in d.states) + (("frame", REQUIRED),)
                reference_frame = (("reference", d.default_reference),) if d.reference else ()
                assert parameters(module.jax(d.family)) == states + reference_frame, d.family
            continue
        if not d.declared:
            assert parameters(module.jax(name)) == d.parameters(), name
            held = [port.name for port in d.inputs if port.role == DAMPING]
            assert module.casadi(name).name_in() == [n for n in d.names if n not in held], name
