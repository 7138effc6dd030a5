"""The data layer of the analysis: a store's views read as per-point tables.

``metrics`` is the registry of the error metrics a law may be fitted to; ``queries`` holds the
SQL pieces every query is built from and the one place a store error becomes a ``QueryError``;
``reference_choice`` reads each grid point against one reference; ``sweep_data`` gives the tables
the fits, the phase diagram and the report read (``grid_errors``, ``step_errors``, ``seed_grams``,
``held_axes``, ``status_counts``); ``last_run`` reads the sweep against its last run (partial data,
trials outside its grid: ``data_notes``).

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "ALL_METRICS": "metrics",
    "TERMS": "metrics",
    "TERM_METRICS": "metrics",
    "TermMetric": "metrics",
    "DRAW_COLUMN": "queries",
    "ERROR_METRICS": "metrics",
    "FIT_METRICS": "metrics",
    "FLAGS_COLUMN": "queries",
    "FLOOR_FACTOR": "queries",
    "GRID_COLUMNS": "queries",
    "REFERENCE_ERROR": "metrics",
    "code_mix_line": "code_versions",
    "column_is": "queries",
    "column_values": "queries",
    "final_step_clause": "queries",
    "held_where": "queries",
    "plain_value": "queries",
    "query_cache": "queries",
    "cached_queries": "queries",
    "query_frame": "queries",
    "query_table": "queries",
    "require_measured": "queries",
    "HELD_OUT_METRICS": "queries",
    "require_sweep_rows": "queries",
    "sql_literal": "queries",
    "sweep_is": "queries",
    "table_columns": "queries",
    "where_clause": "queries",
    "ReferenceChoice": "reference_choice",
    "choose_references": "reference_choice",
    "RunState": "last_run",
    "data_notes": "last_run",
    "run_state": "last_run",
    "grid_errors": "sweep_data",
    "held_axes": "sweep_data",
    "seed_grams": "sweep_data",
    "term_grams": "sweep_data",
    "status_counts": "sweep_data",
    "step_errors": "sweep_data",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
