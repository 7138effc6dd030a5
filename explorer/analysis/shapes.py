"""The error against compute: the shape a fitted law advises at a parameter budget, and the
frontier of a grid of measured errors (one question: the lowest error reachable at each compute).

Two counts of compute, each as its source draws it: the advice's budget is the unit parameters
P = L*M*D (``explorer fit --budget``); the frontier's axis is the companion paper's parameter count
P = 2 L M D (its figure).

Shape advice (``best_shape``, ``shape_advice``): for a budget P = L*M*D, the (L, M, D) that
minimizes a fitted law.

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

The measured frontier (``frontier``, ``frontier_exponent``): the best error a grid of errors
reaches at each compute, and its slope.

The companion paper draws, over every shape (L, M, D) it trained, the error against the
parameter count P = 2 L M D, and a hand-set curve c P^(-e) along the lower edge of the cloud
(2 P^(-1/6) for the hidden error, 0.7 P^(-1/5) for the output). This measures that edge:

- ``frontier``: at each distinct P, the best (smallest) error; a P is on the frontier when its
  best error is below the best error of every smaller P (more compute that does no better is
  not on the edge).
- ``interior``: the frontier's points whose best shape lies inside the grid (neither M nor D at
  the smallest or largest value the grid has). Where the best shape sits on the grid's edge, the
  frontier follows the edge (at small P, M = 1 and only D grows), not the trade-off between the
  error terms the exponent is about: on the authors' 20 x 20 grid the theory's law gives a whole
  frontier's exponent of 0.183 instead of 1/6, its interior 0.167 (tests/explorer/analysis/test_frontier.py).
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

from ..errors import FitError
from .fitting import FitResult

THEORY_EXPONENT = -1 / 6  # companion paper: best error ~ P^(-1/6) for the joint law
MAX_EXTRAPOLATION = 100.0  # budgets beyond 100x the largest measured P are refused
MIN_FRONTIER_POINTS = 3  # a slope through fewer frontier points is not a measurement
MIN_P_SPAN = 10.0  # nor one whose frontier spans less than a decade of compute


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


def _log_slope(P, err) -> float:
    """The least-squares slope of log err on log P (err ~ P^slope)."""
    return float(np.polyfit(np.log(np.asarray(P, dtype=float)), np.log(np.asarray(err, dtype=float)), 1)[0])


def _advised_exponent(advised: pd.DataFrame) -> float:
    """The log-log slope of the advised shapes' best error against P (the theory says -1/6 for ``joint``)."""
    ok = np.isfinite(advised["best_err"]) & (advised["best_err"] > 0)
    if ok.sum() < 2:  # refused budgets have a NaN error
        return math.nan
    return _log_slope(advised["P"][ok], advised["best_err"][ok])


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
    advised = shape_frontier(fit, budgets, max_extrapolation)
    # The exponent is read beyond the sweep (P >= its largest model), where the law's leading
    # terms dominate; the frontier inside the sweep's range is still curving.
    tail = budgets >= _grid_max_p(fit) * (1 - 1e-9)
    if tail.sum() < 2:
        tail = np.ones_like(budgets, dtype=bool)
    exponent = _advised_exponent(advised[tail])
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
    warnings = [row.refused for row in advised.itertuples() if row.refused]
    warnings += [f"P = {row.P:.3g} extrapolates {beyond_data(row)}"
                 for row in advised.itertuples() if not row.refused and row.extrapolation > 1 + 1e-9]
    warnings += [f"P = {row.P:.3g}: {beyond_data(row)}"
                 for row in advised.itertuples() if not row.refused and row.extrapolation <= 1 + 1e-9 and row.outside]
    if math.isfinite(lo) and math.isfinite(hi) and hi - lo <= 1e-3 * max(abs(exponent), 1e-12):
        warnings.append(f"the exponent's CI has width zero: P^{exponent:.3f} follows from the law's algebra "
                        "(its fitted terms), it is not a measurement")
    if len(d_values) < 2:
        warnings.append("the sweep has a single D: the advised D comes from the law's assumed D dependence, "
                        "not from data")
    return {"frontier": advised, "exponent": exponent, "ci_low": float(lo), "ci_high": float(hi),
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


# ----------------------------------------------------------------------------- the measured frontier


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
    return _log_slope(edge["P"], edge["err"])


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
    from scipy import stats  # on first use: a report that reads its fits back needs no scipy

    half = float(stats.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
    return FrontierExponent(mean, mean - half, mean + half, per_draw, pooled, pooled_edge)


__all__ = ["MAX_EXTRAPOLATION", "MIN_FRONTIER_POINTS", "MIN_P_SPAN", "THEORY_EXPONENT", "FrontierExponent", "best_shape",
           "beyond_data", "compute", "default_budgets", "format_advice", "frontier", "frontier_exponent", "frontier_slope",
           "interior", "shape_advice", "shape_frontier"]
