"""Scaling-law fits of a sweep's errors, with bootstrap confidence intervals.

Forms (``FORMS``; any other text is parsed as a user expression by ``explorer.expression``):

- ``theory``: err ~ c1/L + c2 sqrt(D/(L M)). Chizat, "The Hidden Width of Deep ResNets"
  (arXiv:2509.10167), the 2LP-block bound: Euler discretization O(1/L) plus Monte-Carlo
  sampling over the L*M units O(sqrt(D/(L M))) (SPEC.md section 2).
- ``free``: err ~ c1 L^-a + c2 (D/(L M))^b. The same two terms with free exponents; theory says
  a = 1 and b = 1/2 (SPEC.md section 5).
- ``joint``: err ~ c1/L + c2 sqrt(D/(L M)) + c3/sqrt(D). Chaintron, Chizat, Maass, "ResNets of All
  Shapes and Sizes" (arXiv:2603.18168): the large-D term of the joint limit.
- ``output``: err ~ c1/L + c2 D/(L M). The companion paper's output errors decay like D/(L M)
  rather than its square root.

Procedure (docs/analysis.md): per grid point, the errors of its seeds at one GD step are
aggregated by RMS; points whose error is within ``FLOOR_FACTOR`` times the reference's own error
estimate are floor-limited and left out; the law is fitted to log errors (relative residuals)
with a soft-L1 robust loss from several starts, constants positive through their logarithm. A
bootstrap that resamples seeds within grid points gives percentile confidence intervals; R^2 is
measured in log space; an extrapolation check fits without the largest L*M and predicts it.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from store import StoreQueryError
from store import query as store_query
from store.schema import CONFIG_COLUMNS

from .errors import FitError, MixedReferencesError, QueryError, SweepDataError
from .expression import Expression, parse_expression

METRICS = ("err_out", "err_hidden")
REFERENCE_ERROR = {"err_out": "ref_err_out", "err_hidden": "ref_err_hidden"}
FLOOR_FACTOR = 3.0  # a point whose error is < 3x the reference's own error is floor-limited
# The store's hyperparameter columns that define a grid point besides L, M, D (those present are
# used): problem_seed, like seed, is a repetition; residual_scale is a function of L, M, D, alpha.
# A point's reference (ref_key) is resolved by choose_references, not treated as an axis.
NOT_GRID_COLUMNS = ("L", "M", "D", "problem_seed", "residual_scale")
GRID_COLUMNS = tuple(c.name for c in CONFIG_COLUMNS if c.name not in NOT_GRID_COLUMNS)
REQUIRED_COLUMNS = ("sweep", "trial_key", "seed", "step", "status", "L", "M", "D")
LOSS_SCALE = 0.1  # soft-L1 scale in log units: residuals beyond ~10% relative count linearly
FREE_BOUND = 10.0  # free (non-constant) parameters are searched in [-10, 10]
FITS_COLUMNS = (
    "sweep", "fit_id", "form", "metric", "step", "parameter", "estimate", "ci_low", "ci_high",
    "r2_log", "n_points", "n_excluded", "extrapolation_error", "created_at",
)


@dataclass(frozen=True)
class Form:
    """A named scaling law of the registry."""

    name: str
    expression: str  # parsed by explorer.expression
    source: str  # where the law comes from
    start: dict = field(default_factory=dict)  # first start of the free parameters
    theory: dict = field(default_factory=dict)  # exponents the theory predicts


FORMS: dict[str, Form] = {
    f.name: f
    for f in (
        Form("theory", "c1/L + c2*sqrt(D/(L*M))", "Chizat 2025 (arXiv:2509.10167), 2LP-block bound"),
        Form("free", "c1*L**(-a) + c2*(D/(L*M))**b", "theory's two terms with free exponents",
             start={"a": 1.0, "b": 0.5}, theory={"a": 1.0, "b": 0.5}),
        Form("joint", "c1/L + c2*sqrt(D/(L*M)) + c3/sqrt(D)",
             "Chaintron, Chizat, Maass 2026 (arXiv:2603.18168), joint limit in L, M, D"),
        Form("output", "c1/L + c2*D/(L*M)", "Chaintron, Chizat, Maass 2026: output error ~ D/(L M)"),
    )
}


def resolve_form(form: str) -> tuple[str, Expression]:
    """A registry name or a user expression -> (label, parsed expression).

    Raises:
        ExpressionError: the text is neither a registry name nor a valid expression.
    """
    if form in FORMS:
        return form, parse_expression(FORMS[form].expression)
    if form.strip().isidentifier():
        raise FitError(f"unknown fit form {form!r}; expected one of: {', '.join(FORMS)}, or an expression over L, M, D")
    expr = parse_expression(form)
    return expr.text, expr


# ----------------------------------------------------------------------------- data from the store


def query_frame(con, sql: str) -> pd.DataFrame:
    """Run one analysis query through the store's query helper and return it as pandas.

    Every query of the analysis (fit, phase, report) goes through here, so a DuckDB error, a
    corrupt store file included, is the same one line as ``explorer sql`` prints (with its
    ``explorer check`` hint) and never a traceback.

    Raises:
        QueryError: DuckDB rejected the query or could not read a store file.
    """
    try:
        return store_query.run(con, sql).to_pandas()
    except StoreQueryError as exc:
        raise QueryError(str(exc)) from None


def table_columns(con, table: str = "metrics") -> list[str]:
    """Column names of a view or table on a DuckDB connection."""
    try:
        described = query_frame(con, f'DESCRIBE "{table}"')
    except QueryError as exc:  # a catalog error: no such view
        raise SweepDataError(f"the store has no {table!r} table: {exc}") from None
    return [str(name) for name in described["column_name"]]


def sweep_is(sweep: str) -> str:
    """The SQL condition selecting one sweep's rows (the name as a quoted literal)."""
    return f"sweep = {_literal(str(sweep))}"


