"""Fits are a history: a refit of a grown sweep is a fit of its own, each keeps its created_at,
n_points and data_hash, and ``latest_fits`` gives the newest of each question."""
from __future__ import annotations

import math
import os

import pyarrow as pa
import pytest
import pyarrow.parquet as pq
from click.testing import CliRunner

from explorer.cli import main
from store import Store
from store.layout import key_file

from tests.explorer.analysis_data import law_rows, write_to_store

LAW = lambda L, M, D: 0.5 / L + 0.2 * math.sqrt(D / (L * M))  # noqa: E731


def _draw(problem_seed: int):
    rows = law_rows(LAW, Ls=(2, 4, 8, 16), Ms=(1, 4, 16), seeds=3, steps=2, sweep="S")
    rows["problem_seed"] = problem_seed
    rows["trial_key"] = rows["trial_key"] + f"-p{problem_seed}"
    return rows


def _fit(store: Store) -> str:
    result = CliRunner().invoke(main, ["fit", "--sweep", "S", "--store", store.uri, "--form", "theory",
                                       "--bootstrap", "10"])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_refit_of_a_grown_sweep_is_a_new_fit_and_the_first_keeps_its_rows(tmp_path):
    store = Store(tmp_path / "results")
    write_to_store(_draw(1), store)
    _fit(store)
    write_to_store(_draw(2), store)  # add problem_seeds and rerun the sweep
    _fit(store)
    _fit(store)  # the same trials again: the same fit, rewritten
    fits = store.query("SELECT fit_id, fit_key, data_hash, n_points, min(created_at) AS created_at FROM fits "
                       "WHERE sweep = 'S' GROUP BY ALL ORDER BY created_at").to_pylist()
    assert store.query("SELECT count(DISTINCT fit_id) AS n FROM fits WHERE sweep = 'S'").to_pylist() == [{"n": 2}]
    assert [f["n_points"] for f in fits] == [12, 24]
    assert fits[0]["fit_key"] == fits[1]["fit_key"] and fits[0]["data_hash"] != fits[1]["data_hash"]
    assert all(f["fit_id"] == f"{f['fit_key']}-{f['data_hash'][:8]}" for f in fits)
    latest = store.query("SELECT DISTINCT fit_id, n_points FROM latest_fits WHERE sweep = 'S'").to_pylist()
    assert latest == [{"fit_id": fits[1]["fit_id"], "n_points": 24}]


@pytest.mark.slow
def test_fits_written_before_the_history_columns_stay_readable_and_count_in_latest_fits(tmp_path):
    """An older fit file lacks fit_key and data_hash: it is served with them null, its fit_id is
    its question, and a newer fit of the same question supersedes it in latest_fits."""
    store = Store(tmp_path / "results")
    write_to_store(_draw(1), store)
    _fit(store)
    row = store.query("SELECT fit_id, fit_key FROM fits LIMIT 1").to_pylist()[0]
    path = key_file(str(tmp_path / "results"), "S", "fits", row["fit_id"])
    old_path = key_file(str(tmp_path / "results"), "S", "fits", row["fit_key"])
    table = pq.read_table(path).drop(["fit_key", "data_hash"])
    table = table.set_column(table.schema.get_field_index("fit_id"), "fit_id",
                             pa.array([row["fit_key"]] * table.num_rows, pa.string()))
    pq.write_table(table, old_path)  # as the old code wrote it: fit_id = the question, no history columns
    os.remove(path)
    assert store.check().ok
    assert store.query("SELECT DISTINCT fit_id, fit_key, data_hash FROM latest_fits").to_pylist() == [
        {"fit_id": row["fit_key"], "fit_key": None, "data_hash": None}]
    write_to_store(_draw(2), store)
    _fit(store)
    assert store.query("SELECT count(DISTINCT fit_id) AS n FROM fits").to_pylist() == [{"n": 2}]
    latest = store.query("SELECT DISTINCT fit_key, n_points FROM latest_fits").to_pylist()
    assert latest == [{"fit_key": row["fit_key"], "n_points": 24}]


def test_the_question_does_not_depend_on_how_many_resamples_converged():
    """A grown sweep's fit may see fewer resamples converge (a term unmeasured on one draw): it
    is still the same question (fit_key), so latest_fits supersedes the earlier fit."""
    from explorer.analysis.fitting import fit

    from tests.explorer.analysis_data import law_grid

    result = fit(law_grid(LAW, Ls=(2, 4, 8), Ms=(1, 4)), "theory", n_boot=10, range_check=False)
    key = result.fit_key
    result.samples = result.samples[:7]  # three resamples did not converge
    assert result.fit_key == key
