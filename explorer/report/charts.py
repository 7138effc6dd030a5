"""Altair charts of a sweep's errors and fits: a table in, a chart out, no I/O (the charts of
other axes, slopes, draws, the phase diagram and the adaptive loop are in ``diagnostic_charts``).

Every function takes the small aggregated tables of ``explorer.analysis.fitting`` / ``explorer.analysis.phase``
(one row per grid point, per step or per cell, never raw metric rows), so no chart comes near
Altair's row limit. Axes are logarithmic wherever the theory is a power law, and dashed guide
lines show the slopes the theory predicts (docs/model.md section 6):

- ``bias_vs_depth``: the seeds' bias (the seed-mean's distance from the reference) vs L, one
  colour per M, the decomposed fit's c1 L^-a, or c1 D^h L^-a where it fitted h (when measured),
  a slope -1 guide.
- ``fluct_vs_units``: the seeds' fluctuation vs L*M, one colour per M, the decomposed fit's
  c2 (D/(LM))^b, or c2 D^g (LM)^-b where it fitted g (when measured), a slope -1/2 guide.
- ``error_vs_depth``: err vs L, one line per M, the fitted law, a slope -1 guide.

Every fitted line carries its 95% band (``FitResult.band``: from the fit's bootstrap samples,
with the quantile of its intervals).
- ``error_vs_units``: err vs L*M ("hidden width": every (L, M) on one curve), a slope -1/2 guide.
- ``error_heatmap``: err over (L, M), one panel per D, with the fitted surface's contours.
- ``parity`` and ``residuals``: measured vs fitted, and log residuals vs L*M.
- ``error_vs_step``: err along gradient descent, one line per grid point.
- ``error_vs_params``: err vs P = L*M*D, with the best-shape frontier of a joint fit (P^-1/6).
"""
from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd

from ..analysis.fitting import FitResult
from ..analysis.laws import parse_expression

WIDTH, HEIGHT = 320, 240
MAX_CURVES = 60  # error_vs_step draws at most this many grid points
PHASE_COLORS = {"mlu": "#1b9e77", "lazy": "#7570b3", "trivial": "#bdbdbd", "diverged": "#d95f02", "failed": "#444444"}
LOG_SCALE = alt.Scale(type="log", nice=False, padding=12)
# The points on lines coloured by a continuous field: hollow, so that only the stroke carries the
# colour. A point filled by the colour field makes Vega draw a symbol legend (one entry per tick of
# the log scale, cut off after 25 as "...N entries") instead of the gradient.
HOLLOW_POINTS = alt.OverlayMarkDef(filled=False, fill="white")
# The decomposed fit's terms as it fits them: tied to D/(LM) on one D, with a D exponent per term
# (g, h) where the slice varies D (explorer.analysis.decomposed); h only where the bias's is measured.
BIAS_TERM, BIAS_TERM_WITH_D = "c1*L**(-a)", "c1*D**h*L**(-a)"
FLUCT_TERM, FLUCT_TERM_WITH_D = "c2*(D/(L*M))**b", "c2*D**g*(L*M)**(-b)"


def _guide(x_values: np.ndarray, anchor_x: float, anchor_y: float, slope: float) -> pd.DataFrame:
    """A straight line of the given log-log slope through (anchor_x, anchor_y), over x_values' range."""
    lo, hi = float(np.min(x_values)), float(np.max(x_values))
    xs = np.array([lo, hi])
    return pd.DataFrame({"x": xs, "y": anchor_y * (xs / anchor_x) ** slope})


def _guide_layer(data: pd.DataFrame, label: str) -> alt.Chart:
    data = data.assign(guide=label)
    return alt.Chart(data).mark_line(strokeDash=[6, 4], color="black", opacity=0.6).encode(
        x="x:Q", y="y:Q", detail="guide:N", tooltip=alt.Tooltip("guide:N", title="guide"))


def panel_grid(charts: list, columns: int = 3):
    """One chart, or a grid of panels (e.g. one per D), each with its own data."""
    if len(charts) == 1:
        return charts[0]
    rows = [alt.hconcat(*charts[i: i + columns]) for i in range(0, len(charts), columns)]
    return rows[0] if len(rows) == 1 else alt.vconcat(*rows)


def _d_values(grid: pd.DataFrame) -> list:
    return sorted(grid["D"].unique())


