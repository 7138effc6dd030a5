"""The one declaration of every stored column: name, Arrow type, nullability, meaning.

Four kinds of rows live in the store (see docs/store.md for the table):
- ``metrics``: one row per trial, seed and step (the numbers of docs/model.md section 4);
- ``trials``: one row per trial (a grid point with all its seeds): config, status, timing;
- ``fits``: one row per fitted parameter of a scaling-law fit (written by the analysis);
- ``references``: one row per array of a cached Mean ODE reference;
- ``rounds``: the log of an adaptive sweep (``explorer.sweeps.adaptive``): one file per round, a row per
  chosen point (what was chosen and why) and, once the round's trials are done and refitted, a row
  per target parameter (its estimate and CI then);
- ``comparisons``: one row per parameter of a comparison of two fitted sweeps (``explorer compare``):
  both estimates, their difference and its paired and unpaired intervals, a verdict;
- ``optima``: one row per slice of a sweep's best value of a hyperparameter axis (``explorer
  optimum``) or per parameter of its transfer law (``explorer transfer``), with intervals.

``to_table(kind, rows, fill)`` is the gate every write goes through: a row with a missing or
unknown column, a value of the wrong type, or a status outside the allowed set raises
``SchemaError`` before anything is written. Bump ``SCHEMA_VERSION`` whenever a column is added,
removed or changes type; the version is stored in every row. The one exception is an *optional*
column (``Column.optional``): extra information that changes none of the existing numbers, which a
file of any version may hold or lack (read as null when lacking). It leaves the version, and so the
trial keys (which hash the version: a bump reruns every stored trial), unchanged.

Size: the one declaration of every stored kind and its check, read together by every writer and reader.
"""
from __future__ import annotations

import datetime as _dt
import importlib.metadata
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa

from .errors import InvalidNameError, SchemaError

SCHEMA_VERSION = 2  # 2: metrics gained ``flags``, fits ``warnings``
KINDS = ("metrics", "trials", "fits", "references", "rounds", "comparisons", "optima")
# The status vocabulary, best first: a trial's status is the worst of its seeds'.
STATUSES = ("ok", "diverged", "failed")
# A trial that ended so is final (a rerun skips it); a failed one runs again.
FINAL_STATUSES = ("ok", "diverged")
PACKAGE_NAME = "resnet-scaling-explorer"


@dataclass(frozen=True)
class Column:
    """One stored column."""

    name: str
    type: pa.DataType
    meaning: str  # one line for docs/store.md and `explorer` users
    nullable: bool = False  # None allowed (floats always allow NaN)
    allowed: tuple[str, ...] | None = None  # closed set of string values
    since: int = 1  # SCHEMA_VERSION that added it: files written before read it as null
    # A file of any version may lack it (read as null): information added without a version bump
    # because no existing number changes (module docstring). Always nullable.
    optional: bool = False
    # What the views show for a null (the default a writer leaves unwritten so that older rows and
    # keys stay as they were): a query, a --where and a slice label read the value, never a null.
    read_null_as: str | None = None


_INT, _FLOAT, _STR, _BOOL = pa.int64(), pa.float64(), pa.string(), pa.bool_()
COORD_BINS = 4  # depth bins of the columns coord_update_b<b>, coord_branch_b<b> (trials/coordcheck.py: a test)
_FLOATS = pa.list_(_FLOAT)
_TIME = pa.timestamp("us", tz="UTC")

