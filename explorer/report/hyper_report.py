"""The report's hyperparameter section (a sweep with an lr or alpha axis): the metric against the
axis, one line per L (or M) and a panel per preset, with each slice's located optimum and its
interval; the optimum against L with the fitted transfer law and its band; and, where the rows hold
it and the sweep varies M or L, the coordinate check's sizes against M (or L) per depth bin
(``explorer.analysis.hyper``). Tables in, Altair charts out, no I/O."""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from .charts import HEIGHT, WIDTH
from ..analysis.hyper import COORD_COLUMNS, Runs, levels, optima, transfer
from ..errors import UsageError

HYPER_AXES = ("lr", "alpha")
_LOG = alt.Scale(type="log", nice=False, padding=12)
TITLES = {
    "hyper_curves": "Hyperparameters: the metric (geometric mean over runs) against the axis, one line per slice "
                    "(a diverged run removes its point); the black marks are each slice's located optimum with its "
                    "95% interval",
    "hyper_transfer": "Hyperparameters: the optimum against depth L per group, with the fitted transfer law "
                      "log axis* = c + gamma log L and its 95% band (edge slices are left out)",
    "hyper_coordcheck": "Coordinate check at each trial's last step: the geometric mean over runs of the RMS per "
                        "quarter of depth (b0..b3) against width M (or depth L), one line per L (or M), a row per "
                        "preset; flat in M is muP's Theta(1), `explorer coordcheck` fits the exponents",
}


def _label(runs: Runs, row) -> str:
    return ", ".join(f"{c}={row[c]}" for c in runs.slices.columns if c not in ("L", "M")) or "all"


def curves_chart(found) -> alt.Chart:
    """The metric against the axis per slice, and the optima with their intervals."""
    runs = found.runs
    flat = runs.values.reshape(runs.values.shape[0], -1, runs.values.shape[-1])
    level = np.exp(levels(flat, log_scale=True))
    rows, marks = [], []
    for j, row in runs.slices.reset_index(drop=True).iterrows():
        line = ", ".join(f"{c}={row[c]}" for c in ("L", "M") if c in runs.slices.columns) or "all"
        for x, y in zip(runs.grid, level[j]):
            if np.isfinite(y):
                rows.append({"axis": x, "metric": y, "slice": line, "group": _label(runs, row)})
        t = found.table.iloc[j]
        if np.isfinite(float(t["optimum"])):
            at = float(np.nanmin(np.where(np.isfinite(level[j]), level[j], np.nan)))
            marks.append({"axis": float(t["optimum"]), "low": float(t["ci_low"]), "high": float(t["ci_high"]),
                          "metric": at, "slice": line, "group": _label(runs, row)})
    data, opt = pd.DataFrame(rows), pd.DataFrame(marks, columns=["axis", "low", "high", "metric", "slice", "group"])
    x = alt.X("axis:Q", scale=_LOG, title=runs.axis)
    base = alt.Chart(data).mark_line(point=True).encode(x, alt.Y("metric:Q", scale=_LOG, title=runs.metric),
                                                         color=alt.Color("slice:N"), tooltip=list(data.columns))
    # plain rules, not errorbar marks: an errorbar aggregates per facet, and a facet without a
    # located optimum would give its aggregate an infinite extent (a console warning in the page)
    bars = alt.Chart(opt).mark_rule(color="black").encode(alt.X("low:Q", scale=_LOG), alt.X2("high:Q"),
                                                          alt.Y("metric:Q"))
    dots = alt.Chart(opt).mark_point(color="black", shape="diamond", size=80).encode(
        alt.X("axis:Q", scale=_LOG), alt.Y("metric:Q"), tooltip=list(opt.columns))
    layers = (base, bars, dots) if len(opt) else (base,)
    return alt.layer(*layers, data=data).properties(width=WIDTH // 2, height=HEIGHT).facet(
        column=alt.Column("group:N", title=None)) if len(data) else base


