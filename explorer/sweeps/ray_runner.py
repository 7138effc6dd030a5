"""Running a sweep on Ray: references first, then packed grid points as Ray Tune trials.

The only module that imports Ray (named for it: ``explorer.sweep`` is the public function of
``explorer.api``). The flow of ``run_sweep``:

1. Plan the spec (``planning.plan``) and read the statuses of the sweep's trials from the store
   (``Store.trial_statuses``): trials already complete (ok or diverged) are skipped, failed
   ones run again. Nothing left to do -> no Ray at all. Otherwise ``Store.probe()``: a store
   that cannot be listed or written is one error before Ray starts.
2. Start an embedded Ray (no address: dashboard off, loopback only, session files in a private
   0700 folder, ``ray.init`` called from an empty folder so that no ``./store`` shadows the
   packages in the workers, shut down on exit) or join one (``address="auto"`` or
   ``"ray://host:port"``), and check that one trial's resources fit a node (a GPU asked of a
   cluster without GPUs is a ``SpecError``, not a hang).
3. Claim the remaining trials (``_Leases``: ``Store.claim``, renewed by a thread, released at the
   end); trials a live driver of the same sweep holds are left to it and waited for, then picked
   up if still incomplete (its claims lapse after the TTL when it died).
4. References: one Ray task per reference key still needed; each worker computes it or finds it
   through ``Store.get_or_compute_reference`` (the store caches it for every later trial). A
   reference that raises stops its group (its trials are not scheduled).
5. Trials: the remaining grid points are packed into Tune trials (``_pack``), several tiny points
   per Tune trial so that Tune's fixed cost per trial is spread over them, and run by
   ``ray.tune.Tuner`` with ``reuse_actors``, fractional GPUs allowed. Each worker trains its
   points, writes its own rows to the store and reports only keys and statuses: the driver never
   sees row data. A point that raises is retried ``retries`` times in the worker, then written
   with status ``failed`` and its error; diverged points are written as they are. A lost worker
   or node fails its Tune trial, which Tune reruns elsewhere; the rerun skips the points the
   store already has (``_Ledger`` counts attempts, so first attempts skip the listing).
6. Temporaries left by lost workers are removed and the sweep's ``trials`` kind is compacted
   (one file, so that the next start's status lookup reads one file instead of one per trial;
   metrics stay as they are: ``explorer compact`` merges those). The summary is read back from
   the store: the exit code is 0 when every trial ended ok or diverged, 1 otherwise.

A store that becomes unreachable mid-sweep (an S3 endpoint that died) stops the whole run within
seconds: the worker whose write or read failed probes the store once (``Store.probe()``) and, if
that fails too, reports ``_STORE_LOST`` instead of raising (which Tune would retry on every pack);
the driver then stops every Tune trial (``_StopWhenStoreLost``; a reference task raising
``StoreUnreachable`` does the same), shuts Ray down and raises one ``StoreUnreachable`` naming the
store, the filesystem's error and how to resume (``_stop_when_store_lost``). Trials already
written stay; claims lapse after their TTL.

SIGINT and SIGTERM stop the run at any point (``interrupts.SignalGuard``: the handler records the
signal, the driver checks it while planning, between polls of the reference phase and at every
step of Tune's loop, never raising inside Ray's compiled code): Ray is shut down, claims and the
reference locks of dead workers released, temporaries removed, and the summary (what really ran,
how to resume) comes with exit code 130 or 143. Credentials stay out of Ray's runtime envs
(``_no_secrets_in_runtime_env``); each worker task sets torch's threads (``apply_torch_threads``).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import heapq
import json
import logging
import math
import os
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace

# Ray decides, once, when it is first imported, which address the nodes it starts advertise and
# bind: on Linux the machine's routable one (so that other machines can join), on macOS and
# Windows the loopback one. Its documented switch for that is the environment variable
# RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER ("0": single machine, loopback). An embedded Ray must listen
# on loopback only, so Ray is imported here with the switch off unless the user set it. Joining a
# cluster still works (a driver takes the address of the node it connects to), and the switch is
# not left in the environment of the processes this one starts later.
_SINGLE_MACHINE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_RAY_IMPORTED_BEFORE = "ray" in sys.modules
with _environment({_SINGLE_MACHINE: os.environ.get(_SINGLE_MACHINE, "0")}):
    import ray
    from ray import tune
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from store import COLUMNS, FINAL_STATUSES, SCHEMA_VERSION, Store, StoreError, StoreUnreachable, trial_row_from_metrics
from trials import (Reference, ReferenceDiverged, compute_reference, reference_from_trial, release_spares,
                    resolve_device, train_trial)

from ..errors import ClusterError, spec_error
from ..config.env_settings import check_environment, setting
from ..config.estimate import check_fits_memory, reference_memory_bytes, trial_memory_bytes
from .interrupts import SignalGuard, SweepInterrupted, resume_command
from ..options import open_store
from ..config.planning import Plan, PlannedReference, PlannedTrial, plan
from .progress import Progress
from .reference_screen import validator
from ..config.spec import SweepSpec

_ERROR_CHARS = 2000  # longest error message stored with a failed trial
_REPORT_EVERY_S = 0.5  # a worker reports progress at most this often (each report is a driver round trip)
_PACK_TARGET_S = 2.0  # aim for Tune trials of about this much estimated compute
_PACKS_PER_SLOT = 4  # at least this many Tune trials per concurrent slot, for balance and progress
_TUNE_ENV = {
    "RAY_AIR_NEW_OUTPUT": "0",  # the legacy output honours verbose=0 (the new one always prints a header)
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",  # no result.json/CSV/TensorBoard per trial: the store has it all
    "TUNE_GLOBAL_CHECKPOINT_S": "1000000",  # resuming is the store's job, not Tune's experiment state
    "TUNE_WARN_INSUFFICENT_RESOURCE_THRESHOLD_S": "0",
    "TUNE_DISABLE_SIGINT_HANDLER": "1",  # SIGINT and SIGTERM are the driver's (``_SignalGuard``)
}
THREADS_ENV = "EXPLORER_TORCH_THREADS"  # torch threads of each worker task (default: the CPUs Ray gave it)
LEASE_TTL_ENV = "EXPLORER_LEASE_TTL_S"  # how long a driver's claim on its trials lives without renewal
_WAIT_POLL_S = 2.0  # how often a driver waiting on another driver's claims looks again
PLANNING_NOTE_POINTS = 10_000  # a grid this large takes a second or more to plan: say so first
_SIGNAL_POLL_S = 0.25  # how often a driver blocked on Ray looks whether a signal came (interrupts.py)


# --- results ---------------------------------------------------------------------------------


@dataclass
class SweepResult:
    """What a sweep run did and where its trials stand (read back from the store)."""

    name: str
    store: str
    total: int  # trials (grid points) in the spec
    skipped: int  # already complete (ok or diverged) before this run
    ran: int  # trials this run wrote (read back from the store: what really ran)
    ok: int = 0
    diverged: int = 0
    failed: int = 0
    missing: int = 0  # planned but with no rows: a worker lost for good, a store write failed, an interruption
    wall_s: float = 0.0
    failures: list[str] = field(default_factory=list)  # a few "L=.. M=..: error" lines
    stale: int = 0  # trials of this sweep in the store that the spec no longer defines
    lost: list[str] = field(default_factory=list)  # why Tune trials (packs of points) failed for good
    interrupted: int | None = None  # the signal (SIGINT, SIGTERM) that stopped this run
    resume: str | None = None  # the command that resumes it
    elsewhere: dict[str, int] = field(default_factory=dict)  # owner (host:pid) -> trials it ran or holds
    reference_errors: dict[str, str] = field(default_factory=dict)  # ref_key -> why it is unavailable
    planned: bool = True  # False: a signal stopped the run while it was planning (total is then unknown)

    @property
    def exit_code(self) -> int:
        """0 when every trial ended ok or diverged, 1 when some failed or are missing; 128 + the
        signal number when a signal stopped the run (130 for SIGINT, 143 for SIGTERM)."""
        if self.interrupted is not None:
            return 128 + int(self.interrupted)
        return 0 if self.failed == 0 and self.missing == 0 else 1

    def summary(self) -> str:
        """A few lines for the terminal."""
        counts = f"{self.ok} ok, {self.diverged} diverged, {self.failed} failed"
        if self.missing:
            counts += f", {self.missing} missing"
        run = ("nothing to run" if self.skipped == self.total and not self.ran
               else f"{self.ran} run in {self.wall_s:.1f}s of wall time, Ray's start and the references included")
        lines = [f"sweep {self.name}: {self.total} trials: {counts} ({self.skipped} already complete, {run})"
                 if self.planned else f"sweep {self.name}: stopped while planning its trials; nothing ran",
                 f"store: {self.store}"]
        for owner, n in self.elsewhere.items():
            lines.append(f"{n} claimed by another driver ({owner})")
        lines += [f"failed {line}" for line in self.failures]
        for key, error in list(self.reference_errors.items())[:3]:
            lines.append(f"reference {key} unavailable: {error}")
        if self.interrupted is not None:
            name = signal.Signals(self.interrupted).name
            again = f": {self.resume}" if self.resume else ""
            what = f"{self.missing} trials not run" if self.planned else "no trial ran"
            lines.append(f"interrupted by {name}: {what}; to resume, run the same command again{again}")
        elif self.missing:
            why = f" (first cause: {self.lost[0]})" if self.lost else ""
            lines.append(f"{self.missing} trials have no rows{why}: run the same command again to retry them")
        if self.stale:
            lines.append(f"note: the store holds {self.stale} other trials of sweep {self.name!r} that this spec does "
                         "not define (an earlier version of it); they stay in the store and in its queries")
        return "\n".join(lines)


# --- packing ---------------------------------------------------------------------------------


# A Tune trial whose actor died (its node was lost, or the process was killed) is restarted this
# many times. A pack skips its points that already have rows, so a restart costs only the point in
# flight; while a node is being removed Ray can still place the restart there, and three quick
# deaths made a trial "missing" in the two-node test under load.
LOST_ACTOR_RETRIES = 10


# Trials and references estimated below this ask Ray for no memory (the worker process's own
# memory is not requested either): tiny sweeps schedule as before, by CPUs alone.
MEMORY_REQUEST_FLOOR = 256 * 2**20


def memory_request(need_bytes: int, largest_node_bytes: float) -> int:
    """Bytes of Ray's ``memory`` resource to request for a task estimated at ``need_bytes``: 0
    below ``MEMORY_REQUEST_FLOOR``, else the next power of two (Tune trials of similar size then
    share one resource shape and their actors can be reused), never more than the largest node's
    memory resource (a request no node can grant would wait forever; ``check_resources`` has
    already refused a point that does not fit there)."""
    if need_bytes < MEMORY_REQUEST_FLOOR or largest_node_bytes <= 0:  # no node reports memory: ask none
        return 0
    return int(min(2 ** math.ceil(math.log2(need_bytes)), max(largest_node_bytes, need_bytes)))


def largest_node_memory() -> float:
    """The largest ``memory`` resource of a live Ray node (0 when Ray reports none)."""
    return max((n.get("Resources", {}).get("memory", 0) for n in ray.nodes() if n.get("Alive")), default=0)


def _reference_need(planned: PlannedReference) -> int:
    if planned.kind == "joint_limit":  # a deterministic low-dimensional solve: small
        return 0
    return reference_memory_bytes(planned.config)


def estimated_seconds(trial: PlannedTrial) -> float:
    """Rough single-core compute time of one grid point (all seeds), for packing only.

    Fitted to ``train_trial`` timings on a 2-core CPU in float64 (within about 2x from
    L, M, D = 2, 1, 4 to 256, 1024, 64): a fixed cost, the Python loop over layers and steps
    (~50 us per layer-step) and the batched tensor work (~12 ns per unit coordinate, sample,
    seed and step; memory-bound at these sizes).
    """
    c = trial.config
    steps = c.steps + 1
    return 3e-3 + 5e-5 * c.L * steps + 1.2e-8 * c.L * c.M * c.D * c.problem.samples * len(c.seeds) * steps


def pack(trials: Sequence[PlannedTrial], slots: int, points_per_trial: int | str = "auto") -> list[list[PlannedTrial]]:
    """Group grid points into Tune trials.

    Args:
        trials: the points to run.
        slots: how many Tune trials run at once.
        points_per_trial: ``"auto"``: as many packs as needed for about ``_PACK_TARGET_S`` of
            estimated compute each, but at least ``_PACKS_PER_SLOT`` per slot (and never more
            packs than points), balanced by longest-first assignment; an integer: fixed-size
            packs in plan order.

    Returns:
        Packs, largest estimated cost first (so the longest ones start first).
    """
    if not trials:
        return []
    if points_per_trial != "auto":
        size = int(points_per_trial)
        return [list(trials[i:i + size]) for i in range(0, len(trials), size)]
    costs = [estimated_seconds(t) for t in trials]
    n_packs = min(len(trials), max(math.ceil(sum(costs) / _PACK_TARGET_S), _PACKS_PER_SLOT * max(1, slots)))
    heap = [(0.0, i) for i in range(n_packs)]
    packs: list[list[PlannedTrial]] = [[] for _ in range(n_packs)]
    loads = [0.0] * n_packs
    for index in sorted(range(len(trials)), key=lambda i: -costs[i]):
        load, p = heapq.heappop(heap)
        packs[p].append(trials[index])
        loads[p] = load + costs[index]
        heapq.heappush(heap, (loads[p], p))
    order = sorted(range(n_packs), key=lambda p: -loads[p])
    return [packs[p] for p in order if packs[p]]


# --- what runs on the workers ----------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    """Everything a worker needs, shipped once through the object store (``tune.with_parameters``)."""

    sweep: str
    store: Store
    packs: tuple[tuple[PlannedTrial, ...], ...]
    references: dict  # ref_key -> PlannedReference
    reference_errors: dict  # ref_key -> why the reference could not be computed
    rerun: frozenset  # keys recorded failed before this run: a restarted pack must not skip them
    retries: int
    ledger: object  # _Ledger actor handle


class _Ledger:
    """Counts the attempts of each pack, so that only a restarted pack lists the store."""

    def __init__(self):
        self.attempts: dict[int, int] = {}

    def attempt(self, pack_id: int) -> int:
        n = self.attempts.get(pack_id, 0)
        self.attempts[pack_id] = n + 1
        return n


_REFERENCE_CACHE: dict[str, Reference] = {}  # per worker process: reused actors keep it warm
_REFERENCE_CACHE_SIZE = 64


def _compute(planned: PlannedReference) -> Reference:
    # A worker keeps its last trial's tensors for the next trial of that shape (trials.train);
    # a reference is not one, and its memory estimate does not count them.
    release_spares()
    if planned.kind == "joint_limit":  # trials/joint_limit.py: exact, identity activation
        from trials import compute_joint_limit
        return compute_joint_limit(planned.config)
    if planned.kind == "mean_ode":
        return compute_reference(planned.config)
    return reference_from_trial(planned.config)


def _load_reference(store: Store, planned: PlannedReference) -> Reference:
    ref = _REFERENCE_CACHE.get(planned.ref_key)
    if ref is None:
        arrays, meta = store.get_or_compute_reference(planned.ref_key, lambda: _compute(planned).to_record(),
                                                      validate=validator(planned.ref_key))
        ref = Reference.from_record(arrays, meta)
        if len(_REFERENCE_CACHE) >= _REFERENCE_CACHE_SIZE:
            _REFERENCE_CACHE.pop(next(iter(_REFERENCE_CACHE)))
        _REFERENCE_CACHE[planned.ref_key] = ref
    return ref


def apply_torch_threads() -> int:
    """Give torch, in this worker, as many intra-op threads as the CPUs Ray assigned to the task or
    actor (at least 1), or ``$EXPLORER_TORCH_THREADS`` when set; returns that count.

    torch's default (every core of the machine in every worker) oversubscribes a node that runs
    several trials at once: a 512 x 256 reference took 36.6 s with 2 threads and 2.5 s with 1 on
    a busy 2-core machine.
    """
    import torch

    n = setting(THREADS_ENV) or 0  # bounded (env_settings); checked by the driver before Ray starts
    if n <= 0:
        cpus = 1.0
        if ray.is_initialized():
            cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
        n = max(1, math.floor(cpus + 1e-9))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def _reference_task(store: Store, planned: PlannedReference) -> tuple[str | None, int, float]:
    """Compute (or find) one reference in the store; return (why it diverged or None, the torch
    threads it ran with, seconds). Any other error is raised (its group is not scheduled)."""
    threads = apply_torch_threads()
    t0 = time.perf_counter()
    try:
        _load_reference(store, planned)
    except ReferenceDiverged as exc:
        return str(exc), threads, time.perf_counter() - t0
    except StoreError as exc:
        raise _unreachable(store, exc) or exc from None
    return None, threads, time.perf_counter() - t0


def _unreachable(store: Store, exc: StoreError) -> StoreUnreachable | None:
    """After a store error in a worker: the store's own failure (``Store.probe()``, once), or
    None when the store answers and the error was about one file or one moment."""
    if isinstance(exc, StoreUnreachable):
        return exc
    try:
        store.probe()
    except StoreUnreachable as lost:
        return lost
    return None


def root_cause(exc: BaseException) -> BaseException:
    """The user's exception inside Ray's wrappers (``RayTaskError(StoreError)``, ``TuneError``...)."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "cause", None)
        if isinstance(inner, BaseException):
            exc = inner
            continue
        if isinstance(exc, ray.exceptions.RayError) and isinstance(exc.__cause__, BaseException):
            exc = exc.__cause__
            continue
        break
    return exc


