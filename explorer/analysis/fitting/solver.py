"""The least-squares machinery under the scaling-law fits (``rms_fit``) and their
diagnostics (``diagnostics``): one concept, fitting a parsed law to log errors.

- ``Problem``: log(err) = log(law(theta)) on fixed (L, M, D) points, constants searched through
  their logarithm, a soft-L1 loss (``scipy.optimize.least_squares``); ``start_points`` and
  ``best_fit`` run it from several starts; ``solve_batch`` runs many such fits at once (the
  bootstrap, leave-one-out).
- Preparing a grid for them: ``check_single_slice``, ``prepare`` (the reference floor removed
  in quadrature, the points a fit may use), ``fit_data`` / ``FitData`` (the arrays a fit
  reads), ``subset`` and ``largest_lm``.

The procedure and its sources are described in ``rms_fit`` and docs/analysis.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import FitError
from ..laws import Expression
from ..data import DRAW_COLUMN, GRID_COLUMNS, column_is, plain_value, sql_literal

FREE_BOUND = 10.0  # free (non-constant) parameters are searched in [-10, 10]
LOG_BOUND = 50.0  # positive constants are searched with log c in [-50, 50]
LOSS_SCALE = 0.1  # soft-L1 scale in log units: residuals beyond ~10% relative count linearly


# ----------------------------------------------------------------------------- the solver


def _packed(grid: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed errors as a NaN-padded (points, max_seeds) array and the seed counts."""
    # A grid built by hand may lack per-seed values: each point is then its own single seed.
    values = grid["seed_errs"] if "seed_errs" in grid else grid["err"]
    seeds = [np.atleast_1d(np.asarray(v, dtype=float)) for v in values]
    counts = np.array([len(s) for s in seeds])
    width = max(1, counts.max())
    packed = np.full((len(seeds), width), np.nan)
    for i, s in enumerate(seeds):
        packed[i, : len(s)] = s
    return packed, counts


class Problem:
    """log(err) = log(law(theta)) on fixed (L, M, D) points; theta has log-constants."""

    def __init__(self, expr: Expression, L, M, D, loss_scale: float):
        self.expr, self.L, self.M, self.D, self.loss_scale = expr, L, M, D, loss_scale
        self.is_log = np.array([p in expr.positive for p in expr.parameters])
        bound = np.where(self.is_log, LOG_BOUND, FREE_BOUND)
        self.bounds = (-bound, bound)

    def values(self, theta: np.ndarray) -> np.ndarray:
        return np.where(self.is_log, np.exp(np.clip(theta, -700, 700)), theta)

    def theta(self, values: np.ndarray) -> np.ndarray:
        return np.where(self.is_log, np.log(np.maximum(values, 1e-300)), values)

    def log_model(self, theta: np.ndarray, L=None, M=None, D=None) -> np.ndarray:
        L = self.L if L is None else L
        M = self.M if M is None else M
        D = self.D if D is None else D
        with np.errstate(all="ignore"):
            return np.log(self.expr(self.values(theta), L, M, D))

    def solve(self, log_err: np.ndarray, theta0: np.ndarray):
        def residuals(theta):
            r = self.log_model(theta) - log_err
            # An undefined law (negative, NaN) is a large, finite penalty so the search can leave it.
            return np.where(np.isfinite(r), r, 30.0)

        from scipy.optimize import least_squares  # on first use: a fit read back from the cache needs no scipy

        theta0 = np.clip(theta0, self.bounds[0] + 1e-9, self.bounds[1] - 1e-9)
        return least_squares(residuals, theta0, loss="soft_l1", f_scale=self.loss_scale,
                             bounds=self.bounds, method="trf", x_scale="jac", max_nfev=2000)


def start_points(problem: Problem, hints: dict, log_err: np.ndarray, n_starts: int, rng) -> list[np.ndarray]:
    names = problem.expr.parameters
    level = float(np.median(log_err))
    first = np.array([level if problem.is_log[i] else hints.get(n, 1.0) for i, n in enumerate(names)])
    starts = [first]
    for _ in range(n_starts - 1):
        starts.append(np.where(problem.is_log, level + rng.uniform(-3.0, 2.0, len(names)),
                               rng.uniform(-0.5, 2.0, len(names))))
    return starts


