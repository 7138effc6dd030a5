"""Running sweeps: ``explorer sweep`` (with ``--adaptive``, ``--dry-run``), ``status`` and
``demo`` (their twins: ``explorer.api.sweep``, ``adaptive_sweep``, ``dry_run``, ``sweep_status``,
``every_sweep_status_lines``, ``demo``).

A spec is read before the store, Ray or torch is imported, with the start-up signals still held
(``explorer.signals.import_held``): a spec error is one quick line."""
from __future__ import annotations

import sys

import click

from ..signals import begin_work, import_held
from ..store_access import store_errors
from .options import store_option


def _spec_reader() -> tuple:
    """What reading a spec imports: its reader, the store's and the trials' faces (``import_held``)."""
    from ..config.spec import load_spec
    from store import Store
    from trials import TrialConfig
    return load_spec, Store, TrialConfig


def _sweep_driver() -> tuple:
    """The twins (the store) and the Tune driver, imported where a signal still ends the command."""
    from .. import api
    from ..sweeps import run_sweep
    return api, run_sweep


@click.command("sweep", context_settings={"ignore_unknown_options": True})
@click.argument("spec", type=click.Path(dir_okay=False))
@click.argument("overrides", nargs=-1, metavar="[KEY=VALUE]...")
@store_option
@click.option("--address", default=None, metavar="ADDR",
              help="Join a Ray cluster: 'auto' (this machine is part of one), ray://host:port, or 'session' (the "
              "session Ray of `explorer ray start`, or an error). A join gives up after 30 s (EXPLORER_RAY_JOIN_TIMEOUT_S). "
              "Default: the session Ray when one of this environment runs this code, else an embedded local Ray.")
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
    import_held(_spec_reader)
    from ..config.spec import load_spec

    loaded = load_spec(spec, overrides)  # before the store, Ray or torch is imported: a spec error is quick
    if dry_run:
        begin_work()
        from .. import api

        for line in api.dry_run(loaded, address=address, adaptive=adaptive, store=store_uri):
            click.echo(line)
        return
    begin_work(_sweep_driver)
    from .. import api

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


@click.command("status")
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
        from .. import api

        for line in api.every_sweep_status_lines(store_uri):
            click.echo(line)
        return
    loaded = None
    if spec is not None:
        from ..config.spec import load_spec

        loaded = load_spec(spec, overrides)  # a spec error before the store is imported
    from .. import api

    with store_errors():
        report = api.sweep_status(loaded, sweep=sweep_name, store=store_uri)
    for line in report.lines():
        click.echo(line)


@click.command("demo")
@store_option
@click.option("--out", default="report", show_default=True, type=click.Path(file_okay=False),
              help="Folder of the report (when the analysis is installed).")
def demo_command(store_uri: str, out: str) -> None:
    """Run a small built-in sweep end to end, then fit and report it.

    The sweep (L = 4..32 x M = 1..1024, D = 8, 4 problem draws x 4 seeds: 96 trials) runs on an
    embedded Ray, under a minute on 2 cores. Rerunning reuses the trials already in the store.
    """
    from .. import api

    with store_errors():
        code = api.demo(store=store_uri, out=out, echo=click.echo)
    sys.exit(code)
