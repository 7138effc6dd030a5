"""The `explorer` command line: thin commands that parse options and call the library.

Errors a user can cause (a bad spec, a bad store, bad SQL) print one line and exit non-zero;
the traceback appears only with `explorer --debug ...`.
"""
from __future__ import annotations

import sys
import warnings

import click

from . import __version__
from .bounds import MAX_RESAMPLES
from .cli_signals import OneLineSignals, begin_work, import_held
from .config.env_settings import check_environment
from .errors import UsageError
from .formatting import error_line, printable_text
from .cli_options import (RegistryHelpOption, axis_names, form_option, metric_option, step_option, store_option,
                          sweep_filter_option, sweep_required_option, where_option)
from .store_access import open_store, open_sweep, store_errors

# The store's kinds partitioned by sweep (store.DATA_KINDS; a test keeps them equal), written
# out so that `explorer --help` and a spec error do not import the store (pyarrow, duckdb).
DATA_KINDS = ("metrics", "trials", "fits", "rounds", "comparisons")


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


def cli_reference() -> str:
    """docs/cli.md: every command's ``--help`` at a fixed width, so the page is the same on every
    terminal (``python -m explorer.cli_reference > docs/cli.md`` regenerates it; a test compares)."""
    width = 100
    parts = ["# Command reference", "",
             "Generated from `explorer --help` and each command's `--help` by "
             "`python -m explorer.cli_reference > docs/cli.md`; a test keeps it current.", ""]
    root = click.Context(main, info_name="explorer", terminal_width=width, max_content_width=width)
    parts += ["## explorer", "", "```", main.get_help(root), "```", ""]
    for name in sorted(main.commands):
        command = main.commands[name]
        ctx = click.Context(command, parent=root, info_name=name, terminal_width=width, max_content_width=width)
        parts += [f"## explorer {name}", "", "```", command.get_help(ctx), "```", ""]
    return "\n".join(parts)


@main.command("check")
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
    from store import printable

    st = open_store(store_uri, must_exist=True, sweep=sweep)
    with store_errors():
        if quarantine:
            for source, target in st.quarantine(sweep):
                click.echo(f"quarantined {printable(source)} -> {printable(target)}")
        if repair:
            for line in st.repair(sweep).lines():
                click.echo(line)
        report = st.check(sweep)
    for line in report.lines(limit_per_category=limit):
        click.echo(line)
    if not report.ok:
        sys.exit(1)


@main.command("ls")
@store_option
def ls_command(store_uri: str) -> None:
    """List the store's sweeps: trials by status, size, last write.

    The size is on disk (MiB), the last write in UTC.
    """
    st = open_store(store_uri)
    with store_errors():
        rows = st.sweeps_summary() if st.exists() else []
    if not rows:  # an empty or new store is an answer, not an error
        click.echo(f"no sweeps in {printable_text(st.uri)}")
        return
    click.echo(f"{'sweep':<24} {'trials':>7} {'ok':>7} {'diverged':>8} {'failed':>7} {'MiB':>9}  last write")
    for r in rows:
        when = r.last_write.strftime("%Y-%m-%d %H:%M:%S") if r.last_write else "-"
        click.echo(f"{r.sweep:<24} {r.trials:>7} {r.ok:>7} {r.diverged:>8} {r.failed:>7} {r.bytes / 2**20:>9.2f}  {when}")


