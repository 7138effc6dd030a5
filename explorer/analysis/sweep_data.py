"""The data layer of the analysis: the SQL that turns a store's ``metrics`` view into per-point tables.

Used by the fits (``explorer.analysis.fit``), the phase diagram (``explorer.analysis.phase``), shape advice and
the report. Every query goes through ``query_frame`` (the one place a store query error becomes
the explorer's one-line ``QueryError``).

- ``grid_errors``: per (problem draw, grid point) errors at one GD step, RMS over seeds.
- ``step_errors``: the same at every step.
- ``seed_grams``: per (problem draw, grid point) at one step, the seeds' Gram matrix of the
  errors, from which the bias and the fluctuation are computed for any resampling of the seeds
  (``explorer.analysis.decomposition``).
- ``held_axes`` / ``held_where``: the slice of a sweep that varies more axes than a view draws.
- ``choose_references`` / ``ReferenceChoice``: one reference per grid point and draw.
- ``status_counts``, ``require_sweep_rows``, ``table_columns``.
- ``query_cache``: one read of the store for a block of analysis (a report build, one
  ``grid_errors``): each distinct query runs once inside it.

Problem draws (``problem_seed``) are part of a grid point's identity here: each draw has its own
reference, and the fits pool the draws (``explorer.analysis.fit``). Stability flags (a ``flags`` column
of comma-separated names, '' or NULL when clean; absent in older stores) leave a seed's row out
of the per-point errors; the rows left out are counted in ``n_flagged``.
"""
from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from store import CONFIG_COLUMNS, run_query, validate_filter

from ..errors import FitError, MixedReferencesError, NoDecompositionError, QueryError, SweepDataError
from ..store_access import store_errors

# err_hidden_depthmax: the companion paper's hidden error (joint_limit references only; store/schema.py)
FIT_METRICS = ("err_out", "err_hidden", "err_hidden_depthmax")
REFERENCE_ERROR = {"err_out": "ref_err_out", "err_hidden": "ref_err_hidden", "err_hidden_depthmax": "ref_err_hidden"}
GRAM_COLUMN = {"err_out": "gram_out", "err_hidden": "gram_hidden"}  # each seed's row of the error Gram matrix
NO_DECOMPOSITION = ("this store predates the per-seed decomposition (no {column} rows{where}); "
                    "rerun the sweep to get the bias and fluctuation")
FLOOR_FACTOR = 3.0  # a point whose error is < 3x the reference's own error is floor-limited
DRAW_COLUMN = "problem_seed"  # the problem draw: data and embeddings (docs/model.md section 4)
FLAGS_COLUMN = "flags"  # stability flags of a metric row: comma-separated names, '' or NULL = clean
# The store's hyperparameter columns that define a grid point besides L, M, D (those present are
# used): problem_seed is the draw (its own key, see DRAW_COLUMN); residual_scale is a function of
# L, M, D, alpha. A point's reference (ref_key) is resolved by choose_references, not an axis.
NOT_GRID_COLUMNS = ("L", "M", "D", DRAW_COLUMN, "residual_scale")
GRID_COLUMNS = tuple(c.name for c in CONFIG_COLUMNS if c.name not in NOT_GRID_COLUMNS)
REQUIRED_COLUMNS = ("sweep", "trial_key", "seed", "step", "status", "L", "M", "D")

# ----------------------------------------------------------------------------- data from the store


_CACHES: dict[int, dict[str, pa.Table]] = {}  # id(con) -> SQL -> result, while a query_cache block is open


@contextlib.contextmanager
def query_cache(con) -> Iterator[None]:
    """Run each distinct query on ``con`` once inside the block and serve repeats from memory.

    A report asks the same questions many times (the columns of ``metrics``, the sweep's rows,
    the reference choice, ...); inside the block an identical SQL string is answered from the
    first result, so the block must not span a change of the store (a new trial, a new round):
    open it around one read, e.g. one ``build_report``, never around a sweep's rounds. Results
    are kept as Arrow tables (immutable) and converted afresh on each call, so a caller that
    edits its frame never changes what the next caller gets. Nested blocks share the outer one;
    a failed query is not kept.
    """
    if id(con) in _CACHES:
        yield
        return
    _CACHES[id(con)] = {}
    try:
        yield
    finally:
        del _CACHES[id(con)]


