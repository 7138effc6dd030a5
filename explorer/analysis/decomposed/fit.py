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

from .estimator import FULL, NAMES, Decomposed, Draw, checked_draws, estimate, terms
from .d_axis import d_slope_warnings
from .term_fit import term_grid
from ...errors import FitError
from ..laws import DEFAULT_FORM, FORMS, parse_expression, resolve_form
from ..fitting import FitResult, TieTest, data_hash, fit_warnings
from ...formatting import fmt
from ..data import DRAW_COLUMN, FLOOR_FACTOR

GUARD_SIGMAS = 2.0  # "beyond noise": this many standard errors
GUARD_RESAMPLES = 50  # bootstrap resamples of the refit without the smallest points


# Where each reported parameter sits in ``estimator.FULL`` (constants through their log): the
# tied law's four, and the law with a D exponent in each term where the slice varies D.
TIED_AT = {"c1": "log_c1", "a": "a", "c2": "log_c2", "b": "b"}
UNTIED_AT = {"c1": "log_c1_d", "a": "a", "c2": "log_c2_d", "b": "b_d", "g": "g", "h": "h"}
UNTIED_LAW = FORMS[DEFAULT_FORM].untied  # sqrt((c1*D**h*L**(-a))**2 + (c2*D**g*(L*M)**(-b))**2)


def _at(fit_or_theta, varies_d: bool) -> dict:
    """Reported parameter -> its index in ``FULL`` (the untied law's when the slice varies D and
    its fluctuation's D exponent is measured; c1 is the tied level where h is not)."""
    theta = getattr(fit_or_theta, "theta", fit_or_theta)
    if not varies_d or not np.isfinite(theta[FULL.index("g")]):  # no D, or D and L*M move together
        return {n: FULL.index(k) for n, k in TIED_AT.items()}
    at = {n: FULL.index(k) for n, k in UNTIED_AT.items()}
    if not np.isfinite(theta[at["h"]]):
        at["c1"] = FULL.index("log_c1")
    return at


def _values(theta: np.ndarray, at: dict | None = None) -> dict:
    """The fit's parametrization (``FULL``) -> the reported parameters {c1, a, c2, b[, g, h]}."""
    at = at or {n: FULL.index(k) for n, k in TIED_AT.items()}
    return {n: (math.exp(theta[i]) if np.isfinite(theta[i]) else math.nan) if n in ("c1", "c2") else float(theta[i])
            for n, i in at.items()}


def _subset(draws: list[Draw], keep) -> list[Draw]:
    out = []
    for d in draws:
        k = keep(d)
        if k.any():
            out.append(Draw(d.label, d.grams[k], d.rows[k], d.L[k], d.M[k], d.D[k], d.ref2[k]))
    return out


