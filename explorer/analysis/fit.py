"""Scaling-law fits of a sweep's errors: the law registry, the fit, the two-level bootstrap,
model comparison and the guard rails on every number (the least-squares solver and the data
preparation it reads live in ``explorer.analysis.solver``).

Laws (``FORMS``; any other text is parsed as a user expression by ``explorer.analysis.expression``):

- ``theory``: err ~ c1/L + c2 sqrt(D/(L M)). Chizat, "The Hidden Width of Deep ResNets"
  (arXiv:2509.10167), the 2LP-block bound: Euler discretization O(1/L) plus Monte-Carlo
  sampling over the L*M units O(sqrt(D/(L M))) (docs/model.md section 3).
- ``free``: err ~ c1 L^-a + c2 (D/(L M))^b. The same two terms with free exponents; theory says
  a = 1 and b = 1/2.
- ``theory_rss``, ``free_rss``: the same terms in quadrature, sqrt((c1 L^-a)^2 + (c2 (D/(LM))^b)^2):
  the RMS over seeds of a point is sqrt(bias^2 + fluct^2), so this is the form the errors are
  measured in (an additive law fitted to them biases a upwards).
- ``decomposed`` (the default of ``fit_sweep``): the free_rss law fitted term by term, c1 and a on
  each point's bias, c2 and b on its fluctuation, from the seeds' Gram rows
  (``explorer.analysis.fit_decomposed``, ``explorer.analysis.decomposed``).
- ``joint``: err ~ c1/L + c2 sqrt(D/(L M)) + c3/sqrt(D). Chaintron, Chizat, Maass, "ResNets of All
  Shapes and Sizes" (arXiv:2603.18168): the large-D term of the joint limit.
- ``output``: err ~ c1/L + c2 D/(L M). The companion paper's output errors decay like D/(L M)
  rather than its square root.
- ``companion_hidden``: err^2 ~ a D/(L M) + b/D + c/L^2, and ``companion_output``:
  err^2 ~ a (D/(L M))^2 + b/D + c/L^2: the companion paper's bounds as a root sum of squares
  (hidden state, output); a, b, c are positive constants.

Procedure (docs/analysis.md): per grid point and problem draw the seeds' errors at one GD step
are aggregated by RMS (``explorer.analysis.sweep_data.grid_errors``); the reference's own error is
removed in quadrature (err_corr = sqrt(max(err^2 - ref_err^2, 0)), switchable); points within
``FLOOR_FACTOR`` times the reference error, and seeds with a stability flag, are left out and
counted; summands the grid cannot measure (a D term on a single-D sweep) are not fitted; the law
is fitted to log errors with a soft-L1 loss from several starts, constants positive through
their logarithm, the draws pooled. The bootstrap resamples draws, then seeds within each draw
(points when there is one seed) and refits; CIs are estimate +- q sd in the fit's
parametrization (log for constants): with one draw q = 1.96 and sd the refits' spread; with G
draws q is Student's t with G - 1 degrees of freedom and sd the draws' part of the spread
(``_interval``). Guard rails (``FitResult.warnings``) flag what the numbers cannot say.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from ..config.bounds import MAX_RESAMPLES
from ..errors import FitError
from .expression import Expression, constant_terms, parse_expression
from ..formatting import fmt
from .solver import (FREE_BOUND, FitData, Problem, best_fit, check_single_slice, fit_data, largest_lm, prepare, solve_batch,
                     start_points, subset)
from .sweep_data import DRAW_COLUMN, format_flag_counts, grid_errors, held_axes, held_where

LOSS_SCALE = 0.1  # soft-L1 scale in log units: residuals beyond ~10% relative count linearly
R2_WARNING = 0.8  # R^2 (log) below this: the law does not explain the grid
ZERO_WIDTH = 1e-9  # a CI narrower than this (relative to the estimate) has width zero
FITS_COLUMNS = (
    "sweep", "fit_id", "form", "metric", "step", "parameter", "estimate", "ci_low", "ci_high",
    "r2_log", "n_points", "n_excluded", "extrapolation_error", "warnings", "created_at",
)


@dataclass(frozen=True)
class Form:
    """A named scaling law of the registry."""

    name: str
    expression: str  # parsed by explorer.analysis.expression
    source: str  # where the law comes from
    start: dict = field(default_factory=dict)  # first start of the free parameters
    theory: dict = field(default_factory=dict)  # exponents the theory predicts
    positive: tuple = ()  # parameters besides c1, c2, ... constrained positive
    method: str = "law"  # "law": fitted to RMS errors; "decomposed": term by term (explorer.analysis.fit_decomposed)


FORMS: dict[str, Form] = {
    f.name: f
    for f in (
        Form("theory", "c1/L + c2*sqrt(D/(L*M))", "Chizat 2025 (arXiv:2509.10167), 2LP-block bound"),
        Form("free", "c1*L**(-a) + c2*(D/(L*M))**b", "theory's two terms with free exponents",
             start={"a": 1.0, "b": 0.5}, theory={"a": 1.0, "b": 0.5}),
        Form("theory_rss", "sqrt((c1/L)**2 + c2**2*D/(L*M))",
             "theory's two terms as the RMS over seeds combines them (bias and fluctuation in quadrature)"),
        Form("free_rss", "sqrt((c1*L**(-a))**2 + (c2*(D/(L*M))**b)**2)",
             "free's two terms in quadrature, as the RMS over seeds combines them",
             start={"a": 1.0, "b": 0.5}, theory={"a": 1.0, "b": 0.5}),
        Form("decomposed", "sqrt((c1*L**(-a))**2 + (c2*(D/(L*M))**b)**2)",
             "each term on its own: c1, a on the seeds' bias, c2, b on their fluctuation (docs/analysis.md)",
             start={"a": 1.0, "b": 0.5}, theory={"a": 1.0, "b": 0.5}, method="decomposed"),
        Form("joint", "c1/L + c2*sqrt(D/(L*M)) + c3/sqrt(D)",
             "Chaintron, Chizat, Maass 2026 (arXiv:2603.18168), joint limit in L, M, D"),
        Form("output", "c1/L + c2*D/(L*M)", "Chaintron, Chizat, Maass 2026: output error ~ D/(L M)"),
        Form("companion_hidden", "sqrt(a*D/(L*M) + b/D + c/L**2)",
             "Chaintron, Chizat, Maass 2026: hidden-state error^2 ~ D/(LM) + 1/D + 1/L^2", positive=("a", "b", "c")),
        Form("companion_output", "sqrt(a*(D/(L*M))**2 + b/D + c/L**2)",
             "Chaintron, Chizat, Maass 2026: output error^2 ~ (D/(LM))^2 + 1/D + 1/L^2", positive=("a", "b", "c")),
    )
}


def resolve_form(form: str) -> tuple[str, Expression]:
    """A registry name or a user expression -> (label, parsed expression).

    Raises:
        FitError: an identifier that is not a registry name.
        ExpressionError: the text is neither a registry name nor a valid expression.
    """
    if form in FORMS:
        return form, parse_expression(FORMS[form].expression, FORMS[form].positive)
    if form.strip().isidentifier():
        raise FitError(f"unknown fit form {form!r}; expected one of: {', '.join(FORMS)}, or an expression over L, M, D")
    expr = parse_expression(form)
    return expr.text, expr


def _fixed_variables(grid: pd.DataFrame) -> set[str]:
    """Which of L, M, D, P hold a single value on the grid."""
    fixed = {v for v in ("L", "M", "D") if grid[v].nunique() <= 1}
    if (grid["L"] * grid["M"] * grid["D"]).nunique() <= 1:
        fixed.add("P")
    return fixed


def unidentified_terms(expr: Expression, grid: pd.DataFrame) -> tuple[Expression, dict[str, str]]:
    """The part of a law a grid can measure, and why the rest is not fitted.

    Args:
        expr: a parsed law. grid: a table with columns L, M, D (the points to fit).
    Returns:
        (the law to fit: ``expr`` itself or it without the unmeasurable summands, see
        ``explorer.analysis.expression.constant_terms``; parameter -> reason it is not fitted).
    Raises:
        FitError: no summand of the law varies on the grid.
    """
    fixed = _fixed_variables(grid)
    reduced, dropped = constant_terms(expr, fixed)
    if not dropped:
        return expr, {}

    def held(term):
        names = sorted(v for v in fixed if v in term and v != "P")
        values = ", ".join(f"{v} = {fmt(grid[v].iloc[0], 'g')}" for v in names)
        return f"its term {term} varies only with {', '.join(names)}, which this grid holds at {values}"

    reasons = {p: "not fitted: " + held(t) for p, t in dropped.items()}
    if reduced is None:
        raise FitError(f"no term of {expr.text!r} varies on this grid ({'; '.join(reasons.values())})")
    positive = tuple(n for n in expr.positive)
    return parse_expression(reduced, positive), reasons


# ----------------------------------------------------------------------------- the result


@dataclass
class FitResult:
    """A fitted scaling law, its uncertainty and what the data could not say.

    Attributes:
        form: the registry name or the user expression. expression: the law as asked.
        fitted_expression: the law actually fitted (``expression`` without the summands the
            grid cannot measure; ``predict`` uses it).
        estimate, ci_low, ci_high: parameter -> value (95% interval, see the module docstring);
            every parameter of ``expression``, NaN for those in ``unidentified``.
        unidentified: parameter -> why it was not fitted (e.g. a D term on a single-D sweep).
        r2_log: R^2 of log(err) over the fitted points. n_points: (draw, point) rows fitted;
        n_excluded: floor-limited (or non-positive) rows left out; n_flagged: seeds left out
            for a stability flag, ``flag_counts`` by flag name (a seed with two flags counts under
            each), ``n_flagged_points`` the (draw, point) rows dropped whole (every seed flagged).
        extrapolation_error: RMS relative error on the largest-L*M points of a fit without
            them (NaN when the grid has a single L*M level or too few points).
        converged: the best start succeeded and another start reached the same cost.
        n_boot: bootstrap resamples that converged; bootstrap: what was resampled ("draws, then
            seeds", "draws, then points", "seeds", "points" or "none").
        n_draws: problem draws pooled. per_draw: the fit on each draw alone (columns
            problem_seed, parameter, estimate, ci_low, ci_high; empty with one draw).
        pre_asymptotic: descriptions of points whose removal moves an exponent by more than
            its CI half-width (the asymptotic range check).
        warnings: guard-rail sentences (also the ``warnings`` column of the fits rows).
        notes: informational sentences. floor: "quadrature" or "none" (reference removal).
        grid: the grid table with columns ``err_fit`` (the error fitted), ``fitted``,
            ``residual_log`` (NaN where excluded) and ``used``. sweep, metric, step: the source.
    """

    form: str
    expression: Expression
    estimate: dict
    ci_low: dict
    ci_high: dict
    r2_log: float
    n_points: int
    n_excluded: int
    extrapolation_error: float
    converged: bool
    n_boot: int
    bootstrap: str
    grid: pd.DataFrame
    samples: np.ndarray = field(repr=False)  # (n_boot, fitted parameters) bootstrap estimates
    sweep: str | None = None
    metric: str | None = None
    step: int | None = None
    where: str | None = None
    seed: int = 0
    notes: list = field(default_factory=list)
    held: dict = field(default_factory=dict)  # axes besides L, M, D held fixed by fit_sweep
    warnings: list = field(default_factory=list)
    per_draw: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["problem_seed", "parameter", "estimate", "ci_low", "ci_high"]))
    n_draws: int = 1
    unidentified: dict = field(default_factory=dict)
    n_flagged: int = 0
    flag_counts: dict = field(default_factory=dict)  # flag name -> seeds left out carrying it
    n_flagged_points: int = 0  # (draw, point) rows whose every seed was flagged: not fitted
    pre_asymptotic: list = field(default_factory=list)
    fitted_expression: Expression | None = None
    floor: str = "quadrature"
    surfaces: list = field(default_factory=list)  # the decomposed fit's additive and RSS surfaces, as text
    sd: dict = field(default_factory=dict)  # the decomposed fit's standard errors (log for c1, c2)

    @property
    def parameters(self) -> tuple[str, ...]:
        return self.expression.parameters

    @property
    def law(self) -> Expression:
        """The law fitted (``fitted_expression``, or ``expression`` when nothing was dropped)."""
        return self.fitted_expression or self.expression

    def predict(self, L, M, D) -> np.ndarray:
        """The fitted law at (L, M, D) (broadcast arrays), float64."""
        return self.law({p: self.estimate[p] for p in self.law.parameters}, L, M, D)

    def table(self) -> pd.DataFrame:
        """parameter, estimate, ci_low, ci_high: one row per parameter (NaN: not fitted)."""
        return pd.DataFrame({
            "parameter": list(self.parameters),
            "estimate": [self.estimate[p] for p in self.parameters],
            "ci_low": [self.ci_low[p] for p in self.parameters],
            "ci_high": [self.ci_high[p] for p in self.parameters],
        })

    @property
    def fit_id(self) -> str:
        """A stable id of what was fitted (sweep, form, metric, step, filter, bootstrap)."""
        payload = {"sweep": self.sweep, "form": self.expression.text, "metric": self.metric, "step": self.step,
                   "where": self.where, "n_boot": len(self.samples), "seed": self.seed}
        if self.floor != "quadrature":
            payload["floor"] = self.floor
        text = json.dumps(payload, sort_keys=True, default=str)
        return f"{self.form if self.form in FORMS else 'custom'}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"

    def rows(self, created_at: _dt.datetime | None = None) -> pd.DataFrame:
        """The fit as rows of kind ``fits`` (columns ``FITS_COLUMNS``), one per parameter."""
        created_at = created_at or _dt.datetime.now(_dt.timezone.utc)
        table = self.table()
        for name, value in (("sweep", self.sweep), ("fit_id", self.fit_id), ("form", self.form),
                            ("metric", self.metric), ("step", self.step), ("r2_log", self.r2_log),
                            ("n_points", self.n_points), ("n_excluded", self.n_excluded),
                            ("extrapolation_error", self.extrapolation_error),
                            ("warnings", "; ".join(self.warnings)), ("created_at", created_at)):
            table[name] = value
        return table[list(FITS_COLUMNS)]


# ----------------------------------------------------------------------------- the fit


def fit(grid: pd.DataFrame, form: str = "theory", *, n_boot: int = 200, n_starts: int = 8, seed: int = 0,
        loss_scale: float = LOSS_SCALE, where: str | None = None, floor: str = "quadrature",
        per_draw: bool = True, range_check: bool = True) -> FitResult:
    """Fit a scaling law to a grid of errors (from ``grid_errors``) with bootstrap CIs.

    Args:
        grid: columns L, M, D, err, optionally seed_errs, ref_err, floor_limited, problem_seed
            (one row per point and draw; draws are pooled), n_flagged, sweep, metric, step and
            grid columns (which must each hold one value: one slice).
        form: a name of ``FORMS`` or an expression over L, M, D, P (see explorer.analysis.expression).
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
    if not 0 <= n_boot <= MAX_RESAMPLES:  # before the (n_boot, parameters) array of the bootstrap
        raise FitError(f"n_boot must be from 0 to {MAX_RESAMPLES:,} bootstrap resamples, got {n_boot}")
    if label in FORMS and FORMS[label].method == "decomposed":
        raise FitError("the decomposed law is fitted from the seeds' Gram rows (fit_sweep, or "
                       "explorer.analysis.fit_decomposed.fit_decomposed on a seed_grams frame), not from RMS errors")
    if grid is None or len(grid) == 0:
        raise FitError("no grid points to fit")
    check_single_slice(grid)
    reference_notes = list(grid.attrs.get("notes", ()))  # from grid_errors: several references
    n_flagged = int(grid.attrs.get("n_flagged", grid["n_flagged"].sum() if "n_flagged" in grid else 0))
    flag_counts = dict(grid.attrs.get("flag_counts", {}))
    n_flagged_points = int(grid.attrs.get("n_flagged_points", 0))
    grid, used, ref = prepare(grid, floor)
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
    data = fit_data(grid[used].reset_index(drop=True), ref[used])
    problem = Problem(expr, data.L, data.M, data.D, loss_scale)
    rng = np.random.default_rng(seed)
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

    thetas, method = _bootstrap(problem, data, theta, n_boot, rng)
    inner = _bootstrap(problem, data, theta, n_boot, rng, resample_draws=False)[0] if len(data.draws) > 1 else None
    lo_t, hi_t = _interval(thetas, theta, problem.bounds, inner, len(data.draws))
    if inner is not None and len(thetas) > 1:  # the samples carry the interval's spread (adaptive covariance)
        sd, _ = _spread(thetas, inner, len(data.draws))
        spread = thetas.std(axis=0, ddof=1)
        thetas = np.clip(theta + (thetas - thetas.mean(axis=0)) * np.where(spread > 0, sd / np.where(spread > 0, spread, 1), 0),
                         *problem.bounds)
    values = problem.values(theta)
    names = expr.parameters
    estimate = {n: math.nan for n in asked.parameters}
    ci_low, ci_high = dict(estimate), dict(estimate)
    estimate.update({n: float(v) for n, v in zip(names, values)})
    ci_low.update({n: float(v) for n, v in zip(names, problem.values(lo_t))})
    ci_high.update({n: float(v) for n, v in zip(names, problem.values(hi_t))})
    samples = problem.values(thetas) if len(thetas) else np.empty((0, n_params))
    extrapolation = _extrapolation_error(problem, data, theta, n_params)

    with np.errstate(all="ignore"):
        grid["fitted"] = expr({n: estimate[n] for n in names}, grid["L"].to_numpy(float), grid["M"].to_numpy(float),
                              grid["D"].to_numpy(float))
        grid["residual_log"] = np.where(used, np.log(grid["err_fit"].to_numpy(float)) - np.log(grid["fitted"]), np.nan)
    grid["used"] = used

    def _one(column):
        vals = grid[column].unique() if column in grid else []
        return vals[0] if len(vals) == 1 else None

    step = _one("step")
    result = FitResult(
        form=label, expression=asked, estimate=estimate, ci_low=ci_low, ci_high=ci_high,
        r2_log=r2, n_points=int(used.sum()), n_excluded=int((~used).sum()), extrapolation_error=extrapolation,
        converged=converged, n_boot=len(samples), bootstrap=method, grid=grid, samples=samples,
        sweep=_one("sweep"), metric=_one("metric"), step=None if step is None else int(step), where=where, seed=seed,
        n_draws=len(data.draws), unidentified=unidentified, n_flagged=n_flagged,
        flag_counts=flag_counts, n_flagged_points=n_flagged_points, fitted_expression=expr if expr is not asked else None, floor=floor,
    )
    if per_draw and len(data.draws) > 1:
        result.per_draw = _per_draw(problem, data, theta, n_boot, rng)
    if range_check:
        from .diagnostics import range_check as _range_check  # diagnostics builds on this module

        result.pre_asymptotic = _range_check(problem, data, theta, result)
    notes = list(reference_notes)
    if n_flagged:
        notes.append(f"{n_flagged} seeds left out for stability flags (the flags column){flag_summary(result)}")
    result.notes = notes + _notes(expr, estimate, float(np.exp(data.log_err.max())))
    result.warnings = fit_warnings(result, converged, best.jac)
    return result


def _interval(thetas: np.ndarray, theta: np.ndarray, bounds, inner: np.ndarray | None = None,
              n_draws: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The 95% interval in the fit's parametrization (log for constants).

    One draw: estimate +- 1.96 sd of the (widened) seed or point bootstrap. Several draws G: the
    two-level replicates ``thetas`` hold the seed noise twice (inside the draws' spread and from
    the inner resample); ``inner``, the replicates with the draws as observed, measures that
    part. The variance G/(G-1) (var(thetas) - var(inner)) (var(inner) where that is not
    positive) is the draws' spread, and the quantile is Student's t with G - 1 degrees of freedom: with 4 draws the sd
    itself rests on 3 degrees of freedom (docs/analysis.md, the coverage table)."""
    if len(thetas) < 2:
        nan = np.full(len(theta), np.nan)
        return nan, nan
    sd, q = _spread(thetas, inner, n_draws)
    return np.clip(theta - q * sd, *bounds), np.clip(theta + q * sd, *bounds)


def _spread(thetas: np.ndarray, inner: np.ndarray | None, n_draws: int) -> tuple[np.ndarray, float]:
    """(sd, quantile) of the interval (``_interval``)."""
    if inner is None or n_draws < 2 or len(inner) < 2:
        return thetas.std(axis=0, ddof=1), float(stats.norm.ppf(0.975))
    G = n_draws
    v_inner = inner.var(axis=0, ddof=1)
    between = G / (G - 1) * (thetas.var(axis=0, ddof=1) - v_inner)
    # the inner part stands in only where the draws' part came out non-positive (sampling noise)
    return np.sqrt(np.where(between > 0, between, v_inner)), float(stats.t.ppf(0.975, G - 1))


def _resample_log_err(data: FitData, rows: np.ndarray, rng, by_points: bool) -> tuple[np.ndarray, np.ndarray]:
    """One draw's rows resampled: (row indices, log errors), seeds within points or points."""
    if by_points:
        rows = rows[rng.integers(0, len(rows), len(rows))]
        return rows, data.log_err[rows]
    counts = data.counts[rows]
    width = data.packed.shape[1]
    pick = (rng.random((len(rows), width)) * counts[:, None]).astype(int)
    chosen = np.take_along_axis(data.packed[rows], pick, axis=1)
    mask = np.arange(width)[None, :] < counts[:, None]
    rms = np.sqrt(np.where(mask, chosen**2, 0.0).sum(axis=1) / counts)
    ref = np.where(np.isfinite(data.ref[rows]), data.ref[rows], 0.0)
    return rows, np.log(np.sqrt(np.maximum(rms**2 - ref**2, 1e-300)))


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


def _bootstrap(problem: Problem, data: FitData, theta: np.ndarray, n_boot: int, rng,
               resample_draws: bool = True) -> tuple[np.ndarray, str]:
    """Refit on n_boot resamples: draws with replacement (``resample_draws``; else each draw
    once, as observed), then seeds within each point of each chosen draw (points within the
    draw when every point has one seed); all from the point estimate. Returns the converged
    estimates (the fit's parametrization) and what was resampled."""
    by_points = bool(np.all(data.counts <= 1))
    n_draws = len(data.draws)
    inner = "points" if by_points else "seeds"
    method = f"draws, then {inner}" if n_draws > 1 else inner
    if n_boot <= 0:
        return np.empty((0, len(theta))), "none"
    members = [np.flatnonzero(data.draw == g) for g in range(n_draws)]
    width = n_draws * max(len(m) for m in members)
    idx = np.zeros((n_boot, width), int)
    log_err = np.zeros((n_boot, width))
    weights = np.zeros((n_boot, width))
    for b in range(n_boot):
        chosen = rng.integers(0, n_draws, n_draws) if n_draws > 1 and resample_draws else range(n_draws)
        at = 0
        for g in chosen:
            rows, values = _resample_log_err(data, members[g], rng, by_points)
            idx[b, at: at + len(rows)], log_err[b, at: at + len(rows)] = rows, values
            weights[b, at: at + len(rows)] = 1.0
            at += len(rows)
    fitted, ok = solve_batch(problem, log_err, np.tile(theta, (n_boot, 1)), problem.L[idx], problem.M[idx],
                             problem.D[idx], weights=weights)
    ok &= np.all(np.isfinite(fitted), axis=1)
    fitted = fitted[ok]
    if n_draws > 1:  # the interval corrects the two-level spread (_interval)
        return np.clip(fitted, *problem.bounds), method
    # Resampling n values spreads their mean by only (n - 1)/n of its variance: widen the
    # replicates around the estimate by sqrt(n / (n - 1)) (n: seeds per point, or points).
    if by_points:
        n_eff = float(len(data.log_err))
    else:
        n_eff = float(len(data.counts) / np.sum(1.0 / np.maximum(data.counts, 2)))
    fitted = theta + np.sqrt(n_eff / (n_eff - 1.0)) * (fitted - theta)
    return np.clip(fitted, *problem.bounds), method


def _per_draw(problem: Problem, data: FitData, theta: np.ndarray, n_boot: int, rng) -> pd.DataFrame:
    """The fit on each draw alone (from the pooled estimate), with its own seed bootstrap."""
    rows = []
    for g, label in enumerate(data.draws):
        keep = data.draw == g
        names = problem.expr.parameters
        if keep.sum() < len(names) + 1:
            continue
        sub = subset(data, keep)
        sub_problem = Problem(problem.expr, sub.L, sub.M, sub.D, problem.loss_scale)
        point = sub_problem.solve(sub.log_err, theta).x
        thetas, _ = _bootstrap(sub_problem, sub, point, min(n_boot, 100), rng)
        lo, hi = _interval(thetas, point, sub_problem.bounds)
        for i, name in enumerate(names):
            rows.append({DRAW_COLUMN: label, "parameter": name, "estimate": float(sub_problem.values(point)[i]),
                         "ci_low": float(sub_problem.values(lo)[i]), "ci_high": float(sub_problem.values(hi)[i])})
    return pd.DataFrame(rows, columns=[DRAW_COLUMN, "parameter", "estimate", "ci_low", "ci_high"])


def fit_warnings(result: FitResult, converged: bool, jac) -> list[str]:
    """The guard rails (docs/analysis.md, "Reading the warnings")."""
    out = []
    for name, reason in result.unidentified.items():
        out.append(f"{name} {reason}")
    if np.isfinite(result.r2_log) and result.r2_log < R2_WARNING:
        out.append(f"R^2 (log) = {result.r2_log:.3f} is below {R2_WARNING}: the law does not explain this grid; "
                   "read its estimates and CIs as descriptive at best")
    for name in result.law.parameters:
        est, lo, hi = result.estimate[name], result.ci_low[name], result.ci_high[name]
        if not (np.isfinite(lo) and np.isfinite(hi)):
            continue
        if not lo <= est <= hi:
            out.append(f"{name} = {fmt(est, missing='nan')} lies outside its own CI [{fmt(lo, missing='nan')}, {fmt(hi, missing='nan')}]: the bootstrap "
                       "does not describe this estimate")
        elif hi - lo <= ZERO_WIDTH * max(abs(est), 1e-300):
            out.append(f"{name}'s CI has width zero ([{fmt(lo, missing='nan')}, {fmt(hi, missing='nan')}]): every resample gave the same value "
                       "(a parameter at its bound or fixed by the law's form), not a measurement")
    if result.n_draws == 1 and result.n_boot:
        out.append("one problem draw: the CIs cover seed noise only, not the draw of data and embeddings, which "
                   "moves exponents more (docs/model.md section 4); pool several problem_seed values")
    if not converged:
        out.append("the starts disagreed on the best fit; treat the estimates with care")
    if jac is not None:
        out.extend(_identifiability(result.law, jac))
    out.extend(f"pre-asymptotic points: {p}" for p in result.pre_asymptotic)
    return out


def _identifiability(expr: Expression, jac) -> list[str]:
    """A note when the Jacobian at the fit is (nearly) rank deficient: some combination of
    parameters leaves the fitted law unchanged, so their separate values are not determined."""
    jac = np.asarray(jac.toarray() if hasattr(jac, "toarray") else jac, dtype=float)
    if jac.size == 0 or not np.all(np.isfinite(jac)):
        return []
    scale = np.linalg.norm(jac, axis=0)
    if np.any(scale == 0):
        return [f"{', '.join(n for n, s in zip(expr.parameters, scale) if s == 0)} do not change the fit: not determined"]
    _, sv, vt = np.linalg.svd(jac / scale, full_matrices=False)
    if sv[-1] > 1e-6 * sv[0]:
        return []
    direction = np.abs(vt[-1])
    involved = [n for n, w in zip(expr.parameters, direction) if w > 0.2]
    return [f"{', '.join(involved)} are not separately determined by this grid (one combination of them fits equally well)"]


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


# ----------------------------------------------------------------------------- sweeps and output


DEFAULT_FORM = "decomposed"  # of explorer fit, the report and the adaptive loop
DECOMPOSED_METRICS = ("err_out", "err_hidden")
RSS_FALLBACK = "free_rss"  # what the CLI suggests when the decomposed law cannot run


def fit_sweep(con, sweep: str, form: str = DEFAULT_FORM, *, metric: str = "err_out", step: int | None = None,
              where: str | None = None, n_boot: int = 200, seed: int = 0, hold: bool = True,
              floor: str = "quadrature") -> FitResult:
    """``grid_errors`` then ``fit``: the whole analysis of one sweep slice (see both).

    Args:
        hold: when the sweep varies axes besides L, M, D (alpha, lr, ...), fit the slice at
            ``held_axes`` (their most common values) instead of failing; the slice is recorded
            in the result's ``where`` and ``held``. Problem draws are pooled, not held: select
            one with ``where="problem_seed = 2"``.
    """
    label, _ = resolve_form(form)  # a bad form fails before any query
    if not 0 <= n_boot <= MAX_RESAMPLES:
        raise FitError(f"n_boot must be from 0 to {MAX_RESAMPLES:,} bootstrap resamples, got {n_boot}")
    held = held_axes(con, sweep, ("L", "M", "D"), where) if hold else {}
    where = held_where(held, where)
    if label in FORMS and FORMS[label].method == "decomposed":
        from .fit_decomposed import fit_decomposed
        from .sweep_data import seed_grams

        frame = seed_grams(con, sweep, metric=metric, step=step, where=where)
        check_single_slice(frame)
        result = fit_decomposed(frame, n_boot=n_boot, seed=seed, where=where, floor=floor)
        result.held = held
        return result
    grid = grid_errors(con, sweep, metric=metric, step=step, where=where)
    result = fit(grid, form, n_boot=n_boot, seed=seed, where=where, floor=floor)
    result.held = held
    return result


def save_fit(store, result: FitResult) -> str:
    """Write a fit's rows into a store (``store.write_fit``); returns the fit_id."""
    if result.sweep is None:
        raise FitError("this fit has no sweep name; fit a grid from grid_errors to save it")
    store.write_fit(result.sweep, result.fit_id, result.rows().to_dict("records"))
    return result.fit_id


def format_table(result: FitResult) -> str:
    """Plain text: the law, each parameter with its 95% CI, the quality numbers, per-draw
    estimates, then the warnings and notes."""
    held = ", ".join(f"{k} = {v}" for k, v in result.held.items())
    lines = [f"form {result.form}: err ~ {result.expression.text}"
             + (f"  (slice {held}: the sweep varies these too; choose with --where)" if held else ""),
             f"{'parameter':<10} {'estimate':>12} {'95% CI':>27}"]
    for row in result.table().itertuples():
        if row.parameter in result.unidentified:
            shown = "not measured" if result.unidentified[row.parameter].startswith("not measured") else "not fitted"
            lines.append(f"{row.parameter:<10} {shown:>12}")
            continue
        lines.append(f"{row.parameter:<10} {fmt(row.estimate, missing='nan'):>12} [{fmt(row.ci_low, missing='nan'):>11}, {fmt(row.ci_high, missing='nan'):>11}]")
    extra = "n/a" if math.isnan(result.extrapolation_error) else f"{100 * result.extrapolation_error:.1f}%"
    flagged = f", {result.n_flagged} flagged seeds left out{flag_summary(result)}" if result.n_flagged else ""
    draws = f"{result.n_draws} problem draw{'s' if result.n_draws != 1 else ''} pooled"
    lines.append(f"R^2 (log) {result.r2_log:.3f}; {result.n_points} points fitted ({draws}), {result.n_excluded} "
                 f"floor-limited left out{flagged}; extrapolation error at the largest L*M: {extra}; "
                 f"bootstrap: {result.n_boot} resamples of {result.bootstrap}")
    lines.extend(result.surfaces)
    if len(result.per_draw):
        wide = result.per_draw.pivot(index=DRAW_COLUMN, columns="parameter", values="estimate")
        names = [p for p in result.law.parameters if p in wide.columns]
        lines.append("per draw (each draw fitted alone): " + " ".join(f"{n:>10}" for n in names))
        for label, row in wide.iterrows():
            lines.append(f"  problem_seed {str(label):<6} " + " ".join(f"{fmt(row[n], missing='nan'):>10}" for n in names))
    lines.extend(f"warning: {w}" for w in result.warnings)
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines)


def flag_summary(result: FitResult) -> str:
    """`` (init_noise 3, chaotic 1; 2 points with every seed flagged not fitted)``: the seeds a fit
    left out for stability flags by flag name, and the points dropped whole ('' when none)."""
    parts = [format_flag_counts(result.flag_counts)] if getattr(result, "flag_counts", None) else []
    if getattr(result, "n_flagged_points", 0):
        parts.append(f"{result.n_flagged_points} point{'s' if result.n_flagged_points != 1 else ''} "
                     "with every seed flagged not fitted")
    return f" ({'; '.join(parts)})" if parts else ""


__all__ = [
    "DECOMPOSED_METRICS", "DEFAULT_FORM", "FITS_COLUMNS", "FORMS", "FitResult", "Form", "R2_WARNING", "RSS_FALLBACK",
    "fit", "fit_sweep", "fit_warnings", "flag_summary", "format_table", "resolve_form",
    "save_fit", "unidentified_terms",
]
