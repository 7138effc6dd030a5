"""The `explorer` command line: thin commands that parse options and call the library.

Errors a user can cause (a bad spec, a bad store, bad SQL) print one line and exit non-zero;
the traceback appears only with `explorer --debug ...`.
"""
from __future__ import annotations

import sys

import click

from .errors import UsageError
from .options import open_store, store_errors, store_option, sweep_filter_option
from .tables import FORMATS, render


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


@main.command("sql")
@click.argument("query")
@store_option
@sweep_filter_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="Output format.")
def sql_command(query: str, store_uri: str, sweep: str | None, fmt: str) -> None:
    """Run a read-only SQL QUERY over the views metrics, trials, fits and references.

    Example: explorer sql "SELECT L, M, avg(err_out) FROM metrics WHERE step = steps GROUP BY ALL ORDER BY ALL"
    """
    st = open_store(store_uri, must_exist=True)
    with store_errors():
        table = st.query(query, sweep=sweep)
    click.echo(render(table, fmt), nl=False)


@main.command("check")
@store_option
@sweep_filter_option
@click.option("--limit", default=20, show_default=True, help="Findings shown per category.")
def check_command(store_uri: str, sweep: str | None, limit: int) -> None:
    """Check the store: unreadable, foreign or temporary files, duplicate rows, missing steps.

    Exits 1 when it finds a problem, 0 when the store is clean (notes do not fail).
    """
    st = open_store(store_uri, must_exist=True)
    with store_errors():
        report = st.check(sweep)
    for line in report.lines(limit_per_category=limit):
        click.echo(line)
    if not report.ok:
        sys.exit(1)


@main.command("compact")
@store_option
@sweep_filter_option
@click.option("--rows-per-file", default=4_000_000, show_default=True, type=click.IntRange(min=1), help="Target rows per compacted file.")
def compact_command(store_uri: str, sweep: str | None, rows_per_file: int) -> None:
    """Merge small result files into large ones with exactly the same rows (checked before
    the originals are removed; safe to interrupt and rerun)."""
    st = open_store(store_uri, must_exist=True)
    with store_errors():
        for name in [sweep] if sweep else st.sweeps():
            click.echo(st.compact(name, rows_per_file=rows_per_file).summary())


if __name__ == "__main__":  # pragma: no cover
    main()
