"""Running a sweep on Ray (``run_sweep``): references first, then packed grid points as Ray Tune
trials. The steps live in their own modules of this package; this one puts them in order.

1. Plan the spec (``config.planning.plan``) and read the statuses of the sweep's trials from the
   store (``Store.trial_statuses``): trials already complete (ok or diverged) are skipped, failed
   ones run again. Nothing left to do -> no Ray at all, not even imported (the modules that
   import Ray are imported in ``_run_on_ray``). Otherwise ``Store.probe()``: a store
   that cannot be listed or written is one error before Ray starts.
2. Start an embedded Ray or join one (``ray_session``), and check that one trial's resources fit
   a node (``resources.check_resources``: a GPU asked of a cluster without GPUs is a
   ``SpecError``, not a hang).
3. Claim the remaining trials (``leases``); trials a live driver of the same sweep holds are left
   to it and waited for, then picked up if still incomplete (its claims lapse after the TTL when
   it died).
4. References (``references.phase``): those the store holds are read on the driver; one Ray task
   per reference key still to compute.
5. Trials: the remaining grid points, packed into Tune trials and run by the workers
   (``trial_phase``, ``worker``): each worker writes its own rows and reports only keys and
   statuses.
6. Cleanup (``cleanup``): claims released, dead workers' locks and temporaries removed, the
   sweep's ``trials`` kind compacted. The summary is read back from the store (``results``): the
   exit code is 0 when every trial ended ok or diverged, 1 otherwise.

A store that becomes unreachable mid-sweep stops the whole run within seconds as one line
(``store_lost``). SIGINT and SIGTERM stop the run at any point (``interrupts.SignalGuard``: the
handler records the signal, the driver checks it while planning, between polls of the reference
phase and at every step of Tune's loop, never raising inside Ray's compiled code): Ray is shut
down, claims and the reference locks of dead workers released, temporaries removed, and the
summary (what really ran, how to resume) comes with exit code 130 or 143. Credentials stay out
of Ray's runtime envs (``runtime_env``); each worker task sets torch's threads (``threads``).
"""
from __future__ import annotations

import datetime as dt
import os
import signal
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

from store import FINAL_STATUSES, SCHEMA_VERSION, Store

from ...config.env_settings import check_environment
from ...config.planning import Plan, PlannedTrial, plan
from ...config.sections import SweepSpec
from ...store_access import open_store
from ...signals import SignalGuard, SweepInterrupted, resume_command
from ..ray import SESSION_ADDRESS
from ..tracking import (Leases, Progress, RunLog, SweepResult, compact_leftovers, compact_trials, count_started_since,
                        count_statuses, driver_ttl_s, note_other_drivers, release_after_run,
                        remove_dead_writers_temporaries, stop_when_store_lost, wait_for)
from .dry_run import left_to_run, reference_cached

PLANNING_NOTE_POINTS = 10_000  # a grid this large takes a second or more to plan: say so first


@dataclass(frozen=True)
class _Launch:
    """Where and how wide the sweep runs (``run_sweep``'s arguments)."""

    address: str | None
    max_concurrent: int | None
    num_cpus: int | None
    lease_ttl_s: float | None
    progress: bool  # show the progress line
    stream: object  # where it goes (None: standard error)
    # the run's record (RunLog.start), written once the run is past its refusals: a sweep refused
    # (resources no node has) leaves nothing in the store
    begin: Callable[[], None] = lambda: None


