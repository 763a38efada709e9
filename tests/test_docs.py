"""The documentation runs: every ```python block of README.md and docs/*.md, and every link.

Each Markdown file's Python blocks run in order in one namespace (a later block uses an earlier
block's names, as a reader would), in a subprocess of its own: JAX's examples start XLA's threads,
and a build after that forks rbdgen's compile workers, which the other tests must not inherit.
All files run in one working folder whose generated/panda is built once, with only the functions
the examples call, in place of the README's default build; an example that builds a module of its
own builds it there (UR5, Solo12's feet, a small MJCF), and a later file reuses it when it asks
for the same options.

A failing example points at its Markdown file and line: each block is compiled with the file's
name and its own line numbers.
"""

import json
import os
import re
import subprocess
import sys
import warnings

import pytest

import rbdgen
from helpers import robot_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                              if f.endswith(".md"))
LINKED = DOCS + ["benchmarks/README.md"]

# What the examples call on generated/panda: the README's quick start and batches, its JAX recipe,
# docs/functions.md (frames, points, call-time contacts, aba_derivatives, the base regressor),
# docs/jax.md, docs/accuracy.md. A default build has all of them.
PANDA_FUNCTIONS = ["rnea", "nle", "gravity", "crba", "aba", "minv", "eom", "frame_placement",
                   "frame_jacobian_local_world_aligned", "frame_classical_acceleration_local_world_aligned",
                   "aba_derivatives", "base_regressor"]

# The examples run the user's commands verbatim: CI runs the second one.
QUICK_START = ['pip install -e ".[test]" && rbdgen build "$(python -m rbdgen.examples panda)"',
               'pip install -e ".[test]" && python -m pytest -q']

RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for path, line, code in json.load(open(sys.argv[1], encoding="utf-8")):
    # blank lines in front, so that a traceback names the Markdown file's own line
    exec(compile("\\n" * (line - 1) + code, path, "exec"), namespace)
"""


def python_blocks(path):
    """[(first line of the code, code)] of the ```python fenced blocks of a Markdown file."""
    blocks, code, start = [], None, 0
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fence = line.strip()
            if code is None and fence == "```python":
                code, start = [], number + 1
            elif code is not None and fence == "```":
                blocks.append((start, "".join(code)))
                code = None
            elif code is not None:
                code.append(line)
    assert code is None, f"{path}: a ```python block is not closed"
    return blocks


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A folder whose generated/panda has the functions the examples call on Panda."""
    folder = tmp_path_factory.mktemp("docs")
    with warnings.catch_warnings():   # Panda's fingers: <mimic> ignored
        warnings.simplefilter("ignore")
        rbdgen.build(robot_path("panda"), out_dir=str(folder / "generated"), algorithms=PANDA_FUNCTIONS)
    return folder


@pytest.mark.parametrize("path", [p for p in DOCS if python_blocks(p)])
def test_examples_run(path, workspace):
    blocks = [(os.path.join(ROOT, path), line, code) for line, code in python_blocks(path)]
    listing = workspace / (path.replace(os.sep, "_") + ".json")
    listing.write_text(json.dumps(blocks), encoding="utf-8")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", RUNNER, str(listing)], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"an example of {path} failed:\n{done.stderr[-4000:]}"


def test_quick_start_commands_unchanged():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    for command in QUICK_START:
        assert command in lines, f"README.md no longer has the quick start's command {command!r}"


def _anchors(path):
    """The anchors GitHub gives the headings of a Markdown file."""
    anchors = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                title = line.lstrip("#").strip().lower()
                anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("path", LINKED)
def test_links_resolve(path):
    """Every relative link (and its #anchor) of a Markdown file points at something that exists."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)     # code is not links
    here = os.path.dirname(os.path.join(ROOT, path))
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue    # http(s), mailto: not checked here
        file, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(here, file)) if file else os.path.join(ROOT, path)
        if not os.path.exists(full):
            broken.append(target)
        elif anchor and full.endswith(".md") and anchor not in _anchors(full):
            broken.append(target)
    assert not broken, f"{path}: links that lead nowhere: {broken}"
