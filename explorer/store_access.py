"""Opening the results store: the one way the explorer reaches a store, and its errors as the
explorer's one-line errors.

    with store_errors():
        st = open_store(store_uri, must_exist=True)      # or open_store(uri, sweep=name)
        ...

``open_store`` is the one way the explorer (CLI, Python API, sweeps, analysis) opens a store,
and ``open_sweep`` the one way a command reads one sweep of it.
``store_errors`` turns the store's exceptions (which know nothing of the CLI) into the
explorer's one-line ``UsageError``s: ``StoreQueryError`` -> ``QueryError``, any other
``StoreError`` -> ``StoreAccessError`` (both exit 2).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
import re
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import QueryError, StoreAccessError, SweepDataError

if TYPE_CHECKING:  # the store (pyarrow, duckdb) is imported by the commands that open one
    from store import Store

@contextmanager
def store_errors() -> Iterator[None]:
    """Re-raise store exceptions as one-line CLI errors."""
    try:
        yield
    except Exception as exc:
        store = sys.modules.get("store")  # not imported: the exception cannot be one of its errors
        if store is None or not isinstance(exc, store.StoreError):
            raise
        if isinstance(exc, store.StoreQueryError):
            raise QueryError(str(exc)) from exc
        raise StoreAccessError(str(exc)) from exc


def _local_path(text: str) -> str:
    """``text`` as an absolute local path, ``~`` and ``~user`` expanded where they name a home."""
    # os.path.expanduser leaves "~nosuchuser/x" as it is (a folder of that name), where
    # Path.expanduser raises RuntimeError (a traceback for a user's typo)
    return str(Path(os.path.expanduser(text)).resolve())


def open_store(store: Store | str | os.PathLike, must_exist: bool = False, sweep: str | None = None) -> Store:
    """The Store at ``store``: a ``Store`` (returned as is), a directory or ``s3://bucket/prefix``.

    A relative directory is made absolute (``~`` expanded): a Store travels to Ray workers by its
    URI, and they run elsewhere.

    Args:
        must_exist: refuse a store nothing has been written to yet.
        sweep: refuse a store without this sweep (for commands that read one sweep).

    Raises:
        StoreAccessError: the URI cannot be resolved, or (must_exist) the store is empty, or
            (sweep) the name cannot be a sweep's.
        SweepDataError: (sweep) the store has no such sweep; the message lists those it has.
    """
    from store import Store, check_sweep, redact_uri

    with store_errors():
        if isinstance(store, Store):
            opened = store
        else:
            text = os.fspath(store)
            if not text.strip():
                raise StoreAccessError("empty store URI: pass --store DIR or --store s3://bucket/prefix")
            opened = Store(text if "://" in text else _local_path(text))
        if sweep is not None:
            check_sweep(sweep)  # a name no sweep can have ("../etc") says so, not "unknown"
            if not opened.exists():
                raise SweepDataError(f"unknown sweep {sweep!r}: there is no results store at {opened.uri!r} "
                                     "(nothing written there yet); pass --store URI")
            sweeps = opened.sweeps()
            if sweep not in sweeps:
                raise SweepDataError(f"unknown sweep {sweep!r}; the store {opened.uri!r} has: {', '.join(sweeps) or 'none'}")
        elif must_exist and not opened.exists():
            given = store.uri if isinstance(store, Store) else redact_uri(os.fspath(store))
            raise StoreAccessError(f"no results store at {given!r} (nothing written there yet); pass --store URI")
    return opened


def open_sweep(store: Store | str | os.PathLike, sweep: str, where: str | None = None):
    """The store and a read-only DuckDB connection on its views for one sweep (as ``explorer
    sql``'s: a ``--where`` filter cannot read or write files).

    Args:
        store: a ``Store`` or a store URI.
        where: a ``--where`` filter to check on the connection first (``check_where``).

    Returns:
        ``(Store, duckdb connection)``; close the connection when done.

    Raises:
        SweepDataError: nothing is stored at ``store``, or it has no sweep of that name (the
            message lists those it has).
    """
    st = open_store(store, sweep=sweep)
    with store_errors():
        con = st.connect(sweep=sweep, read_only=True)
    if where is not None:
        try:
            check_where(con, where)
        except QueryError:
            con.close()
            raise
    return st, con


# What a user may call a column that the rows name otherwise (difflib cannot guess M from width).
COLUMN_WORDS = {"width": "M", "hidden_width": "M", "units": "M", "n_units": "M", "depth": "L", "layers": "L",
                "blocks": "L", "n_layers": "L", "dim": "D", "dimension": "D", "embedding_dim": "D",
                "learning_rate": "lr", "eta": "lr", "step_size": "lr", "scaling": "lr_scaling", "draw": "problem_seed",
                "problem": "problem_seed", "data_seed": "problem_seed", "seeds": "seed", "error": "err_out",
                "err": "err_out", "multiplier": "alpha", "status_ok": "status"}
_UNKNOWN_COLUMN = re.compile(r'Referenced column "?([^"\s]+)"? not found')


def check_where(con, where: str, table: str = "metrics") -> None:
    """Refuse a ``--where`` filter the rows cannot take, in one line naming ``--where``: an unknown
    column with a "did you mean" from the rows' columns (``width`` -> ``M``), else DuckDB's reason.

    Raises:
        QueryError: the one line.
    """
    import duckdb
    from store import column_names, probe_filter, validate_filter

    from .formatting import shown_text

    with store_errors():  # one condition first: "1=1) OR (1=1" is refused as the analyses refuse it
        validate_filter(where)
    try:
        probe_filter(con, where, table)
    except duckdb.Error as exc:
        text = " ".join(str(exc).split("\n")[0].split())
        shown = shown_text(where, 80)
        missing = _UNKNOWN_COLUMN.search(str(exc))
        if missing is None:
            raise QueryError(f"--where {shown!r}: {text}") from None
        column = missing.group(1)
        columns = column_names(con, table)
        raise QueryError(f"--where {shown!r}: the rows have no column {column!r}{_did_you_mean(column, columns)}; "
                         f"`explorer sql \"DESCRIBE {table}\"` lists them") from None


def _did_you_mean(word: str, columns: list[str]) -> str:
    """'; did you mean 'M'?' from ``COLUMN_WORDS``, else the closest column name (any case)."""
    import difflib

    meant = COLUMN_WORDS.get(word.lower())
    if meant not in columns:
        by_lower = {c.lower(): c for c in columns}
        meant = by_lower.get(word.lower())
        if meant is None:
            close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
            meant = by_lower[close[0]] if close else None
    return f"; did you mean {meant!r}?" if meant else ""
