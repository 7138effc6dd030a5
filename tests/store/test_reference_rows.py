"""References as rows: compaction merges the single-reference files into a few compacted files;
a reference is then read by key from them, bit for bit; single files (old stores, or written
after a compaction) still read and take precedence."""
from __future__ import annotations

import numpy as np
import store_testkit as kit

from store import compaction, references
from store.catalog import list_references


def _key(i: int) -> str:
    return f"{i:016x}"


def _cache(store, keys):
    for key in keys:
        store.get_or_compute_reference(key, lambda key=key: kit.reference_arrays(key))


def _same_arrays(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in ((a[k], b[k]) for k in a))


def test_compacted_references_read_back_by_key_bit_for_bit(local_store, monkeypatch):
    keys = [_key(i * 7919 + 1) for i in range(40)]
    _cache(local_store, keys)
    monkeypatch.setattr(compaction, "REFERENCE_ROW_GROUP_ROWS", 6)  # many row groups: lookups skip most
    monkeypatch.setattr(compaction, "BATCH_FILES", 9)
    report = local_store.compact(None, kinds=("references",))
    assert report.kinds[0].files_in == 40 and report.kinds[0].rows == 80
    listing = list_references(local_store.files)
    assert not listing.singles and len(listing.compacted) == 1
    for key in keys:
        arrays, meta = local_store.read_reference(key)
        expected, expected_meta = kit.reference_arrays(key)
        assert _same_arrays(arrays, expected) and meta == expected_meta
        assert local_store.has_reference(key)

    def never():
        raise AssertionError("a compacted reference was computed again")

    assert _same_arrays(local_store.get_or_compute_reference(keys[3], never)[0], kit.reference_arrays(keys[3])[0])
    assert local_store.read_reference(_key(5)) is None and not local_store.has_reference(_key(5))
    assert local_store.check().ok


def test_single_files_still_read_and_win_over_a_compacted_copy(local_store):
    keys = [_key(i + 1) for i in range(5)]
    _cache(local_store, keys)
    local_store.compact(None, kinds=("references",))
    newer = {"f_ref": np.full((2, 2), -0.0), "h_ref": np.array([np.nan])}
    references.write(local_store.files, keys[0], newer, {"ref_key": keys[0], "v": 2})  # as an old store's file, or a rewrite
    arrays, meta = local_store.read_reference(keys[0])
    assert _same_arrays(arrays, newer) and meta["v"] == 2
    assert local_store.query("SELECT count(DISTINCT ref_key) AS n FROM \"references\"").column(0)[0].as_py() == 5
    local_store.compact(None, kinds=("references",))  # the shadowed copy goes, the newer rows stay
    assert _same_arrays(local_store.read_reference(keys[0])[0], newer)
    assert len(list_references(local_store.files).compacted) == 1 and local_store.check().ok


def test_compacted_rows_a_validator_refuses_read_as_not_cached(local_store):
    _cache(local_store, [_key(1)])
    local_store.compact(None, kinds=("references",))  # one file: nothing to merge, it stays single
    _cache(local_store, [_key(2)])
    local_store.compact(None, kinds=("references",))
    assert list_references(local_store.files).singles == {}
    calls = []
    arrays, _ = local_store.get_or_compute_reference(
        _key(1), lambda: calls.append(1) or kit.reference_arrays(_key(1)), validate=lambda a, m: "not finite")
    assert calls == [1] and _key(1) in list_references(local_store.files).singles


def test_reading_a_reference_by_key_stays_fast_with_many_references(local_store):
    import time

    import pyarrow as pa

    from store.layout import compacted_name, join, references_dir
    from store.schema import SCHEMA_VERSION

    n = 20_000
    keys = [_key(i) for i in range(n)]
    data = np.zeros(8).tobytes()
    table = pa.table({
        "ref_key": keys, "name": ["f_ref"] * n, "dtype": ["<f8"] * n, "shape": [[8]] * n, "data": [data] * n,
        "meta_json": ["{}"] * n, "schema_version": [SCHEMA_VERSION] * n, "package_version": ["0"] * n,
    })
    from store.schema import schema

    table = table.select(schema("references").names).cast(schema("references"))
    import pyarrow.parquet as pq

    path = join(references_dir(local_store.files.root), compacted_name(f"{1:020d}abcdef01", 0))
    import os

    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path, row_group_size=compaction.REFERENCE_ROW_GROUP_ROWS)
    local_store.read_reference(keys[0])  # footer read and cached
    t0 = time.perf_counter()
    for key in keys[:: n // 50]:
        assert local_store.read_reference(key)[0]["f_ref"].shape == (8,)
    assert (time.perf_counter() - t0) / 50 < 0.05  # per lookup; measured in benchmarks/scale_bench.py


def test_explorer_compact_merges_the_reference_cache_after_the_sweeps(local_store):
    from explorer import api

    _cache(local_store, [_key(i + 1) for i in range(4)])
    key, rows, trial = kit.trial()
    local_store.write_trial("s", key, rows, trial)
    lines = []
    api.compact(local_store, echo=lines.append)
    assert any("references 4 -> 1 files (8 rows)" in line for line in lines), lines
    lines.clear()
    api.compact(local_store, kinds=("references",), echo=lines.append)
    assert lines[0].startswith("reference cache: nothing to compact"), lines
    assert list_references(local_store.files).singles == {} and local_store.has_reference(_key(2))
