"""Any law fitted to one term of the decomposition (``fit_term``: ``explorer fit --metric
fluct_out``), or user laws fitted to both terms at once (``fit_terms``: ``--form decomposed
--bias EXPR --fluct EXPR``).

A term is each (draw, point)'s bias or fluctuation over seeds from its Gram rows (``gram_terms``),
read as the decomposed fit reads it (``estimator.design``): the same rows (the bias above its
noise and FLOOR_FACTOR x the reference's error, the reference removed in quadrature; every
positive fluctuation), the same log correction and the same weights, 1 / (var of the log term +
WEIGHT_FLOOR^2). The law is fitted by weighted least squares on log terms, the draws pooled (one
set of parameters: no intercept per draw unless the law writes one). The intervals are the
decomposed fit's: the same shared-seed two-level bootstrap (draws, then one resample of seed
indices per draw for all its points; the terms recomputed from the resampled Gram rows), the
draws' part of the spread, the seeds' jackknife where that part is not positive, and Student's
t (``estimator.replicate_spread``). Both terms of ``fit_terms`` use the same resamples.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .estimator import Design, Draw, checked_draws, design, log_terms, replicate_spread, terms
from ...errors import FitError
from ...formatting import fmt
from ..data import FLOOR_FACTOR, TERM_METRICS
from ..laws import DEFAULT_FORM, EXPONENT_START, Expression, method_of, parse_expression, resolve_form, unidentified_terms
from ..fitting import FitResult, Problem, data_hash, fit_warnings, solve_batch

TERM_LOSS = 1e3  # soft-L1 scale of the batched solver, far beyond any log residual: plain least squares
N_STARTS = 8
DEFAULT_TERM_LAWS = {"bias": "c1*L**(-a)", "fluct": "c2*(D/(L*M))**b"}
UNTIED_FLUCT = "c2*D**g*(L*M)**(-b)"  # the default fluctuation law where the slice varies D


@dataclass
class TermFit:
    """One law fitted to one term: estimates (fit parametrization: log for positive constants),
    the interval's sd and quantile, the rescaled replicates, and what the point fit said."""

    expr: Expression
    theta: np.ndarray
    sd: np.ndarray
    quantile: float
    dof: int
    samples: np.ndarray
    method: str
    converged: bool
    jac: np.ndarray | None
    is_log: np.ndarray
    bounds: tuple

    def values(self, theta) -> np.ndarray:
        return np.where(self.is_log, np.exp(np.clip(theta, -700, 700)), theta)

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.theta - self.quantile * self.sd, self.theta + self.quantile * self.sd
        return self.values(np.clip(lo, *self.bounds)), self.values(np.clip(hi, *self.bounds))


def _rows(draws: list[Draw], des: Design, term: str, chosen, picks, memo: dict) -> tuple[np.ndarray, ...]:
    """(L, M, D, log term, weight) of the rows ``term`` uses, the chosen draws stacked."""
    out = []
    for g, pick in zip(chosen, picks):
        key = (int(g), None if pick is None else tuple(int(i) for i in pick))
        if key not in memo:
            memo[key] = log_terms(draws[g], des, g, pick)
        yb, yf, ub, uf = memo[key]
        y, used, w = (yb, ub, des.bias_w[g]) if term == "bias" else (yf, uf, des.fluct_w[g])
        d = draws[g]
        out.append((d.L[used], d.M[used], d.D[used], y[used], w[used]))
    return tuple(np.concatenate(p) for p in zip(*out))


def _batch(rows: list[tuple], width: int) -> tuple[np.ndarray, ...]:
    """Replicates' rows padded to one width (weight 0 past a replicate's own rows)."""
    L, M, D, y, w = (np.ones((len(rows), width)) for _ in range(5))
    y[:], w[:] = 0.0, 0.0
    for b, r in enumerate(rows):
        n = len(r[0])
        for array, values in zip((L, M, D, y, w), r):
            array[b, :n] = values
    return L, M, D, y, w


