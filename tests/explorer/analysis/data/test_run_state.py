"""Partial data and trials outside the last run's grid, named by every analysis in one line
(``explorer.analysis.data.run_state``), measured against the run records of the store."""
from __future__ import annotations

import datetime as dt
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from explorer import api
from explorer.analysis.data import run_state
from explorer.report.page_header import rewrite_with_header
from explorer.analysis.hyper import planted_runs
from explorer.cli import main
from store import Store, new_run_id

from tests.explorer.analysis_data import write_to_store
from tests.explorer.hyper_data import planted_metrics

NOW = dt.datetime.now(dt.timezone.utc)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A planted lr sweep of 3 draws (54 trials), written once; each test gets a copy."""
    runs, _ = planted_runs(0.0, rng=np.random.default_rng(5), n_draws=3, n_seeds=2, diverge_at=1e9,
                           Ls=(4, 16, 64), grid=2.0 ** np.arange(-2, 4))
    frame = planted_metrics(runs, steps=1)
    root = tmp_path_factory.mktemp("planted") / "results"
    write_to_store(frame, Store(root, durable=False))
    return root, frame, runs


@pytest.fixture
def planted_store(planted, tmp_path):
    root, frame, runs = planted
    shutil.copytree(root, tmp_path / "results")
    return Store(tmp_path / "results", durable=False), frame, runs


def _record(st, keys, *, draws, grid, started=None, ended=NOW):
    started = started or dt.datetime.now(dt.timezone.utc)  # a live run started now, whenever the test runs
    axes = {"L": [4, 16, 64], "M": [16], "D": [8], "lr": [float(x) for x in grid], "problem_seed": list(draws),
            "preset": ["mlu"], "alpha": [1.0]}
    st.write_run("planted", new_run_id(started), spec={"name": "planted", "axes": axes}, planned_keys=keys,
                 started_at=started, ended_at=ended)


def test_a_rerun_of_fewer_draws_names_the_outside_trials_and_the_where_that_drops_them(planted_store):
    st, frame, runs = planted_store
    keys = sorted(frame["trial_key"].unique())
    kept = [k for k in keys if frame.loc[frame.trial_key == k, "problem_seed"].iloc[0] < 2]
    _record(st, keys, draws=[0, 1, 2], grid=runs.grid, started=NOW - dt.timedelta(hours=1))
    assert run_state(st, "planted").lines() == []  # the first run: everything planned and complete
    _record(st, kept, draws=[0, 1], grid=runs.grid)
    outside = len(keys) - len(kept)
    line = (f"{outside} trials outside the last run's grid (problem_seed = 2) are included; "
            f'--where "problem_seed <> 2" leaves them out')
    assert run_state(st, "planted").lines() == [line]
    found = api.optimum("planted", "lr", store=st, n_boot=20, save=False)
    assert found.data_notes == [line]
    cli = CliRunner().invoke(main, ["optimum", "--sweep", "planted", "--store", st.uri, "--bootstrap", "5",
                                    "--no-save"])
    assert cli.exit_code == 0 and line in cli.output
    dropped = api.optimum("planted", "lr", store=st, n_boot=20, save=False, where="problem_seed <> 2")
    assert dropped.data_notes == []  # the suggested filter leaves them out, and the line goes
    narrowed = run_state(st, "planted", where="L = 4").lines("L = 4")
    assert narrowed == [f"{outside // 3} trials outside the last run's grid (problem_seed = 2) are included; "
                        f'--where "(L = 4) AND problem_seed <> 2" leaves them out']


def test_a_grid_grown_on_purpose_is_no_warning(planted_store):
    st, frame, runs = planted_store
    keys = sorted(frame["trial_key"].unique())
    _record(st, keys[:10], draws=[0], grid=runs.grid, started=NOW - dt.timedelta(hours=1))
    _record(st, keys + ["t9-9-9"], draws=[0, 1, 2, 3], grid=runs.grid, ended=None)  # the new run plans every earlier trial
    state = run_state(st, "planted")
    assert state.outside == 0  # every stored trial is in the new grid: nothing outside it
    assert state.lines() == [f"partial: {len(keys)} of {len(keys) + 1} trials of the last run; intervals will narrow"]


def test_a_live_run_with_trials_left_is_partial_and_says_intervals_will_narrow(planted_store):
    st, frame, runs = planted_store
    keys = sorted(frame["trial_key"].unique())
    planned = keys + [f"later{i}" for i in range(7)]
    _record(st, planned, draws=[0, 1, 2], grid=runs.grid, ended=None)  # started now by this (live) process
    state = run_state(st, "planted")
    assert state.partial and state.live and not state.ended and state.running == 7
    line = f"partial: {len(keys)} of {len(planned)} trials of the last run; intervals will narrow"
    assert state.lines() == [line]
    _record(st, planned, draws=[0, 1, 2], grid=runs.grid, started=dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1))  # a later run that ended without them
    state = run_state(st, "planted")
    assert state.ended and state.pending == 7
    assert state.lines() == [f"partial: {len(keys)} of {len(planned)} trials of the last run, which ended without "
                             "the others (`explorer sweep` again runs them)"]


def test_a_sweep_without_run_records_says_nothing(planted_store):
    st, _, _ = planted_store
    state = run_state(st, "planted")
    assert state.run is None and state.lines() == [] and state.ended and not state.partial


def test_the_report_header_says_it_escaped_and_a_watched_page_reloads(tmp_path):
    page = tmp_path / "index.html"
    page.write_text("<html><head><title>t</title></head><body><h1>Sweep</h1><p>rest</p></body></html>")
    rewrite_with_header(page, [], None)
    assert page.read_text().count("data-notes") == 0  # nothing to say: untouched
    rewrite_with_header(page, ["partial: 3 of 9 trials of the last run; intervals will narrow", "<b>x</b>"], 5)
    text = page.read_text()
    assert '<meta http-equiv="refresh" content="5">' in text.split("</head>")[0]
    header = text.split("</h1>")[1].split("<p>rest")[0]
    assert "partial: 3 of 9 trials of the last run; intervals will narrow" in header and "&lt;b&gt;x&lt;/b&gt;" in header
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]  # no temporary left


def test_a_design_for_transfer_proposes_the_draws_of_the_target_half_width(planted_store, tmp_path):
    from explorer.config.spec import load_spec

    st, frame, runs = planted_store
    grid = {"L": [4, 16, 64], "M": [16], "D": [8], "lr": [float(x) for x in runs.grid], "problem_seeds": [0, 1, 2],
            "seeds": 2}
    spec = {"name": "planted", "grid": grid, "train": {"steps": 1}, "given": [f"grid.{k}" for k in grid] + ["train.steps"],
            "axes": {"L": grid["L"], "lr": grid["lr"], "problem_seed": [0, 1, 2]}}
    st.write_run("planted", new_run_id(), spec=spec, planned_keys=sorted(frame["trial_key"].unique()),
                 started_at=NOW, ended_at=NOW)
    law = api.transfer("planted", "lr", ["L"], store=st, save=False)  # the design's 200 resamples
    half = (law.fits[0].high[1] - law.fits[0].low[1]) / 2
    target = half / 2  # four times the draws
    out = tmp_path / "d.toml"
    design = api.design("planted", [f"gamma={target}"], store=st, out=str(out))
    assert len(design.draws) == int(np.ceil(3 * (half / target) ** 2)) == 12 and design.draws[:3] == [0, 1, 2]
    designed = load_spec(out)
    assert designed.name == "planted_design" and designed.problem_seeds() == tuple(range(12))
    assert designed.grid.lr == tuple(grid["lr"]) and designed.train.steps == 1
    assert np.isclose(design.predicted["gamma"], half * np.sqrt(3 / 12))
    with pytest.raises(Exception, match="does not vary M"):
        api.design("planted", ["delta=0.1"], store=st)
