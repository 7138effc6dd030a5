"""Every command of `explorer` (read from the click group, so a new command is covered without
editing this file) has help text, answers --help, and is documented in README.md."""
from __future__ import annotations

import pathlib

import pytest
from click.testing import CliRunner

from explorer.cli import main

README = (pathlib.Path(__file__).parents[2] / "README.md").read_text()
COMMANDS = sorted(main.commands)


def test_the_registry_is_not_empty():
    assert {"sweep", "status", "sql", "check", "compact"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help_text(name):
    command = main.commands[name]
    assert command.help and command.help.strip(), f"explorer {name} has no help text"
    for param in command.params:
        if param.param_type_name == "option" and not getattr(param, "hidden", False):
            assert param.help, f"explorer {name} {param.opts[0]} has no help text"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_answers_help(name):
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: main {name}") or f" {name} " in result.output.splitlines()[0]
    if any("--store" in p.opts for p in main.commands[name].params):
        assert "--store URI" in result.output


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_is_in_the_readme(name):
    assert f"explorer {name}" in README, f"README.md does not mention `explorer {name}`"
