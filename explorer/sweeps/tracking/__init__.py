"""What a sweep's driver keeps track of while it runs: the progress line and its estimates
(``progress``), the claims on trials that other drivers respect (``leases``), the run's record in
the store (``run_record``), the summary read back from the store (``results``: ``SweepResult``),
why a trial or task failed (``failures``), a store lost mid-sweep (``store_lost``) and the cleanup
after a run (``cleanup``: claims, locks, temporaries, compaction).

Every public name is imported on first use (``explorer.faces``, PEP 562): code outside this
wing imports these names, never a module inside it.
"""
from ...faces import lazy_face

# name -> the module of this wing that defines it.
_LAZY = {
    "Progress": "progress",
    "eta_seconds": "progress",
    "Leases": "leases",
    "driver_ttl_s": "leases",
    "note_other_drivers": "leases",
    "sole_adaptive_driver": "leases",
    "wait_for": "leases",
    "RunLog": "run_record",
    "SweepResult": "results",
    "count_started_since": "results",
    "count_statuses": "results",
    "LOST_ACTOR_RETRIES": "failures",
    "error_text": "failures",
    "failed_rows": "failures",
    "root_cause": "failures",
    "STORE_LOST": "store_lost",
    "stop_when_store_lost": "store_lost",
    "unreachable": "store_lost",
    "LOCK_WAIT_S": "cleanup",
    "compact_leftovers": "cleanup",
    "compact_trials": "cleanup",
    "release_after_run": "cleanup",
    "release_dead_locks": "cleanup",
    "remove_dead_writers_temporaries": "cleanup",
    "remove_leftovers": "cleanup",
}

__all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
