"""What runs on the workers: one Tune trial trains its pack of grid points, writes each point's
rows to the store itself and reports only keys and statuses (the driver never sees row data).

A pack is a list of groups (``packing``): a group of several points of one shape trains as one
program (``trials.train_fused``), a group of one alone (``trials.train_trial``); either way each
point's rows are written as the point's own, one point at a time, once its group has trained (a
pack killed mid-group leaves none of the group's points half written). A point that diverges
ends its own rows, its neighbours run on. A group that raises is run again point by point, so a
point that raises is retried ``retries`` times alone, then written with status ``failed`` and
its error; diverged points are written as they are. A lost worker or node fails its Tune trial,
which Tune reruns elsewhere; the rerun skips the points the store already has (``Ledger``
counts attempts, so first attempts skip the listing).
"""
from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass

from store import Store, StoreError, trial_row_from_metrics

from ...config.planning import PlannedTrial
from ..ray import apply_torch_threads, ray
from ..references import load_reference
from ..tracking import STORE_LOST, error_text, failed_rows, unreachable
from .packing import Group

REPORT_EVERY_S = 0.5  # a worker reports progress at most this often (each report is a driver round trip)


@dataclass(frozen=True)
class Job:
    """Everything a worker needs, shipped once through the object store (``tune.with_parameters``)."""

    sweep: str
    store: Store
    packs: tuple[tuple[Group, ...], ...]  # per pack its groups (``packing``): a group of one trains alone
    references: dict  # ref_key -> PlannedReference
    reference_errors: dict  # ref_key -> why the reference could not be computed
    rerun: frozenset  # keys recorded failed before this run: a restarted pack must not skip them
    retries: int
    ledger: object  # Ledger actor handle


class Ledger:
    """Counts the attempts of each pack, so that only a restarted pack lists the store."""

    def __init__(self):
        self.attempts: dict[int, int] = {}

    def attempt(self, pack_id: int) -> int:
        """This pack's attempt number (0 for the first), counting this one."""
        n = self.attempts.get(pack_id, 0)
        self.attempts[pack_id] = n + 1
        return n


def train_trial(config, reference):
    """``trials.train_trial``, imported (with torch) at the first trial: the adaptive sweep's
    driver imports this module for its workers and never trains."""
    from trials import train_trial as train

    return train(config, reference)


def train_fused(configs, references):
    """``trials.train_fused`` in its device's default mode, imported at the first group."""
    from trials import train_fused as train

    return train(configs, references)


def _train(job: Job, trial: PlannedTrial) -> tuple[list[dict] | None, str | None]:
    """The point's rows (None when every attempt raised) and the last error."""
    error = job.reference_errors.get(trial.ref_key)
    if error is not None:
        return None, f"reference {trial.ref_key} unavailable: {error}"
    for _ in range(job.retries + 1):
        try:
            return train_trial(trial.config, load_reference(job.store, job.references[trial.ref_key])), None
        except StoreError as exc:  # the reference could not be read: the store may be gone
            lost = unreachable(job.store, exc)
            if lost is not None:
                raise lost from None
            error = error_text(exc)
        except Exception as exc:  # noqa: BLE001 - any error of a trial is recorded, never fatal
            error = error_text(exc)
    return None, error


def run_point(job: Job, trial: PlannedTrial, node_id: str) -> str:
    """Train one grid point (retrying errors), write its rows; return its status."""
    started_at = dt.datetime.now(dt.timezone.utc)
    t0 = time.perf_counter()
    rows, error = _train(job, trial)
    if rows is None:
        rows = failed_rows(trial, job.references[trial.ref_key].kind, error, time.perf_counter() - t0)
    return write_point(job, trial, rows, started_at, node_id)


