"""The report's comparison section (``explorer report --sweep A --compare B``): the table of a
``Comparison`` and its charts, a table in and Altair charts out, no I/O.

- ``compare_points``: one chart per axis (L, then L*M): both sweeps' measured errors (RMS over
  the shared seeds, per draw and point) and the law each fit implies,
  sqrt((c1 L^-a)^2 + (c2 (D/(LM))^b)^2), one line per sweep and per M (per L on the L*M chart).
- ``compare_differences``: each parameter's difference with its paired and unpaired 95 %
  intervals, against the line of no change (0 for exponents; log B/A for c1, c2).
"""
from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd

from .charts import HEIGHT, WIDTH
from ..analysis.compare import RATIO_PARAMETERS
from ..formatting import fmt

_LOG = alt.Scale(type="log", nice=False, padding=12)
TITLES = {
    "compare_vs_depth": "Comparison: both sweeps' errors vs depth L (points: measured on the shared draws and seeds; "
                        "lines: each sweep's decomposed fit, one per M)",
    "compare_vs_units": "Comparison: both sweeps' errors vs L*M (lines: each sweep's decomposed fit, one per L)",
    "compare_differences": "Comparison: each parameter's difference B - A (log B/A for c1, c2) with its paired "
                           "(black) and unpaired (grey) 95% intervals; the dashed line is no change",
}


def measured_points(comparison) -> pd.DataFrame:
    """Per side, draw and point: sweep, L, M, D, L*M and err (RMS over the shared seeds)."""
    frames = []
    for side, frame in ((comparison.a, comparison.paired.a), (comparison.b, comparison.paired.b)):
        err = [math.sqrt(max(float(np.trace(g)) / len(g), 0.0)) for g in frame["gram"]]
        frames.append(pd.DataFrame({"sweep": side.label, "L": frame["L"].to_numpy(float),
                                    "M": frame["M"].to_numpy(float), "D": frame["D"].to_numpy(float), "err": err}))
    out = pd.concat(frames, ignore_index=True)
    out["LM"] = out["L"] * out["M"]
    return out


def fitted_lines(comparison, points: pd.DataFrame) -> pd.DataFrame:
    """Each side's fitted law at every (L, M, D) of the points (NaN terms left out)."""
    rows = comparison.rows.set_index("parameter")
    out = []
    for side, column in ((comparison.a, "estimate_a"), (comparison.b, "estimate_b")):
        c1, a, c2, b = (float(rows.loc[p, column]) for p in ("c1", "a", "c2", "b"))
        grid = points[["L", "M", "D"]].drop_duplicates()
        with np.errstate(all="ignore"):
            bias = np.nan_to_num(c1 * grid["L"] ** (-a))
            fluct = np.nan_to_num(c2 * (grid["D"] / (grid["L"] * grid["M"])) ** b)
        out.append(grid.assign(sweep=side.label, fitted=np.sqrt(bias**2 + fluct**2), LM=grid["L"] * grid["M"]))
    lines = pd.concat(out, ignore_index=True)
    return lines[lines["fitted"] > 0]


def compare_points(comparison, axis: str):
    """Both sweeps' points and fitted laws against ``axis`` ("L" or "LM")."""
    points = measured_points(comparison)
    lines = fitted_lines(comparison, points)
    title, detail = ("depth L", "M") if axis == "L" else ("L*M", "L")
    x = alt.X(f"{axis}:Q", scale=_LOG, title=title)
    colour = alt.Color("sweep:N", title="sweep")
    dots = alt.Chart(points).mark_point(filled=True, opacity=0.6).encode(
        x=x, y=alt.Y("err:Q", scale=_LOG, title="error (RMS over the shared seeds)"), color=colour,
        tooltip=["sweep:N", "L:Q", "M:Q", "D:Q", alt.Tooltip("err:Q", format=".3g")])
    law = alt.Chart(lines.sort_values(axis)).mark_line().encode(
        x=x, y="fitted:Q", color=colour, detail=f"{detail}:N",
        tooltip=["sweep:N", "L:Q", "M:Q", alt.Tooltip("fitted:Q", format=".3g")])
    return alt.layer(dots, law).properties(width=WIDTH, height=HEIGHT)


