"""The ``points`` view: per point and step, the seeds' errors split into bias and fluctuation.

The rows are built here from planted per-seed error vectors e_s (their Gram rows, as train_trial
stores them); the expected numbers come from the e_s directly, never from the Gram rows."""
from __future__ import annotations

import itertools
import math

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import store_testkit as kit
from click.testing import CliRunner

from explorer.cli import main
from store import Store
from store.layout import key_file
from store.points import create_points_view

DECOMPOSITION = ["bias2_out", "bias_out", "fluct_out", "bias2_out_se", "bias_out_se",
                 "bias2_hidden", "bias_hidden", "fluct_hidden", "bias2_hidden_se", "bias_hidden_se"]


def direct(errors: np.ndarray) -> dict:
    """bias^2, fluct^2 and the standard error of bias^2 from per-seed errors (R, n), by their
    definitions: means of h(s, t) = <e_s, e_t> / n over distinct seeds, by explicit loops."""
    R, n = errors.shape
    h = lambda s, t: float(errors[s] @ errors[t]) / n  # noqa: E731

    def mean_over(k, f):
        return np.mean([f(*ix) for ix in itertools.permutations(range(R), k)])

    def bias2(e):
        k = len(e)
        return (np.sum(e.sum(axis=0) ** 2) - np.sum(e ** 2)) / (k * (k - 1) * n)

    b2 = bias2(errors)
    out = {"bias2": b2, "fluct2": np.sum((errors - errors.mean(axis=0)) ** 2) / n / (R - 1) if R > 1 else None}
    if R >= 4:
        p4 = mean_over(4, lambda s, t, u, v: h(s, t) * h(u, v))
        p2 = mean_over(2, lambda s, t: h(s, t) ** 2)
        out["bias2_se"] = math.sqrt(max(b2 * b2 - p4, 2 * (p2 - p4) / (R * (R - 1))))
    elif R == 3:
        leave = np.array([bias2(np.delete(errors, u, axis=0)) for u in range(R)])
        out["bias2_se"] = math.sqrt((R - 1) / R * np.sum((leave - leave.mean()) ** 2))
    return out


def gram_rows(errors: np.ndarray, ok: list[bool] | None = None) -> list[list[float]]:
    """Each seed's stored Gram row (train_trial's layout: NaN where a seed is not ok)."""
    n = errors.shape[1]
    gram = errors @ errors.T / n
    if ok is not None:
        mask = np.outer(ok, ok)
        gram = np.where(mask, gram, np.nan)
    return gram.tolist()


def planted_rows(errors: dict, hidden: dict | None = None, flags: dict | None = None, **grid) -> list[dict]:
    """kit.metric_rows of one trial with its err and Gram columns from per-step errors (R, n)."""
    seeds = tuple(range(next(iter(errors.values())).shape[0]))
    rows = kit.metric_rows(seeds=seeds, steps=max(errors), **grid)
    grams = {k: gram_rows(e) for k, e in errors.items()}
    hidden_grams = {k: gram_rows(e) for k, e in (hidden or errors).items()}
    for row in rows:
        s, k = row["seed"], row["step"]
        row["gram_out"], row["gram_hidden"] = grams[k][s], hidden_grams[k][s]
        row["err_out"], row["err_hidden"] = math.sqrt(grams[k][s][s]), math.sqrt(hidden_grams[k][s][s])
        row["flags"] = (flags or {}).get(s, "")
    return rows


def write(store: Store, rows: list[dict], sweep: str = "sw") -> str:
    key = kit.trial_key(L=rows[0]["L"], M=rows[0]["M"], seeds=sorted({r["seed"] for r in rows}))
    store.write_trial(sweep, key, rows, kit.trial_row_from_metrics(
        rows, config_json="{}", started_at=kit.STARTED, seeds=sorted({r["seed"] for r in rows})))
    return key


