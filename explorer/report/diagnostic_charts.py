"""Altair charts that look past the fitted law: the error against any other swept axis, the local
slopes against the theory's, the estimates per problem draw, the phase diagram, and the adaptive
loop's chosen points and CIs. A table in, a chart out, no I/O.

- ``error_vs_axis``: err vs any other swept axis (alpha, D, lr, ...), one line per (L, M, D).
- ``local_slopes`` / ``local_slopes_chart``: d log err / d log L between neighbouring L at each
  M, and d log err / d log(L*M) between neighbouring M at each L, against the theory's -1 and -1/2
  (the table of ``explorer.analysis.fitting.local_slopes``).
- ``per_draw_chart``: one fit's estimates per problem draw, with the pooled estimate's CI band.
- ``phase_chart``: the phase diagram (mlu, lazy, trivial, diverged, failed).
- ``adaptive_points`` / ``ci_vs_compute``: the adaptive loop's rounds (from its ``rounds`` log).
"""
from __future__ import annotations


import altair as alt
import numpy as np
import pandas as pd

from ..analysis import fitting
from .charts import HEIGHT, HOLLOW_POINTS, LOG_SCALE, MAX_CURVES, PHASE_COLORS, WIDTH, panel_grid


def phase_chart(diagram, title: str = "phase diagram"):
    """The phase diagram: one coloured cell per (x, y), its local_ratio printed in it, a cross on
    cells marked init noise (alpha_eff sqrt(D/(L M)) >= 1: the initial hidden noise as large as the state)."""
    cells = diagram.cells.copy()
    x, y = diagram.x, diagram.y
    cells["ratio_text"] = cells["local_ratio"].map(lambda r: f"{r:.2g}" if np.isfinite(r) else "")
    cells["note"] = np.where(cells["init_noise_flag"], "init noise", "")
    domain = list(PHASE_COLORS)
    base = alt.Chart(cells).encode(
        x=alt.X(f"{x}:O", title=x, sort="ascending", axis=alt.Axis(labelAngle=0)),
        y=alt.Y(f"{y}:O", title=y, sort="descending"))
    rect = base.mark_rect(stroke="white").encode(
        color=alt.Color("phase:N", scale=alt.Scale(domain=domain, range=[PHASE_COLORS[p] for p in domain]), title="phase"),
        tooltip=[f"{x}:O", f"{y}:O", "phase:N", alt.Tooltip("feature_update:Q", format=".3g"),
                 alt.Tooltip("lin_ratio:Q", format=".3g"), alt.Tooltip("output_change:Q", format=".3g"),
                 alt.Tooltip("local_ratio:Q", format=".3g"), alt.Tooltip("init_noise:Q", format=".2g"),
                 "n_seeds:Q", "n_diverged:Q", "n_failed:Q"])
    text = base.mark_text(color="white", fontSize=11).encode(text="ratio_text:N")
    noise = base.transform_filter(alt.datum.init_noise_flag).mark_point(
        shape="cross", color="black", size=120, filled=True, yOffset=12).encode(tooltip=["note:N"])
    fixed = ", ".join(f"{k}={v}" for k, v in diagram.fixed.items())
    full_title = alt.TitleParams(title, subtitle=[
        "cell text: max(feature_update, lin_ratio) / output_change; cross: init noise, alpha_eff sqrt(D/(LM)) >= 1"]
        + ([f"held at {fixed}"] if fixed else []))
    return alt.layer(rect, text, noise).properties(width=WIDTH, height=HEIGHT, title=full_title)