_IDENTITY = (
    Column("sweep", _STR, "sweep name (the partition directory sweep=<name>)"),
    Column("trial_key", _STR, "16-hex hash of everything that defines the trial's numbers"),
    Column("ref_key", _STR, "key of the reference the trial is compared with"),
    Column("ref_kind", _STR, "reference kind: mean_ode | largest | joint_limit | none"),
)
CONFIG_COLUMNS = (
    Column("L", _INT, "depth: number of residual blocks"),
    Column("M", _INT, "hidden width: units per block"),
    Column("D", _INT, "embedding dimension"),
    Column("d_in", _INT, "input dimension"),
    Column("d_out", _INT, "output dimension"),
    Column("samples", _INT, "N, full-batch training set size"),
    Column("problem_seed", _INT, "seed of data and embeddings (shared with the reference)"),
    Column("coupled_dim", _INT, "width at which coupled embeddings are drawn (null: not coupled)", nullable=True),
    Column("activation", _STR, "activation sigma, e.g. tanh"),
    Column("block", _STR, "residual block type, e.g. 2lp"),
    Column("preset", _STR, "residual scaling preset: mlu | lazy | completep | depth_mup | standard"),
    Column("alpha", _FLOAT, "residual multiplier (>> 1: lazy regime)"),
    Column("sigma_u", _FLOAT, "init std of u entries, in units of sqrt(D)"),
    Column("sigma_v", _FLOAT, "init std of v entries, in units of sqrt(D)"),
    Column("lr", _FLOAT, "learning rate, in the convention lr_scaling names (eta, mean-field, by default)"),
    Column("steps", _INT, "K, number of gradient steps (metrics at step 0..K)"),
    Column("dtype", _STR, "float32 | float64"),
    Column("antithetic", _BOOL, "units drawn in antithetic pairs"),
    Column("residual_scale", _FLOAT, "c = alpha * L^-a * M^-b * D^-g of the preset"),
    Column("lr_scaling", _STR, "what lr multiplies: mean_field, the default (each unit steps by lr D / (2 c^2 L M) "
           "dl/dtheta; stored as null, also in every older row, and read as mean_field) | raw (plain SGD on "
           "W1 = u / D, W2 = c v)", nullable=True, optional=True, allowed=("mean_field", "raw"),
           read_null_as="mean_field"),
    Column("optimizer", _STR, "gd, the default (full-batch gradient descent; stored as null, also in every older row, and "
           "read as gd) | momentum | adam (trials/optimizers.py)", nullable=True, optional=True,
           allowed=("gd", "momentum", "adam"), read_null_as="gd"),
    Column("momentum", _FLOAT, "mu of optimizer momentum (null for the others)", nullable=True, optional=True),
    Column("beta1", _FLOAT, "Adam's beta1 (null for the others)", nullable=True, optional=True),
    Column("beta2", _FLOAT, "Adam's beta2 (null for the others)", nullable=True, optional=True),
    Column("eps", _FLOAT, "Adam's epsilon, in the units lr_scaling names (null for the others)", nullable=True, optional=True),
    Column("weight_decay", _FLOAT, "decoupled weight decay: each step first multiplies the units by 1 - lr weight_decay "
           "(null: none)", nullable=True, optional=True),
)
_OPTIMIZER_COLUMNS = ("optimizer", "momentum", "beta1", "beta2", "eps", "weight_decay")
_PROVENANCE = (
    Column("schema_version", _INT, "SCHEMA_VERSION of the code that wrote the row"),
    Column("package_version", _STR, "version of resnet-scaling-explorer that wrote the row"),
)
# The rows a sweep produces also name the code that produced them (store.fingerprint).
_PRODUCED_BY = (
    Column("code_fingerprint", _STR, "<version>+<12 hex of the sha256 of the trials, store and explorer packages' "
           "files> of the code that computed the row (a second checkout or edited code differs). Null: rows "
           "written before it was stored", nullable=True, optional=True),
)

