"""explorer uses only public faces: what store and trials export in ``__all__``, and no private
module or name of any library (read from the source, so a new import is checked too).

And the house rules of the code, read from the source (absolute and relative imports, lazy ones
inside functions included; those under ``if TYPE_CHECKING:`` never run and are not counted), so
that a new import or a grown function is checked too:

- ``trials`` and ``store`` import nothing of ours (and not each other);
- Ray is imported only under ``explorer/sweeps/``, click only under ``explorer/cli/``;
- ``explorer.analysis`` imports neither ``sweeps`` nor ``report`` (report may import analysis);
- no import cycle among the explorer's modules, nor among its subpackages;
- no private ``_name`` is imported from another module, tests and benchmarks included;
- no module over 500 lines, no function over 80 lines (from its ``def`` to its last line).
"""
from __future__ import annotations

import ast
import functools
import importlib
import pathlib
import subprocess
import sys

import pytest

EXPLORER = pathlib.Path(__file__).parents[2] / "explorer"
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

ROOT = pathlib.Path(__file__).parents[2]
PACKAGES = ("explorer", "store", "trials")
OURS = (*PACKAGES, "tests", "benchmarks")
CODE = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))
EVERYTHING = CODE + sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "benchmarks").rglob("*.py"))
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    base = ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports(path: pathlib.Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None, line) for every import of a file, relative ones resolved; a
    ``from package import module`` names the module itself (name None)."""
    return list(_imports(path, path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=None)
def _imports(path: pathlib.Path, mtime: int) -> tuple:
    return tuple(_read_imports(path))


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:`` (they never run)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            skipped |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    return skipped


def _read_imports(path: pathlib.Path):
    tree = ast.parse(path.read_text())
    skipped = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            module = node.module or ""
            if node.level:
                package = module_name(path).split(".")
                if path.name != "__init__.py":
                    package = package[:-1]
                module = ".".join(package[:len(package) - node.level + 1] + ([module] if module else []))
            for alias in node.names:
                if is_module(f"{module}.{alias.name}"):
                    yield f"{module}.{alias.name}", None, node.lineno
                else:
                    yield module, alias.name, node.lineno


def where(path: pathlib.Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def explorer_graph() -> dict[str, set[str]]:
    """explorer module -> the explorer modules it imports (a package's ``__init__`` is not an edge:
    importing ``explorer.sweeps.worker`` runs it, but it imports nothing)."""
    graph: dict[str, set[str]] = {}
    for path in CODE:
        name = module_name(path)
        if name.startswith("explorer"):
            graph[name] = {m for m, _, _ in imports(path)
                           if m.startswith("explorer.") and m != name and (ROOT / (m.replace(".", "/") + ".py")).is_file()}
    return graph


def part_of(module: str) -> str:
    """The room a module belongs to: its subpackage (explorer.sweeps) or itself (explorer.cli)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_checks_see_absolute_relative_and_lazy_imports():
    found = {(m, n) for path in CODE for m, n, _ in imports(path)}
    assert ("store", "Store") in found and ("trials", "TrialConfig") in found  # absolute
    assert ("explorer.errors", "UsageError") in found  # relative, from cli.py
    assert ("explorer.analysis.fit", None) in found  # "from .analysis import fit", lazily in cli.py
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
    rooms: dict[str, set[str]] = {}
    for module, targets in explorer_graph().items():
        rooms.setdefault(part_of(module), set()).update(part_of(t) for t in targets if part_of(t) != part_of(module))
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


def test_no_module_is_longer_than_the_limit():
    long = {str(p.relative_to(ROOT)): n for p in CODE if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, long


def test_no_function_is_longer_than_the_limit():
    long = {}
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = n
    assert not long, long
