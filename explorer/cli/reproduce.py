"""``explorer reproduce``: one of the papers' experiments run and its claims graded (its twins:
``explorer.api.reproduce``, ``reproduce_list``, ``reproduce_dry_run``)."""
from __future__ import annotations

import sys

import click

from .options import store_option
from ..signals import begin_work


def _reproduction_stack() -> tuple:
    """The twins (the store), the reproductions and the Tune driver, imported where a signal still
    ends the command (``begin_work``)."""
    from .. import api
    from ..reproduce.run import reproduce
    from ..sweeps import run_sweep
    return api, reproduce, run_sweep


@click.command("reproduce")
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
              help="List the experiments with their trials, references and estimated compute per scale, and their claims, and exit.")
@click.option("--dry-run", is_flag=True,
              help="Print each sweep's trials, references and estimated memory and time, a row per claim, and "
              "where the report would go; run nothing.")
@click.option("--force", is_flag=True, help="Replace files in the report folder that explorer did not write.")
def reproduce_command(name: str | None, scale: str, store_uri: str, address: str | None, out: str | None,
                      list_: bool, dry_run: bool, force: bool) -> None:
    """Run one of the papers' experiments and grade its claims.

    It runs the experiment's sweeps (specs under explorer/reproduce/paper/) and writes a
    reproduction report: each claim with the paper's number, this tool's value with its 95 %
    CI and a grade (consistent / close, CI excludes / not measured / disagrees; an exponent
    against a theorem's bound: tight / consistent with the bound / exceeds the bound) with its reason,
    and charts of the authors' curves over our points; the claims' fits are stored. Resumable: a
    rerun skips the trials the store has. Exits 1 when some trial failed.

    Example: explorer reproduce companion-linear --scale laptop --store results
    """
    begin_work(_reproduction_stack)
    from .. import api

    if list_:
        for line in api.reproduce_list():
            click.echo(line)
        return
    if name is None:
        raise click.UsageError("give an experiment NAME, or --list to see them")
    if dry_run:
        for line in api.reproduce_dry_run(name, scale, address=address, out=out):
            click.echo(line)
        return
    done = api.reproduce(name, scale, store_uri, address=address, out=out, force=force)
    for line in done.lines():
        click.echo(line)
    sys.exit(done.exit_code)