def _error_text(exc: BaseException) -> str:
    exc = root_cause(exc)
    message = str(exc).strip()
    if isinstance(exc, StoreError):  # its message says it all
        text = message or type(exc).__name__
    else:
        text = f"{type(exc).__name__}: {message}".strip()
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 3] + "..."


_FLOAT_METRICS = tuple(c.name for c in COLUMNS["metrics"] if str(c.type) == "double")


def failed_rows(trial: PlannedTrial, ref_kind: str, error: str, wall_s: float) -> list[dict]:
    """The rows of a failed trial: one per seed at step 0, NaN metrics, status failed, the error."""
    cfg = trial.config
    base = dict(cfg.columns(), ref_key=trial.ref_key, ref_kind=ref_kind,
                device=resolve_device("auto").type if cfg.device == "auto" else cfg.device)
    rows = []
    for seed in cfg.seeds:
        row = dict(base, seed=seed, step=0, status="failed", error=error, flags="")
        row.update({name: math.nan for name in _FLOAT_METRICS if name not in base})
        row["wall_s"] = wall_s
        rows.append(row)
    return rows


def _run_point(job: _Job, trial: PlannedTrial, node_id: str) -> str:
    """Train one grid point (retrying errors), write its rows; return its status."""
    started_at = dt.datetime.now(dt.timezone.utc)
    t0 = time.perf_counter()
    planned_ref = job.references[trial.ref_key]
    error = job.reference_errors.get(trial.ref_key)
    rows = None
    if error is not None:
        error = f"reference {trial.ref_key} unavailable: {error}"
    else:
        for _ in range(job.retries + 1):
            try:
                rows = train_trial(trial.config, _load_reference(job.store, planned_ref))
                break
            except StoreError as exc:  # the reference could not be read: the store may be gone
                lost = _unreachable(job.store, exc)
                if lost is not None:
                    raise lost from None
                error = _error_text(exc)
            except Exception as exc:  # noqa: BLE001 - any error of a trial is recorded, never fatal
                error = _error_text(exc)
    seconds = time.perf_counter() - t0
    if rows is None:
        rows = failed_rows(trial, planned_ref.kind, error, seconds)
    for row in rows:
        row["node_id"] = node_id
        row.setdefault("error", None)
    config_json = json.dumps(trial.config.numerics(), sort_keys=True)
    trial_row = trial_row_from_metrics(rows, config_json=config_json, started_at=started_at,
                                       seeds=list(trial.config.seeds), node_id=node_id)
    job.store.write_trial(job.sweep, trial.trial_key, rows, trial_row)
    return trial_row["status"]


