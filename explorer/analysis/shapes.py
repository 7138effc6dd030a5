"""Shape advice: for a parameter budget P = L*M*D, the (L, M, D) that minimizes a fitted law.

Source: Chaintron, Chizat, Maass, "ResNets of All Shapes and Sizes" (arXiv:2603.18168). With the
``joint`` law err ~ c1/L + c2 sqrt(D/(L M)) + c3/sqrt(D) and L M = P/D, the sampling term is
c2 D / sqrt(P) whatever the split between L and M, so depth is free to replace width (the best
M is 1: "depth begets width"), and balancing c2 D / sqrt(P) against c3 / sqrt(D) gives
D ~ P^(1/3) and a best error ~ P^(-1/6).

The minimization is numeric (any fitted law works): a grid over log L and log M with
log D = log P - log L - log M and L, M, D >= 1, refined twice around its best cell; then the
integer shapes around the continuous optimum with L*M*D <= P are scored and the best kept.

Guard rails (``advice["warnings"]``): a budget above the sweep's largest measured P is an
extrapolation and its row says how far (``extrapolation`` = P / largest measured P, and which
of L, M, D lie outside the measured ranges); beyond ``MAX_EXTRAPOLATION`` times the largest P
the advice is refused (NaN shape, reason in ``refused``); an exponent whose CI has width zero
(below 0.1% of it) restates the law's algebra rather than measuring anything; a single-D sweep cannot advise on D.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..errors import FitError
from .fitting import FitResult

THEORY_EXPONENT = -1 / 6  # companion paper: best error ~ P^(-1/6) for the joint law
MAX_EXTRAPOLATION = 100.0  # budgets beyond 100x the largest measured P are refused


def _continuous_best(law, log_p: float, n: int = 61) -> tuple[float, float, float, float]:
    """(L, M, D, err) minimizing law(L, M, D) on L*M*D = P, L, M, D >= 1 (continuous)."""
    lo_u, hi_u, lo_v, hi_v = 0.0, log_p, 0.0, log_p
    best = None
    for _ in range(3):
        u, v = np.meshgrid(np.linspace(lo_u, hi_u, n), np.linspace(lo_v, hi_v, n), indexing="ij")
        w = log_p - u - v
        ok = w >= -1e-12
        with np.errstate(all="ignore"):
            err = law(np.exp(u), np.exp(v), np.exp(np.maximum(w, 0.0)))
        err = np.where(ok & np.isfinite(err) & (err > 0), err, np.inf)
        i, j = np.unravel_index(np.argmin(err), err.shape)
        if not np.isfinite(err[i, j]):
            break
        best = (float(u[i, j]), float(v[i, j]), float(err[i, j]))
        du, dv = (hi_u - lo_u) / (n - 1), (hi_v - lo_v) / (n - 1)
        lo_u, hi_u = max(0.0, best[0] - 2 * du), min(log_p, best[0] + 2 * du)
        lo_v, hi_v = max(0.0, best[1] - 2 * dv), min(log_p, best[1] + 2 * dv)
    if best is None:
        return (math.nan,) * 4
    u, v, err = best
    return math.exp(u), math.exp(v), math.exp(max(log_p - u - v, 0.0)), err


def _integer_best(law, P: float, L: float, M: float, D: float) -> tuple[int, int, int, float]:
    """The best integer shape with L*M*D <= P near a continuous optimum."""
    def around(x):
        base = max(1, int(math.floor(x)))
        return {max(1, base + k) for k in (-1, 0, 1, 2)}

    best = (1, 1, 1, math.inf)
    for d in around(D):
        for m in around(M):
            ell = int(P // (m * d))
            if ell < 1:
                continue
            err = float(law(ell, m, d))
            if np.isfinite(err) and err < best[3]:
                best = (ell, m, d, err)
    return best


def best_shape(fit: FitResult, budget: float, max_extrapolation: float = MAX_EXTRAPOLATION) -> dict:
    """The shape minimizing the fitted error at a parameter budget P = L*M*D.

    Args:
        fit: a fitted law (a ``joint`` fit is the one the theory is about; without a D term in
            the law, the answer is D = 1).
        budget: P, the number of unit parameters (L*M*D), > 1.
        max_extrapolation: refuse budgets beyond this multiple of the largest measured P
            (math.inf: never; for studying the law's algebra, not for advice).
    Returns:
        dict with P, the continuous optimum L, M, D, best_err, the integer shape L_int,
        M_int, D_int (L_int*M_int*D_int <= P) with its fitted error err_int, extrapolation
        (P / the largest measured P), outside (which of L, M, D leave the measured ranges) and
        refused (the reason, when P is beyond ``MAX_EXTRAPOLATION`` x the largest measured P:
        the shape is then NaN / 0).
    Raises:
        FitError: a budget that is not a number > 1.
    """
    if not isinstance(budget, (int, float)) or isinstance(budget, bool) or not budget > 1 or not math.isfinite(budget):
        raise FitError(f"the parameter budget P must be a number > 1, got {budget!r}")
    law = fit.predict
    largest = _grid_max_p(fit)
    if budget > max_extrapolation * largest:
        nan = math.nan
        return {"P": float(budget), "L": nan, "M": nan, "D": nan, "best_err": nan, "L_int": 0, "M_int": 0, "D_int": 0,
                "err_int": nan, "extrapolation": budget / largest, "outside": "",
                "refused": f"P = {budget:.3g} is {budget / largest:.3g}x the largest measured P ({largest:.3g}); "
                           f"advice is refused beyond {max_extrapolation:g}x"}
    L, M, D, err = _continuous_best(law, math.log(budget))
    Li, Mi, Di, erri = _integer_best(law, budget, L, M, D)
    outside = []
    for axis, value in (("L", Li), ("M", Mi), ("D", Di)):
        lo, hi = float(fit.grid[axis].min()), float(fit.grid[axis].max())
        if value > hi * (1 + 1e-9) or value < lo * (1 - 1e-9):
            outside.append(f"{axis} = {value} outside the measured {lo:g}..{hi:g}")
    return {"P": float(budget), "L": L, "M": M, "D": D, "best_err": err,
            "L_int": Li, "M_int": Mi, "D_int": Di, "err_int": erri, "extrapolation": budget / largest,
            "outside": "; ".join(outside), "refused": ""}


def beyond_data(row) -> str:
    """How far a ``best_shape`` row (a frontier row) lies beyond the data, in words: '' for a
    shape inside the measured ranges at a measured budget; else the factor beyond the largest
    measured P and the axes outside their measured ranges, e.g. "100x beyond the largest
    measured P (L = 451972 outside the measured 4..64)". One wording for ``explorer fit
    --budget``'s warnings and the report's summary."""
    get = row.get if isinstance(row, dict) else lambda k, d=None: getattr(row, k, d)
    outside, factor = get("outside", "") or "", float(get("extrapolation", 1.0))
    if factor > 1 + 1e-9:
        return f"{factor:.3g}x beyond the largest measured P" + (f" ({outside})" if outside else "")
    return f"the advised shape leaves the measured ranges ({outside})" if outside else ""


def shape_frontier(fit: FitResult, budgets, max_extrapolation: float = MAX_EXTRAPOLATION) -> pd.DataFrame:
    """``best_shape`` at each budget: one row per P (columns of ``best_shape``)."""
    return pd.DataFrame([best_shape(fit, float(p), max_extrapolation) for p in budgets])


def frontier_exponent(frontier: pd.DataFrame) -> float:
    """The log-log slope of the best error against P (the theory says -1/6 for ``joint``)."""
    ok = np.isfinite(frontier["best_err"]) & (frontier["best_err"] > 0)
    if ok.sum() < 2:  # refused budgets have a NaN error
        return math.nan
    return float(np.polyfit(np.log(frontier["P"][ok]), np.log(frontier["best_err"][ok]), 1)[0])


def default_budgets(fit: FitResult, count: int = 13) -> np.ndarray:
    """Budgets from the sweep's smallest P = L*M*D to MAX_EXTRAPOLATION times its largest."""
    P = (fit.grid["L"] * fit.grid["M"] * fit.grid["D"]).to_numpy(float)
    return np.geomspace(max(2.0, P.min()), P.max() * MAX_EXTRAPOLATION, count)


def _grid_max_p(fit: FitResult) -> float:
    return float((fit.grid["L"] * fit.grid["M"] * fit.grid["D"]).max())


def shape_advice(fit: FitResult, budgets=None, n_samples: int = 100,
                 max_extrapolation: float = MAX_EXTRAPOLATION) -> dict:
    """Best shapes over budgets, the exponent of the best error in P, and its bootstrap CI.

    Args:
        fit: a fitted law with bootstrap samples (``fit.samples``).
        budgets: the P values; default ``default_budgets(fit)``.
        n_samples: bootstrap parameter vectors used for the exponent's CI (0: no CI).
        max_extrapolation: see ``best_shape``.
    Returns:
        dict: ``frontier`` (DataFrame), ``exponent`` (float, the log-log slope of the best error
        over the budgets at or above the sweep's largest P, ``exponent_range``), ``ci_low``,
        ``ci_high`` (95%, from the fit's bootstrap samples),
        ``theory`` (-1/6), ``d_values`` (distinct D in the fitted grid: one value means the D
        dependence is the law's assumption, not a measurement), ``warnings`` (sentences).
    """
    budgets = default_budgets(fit) if budgets is None else np.asarray(budgets, dtype=float)
    frontier = shape_frontier(fit, budgets, max_extrapolation)
    # The exponent is read beyond the sweep (P >= its largest model), where the law's leading
    # terms dominate; the frontier inside the sweep's range is still curving.
    tail = budgets >= _grid_max_p(fit) * (1 - 1e-9)
    if tail.sum() < 2:
        tail = np.ones_like(budgets, dtype=bool)
    exponent = frontier_exponent(frontier[tail])
    slopes = []
    for params in fit.samples[: max(0, n_samples)]:
        def law(L, M, D, _p=params):
            return fit.law(_p, L, M, D)
        errs = np.array([_continuous_best(law, math.log(p), n=25)[3] for p in budgets[tail]])
        ok = np.isfinite(errs) & (errs > 0)
        if ok.sum() >= 2:
            slopes.append(np.polyfit(np.log(budgets[tail][ok]), np.log(errs[ok]), 1)[0])
    lo, hi = (np.percentile(slopes, [2.5, 97.5]) if slopes else (math.nan, math.nan))
    d_values = sorted(fit.grid["D"].unique().tolist())
    warnings = [row.refused for row in frontier.itertuples() if row.refused]
    warnings += [f"P = {row.P:.3g} extrapolates {beyond_data(row)}"
                 for row in frontier.itertuples() if not row.refused and row.extrapolation > 1 + 1e-9]
    warnings += [f"P = {row.P:.3g}: {beyond_data(row)}"
                 for row in frontier.itertuples() if not row.refused and row.extrapolation <= 1 + 1e-9 and row.outside]
    if math.isfinite(lo) and math.isfinite(hi) and hi - lo <= 1e-3 * max(abs(exponent), 1e-12):
        warnings.append(f"the exponent's CI has width zero: P^{exponent:.3f} follows from the law's algebra "
                        "(its fitted terms), it is not a measurement")
    if len(d_values) < 2:
        warnings.append("the sweep has a single D: the advised D comes from the law's assumed D dependence, "
                        "not from data")
    return {"frontier": frontier, "exponent": exponent, "ci_low": float(lo), "ci_high": float(hi),
            "exponent_range": (float(budgets[tail].min()), float(budgets[tail].max())),
            "theory": THEORY_EXPONENT, "d_values": d_values, "warnings": warnings}


def format_advice(advice: dict) -> str:
    """Text lines: the best integer shape per budget, and the exponent of the best error in P."""
    lines = [f"{'P':>12} {'L':>8} {'M':>6} {'D':>6} {'fitted error':>13} {'beyond data':>12}"]
    for row in advice["frontier"].itertuples():
        if row.refused:
            lines.append(f"{row.P:>12.4g} {'refused':>8} {'':>6} {'':>6} {'':>13} {row.extrapolation:>11.3g}x")
            continue
        beyond = f"{row.extrapolation:.3g}x" if row.extrapolation > 1 + 1e-9 else ""
        lines.append(f"{row.P:>12.4g} {row.L_int:>8d} {row.M_int:>6d} {row.D_int:>6d} {row.err_int:>13.4g} {beyond:>12}")
    lo, hi = advice["exponent_range"]
    if math.isfinite(advice["exponent"]):
        lines.append(f"best error ~ P^{advice['exponent']:.3f} (95% CI [{advice['ci_low']:.3f}, {advice['ci_high']:.3f}]) "
                     f"for P in [{lo:.3g}, {hi:.3g}]; theory -1/6 for the joint law")
    else:
        lines.append("best error vs P: its exponent needs two budgets or more (repeat --budget, or give none "
                     "for a default range); theory -1/6 for the joint law")
    lines.extend(f"warning: {w}" for w in advice.get("warnings", ()))
    return "\n".join(lines)
