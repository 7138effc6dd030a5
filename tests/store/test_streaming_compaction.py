"""Compaction streams its inputs batch by batch and checks parts by fingerprint: its parts are,
row for row, what merging everything in memory, sorting and cutting gave; a time budget leaves
the rest for later without losing a row."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import store_testkit as kit

from store import compaction
from store.catalog import list_kind
from store.compaction import SORT_KEYS, ContentDigest, cut_parts, same_content
from store.query import kind_dataset
from store.schema import KEY_COLUMN


def _fill(store, n: int = 24, sweep: str = "s"):
    for i in range(n):
        key, rows, trial = kit.trial(L=2 + i, M=1 + i % 3, steps=3, seeds=(0, 1, 2), diverge_at=2 if i % 5 == 0 else None)
        store.write_trial(sweep, key, rows, trial)


def _in_memory_parts(store, kind: str, rows_per_file: int, sweep: str = "s") -> list[pa.Table]:
    """The old compaction: every small file read whole, concatenated, sorted, cut."""
    listing = list_kind(store.files, sweep, kind)
    from store.catalog import Source

    parts = kind_dataset(store.files, kind, [Source(e.path) for e in listing.singles.values()])
    table = pa.concat_tables([p.to_table() for p in parts])
    table = table.sort_by([(k, "ascending") for k in SORT_KEYS[kind]]).combine_chunks()
    return cut_parts(table, KEY_COLUMN[kind], rows_per_file)


def _parts_on_disk(store, kind: str, sweep: str = "s") -> list[pa.Table]:
    listing = list_kind(store.files, sweep, kind)
    assert not listing.singles
    number = lambda e: int(e.name.split(".")[2])  # noqa: E731 - compacted.<generation>.<n>.parquet
    return [pq.read_table(e.path) for e in sorted(listing.compacted, key=number)]


@pytest.mark.parametrize("rows_per_file", [7, 20, 4_000_000])
def test_streamed_parts_equal_the_in_memory_merge_row_for_row(local_store, monkeypatch, rows_per_file):
    _fill(local_store)
    expected = {kind: _in_memory_parts(local_store, kind, rows_per_file) for kind in ("metrics", "trials")}
    monkeypatch.setattr(compaction, "BATCH_FILES", 5)  # many batches, parts crossing batches
    report = local_store.compact("s", rows_per_file=rows_per_file, kinds=("metrics", "trials"))
    for kind, meant in expected.items():
        written = _parts_on_disk(local_store, kind)
        assert len(written) == len(meant) and len(meant) >= (3 if rows_per_file == 7 else 1)
        for back, part in zip(written, meant):
            assert same_content(back, part)
    metrics = next(k for k in report.kinds if k.kind == "metrics")
    assert metrics.files_in == 24 and metrics.rows == sum(t.num_rows for t in expected["metrics"])


def test_a_second_compaction_merges_new_files_with_small_compacted_ones_in_key_order(local_store, monkeypatch):
    _fill(local_store, n=10)
    local_store.compact("s")
    for i in range(10, 16):
        key, rows, trial = kit.trial(L=2 + i, M=1, steps=3)
        local_store.write_trial("s", key, rows, trial)
    before = local_store.query("SELECT * FROM metrics ORDER BY trial_key, seed, step")
    monkeypatch.setattr(compaction, "BATCH_FILES", 3)
    local_store.compact("s")
    (part,) = _parts_on_disk(local_store, "metrics")
    assert same_content(local_store.query("SELECT * FROM metrics ORDER BY trial_key, seed, step"), before)
    rows = list(zip(*(part.column(c).to_pylist() for c in ("trial_key", "seed", "step"))))
    assert rows == sorted(rows) and len(rows) == before.num_rows  # one part, in key order
    assert local_store.check().ok


def test_a_fingerprint_does_not_depend_on_chunking_and_sees_every_bit():
    nan_a = np.array([np.nan], dtype=np.float64)
    nan_b = nan_a.view(np.int64).copy()
    nan_b[0] ^= 1  # another NaN payload
    table = pa.table({"k": ["a", "b", None, "ccc"], "x": [1.0, -0.0, None, 2.5],
                      "g": pa.array([[1.0, np.nan], None, [], [3.0]]), "n": [1, 2, 3, None], "f": [True, None, False, True]})
    whole, pieces = ContentDigest(), ContentDigest()
    whole.add(table)
    for start in range(4):
        pieces.add(table.slice(start, 1))
    assert same_content(whole.table(), pieces.table())
    for changed in (table.set_column(1, "x", pa.array([1.0, 0.0, None, 2.5])),  # -0.0 -> 0.0
                    table.set_column(0, "k", pa.array(["a", "b", "", "ccc"])),  # null -> empty
                    table.set_column(2, "g", pa.array([[1.0, nan_b.view(np.float64)[0]], None, [], [3.0]]))):
        other = ContentDigest()
        other.add(changed)
        assert not same_content(whole.table(), other.table())


def test_a_time_budget_stops_between_batches_and_loses_nothing(local_store, monkeypatch):
    _fill(local_store, n=12)
    before = local_store.query("SELECT * FROM metrics ORDER BY trial_key, seed, step")
    monkeypatch.setattr(compaction, "BATCH_FILES", 4)
    report = local_store.compact("s", kinds=("metrics",), budget_s=0.0)  # one batch, then the budget is spent
    (done,) = report.kinds
    assert done.files_in == 4 and done.files_out == 1
    singles, compacted = list_kind(local_store.files, "s", "metrics").singles, list_kind(local_store.files, "s", "metrics").compacted
    assert len(singles) == 8 and len(compacted) == 1
    assert same_content(local_store.query("SELECT * FROM metrics ORDER BY trial_key, seed, step"), before)
    local_store.compact("s", kinds=("metrics",))  # the rest, and the small compacted file with it
    assert same_content(local_store.query("SELECT * FROM metrics ORDER BY trial_key, seed, step"), before)
    assert len(list_kind(local_store.files, "s", "metrics").compacted) == 1
    assert local_store.check().ok


def _all_files(root) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, names in os.walk(root) for f in names)


def test_a_failure_mid_part_leaves_no_part_and_no_temporary(local_store, monkeypatch):
    _fill(local_store, n=6)
    names = _all_files(local_store.files.root)
    calls = []
    real_add = ContentDigest.add

    def fail_second(self, table):  # the writer holds a temporary with one batch in it by then
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_add(self, table)

    monkeypatch.setattr(compaction, "BATCH_FILES", 2)
    monkeypatch.setattr(ContentDigest, "add", fail_second)
    with pytest.raises(OSError):
        local_store.compact("s", kinds=("metrics",))
    assert _all_files(local_store.files.root) == names