def check_sweep(con, sweep: str) -> None:
    """Raise SweepDataError naming the known sweeps when ``sweep`` has no metric rows."""
    known = query_frame(con, "SELECT DISTINCT sweep FROM metrics ORDER BY sweep")["sweep"].tolist()
    if sweep not in known:
        shown = ", ".join(map(str, known)) if known else "none"
        raise SweepDataError(f"unknown sweep {sweep!r}; the store has: {shown}")


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise FitError(f"unknown metric {metric!r}; expected one of: {', '.join(METRICS)}")


def final_step_clause(columns: list[str], sweep: str, step: int | None) -> str:
    """The SQL condition selecting one GD step: ``step`` or, when None, each trial's final step
    (its ``steps`` column when present, else the sweep's last step)."""
    if step is not None:
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise SweepDataError(f"step must be a non-negative integer, got {step!r}")
        return f"step = {int(step)}"
    return "step = steps" if "steps" in columns else f"step = (SELECT max(step) FROM metrics WHERE {sweep_is(sweep)})"


def _where_clause(where: str | None) -> str:
    return f" AND ({where})" if where else ""


def grid_columns(con) -> list[str]:
    """The grid-defining hyperparameter columns (besides L, M, D) present in ``metrics``."""
    columns = table_columns(con)
    return [c for c in GRID_COLUMNS if c in columns]


def _quoted(columns) -> str:
    return ", ".join(f'"{c}"' for c in columns)


# ----------------------------------------------------------------------------- several references


@dataclass(frozen=True)
class ReferenceChoice:
    """Which trials an analysis reads when grid points were measured against several references.

    Changing a sweep's ``[reference]`` (depth, width, kind) and running it again keeps the old
    trials in the store next to the new ones: the same grid point then has trials against two
    references. Each such point is read against its newest reference (the one of its most
    recently started trial); trials against the others are left out and the notes say so.

    Attributes:
        where: the condition to read with: the caller's ``where`` and, when trials are left
            out, ``trial_key NOT IN (...)``.
        notes: what was chosen, for the fit notes and the report (empty when nothing was mixed).
        left_out: the keys of the trials left out.
        chosen, dropped: the ref_keys read, and those left out, at the points with several.
    """

    where: str | None
    notes: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    chosen: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()


def _shown(keys, limit: int = 4) -> str:
    keys = list(keys)
    return ", ".join(keys[:limit]) + (f", ... ({len(keys)} in all)" if len(keys) > limit else "")


def _mixed_error(sweep: str, refs: list[str], why: str) -> MixedReferencesError:
    return MixedReferencesError(
        f"sweep {sweep} mixes {len(refs)} references for the same grid points ({why}); pick one with "
        f"--where \"ref_key = '{refs[0]}'\" (keys: {', '.join(refs)})")


def _trial_starts(con, sweep: str) -> pd.Series | None:
    """trial_key -> started_at from the ``trials`` view (None when it has no start times)."""
    try:
        if "started_at" not in table_columns(con, "trials"):
            return None
    except SweepDataError:
        return None
    frame = query_frame(con, f"SELECT trial_key, max(started_at) AS started_at FROM trials "
                             f"WHERE {sweep_is(sweep)} GROUP BY trial_key")
    return frame.set_index("trial_key")["started_at"]


