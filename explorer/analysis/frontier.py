"""The compute frontier of a grid of errors: the best error reachable at each compute, and its slope.

The companion paper draws, over every shape (L, M, D) it trained, the error against the
parameter count P = 2 L M D, and a hand-set curve c P^(-e) along the lower edge of the cloud
(2 P^(-1/6) for the hidden error, 0.7 P^(-1/5) for the output). This module measures that edge:

- ``frontier``: at each distinct P, the best (smallest) error; a P is on the frontier when its
  best error is below the best error of every smaller P (more compute that does no better is
  not on the edge).
- ``interior``: the frontier's points whose best shape lies inside the grid (neither M nor D at
  the smallest or largest value the grid has). Where the best shape sits on the grid's edge, the
  frontier follows the edge (at small P, M = 1 and only D grows), not the trade-off between the
  error terms the exponent is about: on the authors' 20 x 20 grid the theory's law gives a whole
  frontier's exponent of 0.183 instead of 1/6, its interior 0.167 (tests/explorer/test_frontier.py).
- ``frontier_slope``: the least-squares slope of log err against log P over the interior points,
  so ``err ~ P^slope``; the paper's exponent ``e`` is ``-slope``.
- ``frontier_exponent``: the exponent over problem draws. Each draw (its own data, embeddings,
  units and reference) gives its own frontier and slope; the estimate is their mean and the 95 %
  interval is Student's t over the draws (the draws are independent replicates of the whole
  experiment, so their spread holds every source of noise: units, embeddings, the reference).
  The frontier of the draws' pooled errors (the authors' protocol: sqrt(mean err^2)) is reported
  too, with its slope.

With the theory's law err^2 = a^2 D/(LM) + b^2/D the best shape at compute P has D ~ P^(1/3) and
err ~ P^(-1/6); with err^2 = a^2 (D/(LM))^2 + b^2/D, D ~ P^(2/5) and err ~ P^(-1/5): the two
exponents the paper's curves carry.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

MIN_FRONTIER_POINTS = 3  # a slope through fewer frontier points is not a measurement
MIN_P_SPAN = 10.0  # nor one whose frontier spans less than a decade of compute


def compute(frame: pd.DataFrame) -> pd.Series:
    """The companion's parameter count P = 2 L M D, per row."""
    return 2.0 * frame["L"].astype(float) * frame["M"].astype(float) * frame["D"].astype(float)


def frontier(points: pd.DataFrame) -> pd.DataFrame:
    """The frontier of one set of errors (columns L, M, D, err): the best point at each P, kept
    when its error is below that of every smaller P. Sorted by P, with a column ``P``."""
    pts = points[np.isfinite(points["err"]) & (points["err"] > 0)].assign(P=lambda f: compute(f))
    best = pts.sort_values(["P", "err"]).groupby("P", as_index=False).first()
    running = best["err"].cummin().shift(1, fill_value=math.inf)
    return best[best["err"] < running].reset_index(drop=True)


def interior(edge: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """The frontier points whose shape is inside ``points``' grid: M and D both strictly between
    the grid's smallest and largest values."""
    inside = pd.Series(True, index=edge.index)
    for axis in ("M", "D"):
        inside &= (edge[axis] > points[axis].min()) & (edge[axis] < points[axis].max())
    return edge[inside].reset_index(drop=True)


def frontier_slope(edge: pd.DataFrame) -> float:
    """The least-squares slope of log err on log P over the frontier's points (err ~ P^slope);
    NaN when there are fewer than ``MIN_FRONTIER_POINTS`` or they span less than ``MIN_P_SPAN``."""
    if len(edge) < MIN_FRONTIER_POINTS or edge["P"].max() / edge["P"].min() < MIN_P_SPAN:
        return math.nan
    slope, _ = np.polyfit(np.log(edge["P"].to_numpy(float)), np.log(edge["err"].to_numpy(float)), 1)
    return float(slope)


@dataclass(frozen=True)
class FrontierExponent:
    """The frontier's exponent e (err ~ P^-e) over the problem draws."""

    estimate: float  # mean over the draws of each draw's exponent
    ci_low: float
    ci_high: float
    per_draw: dict  # problem draw -> its exponent (NaN: its frontier too short)
    pooled_exponent: float  # the exponent of the draws' pooled errors' frontier (the authors' protocol)
    pooled_edge: pd.DataFrame  # that frontier's interior points: L, M, D, P, err
    problem: str | None = None  # why there is no interval, when there is none

    def ratio_to(self, curve) -> tuple[float, float, float]:
        """The pooled frontier over a curve c(P): geometric mean, min, max of the ratios."""
        if self.pooled_edge.empty:
            return math.nan, math.nan, math.nan
        ratio = self.pooled_edge["err"].to_numpy(float) / curve(self.pooled_edge["P"].to_numpy(float))
        return float(np.exp(np.log(ratio).mean())), float(ratio.min()), float(ratio.max())


def frontier_exponent(grid: pd.DataFrame, level: float = 0.95) -> FrontierExponent:
    """The exponent of the frontier of a grid of errors (grid_errors rows: problem_seed, L, M, D,
    err; one draw when there is no problem_seed column), with a ``level`` interval over the draws."""
    draws = grid.groupby("problem_seed") if "problem_seed" in grid else [(None, grid)]
    per_draw = {draw: -frontier_slope(interior(frontier(g), g)) for draw, g in draws}
    pooled_points = grid.assign(err2=grid["err"] ** 2).groupby(["L", "M", "D"], as_index=False)["err2"].mean()
    pooled_points = pooled_points.assign(err=np.sqrt(pooled_points["err2"]))
    pooled_edge = interior(frontier(pooled_points), pooled_points)[["L", "M", "D", "P", "err"]]
    pooled = -frontier_slope(pooled_edge)
    values = np.array([v for v in per_draw.values() if math.isfinite(v)])
    if len(values) < 2:
        problem = (f"{len(values)} problem draw(s) with a frontier interior of >= {MIN_FRONTIER_POINTS} points over "
                   f">= {MIN_P_SPAN:g}x in P: an interval over draws needs 2")
        return FrontierExponent(float(values.mean()) if len(values) else pooled, math.nan, math.nan, per_draw,
                                pooled, pooled_edge, problem)
    mean = float(values.mean())
    half = float(stats.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
    return FrontierExponent(mean, mean - half, mean + half, per_draw, pooled, pooled_edge)


__all__ = ["MIN_FRONTIER_POINTS", "MIN_P_SPAN", "FrontierExponent", "compute", "frontier", "frontier_exponent",
           "frontier_slope", "interior"]