def test_points_match_the_decomposition_of_the_planted_errors(any_store):
    rng = np.random.default_rng(3)
    bias = rng.standard_normal(50) * 0.1
    errors = {k: bias * (k + 1) + 0.3 * rng.standard_normal((5, 50)) for k in range(3)}
    hidden = {k: 2 * e for k, e in errors.items()}
    write(any_store, planted_rows(errors, hidden, L=16, M=64))
    got = any_store.query("SELECT * FROM points ORDER BY step").to_pylist()
    assert [r["step"] for r in got] == [0, 1, 2]
    for row in got:
        e = errors[row["step"]]
        want = direct(e)
        assert (row["L"], row["M"], row["n_seeds"]) == (16, 64, 5)
        assert row["bias2_out"] == pytest.approx(want["bias2"], rel=1e-9)
        assert row["bias_out"] == pytest.approx(math.sqrt(want["bias2"]), rel=1e-9)
        assert row["fluct_out"] == pytest.approx(math.sqrt(want["fluct2"]), rel=1e-9)
        assert row["bias2_out_se"] == pytest.approx(want["bias2_se"], rel=1e-9)
        assert row["err_out"] == pytest.approx(math.sqrt(np.mean(e ** 2)), rel=1e-12)
        assert row["err_out"] ** 2 == pytest.approx(row["bias2_out"] + row["fluct_out"] ** 2, rel=1e-9)
        assert row["bias2_hidden"] == pytest.approx(4 * want["bias2"], rel=1e-9)
        assert row["ref_err_out"] == 1e-3 and row["ref_err_hidden"] == 2e-3
        assert row["bias_out_se"] == pytest.approx(want["bias2_se"] / (2 * math.sqrt(want["bias2"])), rel=1e-9)


def test_flagged_and_diverged_seeds_are_left_out(local_store):
    rng = np.random.default_rng(4)
    errors = {k: 0.05 + 0.2 * rng.standard_normal((5, 30)) for k in range(3)}
    rows = planted_rows(errors, flags={1: "chaotic"})
    # seed 4 diverges at step 1 (4 seeds left at step 0, 3 after: both kinds of standard error): its row there is 'diverged', none after; the others' Gram rows
    # carry NaN in its entries from then on (train_trial's layout)
    rows = [r for r in rows if not (r["seed"] == 4 and r["step"] == 2)]
    for r in rows:
        if r["step"] >= 1:
            ok = [True, True, True, True, False]
            r["gram_out"] = r["gram_hidden"] = gram_rows(errors[r["step"]], ok)[r["seed"]]
            if r["seed"] == 4:
                r.update(status="diverged", err_out=math.inf)
    write(local_store, rows)
    got = {r["step"]: r for r in local_store.query("SELECT * FROM points").to_pylist()}
    assert [got[k]["n_seeds"] for k in range(3)] == [4, 3, 3]
    for k, seeds in ((0, [0, 2, 3, 4]), (1, [0, 2, 3]), (2, [0, 2, 3])):
        want = direct(errors[k][seeds])
        assert got[k]["bias2_out"] == pytest.approx(want["bias2"], rel=1e-9)
        assert got[k]["bias2_out_se"] == pytest.approx(want["bias2_se"], rel=1e-9)
        assert got[k]["err_out"] == pytest.approx(math.sqrt(np.mean(errors[k][seeds] ** 2)), rel=1e-12)


def test_one_seed_has_no_decomposition_and_two_no_standard_error(local_store):
    rng = np.random.default_rng(5)
    write(local_store, planted_rows({0: rng.standard_normal((1, 10)), 1: rng.standard_normal((1, 10))}, L=4))
    write(local_store, planted_rows({0: rng.standard_normal((2, 10)), 1: rng.standard_normal((2, 10))}, L=8))
    got = {r["L"]: r for r in local_store.query("SELECT * FROM points WHERE step = 1").to_pylist()}
    assert got[4]["n_seeds"] == 1 and got[4]["err_out"] > 0
    assert all(got[4][c] is None for c in DECOMPOSITION)
    assert got[8]["bias2_out"] is not None and got[8]["fluct_out"] is not None
    assert got[8]["bias2_out_se"] is None and got[8]["bias_out_se"] is None


def _drop_gram_columns(path: str) -> None:
    """Rewrite a metrics file as the store wrote it before the Gram rows were stored."""
    table = pq.read_table(path)
    pq.write_table(table.drop(["gram_out", "gram_hidden"]).replace_schema_metadata(table.schema.metadata), path)