def fit_decomposed(frame: pd.DataFrame, form: str = DEFAULT_FORM, *, n_boot: int = 200, seed: int = 0,
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
    if sorted(expr.parameters) not in (sorted(NAMES), sorted(UNTIED_AT)):
        raise FitError(f"the decomposed fit measures c1, a (the bias) and c2, b (the fluctuation); law {label!r} "
                       f"has {', '.join(expr.parameters)}")
    kept, draws = checked_draws(frame, floor)
    trials_read = data_hash(frame)
    frame = kept
    fit = estimate(draws, n_boot=n_boot, seed=seed, floor=floor)
    # each term gets its D exponent (g, h) where the slice varies D apart from L*M: the law as
    # fitted, the tied one beside it
    varies_d = fit.design.varies_d and bool(np.isfinite(fit.theta[FULL.index("g")]))
    if varies_d:
        expr = parse_expression(UNTIED_LAW)
    at = _at(fit, varies_d)
    lo, hi = fit.interval()
    est, low, high = _values(fit.theta, at), _values(lo, at), _values(hi, at)
    unidentified = _unmeasured(fit, varies_d)
    for name in unidentified:
        est[name] = low[name] = high[name] = math.nan
    fitted_law = _measured_law(unidentified, varies_d)
    grid = _grid(frame, draws, fit, est, floor)
    law = fitted_law or expr
    by_name = {n: (np.exp(fit.samples[:, i]) if n in ("c1", "c2") else fit.samples[:, i]) for n, i in at.items()}
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
    result.sd = {n: float(fit.sd[i]) for n, i in at.items()}
    if per_draw and len(draws) > 1:
        result.per_draw = _per_draw(draws, n_boot, seed, floor)
    if range_check:
        result.pre_asymptotic = guard(draws, fit, floor)
    result.surfaces = surfaces(est, _values(fit.theta))
    result.notes = list(frame.attrs.get("notes", ())) + _notes(fit, frame)
    result.ci_quantile, result.ci_sd = _interval_rule(fit, draws, n_boot)
    result.warnings = fit_warnings(result, True, None)
    if fit.design.varies_d and not varies_d:
        result.notes.append("D varies but not apart from L*M on this slice: the fluctuation is fitted with the "
                            "theory's tie, c2*(D/(L*M))**b, untested")
    if varies_d and "b" not in unidentified:
        result.tie = _tie(fit, label)
        result.warnings += result.tie.warnings()
    if varies_d and range_check:
        result.warnings += d_slope_warnings(draws, fit, est)
    return result


def _tie(fit: Decomposed, label: str) -> TieTest:
    """g - b of the untied law with its interval from the same resamples, and the tied law."""
    lo, hi = fit.interval()
    i = FULL.index("g-b")
    tied = {n: (v, _values(lo)[n], _values(hi)[n]) for n, v in _values(fit.theta).items() if n in ("c2", "b")}
    return TieTest("g", "b", "sqrt(D/(L*M)), c2*(D/(L*M))**b", float(fit.theta[i]), float(lo[i]), float(hi[i]),
                   f"{label}_tied", tied)


def _measured_law(unidentified: dict, varies_d: bool = False):
    """The law without what the grid does not measure (None: all of it is measured)."""
    if "a" in unidentified and "b" in unidentified:
        raise FitError(f"neither term of the decomposed law is measured on this grid: {unidentified['a']}")
    fluct = "c2*D**g*(L*M)**(-b)" if varies_d else "c2*(D/(L*M))**b"
    bias = "c1*D**h*L**(-a)" if varies_d and "h" not in unidentified else "c1*L**(-a)"
    if "a" in unidentified:
        return parse_expression(fluct)
    if "b" in unidentified:
        return parse_expression(bias)
    if varies_d and "h" in unidentified:
        return parse_expression(f"sqrt(({bias})**2 + ({fluct})**2)")
    return None


def _unmeasured(fit: Decomposed, varies_d: bool) -> dict:
    out = {}
    if not np.isfinite(fit.theta[1]):
        why = ("not measured on this grid: the bias is resolved (above its noise and the reference's floor) at "
               "fewer than 2 depths of any column (M, D); add larger M or more seeds")
        out.update(c1=why, a=why)
    if not np.isfinite(fit.theta[3]):
        why = "not measured on this grid: the fluctuation varies with fewer than 2 values of D/(L*M)"
        out.update(c2=why, b=why)
    if varies_d and "a" in out:
        out["h"] = out["a"]
    elif varies_d and not np.isfinite(fit.theta[FULL.index("h")]):
        out.setdefault("h", "not fitted: no M holds a resolved bias at two values of D, so the bias's D dependence "
                            "cannot be told from its level; c1 is the bias level at the D of its column")
    if varies_d and "b" in out:
        out["g"] = out["b"]
    return out


def _grid(frame, draws, fit: Decomposed, est: dict, floor: str) -> pd.DataFrame:
    """One row per (draw, point): err, bias, fluct, what each term used, the RSS surface."""
    # the terms as the fits of one term read them (``term_grid``), after the point's error and floor
    grid = term_grid(frame, draws, fit.design, floor)
    term_columns = ["bias", "fluct", "bias_used", "fluct_used"]
    per_term = grid[term_columns]
    grid = grid.drop(columns=term_columns)
    grid["err"] = frame["gram"].map(lambda g: float(np.sqrt(max(np.trace(g) / len(g), 0.0))))
    grid["seed_errs"] = frame["gram"].map(lambda g: np.sqrt(np.clip(np.diag(g), 0, None)))
    ref = grid["ref_err"].to_numpy(float) if "ref_err" in grid else np.full(len(grid), np.nan)
    grid["floor_limited"] = grid["err"].to_numpy(float) < FLOOR_FACTOR * np.where(np.isfinite(ref), ref, 0.0)
    grid[term_columns] = per_term
    L, M, D = (grid[c].to_numpy(float) for c in ("L", "M", "D"))
    ref0 = np.where(np.isfinite(ref), ref, 0.0) if floor == "quadrature" else 0.0
    grid["err_fit"] = np.sqrt(np.maximum(grid["err"].to_numpy(float) ** 2 - ref0**2, 0.0))
    with np.errstate(all="ignore"):
        grid["bias_fitted"] = bias_law(est, L, D)
        grid["fluct_fitted"] = fluct_law(est, L, M, D)
        grid["fitted"] = np.sqrt(np.nan_to_num(grid["bias_fitted"]) ** 2 + np.nan_to_num(grid["fluct_fitted"]) ** 2)
        used = ~grid["floor_limited"].to_numpy(bool) & (grid["err_fit"].to_numpy(float) > 0)
        grid["residual_log"] = np.where(used, np.log(grid["err_fit"]) - np.log(grid["fitted"]), np.nan)
    grid["used"] = used
    return grid


def _exponent(est: dict, name: str) -> float:
    """A D exponent of the law, 0 where the law has none (a single D, or not fitted)."""
    value = est.get(name, math.nan)
    return value if np.isfinite(value) else 0.0


def bias_law(est: dict, L, D):
    """c1 D^h L^-a (h = 0 where the law has no D exponent in its bias)."""
    return est["c1"] * np.asarray(D, float) ** _exponent(est, "h") * np.asarray(L, float) ** (-est["a"])


def fluct_law(est: dict, L, M, D):
    """c2 D^g (LM)^-b, or c2 (D/(LM))^b where the law ties them (no g)."""
    L, M, D = (np.asarray(v, float) for v in (L, M, D))
    if np.isfinite(est.get("g", math.nan)):
        return est["c2"] * D ** est["g"] * (L * M) ** (-est["b"])
    return est["c2"] * (D / (L * M)) ** est["b"]


def surfaces(est: dict, tied: dict | None = None) -> list[str]:
    """The two surfaces with the fitted constants: the theorem's additive bound (the tied law's
    constants, ``tied``, where the slice varies D) and the RSS of the law as fitted."""
    tied = tied or est
    missing = [term for term, names in (("bias", ("c1", "a")), ("fluctuation", ("c2", "b")))
               if not all(np.isfinite(est[n]) for n in names)]
    if missing:
        return [f"surfaces: not stated, the {' and '.join(missing)} term is not measured on this grid"]
    c1, a, c2, b = (fmt(est[n], ".3g", missing="nan") for n in ("c1", "a", "c2", "b"))
    additive = (f"additive surface (the theorem's bound): err <= c1/L + c2*sqrt(D/(L*M)) = "
                f"{fmt(tied['c1'], '.3g', missing='nan')}/L + {fmt(tied['c2'], '.3g', missing='nan')}*sqrt(D/(L*M))")
    if not np.isfinite(est.get("g", math.nan)):
        return [additive, f"RSS surface (the expected RMS over seeds): err ~ sqrt((c1*L^-a)^2 + (c2*(D/(L*M))^b)^2) "
                          f"= sqrt(({c1}*L^-{a})^2 + ({c2}*(D/(L*M))^{b})^2)"]
    g = fmt(est["g"], ".3g", missing="nan")
    h = np.isfinite(est.get("h", math.nan))
    bias = f"{c1}*D^{fmt(est['h'], '.3g')}*L^-{a}" if h else f"{c1}*L^-{a}"
    return [additive + " (the tied law's constants)",
            f"RSS surface (the expected RMS over seeds): err ~ sqrt((c1*{'D^h*' if h else ''}L^-a)^2 + "
            f"(c2*D^g*(L*M)^-b)^2) = sqrt(({bias})^2 + ({c2}*D^{g}*(L*M)^-{b})^2)"]


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
        at = _at(one, one.design.varies_d)
        for vals, key in ((_values(one.theta, at), "estimate"),):
            low, high = _values(lo, at), _values(hi, at)
            for name in at:
                rows.append({DRAW_COLUMN: d.label, "parameter": name, key: vals[name], "ci_low": low[name],
                             "ci_high": high[name]})
    return pd.DataFrame(rows, columns=[DRAW_COLUMN, "parameter", "estimate", "ci_low", "ci_high"])


def guard(draws: list[Draw], fit: Decomposed, floor: str) -> list[str]:
    """The pre-asymptotic points (module docstring), each with the ``--where`` that drops them."""
    found = _steep_slopes(draws, fit)
    at = _at(fit, fit.design.varies_d)
    axes = [(at["a"], "a", "L"), (at["b"], "b", "L*M")] + [(at[n], n, "D") for n in ("g", "h") if n in at]
    for index, name, axis in axes:
        sd = fit.sd[index]
        values = np.unique(np.concatenate([{"L": d.L, "L*M": d.L * d.M, "D": d.D}[axis] for d in draws]))
        if not np.isfinite(fit.theta[index]) or len(values) < 3:
            continue
        low = values[0]
        sub = _subset(draws, lambda d: {"L": d.L, "L*M": d.L * d.M, "D": d.D}[axis] > low)
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


__all__ = ["GUARD_SIGMAS", "bias_law", "fit_decomposed", "fluct_law", "guard", "surfaces"]