def _cached(function):
    """Run ``function(con, ...)`` inside ``query_cache(con)``: its repeated queries run once."""
    @functools.wraps(function)
    def wrapper(con, *args, **kwargs):
        with query_cache(con):
            return function(con, *args, **kwargs)
    return wrapper


def _query_table(con, sql: str) -> pa.Table:
    """``query_frame``'s Arrow result (from the open ``query_cache`` when it has run there)."""
    cache = _CACHES.get(id(con))
    if cache is not None and sql in cache:
        return cache[sql]
    with store_errors():
        table = run_query(con, sql)
    if cache is not None:
        cache[sql] = table
    return table


def query_frame(con, sql: str) -> pd.DataFrame:
    """Run one analysis query through the store's query helper and return it as pandas.

    Every query of the analysis (fit, phase, report) goes through here, and its error goes
    through ``explorer.store_access.store_errors`` (the explorer's one conversion of store errors), so
    a DuckDB error, a corrupt store file included, is the same one line as ``explorer sql``
    prints (with its ``explorer check`` hint) and never a traceback. Inside ``query_cache(con)``
    a query already run there is not run again (a new DataFrame of the same result).

    Raises:
        QueryError: DuckDB rejected the query or could not read a store file.
    """
    return _query_table(con, sql).to_pandas()


def table_columns(con, table: str = "metrics") -> list[str]:
    """Column names of a view or table on a DuckDB connection."""
    try:
        described = query_frame(con, f'DESCRIBE "{table}"')
    except QueryError as exc:  # a catalog error: no such view
        raise SweepDataError(f"the store has no {table!r} table: {exc}") from None
    return [str(name) for name in described["column_name"]]


def sweep_is(sweep: str) -> str:
    """The SQL condition selecting one sweep's rows (the name as a quoted literal)."""
    return f"sweep = {sql_literal(str(sweep))}"


def require_sweep_rows(con, sweep: str) -> None:
    """Raise SweepDataError naming the known sweeps when ``sweep`` has no metric rows.

    (``store.layout.check_sweep`` is the store's name validator; this checks for rows.)"""
    known = query_frame(con, "SELECT DISTINCT sweep FROM metrics ORDER BY sweep")["sweep"].tolist()
    if sweep not in known:
        shown = ", ".join(map(str, known)) if known else "none"
        raise SweepDataError(f"unknown sweep {sweep!r}; the store has: {shown}")


def _check_metric(metric: str) -> None:
    if metric not in FIT_METRICS:
        raise FitError(f"unknown metric {metric!r}; expected one of: {', '.join(FIT_METRICS)}")


def final_step_clause(columns: list[str], sweep: str, step: int | None) -> str:
    """The SQL condition selecting one GD step: ``step`` or, when None, each trial's final step
    (its ``steps`` column when present, else the sweep's last step)."""
    if step is not None:
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise SweepDataError(f"step must be a non-negative integer, got {step!r}")
        return f"step = {int(step)}"
    return "step = steps" if "steps" in columns else f"step = (SELECT max(step) FROM metrics WHERE {sweep_is(sweep)})"


def where_clause(where: str | None) -> str:
    """`` AND (where)`` to append to a query's conditions ('' for no filter), once ``where`` is known to be one condition: ``1=1) OR (1=1`` would
    otherwise close the parenthesis and lift the sweep and status guards around it."""
    if not where:
        return ""
    with store_errors():
        return f" AND ({validate_filter(where)})"


