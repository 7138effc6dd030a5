"""The commands are thin: each parses, calls its Python twin in ``explorer.api`` and prints (read
from the click group, so a new command is covered), in a body of at most 40 lines."""
from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

import explorer.api
from explorer.cli import main

MAX_BODY_LINES = 40


def body(name: str) -> ast.FunctionDef:
    source = textwrap.dedent(inspect.getsource(main.commands[name].callback))
    return next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef))


def body_lines(function: ast.FunctionDef) -> int:
    """Lines from the first statement after the docstring to the end of the function."""
    statements = function.body
    if statements and isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant):
        statements = statements[1:]
    return statements[-1].end_lineno - statements[0].lineno + 1 if statements else 0


def api_calls(function: ast.FunctionDef) -> set[str]:
    """The names called as ``api.NAME(...)`` in a function."""
    return {node.func.attr for node in ast.walk(function)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "api"}


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_command_body_is_short(name):
    assert body_lines(body(name)) <= MAX_BODY_LINES, f"explorer {name}: {body_lines(body(name))} lines"


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_command_calls_its_twin_in_the_api(name):
    called = api_calls(body(name))
    assert called, f"explorer {name} calls no explorer.api function"
    assert all(callable(getattr(explorer.api, twin, None)) for twin in called), called


def test_the_checks_measure_a_body_and_see_an_api_call():
    function = ast.parse('def f(x):\n    """Doc\n    string."""\n    a = 1\n    api.ls(x)\n').body[0]
    assert body_lines(function) == 2 and api_calls(function) == {"ls"}
