"""The per-seed decomposition from real trials: the stored Gram rows, the ``points`` view and
``seed_grams`` agree with the bias and fluctuation computed from the seeds' own outputs (the
plain numpy training loop of tests/naive.py, not the engine's Gram code)."""
from __future__ import annotations

import datetime as dt
import functools
import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from explorer.cli import main
from explorer.errors import NoDecompositionError
from explorer.analysis.decomposed import decompose_gram
from explorer.analysis.data import seed_grams
from store import Store, trial_row_from_metrics
from store.layout import key_file
from store.points import create_points_view
from tests import naive
from tests.trials.conftest import seed_weights
from trials import ProblemConfig, ReferenceConfig, TrialConfig, compute_reference, train_trial
from trials.model import ResNet

BASE = TrialConfig(L=16, M=512, D=4, steps=2, seeds=(3, 0, 2, 1, 4), device="cpu",
                   problem=ProblemConfig(d_in=3, d_out=2, samples=6))
POINTS = ((16, 512), (4, 8))


@functools.lru_cache(maxsize=1)
def _trials():
    reference = compute_reference(ReferenceConfig(limit=BASE, depth=64, width=64, replicas=2, device="cpu"))
    return reference, tuple((cfg, train_trial(cfg, reference)) for cfg in (BASE.replace(L=L, M=M) for L, M in POINTS))


def _errors(cfg: TrialConfig, reference) -> tuple[np.ndarray, np.ndarray]:
    """Per seed (ascending) the final output's and last hidden state's error, from the numpy loop."""
    net = ResNet(cfg)
    order = sorted(range(len(cfg.seeds)), key=lambda r: cfg.seeds[r])
    outs, hiddens = [], []
    for r in order:
        x, y, W_E, W_U, U, V = seed_weights(net, r)
        out, last, _, _ = naive.train(x, y, W_E, W_U, U, V, net.scale, cfg.activation, cfg.lr, cfg.L, cfg.M, cfg.steps)
        outs.append((out[-1] - reference.arrays["out"][-1].T).ravel())
        hiddens.append((last[-1] - reference.arrays["hidden"][-1][:, : cfg.D].T).ravel())
    return np.array(outs), np.array(hiddens)


def _store(root) -> Store:
    st = Store(str(root))
    for cfg, rows in _trials()[1]:
        rows = [dict(row, node_id="test", error=None) for row in rows]
        trial_row = trial_row_from_metrics(rows, config_json=json.dumps(cfg.numerics(), sort_keys=True),
                                           started_at=dt.datetime.now(dt.timezone.utc), seeds=list(cfg.seeds),
                                           node_id="test")
        st.write_trial("real", cfg.key(), rows, trial_row)
    return st


def _bias2(e: np.ndarray) -> float:
    R, n = e.shape
    return (np.sum(e.sum(axis=0) ** 2) - np.sum(e ** 2)) / (R * (R - 1) * n)


def test_stored_decomposition_matches_the_seeds_own_outputs(tmp_path):
    reference, trials = _trials()
    st = _store(tmp_path / "store")
    cfg, rows = trials[0]
    e_out, e_hidden = _errors(cfg, reference)
    R = len(cfg.seeds)
    final = sorted((r for r in rows if r["step"] == cfg.steps), key=lambda r: r["seed"])
    gram = e_out @ e_out.T / e_out.shape[1]
    for i, row in enumerate(final):  # each seed's stored row, in ascending seed order; its own entry err_out^2
        assert row["gram_out"] == pytest.approx(list(gram[i]), rel=1e-9, abs=1e-15)
        assert row["gram_out"][i] == pytest.approx(row["err_out"] ** 2, rel=1e-12)
    point = st.query(f"SELECT * FROM points WHERE L = 16 AND M = 512 AND step = {cfg.steps}").to_pylist()
    assert len(point) == 1 and point[0]["n_seeds"] == R
    for metric, e in (("out", e_out), ("hidden", e_hidden)):
        bias2 = _bias2(e)
        assert bias2 > 0
        assert point[0][f"bias2_{metric}"] == pytest.approx(bias2, rel=1e-7)
        assert point[0][f"bias_{metric}"] == pytest.approx(math.sqrt(bias2), rel=1e-7)
        fluct2 = np.sum((e - e.mean(axis=0)) ** 2) / e.shape[1] / (R - 1)
        assert point[0][f"fluct_{metric}"] == pytest.approx(math.sqrt(fluct2), rel=1e-7)
        assert point[0][f"err_{metric}"] == pytest.approx(math.sqrt(np.mean(e ** 2)), rel=1e-9)
    # seed_grams hands the analysis the same matrix, seeds ascending
    frame = seed_grams(st.connect(), "real")
    assert sorted(zip(frame["L"], frame["M"])) == sorted(POINTS)
    one = frame[(frame["L"] == 16) & (frame["M"] == 512)].iloc[0]
    assert one["seeds"] == (0, 1, 2, 3, 4) and one["n_seeds"] == R and one["step"] == cfg.steps
    assert one["gram"].shape == (R, R) and one["gram"].dtype == np.float64
    np.testing.assert_allclose(one["gram"], gram, rtol=1e-9, atol=1e-15)
    assert one["ref_err"] == pytest.approx(float(reference.arrays["err_out"][-1]))
    hidden = seed_grams(st.connect(), "real", metric="err_hidden", step=1, where="L = 16")
    assert len(hidden) == 1 and hidden.iloc[0]["step"] == 1
    assert hidden.iloc[0]["gram"][0, 0] == pytest.approx(next(r["err_hidden"] for r in rows if (r["seed"], r["step"]) == (0, 1)) ** 2)


