"""One sweep's metrics rows kept in memory between refits, read from the store only for the
trials not read before.

A loop that refits after every few trials (the adaptive sweep) would otherwise open the store's
views and run the fit's queries over every row of the sweep each time: on the 144-point rates
grid that was two thirds of a refit's CPU, and it grows with the trials. ``SweepRows`` keeps the
rows of each finished trial as read once, and ``connection`` gives a DuckDB connection whose
``metrics`` table holds them, on which the fit's own queries (``seed_grams``, ``grid_errors``)
run unchanged: the same rows give the same frame, the same fit.

Which trials, and whether a kept trial is still current, is told by the trials rows the caller
reads anyway (``Store.trial_statuses`` and the ``wall_s`` column): a trial counts once its trials
row exists (the store writes it after the metrics rows), and rewriting a trial (a rerun) writes
a new trials row with its own wall time, which drops the kept rows and reads the trial again. A
trial whose trials row is gone is dropped. Compaction moves rows between files without changing
them, so it needs no re-read.

The rows are kept up to ``MAX_KEPT_BYTES`` (a sweep of long trainings: every step of every seed
is a row); past it the cache lets go of them and each refit reads the store's views again.
"""
from __future__ import annotations

from collections.abc import Mapping

import duckdb
import pyarrow as pa

from store import table_connection

from ...analysis.data import trial_metric_rows

BATCH = 500  # trial keys per IN list of one read
MAX_KEPT_BYTES = 256 * 2**20  # beyond this the rows are not kept (each refit reads the store)


class SweepRows:
    """The metrics rows of ``sweep``'s finished trials in ``store``, read incrementally."""

    def __init__(self, store, sweep: str):
        self.store, self.sweep = store, sweep
        self.stamps: dict[str, object] = {}  # trial_key -> its trials row's stamp when read
        self.tables: dict[str, pa.Table] = {}  # trial_key -> its metrics rows (possibly none)
        self.kept_bytes = 0  # of the kept tables
        self.reads = 0  # store reads so far (one per call that found new or changed trials)
        self.empty: pa.Table | None = None  # no rows, the metrics columns (after the first read)
        self.too_large = False  # the rows outgrew MAX_KEPT_BYTES: none are kept any more

    def update(self, stamps: Mapping[str, object]) -> list[str]:
        """Bring the kept rows to the trials of ``stamps`` (trial_key -> a value that changes when
        the trial is rewritten, e.g. (status, wall_s)); returns the keys read from the store."""
        for key in [k for k in self.stamps if k not in stamps or stamps[k] != self.stamps[k]]:
            del self.stamps[key]
            gone = self.tables.pop(key, None)
            self.kept_bytes -= gone.nbytes if gone is not None else 0
        new = sorted(k for k in stamps if k not in self.stamps)
        if not new:
            return []
        read = self.read(new)
        for key in new:
            self.stamps[key] = stamps[key]
            self.tables[key] = read.get(key, self.empty)
            self.kept_bytes += self.tables[key].nbytes
        self.reads += 1
        return new

    def read(self, keys: list[str]) -> dict[str, pa.Table]:
        """The metrics rows of ``keys`` from the store, per trial: from the files that serve them
        (``Store.trial_metrics``: a few milliseconds where the store's view over every file of
        the sweep took a tenth of a second a refit); the view only when none of them has rows
        (it gives the columns of an empty table)."""
        table = self.store.trial_metrics(self.sweep, keys)
        if table is None:
            table = self.read_view(keys)
        self.empty = table.slice(0, 0)
        column = table.column("trial_key").to_pylist()
        rows: dict[str, list[int]] = {}
        for i, key in enumerate(column):
            rows.setdefault(key, []).append(i)
        return {key: table.take(pa.array(index)) for key, index in rows.items()}

    def read_view(self, keys: list[str]) -> pa.Table:
        """The metrics rows of ``keys`` through the store's view."""
        con = self.store.connect(sweep=self.sweep, views=("metrics",))
        try:
            parts = []
            for start in range(0, len(keys), BATCH):
                parts.append(trial_metric_rows(con, self.sweep, keys[start:start + BATCH]))
        finally:
            con.close()
        return pa.concat_tables(parts)

    def table(self) -> pa.Table | None:
        """Every kept row as one table (None before any row was read)."""
        parts = [self.tables[k] for k in sorted(self.tables) if self.tables[k].num_rows]
        if not parts:
            return self.empty
        return pa.concat_tables(parts)

    def connection(self, stamps: Mapping[str, object]) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection whose ``metrics`` table holds the rows of the trials of
        ``stamps`` (``update``), ordered by trial key. Without any row read yet, or once the rows
        outgrew ``MAX_KEPT_BYTES``, the store's own view instead."""
        if not self.too_large:
            self.update(stamps)
            if self.kept_bytes > MAX_KEPT_BYTES:
                self.too_large = True
                self.stamps, self.tables, self.kept_bytes = {}, {}, 0
        table = None if self.too_large else self.table()
        if table is None:
            return self.store.connect(sweep=self.sweep, views=("metrics",))
        return table_connection("metrics", [table])


__all__ = ["SweepRows"]