@main.command("rm")
@store_option
@click.option("--sweep", "sweep", required=True, metavar="NAME", help="The sweep to delete (all its files, nothing else).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def rm_command(store_uri: str, sweep: str, yes: bool) -> None:
    """Delete one sweep from the store; references stay.

    Every file of the sweep goes (metrics, trials, fits, rounds, comparisons, leases); the
    reference cache is shared by every sweep and stays.
    """
    st = open_store(store_uri, must_exist=True, sweep=sweep)
    with store_errors():
        if not yes:
            click.confirm(f"delete sweep {sweep} from {st.uri}?", abort=True)
        n = st.remove_sweep(sweep)
    click.echo(f"removed sweep {sweep}: {n} file(s)")


@main.command("compact")
@store_option
@sweep_filter_option
@click.option("--rows-per-file", default=4_000_000, show_default=True, type=click.IntRange(min=1), help="Target rows per compacted file.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(DATA_KINDS),
              help="Only this kind (repeatable; default all). Sweeps compact their trials themselves when they end.")
def compact_command(store_uri: str, sweep: str | None, rows_per_file: int, kinds: tuple[str, ...]) -> None:
    """Merge small result files into large ones, rows unchanged.

    The merged files hold exactly the rows of the originals (checked before the originals are
    removed); safe to interrupt and rerun.
    """
    st = open_store(store_uri, must_exist=True, sweep=sweep)
    with store_errors():
        for name in [sweep] if sweep else st.sweeps():
            for line in st.compact(name, rows_per_file=rows_per_file, kinds=kinds or DATA_KINDS).lines():
                click.echo(line)


@main.command("sweep", context_settings={"ignore_unknown_options": True})
@click.argument("spec", type=click.Path(dir_okay=False))
@click.argument("overrides", nargs=-1, metavar="[KEY=VALUE]...")
@store_option
@click.option("--address", default=None, metavar="ADDR",
              help="Join a Ray cluster: 'auto' (this machine is part of one) or ray://host:port. "
              "Default: start an embedded local Ray for this run.")
@click.option("--max-concurrent", type=click.IntRange(min=1), default=None, metavar="N",
              help="At most N trials at once (default: the spec's [resources] max_concurrent, else what fits).")
@click.option("--dry-run", is_flag=True,
              help="Print the trials, the references and the estimated memory and time, and run nothing "
              "(with --adaptive: the candidates, the budget and the initial design).")
@click.option("--adaptive", is_flag=True,
              help="Treat the grid as candidates: run rounds of points chosen to shrink the [adaptive] targets' "
              "CIs per unit of cost, until they reach the half-width or the budget is spent (resumable).")
def sweep_command(spec: str, overrides: tuple[str, ...], store_uri: str, address: str | None,
                  max_concurrent: int | None, dry_run: bool, adaptive: bool) -> None:
    """Run the sweep SPEC (a TOML file): the trials not yet stored.

    KEY=VALUE overrides change the spec for this run, e.g. grid.L=[4,8] train.steps=5
    (also written --train.steps=5). Rerunning resumes: complete trials are skipped, failed
    ones run again. Exits 0 when every trial ended ok or diverged, 1 when some failed.

    Example: explorer sweep examples/quick.toml --store results
    (adaptive: explorer sweep examples/rates_adaptive.toml --adaptive; see docs/sweeps.md)
    """
    import_held("explorer.config.spec", "store", "trials")  # what reading a spec imports
    from .config.spec import load_spec

    loaded = load_spec(spec, overrides)  # before the store, Ray or torch is imported: a spec error is quick
    if dry_run:
        begin_work()
        from .sweeps.dry_run import dry_run_lines

        for line in dry_run_lines(loaded, embedded=address is None, adaptive=adaptive):
            click.echo(line)
        return
    begin_work("explorer.api", "explorer.sweeps.ray_runner")  # the store and Ray, where a signal still ends it
    from . import api

    if adaptive:
        with store_errors():
            outcome = api.adaptive_sweep(loaded, store=store_uri, address=address, max_concurrent=max_concurrent)
        click.echo(outcome.summary())
        sys.exit(outcome.exit_code)
    if any(key.startswith("adaptive.") for key in loaded.given):
        click.echo("note: the spec has an [adaptive] section, which only `explorer sweep SPEC --adaptive` reads; "
                   "this runs the whole grid", err=True)

    with store_errors():
        result = api.sweep(loaded, store=store_uri, address=address, max_concurrent=max_concurrent)
    click.echo(result.summary())
    sys.exit(result.exit_code)


@main.command("status")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.argument("overrides", nargs=-1, metavar="[KEY=VALUE]...")
@store_option
@click.option("--sweep", "sweep_name", default=None, metavar="NAME", help="A sweep of the store, by name (instead of SPEC).")
def status_command(spec: str | None, overrides: tuple[str, ...], store_uri: str, sweep_name: str | None) -> None:
    """Count a sweep's trials: ok, diverged, failed, pending.

    With SPEC: the spec's trials, plus how many are pending; with neither SPEC nor --sweep: one
    row per sweep of the store. Example: explorer status --sweep quick
    """
    if spec is not None and sweep_name is not None:
        raise click.UsageError("give a SPEC file or --sweep NAME, not both")
    if spec is None and sweep_name is None:
        from . import api

        for line in api.every_sweep_status_lines(store_uri):
            click.echo(line)
        return
    loaded = None
    if spec is not None:
        from .config.spec import load_spec

        loaded = load_spec(spec, overrides)  # a spec error before the store is imported
    from . import api

    with store_errors():
        report = api.sweep_status(loaded, sweep=sweep_name, store=store_uri)
    for line in report.lines():
        click.echo(line)


@main.command("demo")
@store_option
@click.option("--out", default="report", show_default=True, type=click.Path(file_okay=False),
              help="Folder of the report (when the analysis is installed).")
def demo_command(store_uri: str, out: str) -> None:
    """Run a small built-in sweep end to end, then fit and report it.

    The sweep runs on an embedded Ray (a few minutes on 2 cores). Rerunning reuses the trials
    already in the store.
    """
    from . import demo

    with store_errors():
        code = demo.run_demo(store=store_uri, out=out, echo=click.echo)
    sys.exit(code)


@main.command("fit")
@sweep_required_option
@store_option
@metric_option
@step_option
@form_option("The law to fit.")
@where_option
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=0, max=MAX_RESAMPLES), default=200, show_default=True, metavar="N",
              help="Bootstrap resamples for the confidence intervals.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the starts and the bootstrap.")