def choose_references(con, sweep: str, where: str | None = None) -> ReferenceChoice:
    """Read each grid point against one reference: its newest when it has trials against several.

    A grid point is a value of L, M, D and every other grid column (``GRID_COLUMNS``); its
    reference is the ``ref_key`` of its trials. References legitimately differ between grid
    points (each D, alpha, ... has its own limit); only a point with several is resolved.
    Failed trials measured nothing and do not count: a rerun whose new reference failed leaves
    the point read against the reference its measured trials used.

    Returns:
        A :class:`ReferenceChoice` (``where`` unchanged when no point mixes references).
    Raises:
        MixedReferencesError: some point mixes references and the ``trials`` view's start
            times cannot tell which is newest (missing, or equal).
    """
    columns = table_columns(con)
    if "ref_key" not in columns:
        return ReferenceChoice(where)
    point = [c for c in GRID_COLUMNS if c in columns] + ["L", "M", "D"]
    measured = " AND status <> 'failed'" if "status" in columns else ""
    pairs = query_frame(con, f"SELECT DISTINCT {_quoted(point)}, ref_key, trial_key FROM metrics "
                             f"WHERE {sweep_is(sweep)}{measured}{_where_clause(where)}")
    if pairs.empty:
        return ReferenceChoice(where)
    pairs["point"] = pairs.groupby(point, dropna=False, sort=False).ngroup()
    mixed = pairs[pairs.groupby("point")["ref_key"].transform("nunique") > 1].copy()
    if mixed.empty:
        return ReferenceChoice(where)
    refs = sorted(mixed["ref_key"].astype(str).unique())
    starts = _trial_starts(con, sweep)
    if starts is None:
        raise _mixed_error(sweep, refs, "the trials view has no start times to tell the newest")
    mixed["started_at"] = mixed["trial_key"].map(starts)
    per_ref = (mixed.groupby(["point", "ref_key"], sort=False)["started_at"].max().reset_index()
               .sort_values(["point", "started_at"], ascending=[True, False], na_position="last"))
    ranked = per_ref.groupby("point").cumcount()
    newest, runner_up = per_ref[ranked == 0].set_index("point"), per_ref[ranked == 1].set_index("point")
    tied = newest["started_at"] == runner_up["started_at"].reindex(newest.index)
    if newest["started_at"].isna().any() or tied.any():
        raise _mixed_error(sweep, refs, "their trials' start times do not tell which is newest")
    keep = set(zip(newest.index, newest["ref_key"]))
    out = mixed[[(p, r) not in keep for p, r in zip(mixed["point"], mixed["ref_key"])]]
    left_out = tuple(sorted(out["trial_key"].astype(str).unique()))
    chosen = tuple(sorted(newest["ref_key"].astype(str).unique()))
    dropped = tuple(sorted(out["ref_key"].astype(str).unique()))
    n_points, n_mixed = int(pairs["point"].nunique()), int(mixed["point"].nunique())
    note = (f"{n_mixed} of {n_points} grid points have trials against several references; each is read against "
            f"its newest (ref_key {_shown(chosen)}) and {len(left_out)} trials against older references "
            f"(ref_key {_shown(dropped)}) are left out; choose one with --where \"ref_key = '...'\"")
    condition = f"trial_key NOT IN ({', '.join(_literal(k) for k in left_out)})"
    combined = f"({where}) AND {condition}" if where else condition
    return ReferenceChoice(combined, (note,), left_out, chosen, dropped)


# ----------------------------------------------------------------------------- per-point errors


