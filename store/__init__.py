"""Results store: Parquet layout, schema, atomic writes, reference cache and SQL views.

Depends on pyarrow, duckdb and numpy only (never torch or Ray). See docs/store.md.
"""
from .errors import InvalidNameError, SchemaError, StoreError, StoreQueryError, UnreadableFileError
from .integrity import CheckReport
from .query import LeftOutFilesWarning, check_read_only, validate_filter
from .compaction import CompactionReport
from .schema import COLUMNS, FINAL_STATUSES, SCHEMA_VERSION, STATUSES, schema
from .store import Store, connect
from .write import trial_row_from_metrics

__all__ = [
    "COLUMNS",
    "CheckReport",
    "CompactionReport",
    "FINAL_STATUSES",
    "InvalidNameError",
    "LeftOutFilesWarning",
    "SCHEMA_VERSION",
    "STATUSES",
    "SchemaError",
    "Store",
    "StoreError",
    "StoreQueryError",
    "UnreadableFileError",
    "check_read_only",
    "connect",
    "schema",
    "trial_row_from_metrics",
    "validate_filter",
]