_STORE_LOST = "store_lost"  # the key of a worker's report that the store is unreachable


def _run_pack(config: dict, job: _Job) -> None:
    """Tune function trainable: run one pack of grid points, reporting keys and statuses.

    A store error after which the store fails its probe ends the pack with a report carrying
    ``_STORE_LOST`` (the driver then stops the sweep: ``_StopWhenStoreLost``) instead of an
    error that Tune would retry on every pack, for minutes, against a store that is gone.
    """
    pack_id = config["pack"]
    apply_torch_threads()
    keys, statuses = [], []
    try:
        try:
            attempt = ray.get(job.ledger.attempt.remote(pack_id))
        except ray.exceptions.RayError:  # the ledger is gone: assume a restart, list the store
            attempt = 1
        done_before: set[str] = set()
        if attempt > 0:  # a restart after a lost worker: skip what the first attempt already wrote
            done_before = job.store.completed_trial_keys(job.sweep) - job.rerun
        node_id = ray.get_runtime_context().get_node_id()
        last = time.monotonic()
        points = job.packs[pack_id]
        for index, trial in enumerate(points):
            status = "complete" if trial.trial_key in done_before else _run_point(job, trial, node_id)
            keys.append(trial.trial_key)
            statuses.append(status)
            now = time.monotonic()
            if now - last >= _REPORT_EVERY_S or index == len(points) - 1:
                tune.report({"keys": ",".join(keys), "statuses": ",".join(statuses)})
                keys, statuses, last = [], [], now
    except StoreError as exc:
        lost = _unreachable(job.store, exc)
        if lost is None:
            raise
        tune.report({"keys": ",".join(keys), "statuses": ",".join(statuses), _STORE_LOST: _error_text(lost)})
    finally:
        # The kept tensors serve the pack's points of one shape; an idle (reused) actor holding
        # them would hold memory that Ray's requests and the estimates do not count.
        release_spares()


