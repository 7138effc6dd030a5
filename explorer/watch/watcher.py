"""One refresh of ``explorer watch``: where a sweep stands, read from the store without a lock.

A ``Watcher`` follows one sweep. Each ``refresh()`` lists the keys of the trials written so far
(names only) and reads the rows of the new ones alone (``Store.trial_metrics``,
``Store.trial_records``: exactly their files), keeping every trial's rows it has read; failed
trials are read again (a rerun replaces them). When no trial was added the answer of the last
refresh is reused as it is; otherwise it is computed again on an in-memory DuckDB of the rows held,
with the functions of ``explorer optimum``/``transfer``/``fit`` (``answer``), with
``RUNNING_BOOT`` resamples while the run is live and the command's own once it ended. The run record
(``Store.runs``) says what the last run set out to do and whether it still runs.
"""
from __future__ import annotations

import datetime as dt
import math
import time
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pyarrow as pa

from store import STATUSES, Store, StoreError

from ..analysis.data import all_distinct_counts, metrics_column_names, run_state
from ..sweeps import eta_seconds
from .answer import Interval, compute_answer

FAILED = "failed"
# Resamples of the answer while the run is live (its final answer, once it ended, has the
# command's own, so it is ``explorer optimum``'s and ``transfer``'s): a refresh after new trials
# then stays within a second of CPU at 2592 trials (docs/benchmarks.md).
RUNNING_BOOT = 100
READ_ATTEMPTS, READ_RETRY_S = 5, 0.5


@dataclass
class Snapshot:
    """A sweep as one refresh saw it (``as_dict``: the object ``--json`` prints)."""

    sweep: str
    counts: dict[str, int]  # ok, diverged, failed: every stored trial of the sweep
    running: int  # trials of the last run that a live driver holds, not complete yet
    pending: int  # trials of the last run not complete and no longer run (the run stopped)
    total: int  # trials of the last run
    done: int  # of them, complete
    partial: bool
    ended: bool
    rate: float | None  # trials per second, as measured so far
    eta_s: float | None
    kind: str | None  # "optima" or "fit"
    intervals: list[Interval] = field(default_factory=list)
    why_no_answer: str | None = None
    narrowed: dict[str, float] = field(default_factory=dict)  # name -> 1 - width now / width at the last refresh
    notes: list[str] = field(default_factory=list)  # partial, trials outside the last run's grid
    cpu_s: float = 0.0  # CPU time of this refresh

    def as_dict(self) -> dict:
        return {"sweep": self.sweep, **{s: self.counts.get(s, 0) for s in STATUSES}, "running": self.running,
                "pending": self.pending, "total": self.total, "done": self.done, "partial": self.partial,
                "ended": self.ended, "rate_per_s": self.rate, "eta_s": self.eta_s,
                "answer": {"kind": self.kind, "intervals": [i.as_dict() for i in self.intervals],
                           "why_none": self.why_no_answer},
                "narrowed": self.narrowed, "notes": self.notes}


def _by_key(table: pa.Table) -> dict[str, pa.Table]:
    """``trial_key -> its rows`` of ``table`` (one sort, then slices)."""
    keys = np.asarray(table.column("trial_key").to_pylist(), dtype=object)
    order = np.argsort(keys, kind="stable")
    ordered = table.take(pa.array(order))
    names, starts = np.unique(keys[order], return_index=True)
    ends = list(starts[1:]) + [len(keys)]
    return {str(name): ordered.slice(int(a), int(b - a)) for name, a, b in zip(names, starts, ends)}