def grid_columns(con) -> list[str]:
    """The grid-defining hyperparameter columns (besides L, M, D) present in ``metrics``."""
    columns = table_columns(con)
    return [c for c in GRID_COLUMNS if c in columns]


def point_columns(columns) -> list[str]:
    """The columns naming one measured point: grid columns present, the draw (when the view has
    ``problem_seed``), then L, M, D."""
    return [c for c in GRID_COLUMNS if c in columns] + ([DRAW_COLUMN] if DRAW_COLUMN in columns else []) + ["L", "M", "D"]


def flagged_expr(columns) -> str:
    """SQL boolean: the row carries a stability flag (FALSE when the view has no ``flags`` column)."""
    if FLAGS_COLUMN not in columns:
        return "FALSE"
    return f"coalesce(trim(\"{FLAGS_COLUMN}\") <> '', FALSE)"


def flag_names_expr(columns) -> str:
    """SQL string: the row's flags column ('' when the view has none or the value is NULL)."""
    if FLAGS_COLUMN not in columns:
        return "''"
    return f'coalesce("{FLAGS_COLUMN}", \'\')'


def count_flags(values) -> dict:
    """Flag name -> how many of ``values`` (flags column strings, comma-separated names) carry it,
    in first-seen order; a row with two flags counts once under each."""
    counts: dict = {}
    for value in values:
        for name in str(value or "").split(","):
            name = name.strip()
            if name:
                counts[name] = counts.get(name, 0) + 1
    return counts


def format_flag_counts(counts: dict) -> str:
    """``init_noise 3, chaotic 1`` (empty when no flag was counted)."""
    return ", ".join(f"{name} {n}" for name, n in counts.items())


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
        notes: what was chosen, for the fit notes and the report (empty when nothing was mixed;
            it names the ref_keys read and those left out).
        left_out: the keys of the trials left out (``where`` excludes exactly these).
    """

    where: str | None
    notes: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()


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

    A grid point is a value of L, M, D, every other grid column (``GRID_COLUMNS``) and the
    problem draw (``problem_seed``: each draw has its own reference); its reference is the ``ref_key`` of its trials. References legitimately differ between grid
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
    point = point_columns(columns)
    measured = " AND status <> 'failed'" if "status" in columns else ""
    pairs = query_frame(con, f"SELECT DISTINCT {_quoted(point)}, ref_key, trial_key FROM metrics "
                             f"WHERE {sweep_is(sweep)}{measured}{where_clause(where)}")
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
    condition = f"trial_key NOT IN ({', '.join(sql_literal(k) for k in left_out)})"
    combined = f"({where}) AND {condition}" if where else condition
    return ReferenceChoice(combined, (note,), left_out)


# ----------------------------------------------------------------------------- per-point errors


@_cached
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
        One row per grid point and problem draw, sorted by L, M, D: the grid columns,
        problem_seed (when the view has it), ref_key, L, M, D, ``err`` (RMS over seeds,
        float64), ``ref_err`` (the reference's error estimate, mean over seeds), ``n_seeds``,
        ``n_flagged`` (seeds left out for a stability flag; ``frame.attrs["n_flagged"]`` also
        counts points whose every seed is flagged, which are dropped: ``attrs["n_flagged_points"]``
        of them; ``attrs["flag_counts"]`` is flag name -> seeds carrying it), ``floor_limited``
        (err < 3 ref_err, ``FLOOR_FACTOR``), ``seed_errs`` (the per-seed
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
    require_sweep_rows(con, sweep)
    choice = choose_references(con, sweep, where)
    point = point_columns(columns)
    keys = point[:-3] + (["ref_key"] if "ref_key" in columns else []) + ["L", "M", "D"]
    ref = REFERENCE_ERROR[metric]
    ref_expr = f"{ref}" if ref in columns else "CAST(NULL AS DOUBLE)"
    select_keys = _quoted(keys)
    sql = f"""
        SELECT {select_keys}, max(step) AS step,
               sqrt(avg(metric_value * metric_value) FILTER (WHERE NOT flagged)) AS err,
               avg(reference_value) FILTER (WHERE NOT flagged) AS ref_err,
               count(*) FILTER (WHERE NOT flagged) AS n_seeds, count(*) FILTER (WHERE flagged) AS n_flagged,
               list(metric_value ORDER BY trial_key, seed) FILTER (WHERE NOT flagged) AS seed_errs,
               list(flag_names) FILTER (WHERE flagged) AS flag_lists
        -- (identifiers are case-insensitive in DuckDB: short aliases like m would shadow M)
        FROM (SELECT {select_keys}, step, trial_key, seed, {metric} AS metric_value,
                     {ref_expr} AS reference_value, {flagged_expr(columns)} AS flagged,
                     {flag_names_expr(columns)} AS flag_names
              FROM metrics
              WHERE {sweep_is(sweep)} AND {final_step_clause(columns, sweep, step)} AND status = 'ok'
                    AND isfinite({metric}){where_clause(choice.where)})
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
    frame["n_flagged"] = frame["n_flagged"].astype(int)
    n_flagged = int(frame["n_flagged"].sum())
    flag_counts = count_flags(names for lists in frame.pop("flag_lists") if lists is not None for names in lists)
    n_flagged_points = int((frame["n_seeds"] == 0).sum())
    frame = frame[frame["n_seeds"] > 0].reset_index(drop=True)  # every seed flagged: nothing measured
    if frame.empty:
        raise SweepDataError(f"sweep {sweep!r}: every {metric} row at this step carries a stability flag "
                             f"({n_flagged} left out); see the flags column")
    frame["seed_errs"] = [np.asarray(v, dtype=float) for v in frame["seed_errs"]]
    frame["err"] = frame["err"].astype(float)
    frame["ref_err"] = frame["ref_err"].astype(float)
    frame["n_seeds"] = frame["n_seeds"].astype(int)
    frame["floor_limited"] = (frame["err"] < FLOOR_FACTOR * frame["ref_err"]).fillna(False).astype(bool)
    frame.insert(0, "metric", metric)
    frame.insert(0, "sweep", sweep)
    frame.attrs["notes"] = list(choice.notes)
    frame.attrs["n_flagged"] = n_flagged
    frame.attrs["flag_counts"] = flag_counts
    frame.attrs["n_flagged_points"] = n_flagged_points
    return frame


