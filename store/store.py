"""``Store``: the one object the rest of the project uses to write and read results.

    st = Store("results")                       # or "s3://bucket/prefix"
    st.write_trial(sweep, trial_key, metric_rows, trial_row)
    st.completed_trial_keys(sweep)              # -> set of trial keys with a trials row
    st.trial_statuses(sweep)                    # -> {trial_key: "ok" | "diverged" | "failed"}
    st.trial_status_counts(sweep)               # -> {"ok": n, "diverged": n, "failed": n}, from footers
    st.get_or_compute_reference(ref_key, compute)
    st.write_fit(sweep, fit_id, rows)
    st.write_round(sweep, round_id, rows)          # an adaptive sweep's round log
    st.write_comparison(sweep, comparison_id, rows)  # two fitted sweeps compared (explorer compare)
    st.write_optima(sweep, optima_id, rows)        # best hyperparameters and their transfer (explorer optimum)
    st.write_run(sweep, run_id, spec=..., planned_keys=..., started_at=...)  # one ``sweep`` run's record
    st.runs(sweep, last=1)                      # -> [RunRecord]: the last run, live or not
    st.query("SELECT L, avg(err_out) FROM metrics GROUP BY L")   # -> pyarrow Table
    st.connect(sweep)                           # -> DuckDB connection on the views, for many queries
    st.check(); st.compact(sweep); st.remove_temporaries(sweep, before)

It holds no open files: every method lists what it needs, so a Store can be pickled to Ray
workers (it is rebuilt from its URI and filesystem) and sees what other workers wrote.
"""
from __future__ import annotations

import datetime as _dt
import os
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from . import cleanup, compaction, integrity, leases, lookup, maintenance, query, references, runs, status_counts
from .catalog import completed_keys, list_kind, list_references, list_sweeps
from .control import MalformedControl, read_control
from .errors import StoreQueryError
from .files import Files, open_root
from .layout import DATA_KINDS, check_key, check_sweep, reference_lock
from .write import write_comparison, write_fit, write_optima, write_round, write_trial