def run_sweep(
    spec: SweepSpec,
    store: Store | str = "results",
    address: str | None = None,
    max_concurrent: int | None = None,
    progress: bool = True,
    num_cpus: int | None = None,
    stream=None,
    lease_ttl_s: float | None = None,
    only_keys: Collection[str] | None = None,
) -> SweepResult:
    """Run every trial of ``spec`` that the store does not have yet (see the module docstring).

    Args:
        spec: a validated spec.
        store: a ``Store`` or its URI (a directory or ``s3://bucket/prefix``).
        address: None for an embedded Ray, or ``"auto"`` / ``"ray://host:port"`` to join a
            cluster; ignored when this process already has Ray initialized.
        max_concurrent: at most this many Tune trials at once (default: the spec's, else what fits).
        progress: show the progress line (on ``stream``, default standard error).
        num_cpus: CPUs of an embedded Ray (default: all).
        lease_ttl_s: how long this driver's claims live without renewal (default
            ``$EXPLORER_LEASE_TTL_S``, else ``store.heartbeat.DEFAULT_TTL_S``): another driver of the
            same sweep takes over the trials of a dead driver after that long.
        only_keys: run (and count in the result) only the planned trials with these keys: one
            round of an adaptive sweep (``TuneRunner``). None: every trial.

    Returns:
        A ``SweepResult``; its ``exit_code`` is 0 when every trial ended ok or diverged, 130 or
        143 when SIGINT or SIGTERM stopped it (in the main thread).

    Raises:
        SpecError: a grid point the trials refuse, or resources no node can provide.
        ClusterError: Ray cannot be started or reached.
        StoreError: the store cannot be listed or written (checked before Ray starts).
        StoreUnreachable: the store became unreachable mid-sweep (one line: the store, the
            filesystem's error, how to resume); the run stopped as soon as a worker saw it.
    """
    check_environment()  # a bad EXPLORER_* variable is one line before any work, not a worker's traceback
    started = time.monotonic()
    store = open_store(store)
    with SignalGuard(stops_store_waits=True) as guard:
        try:
            the_plan = _plan(spec, guard, progress, stream)
        except SweepInterrupted as exc:  # planning 10^5 trials takes seconds: nothing ran, nothing to clean
            return SweepResult(name=spec.name, store=store.uri, total=0, skipped=0, ran=0, planned=False,
                               interrupted=exc.signum, resume=resume_command(), wall_s=time.monotonic() - started)
        log = RunLog(store, spec, the_plan, only_keys, driver_ttl_s(lease_ttl_s))
        launch = _Launch(address, max_concurrent, num_cpus, lease_ttl_s, progress, stream, begin=log.start)
        if only_keys is not None:
            the_plan = replace(the_plan, trials=tuple(t for t in the_plan.trials if t.trial_key in frozenset(only_keys)))
        try:
            result = _run_plan(spec, store, the_plan, guard, launch)
        except SweepInterrupted as exc:  # in a wait for the store outside the Ray phase (interrupts)
            return SweepResult(name=spec.name, store=store.uri, total=len(the_plan.trials), skipped=0, ran=0,
                               interrupted=exc.signum, resume=resume_command(), wall_s=time.monotonic() - started)
        finally:
            log.end()
        if result.interrupted is None and guard.signum is not None:  # a signal during compaction or the last reads
            result.interrupted = guard.signum
        result.resume = resume_command() if result.interrupted is not None else None
    result.wall_s = time.monotonic() - started
    return result


class TuneRunner:
    """The adaptive loop's ``TrialRunner`` on Ray Tune: ``runner(spec, keys)`` is a ``run_sweep``
    of those keys (``only_keys``), with its own Ray session, leases and cleanup each call.
    ``SessionRunner`` keeps one Ray session for every round instead (``explorer.sweeps.adaptive``)."""

    def __init__(self, store: Store | str = "results", address: str | None = None, max_concurrent: int | None = None,
                 progress: bool = True, num_cpus: int | None = None):
        self.store, self.address, self.max_concurrent = store, address, max_concurrent
        self.progress, self.num_cpus = progress, num_cpus

    def __call__(self, spec: SweepSpec, keys: frozenset[str]) -> SweepResult:
        return run_sweep(spec, self.store, address=self.address, max_concurrent=self.max_concurrent,
                         progress=self.progress, num_cpus=self.num_cpus, only_keys=keys)


def _plan(spec: SweepSpec, guard: SignalGuard, progress: bool, stream) -> Plan:
    """The plan of ``spec``, all of it (``run_sweep`` keeps the trials with ``only_keys`` when
    given, after the run's record took the whole grid); a signal while planning raises ``SweepInterrupted``."""
    points = spec.grid_points()
    if progress and points >= PLANNING_NOTE_POINTS:  # seconds of silence otherwise
        print(f"planning: {points:,} trials", file=stream or sys.stderr, flush=True)
    return plan(spec, SCHEMA_VERSION, check=guard.check)


def _run_plan(spec: SweepSpec, store: Store, the_plan: Plan, guard: SignalGuard, launch: _Launch) -> SweepResult:
    """``run_sweep`` once planned: run what the store lacks, then read the summary back."""
    started_at = dt.datetime.now(dt.timezone.utc)
    known = store.trial_statuses(spec.name)
    planned_keys = {t.trial_key for t in the_plan.trials}
    todo = [t for t in the_plan.trials if known.get(t.trial_key) not in FINAL_STATUSES]
    result = SweepResult(name=spec.name, store=store.uri, total=len(the_plan.trials),
                         skipped=len(the_plan.trials) - len(todo), ran=0, stale=len(set(known) - planned_keys))
    bar = Progress(total=len(todo), stream=launch.stream, enabled=launch.progress)
    if todo and guard.signum is None:
        store.probe()  # an unreachable or read-only store is one line, before Ray starts
        _first_estimate(the_plan, todo, store, launch, bar)
        claimed = _run_on_ray(spec, store, the_plan, todo, known, guard, launch, result, bar)
        bar.finish()
        if result.interrupted is None:
            compact_trials(store, spec.name, bar)
        known = store.trial_statuses(spec.name)
        result.ran = count_started_since(store, spec.name, claimed, started_at)
    elif todo:  # the signal came while the store was read: nothing started
        result.interrupted = guard.signum
    else:
        launch.begin()  # a run with nothing to run is a run: its grid says which trials are left over
        remove_dead_writers_temporaries(store, spec.name)
        compact_leftovers(store, spec.name, bar)  # what a killed run or compaction left unmerged
    count_statuses(result, store, the_plan, known)
    return result