# --- the driver ------------------------------------------------------------------------------


_SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "ACCESS_KEY", "CREDENTIAL", "PRIVATE_KEY")


def is_secret_name(name: str) -> bool:
    """An environment variable that holds a credential (AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN...)."""
    upper = name.upper()
    return any(word in upper for word in _SECRET_WORDS)


@contextlib.contextmanager
def _no_secrets_in_runtime_env() -> Iterator[None]:
    """Keep credentials out of the runtime env of Tune's trial actors.

    Ray Tune copies ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN`` and
    ``AWS_SECURITY_TOKEN`` from the driver's environment into ``runtime_env={"env_vars": ...}`` of
    every trial actor (``ray.tune.execution.class_cache.ENV_VARS_TO_PROPAGATE``), and Ray's
    runtime-env agent writes that runtime env, values included, to its log
    (``runtime_env_agent.log``). Workers get credentials the platform's way instead: an embedded
    Ray's workers inherit the driver's environment; a cluster's nodes have their own (instance
    roles, credentials files, the cluster's environment). Here the list is narrowed to the
    names that are not credentials for the duration; if Ray moved it, the credential variables
    leave this process's environment for the duration instead (the Store resolved its own
    credentials when it was opened).
    """
    try:
        from ray.tune.execution import class_cache
        names = class_cache.ENV_VARS_TO_PROPAGATE
    except (ImportError, AttributeError):
        class_cache = names = None
    if class_cache is not None and isinstance(names, (set, frozenset)):
        class_cache.ENV_VARS_TO_PROPAGATE = {n for n in names if not is_secret_name(n)}
        try:
            yield
        finally:
            class_cache.ENV_VARS_TO_PROPAGATE = names
        return
    saved = {k: v for k, v in os.environ.items() if k.startswith("AWS_") and is_secret_name(k)}
    for k in saved:
        os.environ.pop(k, None)
    try:
        yield
    finally:
        os.environ.update(saved)


class _ProgressCallback(tune.Callback):
    """Driver side: turns the workers' reports into progress counts (keys only, no rows)."""

    def __init__(self, progress: Progress, costs: dict[str, float] | None = None):
        self.progress = progress
        self.costs = costs or {}
        self.statuses: dict[str, str] = {}

    def on_trial_result(self, iteration, trials, trial, result, **info):
        keys = result.get("keys")
        if not keys:
            return
        for key, status in zip(keys.split(","), result["statuses"].split(",")):
            if status != "complete" or key not in self.statuses:
                self.statuses[key] = status
        failed = sum(s == "failed" for s in self.statuses.values())
        done_cost = sum(self.costs.get(k, 0.0) for k in self.statuses)
        self.progress.update(done=len(self.statuses), failed=failed, done_cost=done_cost)

    def on_step_end(self, iteration, trials, **info):
        running = sum(t.status == "RUNNING" for t in trials)
        self.progress.update(running=running)


class _StopWhenStoreLost(tune.Stopper):
    """Driver side: stops every Tune trial as soon as one reports the store unreachable (every
    other trial would fail the same way, and Tune would retry each of them)."""

    def __init__(self):
        self.lost: str | None = None

    def __call__(self, trial_id, result) -> bool:
        if self.lost is None and result.get(_STORE_LOST):
            self.lost = result[_STORE_LOST]
        return self.lost is not None

    def stop_all(self) -> bool:
        return self.lost is not None


class _StopOnSignal(tune.Callback):
    """Driver side: at every step of Tune's loop, in plain Python between Tune's calls into Ray,
    ``check`` raises ``SweepInterrupted`` when a signal came (never inside Ray's compiled code,
    where the signal handler runs: ``interrupts.py``)."""

    def __init__(self, check: Callable[[], None]):
        self.check = check

    def on_step_begin(self, iteration, trials, **info):
        self.check()


class _QuietReporter(tune.ProgressReporter):
    """Ray Tune's own tables stay quiet: our progress line says it all."""

    def should_report(self, trials, done=False):
        return False

    def report(self, trials, done, *sys_info):
        pass