class _Law:
    """Weighted least squares of a law's log on log terms, constants through their log."""

    def __init__(self, expr: Expression):
        self.expr = expr
        self.is_log = np.array([p in expr.positive for p in expr.parameters])
        bound = np.where(self.is_log, 50.0, 10.0)  # as the fits to RMS errors search them
        self.bounds = (-bound, bound)

    def values(self, theta):
        return np.where(self.is_log, np.exp(np.clip(theta, -700, 700)), theta)

    def residuals(self, theta, L, M, D, y, w):
        with np.errstate(all="ignore"):
            r = np.log(self.expr(self.values(theta), L, M, D)) - y
        return np.sqrt(w) * np.where(np.isfinite(r), r, 30.0)

    def point_fit(self, L, M, D, y, w, hints: dict, rng) -> tuple[np.ndarray, bool, np.ndarray]:
        level = float(np.average(y, weights=w))
        first = np.array([level if lg else hints.get(n, 1.0 if n != "g" else 0.5)
                          for n, lg in zip(self.expr.parameters, self.is_log)])
        starts = [first] + [np.where(self.is_log, level + rng.uniform(-3.0, 2.0, len(first)),
                                     rng.uniform(-0.5, 2.0, len(first))) for _ in range(N_STARTS - 1)]
        from scipy.optimize import least_squares  # on first use: a fit read back from the cache needs no scipy

        results = []
        for start in starts:
            start = np.clip(start, self.bounds[0] + 1e-9, self.bounds[1] - 1e-9)
            results.append(least_squares(self.residuals, start, args=(L, M, D, y, w), bounds=self.bounds,
                                         method="trf", x_scale="jac", max_nfev=2000))
        ok = [r for r in results if r.success and np.isfinite(r.cost)]
        if not ok:
            raise FitError(f"the fit of {self.expr.text!r} did not converge from any of {len(starts)} starts")
        best = min(ok, key=lambda r: r.cost)
        agree = sum(1 for r in ok if abs(r.cost - best.cost) <= 1e-6 * max(best.cost, 1e-12) + 1e-12)
        return best.x, agree >= 2, best.jac


def _replicates(law: _Law, theta, rows: list[tuple]) -> np.ndarray:
    """The law refitted on each replicate's rows, from the estimate (batched Levenberg-Marquardt)."""
    if not rows:
        return np.empty((0, len(theta)))
    width = max(len(r[0]) for r in rows)
    L, M, D, y, w = _batch(rows, width)
    problem = Problem(law.expr, L[0], M[0], D[0], TERM_LOSS)
    out, _ = solve_batch(problem, y, np.tile(theta, (len(rows), 1)), L, M, D, weights=w)
    return out


def fit_one_term(draws: list[Draw], des: Design, term: str, expr: Expression, plan: dict, seed: int) -> TermFit:
    """``expr`` fitted to ``term`` with the replicates of ``plan`` (``resample_plan``)."""
    law = _Law(expr)
    memo: dict = {}
    G = len(draws)
    L, M, D, y, w = _rows(draws, des, term, range(G), [None] * G, memo)
    if len(y) < len(expr.parameters) + 1:
        raise FitError(f"only {len(y)} (draw, point) rows of the {term} term are measured; the law "
                       f"{expr.text!r} has {len(expr.parameters)} parameters and needs at least {len(expr.parameters) + 1}")
    hints = EXPONENT_START
    theta, converged, jac = law.point_fit(L, M, D, y, w, hints, np.random.default_rng(seed))
    if not plan["inner"]:
        nan = np.full(len(theta), np.nan)
        return TermFit(expr, theta, nan, math.nan, 0, np.empty((0, len(theta))), "none", converged, jac,
                       law.is_log, law.bounds)
    inner = _replicates(law, theta, [_rows(draws, des, term, c, p, memo) for c, p in plan["inner"]])
    outer = _replicates(law, theta, [_rows(draws, des, term, c, p, memo) for c, p in plan["outer"]]) if G > 1 else None
    v_within = np.zeros(len(theta))
    for g, deleted in enumerate(plan["jackknife"]):
        fits = _replicates(law, theta, [_rows(draws, des, term, c, p, memo) for c, p in deleted])
        R = len(deleted)
        v_within += (R - 1) / R * ((fits - fits.mean(axis=0)) ** 2).sum(axis=0) if R >= 3 else np.nan
    sd, quantile, dof, samples, method = replicate_spread(theta, inner, outer, v_within, G, draws[0].R)
    return TermFit(expr, theta, sd, quantile, dof, samples, method, converged, jac, law.is_log, law.bounds)