@_cached
def seed_grams(con, sweep: str, metric: str = "err_out", step: int | None = None,
               where: str | None = None) -> pd.DataFrame:
    """Per (problem draw, grid point) at one GD step, the Gram matrix of its seeds' errors.

    With e_s = f_s - f_ref for each seed s (n entries), ``gram[i, j] = <e_{seeds[i]}, e_{seeds[j]}> / n``
    (the diagonal is the metric squared). For R seeds the seed-mean's squared distance to the
    reference is estimated without bias by (gram.sum() - trace) / (R (R - 1)), the fluctuation
    by trace / R minus that; a resampling of the seed indices takes the sub-matrix.

    Args: as ``grid_errors`` (step None: each trial's final step).
    Returns:
        One row per (problem draw, grid point), sorted by L, M, D: the grid columns present,
        problem_seed, ref_key, trial_key, L, M, D, step, ``ref_err`` (the reference's own error
        for this metric), ``n_seeds``, ``seeds`` (tuple of ints: the seeds with status ok and no
        stability flag, ascending) and ``gram`` (np.ndarray (n_seeds, n_seeds), float64), plus
        constant columns sweep and metric. Points whose rows carry no Gram rows are left out and
        counted in ``attrs["n_without_gram"]``; ``attrs["notes"]`` as ``grid_errors``.
    Raises:
        NoDecompositionError: no row of the selection has Gram rows (a store written before they
            were stored). FitError: unknown metric. SweepDataError: unknown sweep, no rows; a
            grid point measured by several trials against one reference. QueryError: bad ``where``.
    """
    _check_metric(metric)
    columns = table_columns(con)
    if metric not in GRAM_COLUMN:
        raise NoDecompositionError(f"{metric} has no per-seed Gram rows: fit it with a form other than the decomposed one")
    gram = GRAM_COLUMN[metric]
    cond = f" matching {where!r}" if where else ""
    if gram not in columns:
        raise NoDecompositionError(NO_DECOMPOSITION.format(column=gram, where=cond))
    require_sweep_rows(con, sweep)
    choice = choose_references(con, sweep, where)
    point = point_columns(columns)
    keys = _quoted(point[:-3] + (["ref_key"] if "ref_key" in columns else []) + ["trial_key", "L", "M", "D"])
    ref = REFERENCE_ERROR[metric]
    ref_expr = f'"{ref}"' if ref in columns else "CAST(NULL AS DOUBLE)"
    # A gram row lists every seed of its trial in ascending order: pos is a seed's place there.
    sql = f"""
        WITH positions AS (
            SELECT trial_key, seed, row_number() OVER (PARTITION BY trial_key ORDER BY seed) AS pos
            FROM (SELECT DISTINCT trial_key, seed FROM metrics WHERE {sweep_is(sweep)})),
        chosen AS (
            SELECT {keys}, step, seed, pos, "{gram}" AS gram_row, {ref_expr} AS reference_value
            FROM metrics JOIN positions USING (trial_key, seed)
            WHERE {sweep_is(sweep)} AND {final_step_clause(columns, sweep, step)} AND status = 'ok'
                  AND isfinite({metric}) AND NOT {flagged_expr(columns)}{where_clause(choice.where)}),
        placed AS (
            SELECT *, list(pos ORDER BY pos) OVER (PARTITION BY trial_key, step) AS ok_positions FROM chosen)
        SELECT {keys}, max(step) AS step, avg(reference_value) AS ref_err, count(*) AS n_seeds,
               count(gram_row) AS n_gram, list(seed ORDER BY seed) AS seeds,
               list(list_select(gram_row, ok_positions) ORDER BY seed) AS gram
        FROM placed GROUP BY {keys} ORDER BY "L", "M", "D", {keys}
    """
    frame = query_frame(con, sql)
    if frame.empty:
        at = f"step {step}" if step is not None else "the final step"
        raise SweepDataError(f"sweep {sweep!r} has no finite unflagged {metric} rows with status ok at {at}{cond}")
    if frame.duplicated(point).any():
        trials = sorted(frame.loc[frame.duplicated(point, keep=False), "trial_key"].astype(str).unique())
        raise SweepDataError(f"sweep {sweep!r}: a grid point was measured by several trials against one reference "
                             f"(trial_key {_shown(trials)}); pick one with --where \"trial_key = '...'\"")
    complete = frame["n_gram"] == frame["n_seeds"]
    if not complete.any():
        raise NoDecompositionError(NO_DECOMPOSITION.format(column=gram, where=cond))
    n_without = int((~complete).sum())
    frame = frame[complete].drop(columns="n_gram").reset_index(drop=True)
    frame["seeds"] = [tuple(int(s) for s in seeds) for seeds in frame["seeds"]]
    frame["gram"] = [_symmetric(rows) for rows in frame["gram"]]
    frame["n_seeds"] = frame["n_seeds"].astype(int)
    frame["ref_err"] = frame["ref_err"].astype(float)
    frame.insert(0, "metric", metric)
    frame.insert(0, "sweep", sweep)
    frame.attrs["notes"] = list(choice.notes) + (
        [f"{n_without} grid points have no per-seed Gram rows (written before they were stored) and are left out"]
        if n_without else [])
    frame.attrs["n_without_gram"] = n_without
    return frame


