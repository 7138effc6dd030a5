"""The shareable report of a sweep: fits with confidence intervals, every chart, the phase
diagram, shape advice and data quality, as one ``index.html`` that opens with no network.

``build_report(con, sweep, out_dir)`` reads only the store's DuckDB views, runs the fits of
``explorer.analysis.fitting`` (theory, free, output, and joint when D varies), the phase diagram of
``explorer.analysis.phase`` and the charts of ``explorer.report.charts``, then writes into ``out_dir``:

- ``index.html``: the Vega, Vega-Lite and Vega-Embed libraries inline (once), every chart's
  spec inline, the fit tables, a summary written from the numbers, the sweep's configuration,
  the reference's error floor and what it excluded, and the counts of diverged / failed trials;
- ``<chart>.html`` (standalone, inline libraries) for every chart, and with ``exports``
  (``explorer report --export png,svg``) its ``<chart>.png`` and ``<chart>.svg``, rendered by
  vl-convert, most of a report's time otherwise (``explorer.report.chart_files``);
- ``fits.csv``: the fit rows (the same rows ``explorer fit`` writes to the store);
- ``optima.csv``: for an lr or alpha axis, each slice's optimum, the transfer law's rows (the
  rows ``explorer optimum`` and ``transfer`` write, kind optima) and the paired differences.

A part that cannot be made (a held slice where every run diverged, a chart, a law) is one line of
the summary saying why; the rest renders. The summary leads with the sweep's answer: for an lr or
alpha axis the optima, the transfer verdicts and the paired differences; for an L/M/D sweep the law.

The page is ``templates/report.html.j2`` (Jinja2, autoescaped): every string that reaches it,
sweep names, filters, laws and configuration values included, is HTML-escaped, and each chart
spec sits in a ``<script type="application/json">`` through Jinja's ``tojson`` (``<``, ``>``,
``&`` and ``'`` escaped, so no ``</script>`` or ``<!--`` can end it). Summary sentences are
``markupsafe.Markup`` built with ``Markup.format``, which escapes their arguments.

The report adapts to what the sweep varies: a law is fitted only when the axes it uses vary
(``needed_axes``), the L-M charts need L and M, and every other swept axis (alpha, D, lr, ...)
gets an error chart of its own.
"""
from __future__ import annotations

import functools
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
from markupsafe import Markup

from . import diagnostic_charts
from .chart_files import (CHART_FORMATS, PAGE_FORMATS, bundle_digest, chart_html, export_formats, json_default, save_chart,
                          vega_bundle)
from ..errors import FitError, SweepDataError
from ..analysis.fitting import FitResult, compare_laws, fit_sweep, flag_summary, interval_description
from ..analysis.laws import DEFAULT_FORM, FORMS, law_forms, method_of, needed_axes, report_forms, resolve_form
from ..formatting import fmt

from ..store_access import open_sweep
from .contents import Report
from .chart_set import add_charts, per_draw_frame
from .held_slice import MADE_ERRORS, held_grid, made, one_line
from .report_cache import Built, record, replayed
from .output_folder import OutputFolder
from .summary import result_field, summary_sentences
from ..analysis.phase import phase_diagram
from ..analysis.shapes import shape_advice
from ..analysis.data import (FLOOR_FACTOR, GRID_COLUMNS, column_values, distinct_counts, held_axes, query_cache,
                             require_measured, require_sweep_rows, status_counts, sweep_is, table_columns)

PHASE_AXIS_ORDER = ("alpha", "lr", "sigma_u", "sigma_v", "D", "L", "M")
SCALE_AXES = ("L", "M", "D")
COMPARE_COLUMNS = ("law", "n_params", "cv_loo", "cv_extrap", "rank")


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """The Jinja2 environment of the page: autoescaped, strict about undefined names."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("explorer.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.policies["json.dumps_kwargs"] = {"sort_keys": False, "default": json_default}
    env.filters["num"] = fmt
    return env


def sweep_config(con, sweep: str) -> pd.DataFrame:
    """The sweep's hyperparameters from its metric rows: column, distinct values (up to 12)."""
    columns = table_columns(con)
    extra = ("seed", "problem_seed", "ref_kind", "ref_key", "device", "package_version", "schema_version")
    wanted = [c for c in dict.fromkeys(SCALE_AXES + GRID_COLUMNS + extra) if c in columns]
    rows = []
    for col, distinct in column_values(con, wanted, sweep_is(sweep), limit=13).items():
        values = distinct["v"].tolist()
        shown = ", ".join(fmt(v, "g") for v in values[:12]) + (", ..." if len(values) > 12 else "")
        rows.append({"column": col, "values": shown, "count": len(values) if len(values) <= 12 else "> 12"})
    return pd.DataFrame(rows)