def write_point(job: Job, trial: PlannedTrial, rows: list[dict], started_at: dt.datetime, node_id: str) -> str:
    """Write one point's rows and its trials row (one atomic file each); return its status."""
    for row in rows:
        row["node_id"] = node_id
        row.setdefault("error", None)
    config_json = json.dumps(trial.config.numerics(), sort_keys=True)
    trial_row = trial_row_from_metrics(rows, config_json=config_json, started_at=started_at,
                                       seeds=list(trial.config.seeds), node_id=node_id)
    job.store.write_trial(job.sweep, trial.trial_key, rows, trial_row)
    return trial_row["status"]


def _fused_rows(job: Job, group: list[PlannedTrial]) -> list[list[dict]] | None:
    """The group's rows trained as one program, or None when it raised (its points then run alone:
    each its own retries and error). A store that is gone is raised."""
    try:
        references = [load_reference(job.store, job.references[t.ref_key]) for t in group]
        return train_fused([t.config for t in group], references)
    except StoreError as exc:
        lost = unreachable(job.store, exc)
        if lost is not None:
            raise lost from None
    except Exception:  # noqa: BLE001 - a group that raises runs point by point, where errors are recorded
        pass
    return None


def run_group(job: Job, group: Group, node_id: str, done_before: set[str]):
    """Train one group of points (one program when several are left to run), writing each point's
    rows as it would alone; yields (trial_key, status) per point, in the group's order."""
    left = [t for t in group if t.trial_key not in done_before and t.ref_key not in job.reference_errors]
    started_at = dt.datetime.now(dt.timezone.utc)
    fused = _fused_rows(job, left) if len(left) > 1 else None
    if fused is not None:
        written = {t.trial_key: write_point(job, t, rows, started_at, node_id) for t, rows in zip(left, fused)}
    else:
        written = {}
    for trial in group:
        if trial.trial_key in done_before:
            yield trial.trial_key, "complete"
        elif trial.trial_key in written:
            yield trial.trial_key, written[trial.trial_key]
        else:
            yield trial.trial_key, run_point(job, trial, node_id)


def _done_before(job: Job, pack_id: int) -> set[str]:
    """The keys a restarted pack skips: what its first attempt already wrote (none at first)."""
    try:
        attempt = ray.get(job.ledger.attempt.remote(pack_id))
    except ray.exceptions.RayError:  # the ledger is gone: assume a restart, list the store
        attempt = 1
    if attempt == 0:
        return set()
    return job.store.completed_trial_keys(job.sweep) - job.rerun


def run_pack(config: dict, job: Job) -> None:
    """Tune function trainable: run one pack of grid points, reporting keys and statuses.

    A store error after which the store fails its probe ends the pack with a report carrying
    ``STORE_LOST`` (the driver then stops the sweep: ``tune_glue.StopWhenStoreLost``) instead of
    an error that Tune would retry on every pack, for minutes, against a store that is gone.
    """
    from trials import release_spares

    from ..ray import tune  # here: the adaptive sweep's workers import this module without Tune

    pack_id = config["pack"]
    apply_torch_threads()
    keys, statuses = [], []
    try:
        done_before = _done_before(job, pack_id)
        node_id = ray.get_runtime_context().get_node_id()
        last = time.monotonic()
        groups = job.packs[pack_id]
        last_key = groups[-1][-1].trial_key
        for key, status in (point for group in groups for point in run_group(job, group, node_id, done_before)):
            keys.append(key)
            statuses.append(status)
            now = time.monotonic()
            if now - last >= REPORT_EVERY_S or key == last_key:
                tune.report({"keys": ",".join(keys), "statuses": ",".join(statuses)})
                keys, statuses, last = [], [], now
    except StoreError as exc:
        lost = unreachable(job.store, exc)
        if lost is None:
            raise
        tune.report({"keys": ",".join(keys), "statuses": ",".join(statuses), STORE_LOST: error_text(lost)})
    finally:
        # The kept tensors serve the pack's points of one shape; an idle (reused) actor holding
        # them would hold memory that Ray's requests and the estimates do not count.
        release_spares()
