"""The store's CLI: sql refuses statements and warns about left-out files; check --quarantine,
--repair; ls; rm."""
from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import store_testkit as kit
from click.testing import CliRunner

from explorer.cli import main
from store import Store
from store.layout import join, key_file, reference_lock


@pytest.fixture
def results(tmp_path):
    st = Store(tmp_path / "results")
    for key, rows, trial in kit.grid(n_L=2, n_M=2):
        st.write_trial("tiny", key, rows, trial)
    return st


def run(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input)  # click >= 8.2: .stdout and .stderr apart


def test_sql_refuses_a_statement_that_is_not_a_query(results):
    r = run("sql", "CREATE TABLE x AS SELECT 1", "--store", results.uri)
    assert r.exit_code == 2 and "read-only" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_sql_warns_on_stderr_about_left_out_files(results):
    directory = os.path.dirname(key_file(results.files.root, "tiny", "metrics", "abc"))
    pq.write_table(pa.table({"x": [1], "trial_key": ["abc"]}), os.path.join(directory, "abc.parquet"))
    r = run("sql", "SELECT count(*) AS n FROM metrics", "--store", results.uri, "--format", "csv")
    assert r.exit_code == 0
    assert r.stdout.splitlines() == ["n", "32"]
    assert r.stderr.startswith("warning: the views left out 1 file(s)")


def test_a_truncated_file_fails_sql_until_check_quarantine(results):
    key = sorted(results.completed_trial_keys("tiny"))[0]
    path = key_file(results.files.root, "tiny", "metrics", key)
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-100])
    r = run("sql", "SELECT count(*) FROM metrics", "--store", results.uri)
    assert r.exit_code == 2 and path in r.stderr and "explorer check --quarantine" in r.stderr
    r = run("check", "--quarantine", "--store", results.uri)
    assert f"quarantined {path} -> {join(results.files.root, 'quarantine', 'sweep=tiny', 'kind=metrics', key + '.parquet')}" in r.stdout
    assert run("sql", "SELECT count(*) FROM metrics", "--store", results.uri).exit_code == 0


def test_check_lists_a_stale_lock_and_repair_removes_it(results):
    lock = reference_lock(results.files.root, "abc")
    os.makedirs(os.path.dirname(lock))
    open(lock, "w").close()
    then = time.time() - 120
    os.utime(lock, (then, then))
    r = run("check", "--store", results.uri)
    assert r.exit_code == 1 and "stale_lock" in r.stdout
    r = run("check", "--repair", "--store", results.uri)
    assert r.exit_code == 0 and f"removed {lock}" in r.stdout and not os.path.exists(lock)


def test_ls_of_an_empty_or_missing_store_says_so_and_succeeds(tmp_path):
    for where in (tmp_path, tmp_path / "not-yet"):
        r = run("ls", "--store", str(where))
        assert r.exit_code == 0 and r.stdout.strip() == f"no sweeps in {where.resolve()}", r.output


def test_ls_and_rm(results):
    key, rows, trial = kit.trial()
    results.write_trial("other", key, rows, trial)
    r = run("ls", "--store", results.uri)
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split()[:5] == ["sweep", "trials", "ok", "diverged", "failed"]
    assert [line.split()[:2] for line in lines[1:]] == [["other", "1"], ["tiny", "4"]]
    r = run("rm", "--sweep", "other", "--store", results.uri, input="n\n")
    assert r.exit_code != 0 and results.sweeps() == ["other", "tiny"]
    r = run("rm", "--sweep", "other", "--store", results.uri, "--yes")
    assert r.exit_code == 0 and results.sweeps() == ["tiny"]
    r = run("rm", "--sweep", "nope", "--store", results.uri, "--yes")
    assert r.exit_code == 2 and "unknown sweep 'nope'" in r.stderr
