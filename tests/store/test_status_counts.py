"""Trials counted by status from the compacted files' footers (``Store.trial_status_counts``,
what ``explorer status`` and ``explorer ls`` show): the same counts as reading the rows
(``trial_statuses``) whatever the store holds, no row read where the footers say it all, files
compacted before the counts were kept read as before, and an unreadable file one line."""
from __future__ import annotations

import glob
import os
from collections import Counter

import pyarrow.parquet as pq
import pytest
import store_testkit as kit
from click.testing import CliRunner

from explorer.cli import main
from store import STATUSES, UnreadableFileError
from store import status_counts as counts_module
from store.layout import kind_dir
from store.status_counts import FOOTER_KEY, footer_counts


def _failed(L: int):
    key, rows, _ = kit.trial(L=L, steps=3, seeds=(0, 1))
    rows = [dict(r, status="failed", error="RuntimeError: boom") for r in rows if r["step"] == 0]
    return key, rows, kit.trial_row_from_metrics(rows, config_json="{}", started_at=kit.STARTED, seeds=(0, 1))


def _trials(n: int = 12):
    """ok, diverged and failed trials: every third diverges, every fourth fails."""
    out = []
    for i in range(n):
        if i % 4 == 3:
            out.append(_failed(L=100 + i))
        else:
            out.append(kit.trial(L=2 + i, steps=3, seeds=(0, 1), diverge_at=1 if i % 3 == 2 else None))
    return out


def _fill(store, trials, sweep="s"):
    for key, rows, row in trials:
        store.write_trial(sweep, key, rows, row)


def _expected(store, sweep="s"):
    by = Counter(store.trial_statuses(sweep).values())
    return {s: by.get(s, 0) for s in STATUSES}


def _rows_read(monkeypatch):
    """The files each count reads rows from (footers are not counted)."""
    seen: list[int] = []
    real = counts_module.read_tables

    def counting(files, sweep, kind, keys, columns, listing=None):
        seen.append(len(listing.singles) + len(listing.compacted))
        return real(files, sweep, kind, keys, columns, listing=listing)

    monkeypatch.setattr(counts_module, "read_tables", counting)
    return seen


def _compacted(store, sweep="s"):
    return sorted(glob.glob(os.path.join(kind_dir(store.files.root, sweep, "trials"), "compacted.*.parquet")))


def test_counts_equal_those_of_the_rows_small_files_and_compacted(local_store, monkeypatch):
    trials = _trials()
    _fill(local_store, trials)
    expected = _expected(local_store)
    assert expected["ok"] and expected["diverged"] and expected["failed"]
    assert local_store.trial_status_counts("s") == expected  # small files: their rows read
    local_store.compact("s", kinds=("trials",))
    (part,) = _compacted(local_store)
    assert footer_counts(pq.read_metadata(part))[0] == {k: v for k, v in expected.items() if v}
    seen = _rows_read(monkeypatch)
    assert local_store.trial_status_counts("s") == expected
    assert seen == []  # one compacted file of its own key range: its footer alone


def test_parts_of_one_compaction_are_counted_from_their_footers(local_store, monkeypatch):
    _fill(local_store, _trials(20))
    expected = _expected(local_store)
    local_store.compact("s", kinds=("trials",), rows_per_file=3)
    assert len(_compacted(local_store)) >= 5
    seen = _rows_read(monkeypatch)
    assert local_store.trial_status_counts("s") == expected and seen == []


def test_a_trial_rewritten_after_compaction_is_counted_once_with_its_new_status(local_store, monkeypatch):
    trials = _trials()
    _fill(local_store, trials)
    local_store.compact("s", kinds=("trials",))
    key, rows, _ = trials[0]  # ok in the compacted file; its own small file now says failed
    rows = [dict(r, status="failed", error="RuntimeError: again") for r in rows if r["step"] == 0]
    local_store.write_trial("s", key, rows, kit.trial_row_from_metrics(rows, config_json="{}", started_at=kit.STARTED,
                                                                     seeds=(0, 1)))
    new_key, new_rows, new_row = kit.trial(L=999, steps=3)  # and a trial of its own
    local_store.write_trial("s", new_key, new_rows, new_row)
    expected = _expected(local_store)
    assert sum(expected.values()) == len(trials) + 1
    seen = _rows_read(monkeypatch)
    assert local_store.trial_status_counts("s") == expected
    assert seen  # the small files' keys fall in the compacted file's range: its rows are read


