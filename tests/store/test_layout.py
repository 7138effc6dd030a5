"""Paths come only from validated names: nothing can escape the store root."""
from __future__ import annotations

import pytest

from store import InvalidNameError
from store.layout import classify, compacted_name, key_file, reference_file, temporary_path


def test_paths_follow_the_partition_layout():
    assert key_file("/r", "grid-1", "metrics", "abc123") == "/r/sweep=grid-1/kind=metrics/abc123.parquet"
    assert key_file("s3b/pre/", "g.v2", "trials", "k") == "s3b/pre/sweep=g.v2/kind=trials/k.parquet"
    assert reference_file("/r", "f00d") == "/r/references/f00d.parquet"


@pytest.mark.parametrize("sweep", ["", "..", "a/b", "../x", "a..b", ".hidden", "x" * 129, "sp ace", "é"])
def test_sweep_names_that_could_escape_or_hide_are_refused(sweep):
    with pytest.raises(InvalidNameError, match="invalid sweep name"):
        key_file("/r", sweep, "metrics", "k")


@pytest.mark.parametrize("key", ["", "a.b", "../k", "k/x", "-k", "compacted.1.0", None])
def test_keys_are_plain_names_without_dots(key):
    with pytest.raises(InvalidNameError, match="invalid trial key"):
        key_file("/r", "s", "trials", key)


def test_unknown_kind_is_refused():
    with pytest.raises(InvalidNameError, match="expected one of: metrics, trials, fits"):
        key_file("/r", "s", "metric", "k")


def test_file_names_classify_by_role():
    gen = "0" * 19 + "1" + "deadbeef"
    assert classify("abc.parquet").role == "single" and classify("abc.parquet").key == "abc"
    assert classify(compacted_name(gen, 3)).generation == gen
    assert classify(temporary_path("/d/abc.parquet", "tok").rpartition("/")[2]).role == "temporary"
    assert classify(".lock.abc").role == "lock"
    for odd in ["notes.txt", "a.b.parquet", "compacted.x.0.parquet", "abc.parquet.bak"]:
        assert classify(odd).role == "foreign", odd


def test_a_store_with_a_relative_path_travels_as_an_absolute_one(tmp_path, monkeypatch):
    import os
    import pickle

    from store import Store

    monkeypatch.chdir(tmp_path)
    shipped = pickle.dumps(Store("results"))
    os.makedirs(tmp_path / "elsewhere")
    monkeypatch.chdir(tmp_path / "elsewhere")  # a worker's working directory
    arrived = pickle.loads(shipped)
    assert os.path.abspath(arrived.files.root) == str(tmp_path / "results")
