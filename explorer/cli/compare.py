"""``explorer compare``: two sweeps' fitted laws, their differences with paired intervals (its twin:
``explorer.api.compare``)."""
from __future__ import annotations

import click

from ..analysis.laws import DEFAULT_FORM
from ..bounds import MAX_RESAMPLES
from ..store_access import store_errors
from .options import (RegistryHelpOption, bounded_list, column_names, compared_forms, metric_option, step_option, store_option,
                      where_option)


@click.command("compare")
@click.option("--sweep", "sweeps", multiple=True, required=True, metavar="NAME",
              help="Sweep A, then sweep B (B - A is reported); once with --by.")
@click.option("--by", default=None, metavar="COLUMN", cls=RegistryHelpOption, registry_help=column_names,
              help="Compare the two values of this column within one sweep, e.g. preset or activation.")
@click.option("--at", "at", multiple=True, callback=bounded_list, metavar="AXIS=VALUE", cls=RegistryHelpOption, registry_help=column_names,
              help="Compare the slice at this value of an axis the sweeps also vary, e.g. --at lr=0.5 "
                   "(repeatable); without it such a comparison is refused.")
@store_option
@click.option("--form", default=DEFAULT_FORM, show_default=True, metavar="F", cls=RegistryHelpOption,
              registry_help=compared_forms, help="The law both sweeps are fitted with.")
@metric_option
@step_option
@where_option
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=2, max=MAX_RESAMPLES), default=200, show_default=True,
              metavar="N", help="Paired bootstrap resamples, used where leaving a problem draw out leaves a "
                                "parameter unmeasured.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--save/--no-save", default=True, show_default=True,
              help="Write the rows to the store (kind comparisons, under sweep A).")
def compare_command(sweeps: tuple[str, ...], by: str | None, at: tuple[str, ...], store_uri: str, form: str,
                    metric: str, step: int | None, where: str | None, n_boot: int, seed: int, save: bool) -> None:
    """Compare two sweeps' fitted laws, with paired 95% intervals.

    Per parameter: A, B, the difference B - A (the ratio B/A for c1, c2) with a paired 95%
    interval, the unpaired one, and a verdict.
    Both are fitted on the grid points, problem draws and seeds they share (what is left out is
    listed); the paired interval leaves each problem draw (with one draw, each seed index) out
    of both at once, so the noise the sweeps share cancels. Refused (exit 2) when they share no draw or point, or
    their references or problems differ, or when they vary another axis besides L, M, D (and
    --by) that no --at or --where fixes; warns when they differ in more than one setting.
    Example: explorer compare --sweep lr10 --sweep lr08 (one sweep: --sweep S --by preset --at lr=0.5)
    """
    from .. import api

    expected = 1 if by else 2
    if len(sweeps) != expected:
        raise click.UsageError(f"give --sweep {'once with --by' if by else 'twice (A, then B)'}; got {len(sweeps)}")
    slice_at = {}
    for item in at:
        axis, sep, value = item.partition("=")
        if not sep or not axis.strip() or not value.strip():
            raise click.BadParameter(f"expected AXIS=VALUE, e.g. lr=0.5; got {item!r}", param_hint="--at")
        slice_at[axis.strip()] = value.strip()
    with store_errors():
        result = api.compare(sweeps[0], None if by else sweeps[1], by=by, store=store_uri, form=form, metric=metric,
                             step=step, where=where, n_boot=n_boot, seed=seed, save=save, at=slice_at)
    for line in result.lines():
        click.echo(line)
    if save:
        click.echo(f"wrote comparison {result.comparison_id} ({len(result.rows)} rows, kind comparisons)")