class Watcher:
    """Follows one sweep of a store; ``refresh()`` gives a ``Snapshot``."""

    def __init__(self, store: Store, sweep: str, *, n_boot: int = 200, seed: int = 0, metric: str | None = None,
                 running_boot: int = RUNNING_BOOT):
        self.store, self.sweep, self.n_boot, self.seed, self.metric = store, sweep, n_boot, seed, metric
        self.running_boot = min(running_boot, n_boot)
        self.answer_boot = 0  # the resamples of the answer held
        self.read_problem: str | None = None  # why the last refresh read no new rows, when it could not
        self.statuses: dict[str, str] = {}
        self.metrics: dict[str, pa.Table] = {}
        self.trials: dict[str, pa.Table] = {}
        self.con: duckdb.DuckDBPyConnection | None = None
        self.joined: dict[str, pa.Table] = {}  # kind -> every row held, as registered on ``con``
        self.added: dict[str, list[pa.Table]] = {}  # kind -> rows read since ``joined`` was made
        self.answer: tuple[str | None, list[Interval], str | None] = (None, [], None)
        self.previous: dict[str, float] = {}  # interval name -> its width at the last refresh
        self.first_seen: tuple[float, int] | None = None  # (time, trials of the run done) at the first refresh

    def _read_new(self) -> bool:
        """``_read_once``, again after a moment when the files moved meanwhile (the sweep's end
        compacts them); after ``READ_ATTEMPTS`` the rows held are kept until the next refresh."""
        for attempt in range(READ_ATTEMPTS):
            try:
                return self._read_once()
            except StoreError:
                if attempt == READ_ATTEMPTS - 1:
                    self.read_problem = "the store's files kept moving (a compaction?): read again at the next refresh"
                    return False
                time.sleep(READ_RETRY_S)
        return False

    def _read_once(self) -> bool:
        """Read the rows of trials not held yet (and of failed ones again); True when any changed."""
        keys = self.store.completed_trial_keys(self.sweep)
        new = {k for k in keys if k not in self.statuses or self.statuses[k] == FAILED}
        if not new:
            return False
        statuses = self.store.trial_column(self.sweep, "status", new)
        changed = {k for k in new if self.statuses.get(k) != statuses.get(k) or k not in self.metrics}
        if not changed:
            return False
        metrics = self.store.trial_metrics(self.sweep, changed)
        trials = self.store.trial_records(self.sweep, changed)
        if changed & self.metrics.keys():  # a failed trial run again: its old rows go, the tables are rebuilt
            self.joined = {}
        for kind, table, held in (("metrics", metrics, self.metrics), ("trials", trials, self.trials)):
            if table is not None:
                held.update(_by_key(table))
                self.added.setdefault(kind, []).append(table)
        self.statuses.update({k: str(v) for k, v in statuses.items() if v is not None})
        return True

    def _joined(self, kind: str, held: dict[str, pa.Table]) -> pa.Table:
        """All rows held of ``kind``: the last refresh's table with the new rows appended (the
        whole table again only after a rerun replaced rows)."""
        if kind in self.joined:
            table = pa.concat_tables([self.joined[kind], *self.added.get(kind, [])], promote_options="default")
        else:
            table = pa.concat_tables(list(held.values()), promote_options="default")
        self.joined[kind] = table
        return table

    def _connection(self) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect()
        con.register("metrics", self._joined("metrics", self.metrics))
        con.register("trials", self._joined("trials", self.trials))
        self.added = {}
        return con

    def _axes(self, run) -> dict[str, int]:
        """How many values each column takes: the last run's grid, else the rows held."""
        if run is not None and run.spec.get("axes"):
            return {c: len(v) for c, v in run.spec["axes"].items()}
        if self.con is None:
            return {}
        columns = [c for c in ("L", "M", "D", "lr", "alpha") if c in set(metrics_column_names(self.con))]
        counts = all_distinct_counts(self.con, columns)
        return dict(zip(columns, counts))

    def refresh(self) -> Snapshot:
        cpu = time.process_time()
        found = self.store.runs(self.sweep, last=1)
        run = found[-1] if found else None
        n_boot = self.running_boot if run is not None and run.live else self.n_boot
        self.read_problem = None
        if self._read_new() and self.metrics:
            if self.con is not None:
                self.con.close()
            self.con = self._connection()
            self.answer_boot = 0
        if self.con is not None and self.answer_boot != n_boot:  # new rows, or the run ended: the final resamples
            self.answer = compute_answer(self.con, self.sweep, self._axes(run), n_boot=n_boot, seed=self.seed,
                                         metric=self.metric)
            self.answer_boot = n_boot
        state = run_state(self.store, self.sweep, con=self.con, statuses=self.statuses, run=run) \
            if self.con is not None else run_state(self.store, self.sweep, statuses=self.statuses, run=run)
        kind, intervals, why = self.answer
        counts = {s: 0 for s in STATUSES}
        for status in self.statuses.values():
            counts[status] = counts.get(status, 0) + 1
        rate, eta = self._pace(state, run)
        widths = {i.name: i.width for i in intervals if i.width is not None}
        narrowed = {name: 1 - width / self.previous[name] for name, width in widths.items()
                    if self.previous.get(name) and width != self.previous[name]}
        self.previous = widths
        snap = Snapshot(self.sweep, counts, state.running, state.pending, state.total, state.done, state.partial,
                        state.ended, rate, eta, kind, intervals, why, narrowed,
                        state.lines() + ([self.read_problem] if self.read_problem else []))
        snap.cpu_s = time.process_time() - cpu
        return snap

    def _pace(self, state, run) -> tuple[float | None, float | None]:
        """Trials per second and seconds left: from what this watcher saw complete, else (its first
        refresh) from the run's start; ``progress.eta_seconds`` turns them into an ETA."""
        now = time.time()
        if run is None or not state.live:
            return None, (0.0 if not state.partial else None)
        if self.first_seen is None:
            self.first_seen = (now, state.done)
        seen_at, seen_done = self.first_seen
        if state.done > seen_done and now > seen_at:
            elapsed, done, total = now - seen_at, state.done - seen_done, state.total - seen_done
        else:
            started = run.started_at.timestamp() if isinstance(run.started_at, dt.datetime) else now
            elapsed, done, total = now - started, state.done, state.total
        if done <= 0 or elapsed <= 0:
            return None, None
        eta = eta_seconds(elapsed, done, total)
        return done / elapsed, (eta if math.isfinite(eta) else None)

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None
