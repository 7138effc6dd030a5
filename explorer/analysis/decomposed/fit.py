"""The ``decomposed`` law as a ``FitResult``: the estimates of ``estimator``, the
surfaces they imply, the per-draw fits and the pre-asymptotic guard.

The guard fires on two signs that the smallest points are not yet in the law's range:
- a local slope in L steeper than -1 beyond twice its standard error, of the bias within a
  column (M, D) or of the RMS error (no mix of a 1/L and a 1/sqrt(L) term is steeper than -1);
- dropping the smallest L (for a) or the smallest L*M (for b) moves the exponent by more than
  its own standard error and by more than twice the standard error of the shift itself
  (sqrt(sd_without^2 - sd^2): the two estimates share their other points), so that noise alone
  rarely fires it.
Each names the points and the ``--where`` that leaves them out.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .estimator import NAMES, Decomposed, Draw, design, draws_of, estimate, one_seed_reason, terms
from ...errors import FitError
from ..laws import parse_expression, resolve_form
from ..fitting import FitResult, data_hash, fit_warnings
from ...formatting import fmt
from ..data import DRAW_COLUMN, FLOOR_FACTOR

GUARD_SIGMAS = 2.0  # "beyond noise": this many standard errors
GUARD_RESAMPLES = 50  # bootstrap resamples of the refit without the smallest points


def _values(theta: np.ndarray) -> dict:
    """(log c1, a, log c2, b) -> {c1, a, c2, b}."""
    return {"c1": math.exp(theta[0]) if np.isfinite(theta[0]) else math.nan, "a": float(theta[1]),
            "c2": math.exp(theta[2]) if np.isfinite(theta[2]) else math.nan, "b": float(theta[3])}


def _subset(draws: list[Draw], keep) -> list[Draw]:
    out = []
    for d in draws:
        k = keep(d)
        if k.any():
            out.append(Draw(d.label, d.grams[k], d.rows[k], d.L[k], d.M[k], d.D[k], d.ref2[k]))
    return out


def fit_decomposed(frame: pd.DataFrame, form: str = "decomposed", *, n_boot: int = 200, seed: int = 0,
                   where: str | None = None, floor: str = "quadrature", per_draw: bool = True,
                   range_check: bool = True) -> FitResult:
    """Fit the decomposed law to a ``seed_grams`` frame (one slice, one step): the registry's
    ``decomposed`` method's fitter (an ``explorer.analysis.fitting.Fitter``).

    Args:
        form: the law, a registry name or an expression whose parameters are c1, a (the bias
            term) and c2, b (the fluctuation term).
    Raises:
        FitError: a law of other parameters; no rows; a single seed per point (no
            decomposition); too few points for either term.
    """
    label, expr = resolve_form(form)
    if sorted(expr.parameters) != sorted(NAMES):
        raise FitError(f"the decomposed fit measures c1, a (the bias) and c2, b (the fluctuation); law {label!r} "
                       f"has {', '.join(expr.parameters)}")
    if frame is None or len(frame) == 0:
        raise FitError("no grid points to fit")
    if floor not in ("quadrature", "none"):
        raise FitError(f"unknown floor treatment {floor!r}; expected one of: quadrature, none")
    if int(frame["n_seeds"].max()) < 2:
        raise FitError(one_seed_reason(int(frame["n_seeds"].max())))
    trials_read = data_hash(frame)
    frame = frame[frame["n_seeds"] >= 2].reset_index(drop=True)
    draws = draws_of(frame)
    fit = estimate(draws, n_boot=n_boot, seed=seed, floor=floor)
    lo, hi = fit.interval()
    est, low, high = _values(fit.theta), _values(lo), _values(hi)
    unidentified = _unmeasured(fit, draws)
    for name in unidentified:
        est[name] = low[name] = high[name] = math.nan
    fitted_law = _measured_law(unidentified)
    grid = _grid(frame, draws, fit, est, floor)
    law = fitted_law or expr
    by_name = {"c1": np.exp(fit.samples[:, 0]), "a": fit.samples[:, 1], "c2": np.exp(fit.samples[:, 2]),
               "b": fit.samples[:, 3]}
    samples = np.column_stack([by_name[n] for n in law.parameters]) if len(fit.samples) \
        else np.empty((0, len(law.parameters)))  # in the law's parameter order
    samples = samples[np.all(np.isfinite(samples), axis=1)]
    ok = grid["used"].to_numpy(bool) & np.isfinite(grid["residual_log"].to_numpy(float))
    res = grid.loc[ok, "residual_log"].to_numpy(float)
    logs = np.log(grid.loc[ok, "err_fit"].to_numpy(float))
    r2 = 1 - float(np.sum(res**2)) / float(np.sum((logs - logs.mean()) ** 2)) if ok.sum() > 1 else math.nan

    def one(column):
        vals = frame[column].unique() if column in frame else []
        return vals[0] if len(vals) == 1 else None

    step = one("step")
    result = FitResult(
        form=label, expression=expr, estimate=est, ci_low=low, ci_high=high, r2_log=r2,
        n_points=int(ok.sum()), n_excluded=int(fit.design.n_floor), extrapolation_error=math.nan, converged=True,
        n_boot=len(samples), bootstrap=fit.method, grid=grid, samples=samples, sweep=one("sweep"),
        metric=one("metric"), step=None if step is None else int(step), where=where, seed=seed, n_draws=len(draws),
        unidentified=unidentified, floor=floor, fitted_expression=fitted_law, data_hash=trials_read,
        n_boot_asked=n_boot)
    result.sd = dict(zip(NAMES, fit.sd))
    if per_draw and len(draws) > 1:
        result.per_draw = _per_draw(draws, n_boot, seed, floor)
    if range_check:
        result.pre_asymptotic = guard(draws, fit, floor)
    result.surfaces = surfaces(est)
    result.notes = list(frame.attrs.get("notes", ())) + _notes(fit, frame)
    result.ci_quantile, result.ci_sd = _interval_rule(fit, draws, n_boot)
    result.warnings = fit_warnings(result, True, None)
    return result


def _measured_law(unidentified: dict):
    """The law without the term the grid does not measure (None: both are measured)."""
    if "a" in unidentified and "b" in unidentified:
        raise FitError(f"neither term of the decomposed law is measured on this grid: {unidentified['a']}")
    if "a" in unidentified:
        return parse_expression("c2*(D/(L*M))**b")
    if "b" in unidentified:
        return parse_expression("c1*L**(-a)")
    return None


def _unmeasured(fit: Decomposed, draws: list[Draw]) -> dict:
    out = {}
    if not np.isfinite(fit.theta[1]):
        why = ("not measured on this grid: the bias is resolved (above its noise and the reference's floor) at "
               "fewer than 2 depths of any column (M, D); add larger M or more seeds")
        out.update(c1=why, a=why)
    if not np.isfinite(fit.theta[3]):
        why = "not measured on this grid: the fluctuation varies with fewer than 2 values of D/(L*M)"
        out.update(c2=why, b=why)
    return out


def _grid(frame, draws, fit: Decomposed, est: dict, floor: str) -> pd.DataFrame:
    """One row per (draw, point): err, bias, fluct, what each term used, the RSS surface."""
    grid = frame.drop(columns=["gram"]).copy()
    grid["err"] = frame["gram"].map(lambda g: float(np.sqrt(max(np.trace(g) / len(g), 0.0))))
    grid["seed_errs"] = frame["gram"].map(lambda g: np.sqrt(np.clip(np.diag(g), 0, None)))
    ref = grid["ref_err"].to_numpy(float) if "ref_err" in grid else np.full(len(grid), np.nan)
    grid["floor_limited"] = grid["err"].to_numpy(float) < FLOOR_FACTOR * np.where(np.isfinite(ref), ref, 0.0)
    for column in ("bias", "fluct"):
        grid[column] = np.nan
    grid["bias_used"], grid["fluct_used"] = False, False
    for g, d in enumerate(draws):
        b2, f2 = terms(d.grams)
        ref2 = d.ref2 if floor == "quadrature" else 0.0
        with np.errstate(invalid="ignore"):
            grid.loc[d.rows, "bias"] = np.sqrt(np.where(b2 - ref2 > 0, b2 - ref2, np.nan))
            grid.loc[d.rows, "fluct"] = np.sqrt(np.where(f2 > 0, f2, np.nan))
        grid.loc[d.rows, "bias_used"] = fit.design.bias_used[g]
        grid.loc[d.rows, "fluct_used"] = fit.design.fluct_used[g]
    L, M, D = (grid[c].to_numpy(float) for c in ("L", "M", "D"))
    ref0 = np.where(np.isfinite(ref), ref, 0.0) if floor == "quadrature" else 0.0
    grid["err_fit"] = np.sqrt(np.maximum(grid["err"].to_numpy(float) ** 2 - ref0**2, 0.0))
    with np.errstate(all="ignore"):
        grid["bias_fitted"] = est["c1"] * L ** (-est["a"])
        grid["fluct_fitted"] = est["c2"] * (D / (L * M)) ** est["b"]
        grid["fitted"] = np.sqrt(np.nan_to_num(grid["bias_fitted"]) ** 2 + np.nan_to_num(grid["fluct_fitted"]) ** 2)
        used = ~grid["floor_limited"].to_numpy(bool) & (grid["err_fit"].to_numpy(float) > 0)
        grid["residual_log"] = np.where(used, np.log(grid["err_fit"]) - np.log(grid["fitted"]), np.nan)
    grid["used"] = used
    return grid


def surfaces(est: dict) -> list[str]:
    """The two surfaces with the fitted constants: the theorem's additive bound and the RSS."""
    missing = [term for term, names in (("bias", ("c1", "a")), ("fluctuation", ("c2", "b")))
               if not all(np.isfinite(est[n]) for n in names)]
    if missing:
        return [f"surfaces: not stated, the {' and '.join(missing)} term is not measured on this grid"]
    c1, a, c2, b = (fmt(est[n], ".3g", missing="nan") for n in ("c1", "a", "c2", "b"))
    return [f"additive surface (the theorem's bound): err <= c1/L + c2*sqrt(D/(L*M)) = {c1}/L + {c2}*sqrt(D/(L*M))",
            f"RSS surface (the expected RMS over seeds): err ~ sqrt((c1*L^-a)^2 + (c2*(D/(L*M))^b)^2) "
            f"= sqrt(({c1}*L^-{a})^2 + ({c2}*(D/(L*M))^{b})^2)"]


