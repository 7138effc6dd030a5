"""Files written under an older SCHEMA_VERSION stay readable: views, check and compaction."""
from __future__ import annotations

import pyarrow as pa
import pytest
import pyarrow.parquet as pq
import store_testkit as kit

from store import Store
from store.query import LeftOutFilesWarning
from store.layout import key_file


def _downgrade_to_v1(path: str) -> None:
    """Rewrite a metrics file as schema version 1 wrote it: no ``flags`` column."""
    t = pq.read_table(path).drop(["flags"])
    t = t.set_column(t.schema.get_field_index("schema_version"), "schema_version", pa.array([1] * t.num_rows, pa.int64()))
    pq.write_table(t.replace_schema_metadata({"explorer.schema_version": "1", "explorer.kind": "metrics"}), path)


def test_version_one_metrics_read_with_null_flags_and_pass_check(tmp_path):
    store = Store(str(tmp_path))
    new_key, new_rows, new_trial = kit.trial(L=4)
    for row in new_rows:
        row["flags"] = "init_noise"
    store.write_trial("sw", new_key, new_rows, new_trial)
    old_key, old_rows, old_trial = kit.trial(L=8)
    store.write_trial("sw", old_key, old_rows, old_trial)
    _downgrade_to_v1(key_file(str(tmp_path), "sw", "metrics", old_key))
    query = "select L, any_value(flags) flags, count(*) n from metrics group by L order by L"
    expected = [{"L": 4, "flags": "init_noise", "n": len(new_rows)}, {"L": 8, "flags": None, "n": len(old_rows)}]
    assert store.query(query).to_pylist() == expected
    assert store.check().ok
    store.compact("sw")
    assert store.query(query).to_pylist() == expected
    assert store.check().ok


def test_optional_gram_columns_may_be_held_or_lacked_but_not_mistyped(tmp_path):
    store = Store(str(tmp_path))
    keys = []
    for L in (4, 8, 16):
        key, rows, trial = kit.trial(L=L, seeds=(0, 1))
        for row in rows:
            row["gram_out"] = row["gram_hidden"] = [1.0, float("nan")]
        store.write_trial("sw", key, rows, trial)
        keys.append(key)
    lacks_one, mistyped = (key_file(str(tmp_path), "sw", "metrics", k) for k in keys[1:])
    pq.write_table(pq.read_table(lacks_one).drop(["gram_hidden"]), lacks_one)  # held: gram_out only
    t = pq.read_table(mistyped)
    index = t.schema.get_field_index("gram_out")
    pq.write_table(t.set_column(index, "gram_out", pa.array([["1.0"]] * t.num_rows, pa.list_(pa.string()))), mistyped)
    report = store.check()
    foreign = [f for f in report.findings if f.category == "foreign"]
    assert len(foreign) == 1 and keys[2] in foreign[0].where and "gram_out" in foreign[0].detail
    with pytest.warns(LeftOutFilesWarning):  # the mistyped file serves no rows
        got = store.query("SELECT L, count(gram_out) AS o, count(gram_hidden) AS h FROM metrics GROUP BY L ORDER BY L")
    assert got.to_pylist() == [{"L": 4, "o": 8, "h": 8}, {"L": 8, "o": 8, "h": 0}]


def test_files_written_before_the_depth_errors_read_them_as_null(tmp_path):
    """err_hidden_depthmean and err_backward came as optional columns: a metrics file without
    them (written before) serves its rows with both null, beside files that hold them, and
    compaction keeps both kinds of row."""
    store = Store(str(tmp_path))
    keys = []
    for L in (4, 8):
        key, rows, trial = kit.trial(L=L)
        for row in rows:
            row["err_hidden_depthmax"], row["err_hidden_depthmean"], row["err_backward"] = 0.3, 0.2, 0.1
        store.write_trial("sw", key, rows, trial)
        keys.append(key)
    old = key_file(str(tmp_path), "sw", "metrics", keys[1])
    pq.write_table(pq.read_table(old).drop(["err_hidden_depthmean", "err_backward"]), old)
    query = ("SELECT L, any_value(err_hidden_depthmax) AS hmax, any_value(err_hidden_depthmean) AS hmean, "
             "any_value(err_backward) AS b FROM metrics GROUP BY L ORDER BY L")
    expected = [{"L": 4, "hmax": 0.3, "hmean": 0.2, "b": 0.1}, {"L": 8, "hmax": 0.3, "hmean": None, "b": None}]
    assert store.query(query).to_pylist() == expected
    assert store.check().ok
    store.compact("sw")
    assert store.query(query).to_pylist() == expected


def test_files_written_before_lr_scaling_and_the_coordinate_check_read_them_as_defaults(tmp_path):
    """lr_scaling (metrics and trials) and coord_update_b*, coord_branch_b* (metrics) came as
    optional columns: files without them serve their rows beside files that hold them, before and
    after compaction; the coordinate sizes as nulls, lr_scaling as mean_field (what those rows were
    trained with), so that a --where or a slice label reads the value, never a null."""
    coords = [f"coord_{kind}_b{b}" for kind in ("update", "branch") for b in range(4)]
    store = Store(str(tmp_path))
    keys = []
    for L in (4, 8):
        key, rows, trial = kit.trial(L=L)
        for row in rows:
            row["lr_scaling"] = "raw"
            row.update({name: 0.5 for name in coords})
        trial["lr_scaling"] = "raw"
        store.write_trial("sw", key, rows, trial)
        keys.append(key)
    for kind, dropped in (("metrics", ["lr_scaling", *coords]), ("trials", ["lr_scaling"])):
        old = key_file(str(tmp_path), "sw", kind, keys[1])
        pq.write_table(pq.read_table(old).drop(dropped), old)
    query = ("SELECT L, any_value(lr_scaling) AS s, count(coord_update_b0) AS u, max(coord_branch_b3) AS b "
             "FROM metrics GROUP BY L ORDER BY L")
    expected = [{"L": 4, "s": "raw", "u": 8, "b": 0.5}, {"L": 8, "s": "mean_field", "u": 0, "b": None}]
    trials = "SELECT L, lr_scaling FROM trials ORDER BY L"
    assert store.query(query).to_pylist() == expected
    assert store.query(trials).to_pylist() == [{"L": 4, "lr_scaling": "raw"}, {"L": 8, "lr_scaling": "mean_field"}]
    assert store.check().ok
    store.compact("sw")
    assert store.query(query).to_pylist() == expected
    assert store.query(trials).to_pylist() == [{"L": 4, "lr_scaling": "raw"}, {"L": 8, "lr_scaling": "mean_field"}]