def resample_plan(draws: list[Draw], n_boot: int, seed: int) -> dict:
    """The resamples every term is refitted on (the decomposed fit's): ``inner``, the draws as
    observed with one resample of seed indices per draw; ``outer``, the draws resampled too;
    ``jackknife``, per draw the fits leaving out one seed index of every point of the draw."""
    rng = np.random.default_rng(seed)
    G = len(draws)
    if n_boot <= 0:
        return {"inner": [], "outer": [], "jackknife": []}

    def seeds_of(g):
        return rng.integers(0, draws[g].R, draws[g].R)

    inner = [(list(range(G)), [seeds_of(g) for g in range(G)]) for _ in range(n_boot)]
    outer = []
    for _ in range(n_boot if G > 1 else 0):
        chosen = list(rng.integers(0, G, G))
        outer.append((chosen, [seeds_of(g) for g in chosen]))
    jackknife = [[(list(range(G)), [np.delete(np.arange(d.R), k) if h == g else None for h in range(G)])
                  for k in range(d.R)] for g, d in enumerate(draws)]
    return {"inner": inner, "outer": outer, "jackknife": jackknife}


def _prepared(frame: pd.DataFrame, floor: str) -> tuple[list[Draw], Design, str | None]:
    _, draws = checked_draws(frame, floor)
    return draws, design(draws, floor), data_hash(frame)


def _term_law(form: str, term: str) -> tuple[str, Expression]:
    label, expr = resolve_form(form)
    if not method_of(label).from_rms_errors:
        raise FitError(f"the {label} law fits both terms itself; fit one term with a law of it, e.g. --form "
                       f"\"{DEFAULT_TERM_LAWS[term] if term == 'bias' else UNTIED_FLUCT}\"")
    return label, expr


def _measurable(expr: Expression, draws: list[Draw], des: Design, term: str) -> tuple[Expression, dict]:
    """The part of ``expr`` the term's rows can measure (``laws.unidentified_terms``)."""
    used = des.bias_used if term == "bias" else des.fluct_used
    grid = pd.DataFrame({c: np.concatenate([getattr(d, c)[u] for d, u in zip(draws, used)]) for c in ("L", "M", "D")})
    if not len(grid):
        raise FitError(f"no (draw, point) row of the {term} term is measured on this slice (see the decomposed "
                       "fit's notes: the bias must be resolved above its noise and the reference's floor)")
    return unidentified_terms(expr, grid)


def _estimates(fit: TermFit, asked: Expression) -> tuple[dict, dict, dict]:
    lo, hi = fit.interval()
    est = {n: math.nan for n in asked.parameters}
    low, high = dict(est), dict(est)
    for i, name in enumerate(fit.expr.parameters):
        est[name], low[name], high[name] = float(fit.values(fit.theta)[i]), float(lo[i]), float(hi[i])
    return est, low, high


def term_grid(frame: pd.DataFrame, draws: list[Draw], des: Design, floor: str) -> pd.DataFrame:
    """One row per (draw, point): its bias and fluctuation (NaN where not positive) and the rows
    each term uses, beside the frame's columns (the Gram matrices dropped)."""
    frame = frame[frame["n_seeds"] >= 2].reset_index(drop=True)
    grid = frame.drop(columns=["gram"]).copy()
    grid["bias"], grid["fluct"] = np.nan, np.nan
    grid["bias_used"], grid["fluct_used"] = False, False
    for g, d in enumerate(draws):
        b2, f2 = terms(d.grams)
        ref2 = d.ref2 if floor == "quadrature" else 0.0
        with np.errstate(invalid="ignore"):
            grid.loc[d.rows, "bias"] = np.sqrt(np.where(b2 - ref2 > 0, b2 - ref2, np.nan))
            grid.loc[d.rows, "fluct"] = np.sqrt(np.where(f2 > 0, f2, np.nan))
        grid.loc[d.rows, "bias_used"] = des.bias_used[g]
        grid.loc[d.rows, "fluct_used"] = des.fluct_used[g]
    return grid


