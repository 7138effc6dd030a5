"""The twins of ``explorer ls``, ``check``, ``compact``, ``rm`` and ``sql`` (``explorer.cli.store``):
the results store (``store.Store``, opened by ``explorer.store_access``)."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from store import Store

from ..report.store_listing import SweepListing, list_sweeps
from ..store_access import open_store, store_errors
from .echo import Echo, quiet

if TYPE_CHECKING:
    import pyarrow as pa

    from store import CheckReport, CompactionReport


def ls(store: Store | str | os.PathLike = "results") -> SweepListing:
    """The store's sweeps with their trials by status, size on disk (MiB) and last write (UTC);
    none for an empty or new store (``explorer.report.store_listing``)."""
    return list_sweeps(store)


def check(store: Store | str | os.PathLike = "results", sweep: str | None = None, *, quarantine: bool = False,
          repair: bool = False, echo: Echo = quiet) -> CheckReport:
    """Check the store (one sweep, or every sweep) for damaged files, stale locks and bad rows.

    Args:
        quarantine: first move unreadable files to ``<store>/quarantine/<their path>`` (each
            move a line through ``echo``). repair: first remove stale reference locks, old
            temporaries and lapsed leases (what it removed, through ``echo``).

    Returns:
        The store's ``CheckReport`` (``ok``; ``lines(limit_per_category=...)``).

    Raises:
        StoreAccessError: nothing was written to ``store`` yet. SweepDataError: an unknown sweep.
    """
    from store import printable

    st = open_store(store, must_exist=True, sweep=sweep)
    with store_errors():
        if quarantine:
            for source, target in st.quarantine(sweep):
                echo(f"quarantined {printable(source)} -> {printable(target)}")
        if repair:
            for line in st.repair(sweep).lines():
                echo(line)
        return st.check(sweep)


def compact(store: Store | str | os.PathLike = "results", sweep: str | None = None, *,
            rows_per_file: int = 4_000_000, kinds: Sequence[str] = (), echo: Echo = quiet) -> list[CompactionReport]:
    """Merge small result files into large ones, rows unchanged, for one sweep or every sweep
    (``kinds``: only these kinds, default all, ``references`` being the store's reference cache,
    merged once, with the first sweep); each report's lines go through ``echo`` as it is done. Streams
    (memory does not grow with the store); safe to interrupt and rerun."""
    from store import DATA_KINDS

    st = open_store(store, must_exist=True, sweep=sweep)
    chosen = tuple(kinds) or DATA_KINDS + ("references",)
    data_kinds = tuple(k for k in chosen if k != "references")
    references = ("references",) if "references" in chosen else ()
    reports = []
    with store_errors():
        names = ([sweep] if sweep else st.sweeps()) if data_kinds else []
        if not names and references:  # the reference cache alone
            reports.append(st.compact(None, rows_per_file=rows_per_file, kinds=references))
        for i, name in enumerate(names):  # the (shared) reference cache with the first sweep
            reports.append(st.compact(name, rows_per_file=rows_per_file, kinds=data_kinds + (references if i == 0 else ())))
            for line in reports[-1].lines():
                echo(line)
        if not names and references:
            for line in reports[-1].lines():
                echo(line)
    return reports


def rm(sweep: str, store: Store | str | os.PathLike = "results", *,
       confirm: Callable[[str], object] | None = None) -> int:
    """Delete every file of one sweep (the shared reference cache stays); returns how many.
    ``confirm`` is called with the question first, and may raise to refuse (the CLI asks)."""
    st = open_store(store, must_exist=True, sweep=sweep)
    with store_errors():
        if confirm is not None:
            confirm(f"delete sweep {sweep} from {st.uri}?")
        return st.remove_sweep(sweep)


def sql(query: str, store: Store | str | os.PathLike = "results", *, sweep: str | None = None,
        timeout_s: float | None = None, memory_limit: str | None = None) -> pa.Table:
    """One read-only SQL query over the store's views (``explorer sql``): a pyarrow Table. Files
    that are not store data are left out, with a ``store.LeftOutFilesWarning``.

    Raises:
        QueryError: a query that is not read-only, fails, or outlasts ``timeout_s``.
        StoreAccessError, SweepDataError: no store there, an unknown ``sweep``.
    """
    st = open_store(store, must_exist=True, sweep=sweep)  # a sweep it lacks: the error names those it has
    with store_errors():
        return st.query(query, sweep=sweep, timeout_s=timeout_s, memory_limit=memory_limit)


__all__ = ["SweepListing", "check", "compact", "ls", "rm", "sql"]
