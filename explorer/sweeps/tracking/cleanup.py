"""After a run: the claims released, the reference locks of dead workers removed, temporaries of
lost workers removed, half-written trials of this driver's dead workers dropped, and the sweep's
``trials`` rows compacted into one file (so that the next start's status lookup reads one file
instead of one per trial), and its metric rows too while they are small enough to merge in memory."""
from __future__ import annotations

import datetime as dt
import time

from store import Store, StoreError, owner_dead_here

from ...config.planning import Plan
from .leases import Leases
from .progress import Progress

LOCK_WAIT_S = 5.0  # after an interruption: how long the holders of reference locks get to exit


def remove_leftovers(store: Store, sweep: str) -> int:
    """Temporaries left by workers killed mid-write, once every trial of this run is over: the
    sweep's own older than now (no live writer is left), the shared reference cache's only when
    stale (another sweep on the same store may be writing a reference right now)."""
    return (store.remove_temporaries(sweep, before=dt.datetime.now(dt.timezone.utc))
            + store.remove_temporaries(sweep, references=True))


def remove_dead_writers_temporaries(store: Store, sweep: str) -> int:
    """Temporaries whose writer, named in the file, is a dead process of this machine (a worker or
    a compaction killed mid-write): safe to remove whoever else runs, so even a resume with
    nothing left to run removes them (``explorer check`` would report them otherwise). A killed
    compaction's aside is put back under its input's name, not removed (``store.cleanup``)."""
    none_by_age = dt.datetime.min.replace(tzinfo=dt.timezone.utc)  # no cut-off: dead writers' only
    try:
        return store.remove_temporaries(sweep, before=none_by_age, references=True)
    except StoreError:  # best effort (a read-only store): `explorer check --repair` removes them too
        return 0


def release_dead_locks(store: Store, the_plan: Plan, wait_s: float = 0.0) -> int:
    """Remove the reference locks of this plan whose holder, a process of this machine, is dead
    (a worker of this driver's Ray, stopped by an interruption), waiting up to ``wait_s`` for
    the holders of the others to exit. Live holders' locks are left alone (another driver's
    worker); those of other machines lapse after the store's stale-lock age without a heartbeat."""
    keys = [r.ref_key for r in the_plan.references]
    deadline = time.monotonic() + wait_s
    removed, kept = store.remove_dead_reference_locks(keys, owner_dead_here)
    while kept and time.monotonic() < deadline:
        time.sleep(0.2)
        more, kept = store.remove_dead_reference_locks(keys, owner_dead_here)
        removed += more
    return removed


def release_after_run(store: Store, sweep: str, the_plan: Plan, leases: Leases, claimed: set[str],
                      interrupted: bool) -> None:
    """Release this driver's claims and what its workers left behind (an interrupted run waits a
    little for its workers' reference locks to be let go)."""
    leases.close()
    release_dead_locks(store, the_plan, wait_s=LOCK_WAIT_S if interrupted else 0.0)
    planned_keys = {t.trial_key for t in the_plan.trials}
    if not leases.others(planned_keys):
        remove_leftovers(store, sweep)
    # a worker stopped between its metrics and its trials row (the signal, a lost node) leaves
    # rows that check calls incomplete: this driver held those keys and its workers are gone, so
    # nobody else can be writing them
    store.remove_unfinished(sweep, claimed - set(leases.others(claimed)))


# What a sweep's end compacts beyond its trials rows. Compaction streams its inputs batch by batch
# (``store.compaction.BATCH_BYTES``), so neither bound is about memory: they bound the time the
# end takes. Metric files past METRICS_COMPACT_BYTES stay whole for `explorer compact`; metrics
# and references stop taking new batches after END_COMPACT_S (what was merged stays merged);
# trials too, each kind with its own budget (the rest of the trials rows is merged next time).
METRICS_COMPACT_BYTES = 2 * 2**30
END_COMPACT_S = 120.0


def compact_leftovers(store: Store, sweep: str, bar: Progress) -> None:
    """A run with nothing to run: compact what earlier runs left unmerged (a run killed before its
    end's compaction, a compaction's input put back by ``remove_dead_writers_temporaries``), when
    there is any, as a run's end would; nothing (not a listing more) on a compacted sweep."""
    try:
        leftover = store.small_files_bytes(sweep, "trials") > 0 or 0 < store.small_files_bytes(
            sweep, "metrics") <= METRICS_COMPACT_BYTES
    except StoreError:
        return  # best effort: `explorer compact` merges them
    if leftover:
        compact_trials(store, sweep, bar)


def compact_trials(store: Store, sweep: str, bar: Progress) -> None:
    """Merge the sweep's trials rows into one file, so that the next start reads one file; its
    metric rows when their small files hold at most ``METRICS_COMPACT_BYTES`` (every later query
    then scans one file instead of one per trial: a report of 2592 trials, 37 s against 4.6 s);
    and the reference cache's single-reference files into a few files, so that references do
    not multiply files. Each kind stops taking new batches after ``END_COMPACT_S``.

    Never fails the sweep (its trials are all written): a problem is noted and the next run, or
    ``explorer compact``, tries again.
    """
    try:
        metrics = 0 < store.small_files_bytes(sweep, "metrics") <= METRICS_COMPACT_BYTES
        kinds = ("trials", "metrics", "references") if metrics else ("trials", "references")
        store.compact(sweep, kinds=kinds, budget_s=END_COMPACT_S)
    except StoreError as exc:
        bar.message(f"note: the rows of sweep {sweep} were not compacted ({exc}); run `explorer compact`")
