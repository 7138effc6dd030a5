"""`check` finds broken, foreign, duplicated and incomplete data; half-written files are never data."""
from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import store_testkit as kit

from store import StoreError
from store.layout import key_file, temporary_path


def _categories(report):
    return sorted({f.category for f in report.findings})


def _metrics_path(store, key, sweep="s"):
    return key_file(store.files.root, sweep, "metrics", key)


def test_a_clean_store_checks_ok(any_store):
    for key, rows, trial in kit.grid(n_L=2, n_M=2):
        any_store.write_trial("s", key, rows, trial)
    key, rows, trial = kit.trial(L=3, seeds=(0, 1, 2), diverge_at=2)  # a diverged seed stops early: fine
    any_store.write_trial("s", key, rows, trial)
    report = any_store.check()
    assert report.ok and report.findings == []
    assert report.trials == 5 and report.files_checked == 10


def test_a_file_truncated_mid_write_is_never_read_and_check_reports_it(local_store):
    key, rows, trial = kit.trial()
    local_store.write_trial("s", key, rows, trial)
    data = open(_metrics_path(local_store, key), "rb").read()
    other_key, other_rows, other_trial = kit.trial(L=16)
    # A writer killed mid-write leaves a prefix of the file under its temporary name.
    partial = temporary_path(_metrics_path(local_store, other_key), "deadbeef")
    with open(partial, "wb") as f:
        f.write(data[: len(data) // 2])
    assert local_store.query("SELECT count(DISTINCT trial_key) AS n FROM metrics").to_pylist() == [{"n": 1}]
    assert local_store.completed_trial_keys("s") == {key}
    report = local_store.check()
    assert not report.ok and _categories(report) == ["temporary"]
    assert report.problems[0].where == partial


def test_a_truncated_file_under_a_final_name_fails_queries_instead_of_returning_rows(local_store):
    key, rows, trial = kit.trial()
    local_store.write_trial("s", key, rows, trial)
    other_key, other_rows, other_trial = kit.trial(L=16)
    local_store.write_trial("s", other_key, other_rows, other_trial)
    path = _metrics_path(local_store, other_key)
    data = open(path, "rb").read()
    with open(path, "wb") as f:  # e.g. a non-atomic copy by another tool, cut short
        f.write(data[: len(data) - 100])
    with pytest.raises(StoreError, match=r"cannot read .*" + other_key + r"\.parquet.*magic bytes.*explorer check --quarantine"):
        local_store.query("SELECT count(*) FROM metrics")
    report = local_store.check()
    assert [f.category for f in report.problems] == ["unreadable", "incomplete"]
    assert report.problems[0].where == path
    assert report.metric_rows == len(rows)  # the row checks still ran, on the readable files


def test_foreign_files_are_reported_and_never_read(local_store):
    key, rows, trial = kit.trial()
    local_store.write_trial("s", key, rows, trial)
    kind_dir = os.path.dirname(_metrics_path(local_store, key))
    open(os.path.join(kind_dir, "notes.txt"), "w").write("hi")
    os.makedirs(os.path.join(local_store.files.root, "scratch"))
    pq.write_table(pa.table({"x": [1]}), os.path.join(kind_dir, "abcdef.parquet"))
    other_key, _, _ = kit.trial(L=99)
    shutil.copy(_metrics_path(local_store, key), _metrics_path(local_store, other_key))  # rows of another trial
    report = local_store.check()
    foreign = sorted(f.detail.split(":")[0] for f in report.problems if f.category == "foreign")
    assert len(foreign) == 4, report.lines()
    assert any("named after" in f.detail for f in report.problems)
    assert any("missing column(s)" in f.detail for f in report.problems)


def test_duplicate_rows_and_missing_steps_are_reported(local_store):
    key, rows, trial = kit.trial(steps=3, seeds=(0, 1))
    local_store.write_trial("s", key, rows, trial)
    # Another writer (not the Store) put duplicate rows into a well-formed file.
    path = _metrics_path(local_store, key)
    table = pq.read_table(path)
    pq.write_table(pa.concat_tables([table, table.slice(0, 2)]), path)
    gap_key, gap_rows, gap_trial = kit.trial(L=16, steps=3, seeds=(0, 1, 2))
    gap_rows = [r for r in gap_rows if not (r["seed"] == 1 and r["step"] == 2) and r["seed"] != 2]
    local_store.write_trial("s", gap_key, gap_rows, gap_trial)
    report = local_store.check()
    assert _categories(report) == ["duplicate", "missing_steps"]
    assert {f.where for f in report.problems if f.category == "duplicate"} == {f"s/{key}/seed=0"}
    assert {f.where for f in report.problems if f.category == "missing_steps"} == {f"s/{gap_key}/seed=1", f"s/{gap_key}/seed=2"}


def test_a_trial_interrupted_between_its_two_files_is_incomplete_and_not_completed(local_store):
    key, rows, trial = kit.trial()
    local_store.write_trial("s", key, rows, trial)
    os.remove(key_file(local_store.files.root, "s", "trials", key))  # crash before the trials row
    assert local_store.completed_trial_keys("s") == set()
    report = local_store.check()
    assert [f.category for f in report.problems] == ["incomplete"]
    local_store.write_trial("s", key, rows, trial)  # the rerun replaces, never duplicates
    assert local_store.check().ok
    assert local_store.query("SELECT count(*) AS n FROM metrics").to_pylist() == [{"n": len(rows)}]


def test_check_report_lines_summarize(local_store):
    key, rows, trial = kit.trial()
    local_store.write_trial("s", key, rows, trial)
    os.remove(key_file(local_store.files.root, "s", "trials", key))
    lines = local_store.check().lines()
    assert lines[0].startswith(f"problem: incomplete: s/{key}: metric rows without a trials row")
    assert lines[-1] == f"checked 1 files, 0 trials, {len(rows)} metric rows: 1 problem(s)"
