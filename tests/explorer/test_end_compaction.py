"""A sweep's end merges its trials rows, and its metric rows while their small files are few
enough to merge in memory (``cleanup.METRICS_COMPACT_BYTES``); past that they stay for `explorer
compact`, and the rows read the same either way."""
from __future__ import annotations

import os
import sys

from explorer.sweeps import cleanup
from explorer.sweeps.progress import Progress
from store import Store
from store.catalog import list_kind

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "store"))
import store_testkit as kit  # noqa: E402

QUERY = "SELECT trial_key, seed, step, loss, err_out FROM metrics ORDER BY ALL"


def filled(tmp_path) -> Store:
    st = Store(tmp_path)
    for key, rows, trial in kit.grid(n_L=3, n_M=2):
        st.write_trial("s", key, rows, trial)
    return st


def files(st: Store, kind: str) -> tuple[int, int]:
    listing = list_kind(st.files, "s", kind)
    return len(listing.singles), len(listing.compacted)


def test_the_end_of_a_sweep_compacts_its_metric_rows_too(tmp_path):
    st = filled(tmp_path)
    before = st.query(QUERY).to_pylist()
    assert 0 < st.small_files_bytes("s", "metrics") <= cleanup.METRICS_COMPACT_BYTES
    cleanup.compact_trials(st, "s", Progress(total=1, enabled=False))
    assert files(st, "trials") == (0, 1) and files(st, "metrics") == (0, 1)
    assert st.small_files_bytes("s", "metrics") == 0
    assert st.query(QUERY).to_pylist() == before


def test_metric_files_past_the_bound_stay_for_explorer_compact(tmp_path, monkeypatch):
    st = filled(tmp_path)
    before = st.query(QUERY).to_pylist()
    monkeypatch.setattr(cleanup, "METRICS_COMPACT_BYTES", st.small_files_bytes("s", "metrics") - 1)
    cleanup.compact_trials(st, "s", Progress(total=1, enabled=False))
    assert files(st, "trials") == (0, 1) and files(st, "metrics") == (6, 0)
    assert st.query(QUERY).to_pylist() == before