def transfer_chart(law) -> alt.Chart | None:
    """The optima against L per group, the fitted law and its band (quantiles of the resamples)."""
    table, runs = law.optima.table, law.optima.runs
    points, lines = [], []
    for fit in law.fits:
        for j in fit.slices:
            t = table.iloc[j]
            points.append({"L": float(t["L"]), "optimum": float(t["optimum"]), "low": float(t["ci_low"]),
                           "high": float(t["ci_high"]), "group": fit.label})
        if not fit.measured:
            continue
        Ls = np.geomspace(table["L"].min(), table["L"].max(), 30)
        design = np.column_stack([np.ones_like(Ls), np.log(Ls)])
        reps = fit.outer[np.isfinite(fit.outer).all(axis=1)] @ design.T
        low, high = (np.quantile(reps, q, axis=0) if len(reps) > 1 else design @ fit.estimate for q in (0.025, 0.975))
        for L, mid, lo, hi in zip(Ls, design @ fit.estimate, low, high):
            lines.append({"L": L, "law": np.exp(mid), "low": np.exp(lo), "high": np.exp(hi), "group": fit.label})
    if not points:
        return None
    pts, law_frame = pd.DataFrame(points), pd.DataFrame(lines, columns=["L", "law", "low", "high", "group"])
    x = alt.X("L:Q", scale=_LOG, title="depth L")
    y = alt.Y("optimum:Q", scale=_LOG, title=f"{runs.axis}*")
    located = pts[np.isfinite(pts["optimum"]) & np.isfinite(pts["low"]) & np.isfinite(pts["high"])]
    layers = [alt.Chart(pts).mark_point(filled=True).encode(x, y, color="group:N", tooltip=list(pts.columns))]
    if len(located):  # an optimum at a grid edge has no interval to draw
        layers.append(alt.Chart(located).mark_rule().encode(x, alt.Y("low:Q", scale=_LOG), alt.Y2("high:Q"),
                                                            color="group:N"))
    if len(law_frame):
        layers += [alt.Chart(law_frame).mark_area(opacity=0.2).encode(x, alt.Y("low:Q", scale=_LOG), alt.Y2("high:Q"),
                                                                      color="group:N"),
                   alt.Chart(law_frame).mark_line().encode(x, alt.Y("law:Q", scale=_LOG), color="group:N")]
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT)


def coordcheck_charts(con, sweep: str, varying, where: str | None = None) -> dict:
    """name -> chart per kind (update, branch): the sizes against M (or L when M is fixed) per
    depth bin; none when the sweep varies neither or its rows hold no coordinate check."""
    from ..analysis.hyper import coord_sizes

    if "M" not in varying and "L" not in varying:
        return {}
    try:
        sizes = coord_sizes(con, sweep, where=where)
    except UsageError:
        return {}
    table = sizes.table()
    x, line = ("M", "L") if "M" in sizes.axes else ("L", "M")
    table["group"] = [", ".join(f"{c}={r[c]}" for c in sizes.groups) or "all" for _, r in table.iterrows()]
    out = {}
    for kind in ("update", "branch"):
        columns = [c for c in COORD_COLUMNS if c.startswith(f"coord_{kind}_") and c in table]
        data = table.melt(id_vars=["group", "M", "L"], value_vars=columns, var_name="bin", value_name="size")
        data["bin"] = data["bin"].str.rsplit("_", n=1).str[-1]
        data = data[np.isfinite(data["size"].astype(float))]
        if not len(data):
            continue
        out[f"hyper_coordcheck_{kind}"] = alt.Chart(data).mark_line(point=True).encode(
            alt.X(f"{x}:Q", scale=_LOG, title=x), alt.Y("size:Q", scale=_LOG, title=f"{kind} RMS"),
            color=alt.Color(f"{line}:N"), tooltip=list(data.columns)).properties(
            width=WIDTH // 4, height=HEIGHT // 2).facet(column=alt.Column("bin:N", title=None),
                                                        row=alt.Row("group:N", title=None))
    return out


def hyper_charts(con, sweep: str, varying, where: str | None = None, n_boot: int = 200, seed: int = 0) -> dict:
    """name -> chart for each of lr and alpha the sweep varies (none otherwise, or when the axis
    cannot be read: a report shows what it can), and the coordinate check's charts."""
    from ..analysis.hyper import axis_runs

    out = {}
    for axis in (a for a in HYPER_AXES if a in varying):
        found = None
        for metric in ("test_loss", "loss"):  # the held-out loss where the sweep holds samples out
            try:
                found = optima(axis_runs(con, sweep, axis, metric=metric, where=where), n_boot=n_boot, seed=seed)
                break
            except UsageError:
                continue
        if found is None:
            continue
        out[f"hyper_curves_{axis}"] = curves_chart(found)
        if "L" in found.slice_columns:
            chart = transfer_chart(transfer(found, ("L",), drop_edges=True))
            if chart is not None:
                out[f"hyper_transfer_{axis}"] = chart
    out.update(coordcheck_charts(con, sweep, varying, where))
    return out


def chart_title(name: str) -> str:
    """The title of a chart of this section (``hyper_curves_lr`` -> the curves' title, for lr)."""
    key = "_".join(name.split("_")[:2])
    return TITLES.get(key, name) + f" ({name.split('_', 2)[-1]})"


__all__ = ["HYPER_AXES", "TITLES", "chart_title", "coordcheck_charts", "curves_chart", "hyper_charts",
           "transfer_chart"]