def test_overlapping_compacted_files_are_read_with_the_resolution_rule(local_store):
    trials = _trials()
    _fill(local_store, trials[:6])
    local_store.compact("s", kinds=("trials",))
    (first,) = _compacted(local_store)
    kept = first + ".keep"
    os.link(first, kept)
    _fill(local_store, trials[6:])
    local_store.compact("s", kinds=("trials",))  # merges the first part: a new generation of all
    os.link(kept, first)  # an older generation left behind (a compaction killed before removing it)
    os.remove(kept)
    assert len(_compacted(local_store)) == 2
    assert local_store.trial_status_counts("s") == _expected(local_store)
    assert sum(local_store.trial_status_counts("s").values()) == len(trials)


def _strip_counts(path: str) -> None:
    table = pq.read_table(path)
    metadata = {k: v for k, v in (table.schema.metadata or {}).items() if k != FOOTER_KEY}
    pq.write_table(table.replace_schema_metadata(metadata), path, compression="zstd")
    assert FOOTER_KEY not in (pq.read_metadata(path).metadata or {})


def test_a_file_compacted_before_the_counts_were_kept_still_counts(local_store, monkeypatch):
    _fill(local_store, _trials())
    expected = _expected(local_store)
    local_store.compact("s", kinds=("trials",))
    (part,) = _compacted(local_store)
    _strip_counts(part)
    seen = _rows_read(monkeypatch)
    assert local_store.trial_status_counts("s") == expected
    assert seen == [1]  # its rows read


def test_counts_that_do_not_add_up_to_the_rows_are_not_believed(local_store):
    _fill(local_store, _trials())
    expected = _expected(local_store)
    local_store.compact("s", kinds=("trials",))
    (part,) = _compacted(local_store)
    table = pq.read_table(part)
    metadata = dict(table.schema.metadata or {})
    metadata[FOOTER_KEY] = b'{"rows": 12, "statuses": {"ok": 1}, "key_min": "0", "key_max": "z"}'
    pq.write_table(table.replace_schema_metadata(metadata), part, compression="zstd")
    assert local_store.trial_status_counts("s") == expected


def test_ls_and_status_of_every_sweep_count_from_the_footers(local_store):
    _fill(local_store, _trials(), sweep="a")
    _fill(local_store, _trials(5), sweep="b")
    local_store.compact("a", kinds=("trials",))
    summary = {s.sweep: s for s in local_store.sweeps_summary()}
    for name in ("a", "b"):
        expected = _expected(local_store, name)
        row = summary[name]
        assert (row.ok, row.diverged, row.failed, row.trials) == (
            expected["ok"], expected["diverged"], expected["failed"], sum(expected.values()))
    out = CliRunner().invoke(main, ["status", "--store", local_store.uri])
    assert out.exit_code == 0
    a = _expected(local_store, "a")
    assert out.stdout.splitlines()[1].split() == ["a", str(a["ok"]), str(a["diverged"]), str(a["failed"]),
                                                  str(sum(a.values()))]


def test_a_truncated_compacted_trials_file_is_one_line_from_status(local_store):
    _fill(local_store, _trials())
    local_store.compact("s", kinds=("trials",))
    (part,) = _compacted(local_store)
    with open(part, "r+b") as f:
        f.truncate(os.path.getsize(part) // 2)
    with pytest.raises(UnreadableFileError, match="compacted"):
        local_store.trial_status_counts("s")
    for args in (["status", "--sweep", "s"], ["status"], ["ls"]):
        out = CliRunner().invoke(main, args + ["--store", local_store.uri])
        assert out.exit_code == 2, (args, out.output)
        assert "Traceback" not in out.output and len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)
        assert "compacted" in out.stderr and "explorer check --quarantine" in out.stderr


def test_has_kind_lists_and_reads_nothing(local_store):
    _fill(local_store, _trials(2))
    assert local_store.has_kind("s", "trials") and local_store.has_kind("s", "metrics")
    assert not local_store.has_kind("s", "rounds")
    assert not local_store.has_kind("nosuch", "trials")


def test_a_foreign_compacted_file_counts_nothing(local_store):
    import pyarrow as pa

    _fill(local_store, _trials())
    local_store.compact("s", kinds=("trials",))
    expected = _expected(local_store)
    stray = os.path.join(kind_dir(local_store.files.root, "s", "trials"), "compacted.99999999999999999999abcd1234.0.parquet")
    pq.write_table(pa.table({"trial_key": ["f" * 16], "status": ["ok"]}), stray)
    assert local_store.trial_status_counts("s") == expected == _expected(local_store)


def test_counts_equal_those_of_the_rows_on_any_store(any_store, monkeypatch):
    trials = _trials()
    _fill(any_store, trials[:8])
    any_store.compact("s", kinds=("trials",))
    seen = _rows_read(monkeypatch)
    assert any_store.trial_status_counts("s") == _expected(any_store) and seen == []
    _fill(any_store, trials[8:])  # small files beside the compacted one
    assert any_store.trial_status_counts("s") == _expected(any_store)
    assert sum(any_store.trial_status_counts("s").values()) == len(trials)