def varying_axes(con, sweep: str, where: str | None = None) -> list[str]:
    """The sweep's columns among L, M, D and the grid columns that take more than one value."""
    columns = table_columns(con)
    candidates = [c for c in dict.fromkeys(SCALE_AXES + GRID_COLUMNS) if c in columns]
    counts = distinct_counts(con, sweep, candidates, where)
    return [c for c in candidates if int(counts[c].iloc[0]) > 1]


def _phase_axes(varying: list[str]) -> tuple[str, str] | None:
    ordered = [c for c in PHASE_AXIS_ORDER if c in varying]
    if len(ordered) >= 2:
        return ordered[0], ordered[1]
    if len(ordered) == 1:
        return ordered[0], next(c for c in ("D", "L", "M") if c != ordered[0])
    return None


# ----------------------------------------------------------------------------- the page's tables


def _table(frame: pd.DataFrame, classes: str, spec: str = ".4g") -> dict:
    """A table for the template's ``table`` macro: column names and formatted cells."""
    return {"classes": f"dataframe {classes}", "columns": [str(c) for c in frame.columns],
            "rows": [[fmt(v, spec) for v in row] for row in frame.itertuples(index=False)]}


def _parameter_rows(result: FitResult) -> pd.DataFrame:
    """parameter, estimate, 95% CI; "not measured" or "not fitted" for a parameter whose estimate
    is no result (its reason is among the fit's warnings)."""
    table = result.table()
    missing = result.not_measured
    shown = [est if p not in missing else "not measured" if missing[p].startswith("not measured") else "not fitted"
             for p, est in zip(table["parameter"], table["estimate"])]
    ci = ["" if p in missing else f"[{fmt(lo)}, {fmt(hi)}]"
          for p, lo, hi in zip(table["parameter"], table["ci_low"], table["ci_high"])]
    return pd.DataFrame({"parameter": table["parameter"], "estimate": shown, "95% CI": ci})


def _fit_block(result: FitResult) -> dict:
    """What the template shows for one fit, read defensively (newer FitResults have more fields)."""
    per_draw = per_draw_frame(result)
    return {
        "fit_id": result.fit_id, "form": result.form, "law": result.expression.text,
        "table": _table(_parameter_rows(result), "fit-table"),
        "r2_log": fmt(result.r2_log, ".3f"), "n_points": result.n_points, "n_excluded": result.n_excluded,
        "n_flagged": int(result_field(result, "n_flagged", 0)), "flag_detail": flag_summary(result),
        "extrapolation": "n/a" if not np.isfinite(result.extrapolation_error)
        else f"{fmt(100 * result.extrapolation_error, '.1f')}%",
        "interval": interval_description(result),
        # Each guard rail once: the warnings already hold the unmeasured parameters and the
        # pre-asymptotic points; notes are information, shown as notes.
        "warnings": list(result_field(result, "warnings", [])),
        "notes": [n for n in result.notes if n not in result_field(result, "warnings", [])],
        "per_draw": _table(per_draw, "per-draw-table") if per_draw is not None else None,
    }