def _used(grid: pd.DataFrame) -> pd.Series:
    return grid["used"] if "used" in grid else ~grid.get("floor_limited", pd.Series(False, index=grid.index))


def _points(grid: pd.DataFrame) -> pd.DataFrame:
    cols = ["L", "M", "D", "err", "n_seeds"] + [c for c in ("ref_err",) if c in grid]
    data = grid[cols].copy()
    data["LM"] = data["L"] * data["M"]
    data["P"] = data["LM"] * data["D"]
    data["point"] = np.where(_used(grid), "fitted", "floor-limited")
    return data


def _term_points(grid: pd.DataFrame, term: str) -> pd.DataFrame:
    """A decomposed fit's term per (L, M, D), averaged over draws in squares (as it is fitted),
    with whether the fit used it."""
    rows = grid[np.isfinite(grid[term].to_numpy(float))]
    frame = rows.assign(sq=rows[term] ** 2).groupby(["L", "M", "D"], as_index=False).agg(
        sq=("sq", "mean"), used=(f"{term}_used", "any"))
    frame[term] = np.sqrt(frame["sq"])
    frame["LM"] = frame["L"] * frame["M"]
    frame["point"] = np.where(frame["used"], "fitted", "left out")
    return frame.drop(columns="sq")


def band_frame(fit: FitResult, L, M, D, law=None) -> dict | None:
    """``band_low``, ``band_high``: the 95% band of the fitted law (or of the term ``law``) at
    the points (``FitResult.band``); None when the fit has no samples."""
    band = fit.band(L, M, D, law)
    if band is None or not (np.isfinite(band[0]).any() and np.isfinite(band[1]).any()):
        return None
    return {"band_low": band[0], "band_high": band[1]}


def band_layer(fit: FitResult, curve: pd.DataFrame, x: str, L, M, D, law=None) -> list:
    """The 95% band of a fitted line over ``curve``'s ``x`` (none without samples)."""
    bands = band_frame(fit, L, M, D, law)
    if bands is None:
        return []
    return [alt.Chart(curve.drop(columns="fitted").assign(**bands)).mark_area(color="#d95f02", opacity=0.2).encode(
        x=f"{x}:Q", y="band_low:Q", y2="band_high:Q",
        tooltip=[alt.Tooltip("band_low:Q", format=".3g", title="95% band low"),
                 alt.Tooltip("band_high:Q", format=".3g", title="95% band high")])]


def bias_vs_depth(fit: FitResult, title: str = "bias vs depth L"):
    """The seeds' bias vs L (log-log), one colour per M, the fitted c1 L^-a (c1 D^h L^-a where the
    fit has h) and a slope -1 guide (a decomposed fit's grid: columns bias, bias_used)."""
    grid = fit.grid
    panels = []
    for D in _d_values(grid):
        points = _term_points(grid[grid["D"] == D], "bias")
        if points.empty:
            continue
        color = alt.Color("M:O", scale=alt.Scale(scheme="viridis"), title="M")
        layers = [alt.Chart(points).mark_point(filled=True, size=50).encode(
            x=alt.X("L:Q", scale=LOG_SCALE, title="depth L"), y=alt.Y("bias:Q", scale=LOG_SCALE, title="bias"),
            color=color, shape=alt.Shape("point:N", title="point"),
            tooltip=["L:Q", "M:Q", "D:Q", alt.Tooltip("bias:Q", format=".3g"), "point:N"])]
        Ls = np.geomspace(points["L"].min(), points["L"].max(), 20)
        if fit.is_measured("a") and fit.is_measured("c1"):
            term = parse_expression(BIAS_TERM_WITH_D if fit.is_measured("h") else BIAS_TERM)
            law = pd.DataFrame({"L": Ls, "fitted": term(fit.estimate, Ls, np.ones_like(Ls), np.full_like(Ls, D))})
            layers[1:1] = band_layer(fit, law, "L", Ls, np.ones_like(Ls), np.full_like(Ls, D), term)
            layers.append(alt.Chart(law).mark_line(color="#d95f02").encode(x="L:Q", y="fitted:Q"))
        anchor = points.sort_values(["M", "L"], ascending=[False, True]).iloc[0]
        layers.append(_guide_layer(_guide(points["L"].to_numpy(), anchor["L"], anchor["bias"] * 1.3, -1.0), "slope -1"))
        panels.append(alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=f"{title} (D={D})"))
    return panel_grid(panels) if panels else None


