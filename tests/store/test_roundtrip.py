"""Rows and references written to the store come back equal, locally and on S3."""
from __future__ import annotations

import math
import os
import pickle

import numpy as np
import pyarrow as pa
import duckdb
import pytest
import store_testkit as kit

from store import SCHEMA_VERSION, Store, StoreQueryError, schema


def _as_stored(rows, sweep, key):
    return [{**r, "sweep": sweep, "trial_key": key} for r in rows]


def _same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_metric_and_trial_rows_round_trip_through_duckdb(any_store):
    trials = kit.grid(n_L=2, n_M=2, steps=3, seeds=(0, 1, 2))
    trials[1][1][5]["err_hidden"] = math.nan  # NaN and inf must survive too
    trials[2][1][0]["err_out"] = -math.inf
    for key, rows, trial in trials:
        any_store.write_trial("grid", key, rows, trial)
    con = any_store.connect()
    got = con.sql("SELECT * FROM metrics ORDER BY trial_key, seed, step").to_arrow_table()
    assert got.schema.remove_metadata().equals(schema("metrics").remove_metadata()) or got.schema.names == schema("metrics").names
    expected = sorted((r for key, rows, _ in trials for r in _as_stored(rows, "grid", key)), key=lambda r: (r["trial_key"], r["seed"], r["step"]))
    stored = got.to_pylist()
    assert len(stored) == len(expected) == 4 * 3 * 4
    for want, have in zip(expected, stored):
        assert have["schema_version"] == SCHEMA_VERSION and have["package_version"]
        assert have["node_id"] == os.uname().nodename and have["error"] is None
        for name, value in want.items():
            assert _same(value, have[name]), (name, value, have[name])
    trial_rows = con.sql("SELECT * FROM trials ORDER BY trial_key").to_arrow_table().to_pylist()
    by_key = {key: trial for key, _, trial in trials}
    assert [t["trial_key"] for t in trial_rows] == sorted(by_key)
    for have in trial_rows:
        want = by_key[have["trial_key"]]
        for name, value in want.items():
            assert _same(value, have[name]) or list(value) == have[name], (name, value, have[name])


def test_completed_keys_are_the_trials_with_a_trials_row(any_store):
    trials = kit.grid(n_L=2, n_M=2)
    for key, rows, trial in trials[:3]:
        any_store.write_trial("s", key, rows, trial)
    assert any_store.completed_trial_keys("s") == {key for key, _, _ in trials[:3]}
    assert any_store.completed_trial_keys("other") == set()


def test_rewriting_a_trial_replaces_it(any_store):
    key, rows, trial = kit.trial()
    any_store.write_trial("s", key, rows, trial)
    for r in rows:
        r["err_out"] = 42.0
    any_store.write_trial("s", key, rows, trial)
    got = any_store.query("SELECT count(*) AS n, min(err_out) AS lo FROM metrics").to_pylist()
    assert got == [{"n": len(rows), "lo": 42.0}]


def test_fits_round_trip(any_store):
    rows = [
        {"form": "power", "metric": "err_out", "step": 10, "parameter": p, "estimate": e, "ci_low": e - 0.1,
         "ci_high": e + 0.1, "r2_log": 0.98, "n_points": 12, "n_excluded": 2, "extrapolation_error": None}
        for p, e in [("a", -1.01), ("c1", 0.5)]
    ]
    any_store.write_fit("s", "power-err_out", rows)
    got = any_store.query("SELECT sweep, fit_id, parameter, estimate, ci_low FROM fits ORDER BY parameter").to_pylist()
    assert got == [
        {"sweep": "s", "fit_id": "power-err_out", "parameter": "a", "estimate": -1.01, "ci_low": -1.01 - 0.1},
        {"sweep": "s", "fit_id": "power-err_out", "parameter": "c1", "estimate": 0.5, "ci_low": 0.5 - 0.1},
    ]


def _reference_arrays():
    rng = np.random.default_rng(7)
    weird = np.array([np.nan, -0.0, np.inf, 5e-324], dtype=np.float64)
    weird.view(np.uint64)[0] |= 0xDEAD  # a NaN with a payload
    return {
        "f_ref": rng.standard_normal((11, 5, 10)),
        "h_ref": rng.standard_normal((11, 8, 10)).astype(np.float32),
        "fortran": np.asfortranarray(rng.standard_normal((3, 4))),
        "weird": weird,
        "big_endian": np.arange(6, dtype=">i4").reshape(2, 3),
        "scalar": np.array(3.5),
        "empty": np.zeros((0, 4)),
        "mask": np.array([True, False]),
    }