def _notes(fit: Decomposed, frame) -> list[str]:
    des = fit.design
    bias_rows = int(sum(u.sum() for u in des.bias_used))
    fluct_rows = int(sum(u.sum() for u in des.fluct_used))
    M, D = des.c1_column
    column = f"; c1 is the bias level at M = {fmt(M, 'g')}, D = {fmt(D, 'g')}" if np.isfinite(M) else ""
    return [f"bias: {bias_rows} (draw, point) rows fitted, {des.n_floor} within {fmt(FLOOR_FACTOR, 'g')}x the "
            f"reference's error and {des.n_unresolved} not resolved above the seeds' noise left out{column}; "
            f"fluctuation: {fluct_rows} rows fitted; errors behave as {fmt(des.n_eff, '.3g')} independent entries"]


def _interval_rule(fit: Decomposed, draws: list[Draw], n_boot: int) -> tuple[str, str]:
    """(quantile, where the sd comes from) of ``decomposed.estimate``'s interval, in words."""
    if not n_boot:
        return "1.96", ""
    jackknife = "a jackknife over the seed indices, each left out of every point of its draw at once"
    if len(draws) > 1:
        return f"t({fit.dof})", (f"the problem draws' part of the spread of {n_boot} resamples of the {len(draws)} "
                                 "draws, then of seed indices shared by each draw's points (" + jackknife +
                                 " where that part is not positive)")
    return f"t({fit.dof})", f"{jackknife} ({draws[0].R} seeds)"