def fluct_vs_units(fit: FitResult, title: str = "fluctuation vs L*M"):
    """The seeds' fluctuation vs L*M (log-log), one colour per M, the fitted c2 (D/(LM))^b (c2 D^g
    (LM)^-b where the fit has g) and a slope -1/2 guide (a decomposed fit's grid: columns fluct,
    fluct_used)."""
    grid = fit.grid
    panels = []
    for D in _d_values(grid):
        points = _term_points(grid[grid["D"] == D], "fluct")
        if points.empty:
            continue
        color = alt.Color("M:O", scale=alt.Scale(scheme="viridis"), title="M")
        layers = [alt.Chart(points).mark_point(filled=True, size=50).encode(
            x=alt.X("LM:Q", scale=LOG_SCALE, title="units L*M"), y=alt.Y("fluct:Q", scale=LOG_SCALE, title="fluctuation"),
            color=color, tooltip=["L:Q", "M:Q", "D:Q", alt.Tooltip("fluct:Q", format=".3g"), "point:N"])]
        LM = np.geomspace(points["LM"].min(), points["LM"].max(), 20)
        if fit.is_measured("b") and fit.is_measured("c2"):
            term = parse_expression(FLUCT_TERM_WITH_D if fit.is_measured("g") else FLUCT_TERM)
            law = pd.DataFrame({"LM": LM, "fitted": term(fit.estimate, LM, np.ones_like(LM), np.full_like(LM, D))})
            layers[1:1] = band_layer(fit, law, "LM", LM, np.ones_like(LM), np.full_like(LM, D), term)
            layers.append(alt.Chart(law).mark_line(color="#d95f02").encode(x="LM:Q", y="fitted:Q"))
        anchor = points.sort_values("LM").iloc[0]
        layers.append(_guide_layer(_guide(points["LM"].to_numpy(), anchor["LM"], anchor["fluct"] * 1.3, -0.5),
                                   "slope -1/2"))
        panels.append(alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=f"{title} (D={D})"))
    return panel_grid(panels) if panels else None


def error_vs_depth(grid: pd.DataFrame, fit: FitResult | None = None, title: str = "error vs depth L"):
    """err vs L (log-log), one colour per M, the fitted law as lines, and a slope -1 guide.

    Args:
        grid: ``grid_errors`` (or ``FitResult.grid``) table. fit: draws the law when given.
    Returns:
        An Altair chart (panels per D when the grid has several D).
    """
    panels = []
    for D in _d_values(grid):
        sub = grid[grid["D"] == D]
        points = _points(sub)
        color = alt.Color("M:O", scale=alt.Scale(scheme="viridis"), title="M")
        layers = [alt.Chart(points).mark_point(filled=True, size=50).encode(
            x=alt.X("L:Q", scale=LOG_SCALE, title="depth L"),
            y=alt.Y("err:Q", scale=LOG_SCALE, title="error"),
            color=color, shape=alt.Shape("point:N", title="point"),
            tooltip=["L:Q", "M:Q", "D:Q", alt.Tooltip("err:Q", format=".3g"), "n_seeds:Q", "point:N"])]
        if fit is not None:
            Ls = np.geomspace(sub["L"].min(), sub["L"].max(), 40)
            curves = pd.DataFrame([(L, M, float(fit.predict(L, M, D))) for M in sorted(sub["M"].unique()) for L in Ls],
                                  columns=["L", "M", "fitted"])
            bands = band_frame(fit, curves["L"].to_numpy(float), curves["M"].to_numpy(float),
                               np.full(len(curves), float(D)))
            if bands is not None:
                layers.insert(1, alt.Chart(curves[["L", "M"]].assign(**bands)).mark_area(opacity=0.15).encode(
                    x="L:Q", y="band_low:Q", y2="band_high:Q", color=color, detail="M:O"))
            layers.append(alt.Chart(curves).mark_line(opacity=0.8).encode(
                x="L:Q", y="fitted:Q", color=color, detail="M:O"))
        anchor = sub.loc[sub["M"] == sub["M"].max()].sort_values("L").iloc[0]
        layers.append(_guide_layer(_guide(sub["L"].to_numpy(), anchor["L"], anchor["err"] * 1.3, -1.0), "slope -1"))
        panels.append(alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=f"{title} (D={D})"))
    return panel_grid(panels)


