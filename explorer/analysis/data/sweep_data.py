"""The data layer of the analysis: a store's ``metrics`` view as per-point tables (the SQL pieces
live in ``queries``, the choice of one reference per point in
``reference_choice``).

Used by the fits (``explorer.analysis.fitting``), the phase diagram (``explorer.analysis.phase``), shape advice and
the report. Every query goes through ``query_frame`` (the one place a store query error becomes
the explorer's one-line ``QueryError``).

- ``grid_errors``: per (problem draw, grid point) errors at one GD step, RMS over seeds.
- ``step_errors``: the same at every step.
- ``seed_grams``: per (problem draw, grid point) at one step, the seeds' Gram matrix of the
  errors, from which the bias and the fluctuation are computed for any resampling of the seeds
  (``explorer.analysis.decomposed``).
- ``held_axes`` / ``held_where``: the slice of a sweep that varies more axes than a view draws.
- ``choose_references`` / ``ReferenceChoice``: one reference per grid point and draw.
- ``status_counts``, ``require_sweep_rows``, ``table_columns``.
- ``query_cache``: one read of the store for a block of analysis (a report build, one
  ``grid_errors``): each distinct query runs once inside it.

Problem draws (``problem_seed``) are part of a grid point's identity here: each draw has its own
reference, and the fits pool the draws (``explorer.analysis.fitting``). Stability flags (a ``flags`` column
of comma-separated names, '' or NULL when clean; absent in older stores) leave a seed's row out
of the per-point errors; the rows left out are counted in ``n_flagged``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import FitError, NoDecompositionError, SweepDataError
from .metrics import ERROR_METRICS, TERM_METRICS, check_metric
from .queries import (FLOOR_FACTOR, GRID_COLUMNS, NO_DECOMPOSITION, REQUIRED_COLUMNS, cached, column_values, count_flags, final_step_clause, flag_names_expr, flagged_expr,
                      plain_value, point_columns, query_frame, quoted, require_measured, require_sweep_rows, sweep_is,
                      table_columns, where_clause)
from .reference_choice import choose_references, mixed_references_error, shown_keys


# ----------------------------------------------------------------------------- per-point errors


@cached
def grid_errors(con, sweep: str, metric: str = "err_out", step: int | None = None,
                where: str | None = None) -> pd.DataFrame:
    """Per-grid-point errors of a sweep at one GD step, aggregated over seeds.

    Args:
        con: a DuckDB connection with a ``metrics`` view (store/schema.py columns).
        sweep: the sweep name.
        metric: a name of ``metrics.ERROR_METRICS`` (``FIT_METRICS``).
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
        errors, a float64 array per row, for the bootstrap), ``trial_keys`` (the trials read,
        for the fit's ``data_hash``), and constant columns sweep, metric, step. Diverged and failed seeds are not in it (see ``status_counts``). A grid point with
        trials against several references is read against its newest (``choose_references``);
        ``frame.attrs["notes"]`` then says so.
    Raises:
        FitError: unknown metric. SweepDataError: unknown sweep, missing columns, no rows.
        QueryError: ``where`` is not valid SQL, or a store file cannot be read.
        MixedReferencesError: several references whose newest cannot be told.
    """
    check_metric(metric)
    columns = table_columns(con)
    missing = [c for c in REQUIRED_COLUMNS + (metric,) if c not in columns]
    if missing:
        raise SweepDataError(f"the metrics table lacks columns: {', '.join(missing)}")
    require_sweep_rows(con, sweep, where)
    require_measured(con, sweep, metric)
    choice = choose_references(con, sweep, where)
    point = point_columns(columns)
    sql = _point_errors_sql(columns, point, sweep, metric, step, choice.where)
    frame = query_frame(con, sql)
    if frame.empty:
        at = f"step {step}" if step is not None else "the final step"
        cond = f" matching {where!r}" if where else ""
        raise SweepDataError(f"sweep {sweep!r} has no finite {metric} rows with status ok at {at}{cond}")
    if frame.duplicated(point).any():  # choose_references leaves one reference per point
        refs = sorted(frame["ref_key"].astype(str).unique())
        raise mixed_references_error(sweep, refs, "grid points read against several")
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
    frame.attrs["n_invalid"] = _invalid_rows(con, columns, sweep, metric, step, choice.where)
    return frame


def valid_error(metric: str) -> str:
    """The SQL condition of an error a status-ok row can hold: finite and not negative (the
    others are left out of the fits and counted, ``_invalid_rows``; ``explorer check`` flags them)."""
    return f"(isfinite({metric}) AND {metric} >= 0)"


def _invalid_rows(con, columns: list[str], sweep: str, metric: str, step: int | None, where: str | None) -> int:
    """Status-ok rows of the slice whose ``metric`` is NaN, infinite or negative."""
    sql = (f"SELECT count(*) AS n FROM metrics WHERE {sweep_is(sweep)} AND {final_step_clause(columns, sweep, step)} "
           f"AND status = 'ok' AND {metric} IS NOT NULL AND NOT {valid_error(metric)}{where_clause(where)}")
    return int(query_frame(con, sql)["n"].iloc[0])


def _point_errors_sql(columns: list[str], point: list[str], sweep: str, metric: str, step: int | None,
                      where: str | None) -> str:
    """``grid_errors``' query: per point (and reference), the RMS over unflagged seeds, the
    reference's error, the seeds' errors and the flags of the seeds left out."""
    keys = point[:-3] + (["ref_key"] if "ref_key" in columns else []) + ["L", "M", "D"]
    ref = ERROR_METRICS[metric].reference
    ref_expr = f"{ref}" if ref is not None and ref in columns else "CAST(NULL AS DOUBLE)"
    select_keys = quoted(keys)
    sql = f"""
        SELECT {select_keys}, max(step) AS step,
               sqrt(avg(metric_value * metric_value) FILTER (WHERE NOT flagged)) AS err,
               avg(reference_value) FILTER (WHERE NOT flagged) AS ref_err,
               count(*) FILTER (WHERE NOT flagged) AS n_seeds, count(*) FILTER (WHERE flagged) AS n_flagged,
               list(metric_value ORDER BY trial_key, seed) FILTER (WHERE NOT flagged) AS seed_errs,
               list(flag_names) FILTER (WHERE flagged) AS flag_lists,
               list(DISTINCT trial_key ORDER BY trial_key) AS trial_keys
        -- (identifiers are case-insensitive in DuckDB: short aliases like m would shadow M)
        FROM (SELECT {select_keys}, step, trial_key, seed, {metric} AS metric_value,
                     {ref_expr} AS reference_value, {flagged_expr(columns)} AS flagged,
                     {flag_names_expr(columns)} AS flag_names
              FROM metrics
              WHERE {sweep_is(sweep)} AND {final_step_clause(columns, sweep, step)} AND status = 'ok'
                    AND {valid_error(metric)}{where_clause(where)})
        GROUP BY {select_keys}
        ORDER BY "L", "M", "D", {select_keys}
    """
    return sql


@cached
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
    check_metric(metric)
    columns = table_columns(con)
    gram = ERROR_METRICS[metric].gram
    if gram is None:
        raise NoDecompositionError(f"{metric} has no per-seed Gram rows: fit it with a form other than the decomposed one")
    cond = f" matching {where!r}" if where else ""
    if gram not in columns:
        raise NoDecompositionError(NO_DECOMPOSITION.format(column=gram, where=cond))
    require_sweep_rows(con, sweep, where)
    require_measured(con, sweep, metric)
    choice = choose_references(con, sweep, where)
    point = point_columns(columns)
    keys = quoted(point[:-3] + (["ref_key"] if "ref_key" in columns else []) + ["trial_key", "L", "M", "D"])
    ref = ERROR_METRICS[metric].reference
    ref_expr = f'"{ref}"' if ref is not None and ref in columns else "CAST(NULL AS DOUBLE)"
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
                             f"(trial_key {shown_keys(trials)}); pick one with --where \"trial_key = '...'\"")
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


def term_grams(con, sweep: str, metric: str = "fluct_out", step: int | None = None,
               where: str | None = None) -> pd.DataFrame:
    """``seed_grams`` of the error a term metric (``metrics.TERM_METRICS``: ``bias_out``,
    ``fluct_hidden``, ...) is read from, its ``metric`` column naming the term: what a law fitted
    to one term of the decomposition reads (``explorer.analysis.decomposed.fit_term``).

    Raises:
        FitError: not a term metric. As ``seed_grams`` otherwise.
    """
    if metric not in TERM_METRICS:
        raise FitError(f"unknown term metric {metric!r}; expected one of: {', '.join(TERM_METRICS)}")
    frame = seed_grams(con, sweep, TERM_METRICS[metric].error, step, where).copy()
    frame["metric"] = metric
    return frame


def _symmetric(rows) -> np.ndarray:
    """The stored Gram rows as one float64 matrix, symmetrised (each pair's two products agree to
    rounding: they come from one matrix product)."""
    matrix = np.array([np.asarray(row, dtype=np.float64) for row in rows], dtype=np.float64)
    return (matrix + matrix.T) / 2


@cached
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


@cached
def step_errors(con, sweep: str, metric: str = "err_out", where: str | None = None) -> pd.DataFrame:
    """RMS over seeds of a metric at every GD step, per grid point.

    Returns:
        Columns: the grid columns, problem_seed (when present), ref_key, L, M, D, step, err,
        n_seeds (status ok, finite, unflagged values only; each grid point against its newest
        reference, see ``choose_references``).
    """
    check_metric(metric)
    columns = table_columns(con)
    require_sweep_rows(con, sweep, where)
    require_measured(con, sweep, metric)
    choice = choose_references(con, sweep, where)
    point = point_columns(columns)
    keys = quoted(point[:-3] + (["ref_key"] if "ref_key" in columns else []) + ["L", "M", "D"])
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


@cached
def status_counts(con, sweep: str, where: str | None = None) -> dict:
    """How many trials and seeds a sweep has, and how many diverged or failed.

    Trials against a reference that ``choose_references`` leaves out are not counted.

    Returns:
        dict with ``trials``, ``seeds`` (distinct trial_key, seed pairs), ``diverged_seeds``,
        ``diverged_trials`` (trials with at least one diverged seed), ``failed_trials``,
        ``flagged_seeds`` (seeds with a stability flag on any row; 0 without a flags column).
    """
    require_sweep_rows(con, sweep)  # a count: a filter that matches nothing counts zeros
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


__all__ = ["grid_errors", "held_axes", "seed_grams", "status_counts", "step_errors", "term_grams"]