_METRICS = _IDENTITY + CONFIG_COLUMNS + (
    Column("seed", _INT, "seed of the unit parameters (one repetition)"),
    Column("step", _INT, "gradient step k; 0 is before the first update"),
    Column("err_out", _FLOAT, "RMS over outputs and samples of f_k - f_k^ref (null: reference kind none)", nullable=True),
    Column("err_hidden", _FLOAT, "RMS over coordinates and samples of h_L - h^ref(1) (null: kind none)", nullable=True),
    Column("loss", _FLOAT, "training loss of the trial"),
    Column("ref_loss", _FLOAT, "training loss of the reference (null: kind none)", nullable=True),
    Column("ref_err_out", _FLOAT, "the reference's own error estimate for err_out (null: kind none)", nullable=True),
    Column("ref_err_hidden", _FLOAT, "the reference's own error estimate for err_hidden (null: kind none)",
           nullable=True),
    Column("feature_update", _FLOAT, "RMS local feature update of the units"),
    Column("lin_ratio", _FLOAT, "local linearization error ratio of the units"),
    Column("output_change", _FLOAT, "RMS change of the output since step 0"),
    Column("weight_change", _FLOAT, "relative change of the unit weights since step 0"),
    Column("test_loss", _FLOAT, "held-out loss: mean squared error on problem.test_samples samples of the teacher's law, "
           "never trained on (null: no test set)", nullable=True, optional=True),
    Column("test_err_out", _FLOAT, "RMS over the held-out samples and outputs of f_k - the teacher's clean output "
           "(null: no test set)", nullable=True, optional=True),
    Column("status", _STR, "ok | diverged | failed", allowed=STATUSES),
    Column(
        "flags", _STR,
        "comma-separated stability flags of the row, '' when none: init_noise, chaotic (see README); "
        "null: not computed (rows from before schema 2). Fits leave flagged rows out",
        nullable=True, since=2,
    ),
    Column(
        "gram_out", _FLOATS,
        "<e_s, e_t> / n for every seed t of the trial (ascending), e = f_k - f_k^ref of this seed (s) and of t "
        "(n entries); NaN for a seed t not ok at this step (the whole list: this seed not ok). Its own entry "
        "is err_out^2. Null: not stored (older rows, failed trials). The points view's bias and fluctuation",
        nullable=True, optional=True,
    ),
    Column(
        "gram_hidden", _FLOATS,
        "gram_out for err_hidden: <e_s, e_t> / n with e = h_L - h^ref(1) (n = samples x D entries)",
        nullable=True, optional=True,
    ),
    Column(
        "err_hidden_depthmax", _FLOAT,
        "the companion paper's hidden error: max over block outputs l of the mean over samples and coordinates "
        "of |h_l - h^ref(l/L)|. Null unless the reference gives its depth path (kind joint_limit)",
        nullable=True, optional=True,
    ),
    Column(
        "err_hidden_depthmean", _FLOAT,
        "err_hidden_depthmax's mean over the block outputs l = 0..L instead of its max (the companion paper's "
        "mean_hs_track). Null unless the reference gives its depth path (kind joint_limit)",
        nullable=True, optional=True,
    ),
    Column(
        "err_backward", _FLOAT,
        "the backward states' error: max over block outputs l of the mean over samples and coordinates of "
        "|B_l - b^ref(l/L)|, B = (D/2) dl/dh (the companion paper's max_bs_track, see docs/store.md). Null unless "
        "the reference gives its backward path (kind joint_limit)",
        nullable=True, optional=True,
    ),
) + tuple(
    Column(f"coord_{what}_b{b}", _FLOAT,
           f"coordinate check, depth bin {b} of {COORD_BINS} (the blocks l = 1..L with {COORD_BINS} (l - 1) // L = {b}): "
           f"the mean over its blocks of the RMS over samples and coordinates of {meaning}. Null: a bin without "
           f"blocks (L < {COORD_BINS}), failed trials, rows written before it was stored", nullable=True, optional=True)
    for what, meaning in (("update", "h_l(k) - h_l(0), the block output's change since step 0"),
                          ("branch", "the residual branch's output h_l - h_{l-1} = c sum_j v_j sigma(p_j)")) for b in range(COORD_BINS)
) + (
    Column("error", _STR, "error message of a failed trial (null otherwise)", nullable=True),
    Column("device", _STR, "device the trial ran on: cpu | cuda"),
    Column("node_id", _STR, "node (host or Ray node id) that ran the trial"),
    Column("wall_s", _FLOAT, "wall-clock seconds of the whole trial"),
) + _PROVENANCE + _PRODUCED_BY

_TRIALS = _IDENTITY + CONFIG_COLUMNS + (
    Column("seeds", pa.list_(_INT), "seeds of the trial's repetitions"),
    Column("n_seeds", _INT, "number of seeds"),
    Column("status", _STR, "ok | diverged (some seed diverged) | failed", allowed=STATUSES),
    Column("error", _STR, "error message of a failed trial (null otherwise)", nullable=True),
    Column("wall_s", _FLOAT, "wall-clock seconds of the whole trial"),
    Column("device", _STR, "device the trial ran on: cpu | cuda"),
    Column("node_id", _STR, "node (host or Ray node id) that ran the trial"),
    Column("started_at", _TIME, "UTC time the trial started"),
    Column("final_err_out", _FLOAT, "RMS of err_out at the last step over the seeds that ended ok"),
    Column("final_err_hidden", _FLOAT, "RMS of err_hidden at the last step over the seeds that ended ok"),
    Column("config_json", _STR, "the resolved trial config as JSON"),
) + _PROVENANCE + _PRODUCED_BY

