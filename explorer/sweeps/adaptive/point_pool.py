"""A pool of long-lived Ray actors that train grid points one at a time, on one Ray session, for a
driver that decides what to run next while the pool runs (the adaptive loop, ``session_runner``).

Each actor (``PointWorker``) is one slot of ``cpus_per_trial`` CPUs and ``gpus_per_trial`` GPUs.
It receives the job (store, references, retries) once, trains the points it is handed with the
same code as a Tune trial's pack (``worker.run_point``: rows written by the worker, retries, a
failed point recorded as such) and keeps the references it read in its process
(``references.cache``), so a reference is read once per actor for the whole run, not once per
round. The driver computes the references the store lacks before the pool starts
(``session_runner``) and hands it those that diverged: their points are recorded ``failed`` with
the reason, as in a sweep. A reference that a worker still has to compute (one removed from the
store meanwhile) is computed there, under the store's lock; one that raises leaves its points
without rows (``broken``: the round is then not finished, and a rerun tries again).

The points are handed out by the pool's own thread (``feed``), not by the driver's calls: each
actor holds up to ``PointPool.DEPTH`` points, and as soon as one finishes the thread hands that
actor the next queued point, whatever the driver is doing. A refit takes longer than a small
point, so a pool fed only when the driver called ``wait`` ran dry during every refit: in a
traced run on the rates grid the two workers stood idle 17 s of the 31 s between the first and
the last trial with no point handed to them, 16 s of it during refits. The driver queues points
(``submit``) and collects the finished ones (``wait``): no Tune run to start, no barrier between
the driver's batches.

Each finished point comes back as a ``PointRecord`` with the worker's start and end times, and
the pool keeps when it handed each point out (``handed_at``), so that a caller (a test, a
benchmark) can see whether a slot stood idle, and whether a point had been handed to it then.
An actor that dies (its node was lost, the process was killed) is replaced and its point queued
again, at most ``LOST_ACTOR_RETRIES`` times per point; a store that became unreachable raises
``StoreUnreachable`` in the driver.
"""
from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from store import StoreError, StoreUnreachable

from ...config.cost_model import trial_memory_bytes
from ...config.planning import Plan, PlannedTrial
from ...config.sections import SweepSpec
from ..ray import apply_torch_threads, largest_node_memory, memory_request, ray
from ..references import load_reference
from ..tracking import LOST_ACTOR_RETRIES, error_text, root_cause, unreachable
from ..worker import Job, run_point


@dataclass(frozen=True)
class PointRecord:
    """One point a worker finished: its status and when (the worker's clock, seconds since the
    epoch), and which worker process ran it."""

    trial_key: str
    status: str
    started: float
    ended: float
    worker_pid: int


class PointWorker:
    """Ray actor: one slot that trains grid points one at a time (``run``), keeping the references
    it read (or computed) in its process for every later point."""

    def __init__(self, job: Job):
        self.job = job
        self.diverged: dict[str, str] = dict(job.reference_errors)  # ref_key -> why the reference diverged
        apply_torch_threads()
        self.node_id = ray.get_runtime_context().get_node_id()

    def reference_error(self, trial: PlannedTrial) -> str | None:
        """Why the trial's reference cannot be had (it diverged), else None with the reference
        in this process's cache (read from the store, or computed and stored once per key).
        Any other error of the reference is raised: the point is not run (it stays without rows)."""
        from trials import ReferenceDiverged  # torch, in the worker only (the driver imports this module)

        if trial.ref_key not in self.diverged:
            try:
                load_reference(self.job.store, self.job.references[trial.ref_key])
            except ReferenceDiverged as exc:
                self.diverged[trial.ref_key] = str(exc)
        return self.diverged.get(trial.ref_key)

    def run(self, trial: PlannedTrial) -> PointRecord | str:
        """Train ``trial`` and write its rows (failed rows naming the reason when its reference
        diverged); the store's own failure comes back as its text."""
        started = time.time()
        try:
            error = self.reference_error(trial)
            job = self.job if error is None else replace(self.job, reference_errors={trial.ref_key: error})
            status = run_point(job, trial, self.node_id)
        except StoreError as exc:
            lost = unreachable(self.job.store, exc)
            if lost is None:
                raise
            return error_text(lost)
        return PointRecord(trial.trial_key, status, started, time.time(), os.getpid())


