"""Results store: Parquet layout, schema, atomic writes, reference cache and SQL views.

Depends on pyarrow, duckdb and numpy only (never torch or Ray). See docs/store.md.
"""
from .errors import InvalidNameError, SchemaError, StoreError, StoreQueryError
from .integrity import CheckReport
from .compaction import CompactionReport
from .layout import DATA_KINDS, check_sweep
from .query import run as run_query
from .schema import COLUMNS, CONFIG_COLUMNS, FINAL_STATUSES, SCHEMA_VERSION, STATUSES, schema
from .store import Store
from .write import trial_row_from_metrics

__all__ = [
    "COLUMNS",
    "CONFIG_COLUMNS",
    "CheckReport",
    "CompactionReport",
    "DATA_KINDS",
    "FINAL_STATUSES",
    "InvalidNameError",
    "SCHEMA_VERSION",
    "STATUSES",
    "SchemaError",
    "Store",
    "StoreError",
    "StoreQueryError",
    "check_sweep",
    "run_query",
    "schema",
    "trial_row_from_metrics",
]