_FITS = (
    Column("sweep", _STR, "sweep name"),
    Column("fit_id", _STR, "id of one fit (one file per fit id): <fit_key>-<8 hex of data_hash>"),
    Column("form", _STR, "scaling-law form, a key of the fit registry"),
    Column("metric", _STR, "fitted metric column, e.g. err_out"),
    Column("step", _INT, "step the metric was taken at (null: not step-specific)", nullable=True),
    Column("parameter", _STR, "name of the fitted parameter, e.g. a, c1"),
    Column("estimate", _FLOAT, "point estimate of the parameter"),
    Column("ci_low", _FLOAT, "lower end of the bootstrap confidence interval", nullable=True),
    Column("ci_high", _FLOAT, "upper end of the bootstrap confidence interval", nullable=True),
    Column("r2_log", _FLOAT, "R^2 of the fit in log space", nullable=True),
    Column("n_points", _INT, "grid points used by the fit"),
    Column("n_excluded", _INT, "grid points left out (floor-limited, diverged, failed)"),
    Column("extrapolation_error", _FLOAT, "relative error on held-out larger points", nullable=True),
    Column("warnings", _STR, "the fit's guard-rail warnings joined by '; ' ('' when none; null in older fits)",
           nullable=True, since=2),
    Column("created_at", _TIME, "UTC time the fit was written"),
    Column("fit_key", _STR,
           "what was asked, whatever the data: <form>-<hash> of sweep, law, metric, step, filter, resamples, seed "
           "(the fit_id of fits written before data_hash); the fits of one fit_key are its history. Null in older fits",
           nullable=True, optional=True),
    Column("data_hash", _STR,
           "16-hex sha256 of the sorted trial keys the fit read: a fit of grown data gets a new fit_id. "
           "Null in older fits", nullable=True, optional=True),
) + _PROVENANCE

_REFERENCES = (
    Column("ref_key", _STR, "reference key (one file per key)"),
    Column("name", _STR, "array name"),
    Column("dtype", _STR, "numpy dtype string, byte order included, e.g. <f8"),
    Column("shape", pa.list_(_INT), "array shape"),
    Column("data", pa.large_binary(), "raw C-order bytes of the array (bit-exact)"),
    Column("meta_json", _STR, "the reference's metadata as JSON"),
) + _PROVENANCE

ROUND_STATES = ("planned", "done")  # planned: chosen, its trials maybe not all run; done: run and refitted
ROUND_ENTRIES = ("point", "target")
_ROUNDS = (
    Column("sweep", _STR, "sweep name"),
    Column("round_id", _STR, "id of one round, round-NNNN (one file per round; rewritten when the round is done)"),
    Column("round", _INT, "round number: 0 is the initial design"),
    Column("state", _STR, "planned (chosen; its trials may not all have run) | done (run and refitted)",
           allowed=ROUND_STATES),
    Column("entry", _STR, "point (a chosen trial) | target (a target parameter after the round's refit)",
           allowed=ROUND_ENTRIES),
    Column("form", _STR, "the law fitted, a key of the fit registry"),
    Column("trial_key", _STR, "point rows: the chosen trial", nullable=True),
    Column("L", _INT, "point rows: depth", nullable=True),
    Column("M", _INT, "point rows: hidden width", nullable=True),
    Column("D", _INT, "point rows: embedding dimension", nullable=True),
    Column("alpha", _FLOAT, "point rows: residual multiplier", nullable=True),
    Column("problem_seed", _INT, "point rows: problem draw", nullable=True),
    Column("gain_per_cost", _FLOAT,
           "point rows: expected shrinkage of the unmet targets' CI half-widths (in units of the target "
           "half-width, linearised) per predicted second; NaN for the initial design", nullable=True),
    Column("predicted_cost", _FLOAT, "point rows: the trial's cost, in cost_unit", nullable=True),
    Column("predicted_wall_s", _FLOAT, "point rows: predicted wall seconds (from measured wall_s)", nullable=True),
    Column("parameter", _STR, "target rows: the parameter, e.g. a", nullable=True),
    Column("estimate", _FLOAT, "target rows: estimate after the round's refit", nullable=True),
    Column("ci_low", _FLOAT, "target rows: lower end of the 95% bootstrap CI", nullable=True),
    Column("ci_high", _FLOAT, "target rows: upper end of the 95% bootstrap CI", nullable=True),
    Column("halfwidth", _FLOAT, "target rows: the CI half-width to reach", nullable=True),
    Column("spent_cost", _FLOAT, "cost of every trial chosen up to this round, in cost_unit"),
    Column("budget_cost", _FLOAT, "the budget: [adaptive] budget times the full grid's cost, in cost_unit"),
    Column("full_cost", _FLOAT, "cost of the whole candidate grid, in cost_unit"),
    Column("cost_unit", _STR, "the unit of the costs: predicted single-core seconds (explorer/config/cost_model.py); "
           "null in logs written before it was recorded, whose costs are L*M*D*seeds", nullable=True, optional=True),
    Column("spent_wall_s", _FLOAT, "sum of wall_s of the sweep's trials when the round was written", nullable=True),
    Column("reason", _STR, "why these points: initial design, or greedy CI gain per cost"),
    Column("stop_reason", _STR, "why the loop stopped after this round (null: it goes on)", nullable=True),
    Column("created_at", _TIME, "UTC time the round record was written"),
) + _PROVENANCE

