"""The sweep commands on the command line: spec errors are one line and exit code 2, status reads
the store (and refuses a sweep it does not hold). Help of every command: test_cli_commands.py."""
from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from explorer.cli import main
from store import Store

from tests.explorer.config.test_spec import SPEC_ERRORS
from tests.paths import STORE_TESTKIT

sys.path.insert(0, str(STORE_TESTKIT))
import store_testkit as kit  # noqa: E402

GOOD = """
name = "cli"
[train]
steps = 5
[reference]
depth = 16
width = 8
[grid]
L = [2, 4]
M = [1]
D = [4]
seeds = 2
"""


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string, "\n" escaped
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def to_toml(raw: dict) -> str:
    lines = [f"{k} = {_toml_value(v)}" for k, v in raw.items() if not isinstance(v, dict) and v is not None]
    for section, values in raw.items():
        if isinstance(values, dict):
            lines.append(f"[{section}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def run(*args):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("case", sorted(SPEC_ERRORS))
def test_every_spec_error_exits_2_with_one_line_naming_the_key(tmp_path, case):
    raw, expected = SPEC_ERRORS[case]
    path = tmp_path / "spec.toml"
    path.write_text(to_toml(raw))
    result = run("sweep", str(path), "--store", str(tmp_path / "results"))
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: spec error: ") and expected in result.output
    assert result.output.count("\n") == 1  # one line, no traceback
    assert not (tmp_path / "results").exists()  # refused before anything ran


@pytest.mark.parametrize("args, expected", [
    (["train.steps=0"], "[train] steps: expected a positive integer, got 0"),
    (["--grid.L=[4, -1]"], "[grid] L: expected a list of positive integers, got [4, -1]"),
    (["grid.Q=[1]"], "[grid] Q: unknown key"),
    (["steps=5"], "unknown key 'steps'"),
])
def test_bad_overrides_exit_2(tmp_path, args, expected):
    path = tmp_path / "spec.toml"
    path.write_text(GOOD)
    result = run("sweep", str(path), *args, "--store", str(tmp_path / "results"))
    assert result.exit_code == 2 and expected in result.output and result.output.count("\n") == 1


def test_missing_or_invalid_spec_file_exits_2(tmp_path):
    result = run("sweep", str(tmp_path / "absent.toml"))
    assert result.exit_code == 2 and "no such file" in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    result = run("sweep", str(bad))
    assert result.exit_code == 2 and "invalid TOML" in result.output


def _counts(output: str) -> dict[str, int]:
    return {line.split()[0]: int(line.split()[1]) for line in output.splitlines()[1:]}


def test_status_of_a_spec_counts_its_pending_trials(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(GOOD)
    result = run("status", str(path), "--store", str(tmp_path / "results"))  # nothing written yet
    assert result.exit_code == 0
    assert "sweep cli" in result.output and "0/2 trials complete" in result.output
    assert _counts(result.output) == {"ok": 0, "diverged": 0, "failed": 0, "pending": 2, "other": 0}
    result = run("status", "--store", str(tmp_path / "results"))  # neither a spec nor --sweep: every sweep
    assert result.exit_code in (0, 2), result.output
    assert result.output.split()[:5] == ["sweep", "ok", "diverged", "failed", "trials"] or \
        result.output.startswith("error: no results store at")


def test_status_of_a_sweep_counts_what_the_store_holds(tmp_path):
    store = Store(tmp_path / "results")
    for key, rows, row in [kit.trial(L=2), kit.trial(L=4), kit.trial(L=8, diverge_at=1)]:
        store.write_trial("quick", key, rows, row)
    result = run("status", "--sweep", "quick", "--store", store.uri)
    assert result.exit_code == 0, result.output
    assert _counts(result.output) == {"ok": 2, "diverged": 1, "failed": 0}


def test_status_of_an_unknown_sweep_is_one_line_listing_the_known_ones(tmp_path):
    store = Store(tmp_path / "results")
    for sweep in ("quick", "alpha"):
        store.write_trial(sweep, *kit.trial(L=2))
    result = run("status", "--sweep", "nothing", "--store", store.uri)
    assert (result.exit_code, result.output) == (
        2, f"error: unknown sweep 'nothing'; the store '{store.uri}' has: alpha, quick\n")
    absent = tmp_path / "nowhere"
    result = run("status", "--sweep", "quick", "--store", str(absent))
    assert (result.exit_code, result.output) == (2, f"error: unknown sweep 'quick': there is no results store at '{absent}' (nothing written there yet); pass --store URI\n")
    assert not absent.exists()  # reading never creates a store


@pytest.mark.parametrize("command", [
    ["sql", "SELECT count(*) AS n FROM metrics"], ["check"], ["compact"], ["rm", "--yes"], ["status"], ["fit"],
    ["phase"], ["report"],
])
def test_every_command_with_sweep_names_the_known_sweeps_when_it_has_no_such_sweep(tmp_path, command):
    # `--sweep rate` (a typo for rates) answered 0 rows and exit 0 in sql
    store = Store(tmp_path / "results")
    for sweep in ("rates", "quick"):
        store.write_trial(sweep, *kit.trial(L=2))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = run(*command, "--sweep", "rate", "--store", store.uri)
    assert (result.exit_code, result.output) == (
        2, f"error: unknown sweep 'rate'; the store '{store.uri}' has: quick, rates\n")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written or removed
