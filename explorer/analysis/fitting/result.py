"""A fitted law (``FitResult``): its estimates and intervals, its rows in the store (``fits``),
and the guard rails (``fit_warnings``) that say what its numbers cannot, the rule of what a fit
measured (``measured.judge``) first."""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...formatting import fmt
from ..laws import FORMS, Expression
from .measured import ZERO_WIDTH, judge

R2_WARNING = 0.8  # R^2 (log) below this: the law does not explain the grid

Z95 = 1.959963984540054  # the normal quantile of a 95% interval (scipy.stats.norm.ppf(0.975))

# Student's t quantiles of a 95% interval, scipy.stats.t.ppf(0.975, k) for k = 1..30 to the last bit
# (a test checks each against scipy): a fit read back from the fit cache draws its band without
# importing scipy (most of a cached report's start).
T95 = (
    12.706204736174694, 4.302652729749462, 3.1824463052837078, 2.7764451051977934,
    2.5705818356363146, 2.4469118511449786, 2.364624251592784, 2.306004135204166,
    2.262157162798205, 2.228138851986274, 2.200985160091639, 2.1788128296672284,
    2.1603686564627913, 2.144786687917804, 2.131449545559776, 2.1199052992212546,
    2.1098155778333156, 2.1009220402410382, 2.0930240544083087, 2.085963447265864,
    2.0796138447276795, 2.0738730679040254, 2.0686576104190486, 2.0638985616280245,
    2.0595385527532972, 2.0555294386428735, 2.0518305164802846, 2.0484071417952454,
    2.045229642132703, 2.0422724563012378,
)
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
        unmeasured: parameter -> why the fit does not measure it although it was fitted (at a
            search bound, an interval too wide, not identified by the Jacobian:
            ``measured.judge``, which every fitter's ``fit_warnings`` applies). Its estimate
            stays in ``estimate`` (``predict`` uses it) but is no result: ``table``, ``rows``
            and the printed fit say "not measured" with the reason instead.
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
    unmeasured: dict = field(default_factory=dict)  # fitted but not measured: parameter -> why (measured.judge)
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

    def band(self, L, M, D, law: Expression | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """The 95% band of the fitted law (or of ``law``, a term over some of its parameters) at
        (L, M, D) (1-d arrays of one length), from the bootstrap samples: the curve at the
        estimate times exp(+- q sd), sd the spread of the log curve over the samples and q the
        intervals' own quantile (``ci_quantile``: 1.96 or Student's t), as the parameters'
        intervals are made. None without samples."""
        law = law or self.law
        names = self.law.parameters
        if len(self.samples) < 2 or self.samples.shape[1] != len(names) or not set(law.parameters) <= set(names):
            return None
        values = self.samples[:, [names.index(n) for n in law.parameters]]
        with np.errstate(all="ignore"):
            logs = np.log(law.batch(values, L, M, D))
            center = np.log(law({n: self.estimate[n] for n in law.parameters}, L, M, D))
            sd = np.nanstd(np.where(np.isfinite(logs), logs, np.nan), axis=0, ddof=1)
        q = self.interval_quantile()
        return np.exp(center - q * sd), np.exp(center + q * sd)

    def interval_quantile(self) -> float:
        """The quantile of the 95% intervals (``ci_quantile``: "1.96", or "t(k)" for Student's t
        with k degrees of freedom)."""
        if self.ci_quantile.startswith("t("):
            dof = int(self.ci_quantile[2:-1])
            if 1 <= dof <= len(T95):
                return T95[dof - 1]
            from scipy import stats

            return float(stats.t.ppf(0.975, dof))
        return Z95 if self.ci_quantile == "1.96" else float(self.ci_quantile)

    @property
    def not_measured(self) -> dict:
        """Every parameter stated as no result, with why: not fitted (``unidentified``) or fitted
        but not measured (``unmeasured``)."""
        return {**self.unidentified, **self.unmeasured}

    def is_measured(self, name: str) -> bool:
        """Whether ``name`` was fitted and measured (its estimate and interval are a result)."""
        return name in self.law.parameters and name not in self.not_measured

    def table(self) -> pd.DataFrame:
        """parameter, estimate, ci_low, ci_high: one row per parameter; NaN for a parameter that
        was not fitted or not measured (``not_measured`` says why)."""
        shown = [p for p in self.parameters if p not in self.not_measured]
        return pd.DataFrame({
            "parameter": list(self.parameters),
            "estimate": [self.estimate[p] if p in shown else np.nan for p in self.parameters],
            "ci_low": [self.ci_low[p] if p in shown else np.nan for p in self.parameters],
            "ci_high": [self.ci_high[p] if p in shown else np.nan for p in self.parameters],
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
    """The guard rails (docs/analysis.md, "Reading the warnings"), after the rule of what the fit
    measured (``measured.judge``: ``result.unmeasured``, with ``jac`` the Jacobian of the fit at
    its estimate, one column per parameter of ``result.law``; None when the fitter has none)."""
    judge(result, jac)
    out = []
    by_reason: dict = {}  # parameters left unmeasured for one reason (c1 and a with the bias) share one line
    for name, reason in result.not_measured.items():
        by_reason.setdefault(reason, []).append(name)
    for reason, names in by_reason.items():
        out.append(f"{', '.join(names)} {reason}")
    if np.isfinite(result.r2_log) and result.r2_log < R2_WARNING:
        out.append(f"R^2 (log) = {result.r2_log:.3f} is below {R2_WARNING}: the law does not explain this grid; "
                   "read its estimates and CIs as descriptive at best")
    for name in (n for n in result.law.parameters if result.is_measured(n)):
        est, lo, hi = result.estimate[name], result.ci_low[name], result.ci_high[name]
        if np.isfinite(lo) and np.isfinite(hi) and not lo <= est <= hi:
            out.append(f"{name} = {fmt(est, missing='nan')} lies outside its own CI [{fmt(lo, missing='nan')}, {fmt(hi, missing='nan')}]: the bootstrap "
                       "does not describe this estimate")
    if result.n_draws == 1 and result.n_boot:
        out.append("one problem draw: the CIs cover seed noise only, not the draw of data and embeddings, which "
                   "moves exponents more (docs/model.md section 4); pool several problem_seed values")
    if not converged:
        out.append("the starts disagreed on the best fit; treat the estimates with care")
    out.extend(f"pre-asymptotic points: {p}" for p in result.pre_asymptotic)
    return out


__all__ = ["FITS_COLUMNS", "R2_WARNING", "T95", "Z95", "ZERO_WIDTH", "FitResult", "data_hash", "fit_warnings"]