COMPARISON_VERDICTS = ("differs", "no difference measured", "identical", "not measured")
_COMPARISONS = (
    Column("sweep", _STR, "the partition the row is filed under: sweep_a"),
    Column("comparison_id", _STR, "id of one comparison (one file per id; the same comparison again replaces it)"),
    Column("sweep_a", _STR, "the first sweep (A)"),
    Column("sweep_b", _STR, "the second sweep (B); equal to sweep_a for a comparison within one sweep (--by)"),
    Column("where_a", _STR, "the condition selecting A's rows, e.g. preset = 'mlu' (null: the whole sweep)",
           nullable=True),
    Column("where_b", _STR, "the condition selecting B's rows (null: the whole sweep)", nullable=True),
    Column("form", _STR, "the law both sweeps were fitted with, a key of the fit registry"),
    Column("metric", _STR, "the error metric, e.g. err_out"),
    Column("step", _INT, "the step read (null: each trial's final step)", nullable=True),
    Column("parameter", _STR, "the law's parameter, e.g. a, c1"),
    Column("estimate_a", _FLOAT, "A's estimate on the shared points, draws and seeds (NaN: not measured)"),
    Column("estimate_b", _FLOAT, "B's estimate on the same selection (NaN: not measured)"),
    Column("difference", _FLOAT, "B - A; for a positive constant (c1, c2) the ratio B / A"),
    Column("ci_low", _FLOAT, "lower end of the paired 95% interval of the difference (null: identical runs)",
           nullable=True),
    Column("ci_high", _FLOAT, "upper end of the paired 95% interval", nullable=True),
    Column("ci_low_unpaired", _FLOAT, "lower end of the interval as if the sweeps shared no randomness",
           nullable=True),
    Column("ci_high_unpaired", _FLOAT, "upper end of the unpaired interval", nullable=True),
    Column("verdict", _STR, "differs (the paired interval excludes no change) | no difference measured | "
           "identical (bit-identical errors) | not measured", allowed=COMPARISON_VERDICTS),
    Column("n_draws", _INT, "problem draws both sweeps share"),
    Column("n_points", _INT, "(draw, grid point) rows both sweeps share"),
    Column("n_seeds", _INT, "seeds per point both sweeps share (the fewest over draws)"),
    Column("n_boot", _INT, "paired bootstrap resamples"),
    Column("differing_keys", _STR, "the configuration columns whose values differ between A and B, joined by ', '"),
    Column("created_at", _TIME, "UTC time the comparison was written"),
) + _PROVENANCE

