"""A fitted law (``FitResult``): its estimates and intervals, its rows in the store (``fits``),
and the guard rails (``fit_warnings``) that say what its numbers cannot."""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...formatting import fmt
from ..laws import FORMS, Expression

R2_WARNING = 0.8  # R^2 (log) below this: the law does not explain the grid

Z95 = 1.959963984540054  # the normal quantile of a 95% interval (scipy.stats.norm.ppf(0.975))
ZERO_WIDTH = 1e-9  # a CI narrower than this (relative to the estimate) has width zero
FITS_COLUMNS = (
    "sweep", "fit_id", "form", "metric", "step", "parameter", "estimate", "ci_low", "ci_high",
    "r2_log", "n_points", "n_excluded", "extrapolation_error", "warnings", "created_at", "fit_key", "data_hash",
)


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
    n_invalid: int = 0  # status-ok seed rows with a NaN, infinite or negative error: left out
    pre_asymptotic: list = field(default_factory=list)
    fitted_expression: Expression | None = None
    floor: str = "quadrature"
    surfaces: list = field(default_factory=list)  # the decomposed fit's additive and RSS surfaces, as text
    sd: dict = field(default_factory=dict)  # the decomposed fit's standard errors (log for c1, c2)
    data_hash: str | None = None  # ``data_hash`` of the frame fitted: which trials it read (None: no trial keys)
    n_boot_asked: int | None = None  # resamples asked for (``n_boot`` counts those that converged)
    # How the 95% intervals were made (``text.interval_description`` says it in words): the quantile,
    # e.g. "1.96" or "t(2)", and where the sd comes from. Set by the fitter that made them.
    ci_quantile: str = "1.96"
    ci_sd: str = ""
    tie: object = None  # a ``tie.TieTest`` where the slice varies D and the law's theory ties g = b

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
        """The id of this fit: ``fit_key`` and the first 8 hex of ``data_hash``, so that a refit of
        data that changed (a grown sweep) is a fit of its own beside the earlier one, while a refit
        of the same trials has the same id (and replaces its file with the same numbers)."""
        return self.fit_key if self.data_hash is None else f"{self.fit_key}-{self.data_hash[:8]}"

    @property
    def fit_key(self) -> str:
        """A stable id of what was asked, whatever the data (sweep, form, metric, step, filter,
        bootstrap): the fits of one key are its history (the ``latest_fits`` view). The resamples
        are those asked for: how many converge depends on the data."""
        resamples = len(self.samples) if self.n_boot_asked is None else self.n_boot_asked
        payload = {"sweep": self.sweep, "form": self.expression.text, "metric": self.metric, "step": self.step,
                   "where": self.where, "n_boot": resamples, "seed": self.seed}
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
                            ("warnings", "; ".join(self.warnings)), ("created_at", created_at),
                            ("fit_key", self.fit_key), ("data_hash", self.data_hash)):
            table[name] = value
        return table[list(FITS_COLUMNS)]


def data_hash(frame: pd.DataFrame) -> str | None:
    """16 hex of the sha256 of the sorted distinct trial keys of a fit's input (a ``grid_errors``
    frame's ``trial_keys`` lists, or a ``seed_grams`` frame's ``trial_key``); None when the frame
    names no trials (a grid built by hand). A trial key hashes everything that defines the trial's
    numbers, its seeds included, so the same keys mean the same data."""
    if "trial_keys" in frame:
        keys = {str(k) for keys in frame["trial_keys"] if keys is not None for k in keys}
    elif "trial_key" in frame:
        keys = {str(k) for k in frame["trial_key"] if k is not None}
    else:
        return None
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:16]


def fit_warnings(result: FitResult, converged: bool, jac) -> list[str]:
    """The guard rails (docs/analysis.md, "Reading the warnings")."""
    out = []
    by_reason: dict = {}  # parameters left unmeasured for one reason (c1 and a with the bias) share one line
    for name, reason in result.unidentified.items():
        by_reason.setdefault(reason, []).append(name)
    for reason, names in by_reason.items():
        out.append(f"{', '.join(names)} {reason}")
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


__all__ = ["FITS_COLUMNS", "R2_WARNING", "Z95", "ZERO_WIDTH", "FitResult", "data_hash", "fit_warnings"]
