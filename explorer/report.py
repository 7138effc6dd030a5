"""The shareable report of a sweep: fits with confidence intervals, every chart, the phase
diagram, shape advice and data quality, as one ``index.html`` that opens with no network.

``build_report(con, sweep, out_dir)`` reads only the store's DuckDB views, runs the fits of
``explorer.fit`` (theory, free, output, and joint when D varies), the phase diagram of
``explorer.phase`` and the charts of ``explorer.charts``, then writes into ``out_dir``:

- ``index.html``: the Vega, Vega-Lite and Vega-Embed libraries inline (once), every chart's
  spec inline, the fit tables, a summary written from the numbers, the sweep's configuration,
  the reference's error floor and what it excluded, and the counts of diverged / failed trials;
- ``<chart>.png``, ``<chart>.svg`` (vl-convert) and ``<chart>.html`` (standalone, inline
  libraries) for every chart;
- ``fits.csv``: the fit rows (the same rows ``explorer fit`` writes to the store).
"""
from __future__ import annotations

import functools
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import charts as _charts
from .errors import FitError, SweepDataError
from .fit import (FITS_COLUMNS, FLOOR_FACTOR, GRID_COLUMNS, FitResult, check_sweep, fit, grid_errors, held_axes,
                  held_where, query_frame, resolve_form, status_counts, step_errors, sweep_is, table_columns)
from .phase import PhaseDiagram, phase_diagram
from .shapes import shape_advice

CHART_FORMATS = ("png", "svg", "html")
PHASE_AXIS_ORDER = ("alpha", "lr", "sigma_u", "sigma_v", "D", "L", "M")
REPORT_FORMS = ("theory", "free", "output", "joint")


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """The Vega + Vega-Lite + Vega-Embed JavaScript bundle (vl-convert), computed once."""
    import vl_convert as vlc

    return vlc.javascript_bundle(vl_version=_vl_version())


def _vl_version() -> str:
    from altair.utils._importers import vl_version_for_vl_convert

    return vl_version_for_vl_convert()


def _script_json(obj) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(obj, default=_json_default).replace("</", "<\\/")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


_EMBED_JS = """
(function () {
  const errors = [];
  function report(msg) { errors.push(String(msg)); document.getElementById('render-errors').textContent = errors.join('\\n'); }
  window.addEventListener('error', function (e) { report(e.message); });
  ['error', 'warn'].forEach(function (level) {
    const original = console[level].bind(console);
    console[level] = function () { report(level + ': ' + Array.from(arguments).join(' ')); original.apply(null, arguments); };
  });
  const divs = document.querySelectorAll('div[data-chart]');
  let done = 0;
  divs.forEach(function (div) {
    const spec = JSON.parse(document.getElementById('spec-' + div.dataset.chart).textContent);
    vegaEmbed(div, spec, {renderer: 'svg', actions: false}).then(function () {
      div.setAttribute('data-rendered', 'true');
    }).catch(function (err) { report(div.dataset.chart + ': ' + err); console.error(err); })
      .finally(function () { done += 1; if (done === divs.length) document.body.setAttribute('data-charts-done', String(done)); });
  });
})();
"""