def _per_draw(draws: list[Draw], n_boot: int, seed: int, floor: str) -> pd.DataFrame:
    rows = []
    for d in draws:
        try:
            one = estimate([d], n_boot=min(n_boot, 100), seed=seed, floor=floor)
        except FitError:
            continue
        lo, hi = one.interval()
        for vals, key in ((_values(one.theta), "estimate"),):
            low, high = _values(lo), _values(hi)
            for name in NAMES:
                rows.append({DRAW_COLUMN: d.label, "parameter": name, key: vals[name], "ci_low": low[name],
                             "ci_high": high[name]})
    return pd.DataFrame(rows, columns=[DRAW_COLUMN, "parameter", "estimate", "ci_low", "ci_high"])


def guard(draws: list[Draw], fit: Decomposed, floor: str) -> list[str]:
    """The pre-asymptotic points (module docstring), each with the ``--where`` that drops them."""
    found = _steep_slopes(draws, fit)
    for index, name, axis in ((1, "a", "L"), (3, "b", "L*M")):
        sd = fit.sd[index]
        values = np.unique(np.concatenate([d.L if axis == "L" else d.L * d.M for d in draws]))
        if not np.isfinite(fit.theta[index]) or len(values) < 3:
            continue
        low = values[0]
        sub = _subset(draws, lambda d: (d.L if axis == "L" else d.L * d.M) > low)
        try:
            smaller = estimate(sub, n_boot=GUARD_RESAMPLES, floor=floor)
        except FitError:
            continue
        moved = smaller.theta[index]
        # The two estimates share most points: their difference has variance sd_sub^2 - sd^2.
        shift_sd = math.sqrt(max(smaller.sd[index] ** 2 - sd**2, 0.0)) if np.isfinite(smaller.sd[index]) else math.inf
        if np.isfinite(moved) and np.isfinite(sd) and abs(moved - fit.theta[index]) > max(sd, GUARD_SIGMAS * shift_sd):
            found.append(f"dropping {axis} = {fmt(low, 'g')} moves {name} from {fmt(fit.theta[index], '.3f')} to "
                         f"{fmt(moved, '.3f')}, more than its standard error {fmt(sd, '.3f')}: "
                         f"try --where \"{axis} > {fmt(low, 'g')}\"")
    return found


