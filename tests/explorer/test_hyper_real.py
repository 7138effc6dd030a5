"""Issue 35's independent argmin on a real sweep: a learning-rate study run on Ray (lr x L, the
standard preset with raw SGD and mlu with mean-field units, two draws), each slice's optimum from
``explorer optimum`` against the argmin a plain script computes from the stored metric rows, and
both presets' transfer verdicts in one table."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import explorer
from explorer.api import optimum, transfer
from store import Store

from .test_hyper import naive_optima

pytestmark = pytest.mark.slow

LRS = [2.0**k for k in range(-6, 3)]


def lr_study(scaling: str, preset: str, lrs) -> dict:
    return {
        "name": f"lr_{preset}_{scaling}",
        "problem": {"d_in": 5, "d_out": 5, "samples": 10},
        "model": {"activation": "tanh"},
        "train": {"steps": 10, "dtype": "float64", "lr_scaling": scaling},
        "reference": {"kind": "largest"},
        "grid": {"L": [4, 16], "M": [16], "D": [8], "alpha": [1.0], "preset": [preset], "lr": lrs,
                 "problem_seeds": [1, 2], "seeds": 2},
        "resources": {"cpus_per_trial": 1, "gpus_per_trial": 0},
    }


@pytest.fixture(scope="module")
def studied(tmp_path_factory, local_ray):
    st = Store(tmp_path_factory.mktemp("lr_real") / "store")
    specs = [lr_study("raw", "standard", LRS), lr_study("mean_field", "mlu", [2.0**k for k in range(-2, 6)])]
    for spec in specs:
        result = explorer.sweep(spec, store=st, progress=False)
        assert result.exit_code == 0, result.summary()
    return st, [s["name"] for s in specs]


def stored_rows(st: Store, sweep: str) -> pd.DataFrame:
    con = st.connect(sweep=sweep, read_only=True)
    try:
        return con.sql(f"SELECT L, lr, problem_seed, seed, step, steps, status, loss FROM metrics "
                       f"WHERE sweep = '{sweep}'").df()
    finally:
        con.close()


def test_each_slices_optimum_is_the_argmin_a_plain_script_finds(studied):
    st, sweeps = studied
    for sweep in sweeps:
        found = optimum(sweep, "lr", store=st, n_boot=100).table
        rows = stored_rows(st, sweep)
        naive, lrs = naive_optima(rows), sorted(rows["lr"].unique())
        assert sorted(int(L) for L in found["L"]) == sorted(naive)
        for _, row in found.iterrows():
            argmin, vertex, i = naive[int(row["L"])]
            if row["edge"] in ("below", "above"):  # an edge: no value, and the naive argmin sits there too
                assert pd.isna(row["optimum"]) and i == (0 if row["edge"] == "below" else len(lrs) - 1)
                continue
            if vertex is None:
                assert row["optimum"] == pytest.approx(argmin)
                continue
            assert row["optimum"] == pytest.approx(vertex, rel=1e-9)
            half_step = np.log(2.0) / 2  # the grid's argmin within half a grid step of the interval
            assert np.log(row["ci_low"]) - half_step <= np.log(argmin) <= np.log(row["ci_high"]) + half_step


def test_both_presets_get_their_transfer_verdict(studied):
    st, sweeps = studied
    for sweep in sweeps:
        optimum(sweep, "lr", store=st, n_boot=100)
        text = "\n".join(transfer(sweep, "lr", across=("L",), store=st, n_boot=100).lines())
        assert "gamma" in text and any(v in text for v in ("transfers across L", "drifts as L^", "not measured")), text
