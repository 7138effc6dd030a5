"""Diagnostics of the scaling-law fits: what a grid can identify, whether it is asymptotic, and
which law explains it best (one concept per module: ``rms_fit`` fits a law, this module
judges laws and grids).

- ``fittable_forms``: each registered law -> the parameters a grid cannot identify.
- ``range_check``: the asymptotic range check of ``fit`` (``FitResult.pre_asymptotic``).
- ``compare_laws`` / ``format_comparison``: laws ranked by cross-validated log error, one row per
  law however many names it has on the grid (``same_law``), only the laws fitted.
- ``local_slopes``: log-log slopes between neighbouring grid values, per axis (L and L*M).

Built on ``solver`` (the fits' least-squares problem and data preparation);
``rms_fit.fit`` calls ``range_check``.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...errors import FitError
from ..laws import DEFAULT_FORM, FORMS, Expression, law_forms, resolve_form, unidentified_terms
from .solver import LOSS_SCALE
from .result import FitResult
from .solver import (FitData, Problem, best_fit, check_single_slice, fit_data, largest_lm, prepare, solve_batch, start_points)
from ...formatting import fmt

CV_TOLERANCE = 0.02  # compare_laws: laws within 2% of the best CV error rank by fewer parameters
SAME_LAW_LOG = 1e-3  # same_law: two fitted laws this close in log at every point are one law


def additive_warning(table: pd.DataFrame, form: str) -> list[str]:
    """A warning when ``form`` adds its terms (it has a quadrature twin, ``Form.rss_twin``) and the
    comparison ranks a law adding them in quadrature (any additive law's twin) ahead of it."""
    rank = {name: r for law, r in zip(table["law"], table["rank"]) for name in str(law).split(" = ")}
    if form not in FORMS or FORMS[form].rss_twin is None or form not in rank:
        return []
    twins = [f.rss_twin for f in FORMS.values() if f.rss_twin is not None]
    ahead = [f for f in twins if f in rank and rank[f] < rank[form]]
    if not ahead:
        return []
    return [f"{', '.join(ahead)} rank{'s' if len(ahead) == 1 else ''} ahead of {form}: the errors combine the two "
            f"terms in quadrature (RMS over seeds), so the additive {form} law biases its exponent in L upwards; "
            f"prefer the {DEFAULT_FORM} fit (the default)"]


def fittable_forms(grid: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Each registry law -> its parameters this grid cannot identify (empty dict: fully fittable).

    A law none of whose terms vary on the grid is left out. For reports: a sweep over D only
    has no L-M law to draw; a single-D sweep fits ``joint`` without its 1/sqrt(D) term.
    """
    out = {}
    for name in law_forms():
        try:
            out[name] = unidentified_terms(resolve_form(name)[1], grid)[1]
        except FitError:
            continue
    return out


# ----------------------------------------------------------------------------- the asymptotic range check


def range_check(problem: Problem, data: FitData, theta: np.ndarray, result: FitResult) -> list[str]:
    """Refit without the smallest L, then without the smallest L*M, then without the smallest D
    (where D varies); name the points whose removal moves an exponent (a parameter that is not a
    positive constant) by more than its CI half-width."""
    exponents = [i for i, n in enumerate(problem.expr.parameters) if n not in problem.expr.positive]
    if not exponents:
        return []
    found = []
    LM = data.L * data.M
    for axis, values, shown in (("L", data.L, "L"), ("L*M", LM, "L*M"), ("D", data.D, "D")):
        low = values == values.min()
        if low.all() or (~low).sum() < len(theta) + 1 or len(np.unique(values[~low])) < 2:
            continue
        sub = Problem(problem.expr, data.L[~low], data.M[~low], data.D[~low], problem.loss_scale)
        moved = sub.values(sub.solve(data.log_err[~low], theta).x)
        for i in exponents:
            name = problem.expr.parameters[i]
            half = (result.ci_high[name] - result.ci_low[name]) / 2
            shift = float(moved[i] - result.estimate[name])
            if np.isfinite(half) and abs(shift) > half:
                found.append(f"{shown} = {fmt(values.min(), 'g')} ({int(low.sum())} points): dropping them moves {name} "
                             f"from {fmt(result.estimate[name], missing='nan')} to {fmt(moved[i], missing='nan')}, more than its CI half-width "
                             f"{fmt(half, missing='nan')}")
    return found


# ----------------------------------------------------------------------------- model comparison


def compare_laws(grid: pd.DataFrame, forms=None, *, loss_scale: float = LOSS_SCALE, floor: str = "quadrature",
                 n_starts: int = 8, seed: int = 0) -> pd.DataFrame:
    """Rank laws by cross-validated log error on a grid (from ``grid_errors``).

    Each law is fitted to the points ``fit`` would use (floor, flags and unmeasurable terms as
    there, draws pooled). ``cv_loo``: RMS log error of each grid point (L, M, D; all its draws)
    predicted by a fit without it. ``cv_extrap``: the same for the largest-L*M points predicted
    by a fit without them. Lower is better.

    Args:
        grid: as for ``fit``. forms: registry names or expressions (default: every ``FORMS``).
    Returns:
        DataFrame with columns law, n_params (parameters fitted), cv_loo, cv_extrap, rank (1 =
        best; laws within ``CV_TOLERANCE`` of the best cv_loo rank first by fewer parameters,
        the rest by cv_loo; among those, a law fitted without terms the grid cannot measure after
        the whole ones, its ``note`` naming the terms), sorted by rank. Laws that are one law on
        this grid under several names (``theory`` and ``joint`` without its c3 term: the same
        fitted function, ``same_law``) are one row, ``law`` naming them all (``theory = joint``),
        the whole law first. Only laws that were fitted are ranked: the others are in
        ``attrs["not_fitted"]`` (law -> why).
    Raises:
        FitError: several slices, no points. ExpressionError: an invalid expression.
    """
    if grid is None or len(grid) == 0:
        raise FitError("no grid points to compare laws on")
    check_single_slice(grid)
    forms = law_forms() if forms is None else list(forms)
    grid, used, ref = prepare(grid, floor)
    data = fit_data(grid[used].reset_index(drop=True), ref[used])
    rng = np.random.default_rng(seed)
    rows, fitted, not_fitted = [], [], {}
    for form in forms:
        label, asked = resolve_form(form)
        try:
            expr, dropped = unidentified_terms(asked, data.frame)
            # A law reduced to another (joint without its D term on a single-D grid) says so.
            note = f"fitted without {', '.join(sorted(dropped))} (not measurable on this grid)" if dropped else ""
            scores, theta = _cross_validate(expr, label, data, loss_scale, n_starts, rng)
        except FitError as exc:
            not_fitted[label] = str(exc)
            continue
        rows.append({"law": label, "n_params": len(expr.parameters), **scores, "note": note})
        fitted.append((expr, theta))
    table = _ranked(_merged(rows, fitted, data))
    table.attrs["not_fitted"] = not_fitted
    return table


def same_law(first: tuple[Expression, np.ndarray], second: tuple[Expression, np.ndarray], data: FitData) -> bool:
    """Whether two fitted laws ((law, theta in its fit's parametrization)) are one law under two
    names: as many parameters, and the same fitted function (log values within ``SAME_LAW_LOG``)
    at the grid's points and at points off the grid in L, M and D (two laws that only agree on
    the grid, as c2*D/(L*M) and c2/(L*M) on a single-D sweep, are two laws)."""
    if len(first[0].parameters) != len(second[0].parameters):
        return False
    L, M, D = (np.concatenate([v, v * k]) for v, k in ((data.L, 1.37), (data.M, 0.71), (data.D, 1.23)))
    values = [Problem(expr, L, M, D, LOSS_SCALE).log_model(theta) for expr, theta in (first, second)]
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isfinite(values[0])) and np.all(np.abs(values[0] - values[1]) <= SAME_LAW_LOG))


def _merged(rows: list[dict], fitted: list, data: FitData) -> pd.DataFrame:
    """One row per law of ``rows`` (``same_law`` ones together, the whole law's numbers, every name)."""
    groups: list[list[int]] = []
    for i in range(len(rows)):
        home = next((g for g in groups if same_law(fitted[g[0]], fitted[i], data)), None)
        if home is None:
            groups.append([i])
        else:
            home.append(i)
    merged = []
    for group in groups:
        members = sorted(group, key=lambda i: rows[i]["note"] != "")  # the whole law first (stable)
        row = dict(rows[members[0]], reduced=rows[members[0]]["note"] != "")
        if len(members) > 1:
            row["law"] = " = ".join(rows[i]["law"] for i in members)
            row["note"] = "; ".join(f"{rows[i]['law']} {rows[i]['note']}" for i in members if rows[i]["note"])
        merged.append(row)
    return pd.DataFrame(merged, columns=["law", "n_params", "cv_loo", "cv_extrap", "note", "reduced"])


def _ranked(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` sorted and ranked (``compare_laws``' Returns)."""
    finite = np.isfinite(table["cv_loo"])
    best = table.loc[finite, "cv_loo"].min() if finite.any() else math.nan
    near = finite & (table["cv_loo"] <= best * (1 + CV_TOLERANCE))
    order = table.assign(_far=~near, _finite=~finite, _p=np.where(near, table["n_params"], 0),
                         _reduced=near & table["reduced"].astype(bool))  # a whole law before a reduced one
    order = order.sort_values(["_finite", "_far", "_p", "_reduced", "cv_loo"], kind="stable")
    table = table.loc[order.index].reset_index(drop=True)
    table["rank"] = np.arange(1, len(table) + 1)
    return table[["law", "n_params", "cv_loo", "cv_extrap", "rank", "note"]]


def _cross_validate(expr: Expression, label: str, data: FitData, loss_scale: float, n_starts: int,
                    rng) -> tuple[dict, np.ndarray]:
    """({cv_loo, cv_extrap}, the fit on every point: theta in its parametrization)."""
    n_params = len(expr.parameters)
    problem = Problem(expr, data.L, data.M, data.D, loss_scale)
    if len(data.log_err) < n_params + 1:
        raise FitError(f"{len(data.log_err)} points for {n_params} parameters")
    hints = FORMS[label].start if label in FORMS else {}
    theta = best_fit(problem, data.log_err, start_points(problem, hints, data.log_err, max(1, n_starts), rng))[0].x
    point = data.frame.groupby(["L", "M", "D"], sort=False).ngroup().to_numpy()
    n = int(point.max()) + 1
    holds = [point == k for k in range(n)] + [largest_lm(data)]
    weights = np.array([~h for h in holds], dtype=float)
    fitted, _ = solve_batch(problem, np.tile(data.log_err, (len(holds), 1)), np.tile(theta, (len(holds), 1)),
                            weights=weights)
    errors = []
    for k, held in enumerate(holds):
        if weights[k].sum() < n_params + 1:
            errors.append(None)
            continue
        errors.append(problem.log_model(fitted[k], data.L[held], data.M[held], data.D[held]) - data.log_err[held])
    loo = [e for e in errors[:n] if e is not None]
    loo = np.concatenate(loo) if loo else np.array([np.nan])
    extrap = errors[n] if errors[n] is not None and not holds[n].all() else np.array([np.nan])
    with np.errstate(all="ignore"):
        return {"cv_loo": float(np.sqrt(np.mean(np.where(np.isfinite(loo), loo, 30.0) ** 2))),
                "cv_extrap": float(np.sqrt(np.mean(np.where(np.isfinite(extrap), extrap, 30.0) ** 2)))
                if np.isfinite(extrap).any() else math.nan}, theta


def format_comparison(table: pd.DataFrame) -> str:
    """The ``compare_laws`` table as text lines."""
    width = max([18, *(len(str(law)) for law in table["law"])])
    lines = [f"{'rank':>4} {'law':<{width}} {'params':>6} {'CV log err (LOO)':>17} {'CV log err (largest L*M)':>25}"]
    for row in table.itertuples():
        lines.append(f"{row.rank:>4} {row.law:<{width}} {row.n_params:>6} {fmt(row.cv_loo, missing='nan'):>17} {fmt(row.cv_extrap, missing='nan'):>25}"
                     + (f"  ({row.note})" if row.note else ""))
    lines.append(f"lower is better; laws within {100 * CV_TOLERANCE:g}% of the best LOO error rank by fewer parameters; "
                 "a = b: one law under two names on this grid")
    lines.extend(f"not fitted: {law} ({why})" for law, why in table.attrs.get("not_fitted", {}).items())
    return "\n".join(lines)


# ----------------------------------------------------------------------------- local slopes


def local_slopes(grid: pd.DataFrame, column: str = "err") -> pd.DataFrame:
    """Local log-log slopes between neighbouring grid values, for the asymptotic range check.

    Errors are first averaged over draws (geometric mean per L, M, D). ``axis = "L"``: d log err
    / d log L between neighbouring L at fixed M and D (theory -1 once the sampling term is
    small). ``axis = "LM"``: d log err / d log(L M) between neighbouring M at fixed L and D
    (theory -1/2 while sampling dominates). Floor-limited points (``used`` False, or without a
    ``used`` column ``floor_limited`` True) are left out. The table of ``explorer.report.diagnostic_charts.local_slopes``.

    Returns:
        DataFrame with columns axis, L, M, D (the held values; the varied one NaN), x_low,
        x_high, x (their geometric mean), slope, theory.
    """
    used = grid["used"] if "used" in grid else ~grid.get("floor_limited", pd.Series(False, index=grid.index))
    frame = grid[used.to_numpy(bool) & np.isfinite(grid[column]) & (grid[column] > 0)]
    mean = frame.groupby(["L", "M", "D"])[column].apply(lambda e: float(np.exp(np.log(e).mean()))).reset_index()
    rows = []
    for axis, varied, held, theory in (("L", "L", ("M", "D"), -1.0), ("LM", "M", ("L", "D"), -0.5)):
        for key, sub in mean.groupby(list(held)):
            sub = sub.sort_values(varied)
            x = (sub["L"] * sub["M"]).to_numpy(float) if axis == "LM" else sub["L"].to_numpy(float)
            e = sub[column].to_numpy(float)
            for i in range(len(sub) - 1):
                row = {"axis": axis, "L": math.nan, "M": math.nan, "D": math.nan, "x_low": x[i], "x_high": x[i + 1],
                       "x": float(np.sqrt(x[i] * x[i + 1])),
                       "slope": float(np.log(e[i + 1] / e[i]) / np.log(x[i + 1] / x[i])), "theory": theory}
                row.update(dict(zip(held, key)))
                rows.append(row)
    return pd.DataFrame(rows, columns=["axis", "L", "M", "D", "x_low", "x_high", "x", "slope", "theory"])


__all__ = ["CV_TOLERANCE", "additive_warning", "compare_laws", "fittable_forms", "format_comparison", "local_slopes", "range_check",
           "same_law"]