def _is_log_axis(values: np.ndarray) -> bool:
    """A log scale suits positive values spread over at least a factor 4."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return len(v) > 0 and bool(np.all(v > 0)) and v.max() >= 4 * v.min()


def error_vs_axis(grid: pd.DataFrame, axis: str, title: str | None = None):
    """err (log) vs one swept axis (alpha, D, lr, ...), one line per remaining (L, M, D) point.

    Args:
        grid: a ``grid_errors`` table over L, M, D and ``axis`` (other axes held).
        axis: the column on x (log scale when positive and spread over a factor 4 or more).
    Returns:
        An Altair chart; at most ``MAX_CURVES`` lines, evenly spread over L*M.
    """
    series_cols = [c for c in ("L", "M", "D") if c != axis]
    if "problem_seed" in grid and grid["problem_seed"].nunique() > 1:
        series_cols.append("problem_seed")  # one line per draw, not a zigzag through them
    data = grid[[c for c in dict.fromkeys(["L", "M", "D", axis, "err", "n_seeds"] + series_cols) if c in grid]].copy()
    data = data[np.isfinite(data["err"].astype(float)) & (data["err"] > 0)]
    data["LM"] = data["L"] * data["M"]
    keys = data[series_cols].drop_duplicates()
    if len(keys) > MAX_CURVES:
        keys = keys.assign(LM=keys["L"] * keys["M"]).sort_values(["LM"] + series_cols)
        keys = keys.iloc[np.unique(np.linspace(0, len(keys) - 1, MAX_CURVES).round().astype(int))][series_cols]
    data = data.merge(keys, on=series_cols)
    data["series"] = data[series_cols].astype(str).apply(
        lambda r: " ".join(f"{c}={v}" for c, v in zip(series_cols, r)), axis=1) if len(data) else []
    values = sorted(data[axis].unique().tolist())
    if pd.api.types.is_numeric_dtype(data[axis]):
        x_scale = LOG_SCALE if _is_log_axis(data[axis].to_numpy(float)) else alt.Scale(zero=False, padding=12)
        x_axis = alt.Axis(values=values) if len(values) <= 12 else alt.Axis()  # label every swept value
        x, kind = alt.X(f"{axis}:Q", scale=x_scale, title=axis, axis=x_axis), "Q"
    else:  # a categorical axis (preset, activation): its values side by side
        x, kind = alt.X(f"{axis}:N", title=axis, sort=values, axis=alt.Axis(labelAngle=0)), "N"
    return alt.Chart(data).mark_line(point=HOLLOW_POINTS).encode(
        x=x,
        y=alt.Y("err:Q", scale=LOG_SCALE, title="error"),
        color=alt.Color("LM:Q", scale=alt.Scale(type="log", scheme="viridis"), title="L*M",
                        legend=alt.Legend(type="gradient")),
        detail="series:N",
        tooltip=["series:N", f"{axis}:{kind}", alt.Tooltip("err:Q", format=".3g"), "n_seeds:Q"],
    ).properties(width=WIDTH, height=HEIGHT, title=title or f"error vs {axis}")


SLOPE_THEORY = {"L": -1.0, "LM": -0.5}  # d log err / d log L (Euler term), / d log(L*M) (sampling term)


def local_slopes(grid: pd.DataFrame) -> pd.DataFrame:
    """The local log-log slopes of ``explorer.analysis.fitting.local_slopes`` (one computation for the
    fit's diagnostics and this chart), its ``axis`` column named ``along``.

    - ``along = "L"``: d log err / d log L between neighbouring L at each (M, D);
    - ``along = "LM"``: d log err / d log(L*M) between neighbouring M at each (L, D).

    Args:
        grid: a ``grid_errors`` table (L, M, D, err; optionally floor_limited / used).
    Returns:
        Columns along, L, M, D (the held values; the varied one NaN), x_low, x_high, x (their
        geometric mean), slope, theory (-1 along L, -1/2 along L*M). One row per neighbouring pair.
    """
    return fitting.local_slopes(grid).rename(columns={"axis": "along"})


def local_slopes_chart(slopes: pd.DataFrame, title: str = "local slopes"):
    """Two panels from ``local_slopes``: d log err / d log L vs L (one colour per M) with a -1
    guide, and d log err / d log(L*M) vs L*M (one colour per L) with a -1/2 guide."""
    panels = []
    for along, x_title, color in (("L", "depth L (geometric mid of neighbours)", "M:O"),
                                  ("LM", "units L*M (geometric mid of neighbours)", "L:O")):
        data = slopes[slopes["along"] == along]
        if not len(data):
            continue
        guide = pd.DataFrame({"theory": [SLOPE_THEORY[along]],
                              "guide": [f"theory {'-1' if along == 'L' else '-1/2'}"]})
        y_title = "d log err / d log L" if along == "L" else "d log err / d log(L*M)"
        points = alt.Chart(data).mark_line(point=True).encode(
            x=alt.X("x:Q", scale=LOG_SCALE, title=x_title),
            y=alt.Y("slope:Q", title=y_title),
            color=alt.Color(color, scale=alt.Scale(scheme="viridis")),
            detail="D:O",
            tooltip=["D:Q", "L:Q" if along == "LM" else "M:Q", "x_low:Q", "x_high:Q", alt.Tooltip("slope:Q", format=".3f")])
        rule = alt.Chart(guide).mark_rule(strokeDash=[6, 4], color="black", opacity=0.6).encode(
            y="theory:Q", tooltip=["guide:N"])
        panels.append(alt.layer(points, rule).properties(width=WIDTH, height=HEIGHT,
                                                         title=f"{title}: {y_title}"))
    if not panels:
        return None
    chart = panel_grid(panels)
    return chart.resolve_scale(color="independent") if len(panels) > 1 else chart


def per_draw_chart(per_draw: pd.DataFrame, pooled: pd.DataFrame, title: str = "estimates per problem draw"):
    """One panel per parameter: each problem draw's estimate with its CI (points and bars), and
    the pooled estimate (line) with its CI (band).

    Args:
        per_draw: columns problem_seed, parameter, estimate, ci_low, ci_high.
        pooled: ``FitResult.table()`` (parameter, estimate, ci_low, ci_high).
    """
    panels = []
    for parameter in pd.unique(per_draw["parameter"]):
        draws = per_draw[per_draw["parameter"] == parameter]
        band = pooled[pooled["parameter"] == parameter]
        x = alt.X("problem_seed:O", title="problem seed", axis=alt.Axis(labelAngle=0))
        layers = []
        if len(band):
            layers.append(alt.Chart(band).mark_rect(opacity=0.2, color="steelblue").encode(
                y="ci_low:Q", y2="ci_high:Q", tooltip=[alt.Tooltip("ci_low:Q", format=".3g"),
                                                       alt.Tooltip("ci_high:Q", format=".3g")]))
            layers.append(alt.Chart(band).mark_rule(color="steelblue").encode(
                y="estimate:Q", tooltip=[alt.Tooltip("estimate:Q", format=".3g", title="pooled")]))
        layers.append(alt.Chart(draws).mark_rule(color="black").encode(x=x, y="ci_low:Q", y2="ci_high:Q"))
        layers.append(alt.Chart(draws).mark_point(filled=True, size=60, color="black").encode(
            x=x, y=alt.Y("estimate:Q", title=str(parameter), scale=alt.Scale(zero=False)),
            tooltip=["problem_seed:O", alt.Tooltip("estimate:Q", format=".3g"),
                     alt.Tooltip("ci_low:Q", format=".3g"), alt.Tooltip("ci_high:Q", format=".3g")]))
        panels.append(alt.layer(*layers).properties(width=200, height=HEIGHT, title=f"{title}: {parameter}"))
    return panel_grid(panels, columns=4) if panels else None


def adaptive_points(points: pd.DataFrame, title: str = "adaptive sweep: chosen points by round"):
    """The points an adaptive sweep chose, on the (L, M) values it chose.

    Args:
        points: the ``rounds`` point rows (columns round, L, M, problem_seed, gain_per_cost).
    Returns:
        Grey open squares: every (L, M) pair of the L values and the M values among the chosen
        points (the rounds log holds only the chosen points, not the candidate grid, which may
        be larger); filled circles sized by the number of problem draws chosen there (a legend of
        the integer counts that occur), coloured by the round that first chose the point.
    """
    chosen = (points.groupby(["L", "M"], as_index=False)
              .agg(round=("round", "min"), draws=("problem_seed", "nunique"), trials=("problem_seed", "size")))
    grid = pd.MultiIndex.from_product([sorted(points["L"].unique()), sorted(points["M"].unique())],
                                      names=["L", "M"]).to_frame(index=False)
    counts = sorted(int(v) for v in chosen["draws"].unique())
    x = alt.X("L:Q", scale=alt.Scale(type="log", base=2), title="depth L")
    y = alt.Y("M:Q", scale=alt.Scale(type="log", base=2), title="width M")
    back = alt.Chart(grid).mark_square(size=220, filled=False, color="lightgray").encode(x=x, y=y)
    front = alt.Chart(chosen).mark_circle(opacity=0.9).encode(
        x=x, y=y, color=alt.Color("round:O", title="first round", scale=alt.Scale(scheme="viridis")),
        size=alt.Size("draws:Q", title="problem draws", legend=alt.Legend(values=counts, format="d"),
                      scale=alt.Scale(domain=[min(counts), max(counts)] if len(counts) > 1 else [0, counts[0]],
                                      range=[40, 220])),
        tooltip=["L:Q", "M:Q", "round:O", "draws:Q", "trials:Q"])
    return alt.layer(back, front).properties(width=WIDTH, height=HEIGHT, title=title)


def ci_vs_compute(targets: pd.DataFrame, title: str = "adaptive sweep: CI half-width vs compute spent"):
    """Each target's 95% CI half-width after every round against the compute spent.

    Args:
        targets: the ``rounds`` target rows of done rounds (columns round, parameter, ci_low,
            ci_high, halfwidth, spent_cost, full_cost; optional half_width, the half-width in the
            stopping rule's units, relative for positive constants, else (ci_high - ci_low) / 2).
    Returns:
        One line per parameter over the fraction of the full grid's cost (L*M*D*seeds), log
        half-width, and a dashed rule at the target half-width.
    """
    half = targets["half_width"] if "half_width" in targets else (targets["ci_high"] - targets["ci_low"]) / 2
    frame = targets.assign(half_width=half, spent=targets["spent_cost"] / targets["full_cost"])
    frame = frame[np.isfinite(frame["half_width"]) & (frame["half_width"] > 0)]
    x = alt.X("spent:Q", title="compute spent (fraction of the full grid, L*M*D*seeds)", axis=alt.Axis(format="%"))
    lines = alt.Chart(frame).mark_line(point=True).encode(
        x=x, y=alt.Y("half_width:Q", scale=alt.Scale(type="log"),
                     title="95% CI half-width (constants: relative)" if "half_width" in targets else "95% CI half-width"),
        color=alt.Color("parameter:N"),
        tooltip=["round:O", "parameter:N", alt.Tooltip("half_width:Q", format=".3g"), alt.Tooltip("spent:Q", format=".1%")])
    goal = alt.Chart(pd.DataFrame({"halfwidth": [float(targets["halfwidth"].iloc[0])]})).mark_rule(
        strokeDash=[4, 4], color="black").encode(y="halfwidth:Q")
    return alt.layer(lines, goal).properties(width=WIDTH, height=HEIGHT, title=title)