CHART_TITLES = {
    "bias_vs_depth": "Bias (the seed-mean's distance from the reference) vs depth L, one colour per M, with the "
                     "decomposed fit's c1 L^-a (c1 D^h L^-a where D varies) and a slope -1 guide",
    "fluct_vs_units": "Fluctuation (the seeds' spread around their mean) vs L*M, with the decomposed fit's "
                      "c2 (D/(LM))^b (c2 D^g (LM)^-b where D varies) and a slope -1/2 guide",
    "error_vs_depth": "Error vs depth L (fitted law, slope -1 guide)",
    "error_vs_units": "Error vs L*M: the hidden width (slope -1/2 guide)",
    "error_heatmap": "Error over (L, M) with the fitted surface's contours",
    "parity": "Measured vs fitted",
    "residuals": "Log residuals of the fit",
    "local_slopes": "Local slopes between neighbouring grid values (theory -1 in L, -1/2 in L*M)",
    "error_vs_step": "Error along gradient descent",
    "error_vs_params": "Error vs parameters P = L*M*D",
    "per_draw": "Estimates per problem draw, with the pooled CI band",
    "phase": "Phase diagram",
    "adaptive_points": "Adaptive sweep: the points chosen, coloured by the round that first chose them, sized by "
                       "the number of problem draws chosen there (grey squares: every pairing of the L values and "
                       "the M values chosen, not the candidate grid, which the rounds log does not hold)",
    "adaptive_ci": "Adaptive sweep: each target's CI half-width after each round against the compute spent "
                   "(exponents: absolute; positive constants: relative, half the width of the CI of log c)",
}


def _hyper_answers(con, sweep, varying, where, n_boot, seed) -> list:
    """The optima and transfer law of each lr or alpha axis (``explorer.report.hyper_report``; none
    without one)."""
    from .hyper_report import hyper_answers

    return hyper_answers(con, sweep, varying, where, n_boot=max(n_boot, 2), seed=seed)


def _hyper_charts(con, sweep, varying, where, n_boot, seed, answers) -> dict:
    """The hyperparameter section's charts (``explorer.report.hyper_report``; none without an lr or alpha axis)."""
    from .hyper_report import hyper_charts

    return hyper_charts(con, sweep, varying, where, n_boot=max(n_boot, 2), seed=seed, answers=answers)


def _chart_title(name: str) -> str:
    if name.startswith("hyper_"):
        from .hyper_report import chart_title

        return chart_title(name)
    if name.startswith("compare_"):
        from .compare_report import TITLES

        return TITLES.get(name, name)
    if name.startswith("error_vs_") and name not in CHART_TITLES:
        return f"Error vs {name[len('error_vs_'):]} (the other swept axes held, one line per L, M, D)"
    return CHART_TITLES.get(name, name)


# ----------------------------------------------------------------------------- building


def build_report(con, sweep: str, out_dir: str | Path, *, metric: str = "err_out", step: int | None = None,
                 where: str | None = None, form: str = DEFAULT_FORM, n_boot: int = 200, seed: int = 0,
                 store=None, exports=(), force: bool = False, comparison=None, cache=None) -> Report:
    """Fit, chart and write the report of a sweep into ``out_dir``.

    Args:
        con: DuckDB connection with the store's views. sweep: its name.
        out_dir: the folder to write (created; files of the same names are replaced).
        metric, step, where: which errors (see ``grid_errors``); axes other than L, M, D that
            vary are held at ``held_axes`` values for the fits (said in the report).
        form: the fit drawn in the charts (decomposed by default, free_rss where it cannot be
            fitted; any form or expression).
        n_boot, seed: bootstrap resamples and seed of every fit.
        store: a ``store.Store``; when given, every fit's rows are written to it (kind fits).
        exports: the chart exports to render besides each chart's page (``"png,svg"`` or a list
            of ``EXPORT_FORMATS``; default none: the page and the charts' specs come in seconds).
        force: replace files in ``out_dir`` that the explorer did not write (``OutputFolder``:
            without it such a file is refused before any work; no file is written through a link).
        comparison: an ``explorer.analysis.compare.Comparison`` of this sweep with another: adds
            its table and charts (``explorer.report.compare_report``).
        cache: a ``explorer.report.fit_cache.FitCache``: the fits and the model comparison of rows
            and options it has seen are read back from it (the same numbers), not computed again,
            and a report whose every query gives the results of a report kept there is written
            from it (``explorer.report.report_cache``; not with a comparison or exports).
    Returns:
        A :class:`Report`.
    Raises:
        SweepDataError, FitError, QueryError: no data to report (unknown sweep, metric, filter).
        A form that cannot be fitted (too few points above the floor) is reported, not raised;
        one whose axes the sweep does not vary is not tried (``Report.skipped``).
    """
    out = Path(out_dir)
    resolve_form(form)  # a bad form is a usage error, before any work
    formats = PAGE_FORMATS + export_formats(exports)  # an unknown export too
    folder = OutputFolder(out, force=force)
    for name in ("index.html", "fits.csv", "optima.csv"):
        folder.check(name)  # someone else's file, or a linked folder: refused before any work
    with query_cache(con):  # one read of the store: each distinct query runs once
        require_sweep_rows(con, sweep, where)  # nothing to report: the filter's mistake, in one line
        # the report cache: not with a comparison (its own reads) nor exports (rendered from charts)
        options = None if cache is None or comparison is not None or len(formats) > len(PAGE_FORMATS) else {
            "sweep": sweep, "metric": metric, "step": step, "where": where, "form": form, "n_boot": n_boot,
            "seed": seed, "formats": formats, "vega_bundle": bundle_digest()}  # a page of another bundle: a miss
        built = replayed(cache, con, options) if options is not None else None
        if built is None:
            built = _build(con, sweep, out, metric=metric, step=step, where=where, form=form, n_boot=n_boot,
                           seed=seed, comparison=comparison, cache=cache, formats=formats)
            if options is not None:
                record(cache, con, options, built)
        report = built.report
        report.path = out / "index.html"
        folder.write("fits.csv", report.fit_rows().to_csv(index=False))
        folder.write("optima.csv", report.optima_rows().to_csv(index=False))
        if store is not None:
            report.fits_not_saved = save_fits(store, report.fits.values())
        folder.write("index.html", built.page)  # the page first: the exports, when asked, come after it
        for name, chart in report.charts.items():
            save_chart(chart, out, name, formats=formats, spec=built.specs[name], output=folder)
        return report


