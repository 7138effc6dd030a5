"""Quarantine of unreadable files, repair of stale locks and temporaries, the store probe."""
from __future__ import annotations

import os
import time

import pytest
import store_testkit as kit

from store import Store, StoreError
from store.layout import QUARANTINE_DIR, join, key_file, reference_lock, temporary_path


def _truncate(st, path):
    with st.files.fs.open_input_stream(path) as f:
        raw = f.read()
    st.files.put(path, raw[: len(raw) - 100])


def test_quarantine_moves_an_unreadable_file_aside_and_every_query_works_again(any_store):
    for key, rows, trial in kit.grid(n_L=2, n_M=1):
        any_store.write_trial("s", key, rows, trial)
    bad_key, rows, trial = kit.trial(L=16)
    any_store.write_trial("s", bad_key, rows, trial)
    path = key_file(any_store.files.root, "s", "metrics", bad_key)
    _truncate(any_store, path)
    shown = any_store.files.display(path)
    with pytest.raises(StoreError) as info:
        any_store.query("SELECT count(*) FROM metrics")
    assert shown in str(info.value) and "explorer check --quarantine" in str(info.value)
    assert [f.category for f in any_store.check().problems][:1] == ["unreadable"]
    moved = any_store.quarantine()
    target = join(any_store.files.root, QUARANTINE_DIR, "sweep=s", "kind=metrics", f"{bad_key}.parquet")
    assert moved == [(shown, any_store.files.display(target))]
    assert any_store.files.info(path) is None and any_store.files.info(target) is not None  # nothing deleted
    assert any_store.query("SELECT count(DISTINCT trial_key) AS n FROM metrics").to_pylist() == [{"n": 2}]
    assert any_store.trial_statuses("s")
    report = any_store.check()
    assert "quarantined" in report.counts() and not any(f.category in ("foreign", "unreadable") for f in report.findings)
    assert any_store.quarantined() == [any_store.files.display(target)]
    assert any_store.quarantine() == []  # nothing left to move
    any_store.files.move(target, path)  # the documented restore: move it back
    with pytest.raises(StoreError, match="explorer check --quarantine"):
        any_store.query("SELECT count(*) FROM metrics")


def test_a_second_quarantine_of_the_same_name_never_overwrites(local_store):
    key, rows, trial = kit.trial()
    for _ in range(2):
        local_store.write_trial("s", key, rows, trial)
        _truncate(local_store, key_file(local_store.files.root, "s", "trials", key))
        assert len(local_store.quarantine("s")) == 1
    assert [os.path.basename(p) for p in local_store.quarantined()] == [f"{key}.parquet", f"{key}.parquet.1"]


def _age(path, seconds):
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_check_fails_on_a_stale_lock_and_repair_removes_it_but_never_a_live_one(local_store):
    key, rows, trial = kit.trial()
    local_store.write_trial("s", key, rows, trial)
    os.makedirs(join(local_store.files.root, "references"), exist_ok=True)
    stale = reference_lock(local_store.files.root, "deadbeef")  # Ctrl-C during the reference phase
    live = reference_lock(local_store.files.root, "cafe")
    for path in (stale, live):
        open(path, "w").close()
    _age(stale, 61)  # past the documented expiry (references.STALE_AFTER_S = 60 s)
    old_tmp = temporary_path(key_file(local_store.files.root, "s", "metrics", "k1"), "dead")
    new_tmp = temporary_path(key_file(local_store.files.root, "s", "metrics", "k2"), "busy")
    for path in (old_tmp, new_tmp):
        open(path, "w").close()
    _age(old_tmp, 3601)
    report = local_store.check()
    assert not report.ok
    assert {f.where for f in report.problems if f.category == "stale_lock"} == {stale}
    assert {f.where for f in report.findings if f.category == "lock"} == {live}
    assert {f.where for f in report.problems if f.category == "temporary"} == {old_tmp, new_tmp}
    repaired = local_store.repair()
    assert sorted(repaired.removed) == sorted([stale, old_tmp]) and repaired.kept_live == [live]
    assert os.path.exists(live) and os.path.exists(new_tmp)
    os.remove(new_tmp)
    assert local_store.check().ok


def test_repair_reads_the_heartbeat_again_before_removing(local_store, monkeypatch):
    """A holder that refreshes its lock between check and repair keeps it."""
    os.makedirs(join(local_store.files.root, "references"))
    lock = reference_lock(local_store.files.root, "abc")
    open(lock, "w").close()
    _age(lock, 120)
    assert not local_store.check().ok
    os.utime(lock)  # the heartbeat of a holder that was only slow
    assert local_store.repair().removed == [] and os.path.exists(lock)


def test_probe_passes_on_a_usable_store_and_names_the_failure_otherwise(any_store, tmp_path):
    any_store.probe()
    assert not any_store.exists()  # the marker is gone
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match="cannot be written"):
        Store(blocker / "results").probe()
