"""Results store: Parquet layout, schema, atomic writes, reference cache and SQL views.

Depends on pyarrow, duckdb and numpy only (never torch or Ray). See docs/store.md.
"""
from .errors import (ForeignReferenceError, InvalidNameError, QueryTimeout, SchemaError, StoreError, StoreQueryError,
                     StoreUnreachable, UnreadableFileError)
from .heartbeat import DEFAULT_TTL_S
from .integrity import CheckReport
from .query import (VIEW_NAMES, LeftOutFilesWarning, check_read_only, column_names, probe_filter, register_kind,
                    table_connection, validate_filter)
from .compaction import CompactionReport
from .fingerprint import code_fingerprint, package_root
from .layout import DATA_KINDS, check_sweep
from .owners import owner_dead_here, owner_identity
from .printable import printable
from .redaction import redact_uri
from .runs import RunRecord, new_run_id
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
    "DEFAULT_TTL_S",
    "FINAL_STATUSES",
    "ForeignReferenceError",
    "InvalidNameError",
    "LeftOutFilesWarning",
    "QueryTimeout",
    "RunRecord",
    "SCHEMA_VERSION",
    "STATUSES",
    "SchemaError",
    "Store",
    "StoreError",
    "StoreQueryError",
    "StoreUnreachable",
    "UnreadableFileError",
    "VIEW_NAMES",
    "register_kind",
    "check_read_only",
    "check_sweep",
    "column_names",
    "code_fingerprint",
    "new_run_id",
    "owner_dead_here",
    "owner_identity",
    "package_root",
    "printable",
    "probe_filter",
    "redact_uri",
    "run_query",
    "schema",
    "table_connection",
    "trial_row_from_metrics",
    "validate_filter",
]