@click.option("--budget", "budgets", type=float, multiple=True, metavar="P",
              help="Shape advice: the (L, M, D) minimizing the fitted error at L*M*D = P (repeatable).")
@click.option("--save/--no-save", default=True, show_default=True, help="Write the fit to the store (kind fits).")
@click.option("--compare", is_flag=True, help="Also rank every registered law by cross-validated log error.")
@click.option("--floor", type=click.Choice(["quadrature", "none"]), default="quadrature", show_default=True,
              help="Remove the reference's own error in quadrature before fitting, or fit err as measured.")
def fit_command(sweep: str, store_uri: str, metric: str, step: int | None, form: str, where: str | None,
                n_boot: int, seed: int, budgets: tuple[float, ...], save: bool, compare: bool, floor: str) -> None:
    """Fit a scaling law to a sweep's errors, with 95% bootstrap CIs.

    The default, decomposed, splits each point's error into the seed-mean's distance from the
    reference (bias, fitted by c1 L^-a) and the seeds' spread (fluctuation, c2 (D/(LM))^b); the
    other laws are fitted to the RMS errors over seeds in log space (robust loss, several
    starts). Draws are pooled; floor-limited points and flagged seeds are left out and counted;
    warnings say what the numbers cannot. Example: explorer fit --sweep demo --form free_rss
    (one draw: --where "problem_seed = 2"; rank the laws: --compare)
    """
    # the fitting stack (scipy, the store) imported while a signal still ends the command cleanly
    begin_work("explorer.api", "explorer.analysis.fitting.dispatch", "explorer.analysis.fitting.rms_fit",
               "explorer.store_access")
    from . import api

    with store_errors():
        fitted = api.fit(sweep, form, store=store_uri, metric=metric, step=step, where=where, n_boot=n_boot, seed=seed,
                         floor=floor, save=save, compare=compare, budgets=budgets)
    click.echo("\n".join(fitted.lines()))


@main.command("phase")
@sweep_required_option
@store_option
@click.option("--x", "x", default="alpha", show_default=True, cls=RegistryHelpOption, registry_help=axis_names,
              help="Axis across.")
@click.option("--y", "y", default="D", show_default=True, cls=RegistryHelpOption, registry_help=axis_names,
              help="Axis down.")
@step_option
@where_option
@click.option("--out", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Also save the chart as DIR/phase.png, .svg and .html.")
@click.option("--force", is_flag=True, help="Replace files in DIR that explorer did not write.")
def phase_command(sweep: str, store_uri: str, x: str, y: str, step: int | None, where: str | None,
                  out: str | None, force: bool) -> None:
    """Classify each (x, y) cell of a sweep by its training regime.

    The regimes are mlu, lazy, trivial, diverged (or failed). The rule (docs/analysis.md) reads the final-step medians over seeds of feature_update,
    lin_ratio and output_change. Example: explorer phase --sweep alpha --x alpha --y D --out phase
    """
    from .analysis.phase import format_phase, phase_diagram

    with store_errors():
        _, con = open_sweep(store_uri, sweep)
        diagram = phase_diagram(con, sweep, x, y, step=step, where=where)
        click.echo(format_phase(diagram))
        if out:
            from .report.diagnostic_charts import phase_chart
            from .report.output_folder import OutputFolder
            from .report.page import save_chart

            paths = save_chart(phase_chart(diagram), out, "phase", output=OutputFolder(out, force=force))
            click.echo("chart: " + ", ".join(str(p) for p in paths))


@main.command("report")
@sweep_required_option
@store_option
@click.option("--out", default="report", show_default=True, type=click.Path(file_okay=False), metavar="DIR",
              help="Folder of the report (index.html, charts as PNG/SVG/HTML, fits.csv).")
@metric_option
@step_option
@where_option
@form_option("The fit drawn in the charts.")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=0, max=MAX_RESAMPLES), default=200, show_default=True, metavar="N",
              help="Bootstrap resamples per fit.")