def error_vs_units(grid: pd.DataFrame, fit: FitResult | None = None, title: str = "error vs L*M (hidden width)"):
    """err vs L*M (log-log): every (L, M) point, coloured by M, shaped by L, a slope -1/2 guide.

    When the sampling term dominates, points of every depth fall on one curve: depth begets width.
    """
    panels = []
    for D in _d_values(grid):
        sub = grid[grid["D"] == D]
        points = _points(sub)
        layers = [alt.Chart(points).mark_point(filled=True, size=50).encode(
            x=alt.X("LM:Q", scale=LOG_SCALE, title="units L*M"),
            y=alt.Y("err:Q", scale=LOG_SCALE, title="error"),
            color=alt.Color("M:O", scale=alt.Scale(scheme="viridis"), title="M"),
            shape=alt.Shape("L:N", title="L", sort="ascending"),
            tooltip=["L:Q", "M:Q", "LM:Q", alt.Tooltip("err:Q", format=".3g"), "point:N"])]
        if fit is not None:
            fitted = points.assign(fitted=fit.predict(points["L"].to_numpy(float), points["M"].to_numpy(float), float(D)))
            layers.append(alt.Chart(fitted).mark_tick(color="black", opacity=0.5, thickness=1).encode(
                x="LM:Q", y="fitted:Q", tooltip=[alt.Tooltip("fitted:Q", format=".3g")]))
        LM = points["LM"].to_numpy(float)
        anchor = points.loc[points["LM"].idxmin()]
        layers.append(_guide_layer(_guide(LM, anchor["LM"], anchor["err"] * 1.3, -0.5), "slope -1/2"))
        panels.append(alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=f"{title} (D={D})"))
    return panel_grid(panels)


