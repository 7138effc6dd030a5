"""Compaction keeps exactly the same rows, and losing it halfway loses nothing."""
from __future__ import annotations

import math
import os
import time

import pyarrow as pa
import pytest
import store_testkit as kit

from store import StoreError
from store import compaction as compaction_module
from store.catalog import list_kind
from store.compaction import same_content
from store.files import Files
from store.layout import key_file

QUERIES = [
    "SELECT L, M, D, count(*) AS n, avg(err_out) AS e, max(err_hidden) AS h FROM metrics GROUP BY L, M, D ORDER BY ALL",
    "SELECT status, count(*) AS n, sum(final_err_out) AS s FROM trials GROUP BY ALL ORDER BY ALL",
    "SELECT trial_key, seed, step, err_out FROM metrics WHERE step = steps ORDER BY ALL",
]


def _fill(store, n_L=3, n_M=3, sweep="s"):
    trials = kit.grid(n_L=n_L, n_M=n_M, steps=4, seeds=(0, 1))
    key, rows, trial = kit.trial(L=3, steps=4, seeds=(0, 1, 2), diverge_at=1)
    rows[-1]["err_hidden"] = float("nan")  # on the diverged row: a NaN an ok row may not hold (check flags it)
    trials.append((key, rows, trial))
    for key, rows, trial in trials:
        store.write_trial(sweep, key, rows, trial)
    return trials


def _everything(store):
    order = "ORDER BY trial_key, seed, step"
    return (
        store.query(f"SELECT * FROM metrics {order}"),
        store.query("SELECT * FROM trials ORDER BY trial_key"),
        [store.query(q) for q in QUERIES],
    )


def _assert_same(before, after):
    assert same_content(before[0], after[0]), "metrics rows changed"
    assert same_content(before[1], after[1]), "trials rows changed"
    for b, a in zip(before[2], after[2]):  # aggregates: equal up to float summation order
        assert b.schema == a.schema and b.num_rows == a.num_rows
        for row_b, row_a in zip(b.to_pylist(), a.to_pylist()):
            for name, value in row_b.items():
                if isinstance(value, float):
                    assert math.isclose(value, row_a[name], rel_tol=1e-12) or (math.isnan(value) and math.isnan(row_a[name]))
                else:
                    assert value == row_a[name]


def _names(store, kind, sweep="s"):
    listing = list_kind(store.files, sweep, kind)
    return sorted(listing.singles), [e.name for e in listing.compacted]


def test_compaction_preserves_rows_and_answers_exactly(any_store):
    trials = _fill(any_store)
    fit = {"form": "power", "metric": "err_out", "step": 4, "parameter": "a", "estimate": -1.0, "ci_low": None,
           "ci_high": None, "r2_log": None, "n_points": 9, "n_excluded": 0, "extrapolation_error": None}
    any_store.write_fit("s", "fit1", [fit])
    any_store.write_fit("s", "fit2", [fit])
    before = _everything(any_store)
    keys = any_store.completed_trial_keys("s")
    report = any_store.compact("s")
    assert [(k.kind, k.files_in, k.files_out, k.removed) for k in report.kinds] == [
        ("metrics", len(trials), 1, len(trials)), ("trials", len(trials), 1, len(trials)), ("fits", 2, 1, 2),
        ("rounds", 0, 0, 0), ("comparisons", 0, 0, 0),
        ("optima", 0, 0, 0),
    ]
    for kind in ("metrics", "trials", "fits"):
        singles, compacted = _names(any_store, kind)
        assert singles == [] and len(compacted) == 1
    _assert_same(before, _everything(any_store))
    assert any_store.completed_trial_keys("s") == keys
    assert any_store.check().ok
    assert any_store.compact("s").summary().endswith(" s") and "nothing to compact" in any_store.compact("s").summary()