@click.option("--no-save", is_flag=True, help="Do not write the fits to the store (they are in DIR/fits.csv).")
@click.option("--force", is_flag=True, help="Replace files in DIR that explorer did not write.")
@click.option("--compare", "compare_with", default=None, metavar="NAME",
              help="Add a comparison with sweep NAME (as explorer compare: paired on shared draws and seeds).")
def report_command(sweep: str, store_uri: str, out: str, metric: str, step: int | None, where: str | None,
                   form: str, n_boot: int, no_save: bool, force: bool, compare_with: str | None) -> None:
    """Write a sweep's offline HTML report: fits, charts and summary.

    The report holds the fits with their CIs, charts, the phase diagram and a summary;
    DIR/index.html opens offline (Vega inline). Files in DIR that explorer did not write are
    refused unless --force; a read-only store gets the report without its fits saved (one line).
    Example: explorer report --sweep demo --out report
    """
    begin_work("explorer.report.page", "explorer.store_access")
    from .store_access import open_sweep
    from .report.page import build_report

    with store_errors():
        st, con = open_sweep(store_uri, sweep)
        comparison = None
        if compare_with is not None:
            from . import api

            comparison = api.compare(sweep, compare_with, store=st, metric=metric, step=step, where=where,
                                     n_boot=max(n_boot, 2), save=not no_save)
        report = build_report(con, sweep, out, store=None if no_save else st, metric=metric, step=step, where=where,
                              form=form, n_boot=n_boot, force=force, comparison=comparison)
    if report.fits_not_saved:
        click.echo(f"note: fits not saved to the store ({report.fits_not_saved}); they are in {out}/fits.csv", err=True)
    click.echo(f"report: {report.path}")


if __name__ == "__main__":  # pragma: no cover
    main()


@main.command("reproduce")
@click.argument("name", required=False, metavar="[NAME]")
@click.option("--scale", type=click.Choice(["laptop", "full", "tiny"]), default="laptop", show_default=True,
              metavar="laptop|full|tiny", help="full: the authors' grid (a cluster's job); laptop: a reduced grid, "
              "same protocol, under 30 minutes on 2 CPU cores; tiny: a miniature in seconds (tests, CI), its grades not a reproduction.")
@store_option
@click.option("--address", default=None, metavar="ADDR",
              help="Join a Ray cluster: 'auto' or ray://host:port. Default: an embedded local Ray.")
@click.option("--out", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Folder of the reproduction report [default: reproduce-NAME-SCALE].")
@click.option("--list", "list_", is_flag=True,
              help="List the experiments with their trials, references and estimated compute per scale, and exit.")
@click.option("--dry-run", is_flag=True,
              help="Print each sweep's trials, references and estimated memory and time, and where the report "
              "would go; run nothing.")
@click.option("--force", is_flag=True, help="Replace files in the report folder that explorer did not write.")
def reproduce_command(name: str | None, scale: str, store_uri: str, address: str | None, out: str | None,
                      list_: bool, dry_run: bool, force: bool) -> None:
    """Run one of the papers' experiments and grade its claims.

    It runs the experiment's sweeps (specs under explorer/reproduce/paper/) and writes a
    reproduction report: each claim with the paper's number, this tool's value with its 95 %
    CI and a grade (consistent / close, CI excludes / not measured / disagrees) with its reason,
    and charts of the authors' curves over our points; the claims' fits are stored. Resumable: a
    rerun skips the trials the store has. Exits 1 when some trial failed.

    Example: explorer reproduce companion-linear --scale laptop --store results
    """
    begin_work("explorer.reproduce.run", "explorer.sweeps.ray_runner")
    from .reproduce import run as rep

    if list_:
        with store_errors():
            for line in rep.list_lines():
                click.echo(line)
        return
    if name is None:
        raise click.UsageError("give an experiment NAME, or --list to see them")
    if dry_run:
        import os

        from .config.estimate import available_memory_bytes

        embedded = address is None
        for line in rep.dry_run_lines(name, scale, out, available_memory_bytes() if embedded else None,
                                      os.cpu_count() if embedded else None):
            click.echo(line)
        return
    with store_errors():
        code, table, folder = rep.reproduce(name, scale, store=store_uri, address=address, out=out, force=force)
    click.echo(rep.markdown_table(table), nl=False)
    click.echo(f"report: {folder.resolve() / 'index.html'}")
    sys.exit(code)


# Commands defined in their own modules (each module one command's options and output).
from .cli_compare import compare_command  # noqa: E402  (registered on main, which they do not import)
from .cli_design import design_command  # noqa: E402
from .cli_sql import sql_command  # noqa: E402

main.add_command(design_command)
main.add_command(compare_command)
main.add_command(sql_command)
