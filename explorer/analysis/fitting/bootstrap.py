"""The two-level bootstrap of a fit and its 95% intervals: problem draws resampled, then seeds
within each draw (points when there is one seed), each resample refitted from the estimate.
With one draw the interval is estimate +- 1.96 sd of the (widened) replicates; with G draws the
quantile is Student's t with G - 1 degrees of freedom and the sd the draws' part of the spread
(``interval``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .result import Z95
from .solver import FitData, Problem, solve_batch, subset
from ..data import DRAW_COLUMN

def interval(thetas: np.ndarray, theta: np.ndarray, bounds, inner: np.ndarray | None = None,
              n_draws: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The 95% interval in the fit's parametrization (log for constants).

    One draw: estimate +- 1.96 sd of the (widened) seed or point bootstrap. Several draws G: the
    two-level replicates ``thetas`` hold the seed noise twice (inside the draws' spread and from
    the inner resample); ``inner``, the replicates with the draws as observed, measures that
    part. The variance G/(G-1) (var(thetas) - var(inner)) (var(inner) where that is not
    positive) is the draws' spread, and the quantile is Student's t with G - 1 degrees of freedom: with 4 draws the sd
    itself rests on 3 degrees of freedom (docs/analysis.md, the coverage table)."""
    if len(thetas) < 2:
        nan = np.full(len(theta), np.nan)
        return nan, nan
    sd, q = spread(thetas, inner, n_draws)
    return np.clip(theta - q * sd, *bounds), np.clip(theta + q * sd, *bounds)


def spread(thetas: np.ndarray, inner: np.ndarray | None, n_draws: int) -> tuple[np.ndarray, float]:
    """(sd, quantile) of the interval (``interval``)."""
    if inner is None or n_draws < 2 or len(inner) < 2:
        return thetas.std(axis=0, ddof=1), Z95
    G = n_draws
    v_inner = inner.var(axis=0, ddof=1)
    between = G / (G - 1) * (thetas.var(axis=0, ddof=1) - v_inner)
    # the inner part stands in only where the draws' part came out non-positive (sampling noise)
    from scipy import stats  # on first use: a fit read back from the cache needs no scipy

    return np.sqrt(np.where(between > 0, between, v_inner)), float(stats.t.ppf(0.975, G - 1))


def resample_log_err(data: FitData, rows: np.ndarray, rng, by_points: bool) -> tuple[np.ndarray, np.ndarray]:
    """One draw's rows resampled: (row indices, log errors), seeds within points or points."""
    if by_points:
        rows = rows[rng.integers(0, len(rows), len(rows))]
        return rows, data.log_err[rows]
    counts = data.counts[rows]
    width = data.packed.shape[1]
    pick = (rng.random((len(rows), width)) * counts[:, None]).astype(int)
    chosen = np.take_along_axis(data.packed[rows], pick, axis=1)
    mask = np.arange(width)[None, :] < counts[:, None]
    rms = np.sqrt(np.where(mask, chosen**2, 0.0).sum(axis=1) / counts)
    ref = np.where(np.isfinite(data.ref[rows]), data.ref[rows], 0.0)
    return rows, np.log(np.sqrt(np.maximum(rms**2 - ref**2, 1e-300)))


def bootstrap(problem: Problem, data: FitData, theta: np.ndarray, n_boot: int, rng,
               resample_draws: bool = True) -> tuple[np.ndarray, str]:
    """Refit on n_boot resamples: draws with replacement (``resample_draws``; else each draw
    once, as observed), then seeds within each point of each chosen draw (points within the
    draw when every point has one seed); all from the point estimate. Returns the converged
    estimates (the fit's parametrization) and what was resampled."""
    by_points = bool(np.all(data.counts <= 1))
    n_draws = len(data.draws)
    inner = "points" if by_points else "seeds"
    method = f"draws, then {inner}" if n_draws > 1 else inner
    if n_boot <= 0:
        return np.empty((0, len(theta))), "none"
    members = [np.flatnonzero(data.draw == g) for g in range(n_draws)]
    width = n_draws * max(len(m) for m in members)
    idx = np.zeros((n_boot, width), int)
    log_err = np.zeros((n_boot, width))
    weights = np.zeros((n_boot, width))
    for b in range(n_boot):
        chosen = rng.integers(0, n_draws, n_draws) if n_draws > 1 and resample_draws else range(n_draws)
        at = 0
        for g in chosen:
            rows, values = resample_log_err(data, members[g], rng, by_points)
            idx[b, at: at + len(rows)], log_err[b, at: at + len(rows)] = rows, values
            weights[b, at: at + len(rows)] = 1.0
            at += len(rows)
    fitted, ok = solve_batch(problem, log_err, np.tile(theta, (n_boot, 1)), problem.L[idx], problem.M[idx],
                             problem.D[idx], weights=weights)
    ok &= np.all(np.isfinite(fitted), axis=1)
    fitted = fitted[ok]
    if n_draws > 1:  # the interval corrects the two-level spread (interval)
        return np.clip(fitted, *problem.bounds), method
    # Resampling n values spreads their mean by only (n - 1)/n of its variance: widen the
    # replicates around the estimate by sqrt(n / (n - 1)) (n: seeds per point, or points).
    if by_points:
        n_eff = float(len(data.log_err))
    else:
        n_eff = float(len(data.counts) / np.sum(1.0 / np.maximum(data.counts, 2)))
    fitted = theta + np.sqrt(n_eff / (n_eff - 1.0)) * (fitted - theta)
    return np.clip(fitted, *problem.bounds), method


def per_draw(problem: Problem, data: FitData, theta: np.ndarray, n_boot: int, rng) -> pd.DataFrame:
    """The fit on each draw alone (from the pooled estimate), with its own seed bootstrap."""
    rows = []
    for g, label in enumerate(data.draws):
        keep = data.draw == g
        names = problem.expr.parameters
        if keep.sum() < len(names) + 1:
            continue
        sub = subset(data, keep)
        sub_problem = Problem(problem.expr, sub.L, sub.M, sub.D, problem.loss_scale)
        point = sub_problem.solve(sub.log_err, theta).x
        thetas, _ = bootstrap(sub_problem, sub, point, min(n_boot, 100), rng)
        lo, hi = interval(thetas, point, sub_problem.bounds)
        for i, name in enumerate(names):
            rows.append({DRAW_COLUMN: label, "parameter": name, "estimate": float(sub_problem.values(point)[i]),
                         "ci_low": float(sub_problem.values(lo)[i]), "ci_high": float(sub_problem.values(hi)[i])})
    return pd.DataFrame(rows, columns=[DRAW_COLUMN, "parameter", "estimate", "ci_low", "ci_high"])


__all__ = ["bootstrap", "interval", "per_draw", "resample_log_err", "spread"]
