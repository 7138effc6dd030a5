"""Files written under an older SCHEMA_VERSION stay readable: views, check and compaction."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import store_testkit as kit

from store import Store
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
