"""explorer uses only public faces: what store and trials export in ``__all__``, and no private
module or name of any library (read from the source, so a new import is checked too).

And the house rules of the code, read from the source (absolute and relative imports, lazy ones
inside functions included; those under ``if TYPE_CHECKING:`` never run and are not counted), so
that a new import or a grown function is checked too:

- ``trials`` and ``store`` import nothing of ours (and not each other);
- Ray is imported only under ``explorer/sweeps/``, click only under ``explorer/cli/``;
- ``explorer.analysis`` imports neither ``sweeps`` nor ``report`` (report may import analysis);
- no import cycle among the explorer's modules, nor among its subpackages, nor among the wings
  and modules of one subpackage (``explorer.analysis.fitting`` and ``explorer.analysis.shapes``);
- a wing (a package two levels under ``explorer/``, such as ``explorer/analysis/fitting/``) has a
  lazy face, its ``__init__``: code outside the wing imports the names the face exports, never a
  module inside it (tests may unit-test a wing's modules); ``explorer/analysis/`` holds at most
  ``MAX_ANALYSIS_CHILDREN`` wings and modules;
- no private ``_name`` is imported from another module, tests and benchmarks included;
- no module over 500 lines, no function over 80 lines (from its ``def`` to its last line).
"""
from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

from tests import import_graph
from tests.import_graph import find_cycle
from tests.paths import REPO_ROOT

EXPLORER = REPO_ROOT / "explorer"
SOURCES = sorted(EXPLORER.rglob("*.py"))


def absolute_imports(path: pathlib.Path):
    """(module, name) for every absolute import in a file (name None for ``import module``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None


def test_the_checks_see_the_imports():
    found = {pair for path in EXPLORER.rglob("*.py") for pair in absolute_imports(path)}
    assert ("store", "Store") in found and ("trials", "TrialConfig") in found and ("ray", None) in found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(EXPLORER)))
def test_explorer_imports_of_store_and_trials_are_their_exports(path):
    for module, name in absolute_imports(path):
        top = module.split(".")[0]
        if top in ("store", "trials"):
            assert module == top, f"{path.name} imports {module}: import from {top} itself"
            assert name in importlib.import_module(top).__all__, f"{path.name} imports {top}.{name}, not exported"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(EXPLORER)))
def test_explorer_imports_no_private_module_or_name(path):
    for module, name in absolute_imports(path):
        private = [part for part in (*module.split("."), name or "") if part.startswith("_")]
        assert not private, f"{path.name} imports the private {module}{'.' + name if name else ''}"


@pytest.mark.slow
def test_explorer_fit_does_not_import_altair():
    code = ("import sys\nfrom click.testing import CliRunner\nfrom explorer.cli import main\n"
            "CliRunner().invoke(main, ['fit', '--sweep', 'none', '--store', sys.argv[1]])\n"
            "print('altair' in sys.modules, 'ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, "/nonexistent-store"], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == ["False", "False"], done.stderr[-2000:]


# --- the house rules ---------------------------------------------------------------------------

ROOT = REPO_ROOT
PACKAGES = ("explorer", "store", "trials")
OURS = (*PACKAGES, "tests", "benchmarks")
CODE = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))
EVERYTHING = CODE + sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "benchmarks").rglob("*.py"))
# Size follows concept: a module is split when it holds two concepts, not when it nears a number;
# past REASONED_MODULE_LINES its docstring says in one line why it is still one ("Size: ...").
MAX_MODULE_LINES = 800
REASONED_MODULE_LINES = 500
MAX_FUNCTION_LINES = 100


def module_name(path: pathlib.Path) -> str:
    return import_graph.module_name(path, ROOT)


def imports(path: pathlib.Path) -> list[import_graph.Import]:
    """(module, name or None, line) for every import of a file that runs (those under
    ``if TYPE_CHECKING:`` never do)."""
    return import_graph.imports(path, ROOT, type_checking=False)


def where(path: pathlib.Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def face_table(package: str) -> dict[str, str]:
    """A lazy face's name -> the module of its package that defines it, {} for a package without one."""
    return import_graph.lazy_table(package, ROOT)


def explorer_graph() -> dict[str, set[str]]:
    """explorer module -> the explorer modules it imports (a package's ``__init__`` is not an edge:
    importing ``explorer.sweeps.worker.training`` runs it, but it imports nothing; a name imported from a
    lazy face is an edge to the module that defines it)."""
    return import_graph.import_graph(ROOT, "explorer", type_checking=False, packages=False)


