"""Running a sweep on Ray: references first, then packed grid points as Ray Tune trials.

The only module that imports Ray (named for it: ``explorer.sweep`` is the public function of
``explorer.api``). The flow of ``run_sweep``:

1. Plan the spec (``planning.plan``) and read the statuses of the sweep's trials from the store
   (``Store.trial_statuses``): trials already complete (ok or diverged) are skipped, failed
   ones run again. Nothing left to do -> no Ray at all.
2. Start an embedded Ray (no address: dashboard off, loopback only, shut down on exit) or join
   one (``address="auto"`` or ``"ray://host:port"``), and check that one trial's resources fit a
   node (a GPU asked of a cluster without GPUs is a ``SpecError``, not a hang).
3. References: one Ray task per reference key still needed; each worker computes it or finds it
   through ``Store.get_or_compute_reference`` (the store caches it for every later trial).
4. Trials: the remaining grid points are packed into Tune trials (``_pack``), several tiny points
   per Tune trial so that Tune's fixed cost per trial is spread over them, and run by
   ``ray.tune.Tuner`` with ``reuse_actors``, fractional GPUs allowed. Each worker trains its
   points, writes its own rows to the store and reports only keys and statuses: the driver never
   sees row data. A point that raises is retried ``retries`` times in the worker, then written
   with status ``failed`` and its error; diverged points are written as they are. A lost worker
   or node fails its Tune trial, which Tune reruns elsewhere; the rerun skips the points the
   store already has (``_Ledger`` counts attempts, so first attempts skip the listing).
5. Temporaries left by lost workers are removed and the sweep's ``trials`` kind is compacted
   (one file, so that the next start's status lookup reads one file instead of one per trial;
   metrics stay as they are: ``explorer compact`` merges those). The summary is read back from
   the store: the exit code is 0 when every trial ended ok or diverged, 1 otherwise.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import heapq
import json
import logging
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

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

from store import COLUMNS, FINAL_STATUSES, SCHEMA_VERSION, Store, StoreError, trial_row_from_metrics
from trials import (Reference, ReferenceDiverged, compute_reference, reference_from_trial, resolve_device,
                    train_trial)

from .errors import ClusterError, spec_error
from .options import open_store
from .planning import Plan, PlannedReference, PlannedTrial, plan
from .progress import Progress
from .spec import SweepSpec

_ERROR_CHARS = 2000  # longest error message stored with a failed trial
_REPORT_EVERY_S = 0.5  # a worker reports progress at most this often (each report is a driver round trip)
_PACK_TARGET_S = 2.0  # aim for Tune trials of about this much estimated compute
_PACKS_PER_SLOT = 4  # at least this many Tune trials per concurrent slot, for balance and progress
_TUNE_ENV = {
    "RAY_AIR_NEW_OUTPUT": "0",  # the legacy output honours verbose=0 (the new one always prints a header)
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",  # no result.json/CSV/TensorBoard per trial: the store has it all
    "TUNE_GLOBAL_CHECKPOINT_S": "1000000",  # resuming is the store's job, not Tune's experiment state
    "TUNE_WARN_INSUFFICENT_RESOURCE_THRESHOLD_S": "0",
}


# --- results ---------------------------------------------------------------------------------


@dataclass
class SweepResult:
    """What a sweep run did and where its trials stand (read back from the store)."""

    name: str
    store: str
    total: int  # trials (grid points) in the spec
    skipped: int  # already complete (ok or diverged) before this run
    ran: int  # trials this run had to do
    ok: int = 0
    diverged: int = 0
    failed: int = 0
    missing: int = 0  # planned but with no rows: a worker lost for good or a store write failed
    wall_s: float = 0.0
    failures: list[str] = field(default_factory=list)  # a few "L=.. M=..: error" lines
    stale: int = 0  # trials of this sweep in the store that the spec no longer defines
    lost: list[str] = field(default_factory=list)  # why Tune trials (packs of points) failed for good

    @property
    def exit_code(self) -> int:
        """0 when every trial ended ok or diverged, 1 when some failed or are missing."""
        return 0 if self.failed == 0 and self.missing == 0 else 1

    def summary(self) -> str:
        """A few lines for the terminal."""
        counts = f"{self.ok} ok, {self.diverged} diverged, {self.failed} failed"
        if self.missing:
            counts += f", {self.missing} missing"
        run = (f"{self.ran} run in {self.wall_s:.1f}s" if self.ran else "nothing to run")
        lines = [f"sweep {self.name}: {self.total} trials: {counts} ({self.skipped} already complete, {run})",
                 f"store: {self.store}"]
        lines += [f"failed {line}" for line in self.failures]
        if self.missing:
            why = f" (first cause: {self.lost[0]})" if self.lost else ""
            lines.append(f"{self.missing} trials have no rows{why}: run the same command again to retry them")
        if self.stale:
            lines.append(f"note: the store holds {self.stale} other trials of sweep {self.name!r} that this spec does "
                         "not define (an earlier version of it); they stay in the store and in its queries")
        return "\n".join(lines)


# --- packing ---------------------------------------------------------------------------------


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
    if planned.kind == "joint_limit":  # trials/joint_limit.py: exact, identity activation
        from trials import compute_joint_limit
        return compute_joint_limit(planned.config)
    if planned.kind == "mean_ode":
        return compute_reference(planned.config)
    return reference_from_trial(planned.config)


def _load_reference(store: Store, planned: PlannedReference) -> Reference:
    ref = _REFERENCE_CACHE.get(planned.ref_key)
    if ref is None:
        arrays, meta = store.get_or_compute_reference(planned.ref_key, lambda: _compute(planned).to_record())
        ref = Reference.from_record(arrays, meta)
        if len(_REFERENCE_CACHE) >= _REFERENCE_CACHE_SIZE:
            _REFERENCE_CACHE.pop(next(iter(_REFERENCE_CACHE)))
        _REFERENCE_CACHE[planned.ref_key] = ref
    return ref


def _reference_task(store: Store, planned: PlannedReference) -> str | None:
    """Compute (or find) one reference in the store; return why it failed, or None."""
    try:
        _load_reference(store, planned)
    except ReferenceDiverged as exc:
        return str(exc)
    return None


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
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


def _run_pack(config: dict, job: _Job) -> None:
    """Tune function trainable: run one pack of grid points, reporting keys and statuses."""
    pack_id = config["pack"]
    try:
        attempt = ray.get(job.ledger.attempt.remote(pack_id))
    except ray.exceptions.RayError:  # the ledger is gone: assume a restart, list the store
        attempt = 1
    done_before: set[str] = set()
    if attempt > 0:  # a restart after a lost worker: skip what the first attempt already wrote
        done_before = job.store.completed_trial_keys(job.sweep) - job.rerun
    node_id = ray.get_runtime_context().get_node_id()
    keys, statuses = [], []
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


# --- the driver ------------------------------------------------------------------------------


class _ProgressCallback(tune.Callback):
    """Driver side: turns the workers' reports into progress counts (keys only, no rows)."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.statuses: dict[str, str] = {}

    def on_trial_result(self, iteration, trials, trial, result, **info):
        keys = result.get("keys")
        if not keys:
            return
        for key, status in zip(keys.split(","), result["statuses"].split(",")):
            if status != "complete" or key not in self.statuses:
                self.statuses[key] = status
        failed = sum(s == "failed" for s in self.statuses.values())
        self.progress.update(done=len(self.statuses), failed=failed)

    def on_step_end(self, iteration, trials, **info):
        running = sum(t.status == "RUNNING" for t in trials)
        self.progress.update(running=running)


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