def best_fit(problem: Problem, log_err: np.ndarray, starts: list[np.ndarray]):
    results = [problem.solve(log_err, s) for s in starts]
    ok = [r for r in results if r.success and np.isfinite(r.cost)]
    if not ok:
        raise FitError(f"the fit of {problem.expr.text!r} did not converge from any of {len(starts)} starts")
    best = min(ok, key=lambda r: r.cost)
    agree = sum(1 for r in ok if abs(r.cost - best.cost) <= 1e-6 * max(best.cost, 1e-12) + 1e-12)
    return best, agree


# ----------------------------------------------------------------------------- preparing the data


def check_single_slice(grid: pd.DataFrame) -> None:
    varying = [c for c in GRID_COLUMNS if c in grid.columns and grid[c].nunique(dropna=False) > 1]
    if varying:
        def values(c):
            present = grid[c].map(plain_value)
            return sorted(present.dropna().unique()) + ([None] if present.isna().any() else [])

        detail = "; ".join(f"{c}: {', '.join(sql_literal(v) for v in values(c))}" for c in varying)
        example = column_is(varying[0], grid[varying[0]].iloc[0]).replace('"', "")
        raise FitError(f"the grid varies {', '.join(varying)} besides L, M, D ({detail}); "
                       f"fit one slice, e.g. --where \"{example}\"")


def _corrected(err: np.ndarray, ref: np.ndarray, floor: str) -> np.ndarray:
    """err with the reference's own error removed in quadrature (floor = "quadrature")."""
    if floor == "none":
        return err
    ref = np.where(np.isfinite(ref), ref, 0.0)
    return np.sqrt(np.maximum(err**2 - ref**2, 0.0))


@dataclass
class FitData:
    """The rows a fit uses: points, log errors, per-seed errors, draws."""

    frame: pd.DataFrame
    L: np.ndarray
    M: np.ndarray
    D: np.ndarray
    log_err: np.ndarray
    ref: np.ndarray
    packed: np.ndarray
    counts: np.ndarray
    draw: np.ndarray  # draw index 0..G-1 per row
    draws: list  # the draw labels (problem_seed values)


