"""Issue 47's studies on a small real sweep: Adam on the teacher task, standard/raw and
mlu/mean_field written into one sweep (two specs, the same draws and seeds), each slice's optimum of
the held-out loss from ``explorer optimum`` against the argmin a plain script computes from the
stored rows, and the transfer law's delta and paired difference against plain least-squares
slopes. The tool's computation is checked, never an anchor's claim."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import explorer
from explorer.api import optimum, transfer
from store import Store

from tests.explorer.analysis.hyper.test_hyper import naive_optima

pytestmark = pytest.mark.slow

COMBOS = {("standard", "raw"): [2.0**k for k in range(-9, -2)], ("mlu", "mean_field"): [2.0**k for k in range(-3, 4)]}


def study(preset: str, scaling: str) -> dict:
    return {
        "name": "adam_small",
        "problem": {"d_in": 3, "d_out": 3, "samples": 16, "data": "teacher", "label_noise": 0.1, "test_samples": 32},
        "model": {"activation": "tanh", "preset": preset},
        "train": {"steps": 10, "dtype": "float64", "optimizer": "adam", "lr_scaling": scaling},
        "reference": {"kind": "largest"},
        "grid": {"L": [3], "M": [16, 32, 64], "D": [4], "lr": COMBOS[(preset, scaling)], "problem_seeds": [1, 2],
                 "seeds": 2},
        "resources": {"cpus_per_trial": 1, "gpus_per_trial": 0},
    }


@pytest.fixture(scope="module")
def studied(tmp_path_factory, local_ray):
    st = Store(tmp_path_factory.mktemp("adam_small") / "store")
    for preset, scaling in COMBOS:
        result = explorer.sweep(study(preset, scaling), store=st, progress=False)
        assert result.exit_code == 0, result.summary()
    return st


def stored_rows(st: Store) -> pd.DataFrame:
    con = st.connect(sweep="adam_small", read_only=True)
    try:
        return con.sql("SELECT M, preset, lr_scaling, optimizer, lr, problem_seed, seed, step, steps, status, test_loss "
                       "FROM metrics WHERE sweep = 'adam_small'").df()
    finally:
        con.close()


def test_the_held_out_optima_and_the_width_law_are_what_a_plain_script_finds(studied):
    rows = stored_rows(studied)
    assert set(rows["optimizer"]) == {"adam"} and rows["test_loss"].notna().all()
    result = transfer("adam_small", "lr", across=("M",), store=studied, metric="test_loss", n_boot=100)
    found = result.optima.table
    slopes = {}
    for (preset, scaling), group in rows.groupby(["preset", "lr_scaling"]):
        plain = group.rename(columns={"M": "L", "test_loss": "loss"})  # naive_optima reads L and loss
        naive = naive_optima(plain)
        mine = found[(found["preset"] == preset) & (found["lr_scaling"] == scaling)]
        optima = []
        for _, row in mine.iterrows():
            argmin, vertex, _ = naive[int(row["M"])]
            assert row["optimum"] == pytest.approx(argmin if vertex is None else vertex, rel=1e-9)
            optima.append((float(row["M"]), float(row["optimum"])))
        Ms, values = np.log(np.array(optima)).T
        slopes[(preset, scaling)] = np.polyfit(Ms, values, 1)[0]
    for fit in result.fits:
        assert fit.measured, fit.note
        assert fit.estimate[1] == pytest.approx(slopes[(fit.values["preset"], fit.values["lr_scaling"])], abs=1e-9)
    (difference,) = result.differences["difference"]  # b - a
    a = result.differences["a"].iloc[0]
    expected = slopes[("mlu", "mean_field")] - slopes[("standard", "raw")]
    assert float(difference) == pytest.approx(-expected if "mlu" in a else expected, abs=1e-9)
    assert "paired difference delta" in "\n".join(result.lines())  # the exponent across M is delta


def test_optimum_of_the_training_loss_still_reads_the_same_sweep(studied):
    table = optimum("adam_small", "lr", store=studied, n_boot=50).table
    assert len(table) == 2 * 3