def grid_errors(con, sweep: str, metric: str = "err_out", step: int | None = None,
                where: str | None = None) -> pd.DataFrame:
    """Per-grid-point errors of a sweep at one GD step, aggregated over seeds.

    Args:
        con: a DuckDB connection with a ``metrics`` view (store/schema.py columns).
        sweep: the sweep name.
        metric: ``err_out`` or ``err_hidden``.
        step: the GD step; None means each trial's final step (its ``steps`` column).
        where: an optional SQL condition on metric columns, e.g. ``"alpha = 1"``.
    Returns:
        One row per grid point, sorted by L, M, D: the grid columns, ref_key, L, M, D, ``err``
        (RMS over seeds, float64), ``ref_err`` (the reference's error estimate, mean over
        seeds), ``n_seeds``, ``floor_limited`` (err < 3 ref_err), ``seed_errs`` (the per-seed
        errors, a float64 array per row, for the bootstrap), and constant columns sweep, metric,
        step. Diverged and failed seeds are not in it (see ``status_counts``). A grid point with
        trials against several references is read against its newest (``choose_references``);
        ``frame.attrs["notes"]`` then says so.
    Raises:
        FitError: unknown metric. SweepDataError: unknown sweep, missing columns, no rows.
        QueryError: ``where`` is not valid SQL, or a store file cannot be read.
        MixedReferencesError: several references whose newest cannot be told.
    """
    _check_metric(metric)
    columns = table_columns(con)
    missing = [c for c in REQUIRED_COLUMNS + (metric,) if c not in columns]
    if missing:
        raise SweepDataError(f"the metrics table lacks columns: {', '.join(missing)}")
    check_sweep(con, sweep)
    choice = choose_references(con, sweep, where)
    point = [c for c in GRID_COLUMNS if c in columns] + ["L", "M", "D"]
    keys = point[:-3] + (["ref_key"] if "ref_key" in columns else []) + ["L", "M", "D"]
    ref = REFERENCE_ERROR[metric]
    ref_expr = f"{ref}" if ref in columns else "CAST(NULL AS DOUBLE)"
    select_keys = _quoted(keys)
    sql = f"""
        SELECT {select_keys}, max(step) AS step,
               sqrt(avg(metric_value * metric_value)) AS err, avg(reference_value) AS ref_err,
               count(*) AS n_seeds, list(metric_value ORDER BY trial_key, seed) AS seed_errs
        -- (identifiers are case-insensitive in DuckDB: short aliases like m would shadow M)
        FROM (SELECT {select_keys}, step, trial_key, seed, {metric} AS metric_value,
                     {ref_expr} AS reference_value
              FROM metrics
              WHERE {sweep_is(sweep)} AND {final_step_clause(columns, sweep, step)} AND status = 'ok'
                    AND isfinite({metric}){_where_clause(choice.where)})
        GROUP BY {select_keys}
        ORDER BY "L", "M", "D", {select_keys}
    """
    frame = query_frame(con, sql)
    if frame.empty:
        at = f"step {step}" if step is not None else "the final step"
        cond = f" matching {where!r}" if where else ""
        raise SweepDataError(f"sweep {sweep!r} has no finite {metric} rows with status ok at {at}{cond}")
    if frame.duplicated(point).any():  # choose_references leaves one reference per point
        refs = sorted(frame["ref_key"].astype(str).unique())
        raise _mixed_error(sweep, refs, "grid points read against several")
    frame["seed_errs"] = [np.asarray(v, dtype=float) for v in frame["seed_errs"]]
    frame["err"] = frame["err"].astype(float)
    frame["ref_err"] = frame["ref_err"].astype(float)
    frame["n_seeds"] = frame["n_seeds"].astype(int)
    frame["floor_limited"] = (frame["err"] < FLOOR_FACTOR * frame["ref_err"]).fillna(False).astype(bool)
    frame.insert(0, "metric", metric)
    frame.insert(0, "sweep", sweep)
    frame.attrs["notes"] = list(choice.notes)
    return frame


def held_axes(con, sweep: str, free_axes=("L", "M", "D"), where: str | None = None) -> dict:
    """Values at which to hold the sweep's varying axes that are not in ``free_axes``.

    L, M and D are held at their largest value (closest to the limit); any other grid column at
    its most common value (ties: the smallest). Axes with a single value are not listed.

    Returns:
        dict column -> value (plain Python scalars; None for a null, e.g. coupled_dim).
    """
    columns = table_columns(con)
    fixed = {}
    for col in [c for c in ("L", "M", "D") + GRID_COLUMNS if c in columns and c not in free_axes]:
        counts = query_frame(con, f'SELECT "{col}" AS v, count(DISTINCT trial_key) AS n FROM metrics '
                                  f"WHERE {sweep_is(sweep)}{_where_clause(where)} GROUP BY 1")
        if len(counts) <= 1:
            continue
        if col in ("L", "M", "D"):
            value = counts["v"].max()
        else:
            top = counts[counts["n"] == counts["n"].max()]["v"]
            value = top.min() if top.notna().any() else None
        fixed[col] = _plain(value)
    return fixed


