"""The status lookup a sweep start makes (``Store.trial_statuses``): the same answer as SQL, one
file per key, and one file to read once the trials kind is compacted; plus ``compact(kinds=)``
and ``remove_temporaries``."""
from __future__ import annotations

import datetime as dt
import os

import pytest
import store_testkit as kit

from store import InvalidNameError, SchemaError
from store import lookup as lookup_module
from store.catalog import list_kind
from store.layout import kind_dir, references_dir


def _failed(L: int):
    key, rows, _ = kit.trial(L=L, steps=3, seeds=(0, 1))
    rows = [dict(r, status="failed", error="RuntimeError: boom") for r in rows if r["step"] == 0]
    row = kit.trial_row_from_metrics(rows, config_json="{}", started_at=kit.STARTED, seeds=(0, 1))
    return key, rows, row


def _fill(store, sweep="s"):
    trials = kit.grid(n_L=3, n_M=2, steps=3, seeds=(0, 1))
    trials.append(kit.trial(L=3, steps=3, seeds=(0, 1, 2), diverge_at=1))
    trials.append(_failed(L=5))
    for key, rows, row in trials:
        store.write_trial(sweep, key, rows, row)
    return trials


def _sql_statuses(store, sweep="s"):
    table = store.query("SELECT trial_key, status FROM trials", sweep=sweep)
    return dict(zip(table.column(0).to_pylist(), table.column(1).to_pylist()))


def _files_read(monkeypatch):
    """Count the files each lookup scans."""
    seen: list[int] = []
    real = lookup_module.kind_dataset

    def counting(files, kind, sources, fragments=None):
        seen.append(len(sources))
        return real(files, kind, sources, fragments)

    monkeypatch.setattr(lookup_module, "kind_dataset", counting)
    return seen


def test_statuses_match_sql_before_and_after_compacting_the_trials(any_store, monkeypatch):
    trials = _fill(any_store)
    expected = _sql_statuses(any_store)
    assert sorted(expected.values()) == ["diverged", "failed"] + ["ok"] * 6
    seen = _files_read(monkeypatch)
    assert any_store.trial_statuses("s") == expected
    assert seen == [len(trials)]  # one small file per trial

    report = any_store.compact("s", kinds=("trials",))
    assert [(k.kind, k.files_in, k.files_out) for k in report.kinds] == [("trials", len(trials), 1)]
    assert len(list_kind(any_store.files, "s", "metrics").singles) == len(trials)  # metrics untouched
    assert any_store.trial_statuses("s") == expected
    assert seen[-1] == 1  # the next sweep start reads one file
    assert any_store.check().ok
    assert any_store.trial_statuses("absent") == {}


def test_a_trial_rerun_after_compaction_shows_its_new_status_once(local_store):
    _fill(local_store)
    local_store.compact("s", kinds=["trials"])
    failed_key = next(k for k, s in local_store.trial_statuses("s").items() if s == "failed")
    _, rows, row = kit.trial(L=5, steps=3, seeds=(0, 1))
    local_store.write_trial("s", failed_key, rows, row)  # the rerun succeeded
    statuses = local_store.trial_statuses("s")
    assert statuses[failed_key] == "ok" and statuses == _sql_statuses(local_store)
    assert local_store.trial_column("s", "error", [failed_key]) == {failed_key: None}


def test_trial_column_reads_only_the_keys_asked_for(local_store, monkeypatch):
    trials = _fill(local_store)
    failed_key = trials[-1][0]
    ok_key = trials[0][0]
    seen = _files_read(monkeypatch)
    assert local_store.trial_column("s", "error", [failed_key, "nosuchkey"]) == {failed_key: "RuntimeError: boom"}
    assert seen == [1]
    local_store.compact("s")
    errors = local_store.trial_column("s", "error", [failed_key, ok_key])
    assert errors == {failed_key: "RuntimeError: boom", ok_key: None}
    assert local_store.trial_column("s", "n_seeds") == {k: len(row["seeds"]) for k, _, row in trials}
    with pytest.raises(SchemaError, match="no column 'colour'"):
        local_store.trial_column("s", "colour")


def test_trial_metrics_gives_the_views_rows_of_the_keys_asked_for(any_store, monkeypatch):
    trials = _fill(any_store)
    keys = [trials[0][0], trials[-2][0], trials[-1][0]]  # an ok, a diverged and a failed trial

    def view_rows(keys):
        listed = ", ".join(f"'{k}'" for k in keys)
        return any_store.query(f"SELECT * FROM metrics WHERE trial_key IN ({listed})", sweep="s")

    def same(a, b):
        order = [("trial_key", "ascending"), ("seed", "ascending"), ("step", "ascending")]
        return a.cast(b.schema).sort_by(order).equals(b.sort_by(order))

    seen = _files_read(monkeypatch)
    assert same(any_store.trial_metrics("s", keys + ["nosuchkey"]), view_rows(keys))
    assert seen == [3]  # one small file per trial asked for
    assert any_store.trial_metrics("s", ["nosuchkey"]) is None
    any_store.compact("s")  # one file of every trial: filtered to the keys asked for
    assert same(any_store.trial_metrics("s", keys), view_rows(keys))
    with pytest.raises(InvalidNameError):
        any_store.trial_metrics("../s", keys)