def test_the_checks_see_absolute_relative_and_lazy_imports():
    found = {(m, n) for path in CODE for m, n, _ in imports(path)}
    assert ("store", "Store") in found and ("trials", "TrialConfig") in found  # absolute
    assert ("explorer.errors", "UsageError") in found  # relative, from cli.py
    assert ("explorer.config.estimate", None) in found  # "from ..config import estimate", lazily in reproduce/run.py
    assert ("ray", None) in found


@pytest.mark.parametrize("package", ["trials", "store"])
def test_trials_and_store_import_nothing_of_ours(package):
    other = {"trials": "store", "store": "trials"}[package]
    bad = [f"{where(p, line)} imports {m}" for p in (ROOT / package).rglob("*.py") for m, _, line in imports(p)
           if m.split(".")[0] in ("explorer", other)]
    assert not bad, bad


def test_ray_is_imported_only_by_the_sweeps_package():
    bad = [f"{where(p, line)} imports {m}" for p in CODE for m, _, line in imports(p)
           if m.split(".")[0] == "ray" and not module_name(p).startswith("explorer.sweeps.")]
    assert not bad, bad


def test_click_is_imported_only_by_the_cli():
    bad = [f"{where(p, line)} imports {m}" for p in CODE for m, _, line in imports(p)
           if m.split(".")[0] == "click" and ROOT / "explorer" / "cli" not in p.parents]
    assert not bad, bad


def test_analysis_imports_neither_the_sweeps_nor_the_report():
    bad = [f"{where(p, line)} imports {m}" for p in (ROOT / "explorer" / "analysis").rglob("*.py")
           for m, _, line in imports(p)
           if m.startswith(("explorer.sweeps", "explorer.report", "explorer.reproduce", "explorer.cli",
                            "explorer.api", "explorer.config")) or m.split(".")[0] == "ray"]
    assert not bad, bad


def test_no_import_cycle_among_the_explorer_modules():
    assert find_cycle(explorer_graph()) is None, " -> ".join(find_cycle(explorer_graph()))


def test_no_import_cycle_among_the_explorer_subpackages():
    cycle = find_cycle(import_graph.rooms(explorer_graph()))
    assert cycle is None, " -> ".join(cycle)


def room_within(module: str, package: str) -> str:
    """The room of ``package`` a module belongs to: its wing (explorer.analysis.fitting) or itself
    (explorer.analysis.shapes)."""
    return ".".join(module.split(".")[:len(package.split(".")) + 1])