def fit_term(frame: pd.DataFrame, form: str, *, n_boot: int = 200, seed: int = 0, where: str | None = None,
             floor: str = "quadrature", per_draw: bool = True, range_check: bool = True) -> FitResult:
    """A law fitted to one term of a ``term_grams`` frame (its ``metric`` column names the term:
    ``bias_out``, ``fluct_hidden``, ...): the registry's method "term" (module docstring).
    ``per_draw`` is not done for one term (each draw's fit is in its interval's replicates).

    Raises:
        FitError: a frame that names no term metric, a law fitted by a method of its own (the
            decomposed law), too few measured rows, a single seed per point.
    """
    metric = frame["metric"].iloc[0] if frame is not None and "metric" in frame and len(frame) else None
    if metric not in TERM_METRICS:
        raise FitError(f"fit_term fits one term of the decomposition; the frame's metric is {metric!r}, not one of: "
                       f"{', '.join(TERM_METRICS)}")
    term = TERM_METRICS[metric].term
    label, asked = _term_law(form, term)
    draws, des, trials_read = _prepared(frame, floor)
    expr, unidentified = _measurable(asked, draws, des, term)
    fit = fit_one_term(draws, des, term, expr, resample_plan(draws, n_boot, seed), seed)
    est, low, high = _estimates(fit, asked)
    grid = term_grid(frame, draws, des, floor)
    grid["err"] = grid["err_fit"] = grid[term]
    grid["used"] = grid[f"{term}_used"].to_numpy(bool) & np.isfinite(grid[term].to_numpy(float))
    L, M, D = (grid[c].to_numpy(float) for c in ("L", "M", "D"))
    grid["fitted"] = expr({n: est[n] for n in expr.parameters}, L, M, D)
    with np.errstate(all="ignore"):
        grid["residual_log"] = np.where(grid["used"], np.log(grid["err_fit"]) - np.log(grid["fitted"]), np.nan)
    result = _result(label, asked, expr, est, low, high, fit, fit.values(fit.samples), grid, frame, where, seed, n_boot, floor, unidentified,
                     trials_read, len(draws))
    result.metric = metric
    excluded = f"{des.n_floor} within {fmt(FLOOR_FACTOR, 'g')}x the reference's error and {des.n_unresolved} " \
               "not resolved above the seeds' noise left out; " if term == "bias" else ""
    result.notes = list(frame.attrs.get("notes", ())) + [
        f"{metric}: the {term} term of {TERM_METRICS[metric].error} over seeds, {int(grid['used'].sum())} (draw, point) "
        f"rows fitted; {excluded}weighted as the decomposed fit weights the term; errors behave as "
        f"{fmt(des.n_eff, '.3g')} independent entries"]
    if range_check:
        result.pre_asymptotic = _range_check(draws, des, term, fit, result)
    result.warnings = fit_warnings(result, fit.converged, fit.jac)
    return result