def _build(con, sweep: str, out: Path, *, metric: str, step: int | None, where: str | None, form: str, n_boot: int,
           seed: int, comparison, cache, formats) -> Built:
    """The report's fits, charts, their specs and its page (``build_report`` writes them). A part
    that cannot be made (a held slice where nothing trains, a chart, a law) is one line of
    ``report.not_made`` (or ``fit_errors``), said in the summary; the rest is made."""
    report = Report(path=out / "index.html", counts=status_counts(con, sweep, where))
    report.varying = varying_axes(con, sweep, where)
    report.fixed = held_axes(con, sweep, SCALE_AXES, where)
    report.hyper = _hyper_answers(con, sweep, report.varying, where, n_boot, seed)
    for answer in report.hyper:
        report.not_made.update(answer.why)
    try:
        require_measured(con, sweep, metric)
    except SweepDataError as exc:  # a loss-only sweep (reference kind none): no error to fit or chart, said once
        report.not_made[f"the fits and error charts of {metric}"] = one_line(exc)
        report.fixed, measured = {}, False
        grid, fit_where = None, where
    else:
        measured = True
        grid, fit_where = held_grid(report, con, sweep, metric, step, where)

    if measured:
        _fit_forms(report, con, sweep, form, metric=metric, step=step, where=fit_where, n_boot=n_boot, seed=seed,
                   cache=cache, fit=grid is not None)
    if report.fits:
        try:
            # the laws the report fits or could (one it skips, as joint on a single-D sweep, is not ranked)
            report.comparison = _compare_laws(grid, [f for f in law_forms() if f not in report.skipped], cache)
        except (FitError, ValueError) as exc:
            report.fit_errors["model comparison"] = str(exc)
    main = report.fits.get(form)  # None when it cannot be fitted: charts then show data only
    fallback = method_of(form).fallback
    if main is None and fallback is not None:  # no Gram rows or one seed: the same law on the RMS errors
        main = report.fits.get(fallback)
    advising = next((result for name, result in report.fits.items() if name in FORMS and FORMS[name].shape_advice),
                    None)
    if advising is not None:
        report.advice = made(report, "the shape advice", lambda: shape_advice(advising))

    axes = _phase_axes(report.varying)
    if axes is not None:
        try:
            report.phase = phase_diagram(con, sweep, *axes, where=where)
        except SweepDataError as exc:
            report.fit_errors["phase diagram"] = str(exc)
        except MADE_ERRORS as exc:
            report.not_made["the phase diagram"] = one_line(exc)

    points = main.grid if main is not None else grid
    if points is not None:
        report.slopes = made(report, "the local slopes", lambda: diagnostic_charts.local_slopes(points))
    if measured:
        add_charts(report, con, sweep, metric, step, where, fit_where, points, main)
    report.charts.update(_comparison_charts(comparison))
    report.charts.update(_hyper_charts(con, sweep, report.varying, where, n_boot, seed, report.hyper))
    report.summary = summary_sentences(report, grid, metric)
    # not validated against Vega-Lite's schema here (a second of a report): the tests validate every chart
    specs = {name: chart.to_dict(validate=False) for name, chart in report.charts.items()}
    page = _page(report, specs, sweep, metric, grid, sweep_config(con, sweep), where, comparison, formats)
    return Built(report, specs, page)


