"""Reading a sweep's results: ``explorer fit``, ``phase`` and ``report`` (their twins:
``explorer.api.fit``, ``phase``, ``report``)."""
from __future__ import annotations

import os

import click

from ..bounds import MAX_RESAMPLES
from ..formatting import shell_word
from .flag_words import fit_flag_words
from .options import (RegistryHelpOption, axis_names, bounded_list, echo_notes, fit_metric_option, form_option, metric_option, step_option,
                      store_option, sweep_required_option, where_option)
from ..signals import begin_work


def _fitting_stack() -> tuple:
    """The fitting stack (scipy, the store) and the twins, imported while a signal still ends the
    command cleanly (``begin_work``): the fit's dispatch and the solver under its fit to RMS errors
    (the fitter itself is the dispatch's to import: nothing past ``fit_sweep`` names one)."""
    from .. import api
    from ..analysis.fitting import fit_sweep  # its dispatch
    from ..analysis.fitting import check_single_slice  # the solver's module, under the fit to RMS errors
    from ..store_access import store_errors
    return api, fit_sweep, check_single_slice, store_errors


def _report_stack() -> tuple:
    """The twins and the report's page (Altair), imported while a signal still ends the command."""
    from .. import api
    from ..report.page import build_report
    return api, build_report


@click.command("fit")
@sweep_required_option
@store_option
@fit_metric_option
@step_option
@form_option("The law to fit.")
@click.option("--bias", "bias", default=None, metavar="EXPR",
              help="With --form decomposed: the user's law of the bias term (default c1*L**(-a)).")
@click.option("--fluct", "fluct", default=None, metavar="EXPR",
              help="With --form decomposed: the user's law of the fluctuation term (default c2*(D/(L*M))**b, "
                   "c2*D**g*(L*M)**(-b) where D varies).")
@where_option
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=0, max=MAX_RESAMPLES), default=200, show_default=True, metavar="N",
              help="Bootstrap resamples for the confidence intervals.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the starts and the bootstrap.")
@click.option("--budget", "budgets", type=float, multiple=True, callback=bounded_list, metavar="P",
              help="Shape advice: the (L, M, D) minimizing the fitted error at L*M*D = P (repeatable).")
@click.option("--save/--no-save", default=True, show_default=True, help="Write the fit to the store (kind fits).")
@click.option("--compare", is_flag=True, help="Also rank every registered law by cross-validated log error.")
@click.option("--floor", type=click.Choice(["quadrature", "none"]), default="quadrature", show_default=True,
              help="Remove the reference's own error in quadrature before fitting, or fit err as measured.")
def fit_command(sweep: str, store_uri: str, metric: str, step: int | None, form: str, bias: str | None,
                fluct: str | None, where: str | None, n_boot: int, seed: int, budgets: tuple[float, ...], save: bool,
                compare: bool, floor: str) -> None:
    """Fit a scaling law to a sweep's errors, with 95% bootstrap CIs.

    The default, decomposed, splits each point's error into the seed-mean's distance from the
    reference (bias, fitted by c1 L^-a) and the seeds' spread (fluctuation, c2 (D/(LM))^b); where
    D varies each term gets its D exponent (c1 D^h L^-a, c2 D^g (LM)^-b) and the theory's tie
    g = b is tested. The other laws are fitted to the RMS errors over seeds in log space (robust
    loss, several starts); --metric fluct_out (a term) fits any law to one term. Draws are
    pooled; floor-limited points and flagged seeds are left out and counted; warnings say what the
    numbers cannot. Example: explorer fit --sweep demo --form free_rss (one draw: --where
    "problem_seed = 2"; rank the laws: --compare)
    """
    begin_work(_fitting_stack)
    from .. import api

    with fit_flag_words():  # a law whose data is missing: the --form that fits the sweep instead
        fitted = api.fit(sweep, form, store=store_uri, metric=metric, step=step, where=where, n_boot=n_boot,
                         seed=seed, floor=floor, save=save, compare=compare, budgets=budgets, bias=bias, fluct=fluct)
    echo_notes(fitted.data_notes)
    click.echo("\n".join(fitted.lines()))


@click.command("phase")
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
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=2, max=MAX_RESAMPLES), default=200, show_default=True,
              metavar="N", help="Resamples of the phase boundary's intervals (draws, then seeds).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
def phase_command(sweep: str, store_uri: str, x: str, y: str, step: int | None, where: str | None,
                  out: str | None, force: bool, n_boot: int, seed: int) -> None:
    """Classify each (x, y) cell by regime; locate the lazy boundary.

    The regimes are mlu, lazy, trivial, diverged (or failed). The rule (docs/analysis.md) reads the final-step medians over seeds of feature_update,
    lin_ratio and output_change. When one axis is alpha, the mlu/lazy crossover alpha* of each slice
    follows, with 95% intervals, and its exponents in L, M and D beside the theory's.
    Example: explorer phase --sweep alpha --x alpha --y D --out phase
    """
    from .. import api

    api.phase(sweep, store_uri, x=x, y=y, step=step, where=where, out=out, force=force, n_boot=n_boot, seed=seed,
              echo=click.echo)


@click.command("report")
@sweep_required_option
@store_option
@click.option("--out", default="report", show_default=True, type=click.Path(file_okay=False), metavar="DIR",
              help="Folder of the report (index.html, each chart's own HTML page, fits.csv, optima.csv).")
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
@click.option("--export", default="", metavar="FORMATS",
              help="Also render every chart as these files, comma-separated: png, svg (e.g. --export png,svg). "
              "Default: none (the page holds every chart; rendering is most of a report's time).")
def report_command(sweep: str, store_uri: str, out: str, metric: str, step: int | None, where: str | None,
                   form: str, n_boot: int, no_save: bool, force: bool, compare_with: str | None, export: str) -> None:
    """Write a sweep's offline HTML report: fits, charts and summary.

    The report holds the fits with their CIs, charts, the phase diagram and a summary that leads
    with the sweep's answer (for an lr or alpha axis the optima, transfer verdicts and paired
    differences; else the law); a part that cannot be made (a held slice where every run
    diverged) is one line saying why. DIR/index.html opens offline (Vega inline). Files in DIR that explorer did not write are
    refused unless --force; a read-only store gets the report without its fits saved (one line).
    Example: explorer report --sweep demo --out report
    """
    begin_work(_report_stack)
    from .. import api

    report = api.report(sweep, store_uri, out, metric=metric, step=step, where=where, form=form, n_boot=n_boot,
                        save=not no_save, force=force, compare_with=compare_with, export=export)
    echo_notes(report.data_notes)
    if report.fits_not_saved:
        click.echo(f"note: fits not saved to the store ({report.fits_not_saved}); they are in "
                   f"{shell_word(os.path.join(out, 'fits.csv'))}", err=True)
    if report.code_note:
        click.echo(f"warning: {report.code_note}", err=True)
    for what, why in report.not_made.items():
        click.echo(f"note: not made: {what}: {why}", err=True)
    click.echo(f"report: {shell_word(report.path)}")