def fit_terms(frame: pd.DataFrame, form: str = DEFAULT_FORM, *, bias: str | None = None, fluct: str | None = None,
              n_boot: int = 200, seed: int = 0, where: str | None = None, floor: str = "quadrature",
              per_draw: bool = True, range_check: bool = True) -> FitResult:
    """User laws for the two terms fitted together on a ``seed_grams`` frame: ``bias`` on each
    point's bias, ``fluct`` on its fluctuation (the module docstring's weights and rows), from the
    same resamples; the law reported is sqrt(bias^2 + fluct^2). A term not given is the decomposed
    law's (``DEFAULT_TERM_LAWS``; c2*D**g*(L*M)**(-b) where the slice varies D).

    Raises:
        FitError: the two laws share a parameter name, a law too large for its rows, one seed.
            ExpressionError: an invalid law.
    """
    draws, des, trials_read = _prepared(frame, floor)
    laws = {"bias": parse_expression(bias or DEFAULT_TERM_LAWS["bias"]),
            "fluct": parse_expression(fluct or (UNTIED_FLUCT if des.varies_d else DEFAULT_TERM_LAWS["fluct"]))}
    shared = set(laws["bias"].parameters) & set(laws["fluct"].parameters)
    if shared:
        raise FitError(f"the bias law and the fluctuation law share {', '.join(sorted(shared))}: each term is fitted "
                       "on its own, so name their parameters apart (e.g. c1, a for the bias; c2, b, g for the fluctuation)")
    asked = parse_expression(f"sqrt(({laws['bias'].text})**2 + ({laws['fluct'].text})**2)",
                             tuple(laws["bias"].positive | laws["fluct"].positive))
    plan = resample_plan(draws, n_boot, seed)
    est, low, high, sd, unidentified, fits, fitted = {}, {}, {}, {}, {}, {}, {}
    for term, law in laws.items():
        expr, missing = _measurable(law, draws, des, term)
        fits[term] = fit = fit_one_term(draws, des, term, expr, plan, seed)
        e, lo, hi = _estimates(fit, law)
        est.update(e), low.update(lo), high.update(hi), unidentified.update(missing)
        sd.update(zip(expr.parameters, fit.sd))
        fitted[term] = expr
    grid = term_grid(frame, draws, des, floor)
    L, M, D = (grid[c].to_numpy(float) for c in ("L", "M", "D"))
    for term, expr in fitted.items():
        grid[f"{term}_fitted"] = expr({n: est[n] for n in expr.parameters}, L, M, D)
    ref = np.where(np.isfinite(grid["ref_err"].to_numpy(float)), grid["ref_err"].to_numpy(float), 0.0) \
        if "ref_err" in grid and floor == "quadrature" else 0.0
    err = np.sqrt(np.maximum(frame[frame["n_seeds"] >= 2]["gram"].map(lambda g: np.trace(g) / len(g)).to_numpy(float), 0))
    grid["err"], grid["err_fit"] = err, np.sqrt(np.maximum(err**2 - ref**2, 0.0))
    grid["fitted"] = np.sqrt(grid["bias_fitted"] ** 2 + grid["fluct_fitted"] ** 2)
    grid["used"] = (grid["err_fit"] > 0) & (grid["err"] >= FLOOR_FACTOR * ref)
    with np.errstate(all="ignore"):
        grid["residual_log"] = np.where(grid["used"], np.log(grid["err_fit"]) - np.log(grid["fitted"]), np.nan)
    law = parse_expression(f"sqrt(({fitted['bias'].text})**2 + ({fitted['fluct'].text})**2)", tuple(asked.positive))
    both = dataclasses.replace(fits["bias"], expr=law, converged=fits["bias"].converged and fits["fluct"].converged,
                               jac=None)
    label = resolve_form(form)[0]
    result = _result(label, asked, law, est, low, high, both, _paired_samples(fits), grid, frame, where, seed, n_boot, floor, unidentified,
                     trials_read, len(draws))
    result.sd = sd
    result.notes = list(frame.attrs.get("notes", ())) + [
        f"user laws on each term: bias ~ {laws['bias'].text} on {int(grid['bias_used'].sum())} (draw, point) rows, "
        f"fluctuation ~ {laws['fluct'].text} on {int(grid['fluct_used'].sum())}, from the same resamples"]
    if range_check:
        result.pre_asymptotic = [p for term in laws for p in _range_check(draws, des, term, fits[term], result)]
    result.warnings = fit_warnings(result, both.converged, None)
    return result