def _symmetric(rows) -> np.ndarray:
    """The stored Gram rows as one float64 matrix, symmetrised (each pair's two products agree to
    rounding: they come from one matrix product)."""
    matrix = np.array([np.asarray(row, dtype=np.float64) for row in rows], dtype=np.float64)
    return (matrix + matrix.T) / 2


@_cached
def held_axes(con, sweep: str, free_axes=("L", "M", "D"), where: str | None = None) -> dict:
    """Values at which to hold the sweep's varying axes that are not in ``free_axes``.

    L, M and D are held at their largest value (closest to the limit); any other grid column at
    its most common value (ties: the smallest). Axes with a single value are not listed.

    Returns:
        dict column -> value (plain Python scalars; None for a null, e.g. coupled_dim).
    """
    columns = table_columns(con)
    candidates = [c for c in ("L", "M", "D") + GRID_COLUMNS if c in columns and c not in free_axes]
    fixed = {}
    per_column = column_values(con, candidates, f"{sweep_is(sweep)}{where_clause(where)}",
                               count="count(DISTINCT trial_key)")
    for col, counts in per_column.items():
        if len(counts) <= 1:
            continue
        if col in ("L", "M", "D"):
            value = counts["v"].max()
        else:
            top = counts[counts["n"] == counts["n"].max()]["v"]
            value = top.min() if top.notna().any() else None
        fixed[col] = plain_value(value)
    return fixed