def prepare(grid: pd.DataFrame, floor: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    if floor not in ("quadrature", "none"):
        raise FitError(f"unknown floor treatment {floor!r}; expected one of: quadrature, none")
    grid = grid.reset_index(drop=True).copy()
    limited = grid["floor_limited"].to_numpy(bool) if "floor_limited" in grid else np.zeros(len(grid), bool)
    ref = grid["ref_err"].to_numpy(float) if "ref_err" in grid else np.full(len(grid), np.nan)
    err = grid["err"].to_numpy(float)
    grid["err_fit"] = _corrected(err, ref, floor)
    used = ~limited & np.isfinite(grid["err_fit"].to_numpy(float)) & (grid["err_fit"].to_numpy(float) > 0)
    return grid, used, (ref if floor == "quadrature" else np.zeros(len(grid)))


def fit_data(frame: pd.DataFrame, ref: np.ndarray) -> FitData:
    packed, counts = _packed(frame)
    if DRAW_COLUMN in frame and frame[DRAW_COLUMN].notna().any():
        labels = frame[DRAW_COLUMN].map(plain_value)
        draws = sorted(labels.dropna().unique().tolist()) + ([None] if labels.isna().any() else [])
        draw = np.array([draws.index(v) for v in labels])
    else:
        draws, draw = [None], np.zeros(len(frame), int)
    return FitData(frame, *(frame[c].to_numpy(float) for c in ("L", "M", "D")), np.log(frame["err_fit"].to_numpy(float)),
                 ref, packed, counts, draw, draws)


def subset(data: FitData, keep: np.ndarray) -> FitData:
    frame = data.frame[keep].reset_index(drop=True)
    return fit_data(frame, data.ref[keep])


def _soft_l1_cost(r: np.ndarray, scale: float, weight=1.0) -> np.ndarray:
    """least_squares' soft_l1 cost, 0.5 * sum f^2 * 2 (sqrt(1 + (r/f)^2) - 1), per row (weighted)."""
    return (weight * scale**2 * (np.sqrt(1.0 + (r / scale) ** 2) - 1.0)).sum(axis=-1)


def solve_batch(problem: Problem, log_err: np.ndarray, theta0: np.ndarray, L=None, M=None, D=None,
                max_iter: int = 200, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """Many robust fits at once: Levenberg-Marquardt on iteratively reweighted least squares.

    Minimizes the same soft-L1 cost of log residuals as ``least_squares(loss="soft_l1")`` for
    B data vectors in parallel (the bootstrap), each from its own start.

    Args:
        problem: the law, parametrization and bounds.
        log_err: (B, n) log errors. theta0: (B, p) starts (log-constants, free parameters).
        L, M, D: (n,) or (B, n) points; default the problem's points.
        weights: (B, n) non-negative weights of the points in the cost (default 1): 0 leaves a
            point out (padding of resamples of unequal size, leave-one-out fits).
    Returns:
        theta (B, p) and converged (B,) bool: the cost stopped decreasing (relative 1e-10) or
        no damped step could lower it (a stationary point).
    """
    L = problem.L if L is None else L
    M = problem.M if M is None else M
    D = problem.D if D is None else D
    lo, hi = problem.bounds
    f = problem.loss_scale
    theta = np.clip(np.array(theta0, dtype=float), lo, hi)
    B, p = theta.shape
    weight = np.ones(np.shape(log_err)) if weights is None else np.asarray(weights, dtype=float)

    def residuals(th):
        values = np.where(problem.is_log, np.exp(np.clip(th, -700, 700)), th)
        with np.errstate(all="ignore"):
            r = np.log(problem.expr.batch(values, L, M, D)) - log_err
        return np.where(np.isfinite(r), r, 30.0)

    r = residuals(theta)
    cost = _soft_l1_cost(r, f, weight)
    damping = np.full(B, 1e-3)
    done = np.zeros(B, bool)
    eye = np.eye(p)
    for _ in range(max_iter):
        if done.all():
            break
        h = 1e-7 * np.maximum(1.0, np.abs(theta))
        J = np.empty(r.shape + (p,))
        for j in range(p):
            shifted = theta.copy()
            shifted[:, j] += h[:, j]
            J[:, :, j] = (residuals(shifted) - r) / h[:, j: j + 1]
        w = weight / np.sqrt(1.0 + (r / f) ** 2)
        A = np.einsum("bnp,bn,bnq->bpq", J, w, J)
        g = np.einsum("bnp,bn,bn->bp", J, w, r)
        diag = np.einsum("bpp->bp", A) + 1e-12
        system = A + damping[:, None, None] * diag[:, :, None] * eye
        with np.errstate(all="ignore"):
            try:
                step = np.linalg.solve(system, -g[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:  # one resample's system is singular (degenerate points): pseudo-inverse for all
                step = (np.linalg.pinv(system) @ -g[:, :, None])[:, :, 0]
        step = np.where(np.isfinite(step), step, 0.0)
        trial = np.clip(theta + step, lo, hi)
        r_trial = residuals(trial)
        cost_trial = _soft_l1_cost(r_trial, f, weight)
        better = (cost_trial < cost) & ~done
        settled = better & (cost - cost_trial <= 1e-10 * (1.0 + cost))
        theta[better], r[better], cost[better] = trial[better], r_trial[better], cost_trial[better]
        damping = np.where(better, damping / 3.0, damping * 4.0)
        done |= settled | (damping > 1e10)
    return theta, done


def largest_lm(data: FitData) -> np.ndarray:
    LM = data.L * data.M
    return LM == LM.max()


__all__ = [
    "FREE_BOUND", "LOG_BOUND", "FitData", "Problem", "best_fit", "check_single_slice", "fit_data", "largest_lm", "prepare",
    "solve_batch", "start_points", "subset",
]