def test_seed_grams_take_the_sub_matrix_of_the_chosen_seeds(tmp_path):
    st = _store(tmp_path / "store")
    full = seed_grams(st.connect(), "real").set_index(["L", "M"])
    some = seed_grams(st.connect(), "real", where="seed <> 2").set_index(["L", "M"])
    for point in POINTS:
        assert some.loc[point, "seeds"] == (0, 1, 3, 4)
        np.testing.assert_array_equal(some.loc[point, "gram"], np.delete(np.delete(full.loc[point, "gram"], 2, 0), 2, 1))


def test_old_store_says_it_predates_the_decomposition(tmp_path):
    st = _store(tmp_path / "store")
    for cfg, _ in _trials()[1]:
        path = key_file(str(tmp_path / "store"), "real", "metrics", cfg.key())
        table = pq.read_table(path)
        pq.write_table(table.drop(["gram_out", "gram_hidden"]).replace_schema_metadata(table.schema.metadata), path)
    st = Store(str(tmp_path / "store"))
    with pytest.raises(NoDecompositionError, match="predates the per-seed decomposition"):
        seed_grams(st.connect(), "real")
    got = st.query("SELECT n_seeds, err_out, bias_out, fluct_out FROM points").to_pylist()
    assert got and all(r["n_seeds"] == 5 and r["err_out"] > 0 and r["bias_out"] is None for r in got)
    result = CliRunner().invoke(main, ["sql", "SELECT count(*) AS n, count(bias_out) AS decomposed FROM points",
                                       "--store", str(tmp_path / "store"), "--format", "csv"])
    assert result.exit_code == 0 and result.stdout.strip().splitlines()[1] == f"{3 * len(POINTS)},0"


@pytest.mark.parametrize("drop", [(), (1,), (1, 3)], ids=["5 seeds", "4 seeds", "3 seeds"])
def test_decompose_gram_gives_the_points_view_numbers(tmp_path, drop):
    con = _store(tmp_path / "store").connect()
    where = f"seed NOT IN ({', '.join(map(str, drop))})" if drop else None
    # the view over the same seeds: the dropped ones flagged (the view leaves flagged seeds out)
    flagged = f"CASE WHEN {where} THEN flags ELSE 'chaotic' END" if drop else "flags"
    con.execute(f"CREATE TABLE some_seeds AS SELECT * REPLACE ({flagged} AS flags) FROM metrics")
    create_points_view(con, "some_seeds")
    view = con.sql("SELECT * FROM points").df().set_index(["trial_key", "step"])
    for step in range(BASE.steps + 1):
        for metric in ("err_out", "err_hidden"):
            suffix = metric.split("_")[1]
            for _, point in seed_grams(con, "real", metric=metric, step=step, where=where).iterrows():
                got, row = decompose_gram(point["gram"]), view.loc[(point["trial_key"], step)]
                assert row["n_seeds"] == point["n_seeds"] == 5 - len(drop)
                assert got["bias2"] == pytest.approx(row[f"bias2_{suffix}"], rel=1e-9, abs=1e-18)
                assert got["fluct2"] == pytest.approx(row[f"fluct_{suffix}"] ** 2, rel=1e-9, abs=1e-18)
                assert got["bias2_se"] == pytest.approx(row[f"bias2_{suffix}_se"], rel=1e-9)
