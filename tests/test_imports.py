"""Imports run one way (issue 32): every import of a module of rbdgen/ goes down the layers
below, or stays in its layer, and no imports close a circle.

Each module's source is read with `ast` (absolute and relative imports, at module level and
inside functions alike), nothing is imported. KNOWN lists the imports that run up a layer
today, each with its reason; the test fails on any other, and on an entry of KNOWN that no
longer occurs (remove it: the list only shrinks).
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "rbdgen"

# Bottom to top. "p.*" is the package p and every module in it; a name alone is that module.
LAYERS = [
    # bindings/contact.py: the binding's file the reference shares with every module (it imports nothing of rbdgen)
    # bindings/cuda.py: NVRTC and the driver, for the build and every module (it imports nothing of rbdgen)
    ("rbdgen.errors", "rbdgen.version", "rbdgen.spatial", "rbdgen.bindings.contact", "rbdgen.bindings.cuda"),
    ("rbdgen.model.*",),
    ("rbdgen.algorithms.*",),
    ("rbdgen.table.*",),
    ("rbdgen.runtime.*",),
    ("rbdgen.codegen.*",),
    ("rbdgen.bindings.*",),
    ("rbdgen", "rbdgen.bench", "rbdgen.dask", "rbdgen.optimal_control", "rbdgen.examples", "rbdgen.symbolic"),
    ("rbdgen.cli",),
]

# The files of bindings/ are copied into every generated package, where they import their
# siblings as _contact, _jax, ...: those are not modules of rbdgen.
OUTSIDE = {f"rbdgen.bindings._{name}" for name in ("arguments", "call_time", "casadi", "contact", "conventions", "cuda", "description", "device", "torch", "torch_overloads", "function", "jax",
                                                        "jax_ffi", "physical", "pickling")}

# Imports that run up a layer, "importer -> imported": reason. None is left: the function table
# (rbdgen/table) sits below codegen and runtime, and the base parameters are found in the algorithms.
KNOWN = {}


def module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules():
    """Module name -> (path, whether it is a package's __init__)."""
    return {module_name(p): (p, p.name == "__init__.py") for p in sorted(ROOT.rglob("*.py"))}


def layer_of(module):
    for k, names in enumerate(LAYERS):
        for name in names:
            if name.endswith(".*"):
                package = name[:-2]
                if module == package or module.startswith(package + "."):
                    return k
            elif module == name:
                return k
    return None


def imported(module, path, is_package, known_modules):
    """The modules of rbdgen that `module` imports, each with the line of the import; an
    import of a name from a package (`from ..model import Model`) is one of the package."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known_modules
                       or f"{source}.{alias.name}" in OUTSIDE else source for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "rbdgen" or target.startswith("rbdgen."):
                found.append((target, node.lineno))
    return found


def import_graph():
    """{(importer, imported)}: the imports between modules of rbdgen, and the problems met
    while reading them (an import of no module, a module in no layer)."""
    known_modules = modules()
    edges, problems = set(), []
    for module, (path, is_package) in known_modules.items():
        if layer_of(module) is None:
            problems.append(f"{module} ({path}) is in no layer: add it to LAYERS")
        for target, line in imported(module, path, is_package, known_modules):
            if target in OUTSIDE or target == module:
                continue
            if target not in known_modules:
                problems.append(f"{path}:{line}: {module} imports {target}, which is no module of rbdgen")
                continue
            edges.add((module, target))
    return edges, problems


def describe(edge):
    a, b = edge
    return f"{a} -> {b} (layer {layer_of(a)} -> layer {layer_of(b)})"


def reachable(graph, start):
    seen, stack = set(), [start]
    while stack:
        for nxt in graph.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


@pytest.fixture(scope="module")
def graph():
    edges, problems = import_graph()
    assert not problems, "\n".join(problems)
    return edges


def test_imports_run_down_the_layers(graph):
    upward = sorted(e for e in graph if layer_of(e[1]) > layer_of(e[0]) and f"{e[0]} -> {e[1]}" not in KNOWN)
    assert not upward, "imports up a layer:\n" + "\n".join(describe(e) for e in upward)


def test_known_imports_still_occur(graph):
    gone = sorted(k for k in KNOWN if tuple(k.split(" -> ")) not in graph)
    assert not gone, "no longer imported, remove from KNOWN:\n" + "\n".join(gone)


def test_no_circles(graph):
    """No module reaches itself through the imports (KNOWN's left out: they are reported
    above, and they will go)."""
    adjacency = {}
    for a, b in graph:
        if f"{a} -> {b}" not in KNOWN:
            adjacency.setdefault(a, set()).add(b)
    closing = sorted((a, b) for a, targets in adjacency.items() for b in targets if a in reachable(adjacency, b))
    assert not closing, "imports on a circle:\n" + "\n".join(describe(e) for e in closing)


def test_the_reading_sees_every_kind_of_import(tmp_path):
    """Relative and absolute, at module level and in a function, a name from a package and a
    module from a package: each is read as the module it reaches."""
    package = tmp_path / "rbdgen" / "algorithms"
    package.mkdir(parents=True)
    source = package / "example.py"
    source.write_text("import rbdgen.spatial\nfrom ..model import Model\nfrom . import rnea\n"
                      "def f():\n    from ..codegen.expr import Expr\n    import numpy\n", encoding="utf-8")
    known = {"rbdgen.model": None, "rbdgen.algorithms.rnea": None, "rbdgen.codegen.expr": None, "rbdgen.spatial": None}
    found = imported("rbdgen.algorithms.example", source, False, known)
    assert sorted(t for t, _ in found) == ["rbdgen.algorithms.rnea", "rbdgen.codegen.expr", "rbdgen.model",
                                           "rbdgen.spatial"]
    assert layer_of("rbdgen.codegen.expr") == 5 and layer_of("rbdgen") == 7 and layer_of("rbdgen.model") == 1
    assert describe(("rbdgen.algorithms.example", "rbdgen.codegen.expr")) == \
        "rbdgen.algorithms.example -> rbdgen.codegen.expr (layer 2 -> layer 5)"
