"""The charts a sweep's report draws, chosen by what the sweep varies: the L-M charts need L (and
M), every other swept axis gets an error chart over it, the decomposition's and the per-draw
charts come from the fits, an adaptive sweep adds its rounds' two. Each chart that cannot be drawn
is one line of ``report.not_made`` (``held_slice.made``), never the end of the report.
"""
from __future__ import annotations

import pandas as pd

from . import charts as _charts
from . import diagnostic_charts
from ..analysis.data import grid_errors, held_where, round_rows, status_counts, step_errors
from ..analysis.laws import method_of
from ..errors import QueryError, SweepDataError
from .contents import Report
from .held_slice import held_words, made
from .summary import result_field

SCALE_AXES = ("L", "M", "D")
PER_DRAW_COLUMNS = ("problem_seed", "parameter", "estimate", "ci_low", "ci_high")


def per_draw_frame(result) -> pd.DataFrame | None:
    """The per-draw estimates of the parameters the pooled fit measured (None: none)."""
    frame = result_field(result, "per_draw", None)
    if not isinstance(frame, pd.DataFrame) or not len(frame):
        return None
    frame = frame[frame["parameter"].map(result.is_measured).astype(bool)]
    return frame[[c for c in PER_DRAW_COLUMNS if c in frame.columns]] if len(frame) else None


def add_charts(report: Report, con, sweep, metric, step, where, fit_where, points, main) -> None:
    """The charts the sweep's varying axes support: L-M charts need L (and M), every other
    swept axis gets an error chart over it. A chart that cannot be drawn is one line of
    ``report.not_made``; without the held slice's points (``points`` None) only the charts of
    other slices are drawn."""
    c, varying = report.charts, report.varying
    vary_l, vary_m = "L" in varying, "M" in varying

    def add(name: str, make) -> None:
        chart = made(report, f"the chart {name}", make)
        if chart is not None:
            c[name] = chart

    # the fit of the two terms on their own (the decomposed law's): its bias and fluctuation drawn
    decomposed = next((r for name, r in report.fits.items() if method_of(name).fits_terms), None)
    if decomposed is not None:
        add("bias_vs_depth", lambda: _charts.bias_vs_depth(decomposed))
        add("fluct_vs_units", lambda: _charts.fluct_vs_units(decomposed))
    if points is not None:
        if vary_l:
            add("error_vs_depth", lambda: _charts.error_vs_depth(points, main))
        if vary_l or vary_m:
            add("error_vs_units", lambda: _charts.error_vs_units(points, main))
        if vary_l and vary_m:
            add("error_heatmap", lambda: _charts.error_heatmap(points, main))
    if main is not None:
        add("parity", lambda: _charts.parity(main))
        add("residuals", lambda: _charts.residuals(main))
    if report.slopes is not None and len(report.slopes):
        add("local_slopes", lambda: diagnostic_charts.local_slopes_chart(report.slopes))
    if points is not None:
        add("error_vs_step", lambda: _charts.error_vs_step(step_errors(con, sweep, metric=metric, where=fit_where)))
        if vary_l or vary_m or "D" in varying:
            add("error_vs_params", lambda: _charts.error_vs_params(
                points, report.advice["frontier"] if report.advice else None))
        if "D" in varying:
            add("error_vs_D", lambda: diagnostic_charts.error_vs_axis(points, "D"))
    for axis in (a for a in varying if a not in SCALE_AXES):
        held = {k: v for k, v in report.fixed.items() if k != axis}

        def over_axis(axis=axis, held=held):
            try:
                grid = grid_errors(con, sweep, metric=metric, step=step, where=held_where(held, where))
            except SweepDataError:
                counts = status_counts(con, sweep, held_where(held, where))
                raise SweepDataError(f"no finite {metric} there ({held_words(held) or 'the whole sweep'}: "
                                     f"{counts.get('diverged_trials', 0)} of {counts.get('trials', 0)} trials "
                                     f"diverged, {counts.get('failed_trials', 0)} failed)") from None
            return diagnostic_charts.error_vs_axis(grid, axis)

        add(f"error_vs_{axis}", over_axis)
    # the decomposed fit's estimates first: their spread over draws is what the interval rests on
    per_draw = [(r, per_draw_frame(r)) for r in sorted(report.fits.values(),
                                                       key=lambda r: not method_of(r.form).fits_terms)]
    per_draw = [(r, p) for r, p in per_draw if p is not None]
    if per_draw:
        result, frame = per_draw[0]
        add("per_draw", lambda: diagnostic_charts.per_draw_chart(frame, result.table(),
                                                                 title=f"estimates per problem draw ({result.form})"))
    if report.phase is not None:
        add("phase", lambda: diagnostic_charts.phase_chart(report.phase))
    made(report, "the adaptive sweep's charts", lambda: add_adaptive_charts(c, con, sweep))


def add_adaptive_charts(c: dict, con, sweep: str) -> None:
    """An adaptive sweep's two charts (its ``rounds`` log): the chosen points over the grid, and
    the targets' CI half-widths against the compute spent."""
    try:
        rounds = round_rows(con, sweep)
    except (QueryError, SweepDataError):  # a connection without the rounds view
        return
    if rounds.empty:
        return
    points = rounds[rounds["entry"] == "point"].drop_duplicates("trial_key")
    if len(points):
        c["adaptive_points"] = diagnostic_charts.adaptive_points(points)
    targets = rounds[(rounds["entry"] == "target") & (rounds["state"] == "done")]
    if len(targets):
        from ..analysis.fitting import positive_parameters, target_halfwidth

        positive = positive_parameters(str(targets["form"].iloc[-1]))
        targets = targets.assign(half_width=[target_halfwidth(r.parameter, r.ci_low, r.ci_high, positive)
                                             for r in targets.itertuples()],
                                 relative=[r.parameter in positive for r in targets.itertuples()])
        c["adaptive_ci"] = diagnostic_charts.ci_vs_compute(targets)


__all__ = ["PER_DRAW_COLUMNS", "add_adaptive_charts", "add_charts", "per_draw_frame"]
