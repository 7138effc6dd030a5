"""The store's commands: ``explorer ls``, ``check``, ``compact``, ``rm`` and ``sql`` (their twins:
``explorer.api.ls``, ``check``, ``compact``, ``rm``, ``sql``)."""
from __future__ import annotations

import inspect
import sys

import click

from .options import store_option, sweep_filter_option
from ..signals import begin_work

# The store's kinds partitioned by sweep (store.DATA_KINDS; a test keeps them equal), written
# out so that `explorer --help` and a spec error do not import the store (pyarrow, duckdb).
DATA_KINDS = ("metrics", "trials", "fits", "rounds", "comparisons", "optima")
FORMATS = ("table", "csv", "json")  # explorer.report.tables.FORMATS (a test keeps them equal)


@click.command("ls")
@store_option
def ls_command(store_uri: str) -> None:
    """List the store's sweeps: trials by status, size, last write.

    The size is on disk (MiB), the last write in UTC.
    """
    from .. import api

    for line in api.ls(store_uri).lines():
        click.echo(line)


@click.command("check")
@store_option
@sweep_filter_option
@click.option("--limit", default=20, show_default=True, help="Findings shown per category.")
@click.option("--quarantine", is_flag=True,
              help="Move unreadable files to <store>/quarantine/<their path> (nothing deleted), then check again.")
@click.option("--repair", is_flag=True,
              help="Remove stale reference locks (heartbeat older than 60 s), temporaries older than an hour "
                   "and lapsed leases (never a live lock), then check again.")
def check_command(store_uri: str, sweep: str | None, limit: int, quarantine: bool, repair: bool) -> None:
    """Check the store for damaged files, stale locks and bad rows.

    Lists unreadable, foreign or temporary files, stale locks, duplicate rows and missing steps.
    Exits 1 when it finds a problem, 0 when the store is clean (notes do not fail).
    """
    from .. import api

    report = api.check(store_uri, sweep, quarantine=quarantine, repair=repair, echo=click.echo)
    for line in report.lines(limit_per_category=limit):
        click.echo(line)
    if not report.ok:
        sys.exit(1)


@click.command("compact")
@store_option
@sweep_filter_option
@click.option("--rows-per-file", default=4_000_000, show_default=True, type=click.IntRange(min=1), help="Target rows per compacted file.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(DATA_KINDS + ("references",)),
              help="Only this kind (repeatable; default all, references being the store's reference cache). "
                   "Sweeps compact their trials, metrics and references themselves when they end, within a time budget.")
def compact_command(store_uri: str, sweep: str | None, rows_per_file: int, kinds: tuple[str, ...]) -> None:
    """Merge small result files into large ones, rows unchanged.

    The merged files hold exactly the rows of the originals (checked before the originals are
    removed); safe to interrupt and rerun.
    """
    from .. import api

    api.compact(store_uri, sweep, rows_per_file=rows_per_file, kinds=kinds, echo=click.echo)


@click.command("rm")
@store_option
@click.option("--sweep", "sweep", required=True, metavar="NAME", help="The sweep to delete (all its files, nothing else).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def rm_command(store_uri: str, sweep: str, yes: bool) -> None:
    """Delete one sweep from the store; references stay.

    Every file of the sweep goes (metrics, trials, fits, rounds, comparisons, optima, leases); the
    reference cache is shared by every sweep and stays.
    """
    from .. import api

    n = api.rm(sweep, store_uri, confirm=None if yes else lambda question: click.confirm(question, abort=True))
    click.echo(f"removed sweep {sweep}: {n} file(s)")


class _SqlCommand(click.Command):
    """`explorer sql`, whose help names the views from the store's registry (``store.VIEW_NAMES``)
    where its text says ``{views}``. The store is imported only when that help is shown: importing
    it (pyarrow, DuckDB) at every start would cost a spec error or `explorer --help` a second."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from store import VIEW_NAMES

        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(inspect.cleandoc(self.help).replace("{views}", ", ".join(VIEW_NAMES)))


def _query_stack() -> tuple:
    """The store's face, the twins and the table renderer, imported where a signal still ends the
    command (``begin_work``)."""
    from store import Store

    from .. import api
    from ..report.tables import render
    return Store, api, render


@click.command("sql", cls=_SqlCommand)
@click.argument("query")
@store_option
@sweep_filter_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="Output format.")
@click.option("--timeout", "timeout_s", type=float, default=None,
              metavar="SECONDS", help="Stop the query after this many seconds (exit 2). Default: no limit.")
@click.option("--memory-limit", default=None, metavar="SIZE",
              help="DuckDB's memory limit, e.g. 8GB, 512MiB or 30% of the machine's memory. Default: 50%.")
def sql_command(query: str, store_uri: str, sweep: str | None, fmt: str, timeout_s: float | None,
                memory_limit: str | None) -> None:
    """Run a read-only SQL QUERY over the store's views.

    The views: {views}. Each is documented in docs/store.md; points has one row per grid point,
    problem draw and step, with the seeds' bias and fluctuation. Only queries run (SELECT, WITH,
    VALUES, DESCRIBE, SHOW, EXPLAIN); files that are not store data are left out, with a
    warning line on stderr. Ctrl-C stops a query at once (exit 130).

    Example: explorer sql "SELECT L, M, avg(err_out) FROM metrics WHERE step = steps GROUP BY ALL ORDER BY ALL"
    """
    import warnings

    begin_work(_query_stack)
    from store import LeftOutFilesWarning

    from .. import api

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LeftOutFilesWarning)
        table = api.sql(query, store_uri, sweep=sweep, timeout_s=timeout_s, memory_limit=memory_limit)
    for warning in caught:
        if issubclass(warning.category, LeftOutFilesWarning):
            click.echo(f"warning: {warning.message}", err=True)
    from ..report.tables import render

    click.echo(render(table, fmt), nl=False)
