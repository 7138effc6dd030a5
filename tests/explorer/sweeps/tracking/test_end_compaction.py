"""A sweep's end merges its trials rows, and its metric rows while their small files are few
enough to merge in memory (``cleanup.METRICS_COMPACT_BYTES``); past that they stay for `explorer
compact`, and the rows read the same either way."""
from __future__ import annotations

import os
import sys

from explorer.sweeps.tracking import cleanup
from explorer.sweeps.tracking.progress import Progress
from store import Store
from store.catalog import list_kind

from tests.paths import STORE_TESTKIT

sys.path.insert(0, str(STORE_TESTKIT))
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


def _aside_of_a_dead_compaction(path: str) -> str:
    """Where a compaction moves ``path`` aside (``store.compaction._remove_unchanged``), named for a
    writer that no longer runs (no process has a pid past the kernel's 2^22 ceiling)."""
    from store import owners
    from store.layout import temporary_path

    return temporary_path(path, owners.writer_token("compacting").replace(f"{os.getpid()}@", f"{2**22 + 1}@", 1))


def test_an_input_a_killed_compaction_moved_aside_is_put_back_by_repair_with_its_newest_rows(tmp_path):
    from click.testing import CliRunner

    from explorer.cli import main
    from store.layout import key_file

    st = filled(tmp_path)
    cleanup.compact_trials(st, "s", Progress(total=1, enabled=False))  # every row in the compacted files
    key, rows, trial = kit.grid(n_L=3, n_M=2)[0]
    # the trial rewritten with new numbers just before a compaction moved its file aside, and killed there
    rewritten = [dict(row, loss=row["loss"] + 1.0) for row in rows]
    st.write_trial("s", key, rewritten, trial)
    path = key_file(st.files.root, "s", "metrics", key)
    aside = _aside_of_a_dead_compaction(path)
    os.rename(path, aside)
    check = CliRunner().invoke(main, ["check", "--store", str(tmp_path)])
    assert check.exit_code == 1 and "temporar" in check.output, check.output  # seen, before the repair
    repair = CliRunner().invoke(main, ["check", "--store", str(tmp_path), "--repair"])
    assert "put back" in repair.output, repair.output
    assert not os.path.exists(aside) and os.path.exists(path)
    served = {(r["seed"], r["step"]): r["loss"] for r in st.query(
        f"SELECT seed, step, loss FROM metrics WHERE trial_key = '{key}'").to_pylist()}
    assert served == {(r["seed"], r["step"]): r["loss"] for r in rewritten}  # the newest rows, not the compacted copy
    assert CliRunner().invoke(main, ["check", "--store", str(tmp_path)]).exit_code == 0


def test_a_rerun_with_nothing_to_run_puts_back_and_compacts_what_a_killed_run_left(tmp_path):
    from click.testing import CliRunner

    from explorer.cli import main
    from store.layout import key_file

    from tests.explorer.experiment_design.test_design import PILOT, write_pilot

    st = write_pilot(tmp_path / "results")  # every trial of the spec below, in small files (a run killed before its end)
    grid = PILOT["grid"]
    (tmp_path / "pilot.toml").write_text(
        'name = "pilot"\n[problem]\nseed = 1\n[train]\nsteps = 10\n[reference]\ndepth = 512\nwidth = 256\n'
        f'replicas = 2\n[grid]\nL = {grid["L"]}\nM = {grid["M"]}\nD = {grid["D"]}\nseeds = {grid["seeds"]}\n')
    before = st.query(QUERY).to_pylist()
    key = sorted(st.completed_trial_keys("pilot"))[0]
    path = key_file(st.files.root, "pilot", "metrics", key)
    aside = _aside_of_a_dead_compaction(path)
    os.rename(path, aside)  # and a compaction killed after moving this input aside
    assert st.small_files_bytes("pilot", "trials") > 0
    done = CliRunner().invoke(main, ["sweep", str(tmp_path / "pilot.toml"), "--store", str(tmp_path / "results")])
    assert done.exit_code == 0 and "(25 already complete, nothing to run)" in done.output, done.output
    assert st.small_files_bytes("pilot", "trials") == 0 and st.small_files_bytes("pilot", "metrics") == 0
    assert not os.path.exists(aside)
    assert st.query(QUERY).to_pylist() == before  # every row, once
    assert CliRunner().invoke(main, ["check", "--store", str(tmp_path / "results")]).exit_code == 0
