"""The store's records besides the metric rows' errors, as named queries: an adaptive sweep's
``rounds`` log (``round_rows``, ``stored_round_rows``), a recorded fit's parameters
(``fit_parameters``), a trial's stored configuration (``first_ok_trial``), the references'
metadata (``reference_metas``) and the metric rows of some trials (``trial_metric_rows``).
Each is a named query, so that no SQL is written outside this wing.
"""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from .queries import query_frame, sql_literal, sweep_is


def round_rows(con, sweep: str) -> pd.DataFrame:
    """The ``rounds`` rows of ``sweep`` on a connection with the store's views (``QueryError`` or
    ``SweepDataError`` when it has no ``rounds`` view)."""
    return query_frame(con, f"SELECT * FROM rounds WHERE {sweep_is(sweep)}")


def stored_round_rows(store, sweep: str) -> pa.Table:
    """The ``rounds`` rows of ``sweep`` read through ``store``'s own query, sorted by round."""
    return store.query(f"SELECT * FROM rounds WHERE {sweep_is(sweep)} ORDER BY round, entry, trial_key, parameter",
                       sweep=sweep)


def view_names(con) -> set[str]:
    """The names of the views of a DuckDB connection."""
    return {str(v) for (v,) in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}


def fit_parameters(con, sweep: str, form: str, fit_id: str) -> list[tuple]:
    """(parameter, estimate) of the latest fit ``fit_id`` of ``form`` recorded for ``sweep`` (the
    connection has the ``latest_fits`` view)."""
    return con.execute("SELECT parameter, estimate FROM latest_fits WHERE sweep = ? AND form = ? AND fit_id = ?",
                       [sweep, form, fit_id]).fetchall()


def first_ok_trial(con, sweep: str, columns) -> list[tuple]:
    """``columns`` and ``config_json`` of one trial of ``sweep`` that ended ok (none: [])."""
    return con.execute(f"SELECT {', '.join(columns)}, config_json FROM trials WHERE sweep = ? AND status = 'ok' LIMIT 1",
                       [sweep]).fetchall()


def reference_metas(con, keys) -> pd.DataFrame:
    """``ref_key`` and ``meta`` (its stored metadata, JSON text) of each reference of ``keys``."""
    return query_frame(con, 'SELECT ref_key, any_value(meta_json) AS meta FROM "references" WHERE ref_key IN ('
                            + ", ".join(sql_literal(k) for k in keys) + ") GROUP BY ref_key")


def trial_metric_rows(con, sweep: str, keys) -> pa.Table:
    """The ``metrics`` rows of ``sweep``'s trials ``keys``, through the connection's view."""
    listed = ", ".join(sql_literal(k) for k in keys)
    return con.sql(f"SELECT * FROM metrics WHERE {sweep_is(sweep)} "
                   f"AND trial_key IN ({listed})").to_arrow_table()


__all__ = ["first_ok_trial", "fit_parameters", "reference_metas", "round_rows", "stored_round_rows",
           "trial_metric_rows", "view_names"]
