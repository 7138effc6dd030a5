"""The Python twins of the commands (``explorer.api``) give what the commands print, and do what
they say: ls lists, sql queries, check and compact report (compact keeping every row), rm deletes
only once confirmed, phase and the dry runs return what the command shows."""
from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from explorer import api
from explorer.cli import main
from store import Store

from tests.explorer.analysis_data import law_rows, write_to_store

SWEEPS = {"law": dict(Ls=(2, 4, 8), Ms=(1, 4)), "small": dict(Ls=(2, 4), Ms=(1,))}
SEEDS, STEPS = 2, 2


@pytest.fixture
def store(tmp_path):
    st = Store(tmp_path / "store")
    law = lambda L, M, D: 1 / L + (D / (L * M)) ** 0.5  # noqa: E731
    for name, grid in SWEEPS.items():
        write_to_store(law_rows(law, seeds=SEEDS, steps=STEPS, sweep=name, **grid), st)
    return st


def printed(*args) -> list[str]:
    done = CliRunner().invoke(main, list(args))
    assert done.exit_code == 0, done.output
    return done.stdout.splitlines()


def metric_rows(st: Store) -> dict[str, int]:
    table = api.sql("SELECT sweep, count(*) AS n FROM metrics GROUP BY sweep ORDER BY sweep", st)
    return dict(zip(table.column("sweep").to_pylist(), table.column("n").to_pylist()))


def expected_rows() -> dict[str, int]:
    """Metric rows of each sweep, from how the fixture built it: points x seeds x (steps + 1)."""
    return {name: len(g["Ls"]) * len(g["Ms"]) * SEEDS * (STEPS + 1) for name, g in sorted(SWEEPS.items())}


def test_ls_lists_the_sweeps_as_the_command_prints_them(store, tmp_path):
    listing = api.ls(store.uri)
    assert [r.sweep for r in listing.rows] == ["law", "small"]
    assert [r.trials for r in listing.rows] == [6, 2] and [r.ok for r in listing.rows] == [6, 2]
    assert listing.lines() == printed("ls", "--store", store.uri)
    assert api.ls(tmp_path / "nothing").lines() == [f"no sweeps in {tmp_path / 'nothing'}"]


def test_sql_returns_the_query_as_a_table(store):
    assert metric_rows(store) == expected_rows()
    one = api.sql("SELECT DISTINCT L FROM metrics ORDER BY L", store, sweep="small")
    assert one.column("L").to_pylist() == [2, 4]


def test_check_reports_a_clean_store_and_says_what_repair_did(store):
    seen: list[str] = []
    report = api.check(store, repair=True, echo=seen.append)
    assert report.ok
    assert seen + report.lines(limit_per_category=20) == printed("check", "--repair", "--store", store.uri)


def test_compact_reports_each_sweep_and_keeps_every_row(store):
    seen: list[str] = []
    reports = api.compact(store, echo=seen.append)
    assert len(reports) == len(SWEEPS)
    assert seen == [line for r in reports for line in r.lines()]
    assert metric_rows(store) == expected_rows()


def test_rm_deletes_only_once_confirmed(store):
    asked = []

    def refuse(question):
        asked.append(question)
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        api.rm("small", store, confirm=refuse)
    assert asked == [f"delete sweep small from {store.uri}?"] and "small" in store.sweeps()
    assert api.rm("small", store, confirm=asked.append) > 0
    assert store.sweeps() == ["law"] and metric_rows(store) == {"law": expected_rows()["law"]}


def test_phase_returns_the_diagram_and_echoes_the_table_the_command_prints(store):
    from explorer.analysis.phase import format_phase

    seen: list[str] = []
    diagram = api.phase("law", store, x="L", y="M", echo=seen.append)
    assert len(diagram.cells) == 6  # L 2, 4, 8 x M 1, 4
    assert seen == [format_phase(diagram)]
    assert "\n".join(seen).splitlines() == printed("phase", "--sweep", "law", "--x", "L", "--y", "M",
                                                   "--store", store.uri)


def test_the_dry_runs_are_what_the_commands_print(tmp_path):
    from explorer.config.spec import load_spec

    spec = "examples/quick.toml"
    assert api.dry_run(load_spec(spec), address="auto", store=tmp_path / "s") == printed(
        "sweep", spec, "--dry-run", "--address", "auto", "--store", str(tmp_path / "s"))
    assert api.reproduce_list() == printed("reproduce", "--list")
    assert api.reproduce_dry_run("companion-linear", "tiny", address="auto", out=tmp_path / "r") == printed(
        "reproduce", "companion-linear", "--scale", "tiny", "--dry-run", "--address", "auto", "--out", str(tmp_path / "r"))


def test_a_reproduction_prints_its_claims_table_then_where_the_report_is(tmp_path):
    from explorer.reproduce.run import markdown_table

    claims = pd.DataFrame([{"id": "a1", "kind": "exponent", "claim": "a = 1", "paper": "1", "this tool": "0.98",
                            "95 % CI / range": "[0.9, 1.1]", "verdict": "consistent", "reason": "in the CI",
                            "form": "free", "region": "all", "pooling": "draws", "loss": "log", "note": ""}])
    done = api.Reproduction(exit_code=0, claims=claims, folder=tmp_path / "r")
    assert "\n".join(done.lines()) + "\n" == markdown_table(claims) + f"report: {tmp_path / 'r' / 'index.html'}\n"
