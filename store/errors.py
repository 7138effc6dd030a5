"""Exceptions of the results store. Each is one line a user can act on.

The CLI maps every ``StoreError`` to a one-line error and a non-zero exit code; the store itself
knows nothing of the CLI.
"""
from __future__ import annotations


class StoreError(Exception):
    """A results store that cannot be read, written or understood."""


class StoreUnreachable(StoreError):
    """A store that cannot be listed or written at all right now (its endpoint is down, its
    folder gone or read-only): ``Store.probe()`` failed. Retrying the same call will not help."""


class SchemaError(StoreError, ValueError):
    """Rows that do not match the declared schema; nothing was written."""


class InvalidNameError(StoreError, ValueError):
    """A sweep name or key that cannot be a file name inside the store."""


class StoreQueryError(StoreError):
    """A SQL query that DuckDB rejected; the message is DuckDB's."""


class UnreadableFileError(StoreError):
    """A data file whose Parquet footer cannot be read; the message names it and the fix
    (``explorer check --quarantine``)."""


class ForeignReferenceError(StoreError):
    """A cached reference file that is not the reference of its name (another key's rows, another
    schema, arrays that do not decode, or content its reader refuses): never used."""


class QueryTimeout(StoreQueryError):
    """A query that ran longer than its time limit; it was interrupted."""
