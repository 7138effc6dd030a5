"""``explorer design``: the sweep that measures the target exponents, from a pilot sweep (its twin:
``explorer.api.design``)."""
from __future__ import annotations

import click

from ..store_access import store_errors
from .options import bounded_list, store_option, sweep_required_option


@click.command("design")
@sweep_required_option
@store_option
@click.option("--target", "targets", multiple=True, callback=bounded_list, required=True, metavar="NAME=HALFWIDTH",
              help="An exponent of the decomposed law (a or b) and the 95% CI half-width to reach (repeatable).")
@click.option("--budget", type=float, default=None, metavar="CPU_HOURS",
              help="The most single-core CPU-hours the designed sweep may cost (default: no limit).")
@click.option("--out", default=None, type=click.Path(dir_okay=False), metavar="SPEC",
              help="Write the designed sweep there, a spec with comments that `explorer sweep` runs as it is.")
@click.option("--force", is_flag=True, help="Replace a file at --out that explorer design did not write.")
@click.option("--name", default=None, metavar="NAME", help="The designed sweep's name (default: <pilot>_design).")
@click.option("--max-lm", type=click.IntRange(min=1), default=None, metavar="N",
              help="The largest L*M a designed trial may have (default 131072).")
@click.option("--min-draws", type=click.IntRange(min=1, max=16), default=1, show_default=True, metavar="G",
              help="At least G problem draws, each with its own reference (the interval then spans the draws).")
def design_command(sweep: str, store_uri: str, targets: tuple[str, ...], budget: float | None, out: str | None,
                   force: bool, name: str | None, max_lm: int | None, min_draws: int) -> None:
    """From a pilot, design the cheapest sweep measuring each target.

    The pilot's decomposed fit gives the bias and fluctuation laws and their noise per seed, its
    reference the reference's error per particle; the design's grid (L, M, D, within memory and
    --max-lm), seeds, problem draws and reference are searched for the cheapest whose predicted
    95% half-widths meet every target. Prints the design, the predicted half-widths, the
    estimated compute and memory, and the assumptions; a target out of reach is refused with the
    best half-width reachable and what blocks it (exit 2). A file at --out that design did not
    write is refused unless --force, and anything there that is not a regular file always.

    Example: explorer design --sweep demo --target a=0.2 --target b=0.05 --out d.toml
    """
    from .. import api

    with store_errors():
        result = api.design(sweep, list(targets), store=store_uri, budget=budget, out=out, max_lm=max_lm,
                            min_draws=min_draws, name=name, force=force)
    for line in result.lines():
        click.echo(line)
