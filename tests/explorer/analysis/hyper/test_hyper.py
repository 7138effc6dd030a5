"""explorer optimum and transfer (explorer.analysis.hyper): the minimum located between grid
values against a closed form, edges never reported as values, diverged runs worse than every
finite one, the store's rows read back against a naive recomputation, the guard rails."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from explorer.analysis.hyper import (ABOVE, BELOW, INSIDE, LR_GRID, axis_runs, levels, locate, optima, planted_runs,
                                     transfer)
from explorer.cli import main
from explorer.errors import FitError
from store import Store

from tests.explorer.analysis_data import connect, law_rows, write_to_store
from tests.explorer.hyper_data import planted_metrics


def test_the_vertex_of_a_log_quadratic_bowl_is_found_between_grid_values():
    log_grid = np.log(LR_GRID)
    for true in (np.log(0.3), np.log(1.7), np.log(9.0)):
        level = 0.7 * (log_grid - true) ** 2 + 0.2
        location, where = locate(level[None, :], log_grid)
        assert where[0] == INSIDE
        assert location[0] == pytest.approx(true, abs=1e-12)


def test_a_minimum_at_the_first_or_last_grid_value_is_an_edge():
    log_grid = np.log(LR_GRID)
    location, where = locate(np.vstack([(log_grid - np.log(0.05)) ** 2, (log_grid - np.log(64)) ** 2]), log_grid)
    assert list(where) == [BELOW, ABOVE]
    assert list(location) == [log_grid[0], log_grid[-1]]


def test_a_diverged_run_makes_its_grid_value_worse_than_every_finite_one():
    # at lr index 4 one of two runs diverged: the level there is +inf, whatever the other run did
    values = np.array([[5.0, 4.0, 3.0, 2.0, 0.1, 2.5, 3.0, 4.0, 5.0],
                       [5.0, 4.0, 3.0, 2.0, np.inf, 2.5, 3.0, 4.0, 5.0]])
    level = levels(values, log_scale=True)
    assert np.isposinf(level[4]) and level[3] == pytest.approx(np.log(2.0))
    location, where = locate(level, np.log(LR_GRID))
    # the lowest finite value (index 3) has a non-finite neighbour: its grid value, no parabola
    assert where == INSIDE and location == pytest.approx(np.log(LR_GRID[3]))


@pytest.mark.parametrize("center, edge", [(2.0**7, "above"), (2.0**-5, "below")])
def test_an_optimum_planted_outside_the_grid_is_never_reported_as_a_value(center, edge):
    rng = np.random.default_rng(7)
    for rep in range(25):
        runs, _ = planted_runs(0.0, center=center, diverge_at=1e9, rng=rng)
        table = optima(runs, n_boot=50, seed=rep).table
        assert table["optimum"].isna().all() and (table["edge"] == edge).all()
        assert table["ci_low"].isna().all() and table["ci_high"].isna().all()


def test_the_store_rows_read_back_as_the_planted_runs_diverged_included():
    runs, _ = planted_runs(-1.0, rng=np.random.default_rng(3))
    assert np.isposinf(runs.values).any()
    read = axis_runs(connect(planted_metrics(runs)), "planted", "lr")
    assert list(read.slices["L"]) == [4, 16, 64] and np.allclose(read.grid, LR_GRID)
    assert np.array_equal(np.isposinf(read.values), np.isposinf(runs.values))
    finite = np.isfinite(runs.values)
    assert np.allclose(read.values[finite], runs.values[finite])


def naive_optima(frame: pd.DataFrame) -> dict:
    """Per L, from plain metric rows: each run's loss at its last step (inf when its rows end
    earlier diverged), the mean log loss per lr (inf if any run diverged), the argmin and the
    vertex of np.polyfit's parabola through it and its neighbours."""
    out = {}
    last = frame.sort_values("step").groupby(["L", "lr", "problem_seed", "seed"]).tail(1)
    for L, rows in last.groupby("L"):
        lrs = sorted(rows["lr"].unique())
        level = []
        for lr in lrs:
            at = rows[rows["lr"] == lr]
            ended = (at["step"] < at["steps"]) | (at["status"] == "diverged")
            level.append(np.inf if ended.any() else float(np.mean(np.log(at["loss"]))))
        i = int(np.argmin(level))
        x = np.log(lrs)
        vertex = None
        if 0 < i < len(lrs) - 1 and np.isfinite(level[i - 1]) and np.isfinite(level[i + 1]):
            a, b, _ = np.polyfit(x[i - 1: i + 2], level[i - 1: i + 2], 2)
            vertex = float(np.exp(-b / (2 * a)))
        out[int(L)] = (lrs[i], vertex, i)
    return out


