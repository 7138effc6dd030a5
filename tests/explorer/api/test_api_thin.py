"""``explorer.api`` is a table of twins: a package with a module per command group, as
``explorer.cli`` has, whose functions call a wing and return its result, each in a few lines
(read from the files, so a new twin is covered)."""
from __future__ import annotations

import ast
import pathlib

import pytest

import explorer.api

API = pathlib.Path(explorer.api.__file__).parent
CLI = API.parent / "cli"
MODULES = sorted(API.glob("*.py"))
MAX_TWIN_LINES = 25  # a twin's lines, its docstring not counted
SHARED = {"__init__", "echo"}  # the package's face and the echo type the twins share, no command group


def docstring_lines(function: ast.FunctionDef) -> int:
    first = function.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first.end_lineno - first.lineno + 1
    return 0


def twin_lines(function: ast.FunctionDef) -> int:
    """The function's lines, from ``def`` to its end, less its docstring's."""
    return function.end_lineno - function.lineno + 1 - docstring_lines(function)


def functions(path: pathlib.Path) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_the_api_is_a_package_with_a_module_per_command_group():
    assert (API / "__init__.py").is_file()
    groups = {p.stem for p in MODULES} - SHARED
    assert groups <= {p.stem for p in CLI.glob("*.py")}, sorted(groups - {p.stem for p in CLI.glob("*.py")})
    assert {"sweep", "store", "analysis", "compare", "hyper", "watch", "reproduce"} <= groups


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_twin_exceeds_the_limit(path):
    long = {f.name: twin_lines(f) for f in functions(path) if twin_lines(f) > MAX_TWIN_LINES}
    assert not long, f"{path.name}: {long}"


def test_every_public_name_of_the_api_is_a_twin_not_a_module():
    # a module and a twin share a name (sweep, compare, ...): the package's name is the twin
    import types

    modules = {name for name in explorer.api.__all__ if isinstance(getattr(explorer.api, name), types.ModuleType)}
    assert not modules, sorted(modules)


def test_the_count_leaves_the_docstring_out():
    function = ast.parse('def f(x):\n    """Doc\n    string."""\n    a = 1\n    return a\n').body[0]
    assert twin_lines(function) == 3
    assert twin_lines(ast.parse("def g():\n    return 1\n").body[0]) == 2
