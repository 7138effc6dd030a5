"""A law fitted to the mean error over every run of a point, with a bootstrap over problem draws.

The companion paper's linear constants are those of a law of the *mean* error: the authors
average each point's error over all their runs (unit seeds x embedding draws) and fit the law to
those means. The draws differ a lot (on the laptop grid one draw's 1/D constant ranges over 25x),
so a fit to every draw's rows, as ``rms_fit.fit`` pools them, answers another question: its
R^2 counts the draws' own spread as a failure of the law, and its log residuals weight the draws
as a geometric mean. This module measures the authors' quantity:

- ``pooled_mean``: per (L, M, D), the mean of every run's error (``seed_errs`` over all seeds and
  draws), the authors' pooling.
- ``fit_pooled``: ``rms_fit.fit`` of the law on those means (its R^2 and warnings are the
  law's against the means), and a 95 % interval from a bootstrap over the draws: resample the
  draws with replacement, pool, refit; the interval is Student's t with G - 1 degrees of freedom
  (G draws) on the replicates' spread, in log for a positive parameter (as the tool's other
  intervals over draws) unless resamples reach its bound 0 (then in linear space, clipped at 0).
  A parameter whose replicates are all equal gets a zero-width interval.
- ``residuals="err"``: the constants minimise the unweighted sum of squares of err - law, as the
  authors' ``scipy.optimize.curve_fit`` does (bounds >= 0), started from the tool's fit (soft-L1
  on log residuals, the default ``"log"``); each bootstrap refit starts from that point estimate.
  Under a law that is not exact the two losses give
  different constants (the squares weight the largest errors), so a reproduction of the authors'
  numbers uses theirs. R^2 and warnings stay the tool's fit's.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from scipy import optimize, stats

from .result import FitResult

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


AT_BOUND = 1e-9  # a resample below this fraction of the largest sits at the bound 0 (float noise)


def _interval(point: float, replicates: np.ndarray, t: float) -> tuple[float, float]:
    """Student's t on the replicates' spread: in log for a positive parameter, unless some
    resamples put it at its bound 0 (a log spread would then span hundreds of decades); then in
    linear space, the lower end clipped at 0."""
    replicates = replicates[np.isfinite(replicates)]
    if len(replicates) < 2 or not math.isfinite(point):
        return math.nan, math.nan
    if np.ptp(replicates) == 0:
        return float(replicates[0]), float(replicates[0])
    if point > 0 and (replicates > AT_BOUND * replicates.max()).all():
        sd = float(np.log(replicates).std(ddof=1))
        return point * math.exp(-t * sd), point * math.exp(t * sd)
    sd = float(replicates.std(ddof=1))
    low = point - t * sd
    return (max(low, 0.0) if (replicates >= 0).all() else low), point + t * sd


RESIDUALS = ("log", "err")


def least_squares_on_err(form: str, points: pd.DataFrame, start: dict) -> dict:
    """The law's constants that minimise sum (err - law)^2 over ``points`` (L, M, D, err),
    unweighted, every positive constant bounded below by 0, from ``start`` (name -> value)."""
    from ..laws import resolve_form

    _, expr = resolve_form(form)
    names = list(expr.parameters)
    L, M, D, err = (points[c].to_numpy(float) for c in ("L", "M", "D", "err"))
    low = np.array([0.0 if n in expr.positive else -np.inf for n in names])
    x0 = np.array([start[n] for n in names], dtype=float)
    x0 = np.where(np.isfinite(low), np.maximum(x0, 1e-12), x0)
    solution = optimize.least_squares(lambda theta: expr(theta, L, M, D) - err, x0, bounds=(low, np.inf),
                                      x_scale="jac", xtol=1e-12, ftol=1e-12, gtol=1e-12)
    return dict(zip(names, map(float, solution.x)))


def _estimate(points: pd.DataFrame, form: str, residuals: str, **fit_options) -> tuple:
    """(tool's fit of the law on ``points``, the constants under ``residuals``)."""
    from .rms_fit import fit

    result = fit(points, form, n_boot=0, per_draw=False, range_check=False, **fit_options)
    if residuals == "log":
        return result, dict(result.estimate)
    return result, least_squares_on_err(form, points, result.estimate)


def fit_pooled(grid: pd.DataFrame, form: str, n_boot: int = 200, seed: int = 0, where: str | None = None,
               residuals: str = "log", pool=pooled_mean, *, floor: str = "quadrature", per_draw: bool = False,
               range_check: bool = False) -> FitResult:
    """The law ``form`` fitted to ``pooled_mean(grid)``, with a bootstrap over the problem draws
    (``grid``: grid_errors rows with problem_seed and seed_errs). Returns a ``FitResult`` whose
    intervals, samples and bootstrap description are the draws'; ``residuals`` as in the module
    docstring; ``pool``: how a point's runs become its error (default ``pooled_mean``; a
    reproduction passes its spec's pooling, ``explorer.reproduce.pooling``).

    The registry's ``mean_of_runs`` method's fitter (an ``explorer.analysis.fitting.Fitter``; a
    reproduction fits through ``fit_sweep(..., method="mean_of_runs", options=...)``): ``floor`` as
    ``rms_fit.fit``'s; ``per_draw`` and ``range_check`` are not used (the means pool the draws, and
    the interval is the draws' own).

    Raises:
        FitError: as ``rms_fit.fit``; or fewer than ``MIN_DRAWS`` draws.
    """
    from ...errors import FitError
    from .result import fit_warnings

    if residuals not in RESIDUALS:
        raise FitError(f"residuals {residuals!r}: expected one of {', '.join(RESIDUALS)}")
    draws = np.sort(grid["problem_seed"].unique()) if "problem_seed" in grid else np.array([None])
    if len(draws) < MIN_DRAWS:
        raise FitError(f"{len(draws)} problem draw(s): a bootstrap over draws needs at least {MIN_DRAWS}")
    result, estimate = _estimate(pool(grid), form, residuals, where=where, floor=floor)
    names = [p for p in result.parameters if math.isfinite(estimate[p])]
    by_draw = {d: grid[grid["problem_seed"] == d] for d in draws}
    rng = np.random.default_rng(seed)
    replicates = []
    for _ in range(n_boot):
        sample = pd.concat([by_draw[d] for d in rng.choice(draws, len(draws))], ignore_index=True)
        try:
            if residuals == "err":  # a local refit from the point estimate: no log fit needed to start it
                refit = least_squares_on_err(form, pool(sample), estimate)
            else:
                _, refit = _estimate(pool(sample), form, residuals, n_starts=RESAMPLE_STARTS, floor=floor)
        except FitError:
            continue
        replicates.append([refit[p] for p in names])
    samples = np.array(replicates, dtype=float).reshape(-1, len(names))
    t = float(stats.t.ppf(0.975, len(draws) - 1))
    ci_low, ci_high = dict(result.ci_low), dict(result.ci_high)
    for i, name in enumerate(names):
        ci_low[name], ci_high[name] = _interval(estimate[name], samples[:, i], t)
    loss = ("unweighted least squares on err, the authors' loss (their curve_fit)" if residuals == "err"
            else "soft-L1 on log residuals")
    note = (f"fitted ({loss}) to the mean error over every run ({len(draws)} draws x their seeds) at each of "
            f"{result.n_points} points; 95 % interval: {len(samples)} bootstrap resamples of the draws, "
            f"Student's t with {len(draws) - 1} degrees of freedom")
    if residuals == "err":
        tool = ", ".join(f"{p} = {result.estimate[p]:.3g}" for p in names)
        note += f"; the tool's log-residual fit of the same means gives {tool}"
    pooled = dataclasses.replace(result, estimate=estimate, ci_low=ci_low, ci_high=ci_high, samples=samples,
                                 n_boot=len(samples), bootstrap="draws (pooled means refitted)", n_draws=len(draws),
                                 notes=[*result.notes, note], unmeasured=dict(result.unmeasured))
    # the intervals are new: the rule of what is measured reads them (the Jacobian's verdict is kept)
    pooled.warnings = fit_warnings(pooled, pooled.converged, None)
    return pooled


__all__ = ["MIN_DRAWS", "RESAMPLE_STARTS", "RESIDUALS", "fit_pooled", "least_squares_on_err", "pooled_mean"]
