"""SQL over the store: DuckDB views ``metrics``, ``trials``, ``fits`` and ``references``.

Each view scans a ``pyarrow.dataset`` of exactly the files that serve its rows (one file per
key, see ``catalog.resolve``), so it works the same on local disk and on object storage and
needs no DuckDB extension. The views are a snapshot of the files present at ``connect``: a
connection opened later sees trials written since. Temporary, foreign and (for ``check``)
unreadable files are never scanned.

A read-only connection (the CLI's) cannot read or write files by itself: DuckDB's external
access is disabled and the setting locked once the views are registered.
"""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from .catalog import Source, list_kind, list_references, list_sweeps, resolve
from .errors import StoreQueryError
from .files import Files
from .layout import DATA_KINDS, check_sweep
from .schema import KEY_COLUMN, schema

VIEWS = DATA_KINDS + ("references",)
# Pre-buffering coalesces reads into few large requests: a win on object storage, a loss locally.
_LOCAL_FORMAT = ds.ParquetFileFormat()
_REMOTE_FORMAT = ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=True))


def kind_sources(files: Files, kind: str, sweep: str | None = None, exclude: frozenset[str] = frozenset()) -> list[Source]:
    """The files (and key filters) that serve the rows of one kind, over one or all sweeps."""
    if kind == "references":
        listing = list_references(files)
        return [Source(e.path) for e in listing.singles.values() if e.path not in exclude]
    sweeps = [check_sweep(sweep)] if sweep is not None else list_sweeps(files)
    sources: list[Source] = []
    for name in sweeps:
        sources += resolve(files, list_kind(files, name, kind), kind, exclude).sources
    return sources


def kind_dataset(files: Files, kind: str, sources: list[Source]) -> list[ds.Dataset | pa.Table]:
    """Datasets reading ``sources`` with the kind's schema (an empty table when there are none)."""
    target = schema(kind)
    fmt = _LOCAL_FORMAT if files.is_local else _REMOTE_FORMAT
    plain = [s.path for s in sources if s.keep is None]
    parts: list[ds.Dataset | pa.Table] = []
    if plain:
        parts.append(ds.FileSystemDataset.from_paths(plain, schema=target, format=fmt, filesystem=files.fs))
    for source in sources:
        if source.keep is not None:
            one = ds.FileSystemDataset.from_paths([source.path], schema=target, format=fmt, filesystem=files.fs)
            parts.append(one.filter(pc.field(KEY_COLUMN[kind]).isin(pa.array(sorted(source.keep), pa.string()))))
    return parts or [target.empty_table()]


def connect(
    files: Files, sweep: str | None = None, read_only: bool = False, exclude: frozenset[str] = frozenset()
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the store's views.

    Args:
        sweep: only this sweep's rows in metrics, trials and fits (references are shared).
        read_only: forbid the connection any file access of its own (for the CLI).
        exclude: paths never to scan.

    Raises:
        InvalidNameError: a bad sweep name. StoreError: the store cannot be listed or read.
    """
    con = duckdb.connect()
    for kind in VIEWS:
        parts = kind_dataset(files, kind, kind_sources(files, kind, sweep, exclude))
        if len(parts) == 1:
            con.register(kind, parts[0])
            continue
        names = []
        for i, part in enumerate(parts):
            names.append(f"_{kind}_{i}")
            con.register(names[-1], part)
        con.execute(f'CREATE VIEW "{kind}" AS ' + " UNION ALL ".join(f"SELECT * FROM {n}" for n in names))
    if read_only:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con


def _message(exc: Exception) -> str:
    """DuckDB's message on one line: its first line, plus the "LINE n: ..." context if any."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    context = [line for line in lines[1:] if line.startswith("LINE ")]
    message = " ".join(lines[:1] + context[:1])
    if "reading the stream registered as" in message:  # a store file failed to scan
        message += " (run `explorer check` to list unreadable files)"
    return message


def run(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """Execute SQL and fetch the whole result as Arrow.

    Raises:
        StoreQueryError: DuckDB rejected the query (its message, unchanged).
    """
    try:
        result = con.sql(sql)
        if result is None:  # a statement without a result (SET, CREATE ...)
            return pa.table({})
        return result.to_arrow_table()
    except duckdb.Error as exc:
        raise StoreQueryError(_message(exc)) from None


def relation(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.DuckDBPyRelation:
    """A lazy DuckDB relation for notebooks (``.df()``, ``.pl()``, further ``.filter`` ...).

    Raises:
        StoreQueryError: DuckDB rejected the query when parsing or binding it.
    """
    try:
        rel = con.sql(sql)
    except duckdb.Error as exc:
        raise StoreQueryError(_message(exc)) from None
    if rel is None:
        raise StoreQueryError(f"the statement returns no rows: {sql.strip()[:80]}")
    return rel