@pytest.mark.parametrize("package", sorted(module_name(p.parent) for p in EXPLORER.glob("*/__init__.py")))
def test_no_import_cycle_among_the_wings_and_modules_of_a_subpackage(package):
    rooms: dict[str, set[str]] = {}
    for module, targets in explorer_graph().items():
        if not module.startswith(package + "."):
            continue
        room = room_within(module, package)
        rooms.setdefault(room, set()).update(room_within(t, package) for t in targets
                                             if t.startswith(package + ".") and room_within(t, package) != room)
    cycle = find_cycle(rooms)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def private_uses(path: pathlib.Path):
    """(what, line) for each private name of another of our modules this file imports or reads
    as ``module._name``."""
    aliases: dict[str, str] = {}
    for module, name, line in imports(path):
        if module.split(".")[0] not in OURS:
            continue
        if name is not None and name.startswith("_") and not name.startswith("__"):
            yield f"{module}.{name}", line
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) or isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                aliases[bound] = alias.name
    ours = [m for m, n, _ in imports(path) if n is None and m.split(".")[0] in OURS]
    modules = {bound for bound, full in aliases.items() if any(m.endswith(full) for m in ours)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            yield f"{node.value.id}.{node.attr}", node.lineno


def test_no_private_name_crosses_modules():
    bad = [f"{where(p, line)} uses {what}" for p in EVERYTHING for what, line in private_uses(p)]
    assert not bad, bad


def size_reason(path: pathlib.Path) -> str | None:
    """The docstring's line that says why a long module is one concept (``Size: ...``), or None."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return next((line for line in doc.splitlines() if line.startswith("Size: ") and len(line) > 12), None)


def test_no_module_is_longer_than_the_limit():
    long = {str(p.relative_to(ROOT)): n for p in CODE if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, long


def test_a_long_module_says_why_it_is_one_concept():
    unsaid = [str(p.relative_to(ROOT)) for p in CODE
              if len(p.read_text().splitlines()) > REASONED_MODULE_LINES and size_reason(p) is None]
    assert not unsaid, f"over {REASONED_MODULE_LINES} lines without a 'Size: ...' line in the docstring: {unsaid}"


def test_the_size_reason_is_read_from_the_docstring_only(tmp_path):
    said = tmp_path / "said.py"
    said.write_text('"""A module.\n\nSize: the twin of every command, one function each."""\nx = 1\n')
    unsaid = tmp_path / "unsaid.py"
    unsaid.write_text('"""A module."""\n# Size: a comment is not the docstring\nx = 1\n')
    assert size_reason(said) == "Size: the twin of every command, one function each."
    assert size_reason(unsaid) is None


def test_no_function_is_longer_than_the_limit():
    long = {}
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = n
    assert not long, long


# --- wings and their faces -----------------------------------------------------------------------

WINGS = sorted(module_name(p) for p in EXPLORER.glob("*/*/__init__.py"))
MAX_ANALYSIS_CHILDREN = 8  # wings and modules directly under explorer/analysis/ (its __init__ not counted)


def wing_of(module: str) -> str | None:
    """The wing a module lies in: ``explorer.X.Y`` when ``explorer/X/Y/`` is a package, else None."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[0] == "explorer" and (ROOT.joinpath(*parts[:3]) / "__init__.py").is_file():
        return ".".join(parts[:3])
    return None


def face_source(wing: str) -> ast.Module:
    return ast.parse((ROOT.joinpath(*wing.split(".")) / "__init__.py").read_text())


def test_the_wings_are_found_and_told_apart_from_modules():
    assert {"explorer.analysis.data"} <= set(WINGS)
    assert wing_of("explorer.analysis.data.queries") == "explorer.analysis.data"
    assert wing_of("explorer.analysis.data") == "explorer.analysis.data"
    assert wing_of("explorer.analysis.phase") is None and wing_of("explorer.cli") is None


def test_code_outside_a_wing_imports_only_its_face():
    bad = []
    for path in CODE:
        me = module_name(path)
        for module, _, line in imports(path):
            wing = wing_of(module)
            if wing is not None and module != wing and wing_of(me) != wing:
                bad.append(f"{where(path, line)} imports {module}: import its names from {wing}")
    assert not bad, bad


@pytest.mark.parametrize("wing", WINGS)
def test_a_wing_has_a_lazy_face(wing):
    tree = face_source(wing)
    bound = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    bound |= {target.id for node in tree.body if isinstance(node, ast.Assign) for each in node.targets
              for target in (each.elts if isinstance(each, ast.Tuple) else [each]) if isinstance(target, ast.Name)}
    assert ast.get_docstring(tree), f"{wing}: its __init__ says what the wing holds"
    assert face_table(wing) and "__getattr__" in bound, f"{wing}: a _LAZY table served by __getattr__ (PEP 562)"
    package = importlib.import_module(wing)
    assert sorted(package.__all__) == sorted(face_table(wing)), f"{wing}: __all__ lists the face's names"
    for name, module in face_table(wing).items():
        assert (ROOT.joinpath(*module.split(".")).with_suffix(".py")).is_file(), f"{wing}.{name}: no module {module}"
        assert getattr(package, name) is getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("wing", WINGS)
def test_no_name_of_a_face_is_also_a_module_of_its_wing(wing):
    # importing the module would set the package's attribute to it, hiding the name the face serves
    modules = {p.stem for p in ROOT.joinpath(*wing.split(".")).glob("*.py")}
    assert not modules & set(face_table(wing)), sorted(modules & set(face_table(wing)))


def test_importing_a_face_imports_none_of_its_modules():
    code = ("import sys\n" + "".join(f"import {wing}\n" for wing in WINGS)
            + f"print(sorted(m for m in sys.modules if any(m.startswith(w + '.') for w in {WINGS!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout


def test_analysis_has_few_direct_children():
    children = [p.name for p in (EXPLORER / "analysis").iterdir()
                if p.name != "__init__.py" and (p.suffix == ".py" or (p / "__init__.py").is_file())]
    assert len(children) <= MAX_ANALYSIS_CHILDREN, sorted(children)
