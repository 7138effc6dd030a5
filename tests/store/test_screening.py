"""The views serve only files that match a schema version of their kind (the rule of check), say
how many they left out, and skip what cannot be opened (e.g. a symbolic link loop)."""
from __future__ import annotations

import importlib
import os
import warnings

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import store_testkit as kit

from store import screen
from store.layout import key_file
from store.query import LeftOutFilesWarning

schema_module = importlib.import_module("store.schema")


def _grid(st, sweep="tiny"):
    for key, rows, trial in kit.grid(n_L=2, n_M=2):
        st.write_trial(sweep, key, rows, trial)


def _write(st, path, table):
    st.files.put(path, _bytes(table))


def _bytes(table):
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def _mean_err(st):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeftOutFilesWarning)
        return st.query("SELECT count(*) AS n, max(err_out) AS top FROM metrics").to_pylist()[0]


def test_a_metrics_file_without_wall_s_is_foreign_for_check_and_never_served(any_store):
    _grid(any_store)
    before = _mean_err(any_store)
    key, rows, trial = kit.trial(L=32, M=8)
    any_store.write_trial("tiny", key, rows, trial)
    path = key_file(any_store.files.root, "tiny", "metrics", key)
    table = any_store.files.read_table(path)
    # The file: someone's export without wall_s, with err_out = 1e6, under a trial's name.
    bad = table.drop_columns(["wall_s"]).set_column(
        table.schema.get_field_index("err_out") - 0, "err_out", pa.array([1e6] * table.num_rows))
    _write(any_store, path, bad)
    report = any_store.check()
    assert [f.category for f in report.problems if f.category == "foreign"] == ["foreign"]
    assert "missing column(s) wall_s" in report.problems[0].detail
    with pytest.warns(LeftOutFilesWarning, match=r"left out 1 file\(s\).*missing column\(s\) wall_s.*explorer check"):
        got = any_store.query("SELECT count(*) AS n, max(err_out) AS top FROM metrics").to_pylist()[0]
    assert got == before  # not one row of it, the 1e6 included
    assert [v.path for v in any_store.left_out] == [any_store.files.display(path)]


def test_a_file_with_only_x_and_trial_key_adds_no_null_rows(local_store):
    _grid(local_store)
    before = _mean_err(local_store)
    directory = os.path.dirname(key_file(local_store.files.root, "tiny", "metrics", "abc"))
    pq.write_table(pa.table({"x": [1, 2], "trial_key": ["abc", "abc"]}), os.path.join(directory, "abc.parquet"))
    with pytest.warns(LeftOutFilesWarning):
        assert local_store.query("SELECT count(*) AS n, max(err_out) AS top FROM metrics").to_pylist()[0] == before
    with pytest.warns(LeftOutFilesWarning):
        assert local_store.query("SELECT count(*) AS n FROM metrics WHERE L IS NULL").to_pylist() == [{"n": 0}]
    assert len(local_store.left_out) == 1
    assert not local_store.check().ok


def test_a_clean_store_leaves_nothing_out_and_warns_nothing(local_store):
    _grid(local_store)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        local_store.query("SELECT count(*) FROM metrics")
    assert local_store.left_out == []


def test_files_of_an_older_schema_version_are_served_with_nulls(local_store, monkeypatch):
    """Once schema.py declares a column added in version 2, a version-1 file lacking it is data."""
    _grid(local_store)
    key, rows, trial = kit.trial(L=32, M=8)
    local_store.write_trial("tiny", key, rows, trial)
    path = key_file(local_store.files.root, "tiny", "metrics", key)
    pq.write_table(pq.read_table(path).drop_columns(["wall_s"]), path)
    assert local_store.check().problems  # today wall_s is a version-1 column: foreign
    # A hypothetical next version that adds wall_s: files of the current version lack it.
    latest = schema_module.SCHEMA_VERSION
    monkeypatch.setattr(schema_module, "ADDED_COLUMNS", {**schema_module.ADDED_COLUMNS, latest + 1: {"metrics": ("wall_s",)}})
    monkeypatch.setattr(screen, "SCHEMA_VERSION", latest + 1)
    # (optional columns are left out of every version's set: a file may hold them or lack them)
    assert screen.version_columns("metrics")[latest] == (frozenset(schema_module.schema("metrics").names) - {"wall_s"}
                                                         - screen.optional_columns("metrics"))
    assert [f for f in local_store.check().findings if f.category == "foreign"] == []
    got = local_store.query(f"SELECT count(*) AS n, count(wall_s) AS w FROM metrics WHERE trial_key = '{key}'")
    assert got.to_pylist() == [{"n": len(rows), "w": 0}]
    # A file with some of a later version's columns but lacking a version-1 column still is foreign.
    pq.write_table(pq.read_table(path).drop_columns(["loss"]), path)
    assert "missing column(s) loss" in screen.schema_mismatch("metrics", pq.read_schema(path))


def test_a_symlink_loop_is_reported_by_check_and_skipped_by_queries(local_store):
    _grid(local_store)
    key, _, _ = kit.trial(L=99)
    directory = os.path.dirname(key_file(local_store.files.root, "tiny", "metrics", key))
    os.symlink(f"{key}.parquet", os.path.join(directory, f"{key}.parquet"))  # points at itself
    os.symlink("loop2", os.path.join(directory, "loop1"))
    os.symlink("loop1", os.path.join(directory, "loop2"))
    n = _mean_err(local_store)["n"]
    assert n == sum(len(rows) for _, rows, _ in kit.grid(n_L=2, n_M=2))
    assert len(local_store.completed_trial_keys("tiny")) == 4
    report = local_store.check()
    loops = [f for f in report.problems if f.category == "foreign" and "symbolic links" in f.detail]
    assert len(loops) == 3, report.lines()
    assert local_store.trial_statuses("tiny")
    local_store.compact("tiny")
    assert _mean_err(local_store)["n"] == n


def test_views_and_lookups_agree_on_a_foreign_trials_file(local_store):
    _grid(local_store)
    key, rows, trial = kit.trial(L=32, M=8)
    local_store.write_trial("tiny", key, rows, trial)
    path = key_file(local_store.files.root, "tiny", "trials", key)
    t = pq.read_table(path)
    pq.write_table(t.set_column(t.schema.get_field_index("n_seeds"), "n_seeds", pc.cast(t["n_seeds"], pa.int32())), path)
    assert key not in local_store.trial_statuses("tiny")
    with pytest.warns(LeftOutFilesWarning, match="column 'n_seeds' is int32"):
        assert local_store.query(f"SELECT count(*) AS n FROM trials WHERE trial_key = '{key}'").to_pylist() == [{"n": 0}]


def test_a_query_screens_only_the_views_it_names_and_falls_back_to_all(local_store, monkeypatch):
    _grid(local_store)
    screened = []
    real = screen.screen_file

    def counting(files, entry, kind, key, fragments=None):
        screened.append(kind)
        return real(files, entry, kind, key, fragments)

    monkeypatch.setattr(screen, "screen_file", counting)
    screen.SCREEN_CACHE.clear()
    assert local_store.query("SELECT count(*) AS n FROM metrics").to_pylist() == [{"n": 32}]
    assert set(screened) == {"metrics"}
    # A view the parser cannot see (named in a string): the query is run again with every view.
    assert local_store.query("SELECT count(*) AS n FROM query_table('trials')").to_pylist() == [{"n": 4}]
    assert local_store.query("SELECT count(*) AS n FROM query_table('fits')").to_pylist() == [{"n": 0}]
