"""A law fitted to each grid point's RMS error over seeds (``fit``; the registry's method "law").

The laws are the registry of ``explorer.analysis.laws``; any other text is parsed there as a
user expression. The least squares live in ``solver``, the intervals in ``bootstrap``, the guard
rails in ``result``; ``dispatch.fit_sweep`` reads a sweep's errors and calls ``fit``.

Procedure (docs/analysis.md): per grid point and problem draw the seeds' errors at one GD step
are aggregated by RMS (``explorer.analysis.data.grid_errors``); the reference's own error is
removed in quadrature (err_corr = sqrt(max(err^2 - ref_err^2, 0)), switchable); points within
``FLOOR_FACTOR`` times the reference error, and seeds with a stability flag, are left out and
counted; summands the grid cannot measure (a D term on a single-D sweep) are not fitted; the law
is fitted to log errors with a soft-L1 loss from several starts, constants positive through
their logarithm, the draws pooled (where the points vary D, ``free`` and ``free_rss`` fit their ``untied`` law, a
D exponent in each term, and test the theory's tie g = b: ``tie``). The bootstrap resamples draws, then seeds within each draw
(points when there is one seed) and refits; CIs are estimate +- q sd in the fit's
parametrization (log for constants): with one draw q = 1.96 and sd the refits' spread; with G
draws q is Student's t with G - 1 degrees of freedom and sd the draws' part of the spread
(``bootstrap``). Guard rails (``FitResult.warnings``) flag what the numbers cannot say.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...bounds import MAX_RESAMPLES
from ...errors import FitError
from ..laws import FORMS, Expression, method_of, parse_expression, resolve_form, unidentified_terms
from .bootstrap import bootstrap, interval, per_draw as per_draw_fits, spread
from .result import FitResult, data_hash, fit_warnings
from .solver import (FREE_BOUND, LOSS_SCALE, FitData, Problem, best_fit, check_single_slice, fit_data, largest_lm,
                     prepare, start_points)
from .text import flag_summary
from .tie import TieTest


def fit(grid: pd.DataFrame, form: str = "theory", *, n_boot: int = 200, n_starts: int = 8, seed: int = 0,
        loss_scale: float = LOSS_SCALE, where: str | None = None, floor: str = "quadrature",
        per_draw: bool = True, range_check: bool = True) -> FitResult:
    """Fit a scaling law to a grid of errors (from ``grid_errors``) with bootstrap CIs.

    Args:
        grid: columns L, M, D, err, optionally seed_errs, ref_err, floor_limited, problem_seed
            (one row per point and draw; draws are pooled), n_flagged, sweep, metric, step and
            grid columns (which must each hold one value: one slice).
        form: a name of ``FORMS`` or an expression over L, M, D, P (see explorer.analysis.laws).
        n_boot: bootstrap resamples: draws, then seeds within each draw (points within the draw
            when every point has one seed). 0 skips the bootstrap (CIs are NaN).
        n_starts: starts of the point fit (the first from the theory's values).
        seed: seeds the starts and the bootstrap: the result is deterministic.
        loss_scale: soft-L1 scale of the log residuals.
        where: recorded in the result (the filter that produced ``grid``).
        floor: "quadrature" removes the reference's error: err_corr = sqrt(max(err^2 -
            ref_err^2, 0)); "none" fits err as measured. Points below FLOOR_FACTOR x ref_err
            are left out either way.
        per_draw: also fit each draw alone (``FitResult.per_draw``) when there are several.
        range_check: refit without the smallest L and without the smallest L*M
            (``FitResult.pre_asymptotic``).
    Returns:
        A :class:`FitResult`.
    Raises:
        FitError: unknown form, several slices, fewer points than parameters + 1, no convergence.
        ExpressionError: an invalid user expression.
    """
    label, asked = resolve_form(form)
    _check_request(label, n_boot, grid)
    trials_read = data_hash(grid)
    counts = _flag_counts(grid)
    source = grid
    grid, used, ref = prepare(grid, floor)
    untied = _untied(label, grid[used])
    asked = untied or asked
    expr, unidentified = _law_to_fit(asked, grid, used, label)
    n_params = len(expr.parameters)
    data = fit_data(grid[used].reset_index(drop=True), ref[used])
    problem = Problem(expr, data.L, data.M, data.D, loss_scale)
    rng = np.random.default_rng(seed)
    theta, converged, jac, r2 = _point_fit(problem, data, label, n_starts, rng)
    pair = [expr.parameters.index(n) for n in ("g", "b")] if untied and {"g", "b"} <= set(expr.parameters) else None
    thetas, method, lo_t, hi_t, tie = _intervals(problem, data, theta, n_boot, rng, pair)
    names = expr.parameters
    estimate = {n: math.nan for n in asked.parameters}
    ci_low, ci_high = dict(estimate), dict(estimate)
    estimate.update({n: float(v) for n, v in zip(names, problem.values(theta))})
    ci_low.update({n: float(v) for n, v in zip(names, problem.values(lo_t))})
    ci_high.update({n: float(v) for n, v in zip(names, problem.values(hi_t))})
    samples = problem.values(thetas) if len(thetas) else np.empty((0, n_params))
    extrapolation = _extrapolation_error(problem, data, theta, n_params)
    _add_fitted_columns(grid, expr, estimate, used)
    step = _slice_value(grid, "step")
    result = FitResult(
        form=label, expression=asked, estimate=estimate, ci_low=ci_low, ci_high=ci_high,
        r2_log=r2, n_points=int(used.sum()), n_excluded=int((~used).sum()), extrapolation_error=extrapolation,
        converged=converged, n_boot=len(samples), bootstrap=method, grid=grid, samples=samples,
        sweep=_slice_value(grid, "sweep"), metric=_slice_value(grid, "metric"), step=None if step is None else int(step),
        where=where, seed=seed, n_draws=len(data.draws), unidentified=unidentified, n_flagged=counts["n_flagged"],
        flag_counts=counts["flag_counts"], n_flagged_points=counts["n_flagged_points"], n_invalid=counts["n_invalid"],
        fitted_expression=expr if expr is not asked else None, floor=floor, data_hash=trials_read,
        n_boot_asked=n_boot,
    )
    if per_draw and len(data.draws) > 1:
        result.per_draw = per_draw_fits(problem, data, theta, n_boot, rng)
    if range_check:
        from .diagnostics import range_check as check_range  # diagnostics builds on this module

        result.pre_asymptotic = check_range(problem, data, theta, result)
    notes = list(counts["notes"])
    if counts["n_flagged"]:
        notes.append(f"{counts['n_flagged']} seeds left out for stability flags (the flags column){flag_summary(result)}")
    result.notes = notes + _notes(expr, estimate, float(np.exp(data.log_err.max())))
    result.ci_quantile, result.ci_sd = _interval_rule(data, result.n_boot, method)
    result.warnings = fit_warnings(result, converged, jac)
    if pair is not None:
        result.tie = _tie_test(source, label, tie, n_boot=n_boot, n_starts=n_starts, seed=seed, loss_scale=loss_scale,
                               floor=floor)
        result.warnings += result.tie.warnings()
    return result


def _untied(label: str, used: pd.DataFrame) -> Expression | None:
    """The registry law's ``untied`` form (an exponent per varied axis in each term) where the
    points fitted vary D, else None (the law as written)."""
    form = FORMS.get(label)
    if form is None or form.untied is None or used["D"].nunique() < 2:
        return None
    return parse_expression(form.untied, form.positive)


def _tie_test(grid: pd.DataFrame, label: str, tie: tuple, **options) -> TieTest:
    """g - b of the untied law with its interval from the same resamples, and the tied law (the
    registry's expression, as fitted where D does not vary) fitted beside it."""
    tied = fit(grid, FORMS[label].expression, per_draw=False, range_check=False, **options)
    return TieTest("g", "b", "sqrt(D/(L*M)), c2*(D/(L*M))**b", *tie, f"{label}_tied",
                   {n: (tied.estimate[n], tied.ci_low[n], tied.ci_high[n]) for n in ("c2", "b")})


def _interval_rule(data: FitData, n_boot: int, method: str) -> tuple[str, str]:
    """(quantile, where the sd comes from) of ``_intervals`` (``bootstrap.interval``), in words."""
    if not n_boot:
        return "1.96", ""
    inner = "grid points" if method.endswith("points") else "seeds within each grid point"
    G = len(data.draws)
    if G > 1:
        return f"t({G - 1})", (f"the problem draws' part of the spread of {n_boot} refits, each resampling the {G} "
                               f"draws, then the {inner} of each (the seeds' part alone where that is not positive)")
    return "1.96", f"the spread of {n_boot} refits, each resampling the {inner}"


def _check_request(label: str, n_boot: int, grid: pd.DataFrame | None) -> None:
    """Refuse what ``fit`` cannot do before any work: too many resamples, a law another method fits
    (the decomposed law, from Gram rows), no points, several slices."""
    if not 0 <= n_boot <= MAX_RESAMPLES:  # before the (n_boot, parameters) array of the bootstrap
        raise FitError(f"n_boot must be from 0 to {MAX_RESAMPLES:,} bootstrap resamples, got {n_boot}")
    method = method_of(label)
    if not method.from_rms_errors:  # another method's law: its own data and fitter
        fitter, data = (target.replace(":", ".") for target in (method.fitter, method.data))
        raise FitError(f"the {label} law is fitted by its own method, {method.name} (fit_sweep, or {fitter} on a "
                       f"{data.rsplit('.', 1)[-1]} frame), not from RMS errors")
    if grid is None or len(grid) == 0:
        raise FitError("no grid points to fit")
    check_single_slice(grid)


def _flag_counts(grid: pd.DataFrame) -> dict:
    """What ``grid_errors`` left out and noted (in the frame's attrs): flagged seeds by flag,
    points whose every seed was flagged, notes on several references."""
    return {"notes": list(grid.attrs.get("notes", ())),  # from grid_errors: several references
            "n_flagged": int(grid.attrs.get("n_flagged", grid["n_flagged"].sum() if "n_flagged" in grid else 0)),
            "flag_counts": dict(grid.attrs.get("flag_counts", {})),
            "n_flagged_points": int(grid.attrs.get("n_flagged_points", 0)),
            "n_invalid": int(grid.attrs.get("n_invalid", 0))}  # NaN, infinite or negative errors


def _law_to_fit(asked: Expression, grid: pd.DataFrame, used: np.ndarray, label: str) -> tuple[Expression, dict]:
    """The part of the law the used points can measure (and why the rest is not fitted);
    refuses a grid with fewer points than parameters + 1."""
    try:
        expr, unidentified = unidentified_terms(asked, grid[used] if used.any() else grid)
    except FitError:
        if used.sum() > len(asked.parameters):
            raise
        expr, unidentified = asked, {}  # too few points for anything: say so below
    n_params = len(expr.parameters)
    if used.sum() < n_params + 1:
        raise FitError(f"only {int(used.sum())} grid points above the reference floor (of {len(grid)}); "
                       f"form {label!r} has {n_params} parameters and needs at least {n_params + 1}")
    return expr, unidentified


def _point_fit(problem: Problem, data: FitData, label: str, n_starts: int, rng) -> tuple[np.ndarray, bool, object, float]:
    """The point estimate from several starts: (theta, converged, Jacobian, R^2 of the log errors)."""
    hints = FORMS[label].start if label in FORMS else {}
    starts = start_points(problem, hints, data.log_err, max(1, n_starts), rng)
    refuse_undefined_law(problem, starts, label)
    best, agree = best_fit(problem, data.log_err, starts)
    theta = best.x
    converged = bool(best.success and (agree >= 2 or n_starts <= 1))
    fitted_log = problem.log_model(theta)
    refuse_undefined_law(problem, [theta], label, fitted=True)
    ss_res = float(np.sum((data.log_err - fitted_log) ** 2))
    ss_tot = float(np.sum((data.log_err - data.log_err.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    return theta, converged, best.jac, r2


def _intervals(problem: Problem, data: FitData, theta: np.ndarray, n_boot: int, rng, pair=None):
    """The bootstrap: (replicates, what was resampled, CI low, CI high, the tie), in the fit's
    parametrization. With several draws the replicates are rescaled to carry the interval's
    spread (the adaptive loop reads their covariance). ``pair``: the indices (i, j) of two
    exponents whose difference theta_i - theta_j gets its interval from the same replicates
    (the tie: (difference, low, high); None without a pair)."""
    thetas, method = bootstrap(problem, data, theta, n_boot, rng)
    inner = bootstrap(problem, data, theta, n_boot, rng, resample_draws=False)[0] if len(data.draws) > 1 else None
    lo_t, hi_t = interval(thetas, theta, problem.bounds, inner, len(data.draws))
    tie = None
    if pair is not None:
        i, j = pair
        diff = (thetas[:, i] - thetas[:, j])[:, None] if len(thetas) else np.empty((0, 1))
        inner_diff = None if inner is None else (inner[:, i] - inner[:, j])[:, None]
        lo, hi = interval(diff, np.array([theta[i] - theta[j]]), (-np.inf, np.inf), inner_diff, len(data.draws))
        tie = (float(theta[i] - theta[j]), float(lo[0]), float(hi[0]))
    if inner is not None and len(thetas) > 1:  # the samples carry the interval's spread (adaptive covariance)
        sd, _ = spread(thetas, inner, len(data.draws))
        width = thetas.std(axis=0, ddof=1)
        thetas = np.clip(theta + (thetas - thetas.mean(axis=0)) * np.where(width > 0, sd / np.where(width > 0, width, 1), 0),
                         *problem.bounds)
    return thetas, method, lo_t, hi_t, tie


def _add_fitted_columns(grid: pd.DataFrame, expr: Expression, estimate: dict, used: np.ndarray) -> None:
    """``fitted``, ``residual_log`` (NaN where not used) and ``used`` on the grid table."""
    with np.errstate(all="ignore"):
        grid["fitted"] = expr({n: estimate[n] for n in expr.parameters}, grid["L"].to_numpy(float),
                              grid["M"].to_numpy(float), grid["D"].to_numpy(float))
        grid["residual_log"] = np.where(used, np.log(grid["err_fit"].to_numpy(float)) - np.log(grid["fitted"]), np.nan)
    grid["used"] = used


def _slice_value(grid: pd.DataFrame, column: str):
    """The one value of ``column`` on the grid, or None (absent or several)."""
    vals = grid[column].unique() if column in grid else []
    return vals[0] if len(vals) == 1 else None


def refuse_undefined_law(problem: Problem, thetas: list[np.ndarray], label: str, fitted: bool = False) -> None:
    """A law whose prediction is not a finite positive number at every grid point for any of
    ``thetas`` (``c1/0*L``, ``c1*sqrt(-L)``) is refused: its fit would be saved with an R^2 of
    -inf or NaN. Checked on the starts before fitting, and on the fitted parameters.

    Raises:
        FitError: naming the law and a grid point where it is undefined.
    """
    bad = None
    for theta in thetas:
        undefined = ~np.isfinite(problem.log_model(theta))
        if not undefined.any():
            return
        bad = undefined
    at = int(np.argmax(bad))
    where = f"L={problem.L[at]:g}, M={problem.M[at]:g}, D={problem.D[at]:g}"
    which = "the fitted law" if fitted else "it"
    raise FitError(f"law {label!r}: {which} is not a finite positive number at {int(bad.sum())} of {bad.size} grid "
                   f"points (e.g. {where}){'' if fitted else ' from every start of the fit'}; no fit saved")


def _notes(expr: Expression, estimate: dict, err_max: float) -> list[str]:
    notes = []
    for name, value in estimate.items():
        if name in expr.positive and value < 1e-6 * err_max:
            notes.append(f"{name} ~ 0: the grid gives no evidence for its term")
        elif name not in expr.positive and abs(abs(value) - FREE_BOUND) < 1e-6:
            notes.append(f"{name} stopped at its search bound {value:+g}: the grid does not determine it")
    return notes


def _extrapolation_error(problem: Problem, data: FitData, theta: np.ndarray, n_params: int) -> float:
    """Fit without the largest-L*M points, then the RMS relative error of predicting them."""
    held = largest_lm(data)
    train = ~held
    if held.all() or train.sum() < n_params + 1:
        return float("nan")
    sub = Problem(problem.expr, problem.L[train], problem.M[train], problem.D[train], problem.loss_scale)
    result = sub.solve(data.log_err[train], theta)
    predicted = np.exp(problem.log_model(result.x, problem.L[held], problem.M[held], problem.D[held]))
    relative = predicted / np.exp(data.log_err[held]) - 1.0
    return float(np.sqrt(np.mean(relative**2)))


__all__ = ["fit", "refuse_undefined_law"]
