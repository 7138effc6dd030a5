"""Run records: what each ``sweep`` run of a sweep set out to do, and whether it still runs.

    <root>/sweep=<sweep>/.runs/<run_id>.json     {"run_id", "owner", "spec", "grid", "planned_keys",
                                                  "only_keys", "started_at", "ended_at", "ttl_s"}

A run writes its record when it starts (``ended_at`` null) and again when it ends. Run ids sort
by start time (``new_run_id``), so the last run is the last name. A record is JSON, not Parquet:
it is one small document read whole (the planned keys of 10^5 trials are a few MB), written in
one request on object storage (atomic), and the data views never see it (a hidden directory,
like the leases).

Whether a run is still *live* is read from the lease heartbeats (``store.leases``): a run that
has not ended is live while its owner holds a live lease on the sweep, or (before it claims
anything: planning, Ray's start) within ``ttl_s`` of its start, unless its owner is a process of
this machine that no longer runs. A run killed with SIGKILL thus stops being live once its
leases lapse, with no one writing anything.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from .errors import StoreError
from .files import Files
from .heartbeat import DEFAULT_TTL_S
from .layout import RUNS_DIR, check_key, check_sweep, join, sweep_dir
from .leases import leases
from .owners import owner_dead_here, owner_identity

RECORD_LIMIT_BYTES = 256 * 1024 * 1024  # far above 10^5 planned keys; a larger file is no record


@dataclass(frozen=True)
class RunRecord:
    """One ``sweep`` run of a sweep, as recorded, with its liveness judged when it was read."""

    run_id: str
    owner: str
    spec: dict  # the resolved spec (``SweepSpec.to_dict``): its grid, and cases where a spec has them
    planned_keys: frozenset[str]  # the trial keys of the run's whole grid (what "leftover" is measured against)
    only_keys: frozenset[str] | None  # the keys the run set out to run when a subset (an adaptive round)
    started_at: _dt.datetime
    ended_at: _dt.datetime | None
    live: bool  # not ended, and its owner holds a live lease or started within its TTL

    @property
    def grid(self) -> dict:
        return dict(self.spec.get("grid") or {})

    @property
    def target_keys(self) -> frozenset[str]:
        """The keys this run set out to complete: ``only_keys`` when given, else the planned grid."""
        return self.only_keys if self.only_keys is not None else self.planned_keys


def runs_dir(files: Files, sweep: str) -> str:
    return join(sweep_dir(files.root, check_sweep(sweep)), RUNS_DIR)


def new_run_id(now: _dt.datetime | None = None) -> str:
    """A run id that sorts by start time: ``<UTC yyyymmddThhmmss_ffffff>-<8 hex>``."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%S_%f") + "-" + uuid.uuid4().hex[:8]


def _iso(value: _dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(_dt.timezone.utc).isoformat()


def write_run(files: Files, sweep: str, run_id: str, *, spec: Mapping, planned_keys: Sequence[str],
              started_at: _dt.datetime, ended_at: _dt.datetime | None = None,
              only_keys: Sequence[str] | None = None, owner: str | None = None,
              ttl_s: float = DEFAULT_TTL_S) -> None:
    """Write (or rewrite, at the run's end) the record ``run_id`` of ``sweep`` atomically.

    Raises:
        InvalidNameError: a bad sweep name or run id. StoreError: the store cannot be written.
    """
    path = join(runs_dir(files, sweep), check_key(run_id, "run id") + ".json")
    record = {"run_id": run_id, "owner": owner or owner_identity(), "spec": spec,
              "planned_keys": sorted(planned_keys), "only_keys": None if only_keys is None else sorted(only_keys),
              "started_at": _iso(started_at), "ended_at": _iso(ended_at), "ttl_s": float(ttl_s)}
    try:
        data = json.dumps(record, default=str).encode()
    except (TypeError, ValueError) as exc:
        raise StoreError(f"run record {run_id} cannot be written as JSON: {exc}") from None
    files.put(path, data)


def _read_json(files: Files, path: str) -> dict | None:
    try:
        if files.is_local:
            if os.path.getsize(path) > RECORD_LIMIT_BYTES:
                return None
            with open(path, "rb") as f:
                data = f.read()
        else:
            data = files.bounded(f"reading {files.display(path)}", lambda: _read_remote(files, path))
    except FileNotFoundError:
        return None
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"cannot read the run record {files.display(path)}: {exc}") from None
    try:
        found = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


def _read_remote(files: Files, path: str) -> bytes:
    with files.fs.open_input_stream(path) as f:
        return f.read(RECORD_LIMIT_BYTES + 1)


def _time(text) -> _dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        value = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)


def _record(found: dict, run_id: str, live_owners: set[str], now: float) -> RunRecord | None:
    started = _time(found.get("started_at"))
    keys = found.get("planned_keys")
    if started is None or not isinstance(keys, list):
        return None  # not a record this module wrote: skipped, never trusted
    only = found.get("only_keys")
    owner = str(found.get("owner") or "")
    ended = _time(found.get("ended_at"))
    ttl = found.get("ttl_s") if isinstance(found.get("ttl_s"), (int, float)) else DEFAULT_TTL_S
    live = ended is None and not owner_dead_here(owner) and (
        owner in live_owners or now - started.timestamp() <= float(ttl))
    spec = found.get("spec") if isinstance(found.get("spec"), dict) else {}
    return RunRecord(run_id, owner, spec, frozenset(map(str, keys)),
                     None if not isinstance(only, list) else frozenset(map(str, only)), started, ended, live)


def run_ids(files: Files, sweep: str) -> list[str]:
    """The sweep's run ids, oldest first."""
    names = [e.name for e in files.list_dir(runs_dir(files, sweep)) if not e.is_dir and not e.name.startswith(".")]
    return sorted(name[: -len(".json")] for name in names if name.endswith(".json"))


def read_runs(files: Files, sweep: str, last: int | None = None) -> list[RunRecord]:
    """The sweep's run records, oldest first (only the ``last`` ones when given); files that are
    no record are skipped. Liveness is judged now, from the sweep's leases."""
    ids = run_ids(files, sweep)
    if last is not None:
        ids = ids[-last:] if last > 0 else []
    if not ids:
        return []
    owners = {owner for owner, live in leases(files, sweep).values() if live}
    now = time.time()
    out = []
    for run_id in ids:
        found = _read_json(files, join(runs_dir(files, sweep), run_id + ".json"))
        record = None if found is None else _record(found, run_id, owners, now)
        if record is not None:
            out.append(record)
    return out


__all__ = ["RECORD_LIMIT_BYTES", "RunRecord", "new_run_id", "read_runs", "run_ids", "runs_dir", "write_run"]