@contextlib.contextmanager
def _quiet_loggers(*names: str) -> Iterator[None]:
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def private_temp_dir() -> str:
    """This user's private folder for the embedded Ray: ``<tempdir>/explorer-ray-<uid>``, mode
    0700, owned by this user. Ray keeps its session files (logs, sockets, spilled objects) in its
    ``ray`` subfolder (``ray.init(_temp_dir=...)``), instead of the world-readable ``/tmp/ray``;
    Ray makes the folders it creates world-writable (0777), so the privacy comes from this
    parent, which nobody else can enter. A folder of that name that is not this user's own (another
    user made it, or it is a link) is not used: a fresh ``mkdtemp`` folder is.
    """
    base = os.path.join(tempfile.gettempdir(), f"explorer-ray-{os.getuid()}")
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return tempfile.mkdtemp(prefix="explorer-ray-")
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return tempfile.mkdtemp(prefix="explorer-ray-")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(base, 0o700)
    return base


@contextlib.contextmanager
def _neutral_directory(temp_dir: str) -> Iterator[None]:
    """Run ``ray.init`` from an empty folder of our own.

    ``ray.init`` puts the driver's working directory (and its script's folder) on every worker's
    ``sys.path``, first (``JobConfig.py_driver_sys_path``, inserted at position 0 by each worker):
    a folder named ``store``, ``trials`` or ``explorer`` where the user runs ``explorer sweep``
    then shadows the installed package in every worker (``cannot import name 'COLUMNS' from
    'store' (unknown location)``). From an empty folder, that entry holds nothing to import.
    """
    here = os.getcwd()
    empty = os.path.join(temp_dir, "driver-cwd")
    os.makedirs(empty, mode=0o700, exist_ok=True)
    os.chdir(empty)
    try:
        yield
    finally:
        os.chdir(here)


# Ray 2.60's ray.init() turns token authentication on for a new local cluster when RAY_AUTH_MODE
# is unset (it generates ~/.ray/auth_token) and logs a WARNING saying so from this logger, on
# every sweep. The embedded Ray keeps the authentication; only that one notice is dropped (a user
# read it as trouble). RAY_AUTH_MODE, when set, is Ray's to honour as it is.
_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"
_TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"


class _DropTokenNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(_TOKEN_NOTICE)


@contextlib.contextmanager
def _token_notice_dropped() -> Iterator[None]:
    """While an embedded Ray starts: Ray's notice that token authentication is on is not logged."""
    drop = _DropTokenNotice()
    logger = logging.getLogger(_TOKEN_LOGGER)
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


_START_HINT = ("retry; if the machine is busy, wait or lower the load; or join a running Ray with --address "
               "(`ray start --head`, then --address auto)")


@contextlib.contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[str]:
    """Use the Ray this process already has, or start/join one for the duration.

    Args:
        address: None: an embedded local Ray (dashboard off, loopback only, session files in
            ``private_temp_dir()``, shut down on exit); ``"auto"`` or ``"ray://host:port"`` (or
            ``host:port``): join that cluster.
        num_cpus: CPUs of the embedded Ray (default: all of this machine's).

    Yields:
        ``"existing"``, ``"embedded"`` or ``"joined"``.

    Raises:
        ClusterError: Ray cannot be started or the cluster cannot be reached (one line, with what
            to do).
    """
    if ray.is_initialized():
        yield "existing"
        return
    quiet = dict(log_to_driver=False, logging_level=logging.WARNING, configure_logging=True)
    temp_dir = private_temp_dir()
    try:
        with _neutral_directory(temp_dir):
            if address is None:
                # The processes ray.init starts read the single-machine switch too.
                with _environment({_SINGLE_MACHINE: os.environ.get(_SINGLE_MACHINE, "0")}), _token_notice_dropped():
                    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                             object_store_memory=256 * 1024**2, _temp_dir=os.path.join(temp_dir, "ray"), **quiet)
                kind = "embedded"
            else:
                ray.init(address=address, **quiet)
                kind = "joined"
    except Exception as exc:  # noqa: BLE001 - Ray raises plain Exception too ("node timed out during startup")
        with contextlib.suppress(Exception):
            ray.shutdown()  # a half-started Ray
        first = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        if address is None:
            raise ClusterError(f"cannot start an embedded Ray: {first}; {_START_HINT}") from None
        raise ClusterError(f"cannot reach the Ray cluster at {address!r}: {first}; check the address and that "
                           "the cluster is up (`ray status` on its head node)") from None
    except BaseException:  # interrupted while Ray was starting: leave no Ray processes behind
        with contextlib.suppress(Exception):
            ray.shutdown()
        raise
    try:
        if kind == "embedded":
            _warn_if_not_loopback()
        yield kind
    finally:
        ray.shutdown()


def _warn_if_not_loopback() -> None:
    """Say so when the embedded Ray is reachable from other machines: Ray was imported before
    this module, with the single-machine switch unset, so its address was already chosen."""
    address = ray.util.get_node_ip_address()
    if address not in ("127.0.0.1", "::1"):
        why = ("Ray was imported before explorer" if _RAY_IMPORTED_BEFORE
               else f"{_SINGLE_MACHINE}={os.environ.get(_SINGLE_MACHINE)}")
        warnings.warn(f"the embedded Ray listens on {address}, not on loopback only ({why}); set "
                      f"{_SINGLE_MACHINE}=0 before importing Ray to keep it on this machine", stacklevel=3)


def check_resources(spec: SweepSpec) -> int:
    """How many trials fit at once on the cluster; refuse requests no node can satisfy.

    Raises:
        SpecError: a GPU asked of a cluster without GPUs, or a trial larger than every node.
    """
    cpus, gpus = spec.resources.cpus_per_trial, spec.resources.gpus_per_trial
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    total_cpu = sum(n.get("CPU", 0) for n in nodes)
    total_gpu = sum(n.get("GPU", 0) for n in nodes)
    where = f"the Ray cluster has {total_cpu:g} CPUs and {total_gpu:g} GPUs on {len(nodes)} node(s)"
    if gpus > 0 and total_gpu == 0:
        raise spec_error("[resources] gpus_per_trial", f"{gpus:g} GPU per trial, but {where}; "
                         "set gpus_per_trial = 0, or join a cluster with GPUs (--address)")
    # Trials that ask Ray for memory are placed only where it is: one larger than every node's
    # would wait forever, so it is refused here with the point and its estimate.
    largest_memory = largest_node_memory()
    if largest_memory:
        check_fits_memory(spec, int(largest_memory), where="the largest Ray node (its memory resource)")
    slots = 0
    for n in nodes:
        per_node = math.floor(n.get("CPU", 0) / cpus + 1e-9)
        if gpus > 0:
            per_node = min(per_node, math.floor(n.get("GPU", 0) / gpus + 1e-9))
        slots += per_node
    if slots == 0:
        largest = max(nodes, key=lambda n: (n.get("GPU", 0), n.get("CPU", 0)), default={})
        raise spec_error(
            "[resources] cpus_per_trial", f"a trial asks for {cpus:g} CPUs and {gpus:g} GPUs but no node has "
            f"that much (the largest has {largest.get('CPU', 0):g} CPUs and {largest.get('GPU', 0):g} GPUs); lower it"
        )
    return slots


