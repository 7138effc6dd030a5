"""The `explorer` command line: thin commands that parse options and call the library.

Errors a user can cause (a bad spec, a bad store, bad SQL) print one line and exit non-zero;
the traceback appears only with `explorer --debug ...`.
"""
from __future__ import annotations

import sys

import click

from .errors import UsageError


class _CleanErrors(click.Group):
    """Turns package errors into one clean line (exit code from the error) unless --debug."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            if ctx.meta.get("explorer.debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=_CleanErrors)
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Explore hyperparameter scaling laws of deep ResNets against their Mean ODE limit."""
    ctx.meta["explorer.debug"] = debug


if __name__ == "__main__":  # pragma: no cover
    main()
