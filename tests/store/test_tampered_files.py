"""Tampered files are never served, used, fitted or merged (issue 25, items 1 - 3).

- a reference file copied over another key's is refused on read, quarantined and recomputed;
- ``compact`` screens its inputs as the views do: a file named after trial A holding trial B's
  rows, or one with an unknown column, stays where it is and B keeps its own rows;
- a file written without Parquet statistics is screened by its key column.
"""
from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import store_testkit as kit

from store import ForeignReferenceError, Store, references
from store.layout import key_file, reference_file
from store.query import LeftOutFilesWarning


def _served(st: Store, sql: str) -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeftOutFilesWarning)
        return st.query(sql).to_pylist()


def _two_trials(st: Store) -> tuple[str, str]:
    for key, rows, trial in kit.grid(n_L=2, n_M=2):
        st.write_trial("tiny", key, rows, trial)
    keys = sorted(r["trial_key"] for r in _served(st, "SELECT trial_key FROM trials"))
    return keys[0], keys[1]


def _b_rows_under_a_name(st: Store, a: str, b: str, **write_options) -> str:
    """Trial A's metrics file replaced by trial B's rows with err_out x 1000 (the probe's file)."""
    b_table = st.files.read_table(key_file(st.files.root, "tiny", "metrics", b))
    scaled = b_table.set_column(b_table.schema.get_field_index("err_out"), "err_out",
                                pc.multiply(b_table.column("err_out"), 1000.0))
    path = key_file(st.files.root, "tiny", "metrics", a)
    pq.write_table(scaled, path, **write_options)
    return path


# --- item 1: references --------------------------------------------------------------------


def test_a_reference_copied_over_another_key_is_quarantined_and_recomputed(local_store):
    one, two = "aaaa000000000001", "aaaa000000000002"
    for key in (one, two):
        local_store.get_or_compute_reference(key, lambda key=key: kit.reference_arrays(key))
    shutil.copyfile(reference_file(local_store.files.root, one), reference_file(local_store.files.root, two))

    with pytest.raises(ForeignReferenceError, match=f"is not the reference {two}: it holds the rows of {one}"):
        local_store.read_reference(two)
    calls = []

    def compute():
        calls.append(1)
        return kit.reference_arrays(two)

    arrays, meta = local_store.get_or_compute_reference(two, compute)
    expected = kit.reference_arrays(two)[0]
    assert calls == [1] and meta == {"ref_key": two}
    assert all(np.array_equal(arrays[k], expected[k]) for k in expected)  # draw 2's numbers, not draw 1's
    assert local_store.read_reference(two)[1] == {"ref_key": two}  # the recomputed file is stored
    moved = local_store.quarantined()
    assert moved == [os.path.join(local_store.files.root, "quarantine", "references", f"{two}.parquet")]
    assert pq.read_table(moved[0]).column("ref_key").unique().to_pylist() == [one]  # the evidence is kept


def test_a_reference_its_reader_refuses_is_recomputed_and_the_refusal_is_named(local_store):
    key = "bbbb000000000001"
    arrays = {"out": np.array([1.0, np.nan])}
    local_store.get_or_compute_reference(key, lambda: (arrays, {}))

    def finite(got, meta):
        return None if np.isfinite(got["out"]).all() else "its array 'out' holds NaN or Inf"

    with pytest.raises(ForeignReferenceError, match="holds NaN or Inf; never used"):
        references.read(local_store.files, key, finite)
    got, _ = local_store.get_or_compute_reference(key, lambda: ({"out": np.array([1.0, 2.0])}, {}), validate=finite)
    assert got["out"].tolist() == [1.0, 2.0]
    assert len(local_store.quarantined()) == 1


def test_the_explorer_refuses_a_reference_with_nan_outputs_or_another_key_in_its_meta():
    from explorer.sweeps.references.screen import reference_problem

    good = {"out": np.zeros((2, 3)), "hidden": np.zeros((2, 3)), "loss": np.zeros(2), "err_out": np.full(2, np.nan)}
    assert reference_problem("k1", good, {"key": "k1"}) is None  # NaN error estimates are legitimate
    assert reference_problem("k1", good, {"key": "k2"}) == "its metadata names the reference k2"
    assert reference_problem("k1", {**good, "hidden": np.array([np.inf])}, {}) == "its array 'hidden' holds NaN or Inf"
    assert reference_problem("k1", {"out": good["out"]}, {}) == "it lacks the array 'hidden'"


# --- item 2: compaction screens its inputs -------------------------------------------------


def test_compact_leaves_a_file_holding_another_trials_rows_in_place_and_b_keeps_its_rows(local_store):
    a, b = _two_trials(local_store)
    query = f"SELECT count(*) AS n, max(err_out) AS top FROM metrics WHERE trial_key = '{b}'"
    before = _served(local_store, query)
    path = _b_rows_under_a_name(local_store, a, b)
    assert any(f.category == "foreign" for f in local_store.check().problems)

    report = local_store.compact("tiny")
    assert [v.path for v in report.left_out()] == [path]
    assert "left 1 file(s) the views refuse in place" in report.summary()
    assert os.path.exists(path)  # the evidence stays
    assert _served(local_store, query) == before  # B: its own 8 rows, not 16, no err_out x 1000
    assert before[0]["n"] == 8
    # still reported (and A, whose own rows it replaced, is incomplete); no duplicates
    assert sorted(f.category for f in local_store.check().problems) == ["foreign", "incomplete"]


def test_compact_never_merges_a_file_with_an_unknown_column(local_store):
    a, _ = _two_trials(local_store)
    path = key_file(local_store.files.root, "tiny", "metrics", a)
    table = local_store.files.read_table(path)
    pq.write_table(table.append_column("extra", pa.array([1] * table.num_rows)), path)
    report = local_store.compact("tiny")
    assert [v.reason for v in report.left_out()] == ["not a metrics file: unknown column(s) extra"]
    assert pq.read_table(path).column_names[-1] == "extra"  # untouched, not merged without its column
    assert _served(local_store, f"SELECT count(*) AS n FROM metrics WHERE trial_key = '{a}'") == [{"n": 0}]


# --- item 3: a file without statistics -----------------------------------------------------


def test_a_file_without_statistics_is_screened_by_its_key_column(local_store):
    a, b = _two_trials(local_store)
    path = _b_rows_under_a_name(local_store, a, b, write_statistics=False)
    assert pq.read_metadata(path).row_group(0).column(0).statistics is None
    foreign = [f for f in local_store.check().problems if f.category == "foreign"]
    assert [f.where for f in foreign] == [path] and f"holds trial_key {b}..{b}" in foreign[0].detail
    rows = _served(local_store, f"SELECT count(*) AS n, max(err_out) AS top FROM metrics WHERE trial_key = '{b}'")
    assert rows[0]["n"] == 8 and rows[0]["top"] < 100  # served once, never the x 1000 copy


def test_a_file_without_statistics_holding_its_own_rows_is_served(local_store):
    a, _ = _two_trials(local_store)
    path = key_file(local_store.files.root, "tiny", "metrics", a)
    pq.write_table(pq.read_table(path), path, write_statistics=False)
    assert local_store.check().ok
    assert _served(local_store, f"SELECT count(*) AS n FROM metrics WHERE trial_key = '{a}'") == [{"n": 8}]