def _edges(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cell edges in log space around sorted positive values (geometric midpoints)."""
    v = np.sort(np.unique(values.astype(float)))
    if len(v) == 1:
        return v / 1.5, v * 1.5
    mids = np.sqrt(v[1:] * v[:-1])
    lo = np.concatenate([[v[0] ** 2 / mids[0]], mids])
    hi = np.concatenate([mids, [v[-1] ** 2 / mids[-1]]])
    return lo, hi


def contour_segments(fn, x_range: tuple[float, float], y_range: tuple[float, float], levels, n: int = 40) -> pd.DataFrame:
    """Marching squares on a log-spaced n x n grid: the level sets of fn(x, y) as line segments.

    Returns:
        Columns x, y, x2, y2, level: one row per segment (drawn with mark_rule).
    """
    xs = np.geomspace(*x_range, n)
    ys = np.geomspace(*y_range, n)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    with np.errstate(all="ignore"):
        Z = np.log(fn(X, Y))
    lx, ly = np.log(xs), np.log(ys)
    rows = []
    for level in levels:
        z = Z - math.log(level)
        for i in range(n - 1):
            for j in range(n - 1):
                corners = [(lx[i], ly[j], z[i, j]), (lx[i + 1], ly[j], z[i + 1, j]),
                           (lx[i + 1], ly[j + 1], z[i + 1, j + 1]), (lx[i], ly[j + 1], z[i, j + 1])]
                if not all(np.isfinite(c[2]) for c in corners):
                    continue
                crossings = []
                for k in range(4):
                    (x0, y0, z0), (x1, y1, z1) = corners[k], corners[(k + 1) % 4]
                    if (z0 < 0) != (z1 < 0):
                        t = z0 / (z0 - z1)
                        crossings.append((x0 + t * (x1 - x0), y0 + t * (y1 - y0)))
                for a, b in zip(crossings[0::2], crossings[1::2]):
                    rows.append((math.exp(a[0]), math.exp(a[1]), math.exp(b[0]), math.exp(b[1]), level))
    return pd.DataFrame(rows, columns=["x", "y", "x2", "y2", "level"])


def _levels(values: np.ndarray, count: int = 5) -> list[float]:
    """Round, log-spaced contour levels inside the range of ``values``."""
    v = values[np.isfinite(values) & (values > 0)]
    if len(v) == 0:
        return []
    lo, hi = np.quantile(np.log(v), [0.1, 0.9])
    if hi <= lo:
        return [float(f"{math.exp(lo):.2g}")]
    return sorted({float(f"{x:.2g}") for x in np.exp(np.linspace(lo, hi, count))})


def error_heatmap(grid: pd.DataFrame, fit: FitResult | None = None, title: str = "error over (L, M)"):
    """Heatmap of err over log-spaced (L, M) cells, one panel per D, with the fitted surface's
    contour lines (labelled by level) when ``fit`` is given."""
    panels = []
    for D in _d_values(grid):
        sub = grid[grid["D"] == D].copy()
        lo_L, hi_L = _edges(sub["L"].to_numpy())
        lo_M, hi_M = _edges(sub["M"].to_numpy())
        Lv, Mv = np.sort(sub["L"].unique()).astype(float), np.sort(sub["M"].unique()).astype(float)
        sub["L_lo"] = sub["L"].map(dict(zip(Lv, lo_L)))
        sub["L_hi"] = sub["L"].map(dict(zip(Lv, hi_L)))
        sub["M_lo"] = sub["M"].map(dict(zip(Mv, lo_M)))
        sub["M_hi"] = sub["M"].map(dict(zip(Mv, hi_M)))
        cells = sub[["L", "M", "D", "err", "L_lo", "L_hi", "M_lo", "M_hi"]]
        x_scale = alt.Scale(type="log", domain=[float(lo_L[0]), float(hi_L[-1])], nice=False)
        y_scale = alt.Scale(type="log", domain=[float(lo_M[0]), float(hi_M[-1])], nice=False)
        layers = [alt.Chart(cells).mark_rect().encode(
            x=alt.X("L_lo:Q", scale=x_scale, title="depth L"), x2="L_hi:Q",
            y=alt.Y("M_lo:Q", scale=y_scale, title="width M"), y2="M_hi:Q",
            color=alt.Color("err:Q", scale=alt.Scale(type="log", scheme="viridis"), title="error"),
            tooltip=["L:Q", "M:Q", "D:Q", alt.Tooltip("err:Q", format=".3g")])]
        if fit is not None:
            levels = _levels(sub["err"].to_numpy(float))
            segments = contour_segments(lambda L, M: fit.predict(L, M, float(D)),
                                        (float(lo_L[0]), float(hi_L[-1])), (float(lo_M[0]), float(hi_M[-1])), levels)
            if len(segments):
                layers.append(alt.Chart(segments).mark_rule(color="white", strokeWidth=1.5).encode(
                    x=alt.X("x:Q", scale=x_scale), y=alt.Y("y:Q", scale=y_scale), x2="x2:Q", y2="y2:Q",
                    tooltip=[alt.Tooltip("level:Q", title="fitted error", format=".2g")]))
                labels = segments.groupby("level", as_index=False).apply(lambda s: s.iloc[len(s) // 2],
                                                                         include_groups=False)
                labels = labels.reset_index(drop=True) if "level" in labels else labels.reset_index()
                layers.append(alt.Chart(labels).mark_text(color="white", fontSize=10, dy=-6).encode(
                    x=alt.X("x:Q", scale=x_scale), y=alt.Y("y:Q", scale=y_scale), text=alt.Text("level:Q", format=".2g")))
        panels.append(alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=f"{title} (D={D})"))
    return panel_grid(panels)


def parity(fit: FitResult, title: str = "measured vs fitted"):
    """Measured vs fitted error (log-log) with the y = x line; floor-limited points in grey."""
    data = _points(fit.grid).assign(fitted=fit.grid["fitted"].to_numpy(float))
    data = data[np.isfinite(data["fitted"]) & (data["fitted"] > 0)]
    lo = float(min(data["err"].min(), data["fitted"].min()))
    hi = float(max(data["err"].max(), data["fitted"].max()))
    diagonal = pd.DataFrame({"x": [lo, hi], "y": [lo, hi]})
    points = alt.Chart(data).mark_point(filled=True, size=50).encode(
        x=alt.X("fitted:Q", scale=LOG_SCALE, title="fitted error"),
        y=alt.Y("err:Q", scale=LOG_SCALE, title="measured error"),
        color=alt.Color("LM:Q", scale=alt.Scale(type="log", scheme="viridis"), title="L*M"),
        shape=alt.Shape("point:N", title="point"),
        tooltip=["L:Q", "M:Q", "D:Q", alt.Tooltip("err:Q", format=".3g"), alt.Tooltip("fitted:Q", format=".3g")])
    line = alt.Chart(diagonal).mark_line(color="black", strokeDash=[6, 4], opacity=0.6).encode(x="x:Q", y="y:Q")
    return alt.layer(points, line).properties(width=WIDTH, height=HEIGHT, title=f"{title} ({fit.form})")


def residuals(fit: FitResult, title: str = "log residuals"):
    """log(measured / fitted) of the fitted points vs L*M, coloured by M, with the zero line."""
    data = _points(fit.grid).assign(residual=fit.grid["residual_log"].to_numpy(float))
    data = data[np.isfinite(data["residual"])]
    zero = alt.Chart(pd.DataFrame({"zero": [0.0]})).mark_rule(color="black", opacity=0.6).encode(y="zero:Q")
    points = alt.Chart(data).mark_point(filled=True, size=50).encode(
        x=alt.X("LM:Q", scale=LOG_SCALE, title="units L*M"),
        y=alt.Y("residual:Q", title="log(measured / fitted)"),
        color=alt.Color("M:O", scale=alt.Scale(scheme="viridis"), title="M"),
        shape=alt.Shape("L:N", title="L", sort="ascending"),
        tooltip=["L:Q", "M:Q", "D:Q", alt.Tooltip("residual:Q", format=".3f")])
    return alt.layer(zero, points).properties(width=WIDTH, height=HEIGHT, title=f"{title} ({fit.form})")


def error_vs_step(steps: pd.DataFrame, title: str = "error along gradient descent"):
    """err vs GD step (log y), one line per grid point, coloured by L*M.

    Args:
        steps: ``explorer.analysis.data.step_errors`` table (L, M, D, step, err). At most ``MAX_CURVES``
            grid points are drawn, evenly spread over L*M.
    """
    data = steps[np.isfinite(steps["err"]) & (steps["err"] > 0)].copy()
    data["LM"] = data["L"] * data["M"]
    keys = data[["L", "M", "D"]].drop_duplicates().assign(LM=lambda f: f["L"] * f["M"]).sort_values(["LM", "L", "D"])
    if len(keys) > MAX_CURVES:
        keys = keys.iloc[np.unique(np.linspace(0, len(keys) - 1, MAX_CURVES).round().astype(int))]
    data = data.merge(keys[["L", "M", "D"]], on=["L", "M", "D"])
    data["grid_point"] = "L=" + data["L"].astype(str) + " M=" + data["M"].astype(str) + " D=" + data["D"].astype(str)
    return alt.Chart(data).mark_line(point=HOLLOW_POINTS).encode(
        x=alt.X("step:Q", title="gradient step k"),
        y=alt.Y("err:Q", scale=LOG_SCALE, title="error"),
        color=alt.Color("LM:Q", scale=alt.Scale(type="log", scheme="viridis"), title="L*M",
                        legend=alt.Legend(type="gradient")),
        detail="grid_point:N",
        tooltip=["grid_point:N", "step:Q", alt.Tooltip("err:Q", format=".3g")],
    ).properties(width=WIDTH, height=HEIGHT, title=title)


def error_vs_params(grid: pd.DataFrame, frontier: pd.DataFrame | None = None, title: str = "error vs parameters P = L*M*D"):
    """err vs P = L*M*D (log-log), coloured by D; with ``frontier`` (``shapes.shape_frontier``),
    the best error a joint fit predicts at each P and a slope -1/6 guide."""
    points = _points(grid)
    layers = [alt.Chart(points).mark_point(filled=True, size=50).encode(
        x=alt.X("P:Q", scale=LOG_SCALE, title="parameters P = L*M*D"),
        y=alt.Y("err:Q", scale=LOG_SCALE, title="error"),
        color=alt.Color("D:O", scale=alt.Scale(scheme="plasma"), title="D"),
        tooltip=["L:Q", "M:Q", "D:Q", "P:Q", alt.Tooltip("err:Q", format=".3g")])]
    if frontier is not None and len(frontier):
        best = frontier.rename(columns={"best_err": "y", "P": "x"}).assign(curve="best shape (joint fit)")
        layers.append(alt.Chart(best).mark_line(color="crimson").encode(
            x="x:Q", y="y:Q", detail="curve:N",
            tooltip=["curve:N", alt.Tooltip("x:Q", title="P"), alt.Tooltip("y:Q", format=".3g", title="best error"),
                     "L:Q", "M:Q", "D:Q"]))
        first = frontier.iloc[0]
        layers.append(_guide_layer(_guide(frontier["P"].to_numpy(float), first["P"], first["best_err"] * 1.3, -1 / 6),
                                   "slope -1/6"))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=title)


