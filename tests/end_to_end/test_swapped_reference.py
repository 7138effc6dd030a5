"""The probe's scenario (issue 25, item 1): draw 1's reference file copied over draw 2's, then
the grid extended. The new draw-2 trials must be measured against draw 2's own reference
(recomputed, the foreign file quarantined), never against draw 1's."""
from __future__ import annotations


import pytest

import explorer
from store import Store
from store import references
from store.layout import reference_file
from store.references import parquet_bytes

SPEC = {
    "name": "swap",
    "train": {"steps": 3},
    "reference": {"depth": 16, "width": 8},
    "grid": {"L": [2, 4], "M": [2], "D": [4], "seeds": 2, "problem_seeds": [1, 2]},
}


@pytest.mark.slow
def test_new_draw_2_trials_never_use_a_swapped_in_draw_1_reference(tmp_path):
    explorer.sweep(SPEC, store=tmp_path, progress=False, num_cpus=2)
    store = Store(tmp_path)
    keys = {r["problem_seed"]: r["ref_key"] for r in store.query(
        "SELECT DISTINCT problem_seed, ref_key FROM metrics ORDER BY ALL").to_pylist()}
    assert sorted(keys) == [1, 2] and keys[1] != keys[2]
    # draw 1's reference under draw 2's name, as a single file (the sweep's end compacted both into
    # the reference cache's rows; a single file is read before them)
    arrays, meta = references.read(store.files, keys[1])
    table, meta_json = references.encode(keys[1], arrays, meta)
    store.files.put(reference_file(store.files.root, keys[2]), parquet_bytes(table, {references.META_KEY: meta_json}))

    extended = {**SPEC, "grid": {**SPEC["grid"], "L": [2, 4, 8]}}
    result = explorer.sweep(extended, store=tmp_path, progress=False, num_cpus=2)
    assert result.ran == 2 and result.exit_code == 0, result.summary()
    rows = store.query("SELECT problem_seed, ref_key, count(*) AS n FROM metrics GROUP BY ALL ORDER BY ALL").to_pylist()
    assert {(r["problem_seed"], r["ref_key"]) for r in rows} == {(1, keys[1]), (2, keys[2])}  # no draw-2 row with key 1
    # the L=8 trials of each draw were measured against a reference with the same loss curve as
    # the earlier trials of that draw: draw 2's, recomputed
    losses = store.query("SELECT problem_seed, L, step, any_value(ref_loss) AS ref_loss FROM metrics "
                         "WHERE seed = 0 GROUP BY ALL ORDER BY ALL").to_pandas()
    for draw in (1, 2):
        per_L = losses[losses.problem_seed == draw].pivot(index="step", columns="L", values="ref_loss")
        assert (per_L[8] == per_L[2]).all(), draw
    assert store.quarantined()[0].endswith(f"quarantine/references/{keys[2]}.parquet")
    assert store.read_reference(keys[2])[1]["key"] == keys[2]
