"""The ``explorer`` group: its ``--version`` and ``--debug``, and how every command ends.

Errors a user can cause (a bad spec, a bad store, bad SQL, a bad option) print one line and exit
non-zero; the traceback appears only with ``explorer --debug ...``. A signal is one line too
(``explorer.signals.OneLineSignals``), and the store's LeftOutFilesWarning a ``warning:`` line. The
commands are registered on ``main`` by the package (``explorer.cli``).
"""
from __future__ import annotations

import sys
import warnings

import click

from .. import __version__
from ..config.env_settings import check_environment
from ..errors import UsageError
from ..formatting import error_line
from ..signals import OneLineSignals


class _CleanErrors(OneLineSignals, click.Group):
    """Turns package errors into one clean line (exit code from the error) unless --debug; a
    signal is one line too (``OneLineSignals``)."""

    begin_work_themselves = frozenset({"sql", "sweep", "fit", "report", "reproduce"})

    def invoke(self, ctx: click.Context):
        with warnings.catch_warnings():  # restores warnings.showwarning when the command ends
            warnings.showwarning = _warning_line(warnings.showwarning)
            try:
                check_environment()  # a bad EXPLORER_* variable: one line before any work
                return super().invoke(ctx)
            except UsageError as exc:
                if ctx.meta.get("explorer.debug"):
                    raise
                for line in str(exc).splitlines() or [""]:  # a spec error has a line per mistake
                    click.echo(f"error: {error_line(_without_credentials(line))}", err=True)
                sys.exit(exc.exit_code)
            except click.UsageError as exc:  # a subcommand's bad option or argument: one line too
                if ctx.meta.get("explorer.debug") or exc.ctx is None:
                    raise
                message = error_line(" ".join(exc.format_message().split()))
                click.echo(f"error: {message} (see '{exc.ctx.command_path} --help')", err=True)
                sys.exit(exc.exit_code)


def _without_credentials(message: str) -> str:
    """``message`` with the credentials of any store URI in it redacted (``store.redact_uri``):
    a library's message (pyarrow's) may quote the URI it was given."""
    store = sys.modules.get("store")  # not imported: no store URI was opened, none is quoted
    return store.redact_uri(message) if store is not None else message


def _warning_line(show):
    """A ``warnings.showwarning`` that prints the store's LeftOutFilesWarning (the views left out
    files that are not store data; fit, phase and report read the views) as one ``warning:`` line
    on stderr, as ``explorer sql`` does, and hands every other warning to ``show``."""
    def showwarning(message, category, filename, lineno, file=None, line=None):
        store = sys.modules.get("store")  # not imported: the warning cannot be the store's
        if store is not None and issubclass(category, store.LeftOutFilesWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            show(message, category, filename, lineno, file, line)

    return showwarning


@click.group(cls=_CleanErrors)
@click.version_option(__version__, "--version", prog_name="explorer", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Explore hyperparameter scaling laws of deep ResNets against their Mean ODE limit."""
    ctx.meta["explorer.debug"] = debug
