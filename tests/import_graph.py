"""The import graph of our packages, read from the source and never imported: the one builder the
import-rule tests share (tests/explorer/test_imports.py, tests/explorer/test_import_circles.py,
tests/explorer/signals/test_signals_wing.py), with the one finder of the lazy faces (``lazy_faces``).

Every ``import`` and ``from ... import`` of a file counts, relative ones resolved and those inside
functions included; ``from package import module`` names the module. Those under
``if TYPE_CHECKING:`` never run: a rule about what runs leaves them out (``type_checking=False``),
a rule about what a reader walks keeps them. A name taken from a wing's lazy face (a package whose
``__init__`` serves names from a ``_LAZY`` table) reaches the module behind the face, as it does
when the name is first used.
"""
from __future__ import annotations

import ast
import functools
import pathlib
from typing import NamedTuple


class Import(NamedTuple):
    """One imported module, or one name of it (``name`` None for a module), at a line of a file."""

    module: str
    name: str | None
    line: int


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    """``explorer.cli.group`` for ``root/explorer/cli/group.py``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_path(dotted: str, root: pathlib.Path) -> pathlib.Path | None:
    """The file of a module or package ``a.b.c`` under ``root``, or None."""
    base = root.joinpath(*dotted.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def lazy_table(package: str, root: pathlib.Path) -> dict[str, str]:
    """A lazy face's name -> the module that defines it (``package.module``, from the ``_LAZY``
    dict of the package's ``__init__``), {} for a module or a package without one."""
    return dict(_lazy_table(root.joinpath(*package.split(".")) / "__init__.py", package))


@functools.lru_cache(maxsize=None)
def _lazy_table(init: pathlib.Path, package: str) -> tuple[tuple[str, str], ...]:
    if not init.is_file():
        return ()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in targets):
                return tuple((k.value, f"{package}.{v.value}") for k, v in zip(node.value.keys, node.value.values)
                             if isinstance(k, ast.Constant) and isinstance(v, ast.Constant))
    return ()


def lazy_faces(root: pathlib.Path, top: str = "explorer") -> list[str]:
    """The packages under ``top`` (not ``top`` itself) whose ``__init__`` is a lazy face: it binds
    ``__getattr__``, by a ``def`` or by ``explorer.faces.lazy_face``'s assignment."""
    found = []
    for init in sorted((root / top).rglob("__init__.py")):
        name = module_name(init, root)
        if name != top and _binds_getattr(ast.parse(init.read_text())):
            found.append(name)
    return found


def _binds_getattr(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            return True
        if isinstance(node, ast.Assign):
            for target in node.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                if any(isinstance(n, ast.Name) and n.id == "__getattr__" for n in names):
                    return True
    return False


def imports(path: pathlib.Path, root: pathlib.Path, type_checking: bool = True) -> list[Import]:
    """Every import of a file under ``root``, relative ones resolved (``type_checking``: with those
    under ``if TYPE_CHECKING:``)."""
    return list(_imports(path, root, type_checking, path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=None)
def _imports(path: pathlib.Path, root: pathlib.Path, type_checking: bool, mtime: int) -> tuple[Import, ...]:
    tree = ast.parse(path.read_text())
    skipped = set() if type_checking else _type_checking_only(tree)
    me = module_name(path, root).split(".")
    package = me if path.name == "__init__.py" else me[:-1]
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [Import(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            module = node.module or ""
            if node.level:
                module = ".".join(package[:len(package) - node.level + 1] + ([module] if module else []))
            for alias in node.names:
                if module_path(f"{module}.{alias.name}", root) is not None:
                    found.append(Import(f"{module}.{alias.name}", None, node.lineno))
                else:
                    found.append(Import(module, alias.name, node.lineno))
    return tuple(found)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (they never run)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            skipped |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    return skipped


def reached(imported: Import, root: pathlib.Path, through_faces: bool = True) -> set[str]:
    """The modules one import reaches: the module it names, and (``through_faces``) for a name a
    lazy face serves, the module behind the face."""
    behind = lazy_table(imported.module, root).get(imported.name) if imported.name and through_faces else None
    return {imported.module} | ({behind} if behind else set())


def import_graph(root: pathlib.Path, top: str = "explorer", *, type_checking: bool = True,
                 through_faces: bool = True, packages: bool = True) -> dict[str, set[str]]:
    """module -> the modules of package ``top`` it imports (not itself). ``packages=False`` leaves
    out the edges to packages: importing ``explorer.sweeps.worker.training`` runs its ``__init__``, but a
    face imports nothing, so a circle through it is no circle."""
    graph = {}
    for path in sorted((root / top).rglob("*.py")):
        name = module_name(path, root)
        targets = {m for each in imports(path, root, type_checking) for m in reached(each, root, through_faces)}
        graph[name] = {m for m in targets if m.split(".")[0] == top and m != name
                       and (found := module_path(m, root)) is not None and (packages or found.name != "__init__.py")}
    return graph


def rooms(graph: dict[str, set[str]], depth: int = 2) -> dict[str, set[str]]:
    """The graph between the folders at ``depth`` (explorer.sweeps, explorer.api, ...)."""
    def room(module: str) -> str:
        return ".".join(module.split(".")[:depth])

    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        out.setdefault(room(module), set()).update(room(t) for t in targets if room(t) != room(module))
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle as a path that ends where it starts, or None."""
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
