"""`explorer sql`: one read-only query over the store's views, printed as a table, CSV or JSON."""
from __future__ import annotations

import inspect

import click

from .cli_options import store_option, sweep_filter_option
from .cli_signals import begin_work
from .store_access import open_store, store_errors

FORMATS = ("table", "csv", "json")  # explorer.report.tables.FORMATS (a test keeps them equal)


class _SqlCommand(click.Command):
    """`explorer sql`, whose help names the views from the store's registry (``store.VIEW_NAMES``)
    where its text says ``{views}``. The store is imported only when that help is shown: importing
    it (pyarrow, DuckDB) at every start would cost a spec error or `explorer --help` a second."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from store import VIEW_NAMES

        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(inspect.cleandoc(self.help).replace("{views}", ", ".join(VIEW_NAMES)))


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

    begin_work("store", "explorer.report.tables")
    from store import LeftOutFilesWarning

    st = open_store(store_uri, must_exist=True, sweep=sweep)  # a sweep it lacks: exit 2 naming those it has
    with store_errors(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LeftOutFilesWarning)
        table = st.query(query, sweep=sweep, timeout_s=timeout_s, memory_limit=memory_limit)
    for warning in caught:
        if issubclass(warning.category, LeftOutFilesWarning):
            click.echo(f"warning: {warning.message}", err=True)
    from .report.tables import render

    click.echo(render(table, fmt), nl=False)