def _describe(trial: PlannedTrial) -> str:
    c = trial.config
    return f"L={c.L} M={c.M} D={c.D} alpha={c.alpha:g}"


def remove_leftovers(store: Store, sweep: str) -> int:
    """Temporaries left by workers killed mid-write, once every trial of this run is over: the
    sweep's own older than now (no live writer is left), the shared reference cache's only when
    stale (another sweep on the same store may be writing a reference right now)."""
    return (store.remove_temporaries(sweep, before=dt.datetime.now(dt.timezone.utc))
            + store.remove_temporaries(sweep, references=True))


class _Leases:
    """This driver's claims on the trials it runs: claimed before, renewed by a daemon thread
    while they run, released at the end (or lapsing after ``ttl_s`` if the driver dies)."""

    def __init__(self, store: Store, sweep: str, ttl_s: float):
        self.store, self.sweep, self.ttl_s = store, sweep, ttl_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self.held: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def claim(self, keys: Sequence[str]) -> set[str]:
        got = self.store.claim(self.sweep, keys, self.owner, self.ttl_s)
        if len(got) < len(keys) and self._reap_dead(set(keys) - got):
            got |= self.store.claim(self.sweep, set(keys) - got, self.owner, self.ttl_s)
        with self._lock:
            self.held |= got
        if got and self._thread is None:
            self._thread = threading.Thread(target=self._renew, name="explorer-leases", daemon=True)
            self._thread.start()
        return got

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl_s / 4):
            with self._lock:
                keys = list(self.held)
            try:
                self.store.renew(self.sweep, keys, self.owner, self.ttl_s)
            except Exception:  # noqa: BLE001 - a missed renewal is retried; lapsing only risks duplicate work
                pass

    def release(self, keys=None) -> None:
        with self._lock:
            keys = set(self.held if keys is None else keys) & self.held
            self.held -= keys
        if keys:
            self.store.release(self.sweep, keys, self.owner)

    def _reap_dead(self, keys: set[str]) -> int:
        """Release the claims of drivers of this machine that no longer run (killed with SIGKILL):
        no need to wait for their TTL. Returns how many were released."""
        host = socket.gethostname()
        dead: dict[str, set[str]] = {}
        for key, owner in self.others(keys).items():
            name, _, pid = owner.rpartition(":")
            if name == host and pid.isdigit() and not _alive(int(pid)):
                dead.setdefault(owner, set()).add(key)
        return sum(self.store.release(self.sweep, held, owner) for owner, held in dead.items())

    def others(self, keys: set[str]) -> dict[str, str]:
        """``key -> owner`` of the live leases of other drivers among ``keys``."""
        found = self.store.leases(self.sweep)
        return {k: owner for k, (owner, live) in found.items() if k in keys and live and owner != self.owner}

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.release()


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
            ``$EXPLORER_LEASE_TTL_S``, else 60 s): another driver of the same sweep takes over
            the trials of a dead driver after that long.
        only_keys: run (and count in the result) only the planned trials with these keys: one
            round of an adaptive sweep (``explorer.sweeps.adaptive``). None: every trial.

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
    with SignalGuard() as guard:
        points = spec.grid_points()
        if progress and points >= PLANNING_NOTE_POINTS:  # seconds of silence otherwise
            print(f"planning: {points:,} trials", file=stream or sys.stderr, flush=True)
        try:
            the_plan = plan(spec, SCHEMA_VERSION, check=guard.check)
        except SweepInterrupted as exc:  # planning 10^5 trials takes seconds: nothing ran, nothing to clean
            return SweepResult(name=spec.name, store=store.uri, total=0, skipped=0, ran=0, planned=False,
                               interrupted=exc.signum, resume=resume_command(), wall_s=time.monotonic() - started)
        if only_keys is not None:
            chosen = frozenset(only_keys)
            the_plan = replace(the_plan, trials=tuple(t for t in the_plan.trials if t.trial_key in chosen))
        result = _run_plan(spec, store, the_plan, guard, address, max_concurrent, progress, num_cpus, stream,
                           lease_ttl_s)
        if result.interrupted is None and guard.signum is not None:  # a signal during compaction or the last reads
            result.interrupted = guard.signum
        result.resume = resume_command() if result.interrupted is not None else None
    result.wall_s = time.monotonic() - started
    return result