def _plain(value):
    """A numpy or pandas scalar as a plain Python value (None for a null)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def _literal(value) -> str:
    if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (bool, np.bool_)):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(int(value))


def column_is(column: str, value) -> str:
    """The SQL condition ``column = value`` (``IS NULL`` for a null value)."""
    if _plain(value) is None:
        return f'"{column}" IS NULL'
    return f'"{column}" = {_literal(value)}'


def held_where(fixed: dict, where: str | None = None) -> str | None:
    """A SQL condition selecting ``fixed`` (from ``held_axes``), and-ed with ``where``."""
    parts = [column_is(c, v) for c, v in fixed.items()] + ([f"({where})"] if where else [])
    return " AND ".join(parts) if parts else None


def step_errors(con, sweep: str, metric: str = "err_out", where: str | None = None) -> pd.DataFrame:
    """RMS over seeds of a metric at every GD step, per grid point.

    Returns:
        Columns: the grid columns, ref_key, L, M, D, step, err, n_seeds (status ok, finite
        values only; each grid point against its newest reference, see ``choose_references``).
    """
    _check_metric(metric)
    columns = table_columns(con)
    check_sweep(con, sweep)
    choice = choose_references(con, sweep, where)
    keys = _quoted([c for c in GRID_COLUMNS if c in columns] + (["ref_key"] if "ref_key" in columns else [])
                   + ["L", "M", "D"])
    sql = f"""
        SELECT {keys}, step, sqrt(avg({metric} * {metric})) AS err, count(*) AS n_seeds
        FROM metrics
        WHERE {sweep_is(sweep)} AND status = 'ok' AND isfinite({metric}){_where_clause(choice.where)}
        GROUP BY {keys}, step ORDER BY "L", "M", "D", step
    """
    frame = query_frame(con, sql)
    frame.attrs["notes"] = list(choice.notes)
    return frame


def status_counts(con, sweep: str, where: str | None = None) -> dict:
    """How many trials and seeds a sweep has, and how many diverged or failed.

    Trials against a reference that ``choose_references`` leaves out are not counted.

    Returns:
        dict with ``trials``, ``seeds`` (distinct trial_key, seed pairs), ``diverged_seeds``,
        ``diverged_trials`` (trials with at least one diverged seed), ``failed_trials``.
    """
    check_sweep(con, sweep)
    choice = choose_references(con, sweep, where)
    sql = f"""
        SELECT count(DISTINCT trial_key) AS trials,
               count(DISTINCT (trial_key, seed)) AS seeds,
               count(DISTINCT CASE WHEN status = 'diverged' THEN (trial_key, seed) END) AS diverged_seeds,
               count(DISTINCT CASE WHEN status = 'diverged' THEN trial_key END) AS diverged_trials,
               count(DISTINCT CASE WHEN status = 'failed' THEN trial_key END) AS failed_trials
        FROM metrics WHERE {sweep_is(sweep)}{_where_clause(choice.where)}
    """
    row = query_frame(con, sql).iloc[0]
    return {k: int(row[k]) for k in row.index}


# ----------------------------------------------------------------------------- the fit


@dataclass
class FitResult:
    """A fitted scaling law and its uncertainty.

    Attributes:
        form: the registry name or the user expression. expression: the parsed law.
        estimate, ci_low, ci_high: parameter -> value (95% bootstrap percentile interval).
        r2_log: R^2 of log(err) over the fitted points. n_points: points fitted;
        n_excluded: floor-limited (or non-positive) points left out.
        extrapolation_error: RMS relative error on the largest-L*M points of a fit without
            them (NaN when the grid has a single L*M level or too few points).
        converged: the best start succeeded and another start reached the same cost.
        n_boot: bootstrap resamples that converged; bootstrap: "seeds" or "points".
        grid: the grid table with columns ``fitted``, ``residual_log`` (NaN where excluded) and
            ``used``. sweep, metric, step: where the errors came from.
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
    samples: np.ndarray = field(repr=False)  # (n_boot, n_parameters) bootstrap estimates
    sweep: str | None = None
    metric: str | None = None
    step: int | None = None
    where: str | None = None
    seed: int = 0
    notes: list = field(default_factory=list)  # warnings: parameters at a bound, vanishing terms
    held: dict = field(default_factory=dict)  # axes besides L, M, D held fixed by fit_sweep

    @property
    def parameters(self) -> tuple[str, ...]:
        return self.expression.parameters

    def predict(self, L, M, D) -> np.ndarray:
        """The fitted law at (L, M, D) (broadcast arrays), float64."""
        return self.expression(self.estimate, L, M, D)

    def table(self) -> pd.DataFrame:
        """parameter, estimate, ci_low, ci_high: one row per parameter."""
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
        text = json.dumps(payload, sort_keys=True, default=str)
        return f"{self.form if self.form in FORMS else 'custom'}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"

    def rows(self, created_at: _dt.datetime | None = None) -> pd.DataFrame:
        """The fit as rows of kind ``fits`` (columns ``FITS_COLUMNS``), one per parameter."""
        created_at = created_at or _dt.datetime.now(_dt.timezone.utc)
        table = self.table()
        for name, value in (("sweep", self.sweep), ("fit_id", self.fit_id), ("form", self.form),
                            ("metric", self.metric), ("step", self.step), ("r2_log", self.r2_log),
                            ("n_points", self.n_points), ("n_excluded", self.n_excluded),
                            ("extrapolation_error", self.extrapolation_error), ("created_at", created_at)):
            table[name] = value
        return table[list(FITS_COLUMNS)]


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


class _Problem:
    """log(err) = log(law(theta)) on fixed (L, M, D) points; theta has log-constants."""

    def __init__(self, expr: Expression, L, M, D, loss_scale: float):
        self.expr, self.L, self.M, self.D, self.loss_scale = expr, L, M, D, loss_scale
        self.is_log = np.array([p in expr.positive for p in expr.parameters])
        bound = np.where(self.is_log, 50.0, FREE_BOUND)
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

        theta0 = np.clip(theta0, self.bounds[0] + 1e-9, self.bounds[1] - 1e-9)
        return least_squares(residuals, theta0, loss="soft_l1", f_scale=self.loss_scale,
                             bounds=self.bounds, method="trf", x_scale="jac", max_nfev=2000)


