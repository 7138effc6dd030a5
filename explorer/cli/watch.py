"""``explorer watch`` (its twin: ``explorer.api.watch``)."""
from __future__ import annotations

import click

from ..bounds import MAX_RESAMPLES
from .options import store_option, sweep_required_option


@click.command("watch")
@sweep_required_option
@store_option
@click.option("--every", type=click.FloatRange(min=0.5), default=10.0, show_default=True, metavar="SECONDS",
              help="Seconds between refreshes.")
@click.option("--once", is_flag=True, help="One refresh, then exit.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per refresh (keys sweep, ok, diverged, "
              "failed, running, pending, partial, ended, answer, ...).")
@click.option("--html", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Also rewrite the report page in DIR at each refresh; it reloads itself until the sweep ends.")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=2, max=MAX_RESAMPLES), default=200, show_default=True,
              metavar="N", help="Resamples of the answer's intervals (as optimum, transfer and fit).")
def watch_command(sweep: str, store_uri: str, every: float, once: bool, as_json: bool, html: str | None,
                  n_boot: int) -> None:
    """Follow a running sweep: trials, ETA, the answer so far.

    Trials by status, rate and ETA; the answer so far (each slice's optimum and the transfer law
    for a sweep with an lr or alpha axis, else the default fit) with how much each interval
    narrowed since the last refresh. Reads the store without a lock (local or s3://) and ends by
    itself, with the final answer, when the sweep's last run ends. A live display on a terminal,
    plain lines otherwise. Example: explorer watch --sweep lrwidth --every 5
    """
    from .. import api

    api.watch(sweep, store_uri, every=every, once=once, as_json=as_json, html=html, n_boot=n_boot,
              echo=click.echo, live=None if not as_json else False)