def difference_frame(comparison) -> pd.DataFrame:
    """Per parameter: the difference and both intervals in the fit's parametrization (log of the
    ratio for c1, c2), and the label shown."""
    rows = []
    for row in comparison.rows.itertuples():
        ratio = row.parameter in RATIO_PARAMETERS
        to = (lambda v: math.log(v) if v > 0 else math.nan) if ratio else float
        values = [to(v) if np.isfinite(v) else math.nan for v in
                  (row.difference, row.ci_low, row.ci_high, row.ci_low_unpaired, row.ci_high_unpaired)]
        rows.append({"parameter": f"{row.parameter} (log B/A)" if ratio else f"{row.parameter} (B - A)",
                     "difference": values[0], "paired_low": values[1], "paired_high": values[2],
                     "unpaired_low": values[3], "unpaired_high": values[4], "verdict": row.verdict})
    return pd.DataFrame(rows)


def compare_differences(comparison):
    """The per-parameter differences with their paired and unpaired intervals."""
    frame = difference_frame(comparison)
    frame = frame[np.isfinite(frame["difference"])]
    if frame.empty:
        return None
    y = alt.Y("parameter:N", title=None)
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(strokeDash=[6, 4], color="black").encode(x="x:Q")
    unpaired = alt.Chart(frame).mark_rule(color="#bbbbbb", strokeWidth=8).encode(
        y=y, x=alt.X("unpaired_low:Q", title="difference (log ratio for c1, c2)"), x2="unpaired_high:Q")
    paired = alt.Chart(frame).mark_rule(color="black", strokeWidth=3).encode(y=y, x="paired_low:Q", x2="paired_high:Q")
    dot = alt.Chart(frame).mark_point(filled=True, size=70, color="black").encode(
        y=y, x="difference:Q", tooltip=["parameter:N", alt.Tooltip("difference:Q", format=".3g"),
                                        alt.Tooltip("paired_low:Q", format=".3g"),
                                        alt.Tooltip("paired_high:Q", format=".3g"), "verdict:N"])
    return alt.layer(unpaired, paired, zero, dot).properties(width=WIDTH * 1.5, height=30 * len(frame) + 40)


def comparison_charts(comparison) -> dict:
    """name -> chart, for the report."""
    charts = {"compare_vs_depth": compare_points(comparison, "L"), "compare_vs_units": compare_points(comparison, "LM")}
    differences = compare_differences(comparison)
    if differences is not None:
        charts["compare_differences"] = differences
    return charts


def comparison_table(comparison) -> pd.DataFrame:
    """The section's table: per parameter A, B, the difference, both intervals and the verdict (text)."""
    out = []
    for row in comparison.rows.itertuples():
        shown = "identical" if row.verdict == "identical" else None
        out.append({"parameter": row.parameter, "A": fmt(row.estimate_a, missing="nan"),
                    "B": fmt(row.estimate_b, missing="nan"),
                    "difference": ("B/A " if row.parameter in RATIO_PARAMETERS else "B-A ") + fmt(row.difference, missing="nan"),
                    "paired 95% CI": shown or f"[{fmt(row.ci_low)}, {fmt(row.ci_high)}]",
                    "unpaired 95% CI": shown or f"[{fmt(row.ci_low_unpaired)}, {fmt(row.ci_high_unpaired)}]",
                    "verdict": row.verdict})
    return pd.DataFrame(out)


__all__ = ["TITLES", "compare_differences", "compare_points", "comparison_charts", "comparison_table",
           "difference_frame", "fitted_lines", "measured_points"]
