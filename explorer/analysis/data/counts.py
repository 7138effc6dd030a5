"""How many: the counting queries over a store's ``metrics`` view that the analyses, the report,
the reproductions and ``explorer watch`` ask (distinct values per column, cells per held value,
rows holding a value, seeds that blew up). Each is a named query, so that no SQL is written
outside this wing (``queries`` holds the pieces they are built from).
"""
from __future__ import annotations

import pandas as pd

from .queries import query_frame, quoted, sweep_is, where_clause


def distinct_counts(con, sweep: str, columns, where: str | None = None) -> pd.DataFrame:
    """One row: how many distinct values each of ``columns`` takes in ``sweep``'s rows matching
    ``where`` (pasted as given: ``explorer.report`` checks it first), a column per name."""
    return query_frame(con, "SELECT " + ", ".join(f'count(DISTINCT "{c}") AS "{c}"' for c in columns)
                       + f" FROM metrics WHERE {sweep_is(sweep)}" + (f" AND ({where})" if where else ""))


def metrics_column_names(con) -> list[str]:
    """The columns of the ``metrics`` table of a plain DuckDB connection (``explorer watch``'s,
    which holds the rows it read in memory)."""
    return [r[0] for r in con.execute("SELECT name FROM pragma_table_info('metrics')").fetchall()]


def all_distinct_counts(con, columns) -> tuple:
    """How many distinct values each of ``columns`` takes over every row of a plain DuckDB
    connection's ``metrics`` table (``explorer watch``'s), in the order given."""
    return con.execute("SELECT " + ", ".join(f'count(DISTINCT "{c}")' for c in columns) + " FROM metrics").fetchone()


def cells_per_value(con, sweep: str, column: str, x: str, y: str, condition: str | None) -> pd.DataFrame:
    """Each value ``v`` of ``column`` in ``sweep``'s rows matching ``condition``, with ``cells``:
    the distinct (``x``, ``y``) cells it has rows at (the phase diagram holds the value with most)."""
    return query_frame(con, f'SELECT "{column}" AS v, count(DISTINCT ("{x}", "{y}")) AS cells FROM metrics '
                            f"WHERE {sweep_is(sweep)}{where_clause(condition)} GROUP BY 1")


def non_null_counts(con, sweep: str, columns, where: str | None) -> pd.DataFrame:
    """One row: how many of ``sweep``'s rows matching ``where`` hold a value of each of ``columns``
    (a column ``none`` of 0 when there are none)."""
    return query_frame(con, "SELECT " + (", ".join(f'count("{c}") AS "{c}"' for c in columns) or "0 AS none")
                       + f" FROM metrics WHERE {sweep_is(sweep)}{where_clause(where)}")


def ok_rows_per_value(con, sweep: str, columns, metric: str, at_step: str, condition: str) -> pd.DataFrame:
    """Each combination of ``columns``' values with ``n``: its finite status-ok ``metric`` rows
    among ``sweep``'s rows at the step ``at_step`` (``final_step_clause``) matching ``condition``
    (``where_clause``: both built first, so that only the query's own error reaches the caller)."""
    names = quoted(columns)
    return query_frame(con, f"SELECT {names}, count(*) AS n FROM metrics WHERE {sweep_is(sweep)} AND status = 'ok' "
                            f"AND isfinite(\"{metric}\") AND {at_step}{condition} GROUP BY {names}")


def blown_up_counts(con, sweep: str, metric: str, step: int) -> pd.DataFrame:
    """Per (L, M, D, problem_seed), ``n_blown_up``: the seeds marked diverged that have no finite
    ``metric`` row with status ok at ``step``."""
    return query_frame(con, f"""
        SELECT L, M, D, problem_seed, count(DISTINCT (trial_key, seed)) AS n_blown_up
        FROM metrics d
        WHERE d.{sweep_is(sweep)} AND status = 'diverged' AND NOT EXISTS (
            SELECT 1 FROM metrics o WHERE o.sweep = d.sweep AND o.trial_key = d.trial_key AND o.seed = d.seed
              AND o.step = {int(step)} AND o.status = 'ok' AND isfinite(o.{metric}))
        GROUP BY L, M, D, problem_seed
    """)


__all__ = ["all_distinct_counts", "blown_up_counts", "cells_per_value", "distinct_counts", "metrics_column_names",
           "non_null_counts", "ok_rows_per_value"]
