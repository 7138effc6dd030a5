"""The data layer of the analysis: a store's views read as per-point tables.

``metrics`` is the registry of the error metrics a law may be fitted to; ``queries`` holds the
SQL pieces every query is built from and the one place a store error becomes a ``QueryError``;
``reference_choice`` reads each grid point against one reference; ``sweep_data`` gives the tables
the fits, the phase diagram and the report read (``grid_errors``, ``step_errors``, ``seed_grams``,
``held_axes``, ``status_counts``); ``last_run`` reads the sweep against its last run (partial data,
trials outside its grid: ``data_notes``). The other named queries, one module per concept:
``counts`` (how many values, cells, rows), ``run_rows`` (one row per run, for the phase diagram,
the hyperparameter runs and the coordinate check) and ``records`` (the rounds log, recorded fits,
stored trial configurations, references' metadata, some trials' rows).

This wing is the one place the explorer writes SQL (the store's own queries stay in ``store/``;
tests/explorer/analysis/data/test_sql_in_one_place.py checks).

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
    "all_distinct_counts": "counts",
    "blown_up_counts": "counts",
    "cells_per_value": "counts",
    "distinct_counts": "counts",
    "metrics_column_names": "counts",
    "non_null_counts": "counts",
    "ok_rows_per_value": "counts",
    "axis_run_rows": "run_rows",
    "coord_run_rows": "run_rows",
    "phase_seed_rows": "run_rows",
    "first_ok_trial": "records",
    "fit_parameters": "records",
    "reference_metas": "records",
    "round_rows": "records",
    "stored_round_rows": "records",
    "trial_metric_rows": "records",
    "view_names": "records",
    "all_of": "queries",
    "described": "queries",
    "excluding": "queries",
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