def _run_plan(spec: SweepSpec, store: Store, the_plan: Plan, guard: SignalGuard, address, max_concurrent,
              progress, num_cpus, stream, lease_ttl_s) -> SweepResult:
    """``run_sweep`` once planned: run what the store lacks, then read the summary back."""
    started_at = dt.datetime.now(dt.timezone.utc)
    known = store.trial_statuses(spec.name)
    planned_keys = {t.trial_key for t in the_plan.trials}
    todo = [t for t in the_plan.trials if known.get(t.trial_key) not in FINAL_STATUSES]
    rerun = frozenset(t.trial_key for t in todo if t.trial_key in known)
    result = SweepResult(name=spec.name, store=store.uri, total=len(the_plan.trials),
                         skipped=len(the_plan.trials) - len(todo), ran=0, stale=len(set(known) - planned_keys))
    bar = Progress(total=len(todo), stream=stream, enabled=progress)
    claimed: set[str] = set()
    if todo and guard.signum is None:
        store.probe()  # an unreachable or read-only store is one line, before Ray starts
        ttl = lease_ttl_s or setting(LEASE_TTL_ENV)
        leases = _Leases(store, spec.name, ttl)
        with _stop_when_store_lost(bar):
            try:
                with contextlib.ExitStack() as ray_stack:
                    # Ray and the resource check first: a trial no node can run is refused before
                    # anything (a claim included) is written.
                    ray_stack.enter_context(ray_session(address, num_cpus=num_cpus))
                    guard.arm()
                    slots = check_resources(spec)
                    limit = max_concurrent or spec.resources.max_concurrent
                    if limit:
                        slots = min(slots, limit)
                    while todo:
                        guard.check()
                        mine = leases.claim([t.trial_key for t in todo])
                        claimed |= mine
                        theirs = {t.trial_key for t in todo if t.trial_key not in mine}
                        _note_other_drivers(leases, theirs, mine, result, bar)
                        batch = [t for t in todo if t.trial_key in mine]
                        if batch:
                            diverged, broken = _run_references(spec, store, the_plan, batch, bar, guard.check)
                            result.reference_errors.update(broken)
                            runnable = [t for t in batch if t.ref_key not in broken]
                            if runnable:
                                result.lost += _run_trials_again_when_lost(spec, store, the_plan, runnable, diverged,
                                                                           rerun, slots, limit, bar, guard.check)
                            leases.release({t.trial_key for t in batch})
                        if not theirs:
                            break
                        _wait_for(leases, theirs, guard.check)
                        known = store.trial_statuses(spec.name)
                        todo = [t for t in todo if t.trial_key in theirs and known.get(t.trial_key) not in FINAL_STATUSES]
                    guard.check()  # a signal in the last wait of a Ray call
            except SweepInterrupted as exc:
                result.interrupted = exc.signum
                bar.message(f"{exc}: stopping (its Ray, claims and locks are released)")
            finally:
                guard.arm()  # Ray's shutdown may leave its own SIGTERM handler: the cleanup and compaction are ours
                leases.close()
                _release_dead_locks(store, the_plan, wait_s=5.0 if result.interrupted is not None else 0.0)
                if not leases.others(planned_keys):
                    remove_leftovers(store, spec.name)
                # a worker stopped between its metrics and its trials row (the signal, a lost
                # node) leaves rows that check calls incomplete: this driver held those keys and
                # its workers are gone, so nobody else can be writing them
                store.remove_unfinished(spec.name, claimed - set(leases.others(claimed)))
        bar.finish()
        if result.interrupted is None:
            _compact_trials(store, spec.name, bar)
        known = store.trial_statuses(spec.name)
        result.ran = _count_started_since(store, spec.name, claimed, started_at)
    elif todo:  # the signal came while the store was read: nothing started
        result.interrupted = guard.signum
    failed = []
    for trial in the_plan.trials:
        status = known.get(trial.trial_key, "missing")
        setattr(result, status, getattr(result, status) + 1)
        if status == "failed":
            failed.append(trial)
    errors = store.trial_column(spec.name, "error", [t.trial_key for t in failed[:5]]) if failed else {}
    result.failures = [f"{_describe(t)} ({t.trial_key}): {errors.get(t.trial_key)}" for t in failed[:5]]
    return result


def _note_other_drivers(leases: _Leases, theirs: set[str], mine: set[str], result: SweepResult, bar: Progress) -> None:
    """Say which other drivers hold some of the trials, and remember it for the summary."""
    owners = leases.others(theirs)
    for owner in sorted(set(owners.values())):
        n = sum(o == owner for o in owners.values())
        result.elsewhere[owner] = max(result.elsewhere.get(owner, 0), n)
        bar.message(f"{n} claimed by another driver ({owner}): "
                    + ("running the others, then waiting for those" if mine else "waiting for them"))


@contextlib.contextmanager
def _stop_when_store_lost(bar: Progress) -> Iterator[None]:
    """Turn a store that became unreachable mid-sweep into one ``StoreUnreachable`` line that
    names the store, the filesystem's error and how to resume. The cleanup on the way out (Ray
    shut down, claims released) stops at the first store call that fails: the claims lapse after
    their TTL, temporaries are removed by the next run."""
    try:
        yield
    except StoreError as exc:
        lost = exc
        while lost is not None and not isinstance(lost, StoreUnreachable):
            lost = lost.__context__  # a cleanup call that failed too, after the first loss
        if lost is None:
            raise
        bar.finish()
        again = resume_command()
        raise StoreUnreachable(
            f"the store became unreachable mid-sweep, which stopped: {' '.join(str(lost).split())}; "
            f"the trials already written stay in it: to resume, run the same command again once the store is "
            f"back{': ' + again if again else ''}") from None


def _wait_for(leases: _Leases, keys: set[str], check: Callable[[], None]) -> None:
    """Until no other live driver holds a lease on ``keys`` (they completed, were released, or
    lapsed); ``check`` (a signal) is called every fraction of a second."""
    while leases.others(keys):
        if not leases._reap_dead(keys):
            deadline = time.monotonic() + _WAIT_POLL_S
            while time.monotonic() < deadline:
                check()
                time.sleep(_SIGNAL_POLL_S)


def _count_started_since(store: Store, sweep: str, keys: set[str], since: dt.datetime) -> int:
    """How many of ``keys`` have a trials row started at or after ``since``: what this run wrote."""
    if not keys:
        return 0
    started = store.trial_column(sweep, "started_at", keys)
    n = 0
    for value in started.values():
        if value is None:
            continue
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        n += value >= since - dt.timedelta(seconds=1)
    return n


def _release_dead_locks(store: Store, the_plan: Plan, wait_s: float = 0.0) -> int:
    """Remove the reference locks of this plan whose holder, a process of this machine, is dead
    (a worker of this driver's Ray, stopped by an interruption), waiting up to ``wait_s`` for
    the holders of the others to exit. Live holders' locks are left alone (another driver's
    worker); those of other machines lapse after the store's stale-lock age without a heartbeat."""
    keys = [r.ref_key for r in the_plan.references]
    deadline = time.monotonic() + wait_s
    removed, kept = store.remove_dead_reference_locks(keys, _holder_dead)
    while kept and time.monotonic() < deadline:
        time.sleep(0.2)
        more, kept = store.remove_dead_reference_locks(keys, _holder_dead)
        removed += more
    return removed


def _holder_dead(holder: str) -> bool:
    """A lock holder ``pid@host`` that is a process of this machine no longer running."""
    pid, _, host = holder.partition("@")
    return host == os.uname().nodename and pid.isdigit() and not _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _compact_trials(store: Store, sweep: str, bar: Progress) -> None:
    """Merge the sweep's trials rows into one file, so that the next start reads one file.

    Never fails the sweep (its trials are all written): a problem is noted and the next run, or
    ``explorer compact``, tries again.
    """
    try:
        store.compact(sweep, kinds=("trials",))
    except StoreError as exc:
        bar.message(f"note: the trials of sweep {sweep} were not compacted ({exc}); run `explorer compact`")


