"""The shape rbdgen's code keeps (docs/architecture.md): short files, functions that take at most
six arguments by position (the rest by keyword or as one value), templates that lay text out
without computing it, no code made from text at run time, and consumers that read a function's
description rather than test the names of its inputs and parts."""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent / "rbdgen"
MOST_LINES = 450
MOST_POSITIONAL = 6


def sources(*patterns):
    return sorted(p for pattern in patterns for p in ROOT.rglob(pattern))


def test_no_file_is_over_450_lines():
    long = [f"{p.relative_to(ROOT)}: {n}" for p in sources("*.py", "*.j2", "*.c", "*.h")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MOST_LINES]
    assert not long, long


def test_no_function_takes_more_than_six_arguments_by_position():
    found = []
    for path in sources("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [a.arg for a in node.args.posonlyargs + node.args.args]
                count = len(names) - (names[:1] in (["self"], ["cls"]))
                if count > MOST_POSITIONAL:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({count})")
    assert not found, found


def test_templates_compute_nothing_and_nothing_is_exec_d():
    filters = [f"{p.name}: {m.group(0)}" for p in sources("*.j2")
               for m in re.finditer(r"\|\s*replace\(", p.read_text(encoding="utf-8"))]
    assert not filters, filters
    made = [str(p.relative_to(ROOT)) for p in sources("*.py") if re.search(r"\bexec\(", p.read_text(encoding="utf-8"))]
    assert not made, made


def test_consumers_read_roles_not_names_of_parts_and_placements():
    """The pivots part and the frame's placement are known by their roles
    (table.description); only the function table names them."""
    found = []
    for path in sources("*.py", "*.j2"):
        if path.parent.name == "table":
            continue
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"""==\s*["']pivots["']|["']pivots["']\s*[=!]=|==\s*["']placement["']|["']placement["']\s*[=!]=""",
                         line):
                found.append(f"{path.relative_to(ROOT)}:{k}")
    assert not found, found