class PointPool:
    """``slots`` ``PointWorker`` actors on the current Ray session, fed from a queue by the pool's
    thread.

    Each actor holds up to ``DEPTH`` points at a time (Ray runs an actor's calls one after the
    other: the next point waits in the actor). The thread (``feed``) waits on the points handed
    out and hands the next queued point to an actor as soon as one of its points finishes; the
    driver's ``wait`` collects what finished. Every field below is read and written under
    ``lock``.
    """

    DEPTH = 2
    # Points per actor the pool asks to have queued beyond what the actors hold (``room``): the
    # driver queues more only between its refits, and a refit takes as long as several small points.
    AHEAD = 2
    FEED_POLL_S = 0.05  # the longest a point just queued waits for a free actor the thread has not seen

    def __init__(self, spec: SweepSpec, store, the_plan: Plan, slots: int, diverged: dict[str, str] | None = None):
        job = Job(sweep=spec.name, store=store, packs=(), references=the_plan.reference_map(),
                  reference_errors=dict(diverged or {}), rerun=frozenset(), retries=spec.resources.retries,
                  ledger=None)
        self.broken: dict[str, str] = {}  # ref_key -> why its reference raised: its points are not run
        memory = memory_request(max((trial_memory_bytes(t.config) for t in the_plan.trials), default=0),
                                          largest_node_memory())
        self.options = dict(num_cpus=spec.resources.cpus_per_trial, num_gpus=spec.resources.gpus_per_trial,
                            max_restarts=0, **({"memory": memory} if memory else {}))
        self.job_ref = ray.put(job)
        self.actor_class = ray.remote(PointWorker)
        self.actors = [self.new_actor() for _ in range(max(1, slots))]
        self.calls = [0] * len(self.actors)  # points handed to each actor and not yet back
        self.queue: collections.deque[PlannedTrial] = collections.deque()
        self.busy: dict = {}  # future -> (actor index, the actor, trial)
        self.losses: dict[str, int] = {}  # trial key -> actors lost with it
        self.records: list[PointRecord] = []  # every point finished, in the order the thread saw them
        self.handed_at: dict[str, float] = {}  # trial key -> when it was handed to an actor (time.time())
        self.finished: list[PointRecord] = []  # finished, not yet collected by ``wait``
        self.error: BaseException | None = None  # what stopped the thread, raised by ``wait``
        self.closing = False
        self.lock = threading.Condition()
        self.feeder = threading.Thread(target=self.feed, name="point-pool-feeder", daemon=True)
        self.feeder.start()

    @property
    def slots(self) -> int:
        return len(self.actors)

    def new_actor(self):
        return self.actor_class.options(**self.options).remote(self.job_ref)

    def submit(self, trials: Iterable[PlannedTrial]) -> None:
        """Queue ``trials`` (after those already queued) and hand out as many as the actors take."""
        with self.lock:
            self.queue.extend(trials)
            self.dispatch()
            self.lock.notify_all()

    def dispatch(self) -> None:
        """Hand queued points to the actors holding fewer than ``DEPTH`` (under ``lock``)."""
        while self.queue and self.actors:
            index = min(range(len(self.actors)), key=lambda i: self.calls[i])
            if self.calls[index] >= self.DEPTH:
                return
            trial = self.queue.popleft()
            if trial.ref_key in self.broken:  # its reference raised: the point stays without rows
                continue
            future = self.actors[index].run.remote(trial)
            self.busy[future] = (index, self.actors[index], trial)
            self.calls[index] += 1
            self.handed_at[trial.trial_key] = time.time()

    def room(self) -> int:
        """How many more points the pool wants now: each actor holds ``DEPTH`` and ``AHEAD`` more
        per actor wait in the queue (<= 0: it has enough)."""
        with self.lock:
            return sum(self.DEPTH - c for c in self.calls) + self.AHEAD * len(self.actors) - len(self.queue)

    def in_flight(self) -> list[str]:
        """Keys of the points handed to the actors (running or next in line)."""
        with self.lock:
            return [trial.trial_key for _, _, trial in self.busy.values()]

    def queued(self) -> list[str]:
        with self.lock:
            return [t.trial_key for t in self.queue]

    def drop_queued(self) -> list[str]:
        """Forget the queued points that no actor holds yet; returns their keys."""
        with self.lock:
            dropped = [t.trial_key for t in self.queue]
            self.queue.clear()
            return dropped

    def pending(self) -> int:
        """Points queued, handed out, or finished and not yet collected by ``wait``."""
        with self.lock:
            return len(self.queue) + len(self.busy) + len(self.finished)

    def wait(self, timeout: float) -> list[PointRecord]:
        """The points finished since the last call, waiting up to ``timeout`` seconds for one.

        Raises:
            StoreUnreachable: a worker found the store gone.
        """
        with self.lock:
            self.lock.wait_for(lambda: self.finished or self.error is not None or not self.busy, timeout)
            if self.error is not None:
                raise self.error
            done, self.finished = self.finished, []
            return done

    # -- the pool's thread
    def feed(self) -> None:
        """The thread: until ``close``, collect the points that finish and hand out the next ones.
        An error it cannot handle is kept in ``error`` (``wait`` raises it) and ends the thread."""
        while True:
            with self.lock:
                if self.closing:
                    return
                futures = list(self.busy)
                if not futures:
                    self.lock.wait(self.FEED_POLL_S)  # ``submit`` wakes it
                    continue
            try:
                ready, _ = ray.wait(futures, num_returns=1, timeout=self.FEED_POLL_S)
                if ready:
                    ready, _ = ray.wait(futures, num_returns=len(futures), timeout=0)
                with self.lock:
                    if self.closing:
                        return
                    if ready:
                        self.collect(ready)
                        self.dispatch()
                        self.lock.notify_all()
            except BaseException as exc:  # noqa: BLE001 - handed to the driver's thread, raised there
                with self.lock:
                    self.error = exc
                    self.lock.notify_all()
                return

    def collect(self, ready: list) -> None:
        """Take the records of the ``ready`` futures (under ``lock``)."""
        for future in ready:
            index, actor, trial = self.busy.pop(future)
            self.calls[index] -= 1
            try:
                record = ray.get(future)
            except ray.exceptions.RayActorError:  # the actor died with its points: a new one, the points again
                self.lost(index, actor, trial)
                continue
            except ray.exceptions.RayTaskError as exc:
                if isinstance(root_cause(exc), StoreUnreachable):
                    raise StoreUnreachable(error_text(exc)) from None
                self.broken.setdefault(trial.ref_key, error_text(exc))  # the reference raised (a trial's own
                continue  # errors are recorded by run_point): its points are not run
            if isinstance(record, str):
                raise StoreUnreachable(record)
            self.records.append(record)
            self.finished.append(record)

    def lost(self, index: int, actor, trial: PlannedTrial) -> None:
        if self.actors[index] is actor:  # the first of its points to report the death replaces it
            self.actors[index] = self.new_actor()
        self.losses[trial.trial_key] = self.losses.get(trial.trial_key, 0) + 1
        if self.losses[trial.trial_key] <= LOST_ACTOR_RETRIES:
            self.queue.appendleft(trial)

    def close(self) -> None:
        """Stop the thread and every actor (points handed out now are lost: they have no rows, a
        rerun runs them)."""
        with self.lock:
            self.closing = True
            self.lock.notify_all()
        self.feeder.join()
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.busy.clear()
        self.actors.clear()
        self.queue.clear()


__all__ = ["PointPool", "PointRecord", "PointWorker"]