def _first_estimate(the_plan: Plan, todo: list[PlannedTrial], store: Store, launch: _Launch, bar: Progress) -> None:
    """Before Ray starts: what is left (complete trials and cached references not counted) and
    its price with Ray's start, as the dry run says it (on this machine only: a cluster's CPUs are
    not known yet)."""
    left = {t.trial_key for t in todo}
    cached = {ref for ref in {t.ref_key for t in todo} if reference_cached(store, ref)}
    cpus = (launch.num_cpus or os.cpu_count()) if launch.address in (None, SESSION_ADDRESS) else None
    priced = left_to_run(the_plan, {t.trial_key for t in the_plan.trials} - left, cached, cpus)
    for line in priced.lines:
        bar.message(line)
    bar.expect(priced.seconds)


def _run_on_ray(spec: SweepSpec, store: Store, the_plan: Plan, todo: list[PlannedTrial], known: dict[str, str],
                guard: SignalGuard, launch: _Launch, result: SweepResult, bar: Progress) -> set[str]:
    """Start or join Ray, run the trials this driver can claim (waiting for those of other
    drivers), and clean up whatever happens; returns the keys this driver claimed."""
    # Ray (and torch, with the workers' modules) only here, once trials are known to run: a
    # complete sweep prints its summary without either (``launch.sweep`` imports this module).
    from ..ray import check_resources, ray_session

    leases = Leases(store, spec.name, driver_ttl_s(launch.lease_ttl_s))
    claimed: set[str] = set()
    session_stopping: list[bool] = []

    def session_stops() -> None:  # `explorer ray stop` began: stop as on SIGTERM (session_drivers)
        session_stopping.append(True)
        if not guard.fired:
            guard.fired.append(signal.SIGTERM)
    with stop_when_store_lost(bar):
        try:
            # a signal while Ray's modules were imported or the estimate printed: stop before
            # Ray starts, whose start cannot be interrupted
            guard.check()
            # Ray and the resource check first: a trial no node can run is refused before
            # anything (a claim included) is written.
            with ray_session(launch.address, num_cpus=launch.num_cpus, say=bar.message,
                             on_session_stop=session_stops) as kind:
                guard.arm()
                guard.check()  # a signal during Ray's start: stop now, before the resource check
                if kind == "session":
                    bar.message("Ray: joined the session Ray (`explorer ray status`; `explorer ray stop` ends it)")
                slots = check_resources(spec)
                launch.begin()
                limit = launch.max_concurrent or spec.resources.max_concurrent
                _claim_and_run(spec, store, the_plan, todo, known, guard, leases, claimed, result, bar,
                               min(slots, limit) if limit else slots, limit)
                guard.check()  # a signal in the last wait of a Ray call
        except SweepInterrupted as exc:
            result.interrupted = exc.signum
            bar.message("the session Ray is being stopped (`explorer ray stop`): this sweep stops, its claims "
                        "released" if session_stopping else f"{exc}: stopping (its Ray, claims and locks are released)")
        finally:
            guard.arm()  # Ray's shutdown may leave its own SIGTERM handler: the cleanup and compaction are ours
            release_after_run(store, spec.name, the_plan, leases, claimed, result.interrupted is not None)
    return claimed


def _claim_and_run(spec, store, the_plan, todo, known, guard, leases, claimed, result, bar, slots, limit) -> None:
    """Until nothing is left: claim what no other driver holds, run its references and trials,
    release it, then wait for the other drivers' claims and take over what they left."""
    from ..references import run_references
    from .trial_phase import RunContext, run_trials_again_when_lost

    rerun = frozenset(t.trial_key for t in todo if t.trial_key in known)
    while todo:
        guard.check()
        mine = leases.claim([t.trial_key for t in todo])
        claimed |= mine
        theirs = {t.trial_key for t in todo if t.trial_key not in mine}
        note_other_drivers(leases, theirs, mine, result, bar)
        batch = [t for t in todo if t.trial_key in mine]
        if batch:
            diverged, broken = run_references(spec, store, the_plan, batch, bar, guard.check)
            result.reference_errors.update(broken)
            runnable = [t for t in batch if t.ref_key not in broken]
            if runnable:
                run = RunContext(spec, store, the_plan, diverged, rerun, slots, limit, bar, guard.check)
                result.lost += run_trials_again_when_lost(run, runnable)
            leases.release({t.trial_key for t in batch})
        if not theirs:
            break
        wait_for(leases, theirs, guard.check)
        known = store.trial_statuses(spec.name)
        todo = [t for t in todo if t.trial_key in theirs and known.get(t.trial_key) not in FINAL_STATUSES]