OPTIMUM_EDGES = ("below", "above")
TRANSFER_VERDICTS = ("transfers", "drifts", "not measured")
# The configuration columns that may define a slice of an optimum (null where not): every grid
# axis but the draw and the derived residual scale. Optional, so a configuration column added
# later leaves the optima written before it readable.
OPTIMUM_SLICE_COLUMNS = tuple(c.name for c in CONFIG_COLUMNS if c.name not in ("problem_seed", "residual_scale"))
_OPTIMA = (
    Column("sweep", _STR, "sweep name"),
    Column("optima_id", _STR, "id of one request (one file per id; the same request again replaces it)"),
    Column("axis", _STR, "the hyperparameter axis minimised over, e.g. lr, alpha"),
    Column("metric", _STR, "the metric minimised, e.g. loss, err_out"),
    Column("step", _INT, "the step read (null: each trial's last step)", nullable=True),
    Column("parameter", _STR, "null: a slice's optimum; gamma, delta or c: a parameter of the transfer law "
           "log axis* = c + gamma log L + delta log M", nullable=True),
    Column("across", _STR, "transfer rows: the axes the law runs across, e.g. L or L,M (null: optimum rows)",
           nullable=True),
) + tuple(
    Column(c.name, c.type, f"slice: {c.meaning} (null: not an axis of the slice)", nullable=True, optional=True)
    for c in CONFIG_COLUMNS if c.name in OPTIMUM_SLICE_COLUMNS
) + (
    Column("optimum", _FLOAT, "optimum rows: the located minimiser of the axis (null: at a grid edge or not "
           "measured); transfer rows: the parameter's estimate (NaN: not measured)", nullable=True),
    Column("ci_low", _FLOAT, "lower end of the 95% seed-and-draw bootstrap interval (null: none)", nullable=True),
    Column("ci_high", _FLOAT, "upper end of the 95% interval (null: none)", nullable=True),
    Column("edge", _STR, "optimum rows: below | above when the minimum sits at the grid's lowest or highest value "
           "(null: inside the grid)", nullable=True, allowed=OPTIMUM_EDGES),
    Column("grid_low", _FLOAT, "the axis's lowest grid value in the slice"),
    Column("grid_high", _FLOAT, "the axis's highest grid value in the slice"),
    Column("verdict", _STR, "transfer rows: transfers | drifts | not measured (null: optimum rows)",
           nullable=True, allowed=TRANSFER_VERDICTS),
    Column("n_draws", _INT, "problem draws read"),
    Column("n_runs", _INT, "runs (draw, seed, grid value) read; transfer rows: over the slices fitted"),
    Column("n_diverged", _INT, "runs among them that diverged (counted as worse than every finite value)"),
    Column("n_boot", _INT, "bootstrap resamples"),
    Column("note", _STR, "what the row leaves out or why it is not measured ('' when nothing)"),
    Column("created_at", _TIME, "UTC time the rows were written"),
) + _PROVENANCE

COLUMNS: dict[str, tuple[Column, ...]] = {
    "metrics": _METRICS, "trials": _TRIALS, "fits": _FITS, "references": _REFERENCES, "rounds": _ROUNDS,
    "comparisons": _COMPARISONS, "optima": _OPTIMA,
}
# {version: {kind: columns that version added}}: a file written at version v lacks the columns of
# later versions and reads them as null (store.screen's rule).
ADDED_COLUMNS: dict[int, dict[str, tuple[str, ...]]] = {
    version: {kind: tuple(c.name for c in cols if c.since == version and not c.optional)
              for kind, cols in COLUMNS.items()}
    for version in range(2, SCHEMA_VERSION + 1)
}
# {kind: columns a file of any version may hold or lack} (``Column.optional``; store.screen's rule).
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {
    kind: tuple(c.name for c in cols if c.optional) for kind, cols in COLUMNS.items()
}
# Each file of a kind holds whole groups of this column (one group per small file).
KEY_COLUMN = {"metrics": "trial_key", "trials": "trial_key", "fits": "fit_id", "references": "ref_key",
              "rounds": "round_id", "comparisons": "comparison_id", "optima": "optima_id"}


def _hostname() -> str:
    return socket.gethostname()


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


