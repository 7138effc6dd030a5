"""Every file and module the docs name exists: a doc that points a reader at
``explorer/config/estimate.py`` or ``explorer.analysis.fit`` points at something the repository
has, not at where it lived when the doc was written.

Two kinds of names are checked in README.md, CHANGELOG.md and docs/*.md:

- paths ``explorer/...py``, ``trials/...py``, ``store/...py``, ``benchmarks/...py`` (optionally under
  ``tests/``), and in docs/architecture.md's table the paths relative to ``explorer/``;
- dotted names ``explorer.a.b``: the longest prefix that is a module or package must exist, and
  the next part, if any, must be a name that module defines or imports (``explorer.sweep`` is the
  package's ``sweep``). Names are read from the source, so nothing is imported.
"""
from __future__ import annotations

import ast
import functools
import pathlib
import re

import pytest

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
PATH = re.compile(r"(?<![\w/.-])((?:tests/)?(?:explorer|trials|store|benchmarks)/[\w/.-]*?\.py)\b")
DOTTED = re.compile(r"(?<![\w./-])explorer(?:\.[A-Za-z_]\w*)+")
# In architecture.md's table, a backticked path such as `sweeps/run/runner.py` is under explorer/.
TABLE_PATH = re.compile(r"^\|[^|]*", re.MULTILINE)
BACKTICKED_PY = re.compile(r"`([\w/]+\.py)`")
FILE_SUFFIXES = {"py", "toml", "md", "txt", "json", "html", "log", "parquet"}


def module_file(dotted: str) -> pathlib.Path | None:
    """The source file of a module or package named ``a.b.c``, or None when there is none."""
    base = ROOT.joinpath(*dotted.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


@functools.cache
def defined_names(path: pathlib.Path) -> frozenset[str]:
    """The names a module binds: functions, classes, assignments, imports, and the names of a
    lazy-export table that ``__getattr__`` serves."""
    names: set[str] = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
            names.update(lazy_exports(node.value))
    return frozenset(names)


def lazy_exports(value: ast.expr | None) -> set[str]:
    """The names a lazy-export table (``{"sweep": "api", ...}``) or ``__all__`` list holds."""
    if isinstance(value, ast.Dict):
        items = value.keys
    elif isinstance(value, (ast.List, ast.Tuple)):
        items = value.elts
    else:
        return set()
    return {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}


def dotted_problem(name: str) -> str | None:
    """Why a dotted ``explorer.x.y`` name does not resolve, or None when it does."""
    parts = name.split(".")
    if parts[-1] in FILE_SUFFIXES:  # a file name such as explorer.toml, not a module
        return None
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]))
        if path is None:
            continue
        if cut == len(parts):
            return None
        subpackage = path.name == "__init__.py" and (path.parent / parts[cut]).is_dir()
        if parts[cut] in defined_names(path) or subpackage:
            return None
        return f"{name}: {'.'.join(parts[:cut])} has no {parts[cut]}"
    return f"{name}: no such module"


def named_paths(doc: pathlib.Path) -> set[str]:
    text = doc.read_text()
    paths = set(PATH.findall(text))
    if doc.name == "architecture.md":
        for cell in TABLE_PATH.findall(text):
            paths.update(p if p.startswith(("explorer/", "trials/", "store/")) else f"explorer/{p}"
                         for p in BACKTICKED_PY.findall(cell))
    return paths


def path_exists(path: str) -> bool:
    return (ROOT / path).is_file() or (ROOT / "tests" / path).is_file()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_a_doc_names_exists(doc):
    missing = sorted(p for p in named_paths(doc) if not path_exists(p))
    assert not missing, f"{doc.name} names missing files: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_module_a_doc_names_exists(doc):
    wrong = sorted({why for name in DOTTED.findall(doc.read_text()) if (why := dotted_problem(name))})
    assert not wrong, f"{doc.name} names: {wrong}"


def test_the_checks_catch_a_moved_module_and_accept_real_ones():
    assert PATH.findall("see tests/explorer/test_fit.py and `explorer/report/page.py`.") == [
        "tests/explorer/test_fit.py", "explorer/report/page.py"]
    assert path_exists("explorer/report/page.py") and not path_exists("explorer/report.py")
    assert dotted_problem("explorer.analysis.fitting") is None
    assert dotted_problem("explorer.sweep") is None  # the package's API function
    assert dotted_problem("explorer.analysis.data.seed_grams") is None
    assert dotted_problem("explorer.analysis.fit") is not None  # the module moved to explorer.analysis.fitting
    assert dotted_problem("explorer.analysis.data.no_such_function") is not None
    assert DOTTED.findall("`explorer.config.spec.load_spec`, explorer.toml") == [
        "explorer.config.spec.load_spec", "explorer.toml"]
