"""Signal handling is one wing, ``explorer/signals/``, reached through its face (issue 44, item 5):
the start-up hold (``hold``), how a command ends on a signal (``handlers``) and a sweep driver's
record of one (``interrupts``) used to be three modules in three folders (``explorer/signal_hold.py``,
``explorer/cli/signals.py``, ``explorer/sweeps/interrupts.py``), and the long commands named the
modules to import first as strings, around the faces. Read from the source with the shared graph
builder (``tests/import_graph.py``), so a new import is checked too.
"""
from __future__ import annotations

import ast
import re
import threading

from explorer.signals import HOLD, import_held

from tests import import_graph
from tests.paths import REPO_ROOT

WING = "explorer.signals"
WING_DIR = REPO_ROOT / "explorer" / "signals"
OLD_MODULES = ("explorer/signal_hold.py", "explorer/cli/signals.py", "explorer/sweeps/interrupts.py")
# the old modules' names, dotted or as paths, as an import, a monkeypatch target or a docs page would write them
OLD_NAMES = re.compile(r"explorer[./](signal_hold|cli[./]signals|sweeps[./]interrupts)\b")
# a module of the wing named past its face, as a string: a monkeypatch target, an importlib name
BEHIND_THE_FACE = re.compile(r"explorer[./]signals[./](hold|handlers|interrupts)\b")
PYTHON = sorted(p for top in ("explorer", "tests", "benchmarks") for p in (REPO_ROOT / top).rglob("*.py"))
TEXT = PYTHON + sorted((REPO_ROOT / "docs").rglob("*.md")) + [REPO_ROOT / "README.md"]
LOADING = ("begin_work", "import_held")  # what imports a command's modules while the signals are held


def where(path, line: int) -> str:
    return f"{path.relative_to(REPO_ROOT)}:{line}"


def outside_the_wing(path) -> bool:
    return WING_DIR not in path.parents


def test_the_old_modules_are_gone():
    assert not [m for m in OLD_MODULES if (REPO_ROOT / m).exists()]


def test_the_wing_has_a_lazy_face_that_serves_each_concept():
    assert WING in import_graph.lazy_faces(REPO_ROOT)
    table = import_graph.lazy_table(WING, REPO_ROOT)
    assert {table[n] for n in ("begin_work", "OneLineSignals", "SignalGuard")} == {
        f"{WING}.hold", f"{WING}.handlers", f"{WING}.interrupts"}


def test_no_module_outside_the_wing_imports_one_of_its_modules():
    bad = [f"{where(path, i.line)} imports {i.module}: import its names from {WING}"
           for path in PYTHON if outside_the_wing(path)
           for i in import_graph.imports(path, REPO_ROOT) if i.module.startswith(WING + ".")]
    assert not bad, bad


def code_strings(path):
    """(line, text) of each string literal of a Python file that is not a docstring (a docstring
    may point a reader at a file; a monkeypatch target or an importlib name is code)."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_no_string_in_code_names_a_module_of_the_wing():
    bad = [f"{where(path, line)}: {text.strip()[:80]!r}" for path in PYTHON if outside_the_wing(path)
           for line, text in code_strings(path) if BEHIND_THE_FACE.search(text)]
    assert not bad, bad


def test_nothing_names_the_old_modules():
    me = REPO_ROOT / "tests" / "explorer" / "signals" / "test_signals_wing.py"
    bad = [f"{where(path, n)}: {line.strip()[:100]}" for path in TEXT if path != me
           for n, line in enumerate(path.read_text().splitlines(), 1) if OLD_NAMES.search(line)]
    assert not bad, bad


def test_no_command_names_its_modules_as_strings():
    bad = []
    for path in PYTHON:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in LOADING:
                named = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if named:
                    bad.append(f"{where(path, node.lineno)} passes {named}: give a function that imports them "
                               "through the faces")
    assert not bad, bad


def test_import_held_runs_the_loaders_in_a_helper_thread_while_holding(monkeypatch):
    ran = []
    monkeypatch.setattr(HOLD, "holding", True)  # as in the explorer process before its work begins
    import_held(lambda: ran.append(threading.current_thread().name), lambda: ran.append("second"))
    assert ran == ["explorer-imports", "second"]
    monkeypatch.setattr(HOLD, "holding", False)  # outside the explorer process nothing is held: nothing runs
    import_held(lambda: ran.append("not run"))
    assert ran == ["explorer-imports", "second"]