def _fit_forms(report: Report, con, sweep: str, form: str, *, metric: str, step: int | None,
               where: str | None, n_boot: int, seed: int, cache=None, fit: bool = True) -> None:
    """Fit the report's laws (and ``form``) into ``report.fits``; a law whose axes the sweep does
    not vary is skipped, one that cannot be fitted is noted in ``report.fit_errors``. ``fit``
    False (the held slice has no rows, said once): none is tried."""
    forms = report_forms()
    forms += [form] if form not in forms else []
    for name in forms:
        missing = tuple(a for a in SCALE_AXES if a in needed_axes(name) and a not in report.varying)
        if missing:
            report.skipped[name] = missing
            continue
        if not fit:
            continue
        try:  # each law with its own method (the decomposed law from the seeds' Gram rows)
            report.fits[name] = fit_sweep(con, sweep, name, metric=metric, step=step, where=where, n_boot=n_boot,
                                          seed=seed, hold=False, cache=cache)
        except (FitError, SweepDataError) as exc:  # no Gram rows (an older store) or one seed: said
            report.fit_errors[name] = str(exc)
        except MADE_ERRORS as exc:
            report.fit_errors[name] = one_line(exc)


def _compare_laws(grid: pd.DataFrame, forms: list[str], cache=None) -> pd.DataFrame:
    """``compare_laws`` of the report's laws on ``grid``, read back from ``cache`` (if any) when it
    has ranked the same grid before."""
    compute = functools.partial(compare_laws, grid, forms)
    return compute() if cache is None else cache.computed("compare_laws", {"grid": grid, "forms": forms}, compute)


def save_fits(store, results) -> str | None:
    """Write each fit's rows to the store; None, or why they could not be written (a read-only
    store: the report is still written, the fits are in its fits.csv)."""
    from store import StoreError, StoreUnreachable

    try:
        for result in results:
            store.write_fit(result.sweep, result.fit_id, result.rows().to_dict("records"))
    except (StoreUnreachable, StoreError) as exc:
        if isinstance(exc, StoreUnreachable) or "cannot write" in str(exc):
            return " ".join(str(exc).split())
        raise
    return None


def write_report(sweep: str, store="results", out: str | Path = "report", save: bool = True, **options) -> Path:
    """``build_report`` on a store: fits are also written to the store (unless ``save`` is
    False, or the store cannot be written: then the report is still written). Returns ``out``.

    Args:
        sweep: the sweep name. store: a ``store.Store`` or a URI. out: the report folder.
        save: write the fits to the store (``explorer report --no-save``: False).
        options: passed to ``build_report`` (metric, step, where, form, n_boot, seed, force, cache:
            by default the user's ``FitCache``).
    """
    from .fit_cache import FitCache

    options.setdefault("cache", FitCache())
    st, con = open_sweep(store, sweep)
    build_report(con, sweep, out, store=st if save else None, **options)
    return Path(out)