def _paired_samples(fits: dict) -> np.ndarray:
    """Both terms' rescaled replicates side by side (natural scale, the combined law's order):
    the same resamples, so a row is one resample of both."""
    n = min(len(f.samples) for f in fits.values())
    return np.column_stack([f.values(f.samples[:n]) for f in fits.values()]) if n else np.empty((0, 0))


def _result(label, asked, expr, est, low, high, fit: TermFit, samples: np.ndarray, grid, frame, where, seed, n_boot, floor,
            unidentified, trials_read, n_draws) -> FitResult:
    ok = grid["used"].to_numpy(bool) & np.isfinite(grid["residual_log"].to_numpy(float))
    res = grid.loc[ok, "residual_log"].to_numpy(float)
    logs = np.log(grid.loc[ok, "err_fit"].to_numpy(float))
    r2 = 1 - float(np.sum(res**2)) / float(np.sum((logs - logs.mean()) ** 2)) if ok.sum() > 1 else math.nan
    if not len(samples):
        samples = np.empty((0, len(expr.parameters)))
    steps = frame["step"].unique() if "step" in frame else []
    sweeps = frame["sweep"].unique() if "sweep" in frame else []
    result = FitResult(
        form=label, expression=asked, estimate=est, ci_low=low, ci_high=high, r2_log=r2, n_points=int(ok.sum()),
        n_excluded=int((~grid["used"].to_numpy(bool)).sum()), extrapolation_error=math.nan, converged=fit.converged,
        n_boot=len(samples), bootstrap=fit.method, grid=grid, samples=samples,
        sweep=sweeps[0] if len(sweeps) == 1 else None, step=int(steps[0]) if len(steps) == 1 else None,
        where=where, seed=seed, n_draws=n_draws, unidentified=unidentified, floor=floor,
        fitted_expression=expr if expr is not asked else None, data_hash=trials_read, n_boot_asked=n_boot)
    result.sd = {n: float(s) for n, s in zip(expr.parameters, fit.sd)}
    if n_boot:
        result.ci_quantile = f"t({fit.dof})"
        result.ci_sd = (f"the decomposed fit's resamples ({fit.method}; the draws' part of the spread, the seeds' "
                        "jackknife where that part is not positive)")
    return result


def _range_check(draws: list[Draw], des: Design, term: str, fit: TermFit, result: FitResult) -> list[str]:
    """The law refitted without the smallest L, then L*M, then D (each where the slice holds 3
    values of it or more): an exponent that moves by more than its CI half-width is named."""
    exponents = [i for i, n in enumerate(fit.expr.parameters) if not fit.is_log[i]]
    found = []
    for axis in ("L", "L*M", "D"):
        def of(d):
            return {"L": d.L, "L*M": d.L * d.M, "D": d.D}[axis]

        values = np.unique(np.concatenate([of(d) for d in draws]))
        if len(values) < 3 or not exponents:
            continue
        keep = [of(d) > values[0] for d in draws]
        sub_des = dataclasses.replace(des, bias_used=[u & k for u, k in zip(des.bias_used, keep)],
                                      fluct_used=[u & k for u, k in zip(des.fluct_used, keep)])
        try:
            moved = fit_one_term(draws, sub_des, term, fit.expr, resample_plan(draws, 0, 0), 0)
        except FitError:
            continue
        for i in exponents:
            name = fit.expr.parameters[i]
            half = (result.ci_high[name] - result.ci_low[name]) / 2
            shift = float(moved.theta[i] - fit.theta[i])
            if np.isfinite(half) and abs(shift) > half:
                found.append(f"{axis} = {fmt(values[0], 'g')}: dropping it moves {name} from "
                             f"{fmt(fit.theta[i], '.3f')} to {fmt(moved.theta[i], '.3f')}, more than its CI "
                             f"half-width {fmt(half, '.3f')}: try --where \"{axis} > {fmt(values[0], 'g')}\"")
    return found


__all__ = ["DEFAULT_TERM_LAWS", "TermFit", "fit_one_term", "fit_term", "fit_terms", "resample_plan", "term_grid"]