def test_compact_refuses_an_unknown_kind(local_store):
    _fill(local_store)
    with pytest.raises(InvalidNameError, match="unknown kind 'metric'"):
        local_store.compact("s", kinds=("metric",))
    assert len(list_kind(local_store.files, "s", "trials").singles) == 8  # nothing happened


def test_remove_temporaries_spares_recent_writes_and_the_references_unless_asked(local_store):
    _fill(local_store)
    root = local_store.files.root
    old = os.path.join(kind_dir(root, "s", "metrics"), ".tmp.dead.0000.parquet")
    recent = os.path.join(kind_dir(root, "s", "trials"), ".tmp.live.0001.parquet")
    os.makedirs(references_dir(root))
    old_reference = os.path.join(references_dir(root), ".tmp.dead.ref.parquet")
    for path in (old, recent, old_reference):
        open(path, "wb").close()
    two_hours_ago = dt.datetime.now(dt.timezone.utc).timestamp() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    os.utime(old_reference, (two_hours_ago, two_hours_ago))

    assert local_store.remove_temporaries("s") == 1  # default: older than an hour, sweep only
    assert not os.path.exists(old) and os.path.exists(recent) and os.path.exists(old_reference)
    now = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1)
    assert local_store.remove_temporaries("s", before=now, references=True) == 2
    assert not os.path.exists(recent) and not os.path.exists(old_reference)
    assert len(local_store.completed_trial_keys("s")) == 8  # only temporaries went
    assert local_store.check().ok


def test_a_sweeps_end_spares_a_live_reference_write_of_another_sweep(local_store):
    from explorer.sweeps.tracking.cleanup import remove_leftovers

    _fill(local_store)
    root = local_store.files.root
    os.makedirs(references_dir(root))
    live_reference = os.path.join(references_dir(root), ".tmp.live.ref.parquet")  # another sweep's write
    own_leftover = os.path.join(kind_dir(root, "s", "metrics"), ".tmp.dead.0000.parquet")
    for path in (live_reference, own_leftover):
        open(path, "wb").close()
    assert remove_leftovers(local_store, "s") == 1
    assert os.path.exists(live_reference) and not os.path.exists(own_leftover)


def test_trial_lookup_reads_again_when_a_compaction_removes_a_file_meanwhile(local_store, monkeypatch):
    import store.lookup as lookup

    _fill(local_store)
    expected = local_store.trial_statuses("s")
    real, calls = lookup.read_values, []

    def flaky(*args):
        calls.append(1)
        if len(calls) == 1:
            raise FileNotFoundError("a compacted file went away")
        return real(*args)

    monkeypatch.setattr(lookup, "read_values", flaky)
    assert local_store.trial_statuses("s") == expected and len(calls) == 2


def test_a_file_removed_between_listing_and_reading_is_read_again_not_called_unreadable(local_store, monkeypatch):
    import store.lookup as lookup

    _fill(local_store)
    expected = local_store.trial_statuses("s")
    gone_key = sorted(expected)[0]
    real, calls = lookup.kind_dataset, []

    def remove_one_first(files, kind, sources, fragments):
        calls.append(1)
        if len(calls) == 1:  # what a concurrent rm or compaction does after our listing
            os.remove(next(s.path for s in sources if os.path.basename(s.path) == f"{gone_key}.parquet"))
        return real(files, kind, sources, fragments)

    monkeypatch.setattr(lookup, "kind_dataset", remove_one_first)
    got = local_store.trial_statuses("s")
    assert len(calls) == 2  # the first read failed on the vanished file, the second listed again
    assert got == {k: v for k, v in expected.items() if k != gone_key}


def test_remove_unfinished_deletes_only_the_metrics_of_the_given_keys_that_have_no_trials_row(local_store):
    from store.write import parquet_bytes
    from store.schema import SCHEMA_VERSION, to_table
    from store.layout import key_file
    _fill(local_store)
    complete = sorted(local_store.completed_trial_keys("s"))
    # two workers stopped between their writes: metrics landed, the trials row did not
    orphans = []
    for L in (7, 9):
        key, rows, _ = kit.trial(L=L, steps=3, seeds=(0, 1))
        table = to_table("metrics", rows, {"sweep": "s", "trial_key": key, "schema_version": SCHEMA_VERSION, "package_version": "t"})
        local_store.files.put(key_file(local_store.files.root, "s", "metrics", key), parquet_bytes(table))
        orphans.append(key)
    assert {f.category for f in local_store.check().findings} == {"incomplete"}

    # a key held by another driver (not passed) keeps its rows; complete keys are never touched
    assert local_store.remove_unfinished("s", [orphans[0], *complete]) == 1
    assert [f.where for f in local_store.check().findings] == [f"s/{orphans[1]}"]
    assert local_store.remove_unfinished("s", orphans) == 1
    assert local_store.check().ok
    assert sorted(local_store.completed_trial_keys("s")) == complete
    assert local_store.query("SELECT count(DISTINCT trial_key) AS n FROM metrics").column(0)[0].as_py() == len(complete)
    with pytest.raises(InvalidNameError):
        local_store.remove_unfinished("s", ["../x"])