def column_values(con, columns, condition: str, count: str | None = None,
                  limit: int | None = None) -> dict[str, pd.DataFrame]:
    """Each column's distinct values in the ``metrics`` rows matching ``condition``, in one scan.

    The same tables as one ``SELECT DISTINCT "col" AS v[, count AS n] ... ORDER BY 1 LIMIT
    limit`` per column, from a single ``GROUPING SETS`` query: a report asks this of every
    grid column, and each such query would read the whole store again.

    Args:
        con: a DuckDB connection with a ``metrics`` view. columns: its columns to read.
        condition: the SQL condition on the rows (e.g. ``sweep_is(sweep)`` + ``where_clause``).
        count: an aggregate per value, returned as column ``n`` (e.g. ``count(DISTINCT trial_key)``).
        limit: at most this many values per column (the smallest; NULL sorts last).
    Returns:
        column -> DataFrame with ``v`` (the column's type, as if queried alone) and ``n`` when
        ``count`` is given, sorted by ``v``.
    Raises:
        QueryError: DuckDB rejected the query (e.g. a bad ``condition``).
    """
    columns = list(columns)
    if not columns:
        return {}
    flags = ", ".join(f'GROUPING("{c}") AS "g{i}"' for i, c in enumerate(columns))
    sets = ", ".join(f'("{c}")' for c in columns)
    # Within column i's grouping set every other column is NULL, so ordering by all columns in
    # turn orders that set's rows by column i (ascending, NULL last: DuckDB's ORDER BY 1).
    both = _query_table(con, f"SELECT {_quoted(columns)}, {flags}" + (f", {count} AS n" if count else "")
                        + f" FROM metrics WHERE {condition} GROUP BY GROUPING SETS ({sets})"
                        + f" ORDER BY {_quoted(columns)}")
    out = {}
    for i, col in enumerate(columns):
        rows = both.filter(pc.equal(both[f"g{i}"], 0))
        if limit is not None:
            rows = rows.slice(0, limit)
        # converted per column in Arrow: its own type and nulls, e.g. int64 when it has none
        out[col] = pa.table({"v": rows[col], **({"n": rows["n"]} if count else {})}).to_pandas()
    return out