def _run_references(spec: SweepSpec, store: Store, the_plan: Plan, todo: list[PlannedTrial],
                    bar: Progress, check: Callable[[], None]) -> tuple[dict[str, str], dict[str, str]]:
    """Compute the references the remaining trials need, one Ray task each, a line per reference
    as it is ready; ``check`` (a signal) is called between polls of ``ray.wait``.

    Returns:
        ``(diverged, broken)``: ref_key -> why. The trials of a diverged reference are recorded
        failed with that message; those of a broken one (it raised: a store error, a bug) are not
        scheduled at all: they stay missing, and the summary names the reference and its error.
    """
    needed = {t.ref_key for t in todo}
    refs = [r for r in the_plan.references if r.ref_key in needed]
    if not refs:
        return {}, {}
    res = spec.resources
    task = ray.remote(_reference_task)
    options = dict(num_cpus=res.cpus_per_trial, num_gpus=res.gpus_per_trial, max_retries=3, retry_exceptions=False)
    t0 = time.monotonic()
    bar.message(f"references: {len(refs)} to compute or find in the store")
    futures = {}
    node_memory = largest_node_memory()
    for r in refs:
        memory = memory_request(_reference_need(r), node_memory)
        futures[task.options(**options, **({"memory": memory} if memory else {})).remote(store, r)] = r
    diverged: dict[str, str] = {}
    broken: dict[str, str] = {}
    pending = list(futures)
    done = 0
    while pending:
        check()
        ready, pending = ray.wait(pending, num_returns=1, timeout=_SIGNAL_POLL_S)
        if not ready:
            continue
        ref = futures[ready[0]]
        done += 1
        try:
            message, _threads, seconds = ray.get(ready[0])
        except Exception as exc:  # noqa: BLE001 - a reference that raised stops its group, not the sweep
            if isinstance(root_cause(exc), StoreUnreachable):  # ... unless the store is gone: every group stops
                raise StoreUnreachable(_error_text(exc)) from None
            broken[ref.ref_key] = _error_text(exc)
            bar.message(f"reference {done}/{len(refs)} {ref.ref_key} failed: {broken[ref.ref_key]}")
            continue
        if message is not None:
            diverged[ref.ref_key] = message
        state = "diverged" if message is not None else "ready"
        bar.message(f"reference {done}/{len(refs)} {ref.ref_key} {state} in {seconds:.1f}s "
                    f"(elapsed {time.monotonic() - t0:.1f}s)")
    ready_n = len(refs) - len(diverged) - len(broken)
    text = f"references: {ready_n}/{len(refs)} ready in {time.monotonic() - t0:.1f}s"
    if diverged:
        text += (f"; {len(diverged)} diverged, their trials are recorded failed "
                 f"(first: {next(iter(diverged.values()))})")
    if broken:
        text += f"; {len(broken)} failed, their trials are not run (first: {next(iter(broken.values()))})"
    bar.message(text)
    return diverged, broken


# Passes over the points of Tune trials that Tune gave up on (their actors died: a node was lost
# while Ray still placed restarts there). Each pass runs only the points that have no rows yet.
LOST_TRIAL_PASSES = 2


def _run_trials_again_when_lost(spec, store, the_plan, todo, reference_errors, rerun, slots, limit, bar,
                                check) -> list[str]:
    """``_run_trials``, then, while Tune trials were lost for good, once more over the points they
    left without rows (at most ``LOST_TRIAL_PASSES`` times); returns every loss's cause."""
    causes = lost = _run_trials(spec, store, the_plan, todo, reference_errors, rerun, slots, limit, bar, check)
    for _ in range(LOST_TRIAL_PASSES):
        if not lost:
            break
        known = store.trial_statuses(spec.name)
        left = [t for t in todo if t.trial_key not in known]  # no rows at all (a failed point has its own)
        if not left:
            break
        bar.message(f"{len(left)} points lost with their Tune trials ({lost[0]}): running them again")
        lost = _run_trials(spec, store, the_plan, left, reference_errors, rerun, slots, limit, bar, check)
        causes = causes + lost
    return causes


def _run_trials(spec, store, the_plan, todo, reference_errors, rerun, slots, limit, bar, check) -> list[str]:
    """Run the packed points as Tune trials; return why some Tune trials failed for good. ``check``
    (a signal) is called at every step of Tune's loop (``_StopOnSignal``)."""
    packs = pack(todo, slots, spec.resources.points_per_trial)
    # On the driver's node: a lost worker node must not take the ledger with it.
    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=True)
    ledger = ray.remote(num_cpus=0, scheduling_strategy=here)(_Ledger).remote()
    job = _Job(sweep=spec.name, store=store, packs=tuple(tuple(p) for p in packs),
               references={r.ref_key: r for r in the_plan.references}, reference_errors=reference_errors,
               rerun=rerun, retries=spec.resources.retries, ledger=ledger)
    cpus, gpus = spec.resources.cpus_per_trial, spec.resources.gpus_per_trial
    node_memory = largest_node_memory()
    memory = [memory_request(max(trial_memory_bytes(t.config) for t in p), node_memory) for p in packs]

    def resources(config: dict) -> tune.PlacementGroupFactory:
        """What one Tune trial (one pack) asks of Ray: CPUs, GPUs and, for large points, memory."""
        bundle = {"CPU": cpus, "GPU": gpus}
        if memory[config["pack"]]:
            bundle["memory"] = memory[config["pack"]]
        return tune.PlacementGroupFactory([bundle])

    trainable = tune.with_resources(tune.with_parameters(_run_pack, job=job), resources)
    costs = {t.trial_key: estimated_seconds(t) for t in todo}
    callback = _ProgressCallback(bar, costs)
    stopper = _StopWhenStoreLost()
    bar.begin(total_cost=sum(costs.values()), slots=slots)
    bar.message(f"trials: {len(todo)} to run as {len(packs)} Tune trials, up to {slots} at once")
    with tempfile.TemporaryDirectory(prefix="explorer-tune-") as tune_dir, _environment(_TUNE_ENV), \
            _no_secrets_in_runtime_env(), _quiet_loggers("ray.tune", "ray.train", "ray.air"):
        tuner = tune.Tuner(
            trainable,
            param_space={"pack": tune.grid_search(list(range(len(packs))))},
            tune_config=tune.TuneConfig(reuse_actors=True, max_concurrent_trials=limit),
            run_config=tune.RunConfig(
                name=f"explorer-{spec.name}", storage_path=tune_dir, verbose=0, log_to_file=False,
                callbacks=[callback, _StopOnSignal(check)], progress_reporter=_QuietReporter(), stop=stopper,
                failure_config=tune.FailureConfig(max_failures=LOST_ACTOR_RETRIES),
            ),
        )
        grid = tuner.fit()
    if stopper.lost is not None:
        raise StoreUnreachable(stopper.lost)
    lost = [_error_text(e).splitlines()[0] for e in grid.errors]
    if lost:
        bar.message(f"{len(lost)} Tune trial(s) failed for good: {lost[0]}")
    return lost