def chart_html(chart, title: str = "chart") -> str:
    """A standalone HTML page for one chart, with the Vega libraries inline (no network).

    ``chart`` is an Altair chart or its Vega-Lite spec (dict)."""
    spec = chart if isinstance(chart, dict) else chart.to_dict()
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<script>{vega_bundle()}</script></head>
<body><pre id="render-errors" style="color:#b00"></pre>
<div data-chart="chart"></div>
<script type="application/json" id="spec-chart">{_script_json(spec)}</script>
<script>{_EMBED_JS}</script></body></html>
"""


def save_chart(chart, directory: str | Path, name: str, formats=CHART_FORMATS) -> list[Path]:
    """Write a chart (Altair chart or Vega-Lite dict) as ``name.png`` (2x), ``name.svg`` and
    ``name.html`` into ``directory``.

    Returns:
        The written paths.
    """
    import vl_convert as vlc

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    spec = chart if isinstance(chart, dict) else chart.to_dict()
    paths = []
    for fmt in formats:
        path = directory / f"{name}.{fmt}"
        if fmt == "png":
            path.write_bytes(vlc.vegalite_to_png(spec, scale=2, vl_version=_vl_version()))
        elif fmt == "svg":
            path.write_text(vlc.vegalite_to_svg(spec, vl_version=_vl_version()), encoding="utf-8")
        elif fmt == "html":
            path.write_text(chart_html(spec, name), encoding="utf-8")
        else:
            raise ValueError(f"unknown chart format {fmt!r}; expected one of: {', '.join(CHART_FORMATS)}")
        paths.append(path)
    return paths


@dataclass
class Report:
    """What ``build_report`` made.

    Attributes:
        path: the index.html. fits: form -> FitResult (forms that could be fitted).
        fit_errors: form -> why it could not be fitted. phase: the PhaseDiagram (or None).
        advice: shape advice of the joint fit (or None). charts: name -> Altair chart.
        summary: the summary sentences. counts: status_counts. fixed: axes held for the fits.
    """

    path: Path
    fits: dict = field(default_factory=dict)
    fit_errors: dict = field(default_factory=dict)
    phase: PhaseDiagram | None = None
    advice: dict | None = None
    charts: dict = field(default_factory=dict)
    summary: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)

    def fit_rows(self) -> pd.DataFrame:
        """All fit rows (FITS_COLUMNS) of the report."""
        frames = [f.rows() for f in self.fits.values()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(FITS_COLUMNS))


def sweep_config(con, sweep: str) -> pd.DataFrame:
    """The sweep's hyperparameters from its metric rows: column, distinct values (up to 12)."""
    columns = table_columns(con)
    extra = ("seed", "problem_seed", "ref_kind", "ref_key", "device", "package_version", "schema_version")
    wanted = [c for c in dict.fromkeys(("L", "M", "D") + GRID_COLUMNS + extra) if c in columns]
    rows = []
    for col in wanted:
        values = query_frame(con, f'SELECT DISTINCT "{col}" AS v FROM metrics WHERE {sweep_is(sweep)} ORDER BY 1 '
                                  "LIMIT 13")["v"].tolist()
        shown = ", ".join(_fmt_value(v) for v in values[:12]) + (", ..." if len(values) > 12 else "")
        rows.append({"column": col, "values": shown, "count": len(values) if len(values) <= 12 else "> 12"})
    return pd.DataFrame(rows)