def plain_value(value):
    """A numpy or pandas scalar as a plain Python value (None for a null: None, NaN, NA, NaT).

    Used where a value read from a query goes into a dict, a note or ``sql_literal``."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def sql_literal(value) -> str:
    """A Python or numpy scalar as a DuckDB SQL literal: NULL for None and NaN, a quoted string
    (quotes doubled), TRUE/FALSE, a float's repr, else an integer. Builds the conditions of
    ``column_is`` and ``choose_references``; never pass user SQL through it."""
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
    if plain_value(value) is None:
        return f'"{column}" IS NULL'
    return f'"{column}" = {sql_literal(value)}'


def held_where(fixed: dict, where: str | None = None) -> str | None:
    """A SQL condition selecting ``fixed`` (from ``held_axes``), and-ed with ``where``."""
    parts = [column_is(c, v) for c, v in fixed.items()] + ([f"({where})"] if where else [])
    return " AND ".join(parts) if parts else None


@_cached
def step_errors(con, sweep: str, metric: str = "err_out", where: str | None = None) -> pd.DataFrame:
    """RMS over seeds of a metric at every GD step, per grid point.

    Returns:
        Columns: the grid columns, problem_seed (when present), ref_key, L, M, D, step, err,
        n_seeds (status ok, finite, unflagged values only; each grid point against its newest
        reference, see ``choose_references``).
    """
    _check_metric(metric)
    columns = table_columns(con)
    require_sweep_rows(con, sweep)
    choice = choose_references(con, sweep, where)
    point = point_columns(columns)
    keys = _quoted(point[:-3] + (["ref_key"] if "ref_key" in columns else []) + ["L", "M", "D"])
    sql = f"""
        SELECT {keys}, step, sqrt(avg({metric} * {metric})) AS err, count(*) AS n_seeds
        FROM metrics
        WHERE {sweep_is(sweep)} AND status = 'ok' AND isfinite({metric}) AND NOT {flagged_expr(columns)}
              {where_clause(choice.where)}
        GROUP BY {keys}, step ORDER BY "L", "M", "D", step
    """
    frame = query_frame(con, sql)
    frame.attrs["notes"] = list(choice.notes)
    return frame


@_cached
def status_counts(con, sweep: str, where: str | None = None) -> dict:
    """How many trials and seeds a sweep has, and how many diverged or failed.

    Trials against a reference that ``choose_references`` leaves out are not counted.

    Returns:
        dict with ``trials``, ``seeds`` (distinct trial_key, seed pairs), ``diverged_seeds``,
        ``diverged_trials`` (trials with at least one diverged seed), ``failed_trials``,
        ``flagged_seeds`` (seeds with a stability flag on any row; 0 without a flags column).
    """
    require_sweep_rows(con, sweep)
    choice = choose_references(con, sweep, where)
    flagged = flagged_expr(table_columns(con))
    sql = f"""
        SELECT count(DISTINCT trial_key) AS trials,
               count(DISTINCT (trial_key, seed)) AS seeds,
               count(DISTINCT CASE WHEN status = 'diverged' THEN (trial_key, seed) END) AS diverged_seeds,
               count(DISTINCT CASE WHEN status = 'diverged' THEN trial_key END) AS diverged_trials,
               count(DISTINCT CASE WHEN status = 'failed' THEN trial_key END) AS failed_trials,
               count(DISTINCT CASE WHEN {flagged} THEN (trial_key, seed) END) AS flagged_seeds
        FROM metrics WHERE {sweep_is(sweep)}{where_clause(choice.where)}
    """
    row = query_frame(con, sql).iloc[0]
    return {k: int(row[k]) for k in row.index}




__all__ = [
    "DRAW_COLUMN", "FIT_METRICS", "FLAGS_COLUMN", "FLOOR_FACTOR", "GRID_COLUMNS", "REFERENCE_ERROR",
    "GRAM_COLUMN", "ReferenceChoice", "choose_references", "column_is", "column_values", "count_flags", "final_step_clause",
    "flag_names_expr", "flagged_expr", "format_flag_counts", "grid_columns", "grid_errors", "held_axes",
    "held_where", "plain_value", "point_columns", "query_cache", "query_frame", "require_sweep_rows", "seed_grams", "sql_literal",
    "status_counts", "step_errors", "sweep_is", "table_columns", "where_clause",
]
