"""Where a metric is lowest along one grid axis: the level of each grid value over its runs, and
the minimum located on the log axis by the parabola through the lowest grid value and its two
neighbours, so that it can fall between grid values.

A run that diverged counts as worse than every finite one: a grid value where any of its runs
diverged has level +inf (it can be the minimum only when every value did). A grid value with no
run has no level (NaN) and is never the minimum. The level is the geometric mean over runs (the
mean of the log metric), or the plain mean where some value is not positive: for a bowl whose log
metric is quadratic in the log axis, the parabola's vertex is then the bowl's minimum exactly.
"""
from __future__ import annotations

import numpy as np

BELOW, INSIDE, ABOVE = -1, 0, 1  # where a minimum sits: the grid's low edge, inside, its high edge


def levels(values: np.ndarray, log_scale: bool) -> np.ndarray:
    """The level of each grid value over its runs.

    Args:
        values: (..., runs, grid): the metric; +inf for a diverged run, NaN where there is no run.
        log_scale: average the log metric (True) or the metric.
    Returns:
        (..., grid): the mean over runs (of the log when ``log_scale``); +inf where a run diverged,
        NaN where there is no run.
    """
    present = ~np.isnan(values)
    diverged = np.isposinf(values).any(axis=-2)
    finite = np.isfinite(values)
    safe = np.where(finite, values, 1.0)
    term = np.log(safe) if log_scale else safe
    n = present.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(finite, term, 0.0).sum(axis=-2) / np.maximum(finite.sum(axis=-2), 1)
    out = np.where(diverged, np.inf, mean)
    return np.where(n == 0, np.nan, out)


def log_scale_for(values: np.ndarray) -> bool:
    """Average in log when every finite value is positive (the metric is a loss or an error)."""
    finite = values[np.isfinite(values)]
    return bool(finite.size) and bool(np.all(finite > 0))


def locate(level: np.ndarray, log_grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The minimum of each row of ``level`` on the log axis.

    Args:
        level: (..., grid) levels (``levels``). log_grid: (grid,) the log of the axis values, ascending.
    Returns:
        (location, where): the log of the located minimum (NaN when no grid value has a finite
        level) and ``BELOW``/``INSIDE``/``ABOVE``. At an edge (the lowest level at the first or last
        grid value the row holds) the location is that edge's log value. Inside, it is the vertex
        of the parabola through the lowest value and its neighbours, kept between them; the grid
        value itself when a neighbour is not finite (a divergence or a missing value next to it).
    """
    level = np.asarray(level, float)
    y = np.where(np.isnan(level), np.inf, level)
    n = y.shape[-1]
    present = ~np.isnan(level)
    first = np.argmax(present, axis=-1)
    last = n - 1 - np.argmax(present[..., ::-1], axis=-1)
    i = np.argmin(y, axis=-1)
    measured = np.isfinite(np.take_along_axis(y, i[..., None], axis=-1)[..., 0])
    where = np.where(i == first, BELOW, np.where(i == last, ABOVE, INSIDE))
    lo, hi = np.clip(i - 1, 0, n - 1), np.clip(i + 1, 0, n - 1)
    x0, x1, x2 = log_grid[lo], log_grid[i], log_grid[hi]
    y0, y1, y2 = (np.take_along_axis(y, k[..., None], axis=-1)[..., 0] for k in (lo, i, hi))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # the parabola through (x0, y0), (x1, y1), (x2, y2): y = a x^2 + b x + c, vertex -b / 2a
        denom = (x0 - x1) * (x0 - x2) * (x1 - x2)
        a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / denom
        b = (x2**2 * (y0 - y1) + x1**2 * (y2 - y0) + x0**2 * (y1 - y2)) / denom
        vertex = np.clip(-b / (2 * a), x0, x2)
    smooth = (where == INSIDE) & np.isfinite(y0) & np.isfinite(y2) & (a > 0) & np.isfinite(vertex)
    location = np.where(smooth, vertex, x1)
    return np.where(measured, location, np.nan), np.where(measured, where, INSIDE)


__all__ = ["ABOVE", "BELOW", "INSIDE", "levels", "locate", "log_scale_for"]