def _page(report: Report, specs: dict, sweep: str, metric: str, grid: pd.DataFrame, config: pd.DataFrame, where,
          sweeps=None, formats=CHART_FORMATS) -> str:
    """index.html from templates/report.html.j2 (every value escaped by the template)."""
    advice = None
    if report.advice is not None and grid is not None:
        frontier = report.advice["frontier"]
        measured = float((grid["L"] * grid["M"] * grid["D"]).max())
        table = frontier[["P", "L_int", "M_int", "D_int", "err_int", "best_err"]].rename(columns={
            "L_int": "L", "M_int": "M", "D_int": "D", "err_int": "fitted error", "best_err": "continuous optimum error"})
        table["extrapolated"] = np.where(frontier["P"] > measured * (1 + 1e-9), "yes", "no")
        advice = {"table": _table(table, "advice-table"), "measured": fmt(measured, ".3g")}
    phase = None
    if report.phase is not None:
        cells = report.phase.cells
        cols = [report.phase.x, report.phase.y, "phase", "feature_update", "lin_ratio", "output_change",
                "local_ratio", "init_noise", "n_seeds", "n_diverged", "n_failed"]
        phase = {"rule": report.phase.rule, "table": _table(cells[[c for c in cols if c in cells.columns]], "phase-table")}
    comparison = None
    if report.comparison is not None and len(report.comparison):
        frame = report.comparison
        comparison = _table(frame[[c for c in COMPARE_COLUMNS + ("note",) if c in frame.columns]], "comparison-table")
    excluded = grid[grid["floor_limited"]][["L", "M", "D", "err", "ref_err"]] if grid is not None else grid
    slopes = report.slopes
    return _environment().get_template("report.html.j2").render(
        sweep=sweep, metric=metric, where=where, vega_bundle=Markup(vega_bundle()),
        summary=report.summary, fixed=", ".join(f"{k} = {fmt(v, 'g')}" for k, v in report.fixed.items()),
        fits=[_fit_block(r) for r in report.fits.values()], comparison=comparison,
        charts=[{"name": name, "title": _chart_title(name), "spec": page_spec(spec)} for name, spec in specs.items()],
        chart_formats=[f for f in CHART_FORMATS if f in formats], phase=phase, advice=advice,
        slopes=_table(slopes, "slopes-table", ".3g") if slopes is not None and len(slopes) else None,
        floor_factor=fmt(FLOOR_FACTOR, "g"),
        excluded=_table(excluded, "excluded-table") if excluded is not None and len(excluded) else None,
        hyper=[_hyper_block(answer) for answer in report.hyper],
        counts=_table(pd.DataFrame([report.counts]), "counts-table"), config=_table(config, "config-table"),
        sweeps=None if sweeps is None else _comparison_block(sweeps))


def _hyper_block(answer) -> dict:
    """What the page shows of one lr or alpha axis: the optima per slice, the transfer law per
    group with its verdicts, and the paired differences (``explorer optimum`` and ``transfer``)."""
    from .hyper_report import optima_frame, transfer_frames

    block = {"axis": answer.axis, "optima": None, "transfer": None, "differences": None, "why": answer.why}
    if answer.optima is not None:
        block["optima"] = _table(optima_frame(answer.optima), "optima-table", ".3g")
    if answer.transfer is not None:
        law, differences = transfer_frames(answer.transfer)
        block["transfer"] = _table(law, "transfer-table", ".3g")
        block["differences"] = _table(differences, "differences-table", ".3g") if len(differences) else None
    return block


def page_spec(spec: dict) -> dict:
    """A chart's spec as the page embeds it: a single view (one chart or layers) fills the
    page's width (``"width": "container"``); panels side by side keep their fixed widths, which
    Vega-Lite cannot fit to a container. The chart files keep the fixed size of ``spec``."""
    panels = any(k in spec for k in ("hconcat", "vconcat", "concat", "facet"))
    if isinstance(spec.get("width"), (int, float)) and not panels:
        return {**spec, "width": "container"}
    return spec


def _comparison_charts(comparison) -> dict:
    """The charts of a comparison with another sweep (none without one)."""
    if comparison is None:
        return {}
    from .compare_report import comparison_charts

    return comparison_charts(comparison)


def _comparison_block(comparison) -> dict:
    """What the template shows of a comparison with another sweep (``explorer.report.compare_report``)."""
    from .compare_report import comparison_table

    lines = comparison.lines()
    return {"b": comparison.b.label, "head": lines[:2], "table": _table(comparison_table(comparison), "sweeps-table"),
            "lines": [line for line in lines[2:] if line.startswith(("left out", "warning", "note"))]}


__all__ = ["CHART_FORMATS", "Report", "build_report", "chart_html", "fmt", "needed_axes", "page_spec", "save_chart",
           "sweep_config", "varying_axes", "vega_bundle", "write_report"]
