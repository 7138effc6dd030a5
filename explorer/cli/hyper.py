"""Hyperparameters: ``explorer optimum``, ``transfer`` and ``coordcheck`` (their twins:
``explorer.api.optimum``, ``transfer``, ``coordcheck``)."""
from __future__ import annotations

import click

from ..bounds import MAX_RESAMPLES
from .options import bounded_list, echo_notes, step_option, store_option, sweep_required_option, where_option

_axis_option = click.option("--axis", default="lr", show_default=True, metavar="AXIS",
                            help="The numeric grid axis minimised over, e.g. lr, alpha or sigma_u.")
_metric_option = click.option("--metric", default="loss", show_default=True, metavar="NAME",
                              help="Any stored metric, e.g. loss or err_out.")
_boot_option = click.option("--bootstrap", "n_boot", type=click.IntRange(min=2, max=MAX_RESAMPLES), default=200,
                            show_default=True, metavar="N", help="Resamples of draws, then seeds.")
_seed_option = click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
_save_option = click.option("--save/--no-save", default=True, show_default=True,
                            help="Write the rows to the store (kind optima).")


@click.command("optimum")
@sweep_required_option
@store_option
@_axis_option
@_metric_option
@click.option("--by", default=None, metavar="COLS",
              help="Comma-separated columns defining a slice, e.g. L,M,preset (default: every other varying axis).")
@step_option
@where_option
@_boot_option
@_seed_option
@_save_option
def optimum_command(sweep: str, store_uri: str, axis: str, metric: str, by: str | None, step: int | None,
                    where: str | None, n_boot: int, seed: int, save: bool) -> None:
    """The best value of an axis per slice, with a 95% interval.

    The minimum of the metric along the axis at the step, located on the log axis by the parabola
    through the lowest grid value and its neighbours (it can fall between grid values). A diverged
    run counts as worse than every finite one. A minimum at the grid's edge is reported as
    "below 0.125" or "above 32", never as a value. Example: explorer optimum --sweep lrxfer --axis lr
    """
    from .. import api

    found = api.optimum(sweep, axis, store=store_uri, metric=metric, by=by.split(",") if by else None, step=step,
                        where=where, n_boot=n_boot, seed=seed, save=save)
    echo_notes(found.data_notes)
    click.echo("\n".join(found.lines()))
    if save:
        click.echo(f"wrote {len(found.table)} rows (kind optima)")


@click.command("transfer")
@sweep_required_option
@store_option
@_axis_option
@click.option("--across", "across", multiple=True, callback=bounded_list, metavar="AXIS", default=("L",), show_default=True,
              help="L, M, or both (repeat): log axis* = c + gamma log L + delta log M, the terms of the axes given.")
@_metric_option
@step_option
@where_option
@click.option("--drop-edges", is_flag=True,
              help="Fit a preset without its slices whose optimum sits at a grid edge (named either way).")
@click.option("--pairs", "pairs", multiple=True, metavar="A:B",
              help="The paired differences to read (repeat), B - A, groups named by their values, e.g. "
                   "standard/raw:mlu/mean_field; 'all' for every two groups (default: each group against the first).")
@_boot_option
@_seed_option
@_save_option
def transfer_command(sweep: str, store_uri: str, axis: str, across: tuple[str, ...], metric: str, step: int | None,
                     where: str | None, drop_edges: bool, pairs: tuple[str, ...], n_boot: int, seed: int,
                     save: bool) -> None:
    """Whether an axis's optimum transfers across L and M.

    Fits log axis* = c + gamma log L + delta log M (the terms of the --across axes) per preset to
    the optima, with 95% intervals from the same bootstrap: "transfers across L" when gamma's (or
    delta's, across M) interval lies inside +-0.1, "drifts as L^gamma" when it excludes 0, else
    "not measured"; groups read on the same draws and seeds get the paired difference of their
    exponents, each against the first group unless --pairs says which. Example: explorer transfer
    --sweep lrxfer --axis lr --across M
    """
    from .. import api

    result = api.transfer(sweep, axis, across, store=store_uri, metric=metric, step=step, where=where, n_boot=n_boot,
                          seed=seed, drop_edges=drop_edges, save=save,
                          pairs=list(pairs) if pairs else None)
    echo_notes(result.data_notes)
    click.echo("\n".join(result.lines()))


@click.command("coordcheck")
@sweep_required_option
@store_option
@step_option
@where_option
@_boot_option
@_seed_option
def coordcheck_command(sweep: str, store_uri: str, step: int | None, where: str | None, n_boot: int,
                       seed: int) -> None:
    """Update and branch sizes against M and L, with exponents.

    Per preset (and lr_scaling, alpha when they vary) a table of the sizes at the step, one row per
    (M, L), one column per quarter of depth: the RMS of h_l(k) - h_l(0) (update) and of the residual
    branch's output (branch), and feature_update. Each is fitted as log size = c_draw + a log M +
    b log L, with 95% intervals from the seed-and-draw bootstrap. Example: explorer coordcheck
    --sweep coords
    """
    from .. import api

    checked = api.coordcheck(sweep, store=store_uri, step=step, where=where, n_boot=n_boot, seed=seed)
    echo_notes(checked.data_notes)
    click.echo("\n".join(checked.lines()))
