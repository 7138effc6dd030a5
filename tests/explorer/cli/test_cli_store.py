"""The store commands: explorer sql, check and compact."""
from __future__ import annotations

import csv
import io
import json
import os
import sys

import pytest
from click.testing import CliRunner

from tests.paths import STORE_TESTKIT

sys.path.insert(0, str(STORE_TESTKIT))
import store_testkit as kit  # noqa: E402

from explorer.cli import main  # noqa: E402
from store import Store  # noqa: E402
from store.layout import key_file  # noqa: E402

QUERY = "SELECT L, M, count(*) AS n, avg(err_out) AS e FROM metrics GROUP BY L, M ORDER BY L, M"


@pytest.fixture
def results(tmp_path):
    store = Store(tmp_path / "results")
    for key, rows, trial in kit.grid(n_L=2, n_M=2, steps=3, seeds=(0, 1)):
        store.write_trial("quick", key, rows, trial)
    return store


def run(*args):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_sql_prints_an_aligned_table(results):
    code, out = run("sql", QUERY, "--store", results.uri)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].split() == ["L", "M", "n", "e"] and set(lines[1]) <= {"-", " "}
    assert lines[2].split()[:3] == ["2", "1", "8"] and lines[-1] == "(4 rows)"


def test_sql_csv_and_json_agree(results):
    _, out_csv = run("sql", QUERY, "--store", results.uri, "--format", "csv")
    _, out_json = run("sql", QUERY, "--store", results.uri, "--format", "json")
    rows = list(csv.DictReader(io.StringIO(out_csv)))
    records = json.loads(out_json)
    assert len(rows) == len(records) == 4
    for row, record in zip(rows, records):
        assert int(row["L"]) == record["L"] and float(row["e"]) == record["e"]


def test_sql_json_turns_nan_into_null(results):
    code, out = run("sql", "SELECT 'nan'::DOUBLE AS x, NULL AS y, [1, 2] AS z", "--store", results.uri, "--format", "json")
    assert code == 0 and json.loads(out) == [{"x": None, "y": None, "z": [1, 2]}]


def test_sql_error_prints_duckdbs_message_and_exits_2(results):
    code, out = run("sql", "SELECT nope FROM metrics", "--store", results.uri)
    assert code == 2
    assert out.startswith('error: Binder Error: Referenced column "nope" not found') and out.count("\n") == 1


def test_sql_is_read_only(results, tmp_path):
    code, out = run("sql", f"COPY metrics TO '{tmp_path / 'out.csv'}'", "--store", results.uri)
    assert code == 2 and "read-only" in out and not (tmp_path / "out.csv").exists()


def test_a_missing_store_is_one_clean_line(tmp_path):
    code, out = run("sql", "SELECT 1", "--store", str(tmp_path / "nowhere"))
    assert code == 2 and out == f"error: no results store at '{tmp_path / 'nowhere'}' (nothing written there yet); pass --store URI\n"


def test_sweep_option_filters_and_validates(results):
    code, out = run("sql", "SELECT count(*) AS n FROM trials", "--store", results.uri, "--sweep", "quick", "--format", "csv")
    assert (code, out) == (0, "n\n4\n")
    code, out = run("sql", "SELECT 1", "--store", results.uri, "--sweep", "../etc")
    assert code == 2 and out.startswith("error: invalid sweep name '../etc'")


def test_store_option_reads_the_environment(results, monkeypatch):
    monkeypatch.setenv("EXPLORER_STORE", results.uri)
    assert run("sql", "SELECT count(*) AS n FROM trials", "--format", "csv") == (0, "n\n4\n")


def test_check_exits_0_when_clean_and_1_with_problems(results):
    code, out = run("check", "--store", results.uri)
    assert code == 0 and out.endswith("checked 8 files, 4 trials, 32 metric rows: ok\n")
    key = results.completed_trial_keys("quick").pop()
    os.remove(key_file(results.files.root, "quick", "trials", key))
    code, out = run("check", "--store", results.uri)
    assert code == 1 and f"problem: incomplete: quick/{key}" in out and out.endswith("1 problem(s)\n")


def test_compact_merges_and_answers_stay(results):
    _, before = run("sql", QUERY, "--store", results.uri, "--format", "csv")
    code, out = run("compact", "--store", results.uri)
    assert code == 0 and out.startswith("sweep quick: metrics 4 -> 1 files (32 rows); trials 4 -> 1 files (4 rows)")
    _, after = run("sql", QUERY, "--store", results.uri, "--format", "csv")
    assert after == before
    assert run("check", "--store", results.uri)[0] == 0