def _starts(problem: _Problem, hints: dict, log_err: np.ndarray, n_starts: int, rng) -> list[np.ndarray]:
    names = problem.expr.parameters
    level = float(np.median(log_err))
    first = np.array([level if problem.is_log[i] else hints.get(n, 1.0) for i, n in enumerate(names)])
    starts = [first]
    for _ in range(n_starts - 1):
        starts.append(np.where(problem.is_log, level + rng.uniform(-3.0, 2.0, len(names)),
                               rng.uniform(-0.5, 2.0, len(names))))
    return starts


def _best_fit(problem: _Problem, log_err: np.ndarray, starts: list[np.ndarray]):
    results = [problem.solve(log_err, s) for s in starts]
    ok = [r for r in results if r.success and np.isfinite(r.cost)]
    if not ok:
        raise FitError(f"the fit of {problem.expr.text!r} did not converge from any of {len(starts)} starts")
    best = min(ok, key=lambda r: r.cost)
    agree = sum(1 for r in ok if abs(r.cost - best.cost) <= 1e-6 * max(best.cost, 1e-12) + 1e-12)
    return best, agree


def _check_single_slice(grid: pd.DataFrame) -> None:
    varying = [c for c in GRID_COLUMNS if c in grid.columns and grid[c].nunique(dropna=False) > 1]
    if varying:
        def values(c):
            present = grid[c].map(_plain)
            return sorted(present.dropna().unique()) + ([None] if present.isna().any() else [])

        detail = "; ".join(f"{c}: {', '.join(_literal(v) for v in values(c))}" for c in varying)
        example = column_is(varying[0], grid[varying[0]].iloc[0]).replace('"', "")
        raise FitError(f"the grid varies {', '.join(varying)} besides L, M, D ({detail}); "
                       f"fit one slice, e.g. --where \"{example}\"")