# Columns a writer may leave out, and where their value then comes from.
DEFAULTS = {
    "metrics": {"error": lambda: None, "node_id": _hostname, "flags": lambda: None,
                **{name: (lambda: None) for name in ("gram_out", "gram_hidden", "err_hidden_depthmax", "err_hidden_depthmean",
                                                     "err_backward", "lr_scaling", "code_fingerprint", "test_loss",
                                                     "test_err_out", *_OPTIMIZER_COLUMNS)},
                **{f"coord_{what}_b{b}": (lambda: None) for what in ("update", "branch") for b in range(COORD_BINS)}},
    "trials": {"error": lambda: None, "node_id": _hostname, "lr_scaling": lambda: None, "code_fingerprint": lambda: None,
               **{name: (lambda: None) for name in _OPTIMIZER_COLUMNS}},
    "fits": {"created_at": _now, "warnings": lambda: "", "fit_key": lambda: None, "data_hash": lambda: None},
    "references": {},
    "rounds": {"created_at": _now, "stop_reason": lambda: None},
    "comparisons": {"created_at": _now, "where_a": lambda: None, "where_b": lambda: None},
    "optima": {"created_at": _now, "note": lambda: "", **{name: (lambda: None) for name in OPTIMUM_SLICE_COLUMNS}},
}


@lru_cache(maxsize=None)
def package_version() -> str:
    """Installed version of resnet-scaling-explorer, or '0+unknown' when not installed."""
    try:
        return importlib.metadata.version(PACKAGE_NAME)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def schema(kind: str) -> pa.Schema:
    """The Arrow schema of one kind of row.

    Raises:
        ValueError: for an unknown kind (the message lists the kinds).
    """
    return _schema(check_kind(kind))


@lru_cache(maxsize=None)
def _schema(kind: str) -> pa.Schema:
    fields = [pa.field(c.name, c.type, nullable=c.nullable) for c in COLUMNS[kind]]
    return pa.schema(fields, metadata={"explorer.schema_version": str(SCHEMA_VERSION), "explorer.kind": kind})


def read_defaults(kind: str) -> dict[str, str]:
    """column -> the value the views show for its nulls (``Column.read_null_as``)."""
    return {c.name: c.read_null_as for c in COLUMNS[check_kind(kind)] if c.read_null_as is not None}


def check_kind(kind: str, allowed: tuple[str, ...] = KINDS) -> str:
    """``kind`` when it is one of ``allowed``; otherwise InvalidNameError (a ValueError) listing them."""
    if kind not in allowed:
        raise InvalidNameError(f"unknown kind {kind!r}; expected one of: {', '.join(allowed)}")
    return kind


def column_names(kind: str) -> tuple[str, ...]:
    """Column names of a kind, in stored order."""
    return tuple(c.name for c in COLUMNS[check_kind(kind)])


# Python types accepted for each Arrow type. bool is an int subclass: refused explicitly below.
_INTEGER = (int, np.integer)
_ACCEPTED = {
    "int64": (_INTEGER, "an integer"),
    "double": ((int, float, np.integer, np.floating), "a number (NaN allowed)"),
    "string": ((str,), "a string"),
    "bool": ((bool, np.bool_), "a bool"),
    "timestamp[us, tz=UTC]": ((_dt.datetime,), "a timezone-aware datetime"),
    "list<item: int64>": ((list, tuple), "a list of integers"),
    "list<item: double>": ((list, tuple), "a list of numbers (NaN allowed)"),
    "large_binary": ((bytes,), "bytes"),
}
_BOOLS = (bool, np.bool_)


def _type_ok(value_type: type, arrow_type: str) -> bool:
    accepted, _ = _ACCEPTED[arrow_type]
    if issubclass(value_type, _BOOLS) and arrow_type != "bool":
        return False
    return issubclass(value_type, accepted)


def _fail_row(kind: str, column: Column, values: list, test) -> SchemaError:
    index = next(i for i, v in enumerate(values) if not test(v))
    value = values[index]
    _, expected = _ACCEPTED[str(column.type)]
    if value is None:
        return SchemaError(f"{kind} column {column.name!r} is null in row {index}; it is required ({expected})")
    return SchemaError(
        f"{kind} column {column.name!r} ({column.type}) got {value!r} ({type(value).__name__}) in row {index}; "
        f"expected {expected}"
    )