@contextlib.contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[str]:
    """Use the Ray this process already has, or start/join one for the duration.

    Args:
        address: None: an embedded local Ray (dashboard off, loopback only, shut down on exit);
            ``"auto"`` or ``"ray://host:port"`` (or ``host:port``): join that cluster.
        num_cpus: CPUs of the embedded Ray (default: all of this machine's).

    Yields:
        ``"existing"``, ``"embedded"`` or ``"joined"``.

    Raises:
        ClusterError: the cluster cannot be reached.
    """
    if ray.is_initialized():
        yield "existing"
        return
    quiet = dict(log_to_driver=False, logging_level=logging.WARNING, configure_logging=True)
    try:
        if address is None:
            # The processes ray.init starts read the single-machine switch too.
            with _environment({_SINGLE_MACHINE: os.environ.get(_SINGLE_MACHINE, "0")}):
                ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                         object_store_memory=256 * 1024**2, **quiet)
            kind = "embedded"
            _warn_if_not_loopback()
        else:
            ray.init(address=address, **quiet)
            kind = "joined"
    except (ConnectionError, ValueError, RuntimeError) as exc:
        what = "cannot start an embedded Ray" if address is None else f"cannot reach the Ray cluster at {address!r}"
        raise ClusterError(f"{what}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    try:
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


def run_sweep(
    spec: SweepSpec,
    store: Store | str = "results",
    address: str | None = None,
    max_concurrent: int | None = None,
    progress: bool = True,
    num_cpus: int | None = None,
    stream=None,
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

    Returns:
        A ``SweepResult``; its ``exit_code`` is 0 when every trial ended ok or diverged.

    Raises:
        SpecError: a grid point the trials refuse, or resources no node can provide.
        ClusterError: Ray cannot be started or reached.
    """
    started = time.monotonic()
    store = open_store(store)
    the_plan = plan(spec, SCHEMA_VERSION)
    known = store.trial_statuses(spec.name)
    planned_keys = {t.trial_key for t in the_plan.trials}
    todo = [t for t in the_plan.trials if known.get(t.trial_key) not in FINAL_STATUSES]
    rerun = frozenset(t.trial_key for t in todo if t.trial_key in known)
    result = SweepResult(name=spec.name, store=store.uri, total=len(the_plan.trials),
                         skipped=len(the_plan.trials) - len(todo), ran=len(todo),
                         stale=len(set(known) - planned_keys))
    bar = Progress(total=len(todo), stream=stream, enabled=progress)
    if todo:
        with ray_session(address, num_cpus=num_cpus):
            slots = check_resources(spec)
            limit = max_concurrent or spec.resources.max_concurrent
            if limit:
                slots = min(slots, limit)
            errors = _run_references(spec, store, the_plan, todo, bar)
            result.lost = _run_trials(spec, store, the_plan, todo, errors, rerun, slots, limit, bar)
            remove_leftovers(store, spec.name)
        bar.finish()
        _compact_trials(store, spec.name, bar)
        known = store.trial_statuses(spec.name)
    result.wall_s = time.monotonic() - started
    failed = []
    for trial in the_plan.trials:
        status = known.get(trial.trial_key, "missing")
        setattr(result, status, getattr(result, status) + 1)
        if status == "failed":
            failed.append(trial)
    errors = store.trial_column(spec.name, "error", [t.trial_key for t in failed[:5]]) if failed else {}
    result.failures = [f"{_describe(t)} ({t.trial_key}): {errors.get(t.trial_key)}" for t in failed[:5]]
    return result


def _compact_trials(store: Store, sweep: str, bar: Progress) -> None:
    """Merge the sweep's trials rows into one file, so that the next start reads one file.

    Never fails the sweep (its trials are all written): a problem is noted and the next run, or
    ``explorer compact``, tries again.
    """
    try:
        store.compact(sweep, kinds=("trials",))
    except StoreError as exc:
        bar.message(f"note: the trials of sweep {sweep} were not compacted ({exc}); run `explorer compact`")


def _run_references(spec: SweepSpec, store: Store, the_plan: Plan, todo: list[PlannedTrial], bar: Progress) -> dict[str, str]:
    """Compute the references the remaining trials need, one Ray task each; ref_key -> error."""
    needed = {t.ref_key for t in todo}
    refs = [r for r in the_plan.references if r.ref_key in needed]
    res = spec.resources
    task = ray.remote(_reference_task).options(
        num_cpus=res.cpus_per_trial, num_gpus=res.gpus_per_trial, max_retries=3, retry_exceptions=False)
    t0 = time.monotonic()
    futures = {task.remote(store, r): r for r in refs}
    errors: dict[str, str] = {}
    for future, ref in futures.items():
        try:
            message = ray.get(future)
        except Exception as exc:  # noqa: BLE001 - a reference that raised fails its group, not the sweep
            cause = getattr(exc, "cause", None) or exc
            message = _error_text(cause)
        if message is not None:
            errors[ref.ref_key] = message
    ready = len(refs) - len(errors)
    text = f"references: {ready}/{len(refs)} ready in {time.monotonic() - t0:.1f}s"
    if errors:
        text += f"; {len(errors)} failed, their trials are recorded failed (first: {next(iter(errors.values()))})"
    bar.message(text)
    return errors


def _run_trials(spec, store, the_plan, todo, reference_errors, rerun, slots, limit, bar) -> list[str]:
    """Run the packed points as Tune trials; return why some Tune trials failed for good."""
    packs = pack(todo, slots, spec.resources.points_per_trial)
    # On the driver's node: a lost worker node must not take the ledger with it.
    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=True)
    ledger = ray.remote(num_cpus=0, scheduling_strategy=here)(_Ledger).remote()
    job = _Job(sweep=spec.name, store=store, packs=tuple(tuple(p) for p in packs),
               references={r.ref_key: r for r in the_plan.references}, reference_errors=reference_errors,
               rerun=rerun, retries=spec.resources.retries, ledger=ledger)
    resources = {"cpu": spec.resources.cpus_per_trial, "gpu": spec.resources.gpus_per_trial}
    trainable = tune.with_resources(tune.with_parameters(_run_pack, job=job), resources)
    callback = _ProgressCallback(bar)
    bar.message(f"trials: {len(todo)} to run as {len(packs)} Tune trials, up to {slots} at once")
    with tempfile.TemporaryDirectory(prefix="explorer-tune-") as tune_dir, _environment(_TUNE_ENV), \
            _quiet_loggers("ray.tune", "ray.train", "ray.air"):
        tuner = tune.Tuner(
            trainable,
            param_space={"pack": tune.grid_search(list(range(len(packs))))},
            tune_config=tune.TuneConfig(reuse_actors=True, max_concurrent_trials=limit),
            run_config=tune.RunConfig(
                name=f"explorer-{spec.name}", storage_path=tune_dir, verbose=0, log_to_file=False,
                callbacks=[callback], progress_reporter=_QuietReporter(),
                failure_config=tune.FailureConfig(max_failures=3),
            ),
        )
        grid = tuner.fit()
    lost = [_error_text(e).splitlines()[0] for e in grid.errors]
    if lost:
        bar.message(f"{len(lost)} Tune trial(s) failed for good: {lost[0]}")
    return lost
