"""Run records (store/runs.py): written at a run's start and end, read back oldest first, their
liveness judged from the sweep's lease heartbeats, on a local disk and on S3 alike."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from store import InvalidNameError, Store, new_run_id

NOW = dt.datetime.now(dt.timezone.utc)


def _write(st: Store, run_id: str, keys, *, started=None, ended=None, only=None, ttl_s=60.0):
    started = started or dt.datetime.now(dt.timezone.utc)
    st.write_run("s", run_id, spec={"name": "s", "grid": {"L": [4, 8], "problem_seeds": [1, 2]}}, planned_keys=keys,
                 started_at=started, ended_at=ended, only_keys=only, ttl_s=ttl_s)


def test_records_round_trip_oldest_first_with_their_grid(any_store):
    first, second = new_run_id(NOW - dt.timedelta(hours=1)), new_run_id(NOW)
    assert first < second
    _write(any_store, second, ["a", "b"], only=["b"])
    _write(any_store, first, ["a", "b", "c"], started=NOW - dt.timedelta(hours=1), ended=NOW - dt.timedelta(minutes=50))
    runs = any_store.runs("s")
    assert [r.run_id for r in runs] == [first, second]
    assert runs[0].planned_keys == {"a", "b", "c"} and runs[0].only_keys is None and not runs[0].live
    assert runs[0].target_keys == {"a", "b", "c"} and runs[0].grid == {"L": [4, 8], "problem_seeds": [1, 2]}
    assert runs[1].target_keys == {"b"} and runs[1].ended_at is None and runs[1].live  # just started, this process
    assert [r.run_id for r in any_store.runs("s", last=1)] == [second]
    assert any_store.check("s").ok  # the records are no stray files of the sweep


def test_an_unended_run_is_live_while_its_owner_holds_a_live_lease(local_store, monkeypatch):
    old = NOW - dt.timedelta(hours=2)
    run_id = new_run_id(old)
    _write(local_store, run_id, ["a"], started=old)
    owner = local_store.runs("s")[0].owner
    assert not local_store.runs("s")[0].live  # started long ago, no lease: it died without ending
    local_store.claim("s", ["a"], owner, ttl_s=60)
    assert local_store.runs("s")[0].live
    local_store.release("s", ["a"], owner)
    _write(local_store, run_id, ["a"], started=old, ended=NOW)
    local_store.claim("s", ["a"], owner, ttl_s=60)
    assert not local_store.runs("s")[0].live  # ended: a lease of the same owner (a later run) does not revive it


def test_a_dead_owner_of_this_machine_is_not_live(local_store):
    run_id = new_run_id()
    _write(local_store, run_id, ["a"])
    path = local_store.files.root + f"/sweep=s/.runs/{run_id}.json"
    data = json.loads(open(path).read())
    data["owner"] = data["owner"].rsplit(":", 1)[0] + ":999999999"
    open(path, "w").write(json.dumps(data))
    assert not local_store.runs("s")[0].live


def test_files_that_are_no_record_are_skipped_and_bad_ids_refused(local_store):
    _write(local_store, new_run_id(), ["a"])
    runs_dir = local_store.files.root + "/sweep=s/.runs"
    open(runs_dir + "/zzz.json", "w").write("[1, 2]")
    open(runs_dir + "/zzzz.json", "w").write("{not json")
    assert len(local_store.runs("s")) == 1
    with pytest.raises(InvalidNameError):
        _write(local_store, "../x", ["a"])