def _check_values(kind: str, column: Column, values: list) -> None:
    arrow_type = str(column.type)
    types = set(map(type, values))
    none_type = type(None)
    if none_type in types:
        if not column.nullable:
            raise _fail_row(kind, column, values, lambda v: v is not None)
        types.discard(none_type)
    bad = [t for t in types if not _type_ok(t, arrow_type)]
    if bad:
        raise _fail_row(kind, column, values, lambda v: v is None or _type_ok(type(v), arrow_type))
    if column.type == _TIME:
        naive = [v for v in values if v is not None and v.tzinfo is None]
        if naive:
            raise _fail_row(kind, column, values, lambda v: v is None or v.tzinfo is not None)
    if column.type == pa.list_(_INT):
        def ints(v):
            return v is None or all(_type_ok(type(x), "int64") for x in v)

        if not all(map(ints, values)):
            raise SchemaError(f"{kind} column {column.name!r} must hold lists of integers; got {next(v for v in values if not ints(v))!r}")
    if column.type == _FLOATS:
        def numbers(v):
            return v is None or all(_type_ok(type(x), "double") for x in v)

        if not all(map(numbers, values)):
            raise SchemaError(f"{kind} column {column.name!r} must hold lists of numbers; got {next(v for v in values if not numbers(v))!r}")
    if column.allowed is not None:
        unknown = set(values) - set(column.allowed) - {None}
        if unknown:
            raise SchemaError(
                f"{kind} column {column.name!r} got {sorted(unknown)[0]!r}; expected one of: {', '.join(column.allowed)}"
            )


def to_table(kind: str, rows: Sequence[Mapping], fill: Mapping[str, object] | None = None) -> pa.Table:
    """Validate rows against the declared schema and build the Arrow table to store.

    Args:
        kind: one of KINDS.
        rows: a non-empty sequence of mappings, one per row, each with exactly the kind's
            columns, except the ``fill`` columns and those with a default (``DEFAULTS``).
        fill: columns the store sets itself (sweep, key, schema_version, package_version). A row
            may repeat them only with the same value.

    Returns:
        A ``pa.Table`` with ``schema(kind)``.

    Raises:
        SchemaError: a missing or unknown column, a wrong type, a null in a required column, a
            value outside an allowed set, or no rows at all. Nothing is written.
    """
    columns = COLUMNS[check_kind(kind)]
    fill = dict(fill or {})
    if isinstance(rows, Mapping) or not isinstance(rows, Sequence):
        raise SchemaError(f"{kind} rows must be a list of dicts, got {type(rows).__name__}")
    if not rows:
        raise SchemaError(f"no {kind} rows given; a write needs at least one row")
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise SchemaError(f"{kind} row {index} must be a dict, got {type(row).__name__}")
    names = {c.name for c in columns}
    defaults = DEFAULTS[kind]
    first_keys = rows[0].keys()
    for index, row in enumerate(rows):
        if index and row.keys() == first_keys:
            continue
        keys = set(row.keys())
        unknown = keys - names
        if unknown:
            raise SchemaError(
                f"{kind} row {index} has unknown column(s) {', '.join(sorted(map(str, unknown)))}; "
                f"declare new columns in store/schema.py (and bump SCHEMA_VERSION)"
            )
        missing = names - keys - set(fill) - set(defaults)
        if missing:
            raise SchemaError(f"{kind} row {index} is missing column(s) {', '.join(sorted(missing))}")
        if index and keys != set(first_keys):
            # Optional columns must be given in every row or in none: a mix is almost surely a bug.
            raise SchemaError(
                f"{kind} row {index} has columns {sorted(keys ^ set(first_keys))} that row 0 "
                "does not have (or the reverse); give every row the same columns"
            )
    arrays = []
    for column in columns:
        if column.name in fill:
            value = fill[column.name]
            if column.name in first_keys:
                differing = [r[column.name] for r in rows if r[column.name] != value]
                if differing:
                    raise SchemaError(
                        f"{kind} column {column.name!r} is {differing[0]!r} in a row but the write is for {value!r}"
                    )
            values = [value] * len(rows)
        elif column.name in first_keys:
            values = [r[column.name] for r in rows]
        else:
            values = [defaults[column.name]()] * len(rows)
        _check_values(kind, column, values)
        try:
            arrays.append(pa.array(values, type=column.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise SchemaError(f"{kind} column {column.name!r} cannot be stored as {column.type}: {exc}") from None
    return pa.Table.from_arrays(arrays, schema=_schema(kind))

