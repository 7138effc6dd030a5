"""``explorer ray start|stop|status``: the session Ray, one local Ray that later sweeps join
(its twins: ``explorer.api.ray_start``, ``ray_stop``, ``ray_status``)."""
from __future__ import annotations

import click

ACTIONS = ("start", "stop", "status")


@click.command("ray")
@click.argument("action", type=click.Choice(ACTIONS))
@click.option("--num-cpus", type=click.IntRange(min=1), default=None, metavar="N",
              help="With start: the session Ray's CPUs (default: all of this machine's).")
def ray_command(action: str, num_cpus: int | None) -> None:
    """Keep one local Ray for a working session: start, stop, status.

    After `explorer ray start`, every sweep on this machine without --address joins that Ray
    instead of starting its own, which saves Ray's start (seconds to tens of seconds) per
    command; `explorer ray stop` stops it and only it. Loopback only, no dashboard, as the
    embedded Ray a sweep starts by default. Example: explorer ray start
    """
    from .. import api

    if action == "start":
        lines = api.ray_start(num_cpus)
    elif action == "stop":
        lines = api.ray_stop()
    else:
        lines = api.ray_status()
    for line in lines:
        click.echo(line)
