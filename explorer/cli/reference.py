"""docs/cli.md, the command reference: every command's ``--help`` at a fixed width, so the page is
the same on every terminal. ``python -m explorer.cli.reference > docs/cli.md`` regenerates it;
tests/explorer/cli/test_cli_commands.py compares."""
from __future__ import annotations

import click

from . import main

WIDTH = 100  # columns of the help texts in the page


def cli_reference() -> str:
    """The text of docs/cli.md: ``explorer --help``, then each command's ``--help`` by name."""
    parts = ["# Command reference", "",
             "Generated from `explorer --help` and each command's `--help` by "
             "`python -m explorer.cli.reference > docs/cli.md`; a test keeps it current.", ""]
    root = click.Context(main, info_name="explorer", terminal_width=WIDTH, max_content_width=WIDTH)
    parts += ["## explorer", "", "```", main.get_help(root), "```", ""]
    for name in sorted(main.commands):
        command = main.commands[name]
        ctx = click.Context(command, parent=root, info_name=name, terminal_width=WIDTH, max_content_width=WIDTH)
        parts += [f"## explorer {name}", "", "```", command.get_help(ctx), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    print(cli_reference(), end="")
