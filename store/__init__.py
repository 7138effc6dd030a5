"""Results store: Parquet layout, schema, atomic writes, reference cache and SQL views.

Depends on pyarrow, duckdb and numpy only (never torch or Ray). See docs/store.md.
"""
from .errors import InvalidNameError, SchemaError, StoreError, StoreQueryError
from .integrity import CheckReport
from .compaction import CompactionReport
from .layout import DATA_KINDS, check_sweep
from .schema import COLUMNS, FINAL_STATUSES, SCHEMA_VERSION, STATUSES, schema
from .store import Store
from .write import trial_row_from_metrics

__all__ = [
    "COLUMNS",
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
    "schema",
    "trial_row_from_metrics",
]