def _steep_slopes(draws: list[Draw], fit: Decomposed) -> list[str]:
    """Local slopes in L steeper than -1 beyond GUARD_SIGMAS standard errors: of the draw-pooled
    bias within a column (the points the fit uses), and of the RMS error."""
    des = fit.design
    pooled = {}
    for g, d in enumerate(draws):
        b2, f2 = terms(d.grams)
        for i in range(len(d.L)):
            acc = pooled.setdefault((d.M[i], d.D[i]), {}).setdefault(d.L[i], [[], [], [], False])
            acc[0].append(b2[i] - d.ref2[i])
            acc[1].append(f2[i])
            acc[2].append(float(np.trace(d.grams[i]) / d.R))
            acc[3] = acc[3] or bool(des.bias_used[g][i])
    R, n_eff = float(np.mean([d.R for d in draws])), des.n_eff
    out = []
    for (M, D), by_L in sorted(pooled.items()):
        Ls = sorted(by_L)
        for L0, L1 in zip(Ls, Ls[1:]):
            p0, p1 = by_L[L0], by_L[L1]
            step = math.log(L1 / L0)
            for label, value, var in (("bias", _bias_point, None), ("err", _err_point, None)):
                if label == "bias" and not (p0[3] and p1[3]):
                    continue
                v0, s0 = value(p0, R, n_eff)
                v1, s1 = value(p1, R, n_eff)
                if not (v0 > 0 and v1 > 0):
                    continue
                slope = math.log(v1 / v0) / step
                se = math.sqrt(s0**2 + s1**2) / step
                if slope < -1 - GUARD_SIGMAS * se:
                    out.append(f"{label} falls like L^{slope:.2f} (+- {se:.2f}) from L = {fmt(L0, 'g')} to "
                               f"{fmt(L1, 'g')} at M = {fmt(M, 'g')}, D = {fmt(D, 'g')}, steeper than the law's "
                               f"L^-1: try --where \"L > {fmt(L0, 'g')}\"")
    return out


def _bias_point(p, R, n_eff):
    """Draw-pooled bias and the standard error of its log."""
    b2, f2 = float(np.mean(p[0])), max(float(np.mean(p[1])), 0.0)
    var = (4 * f2 * max(b2, 0) / R + 2 * f2**2 / (R * (R - 1))) / n_eff / len(p[0])
    return (math.sqrt(b2) if b2 > 0 else math.nan), (math.sqrt(var) / (2 * b2) if b2 > 0 else math.inf)


def _err_point(p, R, n_eff):
    """Draw-pooled RMS error and the standard error of its log (seeds' noise only)."""
    e2, b2, f2 = float(np.mean(p[2])), max(float(np.mean(p[0])), 0.0), max(float(np.mean(p[1])), 0.0)
    var = (4 * b2 * f2 + 2 * f2**2) / (n_eff * R) / len(p[2])
    return (math.sqrt(e2) if e2 > 0 else math.nan), (math.sqrt(var) / (2 * e2) if e2 > 0 else math.inf)


__all__ = ["GUARD_SIGMAS", "fit_decomposed", "guard", "surfaces"]