def test_new_trials_after_compaction_merge_into_the_next_one(local_store):
    _fill(local_store)
    local_store.compact("s")
    key, rows, trial = kit.trial(L=128)
    local_store.write_trial("s", key, rows, trial)
    before = _everything(local_store)
    local_store.compact("s")
    assert _names(local_store, "metrics") == ([], [_names(local_store, "metrics")[1][0]])
    _assert_same(before, _everything(local_store))


def test_metrics_of_an_incomplete_trial_stay_out_of_compaction(local_store):
    _fill(local_store)
    key, rows, trial = kit.trial(L=77)
    local_store.write_trial("s", key, rows, trial)
    os.remove(key_file(local_store.files.root, "s", "trials", key))  # interrupted trial
    local_store.compact("s")
    assert _names(local_store, "metrics")[0] == [key]
    rows[0]["err_out"] = 5.0
    local_store.write_trial("s", key, rows, trial)  # its rerun replaces the small file
    assert local_store.query(f"SELECT count(*) AS n FROM metrics WHERE trial_key = '{key}'").to_pylist() == [{"n": len(rows)}]


def test_a_trial_rewritten_after_compaction_wins_without_duplicates(local_store):
    trials = _fill(local_store)
    local_store.compact("s")
    key, rows, trial = trials[0]
    for r in rows:
        r["err_out"] = 7.0
    local_store.write_trial("s", key, rows, trial)
    query = f"SELECT count(*) AS n, min(err_out) AS lo, max(err_out) AS hi FROM metrics WHERE trial_key = '{key}'"
    assert local_store.query(query).to_pylist() == [{"n": len(rows), "lo": 7.0, "hi": 7.0}]
    assert local_store.check().ok
    local_store.compact("s")
    assert local_store.query(query).to_pylist() == [{"n": len(rows), "lo": 7.0, "hi": 7.0}]
    assert _names(local_store, "metrics")[0] == []


def test_rows_per_file_cuts_between_trials_never_inside_one(local_store):
    trials = _fill(local_store)
    before = _everything(local_store)
    local_store.compact("s", rows_per_file=25)
    singles, compacted = _names(local_store, "metrics")
    assert singles == [] and len(compacted) > 2
    files = local_store.query("SELECT trial_key, count(*) AS n FROM metrics GROUP BY ALL")
    assert files.num_rows == len(trials)
    _assert_same(before, _everything(local_store))
    for name in compacted:
        path = os.path.join(local_store.files.root, "sweep=s", "kind=metrics", name)
        table = local_store.files.read_table(path, columns=["trial_key"])
        assert table.num_rows <= 25 or len(set(table.column(0).to_pylist())) == 1


