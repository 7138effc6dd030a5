"""The SQL of the analysis over a store's views: the columns it reads (metrics, references,
flags, the grid), the query cache (``query_cache``: each distinct query of a block runs once),
``query_frame`` (the one place a store query error becomes the explorer's one-line
``QueryError``), and the pieces every query is built from (``sweep_is``, ``where_clause``,
``final_step_clause``, ``column_is``, ``sql_literal``, ``held_where``)."""
from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from store import CONFIG_COLUMNS, run_query, validate_filter

from ...errors import QueryError, SweepDataError
from ...store_access import store_errors

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


_CACHES: dict[int, dict[str, pa.Table]] = {}  # id(con) -> SQL -> result, while a query_cache block is open
_FAILED: dict[int, dict[str, str]] = {}  # id(con) -> SQL -> its error, while a query_cache block is open


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
    _FAILED[id(con)] = {}
    try:
        yield
    finally:
        del _CACHES[id(con)], _FAILED[id(con)]


def cached_queries(con) -> dict[str, pa.Table | str]:
    """The queries run on ``con`` in its open ``query_cache`` block so far: SQL -> its error message
    for those that failed (first), then SQL -> result in the order first run (empty outside a
    block). What a block
    read is all it read from the store (the report cache keys a report by it:
    ``explorer.report.report_cache``)."""
    return {**_FAILED.get(id(con), {}), **_CACHES.get(id(con), {})}


def cached(function):
    """Run ``function(con, ...)`` inside ``query_cache(con)``: its repeated queries run once."""
    @functools.wraps(function)
    def wrapper(con, *args, **kwargs):
        with query_cache(con):
            return function(con, *args, **kwargs)
    return wrapper


def query_table(con, sql: str) -> pa.Table:
    """``query_frame``'s Arrow result (from the open ``query_cache`` when it has run there)."""
    cache = _CACHES.get(id(con))
    if cache is not None and sql in cache:
        return cache[sql]
    try:
        with store_errors():
            table = run_query(con, sql)
    except QueryError as exc:
        if id(con) in _FAILED:
            _FAILED[id(con)][sql] = str(exc)
        raise
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
    return query_table(con, sql).to_pandas()


def described(con, table: str = "metrics") -> pd.DataFrame:
    """DuckDB's description of a view or table: a row per column (``column_name``, ``column_type``, ...).

    Raises:
        QueryError: the connection has no such view or table.
    """
    return query_frame(con, f'DESCRIBE "{table}"')


def table_columns(con, table: str = "metrics") -> list[str]:
    """Column names of a view or table on a DuckDB connection."""
    try:
        described_table = described(con, table)
    except QueryError as exc:  # a catalog error: no such view
        raise SweepDataError(f"the store has no {table!r} table: {exc}") from None
    return [str(name) for name in described_table["column_name"]]


def sweep_is(sweep: str) -> str:
    """The SQL condition selecting one sweep's rows (the name as a quoted literal)."""
    return f"sweep = {sql_literal(str(sweep))}"


def require_sweep_rows(con, sweep: str, where: str | None = None) -> None:
    """Raise SweepDataError naming the known sweeps when ``sweep`` has no metric rows, and saying
    so when the filter ``where`` matches none of its rows ("no rows match --where ...": not an
    axis or a fit that then reads as empty).

    (``store.layout.check_sweep`` is the store's name validator; this checks for rows.)"""
    known = query_frame(con, "SELECT DISTINCT sweep FROM metrics ORDER BY sweep")["sweep"].tolist()
    if sweep not in known:
        shown = ", ".join(map(str, known)) if known else "none"
        raise SweepDataError(f"unknown sweep {sweep!r}; the store has: {shown}")
    if where and query_frame(con, f"SELECT 1 AS x FROM metrics WHERE {sweep_is(sweep)}{where_clause(where)} LIMIT 1").empty:
        raise SweepDataError(f"no rows match --where {where!r} in sweep {sweep!r}")


# Metrics of the held-out samples: null for want of a test set ([problem] test_samples = 0), not of
# a reference; their readers name that (analysis.hyper).
HELD_OUT_METRICS = ("test_loss", "test_err_out")


def require_measured(con, sweep: str, metric: str) -> None:
    """Raise SweepDataError, in one line naming the reference kind, when no row of ``sweep``
    holds a value of ``metric`` but it has rows: a sweep run with a kind that measures no error
    (kind none: its errors are null) cannot be fitted on one. A sweep with some values passes
    (which of them are usable is each query's business), and so does a held-out metric."""
    if metric in HELD_OUT_METRICS or metric not in table_columns(con):
        return
    found = query_frame(con, f"""SELECT count("{metric}") AS measured, count(*) AS rows,
                                        string_agg(DISTINCT ref_kind, ', ' ORDER BY ref_kind) AS kinds
                                 FROM metrics WHERE {sweep_is(sweep)} AND status <> 'failed'""")
    measured, rows, kinds = found.iloc[0]
    if rows and not measured:
        raise SweepDataError(f"sweep {sweep!r} was run with reference kind {kinds}, which measures no {metric} "
                             "(its rows hold the loss): reading it needs a sweep run with another [reference] kind; "
                             "`optimum` and `transfer` read the loss")


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


def quoted(columns) -> str:
    return ", ".join(f'"{c}"' for c in columns)


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
    both = query_table(con, f"SELECT {quoted(columns)}, {flags}" + (f", {count} AS n" if count else "")
                        + f" FROM metrics WHERE {condition} GROUP BY GROUPING SETS ({sets})"
                        + f" ORDER BY {quoted(columns)}")
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


def all_of(*conditions: str | None) -> str | None:
    """The SQL condition holding where every one of ``conditions`` holds (each parenthesized; the
    empty ones left out); None for none."""
    parts = [f"({c})" for c in conditions if c]
    return " AND ".join(parts) if parts else None


def excluding(base: str | None, left_out) -> str | None:
    """The SQL condition of the rows in ``base`` (None: all) and in none of the conditions
    ``left_out``; None for no condition at all."""
    parts = ([f"({base})"] if base else []) + [f"NOT ({where})" for where in left_out]
    return " AND ".join(parts) if parts else None


__all__ = [
    "DRAW_COLUMN", "FLAGS_COLUMN", "FLOOR_FACTOR", "GRID_COLUMNS", "NO_DECOMPOSITION",
    "NOT_GRID_COLUMNS", "REQUIRED_COLUMNS", "all_of", "cached", "cached_queries", "column_is", "column_values",
    "count_flags", "described", "excluding", "final_step_clause", "flag_names_expr", "flagged_expr", "grid_columns",
    "held_where", "plain_value", "point_columns", "query_cache", "query_frame", "query_table", "quoted",
    "require_measured", "require_sweep_rows", "sql_literal", "sweep_is", "table_columns", "where_clause",
]
