"""Several processes writing one sweep and asking for one reference at the same time."""
from __future__ import annotations

import multiprocessing as mp
import os

import pytest
import store_testkit as kit

pytestmark = pytest.mark.slow

WORKERS = 3
TRIALS_EACH = 6


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_parallel_writers_leave_every_row_once_and_readers_never_see_partial_trials(backend, request, tmp_path):
    store = request.getfixturevalue(f"{backend}_store")
    calls_dir = tmp_path / "calls"
    calls_dir.mkdir()
    ref_key = "0123456789abcdef"
    ctx = mp.get_context("spawn")
    rows_per_trial = 2 * 4
    with ctx.Pool(WORKERS) as pool:
        pending = pool.starmap_async(
            kit.concurrent_worker, [(store, w, TRIALS_EACH, ref_key, str(calls_dir)) for w in range(WORKERS)]
        )
        reads = 0
        while not pending.ready() or reads < 3:
            # Readers only ever see whole trials: no partial file, no temporary file, no error.
            done = store.completed_trial_keys("race")
            counts = store.query("SELECT trial_key, count(*) AS n FROM metrics GROUP BY trial_key").to_pylist()
            assert all(c["n"] == rows_per_trial for c in counts), counts
            assert {c["trial_key"] for c in counts} >= done  # metrics land before the trials row
            reads += 1
            pending.wait(0.05)
        results = pending.get(timeout=120)
    expected_keys = {kit.trial(L=2 + w, M=1 + i, steps=3)[0] for w in range(WORKERS) for i in range(TRIALS_EACH)}
    expected_keys.add(kit.trial(L=64, M=64, steps=3)[0])
    assert store.completed_trial_keys("race") == expected_keys
    dupes = store.query("SELECT trial_key, seed, step FROM metrics GROUP BY ALL HAVING count(*) > 1")
    assert dupes.num_rows == 0
    assert store.query("SELECT count(*) AS n FROM metrics").to_pylist() == [{"n": len(expected_keys) * rows_per_trial}]
    # Everyone got the same reference, bit for bit, equal to what compute returns.
    want, _ = kit.reference_arrays(ref_key)
    for result in results:
        assert result["bytes"] == {k: v.tobytes() for k, v in want.items()}
        assert result["meta"] == {"ref_key": ref_key}
    computed = len(os.listdir(calls_dir))
    if backend == "local":
        assert computed == 1, "the lock lets exactly one worker compute"
    else:
        assert 1 <= computed <= WORKERS  # object storage: duplicates allowed, identical
    assert store.check().ok
    assert store.query('SELECT count(*) AS n FROM "references"').to_pylist() == [{"n": 2}]
