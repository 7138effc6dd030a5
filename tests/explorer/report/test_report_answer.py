"""The report of an lr sweep across width: it leads with the answer (the optima, the delta
verdicts, the paired differences), writes optima.csv, and renders when the slice its L, M, D fits
hold has no run that trains (one line names that slice; the rest renders, exit 0)."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from explorer.analysis.hyper import LR_GRID, planted_runs
from explorer.cli import main
from explorer.report.page import build_report
from store import Store

from tests.explorer.analysis_data import connect, write_to_store
from tests.explorer.hyper_data import planted_metrics

WIDTHS = (16, 64, 256)
TRUE_DELTA = {"standard": -1.0, "mlu": 0.0}


def width_study(rng_seed: int = 3) -> pd.DataFrame:
    """lr x M (L = 16) for standard/raw (optimum drifting as M^-1) and mlu/mean_field (flat in M),
    4 draws x 4 seeds; every run of mlu/mean_field at the lowest lr diverged."""
    rng = np.random.default_rng(rng_seed)
    frames = []
    for preset, scaling in (("standard", "raw"), ("mlu", "mean_field")):
        runs, _ = planted_runs(TRUE_DELTA[preset], Ls=WIDTHS, pivot=64.0, n_draws=4, rng=rng)
        runs.slices = runs.slices.rename(columns={"L": "M"})
        frame = planted_metrics(runs, sweep="width", extra={"preset": preset, "lr_scaling": scaling})
        frame["trial_key"] = frame["trial_key"] + f"-{preset}"
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    held = (frame["preset"] == "mlu") & (frame["lr"] == LR_GRID.min())
    frame = frame[~held | (frame["step"] <= 1)].copy()  # diverged at step 1: its rows end there
    at = held & (frame["step"] == 1)
    frame.loc[at, "status"], frame.loc[at, "loss"], frame.loc[at, "err_out"] = "diverged", 1e6, 1e5
    return frame


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """The report of ``width_study`` from its rows on an in-memory DuckDB (``test_the_cli_...``
    runs the command on a store)."""
    out = tmp_path_factory.mktemp("answer") / "report"
    report = build_report(connect(width_study()), "width", out, n_boot=50)
    return {"out": out, "report": report, "html": (out / "index.html").read_text()}


def _summary(html: str) -> list[str]:
    block = html.split('<ul id="summary">', 1)[1].split("</ul>", 1)[0]
    return [re.sub(r"<[^>]+>", "", item).strip() for item in block.split("<li>")[1:]]


def test_a_held_slice_where_every_run_diverged_is_one_line_and_the_report_renders(reported):
    summary = _summary(reported["html"])
    held = [line for line in summary if "held slice" in line]
    assert len(held) == 1, summary
    assert "lr = 0.125" in held[0] and "preset = mlu" in held[0] and "lr_scaling = mean_field" in held[0]
    # 4 draws x 3 widths of trials, every one diverged (the seeds share a trial)
    assert "nothing trains there: 12 of 12 trials diverged" in held[0] and "they hold preset = mlu, lr = 0.25" in held[0]
    assert list(reported["report"].not_made) == [held[0].split(": ")[1]]
    assert {"hyper_curves_lr", "hyper_transfer_lr", "error_vs_lr"} <= set(reported["report"].charts)


@pytest.mark.slow
def test_the_cli_report_on_the_store_exits_0_and_names_the_slice_in_one_line(tmp_path):
    store = Store(str(tmp_path / "results"))
    write_to_store(width_study(), store)
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", "--sweep", "width", "--store", store.uri, "--out", str(out),
                                       "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    assert "has no finite" not in result.output
    named = [line for line in result.output.splitlines() if "held slice" in line]
    assert len(named) == 1 and "lr = 0.125" in named[0], result.output
    assert (out / "optima.csv").exists() and "Optimum of lr" in (out / "index.html").read_text()
    # the CLI's transfer on the same store, bootstrap and seed prints the numbers of optima.csv
    law = pd.read_csv(out / "optima.csv")
    law = law[law["parameter"] == "delta"].set_index("preset")
    cli = CliRunner().invoke(main, ["transfer", "--sweep", "width", "--store", store.uri, "--across", "M",
                                    "--drop-edges", "--bootstrap", "50", "--no-save"])
    assert cli.exit_code == 0, cli.output
    for preset, row in law.iterrows():
        line = next(x for x in cli.output.splitlines() if f"preset={preset}" in x and "delta = " in x)
        shown = float(re.search(r"delta = (\S+) ", line).group(1))
        assert shown == pytest.approx(row["optimum"], rel=2e-3, abs=2e-3), line


def test_the_summary_leads_with_the_optima_then_the_delta_verdicts_then_the_paired_difference(reported):
    summary = _summary(reported["html"])
    kinds = [line.split(" ", 2)[:2] for line in summary[:5]]
    assert kinds[:2] == [["Optimum", "of"]] * 2, summary[:5]
    assert kinds[2:4] == [["Transfer", "of"]] * 2 and summary[4].startswith("Paired difference of delta")
    verdicts = {re.search(r"preset=(\w+)", line).group(1): line for line in summary[2:4]}
    # standard drifts as M^-1 (its interval away from 0), mlu's delta interval holds 0
    for preset, line in verdicts.items():
        lo, hi = map(float, re.search(r"delta = \S+ \[(\S+), (\S+)\]", line).groups())
        assert lo <= TRUE_DELTA[preset] <= hi, line
    assert "drifts as M^-1" in verdicts["standard"]
    assert "gamma" not in " ".join(summary[:5])


def test_optima_csv_holds_what_the_page_shows(reported):
    optima = pd.read_csv(reported["out"] / "optima.csv")
    slices = optima[optima["parameter"].isna()]
    assert len(slices) == 2 * len(WIDTHS) and set(slices["M"]) == set(WIDTHS)
    law = optima[optima["parameter"] == "delta"].set_index("preset")
    assert set(law.index) == {"standard", "mlu"} and (law["across"] == "M").all()
    difference = optima[optima["parameter"] == "delta difference"]
    assert len(difference) == 1
    # the difference is the two groups' own deltas apart, B - A
    b, a = re.search(r"\(preset=(\w+)[^)]*\) - \(preset=(\w+)", difference["note"].iloc[0]).groups()
    assert difference["optimum"].iloc[0] == pytest.approx(law.loc[b, "optimum"] - law.loc[a, "optimum"])
    # every optimum of the csv is in the page's table
    for value in slices["optimum"].dropna():
        assert f"{value:.3g}" in reported["html"]


def test_held_values_no_trial_combines_are_replaced_without_a_line(tmp_path):
    """Grid cases give each preset its own lr range: the most common preset and the most common lr
    may lie in different cases. The fits then hold a slice that exists, and nothing is said."""
    frame = width_study()
    frame = frame[((frame["preset"] == "standard") & (frame["lr"] <= 1.0))
                  | ((frame["preset"] == "mlu") & (frame["lr"] >= 2.0))]
    report = build_report(connect(frame), "width", tmp_path / "r", n_boot=20)
    assert not report.not_made, report.not_made
    held = frame
    for column, value in report.fixed.items():
        held = held[held[column] == value]
    assert len(held) and (held["status"] == "ok").any()
    assert [line.split(" ", 2)[:2] for line in _summary((tmp_path / "r" / "index.html").read_text())[:2]] == \
        [["Optimum", "of"]] * 2