def test_compact_kind_merges_only_that_kind(results):
    code, out = run("compact", "--store", results.uri, "--kind", "trials")
    assert (code, out.split(" in ")[0]) == (0, "sweep quick: trials 4 -> 1 files (4 rows)")
    code, out = run("compact", "--store", results.uri, "--kind", "trials", "--kind", "metrics")
    assert (code, out.split(" in ")[0]) == (0, "sweep quick: metrics 4 -> 1 files (32 rows)")
    code, out = run("compact", "--store", results.uri, "--kind", "metric")
    assert code == 2 and "'metric' is not one of 'metrics', 'trials', 'fits'" in out


def test_relative_store_paths_are_resolved_once_for_every_command(results, monkeypatch):
    monkeypatch.chdir(os.path.dirname(results.files.root))
    assert run("sql", "SELECT count(*) AS n FROM trials", "--store", "results", "--format", "csv") == (0, "n\n4\n")
    from explorer.store_access import open_store

    opened = open_store("results", must_exist=True)
    assert opened.uri == results.files.root and os.path.isabs(opened.uri)  # what Ray workers get


def test_check_reports_a_half_written_file_and_exits_1(results):
    key = sorted(results.completed_trial_keys("quick"))[0]
    path = key_file(results.files.root, "quick", "metrics", key)
    partial = os.path.join(os.path.dirname(path), ".tmp.0badc0de.ffff000011112222.parquet")
    with open(path, "rb") as src, open(partial, "wb") as dst:
        dst.write(src.read()[:300])
    assert run("sql", "SELECT count(*) AS n FROM metrics", "--store", results.uri, "--format", "csv") == (0, "n\n32\n")
    code, out = run("check", "--store", results.uri)
    assert code == 1 and f"problem: temporary: {partial}" in out


def test_an_empty_store_uri_is_refused_not_read_as_the_current_directory():
    from click.testing import CliRunner

    from explorer.cli import main

    result = CliRunner().invoke(main, ["sql", "SELECT 1", "--store", ""])
    assert result.exit_code == 2
    assert result.output == "error: empty store URI: pass --store DIR or --store s3://bucket/prefix\n"


def test_sql_error_keeps_duckdbs_did_you_mean_on_its_one_line(results):
    code, out = run("sql", "SELECT * FROM metric", "--store", results.uri)
    assert code == 2 and out.count("\n") == 1, out
    assert out == 'error: Catalog Error: Table with name metric does not exist! Did you mean "metrics"?\n'
    # the suggestion weighs every view, not only those the query named (here fits)
    code, out = run("sql", "SELECT * FROM fits, pointz", "--store", results.uri)
    assert code == 2 and out.rstrip().endswith('Did you mean "points"?'), out


def test_sql_help_lists_every_view_of_the_store():
    from store import VIEW_NAMES

    code, out = run("sql", "--help")
    assert code == 0 and "points" in VIEW_NAMES
    assert f"The views: {', '.join(VIEW_NAMES)}." in " ".join(out.split())


HOSTILE = "\x1b]0;owned\x07\u202eevil\nforged line\\"  # an OSC title, a BEL, a bidi override, a newline


@pytest.fixture
def hostile(tmp_path):
    """A store whose metric rows carry a node_id with terminal control characters."""
    store = Store(tmp_path / "hostile")
    key, rows, trial = kit.trial()
    store.write_trial("quick", key, [{**row, "node_id": HOSTILE} for row in rows], trial)
    return store


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_sql_escapes_control_characters_for_the_terminal(hostile, fmt):
    code, out = run("sql", f'SELECT DISTINCT node_id, node_id AS "{HOSTILE[:3]}" FROM metrics', "--store", hostile.uri,
                    "--format", fmt)
    assert code == 0, out
    assert not any(ch in out for ch in "\x1b\x07\u202e")
    assert "\\x1b]0;owned\\x07\\u202eevil\\nforged line\\\\" in out
    assert len(out.splitlines()) == (4 if fmt == "table" else 2)  # header, (rule,) one row, (count)


def test_sql_json_keeps_the_stored_text_exact(hostile):
    code, out = run("sql", "SELECT DISTINCT node_id FROM metrics", "--store", hostile.uri, "--format", "json")
    assert code == 0 and json.loads(out) == [{"node_id": HOSTILE}]
    assert "\x1b" not in out  # JSON's own escapes


@pytest.mark.parametrize("command", [["ls"], ["check"], ["sql", "SELECT 1"]])
def test_a_home_of_no_user_is_a_plain_folder_name_not_a_traceback(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [*command, "--store", "~nosuchuser-xyz/x"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert not (tmp_path / "~nosuchuser-xyz").exists()  # nothing created by a read
