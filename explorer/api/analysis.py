"""The twins of ``explorer fit``, ``phase`` and ``report`` (``explorer.cli.analysis``): a stored
sweep's law, phase diagram and HTML report (``explorer.report.stored_sweep``)."""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from store import Store

from ..analysis.laws import DEFAULT_FORM
from .echo import Echo, quiet

if TYPE_CHECKING:
    from ..analysis.phase import PhaseDiagram
    from ..report.contents import Report
    from ..report.stored_sweep import SweepFit


def phase(sweep: str, store: Store | str | os.PathLike = "results", *, x: str = "alpha", y: str = "D",
          step: int | None = None, where: str | None = None, out: str | os.PathLike | None = None, force: bool = False,
          n_boot: int = 200, seed: int = 0, echo: Echo = quiet) -> PhaseDiagram:
    """The phase diagram of a sweep over (``x``, ``y``) (``explorer.analysis.phase``): its table
    through ``echo``; where one axis is alpha, the boundary too (``phase_boundary``: alpha* per
    slice with its interval from ``n_boot`` resamples, its exponents in L, M, D beside the theory's;
    ``diagram.boundary``, not stored: the store has no kind for it); then with ``out`` the chart
    saved as ``out``/phase.png, .svg and .html (``force``: replace files there that explorer did not
    write) and their paths."""
    from ..report.stored_sweep import sweep_phase

    return sweep_phase(sweep, store, x=x, y=y, step=step, where=where, out=out, force=force, n_boot=n_boot,
                       seed=seed, echo=echo)


def report(sweep: str, store: Store | str | os.PathLike = "results", out: str | os.PathLike = "report", *,
           metric: str = "err_out", step: int | None = None, where: str | None = None, form: str = DEFAULT_FORM,
           n_boot: int = 200, save: bool = True, force: bool = False, compare_with: str | None = None,
           export: str | Sequence[str] = (), reload_s: float | None = None) -> Report:
    """A sweep's offline HTML report in ``out`` (``explorer.report.page.build_report``), its fits
    also written to the store unless ``save`` is False (or the store is read-only:
    ``Report.fits_not_saved`` says why); ``compare_with``: add the comparison with that sweep, as
    ``compare`` makes it; ``export``: also render every chart as these files (``"png,svg"``,
    ``["png"]``; vl-convert, most of a report's time: none by default). The page's header says
    when the data is partial or holds trials outside the last run's grid (``Report.data_notes``);
    ``reload_s``: the page reloads itself that often (``explorer watch --html``). Fits and the model
    comparison of rows and options seen before are read back from the user's fit cache
    (``explorer.report.fit_cache``: the same numbers)."""
    from ..report.stored_sweep import sweep_report

    return sweep_report(sweep, store, out, metric=metric, step=step, where=where, form=form, n_boot=n_boot, save=save,
                        force=force, compare_with=compare_with, export=export, reload_s=reload_s)


def fit(sweep: str, form: str = DEFAULT_FORM, *, store: Store | str = "results", metric: str = "err_out",
        step: int | None = None, where: str | None = None, n_boot: int = 200, seed: int = 0,
        floor: str = "quadrature", save: bool = True, compare: bool = False, budgets: Sequence[float] = (),
        bias: str | None = None, fluct: str | None = None) -> SweepFit:
    """Fit a scaling law to a sweep's errors with 95% intervals, as ``explorer fit`` does, and
    write it to the store (kind ``fits``; docs/analysis.md).

        explorer.fit("demo", store="results").result.estimate
        explorer.fit("demo", "free_rss", where="problem_seed = 2", save=False).lines()

    Args:
        sweep: the sweep. form: a law of the registry (``explorer.analysis.laws.FORMS``, each fitted
            with its own method) or an expression over L, M, D, P.
        metric, step, where: the rows fitted (step None: each trial's final step); axes the sweep
            varies besides L, M, D are held at their most common values (``FitResult.held``). A
            term metric (``bias_out``, ``fluct_hidden``, ...) fits ``form`` to that term alone.
        bias, fluct: with the decomposed law (``DEFAULT_FORM``), the user's laws of the two terms, fitted together.
        n_boot, seed, floor: the bootstrap's resamples and seed; the reference's error removed in
            quadrature ("quadrature") or not ("none").
        save: write the fit's rows to the store. compare: also rank every registry law by
            cross-validated log error. budgets: also the shape advice at these parameter budgets.

    Returns:
        A ``SweepFit`` (``result``, the ``FitResult``; ``lines()``, what the command prints).

    Raises:
        FitError: an unknown form or metric, a law the sweep cannot fit (the decomposed law without
            its Gram rows, or with one seed a point: the error's ``fallback_form`` names the law that
            fits the RMS errors instead; ``explorer.analysis.fitting.fit_stored_sweep``).
            SweepDataError: an unknown sweep. QueryError: a bad ``where``. ExpressionError: an
            invalid expression.
    """
    from ..report.stored_sweep import sweep_fit

    return sweep_fit(sweep, form, store=store, metric=metric, step=step, where=where, n_boot=n_boot, seed=seed,
                     floor=floor, save=save, compare=compare, budgets=budgets, bias=bias, fluct=fluct)


__all__ = ["fit", "phase", "report"]