class Store:
    """A results store rooted at a local directory or an object-storage URI.

    Args:
        uri: a directory (created on first write) or ``s3://bucket/prefix`` (any URI pyarrow
            resolves; for S3 the endpoint and credentials come from the AWS variables,
            ``AWS_ENDPOINT_URL`` included).
        filesystem: an explicit ``pyarrow.fs`` filesystem (e.g. ``S3FileSystem(endpoint_override=...)``);
            ``uri`` is then a path on it.
        durable: fsync each local file before it is renamed into place (default True).

    Raises:
        StoreError: a URI that cannot be resolved.
    """

    def __init__(self, uri: str | os.PathLike = "results", filesystem: pafs.FileSystem | None = None, durable: bool = True):
        self._files: Files = open_root(uri, filesystem, durable)
        text = os.fspath(uri)
        if text.strip() and "://" not in text and (filesystem is None or isinstance(filesystem, pafs.LocalFileSystem)):
            # A pickled Store travels to Ray workers, which run in other directories.
            text = os.path.abspath(os.path.expanduser(text))
        self._args = (text, filesystem, durable)
        self.left_out: list = []  # screen.Verdicts of the files the last connection's views left out

    def __reduce__(self):
        return (Store, self._args)

    def __repr__(self) -> str:
        return f"Store({self._files.uri!r})"

    @property
    def uri(self) -> str:
        """The store root as given, without credentials (``store.redact_uri``): what messages show."""
        return self._files.uri

    @property
    def files(self) -> Files:
        """Low-level file access (for tests and tools)."""
        return self._files

    def exists(self) -> bool:
        """True when the root holds anything (a sweep or a reference)."""
        return bool(self._files.list_dir(self._files.root))

    def sweeps(self) -> list[str]:
        """Names of the sweeps in the store, sorted."""
        return list_sweeps(self._files)

    # -- writing -------------------------------------------------------------------------------
    def write_trial(self, sweep: str, trial_key: str, metric_rows: Sequence[Mapping], trial_row: Mapping) -> None:
        """Validate and atomically write one trial: its metric rows, then its trials row.

        Args:
            sweep: the sweep name (letters, digits, '_', '-', '.').
            trial_key: the trial's key (letters, digits, '_', '-'); rewriting a key replaces it.
            metric_rows: one dict per (seed, step) with the metrics columns (schema.COLUMNS),
                except sweep, trial_key, schema_version and package_version, which the store
                sets; error and node_id may be left out (null, this host).
            trial_row: one dict with the trials columns, filled the same way (see
                ``store.trial_row_from_metrics``).

        Raises:
            SchemaError: rows that do not match the schema (nothing written).
            InvalidNameError: a bad sweep name or key. StoreError: the store cannot be written.
        """
        write_trial(self._files, sweep, trial_key, metric_rows, trial_row)

    def write_fit(self, sweep: str, fit_id: str, rows: Sequence[Mapping]) -> None:
        """Validate and atomically write the rows of one fit (one row per fitted parameter).

        The store sets sweep, fit_id, schema_version, package_version (and created_at when
        left out). Writing a fit id again replaces that fit.

        Raises:
            SchemaError, InvalidNameError, StoreError: as for ``write_trial``.
        """
        write_fit(self._files, sweep, fit_id, rows)

    def write_round(self, sweep: str, round_id: str, rows: Sequence[Mapping]) -> None:
        """Validate and atomically write the rows of one round of an adaptive sweep (kind
        ``rounds``; see ``store.schema``). Writing a round id again replaces that round.

        Raises:
            SchemaError, InvalidNameError, StoreError: as for ``write_trial``.
        """
        write_round(self._files, sweep, round_id, rows)

    def write_comparison(self, sweep: str, comparison_id: str, rows: Sequence[Mapping]) -> None:
        """Validate and atomically write the rows of one comparison of two sweeps (kind
        ``comparisons``, filed under ``sweep``; see ``store.schema``). Writing an id again replaces it.

        Raises:
            SchemaError, InvalidNameError, StoreError: as for ``write_trial``.
        """
        write_comparison(self._files, sweep, comparison_id, rows)

    def write_optima(self, sweep: str, optima_id: str, rows: Sequence[Mapping]) -> None:
        """Validate and atomically write the rows of one optimum or transfer request (kind
        ``optima``; see ``store.schema``). Writing an id again replaces it.

        Raises:
            SchemaError, InvalidNameError, StoreError: as for ``write_trial``.
        """
        write_optima(self._files, sweep, optima_id, rows)

    def write_run(self, sweep: str, run_id: str, *, spec: Mapping, planned_keys: Iterable[str],
                  started_at: _dt.datetime, ended_at: _dt.datetime | None = None,
                  only_keys: Iterable[str] | None = None, ttl_s: float = leases.DEFAULT_TTL_S) -> None:
        """Write (at its start) or rewrite (at its end) the record of one ``sweep`` run
        (``store/runs.py``): its resolved spec, the trial keys of its grid, the subset it set out
        to run when one (``only_keys``), its start and end. ``runs.new_run_id`` gives ids that sort
        by start time; the run's owner is this process (``owner_identity``).

        Raises:
            InvalidNameError: a bad sweep name or run id. StoreError: the store cannot be written.
        """
        runs.write_run(self._files, sweep, run_id, spec=spec, planned_keys=list(planned_keys), started_at=started_at,
                       ended_at=ended_at, only_keys=None if only_keys is None else list(only_keys), ttl_s=ttl_s)

    def runs(self, sweep: str, last: int | None = None) -> list[runs.RunRecord]:
        """The sweep's run records, oldest first (the ``last`` ones when given), each with
        ``live`` judged now from the sweep's lease heartbeats. No lock is taken.

        Raises:
            InvalidNameError: a bad sweep name. StoreError: a record cannot be read.
        """
        return runs.read_runs(self._files, sweep, last)

    # -- reading -------------------------------------------------------------------------------
    def completed_trial_keys(self, sweep: str) -> set[str]:
        """Keys of the sweep's trials that have a trials row (written after their metrics).

        A failed trial counts as complete (it has its rows, status 'failed'); find those with
        ``SELECT trial_key FROM trials WHERE status = 'failed'``. Cost: one directory listing,
        plus reading the trial_key column of compacted files.
        """
        return completed_keys(self._files, check_sweep(sweep))

    def trial_statuses(self, sweep: str) -> dict[str, str]:
        """``trial_key -> status`` (ok, diverged or failed) of every trial of the sweep.

        Reads two columns of the trials rows through a pyarrow dataset of exactly the files
        that serve them (one file per key), no SQL: a fraction of a second for 10^5 trials in a
        compacted file, about 0.4 ms per small file (sweeps compact their trials when they end).

        Raises:
            InvalidNameError: a bad sweep name. StoreError: an unreadable file.
        """
        return lookup.trial_values(self._files, sweep, "status")

    def trial_status_counts(self, sweep: str) -> dict[str, int]:
        """``{status: trials}`` of the sweep (ok, diverged and failed always present): the counts
        of ``trial_statuses``, read from the footers of the compacted trials files where they
        can be (``store.status_counts``), so a sweep's end leaves counts that cost the same at
        10^6 trials as at 10^3; small files and files compacted before the counts were kept are
        read as ``trial_statuses`` reads them.

        Raises:
            InvalidNameError: a bad sweep name. UnreadableFileError, StoreError: an unreadable file.
        """
        return status_counts.status_counts(self._files, sweep)

    def has_kind(self, sweep: str, kind: str) -> bool:
        """Whether the sweep holds any file of ``kind`` (one listing, nothing read): lets a
        caller skip a kind that is absent (``explorer status`` and an adaptive sweep's rounds)."""
        return status_counts.has_kind(self._files, sweep, kind)

    def trial_column(self, sweep: str, column: str, keys: Iterable[str] | None = None) -> dict[str, object]:
        """``trial_key -> value`` of one trials column (e.g. ``error``), for ``keys`` only when
        given (keys the store lacks are left out); read like ``trial_statuses``.

        Raises:
            SchemaError: an unknown column. InvalidNameError, StoreError: as ``trial_statuses``.
        """
        return lookup.trial_values(self._files, sweep, column, None if keys is None else set(keys))

    def trial_metrics(self, sweep: str, keys: Iterable[str]) -> pa.Table | None:
        """The metrics rows of the sweep's trials of ``keys`` (None when none has rows), read from
        exactly the files that serve them, as the views would give them: a few milliseconds for a
        few trials where a view over a sweep's files takes a tenth of a second.

        Raises:
            InvalidNameError: a bad sweep name. StoreError: an unreadable file.
        """
        return lookup.trial_rows(self._files, sweep, "metrics", set(keys))

    def trial_records(self, sweep: str, keys: Iterable[str]) -> pa.Table | None:
        """The trials rows of the sweep's trials of ``keys`` (None when none has one), read like
        ``trial_metrics``: what a reader that follows a running sweep (``explorer watch``) adds to
        the rows it already holds."""
        return lookup.trial_rows(self._files, sweep, "trials", set(keys))

    def get_or_compute_reference(
        self, ref_key: str, compute: Callable[[], tuple[Mapping[str, np.ndarray], Mapping]], *,
        stale_after_s: float = references.STALE_AFTER_S, validate: references.Validate | None = None,
    ) -> tuple[dict[str, np.ndarray], dict]:
        """The cached reference ``(arrays, meta)`` of ``ref_key``, computing it only if absent.

        Safe when many workers ask for the same key at once: on local disk one computes and the
        others wait; on object storage duplicates may compute, and the copies are identical.
        Arrays come back bit-exact; meta goes through JSON (tuples become lists).

        Args:
            compute: returns ``(arrays, meta)``: a dict of numpy arrays and a JSON-serializable dict.
            stale_after_s: break a lock not refreshed for this long (its worker died).
            validate: ``validate(arrays, meta)`` -> why a cached copy cannot be used, or None.
                A cached file holding another key's rows, or refused by ``validate``, is moved
                to ``<root>/quarantine/references/`` and the reference computed again.

        Raises:
            Whatever compute raises; SchemaError for arrays or meta that cannot be stored;
            InvalidNameError for a bad key; StoreError when the store cannot be used.
        """
        return references.get_or_compute(self._files, ref_key, compute, stale_after_s=stale_after_s, validate=validate)

    def has_reference(self, ref_key: str) -> bool:
        """Whether the reference of ``ref_key`` is cached: its own file exists, or a compacted
        references file holds its key (not read or checked)."""
        return references.is_cached(self._files, check_key(ref_key, "reference key"))

    def read_reference(self, ref_key: str) -> tuple[dict[str, np.ndarray], dict] | None:
        """The cached reference of ``ref_key``, or None when it is not cached.

        Raises:
            ForeignReferenceError: the cached file is not ``ref_key``'s reference (never used).
        """
        return references.read(self._files, check_key(ref_key, "reference key"))

    def connect(self, sweep: str | None = None, read_only: bool = False,
                views: Collection[str] | None = None, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with views metrics, trials, fits, rounds, comparisons, optima and references.

        The views show the files present now; connect again to see later writes. They read
        only files that match a schema version of their kind (``store/screen.py``, the rule of
        ``check``): the others are listed in ``self.left_out`` and announced by a
        ``LeftOutFilesWarning``.

        Args:
            sweep: restrict metrics, trials and fits to one sweep.
            read_only: forbid the connection to read or write files by itself.
            views: register only these views (default all); each view screens its files'
                footers when registered, so a query names the views it needs.

        Raises:
            UnreadableFileError: a data file cannot be read (names it and ``explorer check --quarantine``).
        """
        left_out: list = []
        con = query.connect(self._files, sweep=sweep, read_only=read_only, left_out=left_out, views=views,
                            memory_limit=memory_limit)
        self.left_out = left_out
        if left_out:
            warnings.warn(query.left_out_message(left_out), query.LeftOutFilesWarning, stacklevel=2)
        return con

    def query(self, sql: str, sweep: str | None = None, read_only: bool = True, *,
              timeout_s: float | None = None, memory_limit: str | None = None) -> pa.Table:
        """Run a query over fresh views and return the whole result as an Arrow table.

        With ``read_only`` (the default) only one query is accepted (SELECT, WITH, VALUES,
        DESCRIBE, SHOW, EXPLAIN, reading PRAGMAs; ``query.check_read_only``). Ctrl-C and SIGTERM
        stop a running query at once (``store.interrupt``).

        Args:
            timeout_s: stop the query after this many seconds (QueryTimeout).
            memory_limit: DuckDB's memory limit (``"8GB"``, ``"30%"``; default half the
                machine's memory, ``store.interrupt.SQL_MEMORY_SHARE``).

        Raises:
            StoreQueryError: DuckDB rejected the query (its message), or it is not a query.
            QueryTimeout: it ran longer than ``timeout_s``.
        """
        if read_only:
            query.check_read_only(sql)
        query.check_time_limit(timeout_s)  # before any file is listed
        views = query.views_of(sql)
        con = self.connect(sweep=sweep, read_only=read_only, views=views, memory_limit=memory_limit)
        try:
            return query.run(con, sql, timeout_s)
        except StoreQueryError as exc:
            if views is None or not query.missing_view(exc):
                raise
        finally:
            con.close()
        con = self.connect(sweep=sweep, read_only=read_only, memory_limit=memory_limit)  # a view the parser did not see
        try:
            return query.run(con, sql, timeout_s)
        finally:
            con.close()

    # -- integrity -----------------------------------------------------------------------------
    def check(self, sweep: str | None = None) -> integrity.CheckReport:
        """Report unreadable, foreign and temporary files, duplicate rows, missing steps and
        incomplete trials (``report.ok`` is False when there is any); changes nothing."""
        return integrity.check(self._files, sweep)

    def compact(self, sweep: str | None, rows_per_file: int = 4_000_000,
                kinds: Collection[str] = DATA_KINDS, budget_s: float | None = None) -> compaction.CompactionReport:
        """Merge the sweep's small files into large ones with exactly the same rows (checked
        before any original is removed; an interrupted compaction loses nothing). Streams: its
        memory does not grow with the number of files.

        Args:
            sweep: the sweep (None: only the reference cache, with ``kinds=("references",)``).
            kinds: which kinds to compact (default every data kind); ``"references"`` adds the
                store's reference cache. A sweep's end compacts ``trials``, ``metrics`` and
                ``references`` within its budget (``explorer.sweeps.tracking.cleanup``).
            budget_s: start no new batch after this many seconds; the rest stays for later.
        """
        return compaction.compact(self._files, sweep, rows_per_file=rows_per_file, kinds=kinds, budget_s=budget_s)

    def small_files_bytes(self, sweep: str | None, kind: str) -> int:
        """Bytes in the sweep's small (one key each, not yet compacted) files of ``kind`` (with
        ``kind="references"``, the reference cache's single-reference files; ``sweep`` unused)."""
        if kind == "references":
            listing = list_references(self._files, stat=True)
        else:
            listing = list_kind(self._files, check_sweep(sweep), kind, stat=True)
        return sum(entry.size or 0 for entry in listing.singles.values())

    def remove_temporaries(self, sweep: str, before: _dt.datetime | None = None, *, references: bool = False) -> int:
        """Delete the temporary files (``.tmp.*``) of the sweep's writes last touched before
        ``before`` (default: an hour ago): what writers killed mid-write left behind.

        Call it only when no writer can still be writing those files (e.g. once a sweep's trials
        are over); a concurrent writer whose temporary is removed fails that write. The reference
        cache is shared by every sweep of the store: with ``references=True`` keep the default
        cut-off unless no other sweep can be running. Object storage has no temporaries (returns 0).

        Args:
            before: timezone-aware cut-off. references: also the reference cache's.

        Returns:
            How many files were deleted.
        """
        return cleanup.remove_temporaries(self._files, sweep, before=before, references=references)

    def remove_unfinished(self, sweep: str, keys: Iterable[str]) -> int:
        """Delete the metric rows of those ``keys`` that have no trials row (a worker stopped
        between its two writes); returns how many files were deleted. Call it only when no
        writer of these keys can still be at work (a sweep driver does, for the trials it held,
        once its workers are stopped)."""
        return cleanup.remove_unfinished(self._files, sweep, keys)

    # -- maintenance ---------------------------------------------------------------------------
    def quarantine(self, sweep: str | None = None) -> list[tuple[str, str]]:
        """Move unreadable data files to ``<root>/quarantine/<relative path>`` (nothing deleted);
        returns ``(from, to)`` pairs. Restore a file by moving it back."""
        return maintenance.quarantine(self._files, sweep)

    def quarantined(self) -> list[str]:
        """The files in the quarantine folder."""
        return maintenance.quarantined_files(self._files)

    def repair(self, sweep: str | None = None) -> maintenance.RepairReport:
        """Remove stale reference locks (heartbeat older than ``references.STALE_AFTER_S``,
        read again just before removal), temporaries older than an hour and lapsed leases."""
        return maintenance.repair(self._files, sweep)

    def probe(self) -> None:
        """Check that the store can be listed and written (writes and deletes a hidden marker).

        Raises:
            StoreUnreachable: what failed, with the filesystem's message (a ``StoreError``).
        """
        maintenance.probe(self._files)

    def sweeps_summary(self) -> list[maintenance.SweepSummary]:
        """Per sweep: trials by status, bytes, last write time (what ``explorer ls`` prints)."""
        return maintenance.sweeps_summary(self._files)

    def remove_sweep(self, sweep: str) -> int:
        """Delete one sweep's files (and nothing else); returns how many files were removed."""
        return maintenance.remove_sweep(self._files, sweep)

    # -- claims of concurrent drivers -----------------------------------------------------------
    def claim(self, sweep: str, keys: Iterable[str], owner: str, ttl_s: float = leases.DEFAULT_TTL_S) -> set[str]:
        """Claim trial keys for ``owner`` (e.g. ``host:pid``) for ``ttl_s`` seconds; returns the
        keys now held: unclaimed, lapsed, or already this owner's. Exclusive on local disk (O_EXCL),
        best effort on object storage (see ``store/leases.py``)."""
        return leases.claim(self._files, sweep, keys, owner, ttl_s)

    def renew(self, sweep: str, keys: Iterable[str], owner: str, ttl_s: float = leases.DEFAULT_TTL_S) -> set[str]:
        """Refresh ``owner``'s leases on ``keys``; returns those still held."""
        return leases.renew(self._files, sweep, keys, owner, ttl_s)

    def release(self, sweep: str, keys: Iterable[str], owner: str) -> int:
        """Drop ``owner``'s leases on ``keys``; returns how many were removed."""
        return leases.release(self._files, sweep, keys, owner)

    def leases(self, sweep: str) -> dict[str, tuple[str, bool]]:
        """``trial_key -> (owner, live)`` of the sweep's leases (who claims what, and whether it lapsed)."""
        return leases.leases(self._files, sweep)

    def remove_dead_reference_locks(self, ref_keys: Iterable[str], holder_dead: Callable[[str], bool]) -> tuple[int, int]:
        """Remove the reference locks of ``ref_keys`` whose holder (the lock's text, ``host:pid``)
        ``holder_dead`` says is gone, e.g. a worker of a driver that was interrupted: they need not
        wait ``references.STALE_AFTER_S``. Local stores only (object storage has no locks).

        Returns:
            ``(removed, kept)``: locks removed, and locks whose holder is alive.
        """
        if not self._files.is_local:
            return 0, 0
        removed = kept = 0
        for key in ref_keys:
            path = reference_lock(self._files.root, check_key(key, "reference key"))
            try:
                found = read_control(self._files, path)  # bounded, never through a link
            except MalformedControl:
                found = None  # no lock at all (a link, a device, too large): nobody holds it
            except OSError:
                continue
            if found is None and not os.path.lexists(path):
                continue
            if found is not None and not holder_dead(found[0].decode(errors="replace")):
                kept += 1
                continue
            try:
                os.remove(path)
                removed += 1
            except FileNotFoundError:
                pass
        return removed, kept