def test_an_interrupted_compaction_loses_nothing_and_a_rerun_finishes_it(local_store, monkeypatch):
    _fill(local_store)
    before = _everything(local_store)
    real_delete = Files.delete
    calls = []

    def crash_after_two(self, path, missing_ok=True):
        calls.append(path)
        if len(calls) > 2:
            raise KeyboardInterrupt("killed mid-compaction")
        real_delete(self, path, missing_ok)

    monkeypatch.setattr(Files, "delete", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        local_store.compact("s")
    monkeypatch.setattr(Files, "delete", real_delete)
    singles, compacted = _names(local_store, "metrics")
    assert len(compacted) == 1 and singles, "the crash left both copies"
    _assert_same(before, _everything(local_store))  # no duplicate, no loss
    report = local_store.check()
    assert report.ok and {f.category for f in report.findings} == {"leftover"}
    local_store.compact("s")
    assert _names(local_store, "metrics")[0] == [] and len(_names(local_store, "metrics")[1]) == 1
    _assert_same(before, _everything(local_store))
    assert local_store.check().findings == []


def test_a_part_that_does_not_read_back_stops_compaction_before_any_removal(local_store, monkeypatch):
    _fill(local_store)
    before_names = _names(local_store, "metrics")
    monkeypatch.setattr(compaction_module, "same_content", lambda a, b: False)
    with pytest.raises(StoreError, match="does not read back as written; originals kept"):
        local_store.compact("s")
    assert _names(local_store, "metrics") == before_names


def test_same_content_is_bitwise():
    a = pa.table({"x": [1.0, float("nan")], "k": ["a", "b"]})
    assert same_content(a, pa.table({"x": [1.0, float("nan")], "k": ["a", "b"]}))
    assert not same_content(a, pa.table({"x": [1.0, -float("nan")], "k": ["a", "b"]}))
    assert not same_content(a, pa.table({"x": [1.0, float("nan")], "k": ["a", "c"]}))
    assert not same_content(pa.table({"x": [0.0]}), pa.table({"x": [-0.0]}))


def test_same_content_compares_lists_of_floats_bitwise_nan_included():
    nan = float("nan")
    a = pa.table({"g": pa.array([[1.0, nan], None, [nan]], pa.list_(pa.float64()))})
    assert same_content(a, pa.table({"g": pa.array([[1.0, nan], None, [nan]], pa.list_(pa.float64()))}))
    assert not same_content(a, pa.table({"g": pa.array([[1.0, -nan], None, [nan]], pa.list_(pa.float64()))}))
    assert not same_content(a, pa.table({"g": pa.array([[1.0], [nan], [nan]], pa.list_(pa.float64()))}))
    assert not same_content(a, pa.table({"g": pa.array([[1.0, nan], [], [nan]], pa.list_(pa.float64()))}))
    assert not same_content(a, pa.table({"g": pa.array([[-0.0, nan], None, [nan]], pa.list_(pa.float64()))}))


def test_a_trial_whose_gram_rows_hold_nan_compacts_and_reads_back_bit_for_bit(local_store):
    """A diverged seed's Gram rows hold NaN: compaction's read-back check called them changed
    (NaN != NaN), so a sweep with a diverged trial could never be compacted."""
    key, rows, trial = kit.trial(L=8, diverge_at=2)
    for row in rows:
        row["gram_out"] = [0.5, float("nan")] if row["status"] == "diverged" else [0.5, 0.25]
    local_store.write_trial("s", key, rows, trial)
    _fill(local_store)
    before = _everything(local_store)
    local_store.compact("s")
    assert _names(local_store, "metrics")[0] == []
    _assert_same(before, _everything(local_store))
    grams = local_store.query("SELECT gram_out FROM metrics WHERE status = 'diverged' AND gram_out IS NOT NULL").to_pylist()
    assert len(grams) == 1 and grams[0]["gram_out"][0] == 0.5 and math.isnan(grams[0]["gram_out"][1])


def test_a_trial_rewritten_between_compactions_stat_and_delete_keeps_its_newest_rows(local_store, monkeypatch):
    """The race of the issue, made deterministic: a second driver rewrites a trial just as
    compaction is about to remove that trial's small (input) file."""
    from store import compaction

    grid = kit.grid(n_L=2, n_M=2)
    for key, rows, trial in grid:
        local_store.write_trial("s", key, rows, trial)
    key, rows, trial = grid[0]
    newer = [{**r, "wall_s": 99.0} for r in rows]
    rewritten = []

    def second_driver(path):
        if path.endswith(f"kind=trials/{key}.parquet") and not rewritten:
            time.sleep(0.01)  # a distinct mtime
            local_store.write_trial("s", key, newer, {**trial, "wall_s": 99.0})
            rewritten.append(path)

    monkeypatch.setattr(compaction, "_before_take_away", second_driver)
    report = local_store.compact("s")
    assert rewritten
    got = local_store.query(f"SELECT DISTINCT wall_s FROM trials WHERE trial_key = '{key}'").to_pylist()
    assert got == [{"wall_s": 99.0}]
    assert sum(k.kept_changed for k in report.kinds) == 1
    assert local_store.check().ok
