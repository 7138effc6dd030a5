"""Issue 35's independent argmin on a real sweep: one learning-rate study run on Ray holding every
combination of the standard and mlu presets with raw SGD and mean-field units (lr x L, two draws x
four seeds), each slice's optimum from ``explorer optimum`` against the argmin a plain script
computes from the stored metric rows, and the transfer law's paired difference between the
parametrizations against a plain least-squares slope of the optima."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import explorer
from explorer.api import optimum, transfer
from store import Store

from tests.explorer.analysis.hyper.test_hyper import naive_optima

pytestmark = pytest.mark.slow

ACCEPTANCE_LRS = [2.0**k for k in range(-3, 6)]  # the grid, 2^-3 .. 2^5
LRS = [2.0**k for k in range(-12, 6)]  # reaching down to the raw optima at L = 64
SLICE = ["L", "preset", "lr_scaling"]


def lr_study() -> dict:
    return {
        "name": "lr_params",
        "problem": {"d_in": 5, "d_out": 5, "samples": 10},
        "model": {"activation": "tanh"},
        "train": {"steps": 10, "dtype": "float64"},
        "reference": {"kind": "largest"},  # standard and raw steps have no Mean ODE limit
        "grid": {"L": [4, 16, 64], "M": [16], "D": [8], "alpha": [1.0], "preset": ["standard", "mlu"],
                 "lr_scaling": ["raw", "mean_field"], "lr": LRS, "problem_seeds": [1, 2], "seeds": 4},
        "resources": {"cpus_per_trial": 1, "gpus_per_trial": 0},
    }


@pytest.fixture(scope="module")
def studied(tmp_path_factory, local_ray):
    st = Store(tmp_path_factory.mktemp("lr_real") / "store")
    result = explorer.sweep(lr_study(), store=st, progress=False)
    assert result.exit_code == 0, result.summary()
    return st


def stored_rows(st: Store) -> pd.DataFrame:
    """The plain script's input: metric rows as stored, the default lr_scaling's null named."""
    con = st.connect(sweep="lr_params", read_only=True)
    try:
        return con.sql("SELECT L, preset, lr_scaling, lr, problem_seed, seed, step, steps, status, loss "
                       "FROM metrics WHERE sweep = 'lr_params'").df()
    finally:
        con.close()


def check_against_plain_argmin(found: pd.DataFrame, rows: pd.DataFrame) -> None:
    assert len(found) == 3 * 2 * 2
    for (preset, scaling), group in rows.groupby(["preset", "lr_scaling"]):
        naive, lrs = naive_optima(group), sorted(group["lr"].unique())
        mine = found[(found["preset"] == preset) & (found["lr_scaling"] == scaling)]
        assert sorted(int(L) for L in mine["L"]) == sorted(naive)
        for _, row in mine.iterrows():
            argmin, vertex, i = naive[int(row["L"])]
            if row["edge"] in ("below", "above"):  # an edge: no value, and the naive argmin sits there too
                assert pd.isna(row["optimum"]) and i == (0 if row["edge"] == "below" else len(lrs) - 1)
                continue
            at_L = group[group["L"] == row["L"]]
            ended = at_L[(at_L["step"] < at_L["steps"]) & (at_L["status"] == "diverged")]
            if set(ended["lr"]) == set(lrs):  # every grid value diverged somewhere: no value, no edge
                assert pd.isna(row["optimum"]) and pd.isna(row["edge"])
                continue
            if vertex is None:
                assert row["optimum"] == pytest.approx(argmin)
                continue
            assert row["optimum"] == pytest.approx(vertex, rel=1e-9)
            half_step = np.log(2.0) / 2  # the grid's argmin within half a grid step of the interval
            assert np.log(row["ci_low"]) - half_step <= np.log(argmin) <= np.log(row["ci_high"]) + half_step


def test_each_slices_optimum_is_the_argmin_a_plain_script_finds(studied):
    rows = stored_rows(studied)
    assert set(rows["lr_scaling"]) == {"raw", "mean_field"}
    check_against_plain_argmin(optimum("lr_params", "lr", store=studied, n_boot=100).table, rows)
    # the grid, 2^-3 .. 2^5: the raw optima below it are edges, never values
    narrow = optimum("lr_params", "lr", store=studied, where="lr >= 0.125", n_boot=100).table
    check_against_plain_argmin(narrow, rows[rows["lr"] >= 0.125])
    raw_standard = narrow[(narrow["preset"] == "standard") & (narrow["lr_scaling"] == "raw")]
    assert (raw_standard["edge"] == "below").any()


def test_the_parametrizations_paired_difference_is_the_difference_of_plain_slopes(studied):
    result = transfer("lr_params", "lr", across=("L",), store=studied, n_boot=200, pairs="all")
    table = result.optima.table
    slopes = {}
    for fit in result.fits:
        assert fit.measured, fit.note
        mine = table[(table["preset"] == fit.values["preset"]) & (table["lr_scaling"] == fit.values["lr_scaling"])]
        slope = np.polyfit(np.log(mine["L"].astype(float)), np.log(mine["optimum"].astype(float)), 1)[0]
        assert fit.estimate[1] == pytest.approx(slope, abs=1e-9)
        slopes[(fit.values["preset"], fit.values["lr_scaling"])] = slope
    differences = result.differences
    assert len(differences) == 6  # every two of the four groups (pairs="all"): same draws, same seeds
    pair = differences[(differences["a"] == "preset=mlu, lr_scaling=mean_field")
                       & (differences["b"] == "preset=standard, lr_scaling=raw")]
    if pair.empty:
        pair = differences[(differences["b"] == "preset=mlu, lr_scaling=mean_field")
                           & (differences["a"] == "preset=standard, lr_scaling=raw")]
        sign = -1.0
    else:
        sign = 1.0
    expected = slopes[("standard", "raw")] - slopes[("mlu", "mean_field")]
    assert sign * float(pair["difference"].iloc[0]) == pytest.approx(expected, abs=1e-9)
    # raw SGD under the standard parametrization: the best lr falls with depth, far faster than in
    # mean-field units (docs/model.md section 2 predicts about 1/L against L^0)
    assert expected < -0.5
    text = "\n".join(result.lines())
    assert "paired difference gamma" in text and "lr_scaling=mean_field" in text and "n/a" not in text