def test_each_optimum_is_the_naive_vertex_and_its_interval_holds_the_naive_argmin():
    runs, _ = planted_runs(0.5, rng=np.random.default_rng(11), n_draws=2, n_seeds=4)
    frame = planted_metrics(runs)
    found = optima(axis_runs(connect(frame), "planted", "lr"), n_boot=200).table
    spacing = np.log(2.0)
    for _, row in found.iterrows():
        argmin, vertex, i = naive_optima(frame)[int(row["L"])]
        if vertex is None:
            assert row["optimum"] == pytest.approx(argmin)
            continue
        assert row["optimum"] == pytest.approx(vertex, rel=1e-9)
        # the grid's argmin is within half a grid step of the vertex; the interval holds it to that resolution
        assert np.log(row["ci_low"]) - spacing / 2 <= np.log(argmin) <= np.log(row["ci_high"]) + spacing / 2


@pytest.mark.parametrize("gamma", [-1.0, 0.0, 0.5])
def test_transfer_recovers_a_planted_drift_per_preset_with_a_paired_difference(gamma):
    rng = np.random.default_rng(5)
    mlu, _ = planted_runs(gamma, rng=rng, n_draws=4)
    other, _ = planted_runs(0.0, rng=rng, n_draws=4)
    frames = [planted_metrics(mlu, extra={"preset": "mlu"}), planted_metrics(other, extra={"preset": "completep"})]
    frame = pd.concat(frames, ignore_index=True)
    frame["trial_key"] = frame["trial_key"] + "-" + frame["preset"]
    found = optima(axis_runs(connect(frame), "planted", "lr"), n_boot=200)
    law = transfer(found, ("L",))
    fits = {f.values["preset"]: f for f in law.fits}
    assert fits["mlu"].low[1] <= gamma <= fits["mlu"].high[1]
    assert fits["completep"].low[1] <= 0.0 <= fits["completep"].high[1]
    text = "\n".join(law.lines())
    if gamma == -1.0:
        assert "preset=mlu: gamma = " in text and "drifts as L^-1" in text
    assert len(law.differences) == 1 and "paired difference gamma" in text
    rows = law.store_rows()
    assert {r["parameter"] for r in rows} == {"c", "gamma"} and all(r.get("L") is None for r in rows)


def test_a_group_with_an_edge_slice_is_named_and_fitted_only_when_asked():
    runs, _ = planted_runs(-1.0, center=2.0**3, rng=np.random.default_rng(2))  # L=4's optimum is 2^5 * ... past 32
    found = optima(runs, n_boot=50)
    assert found.table.loc[0, "edge"] == "above"
    refused = transfer(found, ("L",)).fits[0]
    assert not refused.measured and "L=4 (lr* above 32)" in refused.note and "--drop-edges" in refused.note
    dropped = transfer(found, ("L",), drop_edges=True).fits[0]
    assert dropped.measured and dropped.slices == [1, 2] and "left out at a grid edge: L=4" in dropped.note


def test_by_must_name_every_other_varying_axis():
    runs, _ = planted_runs(0.0, rng=np.random.default_rng(1))
    con = connect(planted_metrics(runs))
    with pytest.raises(FitError, match="does not vary it"):
        axis_runs(con, "planted", "lr", by=["M"])
    with pytest.raises(FitError, match="also varies L"):
        axis_runs(con, "planted", "lr", by=[])


def test_a_repeated_by_column_is_merged_and_a_list_past_the_bound_is_one_line(tmp_path):
    from explorer.bounds import MAX_LIST_ITEMS

    runs, _ = planted_runs(-1.0, rng=np.random.default_rng(4))
    st = Store(str(tmp_path / "results"))
    write_to_store(planted_metrics(runs, sweep="lrxfer"), st)
    root = str(tmp_path / "results")
    args = ["optimum", "--sweep", "lrxfer", "--store", root, "--bootstrap", "50", "--no-save"]
    once = CliRunner().invoke(main, args + ["--by", "L"])
    twice = CliRunner().invoke(main, args + ["--by", "L,L"])
    assert once.exit_code == 0 and twice.exit_code == 0, twice.output
    assert twice.output == once.output and "L=4: lr* = " in once.output  # the same slices, the same numbers
    many = CliRunner().invoke(main, args + ["--by", ",".join(["L"] * (MAX_LIST_ITEMS + 1))])
    assert many.exit_code == 2, many.output
    assert many.output.strip().splitlines() == [f"error: --by: {MAX_LIST_ITEMS + 1} items; at most {MAX_LIST_ITEMS} "
                                                "are accepted"]
    across = CliRunner().invoke(main, ["transfer", "--sweep", "lrxfer", "--store", root]
                                + ["--across", "L"] * (MAX_LIST_ITEMS + 1))
    assert across.exit_code == 2 and len(across.output.strip().splitlines()) == 1, across.output
    assert f"at most {MAX_LIST_ITEMS} are accepted" in across.output


