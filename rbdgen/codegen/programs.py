"""A function's straight-line program: its algorithm recorded on symbols and optimized, and,
for a function with variants, the cheapest program that keeps its digits."""

import contextlib
import gc

import numpy as np

from .costs import Machine
from ..table.functions import Variant
from .expr import Expr
from .optimize import optimize
from .recorder import Program, SymbolicOps, flatten, input_symbols, record


# States (seeded) on which every candidate program of a function with variants is measured.
ACCURACY_STATES = 4
# A variant is kept only within a quarter of its budget on those states: verification measures
# other states, where the same program's error can be several times larger, and a variant that
# needs more room saves few operations for a digit lost (docs/accuracy.md, Variants).
SELECTION_MARGIN = 4
ACCURACY_SEED = 1


@contextlib.contextmanager
def cycle_collection_paused():
    """A symbolic run makes millions of small objects, which Python's collector of reference
    cycles walks again every few hundred allocations: much of the run's time on large robots,
    for the same peak memory (docs/performance.md, Cold builds). What it makes is freed when its
    last reference goes, or by the collector once it resumes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def generate_program(model, spec, cse=True, choice=None, machine=None):
    """Record one function of states' algorithm on symbols and optimize the straight-line
    program (a function of a frame's are frame_programs).

    A function with variants (other algorithms for the same outputs) keeps the cheapest
    program (its operations; solves left to loops after it at their estimated cost,
    algorithms.solves) whose forward error, measured against extended precision on ACCURACY_STATES
    seeded states, is within a quarter of the budget of rbdgen.runtime.accuracy (ten times the
    table algorithm's own error, or 100 eps; SELECTION_MARGIN). Variants marked `preferred` are tried alone first,
    and the table's algorithm is recorded only when none of them keeps its digits. `choice`,
    a dict, receives what was measured and kept. machine: the costs.Machine the build compiles
    for (default: costs.Machine(), AVX-512's vectors).

    A model with parameters (Model.parameters) gives a program that takes their values as its
    last input, `params`; its variants are measured at random physical values of them (the
    input table's sampler)."""
    with cycle_collection_paused():
        return _generate_program(model, spec, cse, choice, machine or Machine())


def _generate_program(model, spec, cse, choice, machine):
    inputs = spec.input_sizes(model)
    size = int(np.prod(spec.output(model)))

    def program_of(variant):
        def run(ops, *args):
            return spec.evaluate(model, ops, None, *args, run=variant.run)
        program = optimize(record(run, inputs, spec.output(model)), cse=cse)
        program.counts["cost"] = program.counts["operations"]
        if variant.solve is not None:
            program.solve = variant.solve(model).compacted(program.outputs).placed(program.outputs, size)
            if program.solve is None:   # no room for the factors in the outputs
                return None
            program.counts["operations"] += program.solve.operations()
            program.counts["cost"] += machine.solve_cost(program.solve)
        return program

    own = Variant(spec.run)
    variants = tuple(v for v in spec.variants if v.applies(model))
    if not variants:
        return program_of(own)
    from ..runtime.accuracy import Yardstick
    from ..runtime.verify import random_inputs
    from .evaluate import evaluate
    states = random_inputs(model, np.random.default_rng(ACCURACY_SEED), ACCURACY_STATES)
    states = {name: states[name] for name in spec.arguments(model)}
    yardstick = Yardstick(model, spec, states)
    preferred = tuple(v for v in variants if v.preferred(model))
    others = tuple(v for v in variants if not v.preferred(model))
    rounds = (preferred, (own,) + others) if preferred else ((own,) + variants,)
    measured = []
    for candidates in rounds:
        for variant in candidates:
            program = program_of(variant)
            if program is None:
                continue
            measured.append((variant, program, yardstick.error(evaluate(program, states))))
        accurate = [m for m in measured if m[2] <= yardstick.budget / SELECTION_MARGIN]
        if accurate:
            break
    # none within budget (the optimizer lost digits even in the table's algorithm): the most
    # accurate, and of equal errors the cheaper (a variant that only leaves the table algorithm's
    # last product to a loop after the program has its errors exactly: Panda's
    # aba_parameter_derivatives)
    kept = (min(accurate, key=lambda m: m[1].counts["cost"]) if accurate
            else min(measured, key=lambda m: (m[2], m[1].counts["cost"])))
    # a variant kept its digits on ACCURACY_STATES but may not on a state verification will try
    # (the spatial four-bar's analytic rnea_derivatives): the next accurate one, else the table's
    # algorithm, which is the reference's
    unverified = []
    for candidate in sorted(accurate, key=lambda m: m[1].counts["cost"]) if accurate else [kept]:
        if candidate[0] is own or _verifies(model, spec, candidate[1]):
            kept = candidate
            break
        unverified.append(_algorithm_name(candidate[0], spec))
    else:
        if not any(m[0] is own for m in measured):
            program = program_of(own)
            measured.append((own, program, yardstick.error(evaluate(program, states))))
        kept = next(m for m in measured if m[0] is own)
    if choice is not None:
        choice.update(kept=_algorithm_name(kept[0], spec), error=kept[2], budget=yardstick.budget,
                      reference_error=yardstick.reference_error,
                      candidates={_algorithm_name(f, spec): {"operations": p.counts["operations"], "cost": p.counts["cost"],
                                                              "error": e}
                                  for f, p, e in measured}, unverified=unverified)
    return kept[1]


def _verifies(model, spec, program):
    """Whether verification will pass `program` on its own states, with the selection's margin
    (runtime.verify: the same draws, the reference's values, and extended precision where they
    disagree)."""
    from ..runtime.verify import judged, verification_draws
    from .evaluate import evaluate
    inputs = verification_draws(model, ())[1]
    states = {name: inputs[name] for name in spec.arguments(model)}
    return judged(model, spec, evaluate(program, states), states, SELECTION_MARGIN)["ok"]


# A program that serves the frames of several bodies along a chain ends once its recorded
# statements reach this many (the next body starts another): its C is one function with no
# parts (render.chain_kernel_data), whose compilation grows faster than its length.
CHAIN_STATEMENTS = 1500


def frame_programs(model, spec, bodies, cse=True):
    """The programs of a function of a frame (`per_body`, no variants) for `bodies` (those that
    carry frames): [(bodies served, program)]. The bodies down one chain of the tree share one
    program, whose outputs are each body's in turn (shape (len(bodies), *output)), so the
    work of the chain above a body is written once for all of them (render.chain_kernel_data
    lets each body run only what it needs). Talos' 33 bodies with frames make 5 chains, whose
    programs compile in a fraction of the time of one program per body (docs/performance.md,
    Cold builds). A chain's program ends once its recorded statements reach CHAIN_STATEMENTS;
    the next body starts another."""
    if spec.variants:   # (none has: a chain's program would need its variants measured body by body)
        raise ValueError(f"{spec.name}: a function of a frame with variants has no chain programs")
    with cycle_collection_paused():
        return _frame_programs(model, spec, bodies, cse)


def _frame_programs(model, spec, bodies, cse):
    inputs = spec.input_sizes(model)
    shape = tuple(spec.output(model))
    programs = []
    for chain in _chains(model, bodies):
        while chain:
            ops = SymbolicOps()
            symbols = {name: input_symbols(name, size) for name, size in inputs}
            served, outputs = [], []
            while chain and (not served or len(ops.statements) < CHAIN_STATEMENTS):
                body = chain.pop(0)
                served.append(body)
                outputs += flatten(spec.evaluate(model, ops, body, *symbols.values()))
            outputs = [x if isinstance(x, Expr) else float(x) for x in outputs]
            program = Program(symbols, ops.statements, outputs, (len(served),) + shape)
            programs.append((tuple(served), optimize(program, cse=cse)))
    return programs


def _chains(model, bodies):
    """`bodies` (sorted, each after its parent) as chains down the tree: a body continues the
    chain that ends at its nearest ancestor among them, if no other body has continued it yet."""
    chains, ending = [], {}   # ending: the last body of a chain -> the chain
    carried = set(bodies)
    for body in sorted(bodies):
        ancestor = model.parent[body]
        while ancestor >= 0 and ancestor not in carried:
            ancestor = model.parent[ancestor]
        chain = ending.pop(ancestor, None)
        if chain is None:
            chain = []
            chains.append(chain)
        chain.append(body)
        ending[body] = chain
    return chains


def describe_choice(name, choice):
    """One line on the program a function with variants kept, and why."""
    def size(c):
        return f"{c['operations']} operations" + (f", cost {c['cost']:.0f}" if c["cost"] != c["operations"] else "")

    others = [f"{algorithm} {size(c)}, error {c['error']:.1e}"
              + (" (over the budget on a state verification tries)" if algorithm in choice.get("unverified", ()) else "")
              for algorithm, c in choice["candidates"].items() if algorithm != choice["kept"]]
    kept = choice["candidates"][choice["kept"]]
    within = (f"within {choice['budget']:.1e} / {SELECTION_MARGIN}" if choice["error"] <= choice["budget"] / SELECTION_MARGIN
              else f"none within {choice['budget']:.1e} / {SELECTION_MARGIN}: the most accurate")
    return (f"{name}: kept {choice['kept']} ({size(kept)}, error {choice['error']:.1e} {within})"
            + (f"; also measured {'; '.join(others)}" if others else ""))


def _algorithm_name(variant, spec):
    return spec.name if variant.run is spec.run else variant.name