def test_old_store_without_gram_columns_still_queries_with_null_decomposition(local_store):
    old_key, old_rows, old_trial = kit.trial(L=4, seeds=(0, 1, 2))
    local_store.write_trial("sw", old_key, old_rows, old_trial)
    _drop_gram_columns(key_file(str(local_store.uri), "sw", "metrics", old_key))
    rng = np.random.default_rng(6)
    new_key = write(local_store, planted_rows({k: rng.standard_normal((3, 10)) for k in range(4)}, L=8))
    assert local_store.check().ok
    got = {r["L"]: r for r in local_store.query("SELECT * FROM points WHERE step = 3").to_pylist()}
    assert got[4]["n_seeds"] == 3
    assert got[4]["err_out"] == pytest.approx(math.sqrt(np.mean([r["err_out"] ** 2 for r in old_rows if r["step"] == 3])))
    assert all(got[4][c] is None for c in DECOMPOSITION)
    assert all(got[8][c] is not None for c in DECOMPOSITION)
    local_store.compact("sw")  # the merged file holds both: the old rows' Gram rows stay null
    assert local_store.check().ok
    again = {r["L"]: r for r in local_store.query("SELECT * FROM points WHERE step = 3").to_pylist()}
    assert again == got
    assert new_key


def test_explorer_sql_reads_the_points_view(local_store):
    rng = np.random.default_rng(7)
    write(local_store, planted_rows({k: 0.1 + rng.standard_normal((4, 20)) for k in range(2)}, L=16, M=64))
    result = CliRunner().invoke(main, ["sql", "SELECT L, M, step, n_seeds, bias_out, fluct_out FROM points ORDER BY step",
                                       "--store", str(local_store.uri), "--format", "csv"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "L,M,step,n_seeds,bias_out,fluct_out"
    assert lines[1].startswith("16,64,0,4,") and len(lines) == 3


def _many_points(draws: int, R: int, n: int, bias: np.ndarray, noise: float, rng) -> pd.DataFrame:
    """``draws`` one-step trials of R seeds: e_s = bias + noise * N(0, 1), as metric rows."""
    rows = []
    cols = kit.config()
    for d in range(draws):
        errors = bias + noise * rng.standard_normal((R, n))
        grams = gram_rows(errors)
        for s in range(R):
            rows.append({**cols, "sweep": "planted", "trial_key": f"t{d}", "ref_key": "r", "ref_kind": "mean_ode",
                         "seed": s, "step": 0, "status": "ok", "flags": "", "err_out": math.sqrt(grams[s][s]),
                         "err_hidden": math.sqrt(grams[s][s]), "gram_out": grams[s], "gram_hidden": grams[s],
                         "ref_err_out": 0.0, "ref_err_hidden": 0.0})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("R", [4, 8])
def test_planted_bias_is_estimated_without_bias_and_its_standard_error_is_honest(R):
    rng = np.random.default_rng(R)
    n, draws, noise = 40, 3000, 0.3
    bias = 0.1 * np.sin(np.arange(n))  # |b|^2 / n ~ 0.005, the spread's 0.09 is 18 times more
    con = duckdb.connect()
    con.register("planted", _many_points(draws, R, n, bias, noise, rng))
    create_points_view(con, "planted")
    got = con.sql("SELECT bias2_out, fluct_out, bias2_out_se FROM points").df()
    assert len(got) == draws
    truth = float(np.mean(bias ** 2))
    spread = float(got["bias2_out"].std())
    assert abs(got["bias2_out"].mean() - truth) < 4 * spread / math.sqrt(draws)
    assert (got["bias2_out"] < 0).any()  # unbiased, hence sometimes negative when the bias is small
    fluct2 = got["fluct_out"] ** 2
    assert abs(fluct2.mean() - noise ** 2) < 4 * fluct2.std() / math.sqrt(draws)
    # the standard error matches the spread over draws (rms of the SEs / sd: 1.0 - 1.25 here)
    ratio = math.sqrt(float(np.mean(got["bias2_out_se"] ** 2))) / spread
    assert 0.9 < ratio < 1.35, ratio