def fit(grid: pd.DataFrame, form: str = "theory", *, n_boot: int = 200, n_starts: int = 8, seed: int = 0,
        loss_scale: float = LOSS_SCALE, where: str | None = None) -> FitResult:
    """Fit a scaling law to a grid of errors (from ``grid_errors``) with bootstrap CIs.

    Args:
        grid: columns L, M, D, err, seed_errs, optionally ref_err/floor_limited, sweep, metric,
            step and grid columns (which must each hold one value: one slice).
        form: a name of ``FORMS`` or an expression over L, M, D, P (see explorer.expression).
        n_boot: bootstrap resamples (seeds resampled within grid points; grid points when every
            point has a single seed). 0 skips the bootstrap (CIs are NaN).
        n_starts: starts of the point fit (the first from the theory's values).
        seed: seeds the starts and the bootstrap: the result is deterministic.
        loss_scale: soft-L1 scale of the log residuals.
        where: recorded in the result (the filter that produced ``grid``).
    Returns:
        A :class:`FitResult`.
    Raises:
        FitError: unknown form, several slices, fewer points than parameters + 1, no convergence.
        ExpressionError: an invalid user expression.
    """
    label, expr = resolve_form(form)
    if grid is None or len(grid) == 0:
        raise FitError("no grid points to fit")
    _check_single_slice(grid)
    reference_notes = list(grid.attrs.get("notes", ()))  # from grid_errors: several references
    grid = grid.reset_index(drop=True).copy()
    floor = grid["floor_limited"].to_numpy(bool) if "floor_limited" in grid else np.zeros(len(grid), bool)
    positive = np.isfinite(grid["err"].to_numpy(float)) & (grid["err"].to_numpy(float) > 0)
    used = ~floor & positive
    n_params = len(expr.parameters)
    if used.sum() < n_params + 1:
        raise FitError(f"only {int(used.sum())} grid points above the reference floor (of {len(grid)}); "
                       f"form {label!r} has {n_params} parameters and needs at least {n_params + 1}")
    data = grid[used]
    L, M, D = (data[c].to_numpy(float) for c in ("L", "M", "D"))
    log_err = np.log(data["err"].to_numpy(float))
    problem = _Problem(expr, L, M, D, loss_scale)
    rng = np.random.default_rng(seed)
    hints = FORMS[label].start if label in FORMS else {}
    best, agree = _best_fit(problem, log_err, _starts(problem, hints, log_err, max(1, n_starts), rng))
    theta = best.x
    converged = bool(best.success and (agree >= 2 or n_starts <= 1))

    fitted_log = problem.log_model(theta)
    ss_res = float(np.sum((log_err - fitted_log) ** 2))
    ss_tot = float(np.sum((log_err - log_err.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")

    samples, method = _bootstrap(problem, data, theta, n_boot, rng)
    values = problem.values(theta)
    names = expr.parameters
    estimate = {n: float(v) for n, v in zip(names, values)}
    if len(samples):
        lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)
    else:
        lo = hi = np.full(n_params, np.nan)
    extrapolation = _extrapolation_error(problem, data, theta, n_params)

    with np.errstate(all="ignore"):
        grid["fitted"] = expr(estimate, grid["L"].to_numpy(float), grid["M"].to_numpy(float), grid["D"].to_numpy(float))
        grid["residual_log"] = np.where(used, np.log(grid["err"].to_numpy(float)) - np.log(grid["fitted"]), np.nan)
    grid["used"] = used

    def _one(column):
        vals = grid[column].unique() if column in grid else []
        return vals[0] if len(vals) == 1 else None

    step = _one("step")
    notes = (reference_notes + _notes(expr, estimate, float(data["err"].max()), converged)
             + _identifiability(expr, best.jac))
    return FitResult(
        form=label, expression=expr, estimate=estimate,
        ci_low={n: float(v) for n, v in zip(names, lo)}, ci_high={n: float(v) for n, v in zip(names, hi)},
        r2_log=r2, n_points=int(used.sum()), n_excluded=int((~used).sum()), extrapolation_error=extrapolation,
        converged=converged, n_boot=len(samples), bootstrap=method, grid=grid, samples=samples,
        sweep=_one("sweep"), metric=_one("metric"), step=None if step is None else int(step), where=where, seed=seed,
        notes=notes,
    )


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


def _notes(expr: Expression, estimate: dict, err_max: float, converged: bool) -> list[str]:
    notes = []
    if not converged:
        notes.append("the starts disagreed on the best fit; treat the estimates with care")
    for name, value in estimate.items():
        if name in expr.positive and value < 1e-6 * err_max:
            notes.append(f"{name} ~ 0: the grid gives no evidence for its term")
        elif name not in expr.positive and abs(abs(value) - FREE_BOUND) < 1e-6:
            notes.append(f"{name} stopped at its search bound {value:+g}: the grid does not determine it")
    return notes


def _soft_l1_cost(r: np.ndarray, scale: float) -> np.ndarray:
    """least_squares' soft_l1 cost, 0.5 * sum f^2 * 2 (sqrt(1 + (r/f)^2) - 1), per row."""
    return (scale**2 * (np.sqrt(1.0 + (r / scale) ** 2) - 1.0)).sum(axis=-1)


def solve_batch(problem: "_Problem", log_err: np.ndarray, theta0: np.ndarray, L=None, M=None, D=None,
                max_iter: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Many robust fits at once: Levenberg-Marquardt on iteratively reweighted least squares.

    Minimizes the same soft-L1 cost of log residuals as ``least_squares(loss="soft_l1")`` for
    B data vectors in parallel (the bootstrap), each from its own start.

    Args:
        problem: the law, parametrization and bounds.
        log_err: (B, n) log errors. theta0: (B, p) starts (log-constants, free parameters).
        L, M, D: (n,) or (B, n) points; default the problem's points.
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

    def residuals(th):
        values = np.where(problem.is_log, np.exp(np.clip(th, -700, 700)), th)
        with np.errstate(all="ignore"):
            r = np.log(problem.expr.batch(values, L, M, D)) - log_err
        return np.where(np.isfinite(r), r, 30.0)

    r = residuals(theta)
    cost = _soft_l1_cost(r, f)
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
        w = 1.0 / np.sqrt(1.0 + (r / f) ** 2)
        A = np.einsum("bnp,bn,bnq->bpq", J, w, J)
        g = np.einsum("bnp,bn,bn->bp", J, w, r)
        diag = np.einsum("bpp->bp", A) + 1e-12
        with np.errstate(all="ignore"):
            step = np.linalg.solve(A + damping[:, None, None] * diag[:, :, None] * eye, -g[:, :, None])[:, :, 0]
        step = np.where(np.isfinite(step), step, 0.0)
        trial = np.clip(theta + step, lo, hi)
        r_trial = residuals(trial)
        cost_trial = _soft_l1_cost(r_trial, f)
        better = (cost_trial < cost) & ~done
        settled = better & (cost - cost_trial <= 1e-10 * (1.0 + cost))
        theta[better], r[better], cost[better] = trial[better], r_trial[better], cost_trial[better]
        damping = np.where(better, damping / 3.0, damping * 4.0)
        done |= settled | (damping > 1e10)
    return theta, done


def _bootstrap(problem: _Problem, data: pd.DataFrame, theta: np.ndarray, n_boot: int, rng) -> tuple[np.ndarray, str]:
    """Refit on n_boot resamples (seeds within grid points; grid points when every point has a
    single seed), all from the point estimate; returns the converged estimates (natural scale)."""
    packed, counts = _packed(data)
    by_points = bool(np.all(counts <= 1))
    if n_boot <= 0:
        return np.empty((0, len(theta))), "none"
    n, width = packed.shape
    starts = np.tile(theta, (n_boot, 1))
    if by_points:
        idx = rng.integers(0, n, (n_boot, n))
        log_err = np.log(data["err"].to_numpy(float))[idx]
        fitted, ok = solve_batch(problem, log_err, starts, problem.L[idx], problem.M[idx], problem.D[idx])
    else:
        pick = (rng.random((n_boot, n, width)) * counts[None, :, None]).astype(int)
        chosen = np.take_along_axis(np.broadcast_to(packed, (n_boot, n, width)), pick, axis=2)
        mask = np.arange(width)[None, None, :] < counts[None, :, None]
        rms = np.sqrt(np.where(mask, chosen**2, 0.0).sum(axis=2) / counts[None, :])
        fitted, ok = solve_batch(problem, np.log(rms), starts)
    ok &= np.all(np.isfinite(fitted), axis=1)
    fitted = fitted[ok]
    # Resampling n values spreads their mean by only (n - 1)/n of its variance: widen the
    # replicates around the estimate by sqrt(n / (n - 1)) (n: seeds per point, or points).
    n_eff = float(n) if by_points else float(len(counts) / np.sum(1.0 / np.maximum(counts, 2)))
    fitted = theta + np.sqrt(n_eff / (n_eff - 1.0)) * (fitted - theta)
    return problem.values(np.clip(fitted, *problem.bounds)), ("points" if by_points else "seeds")


def _extrapolation_error(problem: _Problem, data: pd.DataFrame, theta: np.ndarray, n_params: int) -> float:
    """Fit without the largest-L*M points, then the RMS relative error of predicting them."""
    LM = problem.L * problem.M
    held = LM == LM.max()
    train = ~held
    if held.all() or train.sum() < n_params + 1:
        return float("nan")
    log_err = np.log(data["err"].to_numpy(float))
    sub = _Problem(problem.expr, problem.L[train], problem.M[train], problem.D[train], problem.loss_scale)
    result = sub.solve(log_err[train], theta)
    predicted = np.exp(problem.log_model(result.x, problem.L[held], problem.M[held], problem.D[held]))
    relative = predicted / np.exp(log_err[held]) - 1.0
    return float(np.sqrt(np.mean(relative**2)))


def fit_sweep(con, sweep: str, form: str = "theory", *, metric: str = "err_out", step: int | None = None,
              where: str | None = None, n_boot: int = 200, seed: int = 0, hold: bool = True) -> FitResult:
    """``grid_errors`` then ``fit``: the whole analysis of one sweep slice (see both).

    Args:
        hold: when the sweep varies axes besides L, M, D (alpha, lr, ...), fit the slice at
            ``held_axes`` (their most common values) instead of failing; the slice is recorded
            in the result's ``where`` and ``held``.
    """
    resolve_form(form)  # a bad form fails before any query
    held = held_axes(con, sweep, ("L", "M", "D"), where) if hold else {}
    where = held_where(held, where)
    grid = grid_errors(con, sweep, metric=metric, step=step, where=where)
    result = fit(grid, form, n_boot=n_boot, seed=seed, where=where)
    result.held = held
    return result


def save_fit(store, result: FitResult) -> str:
    """Write a fit's rows into a store (``store.write_fit``); returns the fit_id."""
    if result.sweep is None:
        raise FitError("this fit has no sweep name; fit a grid from grid_errors to save it")
    store.write_fit(result.sweep, result.fit_id, result.rows().to_dict("records"))
    return result.fit_id


def format_table(result: FitResult) -> str:
    """A plain-text table: constant, estimate, 95% CI, then the fit's quality numbers."""
    held = ", ".join(f"{k} = {v}" for k, v in result.held.items())
    lines = [f"form {result.form}: err ~ {result.expression.text}"
             + (f"  (slice {held}: the sweep varies these too; choose with --where)" if held else ""),
             f"{'parameter':<10} {'estimate':>12} {'95% CI':>27}"]
    for _, row in result.table().iterrows():
        lines.append(f"{row.parameter:<10} {_num(row.estimate):>12} [{_num(row.ci_low):>11}, {_num(row.ci_high):>11}]")
    extra = "n/a" if math.isnan(result.extrapolation_error) else f"{100 * result.extrapolation_error:.1f}%"
    lines.append(f"R^2 (log) {result.r2_log:.3f}; {result.n_points} points fitted, {result.n_excluded} "
                 f"floor-limited left out; extrapolation error at the largest L*M: {extra}; "
                 f"bootstrap: {result.n_boot} resamples of {result.bootstrap}")
    lines.extend(f"warning: {note}" for note in result.notes)
    return "\n".join(lines)


def _num(x: float) -> str:
    if x is None or not np.isfinite(x):
        return "nan"
    return f"{x:.4g}"


__all__ = [
    "FITS_COLUMNS", "FORMS", "FitResult", "Form", "GRID_COLUMNS", "METRICS", "ReferenceChoice", "choose_references",
    "fit", "fit_sweep", "format_table", "grid_errors", "held_axes", "held_where", "query_frame", "save_fit",
    "status_counts", "step_errors",
]
