"""A law fitted to the mean error over every run of a point, with a bootstrap over problem draws.

The companion paper's linear constants are those of a law of the *mean* error: the authors
average each point's error over all their runs (unit seeds x embedding draws) and fit the law to
those means. The draws differ a lot (on the laptop grid one draw's 1/D constant ranges over 25x),
so a fit to every draw's rows, as ``explorer.fit.fit`` pools them, answers another question: its
R^2 counts the draws' own spread as a failure of the law, and its log residuals weight the draws
as a geometric mean. This module measures the authors' quantity:

- ``pooled_mean``: per (L, M, D), the mean of every run's error (``seed_errs`` over all seeds and
  draws), the authors' pooling.
- ``fit_pooled``: ``explorer.fit.fit`` of the law on those means (its R^2 and warnings are the
  law's against the means), and a 95 % interval from a bootstrap over the draws: resample the
  draws with replacement, pool, refit; the interval is Student's t with G - 1 degrees of freedom
  (G draws) on the replicates' spread, in log for a positive parameter (as the tool's other
  intervals over draws). A parameter whose replicates are all equal gets a zero-width interval.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from scipy import stats

MIN_DRAWS = 3  # a bootstrap over fewer draws does not estimate their spread
RESAMPLE_STARTS = 3  # starts of each bootstrap refit (the point fit keeps fit's default)


def pooled_mean(grid: pd.DataFrame) -> pd.DataFrame:
    """One row per (L, M, D): ``err`` = the mean over every run (each draw's ``seed_errs``) of
    the error, ``ref_err`` the mean reference error, and the slice columns (sweep, metric, step)."""
    runs = grid.assign(total=grid["seed_errs"].apply(lambda e: float(np.sum(e))),
                       count=grid["seed_errs"].apply(len))
    pooled = runs.groupby(["L", "M", "D"], as_index=False).agg(total=("total", "sum"), count=("count", "sum"),
                                                                ref_err=("ref_err", "mean"))
    pooled["err"] = pooled["total"] / pooled["count"]
    for column in ("sweep", "metric", "step"):
        if column in grid:
            pooled[column] = grid[column].iloc[0]
    return pooled.drop(columns=["total", "count"])


def _interval(point: float, replicates: np.ndarray, t: float) -> tuple[float, float]:
    replicates = replicates[np.isfinite(replicates)]
    if len(replicates) < 2 or not math.isfinite(point):
        return math.nan, math.nan
    if np.ptp(replicates) == 0:
        return float(replicates[0]), float(replicates[0])
    if point > 0 and (replicates > 0).all():
        sd = float(np.log(replicates).std(ddof=1))
        return point * math.exp(-t * sd), point * math.exp(t * sd)
    sd = float(replicates.std(ddof=1))
    return point - t * sd, point + t * sd


def fit_pooled(grid: pd.DataFrame, form: str, n_boot: int = 200, seed: int = 0, where: str | None = None):
    """The law ``form`` fitted to ``pooled_mean(grid)``, with a bootstrap over the problem draws
    (``grid``: grid_errors rows with problem_seed and seed_errs). Returns a ``FitResult`` whose
    intervals, samples and bootstrap description are the draws'.

    Raises:
        FitError: as ``explorer.fit.fit``; or fewer than ``MIN_DRAWS`` draws.
    """
    from ..errors import FitError
    from .fit import fit

    draws = np.sort(grid["problem_seed"].unique()) if "problem_seed" in grid else np.array([None])
    if len(draws) < MIN_DRAWS:
        raise FitError(f"{len(draws)} problem draw(s): a bootstrap over draws needs at least {MIN_DRAWS}")
    result = fit(pooled_mean(grid), form, n_boot=0, where=where, per_draw=False, range_check=False)
    names = [p for p in result.parameters if math.isfinite(result.estimate[p])]
    by_draw = {d: grid[grid["problem_seed"] == d] for d in draws}
    rng = np.random.default_rng(seed)
    replicates = []
    for _ in range(n_boot):
        sample = pd.concat([by_draw[d] for d in rng.choice(draws, len(draws))], ignore_index=True)
        try:
            refit = fit(pooled_mean(sample), form, n_boot=0, n_starts=RESAMPLE_STARTS, per_draw=False,
                        range_check=False)
        except FitError:
            continue
        replicates.append([refit.estimate[p] for p in names])
    samples = np.array(replicates, dtype=float).reshape(-1, len(names))
    t = float(stats.t.ppf(0.975, len(draws) - 1))
    ci_low, ci_high = dict(result.ci_low), dict(result.ci_high)
    for i, name in enumerate(names):
        ci_low[name], ci_high[name] = _interval(result.estimate[name], samples[:, i], t)
    note = (f"fitted to the mean error over every run ({len(draws)} draws x their seeds) at each of "
            f"{result.n_points} points; 95 % interval: {len(samples)} bootstrap resamples of the draws, "
            f"Student's t with {len(draws) - 1} degrees of freedom")
    return dataclasses.replace(result, ci_low=ci_low, ci_high=ci_high, samples=samples, n_boot=len(samples),
                               bootstrap="draws (pooled means refitted)", n_draws=len(draws),
                               notes=[*result.notes, note])


__all__ = ["MIN_DRAWS", "RESAMPLE_STARTS", "fit_pooled", "pooled_mean"]
