"""The adaptive loop's runner on Ray: one Ray session and one pool of workers for every round.

``SessionRunner`` starts (or joins) Ray at the first trials it is given and keeps it, with one
``point_pool.PointPool`` of long-lived workers, until the loop ends. References the store lacks are
computed first (``references.phase``); each worker reads a reference the first time one of its
points needs it and keeps it for the rest of the run. ``submit`` queues trial keys and returns at once; the loop then
``wait``s for finished keys and may queue the next round while the last points of a round run,
so no worker waits for the refit (``lookahead``). Compared with a ``run_sweep`` per round, a
round costs no Tune start-up, no reference reads and no leases.

An adaptive sweep takes no claims: run one driver per adaptive sweep (a second one on the same
sweep would write the same rounds). ``close`` stops the workers (points in flight have no rows
and are run again on resume), removes what interrupted workers left (reference locks,
temporaries, half-written trials) and compacts the sweep's ``trials`` rows.
"""
from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterable

from store import SCHEMA_VERSION, Store, StoreError

from ...config.planning import plan
from ...config.sections import SweepSpec
from ...signals import SIGNAL_POLL_S, SignalGuard
from ..ray import check_resources, ray_session
from ..references import run_references
from ..tracking import LOCK_WAIT_S, Progress, compact_trials, release_dead_locks, remove_leftovers
from .point_pool import PointPool, PointRecord


class SessionRunner:
    """An asynchronous runner of the adaptive loop, a ``runners.RoundRunner``: ``submit``,
    ``wait``, ``pending``, ``room``, ``drop_queued``, ``close``."""

    lookahead = True  # the loop may queue a round before the previous one is done

    def __init__(self, spec: SweepSpec, store: Store, address: str | None = None, max_concurrent: int | None = None,
                 num_cpus: int | None = None, progress: bool = True, stream=None):
        self.spec, self.store = spec, store
        self.address, self.max_concurrent, self.num_cpus = address, max_concurrent, num_cpus
        self.bar = Progress(total=0, stream=stream or sys.stderr, enabled=progress)
        self.stack = contextlib.ExitStack()
        self.guard: SignalGuard | None = None
        self.pool: PointPool | None = None
        self.the_plan = plan(spec, SCHEMA_VERSION)
        self.trials = {t.trial_key: t for t in self.the_plan.trials}
        self.told: set[str] = set()  # broken references already reported
        self.finished: list[PointRecord] = []  # the records of a closed pool
        self.finished_handed: dict[str, float] = {}  # and when it handed each point out
        self.interrupted: int | None = None  # signals reach the loop through the shared SignalGuard

    def __enter__(self) -> SessionRunner:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    @property
    def records(self) -> list[PointRecord]:
        """Every point the workers finished, with their start and end times."""
        return list(self.pool.records) if self.pool else list(self.finished)

    @property
    def handed_at(self) -> dict[str, float]:
        """When each point was handed to a worker (``time.time()``; the last pool's, once closed)."""
        return dict(self.pool.handed_at) if self.pool else dict(self.finished_handed)

    def start(self) -> None:
        """Ray, the resource check, the references the store lacks, then the pool, once.

        References missing from the store are computed first, one Ray task each with its memory
        request (``references.phase``), before the workers take the slots; those already stored
        are read by each worker when one of its points first needs them.
        """
        if self.pool is not None:
            return
        self.guard = self.stack.enter_context(SignalGuard())  # shares the loop's record of a signal
        self.stack.enter_context(ray_session(self.address, num_cpus=self.num_cpus, on_session_stop=self._session_stops))
        self.guard.arm()  # Ray's core worker replaces the SIGTERM handler: the driver's again
        slots = check_resources(self.spec)
        limit = self.max_concurrent or self.spec.resources.max_concurrent
        missing = {r.ref_key for r in self.the_plan.references if not self.store.has_reference(r.ref_key)}
        diverged, broken = run_references(self.spec, self.store, self.the_plan,
                                          [t for t in self.the_plan.trials if t.ref_key in missing], self.bar,
                                          self.guard.check)
        self.pool = PointPool(self.spec, self.store, self.the_plan, min(slots, limit) if limit else slots, diverged)
        self.pool.broken.update(broken)
        self.told |= set(broken)  # the reference phase said so

    def _session_stops(self) -> None:
        """`explorer ray stop` began (``session_drivers``): the loop stops as on SIGTERM."""
        if self.guard is not None and not self.guard.fired:
            self.bar.message("the session Ray is being stopped (`explorer ray stop`): this sweep stops")
            self.guard.fired.append(signal.SIGTERM)

    def submit(self, keys: Iterable[str]) -> None:
        """Queue the trials of ``keys`` (the first call starts Ray and the workers).

        Raises:
            SweepInterrupted: a signal while the first call computed references.
        """
        todo = [self.trials[k] for k in keys if k in self.trials]
        if todo:
            self.start()
            self.pool.submit(todo)

    def wait(self, timeout: float = SIGNAL_POLL_S) -> list[str]:
        """Keys of the points finished within ``timeout`` seconds (their rows are in the store)."""
        if self.pool is None:
            return []
        done = [r.trial_key for r in self.pool.wait(timeout)]
        for ref_key, why in self.pool.broken.items():
            if ref_key not in self.told:
                self.told.add(ref_key)
                self.bar.message(f"reference {ref_key} failed, its trials are not run: {why}")
        return done

    def pending(self) -> int:
        return self.pool.pending() if self.pool else 0

    def room(self) -> int:
        """How many more points the pool wants queued now (``PointPool.room``)."""
        return self.pool.room() if self.pool else 0

    def drop_queued(self) -> list[str]:
        """Forget the queued points that have not started; returns their keys."""
        return self.pool.drop_queued() if self.pool else []

    def close(self, interrupted: bool = False) -> None:
        """Stop the workers and Ray, clean up after them (``interrupted``: points may be in flight)."""
        if self.pool is None:
            self.stack.close()
            return
        in_flight = self.pool.in_flight()
        self.finished, self.finished_handed = list(self.pool.records), dict(self.pool.handed_at)
        self.pool.close()
        self.pool = None
        try:
            release_dead_locks(self.store, self.the_plan, wait_s=LOCK_WAIT_S if in_flight else 0.0)
            remove_leftovers(self.store, self.spec.name)
            self.store.remove_unfinished(self.spec.name, in_flight)
            if not interrupted:
                compact_trials(self.store, self.spec.name, self.bar)
        except StoreError:  # the store is gone (its error is on its way out): the next run cleans up
            pass
        finally:
            self.stack.close()


__all__ = ["SessionRunner"]