def test_a_filter_matching_no_row_says_so_in_one_line(tmp_path):
    runs, _ = planted_runs(-1.0, rng=np.random.default_rng(4))
    write_to_store(planted_metrics(runs, sweep="lrxfer"), Store(str(tmp_path / "results")))
    for command in (["optimum", "--axis", "M"], ["transfer"], ["coordcheck"], ["fit", "--no-save"], ["phase"]):
        result = CliRunner().invoke(main, command + ["--sweep", "lrxfer", "--store", str(tmp_path / "results"),
                                                     "--where", "L = 999"])
        assert result.exit_code == 2, (command, result.output)
        assert result.output.strip().splitlines() == ["error: no rows match --where 'L = 999' in sweep 'lrxfer'"]


def test_a_sweep_without_the_axis_gets_one_line_and_exit_2(tmp_path):
    st = Store(str(tmp_path / "results"))
    write_to_store(law_rows(lambda L, M, D: 0.3 / L, Ls=(2, 4), Ms=(4,), seeds=2, steps=2, sweep="nolr"), st)
    for command in ("optimum", "transfer"):
        result = CliRunner().invoke(main, [command, "--sweep", "nolr", "--store", str(tmp_path / "results"),
                                           "--axis", "lr"])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "has no lr axis (lr is 1 throughout)" in lines[0], lines


def test_optimum_and_transfer_write_rows_the_optima_view_serves(tmp_path):
    runs, _ = planted_runs(-1.0, rng=np.random.default_rng(4))
    st = Store(str(tmp_path / "results"))
    write_to_store(planted_metrics(runs, sweep="lrxfer"), st)
    root = str(tmp_path / "results")
    result = CliRunner().invoke(main, ["optimum", "--sweep", "lrxfer", "--store", root, "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    assert "L=4: lr* = " in result.output and "wrote 3 rows (kind optima)" in result.output
    result = CliRunner().invoke(main, ["transfer", "--sweep", "lrxfer", "--store", root, "--bootstrap", "50"])
    assert result.exit_code == 0 and "gamma = " in result.output, result.output
    rows = st.query("SELECT L, parameter, optimum, edge FROM optima ORDER BY parameter NULLS FIRST, L").to_pylist()
    assert [r["L"] for r in rows[:3]] == [4, 16, 64] and [r["parameter"] for r in rows[3:]] == ["c", "gamma"]


def test_the_report_of_an_lr_sweep_charts_the_curves_and_the_transfer_law(tmp_path):
    from explorer.report.hyper_report import hyper_charts

    runs, _ = planted_runs(-1.0, rng=np.random.default_rng(4))
    charts = hyper_charts(connect(planted_metrics(runs)), "planted", ["L", "lr"], n_boot=50)
    assert sorted(charts) == ["hyper_curves_lr", "hyper_transfer_lr"]
    spec = charts["hyper_transfer_lr"].to_dict()
    assert len(spec["layer"]) == 4  # the optima, their intervals, the law's band and its line
    assert hyper_charts(connect(planted_metrics(runs)), "planted", ["L"]) == {}  # no lr axis: no section


def test_test_loss_is_an_optimum_metric_and_refused_in_one_line_without_a_test_set(tmp_path):
    runs, _ = planted_runs(-1.0, rng=np.random.default_rng(4))
    st = Store(str(tmp_path / "results"))
    held = planted_metrics(runs, sweep="held")
    held["test_loss"] = held["loss"] * 2.0  # the planted surface, held out: the same optimum
    write_to_store(held, st)
    write_to_store(planted_metrics(runs, sweep="nothing"), st)
    root = str(tmp_path / "results")
    result = CliRunner().invoke(main, ["optimum", "--sweep", "held", "--store", root, "--metric", "test_loss",
                                       "--bootstrap", "50"])
    assert result.exit_code == 0 and "lr* = " in result.output, result.output
    result = CliRunner().invoke(main, ["optimum", "--sweep", "nothing", "--store", root, "--metric", "test_loss"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "test_samples" in lines[0], result.output


def test_the_report_reads_the_held_out_loss_where_the_sweep_holds_one():
    from explorer.report.hyper_report import hyper_charts

    runs, _ = planted_runs(-1.0, rng=np.random.default_rng(4))
    plain = planted_metrics(runs)
    held = plain.copy()
    held["test_loss"] = held["loss"] * 3.0  # the held-out surface, three times the training one
    curves = {}
    for name, frame in (("plain", plain), ("held", held)):
        spec = hyper_charts(connect(frame), "planted", ["L", "lr"], n_boot=20)["hyper_curves_lr"].to_dict()
        data = next(iter(spec["datasets"].values()))
        curves[name] = np.array(sorted(row["metric"] for row in data if "metric" in row and row["metric"] is not None))
    assert np.allclose(curves["held"], 3.0 * curves["plain"])