def test_references_round_trip_bit_exactly(any_store):
    arrays = _reference_arrays()
    meta = {"kind": "mean_ode", "depth": 1024, "err": 1.0000000000000002e-3, "shape": [2, 3]}
    calls = []
    assert not any_store.has_reference("ref1")
    got_arrays, got_meta = any_store.get_or_compute_reference("ref1", lambda: calls.append(1) or (arrays, meta))
    assert any_store.has_reference("ref1")
    again_arrays, again_meta = any_store.get_or_compute_reference("ref1", lambda: calls.append(1) or (arrays, meta))
    assert calls == [1], "the second call must read the cache"
    for result, result_meta in [(got_arrays, got_meta), (again_arrays, again_meta)]:
        assert result_meta == meta
        assert set(result) == set(arrays)
        for name, array in arrays.items():
            assert result[name].dtype == array.dtype and result[name].shape == array.shape, name
            assert result[name].tobytes() == np.ascontiguousarray(array).tobytes(), name
            assert result[name].flags.writeable
    stored = any_store.query("SELECT ref_key, name, dtype, shape FROM \"references\" WHERE name = 'h_ref'").to_pylist()
    assert stored == [{"ref_key": "ref1", "name": "h_ref", "dtype": "<f4", "shape": [11, 8, 10]}]


def test_a_reference_without_arrays_keeps_its_meta(local_store):
    local_store.get_or_compute_reference("r0", lambda: ({}, {"note": "empty"}))
    assert local_store.read_reference("r0") == ({}, {"note": "empty"})
    assert local_store.read_reference("missing") is None


def test_compute_errors_propagate_and_leave_no_lock(local_store):
    def fail():
        raise RuntimeError("reference diverged")

    with pytest.raises(RuntimeError, match="reference diverged"):
        local_store.get_or_compute_reference("r1", fail)
    assert os.listdir(os.path.join(local_store.files.root, "references")) == []


def test_views_exist_and_are_typed_on_an_empty_store(local_store):
    con = local_store.connect()
    for view in ["metrics", "trials", "fits", "references"]:
        assert con.sql(f'SELECT count(*) FROM "{view}"').fetchall() == [(0,)]
    assert con.sql("SELECT * FROM metrics").to_arrow_table().schema.names == schema("metrics").names


def test_sweep_filter_and_notebook_api(local_store):
    for sweep in ["a", "b"]:
        key, rows, trial = kit.trial()
        local_store.write_trial(sweep, key, rows, trial)
    assert local_store.query("SELECT DISTINCT sweep FROM metrics", sweep="b").to_pylist() == [{"sweep": "b"}]
    frame = local_store.query("SELECT sweep, count(*) AS n FROM trials GROUP BY sweep ORDER BY sweep").to_pandas()
    assert frame.to_dict("list") == {"sweep": ["a", "b"], "n": [1, 1]}
    assert local_store.connect().sql("SELECT count(*) FROM trials").fetchall() == [(2,)]
    assert local_store.sweeps() == ["a", "b"]


def test_sql_errors_carry_duckdbs_message(local_store):
    with pytest.raises(StoreQueryError, match='Table with name nope does not exist'):
        local_store.query("SELECT * FROM nope")
    with pytest.raises(StoreQueryError, match='syntax error at or near "SELEC" LINE 1: SELEC 1'):
        local_store.query("SELEC 1")


def test_read_only_queries_cannot_touch_files(local_store, tmp_path):
    with pytest.raises(StoreQueryError, match="only queries are allowed .*not COPY"):
        local_store.query(f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'")
    # Behind the statement check, the read-only connection itself may not touch files.
    with pytest.raises(duckdb.Error, match="disabled by configuration"):
        local_store.connect(read_only=True).execute(f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'")
    assert not (tmp_path / "x.csv").exists()


def test_store_pickles_for_workers(local_store):
    key, rows, trial = kit.trial()
    clone = pickle.loads(pickle.dumps(local_store))
    clone.write_trial("s", key, rows, trial)
    assert local_store.completed_trial_keys("s") == {key}


def test_s3_uri_resolves_through_aws_environment(s3_endpoint, monkeypatch):
    from conftest import s3_filesystem

    s3_filesystem(s3_endpoint).create_dir("envbucket")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{s3_endpoint}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    st = Store("s3://envbucket/prefix")
    key, rows, trial = kit.trial()
    st.write_trial("s", key, rows, trial)
    assert Store("s3://envbucket/prefix").completed_trial_keys("s") == {key}
    assert st.query("SELECT count(*) AS n FROM metrics").to_pylist() == [{"n": len(rows)}]
    assert isinstance(st.query("SELECT 1 AS one"), pa.Table)


def test_a_lock_left_by_a_dead_worker_is_broken(local_store):
    lock = os.path.join(local_store.files.root, "references", ".lock.r2")
    os.makedirs(os.path.dirname(lock))
    open(lock, "w").close()
    os.utime(lock, (0, 0))  # its holder stopped refreshing it long ago
    arrays, meta = local_store.get_or_compute_reference("r2", lambda: ({"x": np.arange(3)}, {}), stale_after_s=1)
    assert arrays["x"].tolist() == [0, 1, 2] and not os.path.exists(lock)