def _fmt_value(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "null"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _phase_axes(con, sweep: str) -> tuple[str, str] | None:
    columns = table_columns(con)
    varying = []
    for col in PHASE_AXIS_ORDER:
        if col in columns:
            n = query_frame(con, f'SELECT count(DISTINCT "{col}") AS n FROM metrics WHERE {sweep_is(sweep)}')
            if int(n["n"].iloc[0]) > 1:
                varying.append(col)
    if len(varying) >= 2:
        return varying[0], varying[1]
    if len(varying) == 1:
        other = next(c for c in ("D", "L", "M") if c != varying[0])
        return varying[0], other
    return None


def _num(x, fmt=".3g") -> str:
    return "nan" if x is None or not np.isfinite(x) else format(float(x), fmt)


def _span(value: float, text: str, **data) -> str:
    attrs = " ".join(f'data-{k.replace("_", "-")}="{html.escape(str(v))}"' for k, v in data.items())
    return f'<span class="num" {attrs} data-value="{value!r}">{html.escape(text)}</span>'


def _slope_sentence(result: FitResult, parameter: str, label: str, theory: str) -> str:
    """'slope in L: -0.98, 95% CI [-1.05, -0.91], theory -1' from an exponent (slope = -exponent)."""
    est, lo, hi = result.estimate[parameter], result.ci_low[parameter], result.ci_high[parameter]
    common = {"fit_id": result.fit_id, "parameter": parameter}
    return (f"{label}: {_span(-est, _num(-est, '.3f'), field='slope', **common)}, 95% CI "
            f"[{_span(-hi, _num(-hi, '.3f'), field='slope_low', **common)}, "
            f"{_span(-lo, _num(-lo, '.3f'), field='slope_high', **common)}], theory {theory}")


def _summary(report: Report, grid: pd.DataFrame, metric: str) -> list[str]:
    # Grid points measured against several references are read against their newest (the note says which).
    lines = [f'<span class="warn">References: {html.escape(note)}.</span>' for note in grid.attrs.get("notes", ())]
    fits = report.fits
    if "theory" in fits:
        t = fits["theory"]
        c1, c2 = t.estimate["c1"], t.estimate["c2"]
        lines.append(f"Theory fit: {metric} &asymp; {_num(c1)}/L + {_num(c2)}&middot;sqrt(D/(L M)), R&sup2; (log) "
                     f"{_span(t.r2_log, _num(t.r2_log, '.3f'), fit_id=t.fit_id, field='r2_log')} over "
                     f"{t.n_points} grid points ({t.n_excluded} floor-limited left out); a fit without the largest "
                     f"L&middot;M predicts it within {_num(100 * t.extrapolation_error, '.1f')}%.")
    if "free" in fits:
        f = fits["free"]
        lines.append(_slope_sentence(f, "a", "Slope in L (free-exponent fit)", "-1") + ".")
        lines.append(_slope_sentence(f, "b", "Slope in L&middot;M at fixed D (free-exponent fit)", "-1/2") + ".")
    if "output" in fits and "theory" in fits:
        better = "output" if fits["output"].r2_log > fits["theory"].r2_log else "theory"
        lines.append(f"Output form (D/(LM) instead of its square root): R&sup2; (log) {_num(fits['output'].r2_log, '.3f')} "
                     f"vs {_num(fits['theory'].r2_log, '.3f')} for the theory form: the {better} form describes "
                     "this grid better.")
    if report.advice is not None:
        a = report.advice
        last = a["frontier"].iloc[-1]
        lines.append(f"Best error vs parameter budget P (joint fit): exponent {_num(a['exponent'], '.3f')}, 95% CI "
                     f"[{_num(a['ci_low'], '.3f')}, {_num(a['ci_high'], '.3f')}], theory -1/6; at P = {last['P']:.3g} "
                     f"the best shape is L = {int(last['L_int'])}, M = {int(last['M_int'])}, D = {int(last['D_int'])}.")
    for form, why in report.fit_errors.items():
        lines.append(f"The {form} form was not fitted: {html.escape(why)}")
    if report.phase is not None:
        counts = report.phase.counts()
        shown = ", ".join(f"{n} {p}" for p, n in counts.items() if n)
        lines.append(f"Phase diagram over {report.phase.x} and {report.phase.y}: {shown} cells.")
    ref = grid["ref_err"].to_numpy(float)
    floor = f"{np.nanmedian(ref):.3g}" if np.isfinite(ref).any() else "unknown"
    lines.append(f"Reference error floor (median {_ref_name(metric)}): {floor}; {int(grid['floor_limited'].sum())} of "
                 f"{len(grid)} grid points within {FLOOR_FACTOR:g}&times; of it were left out of the fits.")
    c = report.counts
    lines.append(f"Trials: {c['trials']} ({c['seeds']} seeds); diverged: {c['diverged_trials']} trials "
                 f"({c['diverged_seeds']} seeds); failed: {c['failed_trials']} trials.")
    return lines


def _ref_name(metric: str) -> str:
    return {"err_out": "ref_err_out", "err_hidden": "ref_err_hidden"}.get(metric, "reference error")


def _table_html(frame: pd.DataFrame, classes: str = "") -> str:
    return frame.to_html(index=False, classes=classes, border=0, float_format=lambda x: f"{x:.4g}", escape=True)


def _fit_section(result: FitResult) -> str:
    table = result.table()
    rows = "".join(
        f"<tr><td>{html.escape(r.parameter)}</td><td>{_num(r.estimate, '.4g')}</td>"
        f"<td>[{_num(r.ci_low, '.4g')}, {_num(r.ci_high, '.4g')}]</td></tr>" for r in table.itertuples())
    extra = "n/a" if not np.isfinite(result.extrapolation_error) else f"{100 * result.extrapolation_error:.1f}%"
    warn = "".join(f'<p class="warn">Warning: {html.escape(note)}.</p>' for note in result.notes)
    return f"""<div class="fit" data-fit-id="{html.escape(result.fit_id)}">
<h3>{html.escape(result.form)}: err ~ <code>{html.escape(result.expression.text)}</code></h3>
<table class="fit-table"><thead><tr><th>parameter</th><th>estimate</th><th>95% CI</th></tr></thead>
<tbody>{rows}</tbody></table>
<p>R&sup2; (log) {result.r2_log:.3f}; {result.n_points} points fitted, {result.n_excluded} left out;
extrapolation error at the largest L&middot;M: {extra}; {result.n_boot} bootstrap resamples of {result.bootstrap};
fit_id <code>{html.escape(result.fit_id)}</code>.</p>{warn}</div>"""


CHART_TITLES = {
    "error_vs_depth": "Error vs depth L (fitted law, slope -1 guide)",
    "error_vs_units": "Error vs L*M: the hidden width (slope -1/2 guide)",
    "error_heatmap": "Error over (L, M) with the fitted surface's contours",
    "parity": "Measured vs fitted",
    "residuals": "Log residuals of the fit",
    "error_vs_step": "Error along gradient descent",
    "error_vs_params": "Error vs parameters P = L*M*D",
    "phase": "Phase diagram",
}


def build_report(con, sweep: str, out_dir: str | Path, *, metric: str = "err_out", step: int | None = None,
                 where: str | None = None, form: str = "theory", n_boot: int = 200, seed: int = 0,
                 store=None, formats=CHART_FORMATS) -> Report:
    """Fit, chart and write the report of a sweep into ``out_dir``.

    Args:
        con: DuckDB connection with the store's views. sweep: its name.
        out_dir: the folder to write (created; files of the same names are replaced).
        metric, step, where: which errors (see ``grid_errors``); axes other than L, M, D that
            vary are held at ``held_axes`` values for the fits (said in the report).
        form: the fit drawn in the charts (theory by default; any form or expression).
        n_boot, seed: bootstrap resamples and seed of every fit.
        store: a ``store.Store``; when given, every fit's rows are written to it (kind fits).
        formats: which files to write per chart besides index.html.
    Returns:
        A :class:`Report`.
    Raises:
        SweepDataError, FitError, QueryError: no data to report (unknown sweep, metric, filter).
        A form that cannot be fitted (too few points above the floor) is reported, not raised.
    """
    out = Path(out_dir)
    resolve_form(form)  # a bad form is a usage error, before any work
    check_sweep(con, sweep)
    report = Report(path=out / "index.html", counts=status_counts(con, sweep, where))
    report.fixed = held_axes(con, sweep, ("L", "M", "D"), where)
    fit_where = held_where(report.fixed, where)
    grid = grid_errors(con, sweep, metric=metric, step=step, where=fit_where)

    forms = list(REPORT_FORMS)
    if grid["D"].nunique() < 2:
        forms.remove("joint")
        report.fit_errors["joint"] = "the sweep has a single D, so the 1/sqrt(D) term cannot be measured"
    if form not in forms:
        forms.insert(0, form)
    for name in forms:
        try:
            report.fits[name] = fit(grid, name, n_boot=n_boot, seed=seed, where=fit_where)
        except FitError as exc:
            report.fit_errors[name] = str(exc)
    main = report.fits.get(form)  # None when it cannot be fitted: charts then show data only
    if "joint" in report.fits:
        report.advice = shape_advice(report.fits["joint"])

    axes = _phase_axes(con, sweep)
    if axes is not None:
        try:
            report.phase = phase_diagram(con, sweep, *axes, where=where)
        except SweepDataError as exc:
            report.fit_errors["phase diagram"] = str(exc)

    steps = step_errors(con, sweep, metric=metric, where=fit_where)
    c = report.charts
    points = main.grid if main is not None else grid
    c["error_vs_depth"] = _charts.error_vs_depth(points, main)
    c["error_vs_units"] = _charts.error_vs_units(points, main)
    c["error_heatmap"] = _charts.error_heatmap(points, main)
    if main is not None:
        c["parity"] = _charts.parity(main)
        c["residuals"] = _charts.residuals(main)
    c["error_vs_step"] = _charts.error_vs_step(steps)
    c["error_vs_params"] = _charts.error_vs_params(points, report.advice["frontier"] if report.advice else None)
    if report.phase is not None:
        c["phase"] = _charts.phase_chart(report.phase)

    report.summary = _summary(report, grid, metric)
    out.mkdir(parents=True, exist_ok=True)
    specs = {name: chart.to_dict() for name, chart in c.items()}
    for name, spec in specs.items():
        save_chart(spec, out, name, formats=[f for f in formats if f in CHART_FORMATS])
    rows = report.fit_rows()
    rows.to_csv(out / "fits.csv", index=False)
    if store is not None:
        for result in report.fits.values():
            store.write_fit(result.sweep, result.fit_id, result.rows().to_dict("records"))
    page = _page(report, specs, sweep, metric, grid, sweep_config(con, sweep), where)
    report.path.write_text(page, encoding="utf-8")
    return report


def open_sweep(store, sweep: str):
    """A read-only DuckDB connection on a store's views for one sweep (as ``explorer sql``'s:
    a ``--where`` filter cannot read or write files).

    Args:
        store: a ``store.Store`` or a store URI.
    Raises:
        SweepDataError: nothing is stored at ``store``, or it has no sweep of that name (the
            message lists those it has).
    """
    from .options import open_store

    st = open_store(store, sweep=sweep)
    return st, st.connect(sweep=sweep, read_only=True)


def write_report(sweep: str, store="results", out: str | Path = "report", **options) -> Path:
    """``build_report`` on a store: fits are also written to the store. Returns ``out``.

    Args:
        sweep: the sweep name. store: a ``store.Store`` or a URI. out: the report folder.
        options: passed to ``build_report`` (metric, step, where, form, n_boot, seed).
    """
    st, con = open_sweep(store, sweep)
    build_report(con, sweep, out, store=st, **options)
    return Path(out)


def _page(report: Report, specs: dict, sweep: str, metric: str, grid: pd.DataFrame, config: pd.DataFrame, where) -> str:
    summary = "".join(f"<li>{line}</li>" for line in report.summary)
    fixed = ", ".join(f"{k} = {_fmt_value(v)}" for k, v in report.fixed.items())
    slice_note = f"<p>Fits and error charts hold {html.escape(fixed)} (the sweep varies these too).</p>" if fixed else ""
    where_note = f"<p>Filter: <code>{html.escape(where)}</code></p>" if where else ""
    fits = "".join(_fit_section(r) for r in report.fits.values())
    chart_blocks, spec_tags = [], []
    for name, spec in specs.items():
        links = " ".join(f'<a href="{name}.{fmt}">{fmt.upper()}</a>' for fmt in CHART_FORMATS)
        chart_blocks.append(f'<section class="chart"><h3>{html.escape(CHART_TITLES.get(name, name))}</h3>'
                            f'<div data-chart="{name}"></div><p class="links">{links}</p></section>')
        spec_tags.append(f'<script type="application/json" id="spec-{name}">{_script_json(spec)}</script>')
    phase = ""
    if report.phase is not None:
        cells = report.phase.cells
        cols = [report.phase.x, report.phase.y, "phase", "feature_update", "lin_ratio", "output_change", "local_ratio",
                "init_noise", "n_seeds", "n_diverged", "n_failed"]
        rule = report.phase.rule
        phase = (f"<h2>Phase diagram</h2><p>Rule (docs/analysis.md): diverged if any seed diverged or a value is "
                 f"non-finite; trivial if output_change &lt; {rule.trivial_output:g} &times; sqrt(initial loss); lazy if "
                 f"max(feature_update, lin_ratio) / output_change &lt; {rule.lazy_ratio:g}; otherwise mlu. Cells with "
                 f"alpha/sqrt(L M) &ge; {rule.init_noise:g} are marked init noise.</p>"
                 + _table_html(cells[[c for c in cols if c in cells.columns]], "phase-table"))
    advice = ""
    if report.advice is not None:
        frontier = report.advice["frontier"][["P", "L_int", "M_int", "D_int", "err_int", "best_err"]].rename(columns={
            "L_int": "L", "M_int": "M", "D_int": "D", "err_int": "fitted error", "best_err": "continuous optimum error"})
        advice = ("<h2>Shape advice (joint fit)</h2><p>For each budget P = L&middot;M&middot;D, the integer shape "
                  "that minimizes the joint law (L&middot;M&middot;D &le; P).</p>" + _table_html(frontier, "advice-table"))
    counts = pd.DataFrame([report.counts])
    excluded = grid[grid["floor_limited"]][["L", "M", "D", "err", "ref_err"]]
    excluded_html = _table_html(excluded, "excluded-table") if len(excluded) else "<p>No grid point was floor-limited.</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Sweep {html.escape(sweep)}: scaling-law report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0; }} td, th {{ padding: 2px 10px; border-bottom: 1px solid #ddd; text-align: right; }}
.chart {{ margin: 1.5em 0; }} .links a {{ margin-right: 0.8em; }} .warn {{ color: #b00; }} code {{ background: #f4f4f4; }}
#render-errors {{ color: #b00; }}
</style>
<script>{vega_bundle()}</script>
</head><body>
<h1>Sweep <code>{html.escape(sweep)}</code>: scaling-law report</h1>
<pre id="render-errors"></pre>
<h2>Summary</h2><ul id="summary">{summary}</ul>
{slice_note}{where_note}
<h2>Fits of {html.escape(metric)}</h2>
<p>Per grid point, the RMS over seeds of {html.escape(metric)} at the final step; fitted in log space with a soft-L1 loss
from several starts; 95% percentile intervals from a bootstrap that resamples seeds within grid points.</p>
{fits}
<h2>Charts</h2>
{''.join(chart_blocks)}
{phase}
{advice}
<h2>Data quality</h2>
<p>Reference error floor: a grid point whose error is below {FLOOR_FACTOR:g}&times; the reference's own error estimate is
floor-limited and left out of the fits.</p>
{excluded_html}
{_table_html(counts, "counts-table")}
<h2>Sweep configuration</h2>
{_table_html(config, "config-table")}
<p>Fit rows: <a href="fits.csv">fits.csv</a>.</p>
{''.join(spec_tags)}
<script>{_EMBED_JS}</script>
</body></html>
"""


__all__ = ["CHART_FORMATS", "Report", "build_report", "chart_html", "open_sweep", "save_chart", "sweep_config",
           "vega_bundle", "write_report"]
