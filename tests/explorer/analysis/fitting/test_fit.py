"""Scaling-law fits: recovery of known laws, honest confidence intervals, the store's rows."""
import math

import numpy as np
import pandas as pd
import pytest

from explorer.errors import ExpressionError, FitError, MixedReferencesError, QueryError, SweepDataError
from explorer.analysis.fitting import FITS_COLUMNS, fit, fit_sweep, format_table
from explorer.analysis.laws import FORMS, law_forms
from explorer.analysis.fitting.solver import Problem, solve_batch
from explorer.analysis.data import GRID_COLUMNS, grid_errors, held_axes, status_counts, step_errors
from store import Store
from store.schema import CONFIG_COLUMNS

from tests.explorer.analysis_data import connect, law_grid, law_rows, mark_trial, rerun_with_new_reference, write_to_store

TRUTH = {  # a law per registry form, with constants of the size the trials show (docs/model.md section 3)
    "theory": {"c1": 0.8, "c2": 0.3},
    "free": {"c1": 0.8, "c2": 0.3, "a": 1.0, "b": 0.5},
    "theory_rss": {"c1": 0.8, "c2": 0.3},
    "free_rss": {"c1": 0.8, "c2": 0.3, "a": 1.0, "b": 0.5},
    "joint": {"c1": 0.5, "c2": 0.2, "c3": 0.3},
    "output": {"c1": 0.8, "c2": 0.3},
    "companion_hidden": {"a": 0.05, "b": 0.02, "c": 0.5},
    "companion_output": {"a": 0.05, "b": 0.02, "c": 0.5},
}
MULTI_D = ("joint", "companion_hidden", "companion_output")  # laws with a D-only term need several D


def _law(form):
    from explorer.analysis.laws import resolve_form

    expr = resolve_form(form)[1]
    return lambda L, M, D: float(expr(TRUTH[form], L, M, D))


def _grid(form, seed=0, **kwargs):
    kwargs.setdefault("Ds", (2, 8, 32) if form in MULTI_D else (8,))
    return law_grid(_law(form), rng=np.random.default_rng(seed), **kwargs)


@pytest.mark.parametrize("form", sorted(law_forms()))
def test_fit_recovers_the_constants_of_a_known_law_from_noisy_errors(form):
    result = fit(_grid(form), form, n_boot=200)
    for name, value in TRUTH[form].items():
        assert result.estimate[name] == pytest.approx(value, rel=0.08), name
        assert result.ci_low[name] < result.estimate[name] < result.ci_high[name]
    assert result.r2_log > 0.97
    assert result.converged and result.n_boot >= 195 and result.bootstrap == "seeds"
    assert result.extrapolation_error < 0.15


@pytest.mark.slow
@pytest.mark.parametrize("form, reps", [("free", 50), ("theory", 50)])
def test_confidence_intervals_cover_the_truth_in_most_repeated_trials(form, reps):
    hits = {name: 0 for name in TRUTH[form]}
    for rep in range(reps):
        result = fit(_grid(form, seed=1000 + rep), form, n_boot=200, seed=rep)
        for name, value in TRUTH[form].items():
            hits[name] += result.ci_low[name] <= value <= result.ci_high[name]
    coverage = {name: n / reps for name, n in hits.items()}
    # Nominal 95%; measured over 200 repetitions: 0.92 to 0.96 (free), 0.905 and 0.94 (theory).
    assert all(0.8 <= c <= 1.0 for c in coverage.values()), coverage
    assert np.mean(list(coverage.values())) >= 0.88, coverage


def test_fit_is_deterministic_for_a_seed():
    grid = _grid("free")
    a, b = fit(grid, "free", seed=3), fit(grid, "free", seed=3)
    assert a.estimate == b.estimate and a.ci_low == b.ci_low and a.ci_high == b.ci_high


def test_batched_bootstrap_solver_lands_on_the_scipy_point_fit():
    grid = _grid("free")
    result = fit(grid, "free", n_boot=0)
    problem = Problem(result.expression, *(grid[c].to_numpy(float) for c in ("L", "M", "D")), 0.1)
    best = problem.theta(np.array([result.estimate[p] for p in result.parameters]))
    starts = np.stack([best + 0.3, best - 0.2, best * 1.1])
    log_err = np.tile(np.log(grid["err"].to_numpy(float)), (3, 1))
    theta, converged = solve_batch(problem, log_err, starts)
    assert converged.all()
    np.testing.assert_allclose(problem.values(theta), np.tile(problem.values(best), (3, 1)), rtol=1e-4)


def test_user_expression_is_fitted_like_a_registry_form():
    result = fit(_grid("free"), "c1*L**-a + c2*(L*M)**-b", n_boot=50)
    assert result.form == "c1*L**-a + c2*(L*M)**-b"
    assert result.estimate["a"] == pytest.approx(1.0, abs=0.1)
    assert result.estimate["b"] == pytest.approx(0.5, abs=0.05)
    assert result.fit_id.startswith("custom-")


def test_a_wrong_law_shows_in_r2_and_extrapolation():
    grid = _grid("theory")
    right, wrong = fit(grid, "theory", n_boot=0), fit(grid, "c1*L**-a", n_boot=0)
    assert right.r2_log > 0.97 > 0.9 > wrong.r2_log
    assert wrong.extrapolation_error > 3 * right.extrapolation_error


def test_floor_limited_points_are_left_out_and_counted():
    rows = law_rows(_law("theory"), ref_err=0.02, rng=np.random.default_rng(0))
    grid = grid_errors(connect(rows), "law")
    floor = grid["err"] < 3 * 0.02
    assert 0 < floor.sum() < len(grid)
    assert (grid["floor_limited"] == floor).all()
    result = fit(grid, "theory", n_boot=20)
    assert result.n_excluded == floor.sum() and result.n_points == (~floor).sum()
    assert result.grid.loc[floor.to_numpy(), "residual_log"].isna().all()


def test_grid_errors_is_the_rms_over_seeds_at_the_final_step_without_diverged_or_failed_seeds():
    rows = law_rows(_law("theory"), Ls=(2, 4), Ms=(1, 4), seeds=3)
    rows = mark_trial(rows, "L2-M1-D8-a1", "failed")
    rows = mark_trial(rows, "L4-M4-D8-a1", "diverged", seeds=[1], from_step=4)
    con = connect(rows)
    grid = grid_errors(con, "law").set_index(["L", "M"])
    assert (2, 1) not in grid.index
    final = rows[(rows["step"] == 10) & (rows["status"] == "ok")]
    for (L, M), group in final.groupby(["L", "M"]):
        assert grid.loc[(L, M), "err"] == pytest.approx(math.sqrt((group["err_out"] ** 2).mean()), rel=1e-12)
        assert grid.loc[(L, M), "n_seeds"] == len(group)
        np.testing.assert_allclose(np.sort(grid.loc[(L, M), "seed_errs"]), np.sort(group["err_out"]))
    assert grid.loc[(4, 4), "n_seeds"] == 2
    at_step = grid_errors(con, "law", step=3).set_index(["L", "M"])
    assert (at_step["step"] == 3).all() and at_step.loc[(4, 4), "n_seeds"] == 3
    counts = status_counts(con, "law")
    assert counts == {"trials": 4, "seeds": 12, "diverged_seeds": 1, "diverged_trials": 1, "failed_trials": 1,
                      "flagged_seeds": 0}
    steps = step_errors(con, "law")
    assert set(steps["step"]) == set(range(11)) and len(steps) == 3 * 11  # the failed trial has no ok row


def test_sweeps_with_other_varying_axes_are_fitted_on_a_named_slice():
    rows = law_rows(_law("theory"), alphas=(1.0, 4.0), seeds=2, Ls=(2, 4, 8), Ms=(1, 4))
    con = connect(rows)
    with pytest.raises(FitError, match=r'varies alpha .* --where "alpha = 1.0"'):
        fit(grid_errors(con, "law"), "theory")
    assert held_axes(con, "law") == {"alpha": 1.0}
    result = fit_sweep(con, "law", "theory", n_boot=10)
    assert result.held == {"alpha": 1.0} and result.where == '"alpha" = 1.0'
    assert "slice alpha = 1.0" in format_table(result)


def test_fit_rows_have_the_fits_columns_one_per_parameter():
    rows = fit(grid_errors(connect(law_rows(_law("free"))), "law"), "free", n_boot=20).rows()
    assert rows["sweep"].eq("law").all() and rows["metric"].eq("err_out").all() and rows["step"].eq(10).all()
    assert tuple(rows.columns) == FITS_COLUMNS
    assert list(rows["parameter"]) == ["c1", "c2", "a", "b"]
    assert rows["fit_id"].str.startswith("free-").all()
    assert rows["fit_id"].nunique() == 1


def test_format_table_prints_every_parameter_with_its_interval():
    result = fit(_grid("theory"), "theory", n_boot=20)
    text = format_table(result)
    for name in ("c1", "c2"):
        assert f"{result.ci_low[name]:.4g}" in text and f"{result.ci_high[name]:.4g}" in text
    assert "95% CI" in text and "R^2 (log)" in text


def test_unsupported_terms_and_unidentified_parameters_are_flagged():
    grid = _grid("theory")
    assert fit(grid, "theory", n_boot=0).notes == []
    twins = fit(grid, "c1/L + c2*sqrt(D/(L*M)) + c3/L", n_boot=0)
    assert any("c1, c3 are not separately determined" in w for w in twins.warnings), twins.warnings
    no_term = fit(grid, "c1/L + c2*sqrt(D/(L*M)) + c3*M", n_boot=0)
    assert any(note.startswith("c3 ~ 0") for note in no_term.notes), no_term.notes


def test_a_hand_made_grid_needs_only_l_m_d_and_err():
    grid = _grid("theory")[["L", "M", "D", "err"]]
    result = fit(grid, "theory", n_boot=50)
    assert result.bootstrap == "points" and result.estimate["c1"] == pytest.approx(0.8, rel=0.08)
    assert result.sweep is None and result.step is None


def test_one_seed_per_point_falls_back_to_resampling_points():
    rows = law_rows(_law("theory"), seeds=1)
    result = fit(grid_errors(connect(rows), "law"), "theory", n_boot=50)
    assert result.bootstrap == "points" and result.n_boot > 40
    assert result.ci_low["c1"] < result.ci_high["c1"]


@pytest.mark.parametrize("call, error, message", [
    (lambda con: grid_errors(con, "nope"), SweepDataError, "unknown sweep 'nope'; the store has: law"),
    (lambda con: grid_errors(con, "law", metric="loss"), FitError, "unknown metric 'loss'"),
    (lambda con: grid_errors(con, "law", step=99), SweepDataError, "no finite err_out rows"),
    (lambda con: grid_errors(con, "law", where="alpa = 1"), QueryError, "Referenced column \"alpa\" not found"),
    (lambda con: fit_sweep(con, "law", "powr"), FitError, "unknown fit form 'powr'; expected one of: theory"),
    (lambda con: fit_sweep(con, "law", "c1*L +"), ExpressionError, "cannot parse"),
    (lambda con: fit_sweep(con, "law", "c1*L**-a + c2*M**-b + c3*D**-g + c4", where="L = 2 AND M = 1"),
     FitError, "needs at least"),
])
def test_bad_requests_raise_one_line_usage_errors(call, error, message):
    con = connect(law_rows(_law("theory"), Ls=(2, 4), Ms=(1, 4), seeds=2))
    with pytest.raises(error) as info:
        call(con)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_missing_columns_are_named():
    con = connect(pd.DataFrame({"sweep": ["s"], "trial_key": ["k"], "seed": [0], "step": [0], "L": [1], "M": [1],
                                "D": [1], "err_out": [0.1]}))
    with pytest.raises(SweepDataError, match="lacks columns: status"):
        grid_errors(con, "s")


# ----------------------------------------------------------------------------- several references

REFERENCE_GRID = dict(Ls=(2, 4, 8, 16), Ms=(1, 4, 16), seeds=2, sweep="mix")


def _rerun(started=True):
    """The theory law measured against reference new-8; three times it against old-8, earlier."""
    new = _law("theory")
    return rerun_with_new_reference(lambda L, M, D: 3 * new(L, M, D), new, started=started, **REFERENCE_GRID)


def test_grid_columns_are_the_stores_config_columns_but_repetitions_and_derived_ones():
    assert set(GRID_COLUMNS) == {c.name for c in CONFIG_COLUMNS} - {"L", "M", "D", "problem_seed", "residual_scale"}
    assert "coupled_dim" in GRID_COLUMNS


def test_a_rerun_against_a_new_reference_is_read_against_the_newest_not_pooled(tmp_path):
    store = Store(tmp_path / "store")
    write_to_store(_rerun(), store)  # the trials view's started_at tells old from new
    con = store.connect()
    grid = grid_errors(con, "mix")
    only_new = grid_errors(con, "mix", where="ref_key = 'new-8'")
    assert len(grid) == 12 and (grid["n_seeds"] == 2).all()  # not 4: old seeds are not pooled in
    assert set(grid["ref_key"]) == {"new-8"}
    np.testing.assert_allclose(grid["err"], only_new["err"], rtol=1e-12)
    [note] = grid.attrs["notes"]
    assert note.startswith("12 of 12 grid points have trials against several references") and "ref_key old-8" in note
    assert only_new.attrs["notes"] == []

    result = fit_sweep(con, "mix", "theory", n_boot=20)
    assert result.estimate == pytest.approx(fit(only_new, "theory", n_boot=0).estimate, rel=1e-9)
    assert result.estimate["c1"] == pytest.approx(TRUTH["theory"]["c1"], rel=0.3)  # the new law, not 3x it
    assert result.notes[0] == note and f"note: {note}" in format_table(result)
    assert status_counts(con, "mix")["trials"] == 12
    steps = step_errors(con, "mix")
    assert (steps["n_seeds"] == 2).all() and steps.attrs["notes"] == [note]


def test_a_rerun_whose_new_reference_failed_is_read_against_the_old_one():
    rows = _rerun()
    for key in rows.loc[rows["ref_key"] == "new-8", "trial_key"].unique():
        rows = mark_trial(rows, key, "failed")
    grid = grid_errors(connect(rows), "mix")
    old = grid_errors(connect(rows), "mix", where="ref_key = 'old-8'")
    assert set(grid["ref_key"]) == {"old-8"} and grid.attrs["notes"] == []
    np.testing.assert_allclose(grid["err"], old["err"], rtol=1e-12)


def test_mixed_references_are_refused_when_no_start_time_tells_the_newest():
    rows = _rerun(started=False)
    with pytest.raises(MixedReferencesError) as info:
        grid_errors(connect(rows), "mix")
    message = str(info.value)
    assert message.startswith("sweep mix mixes 2 references for the same grid points")
    assert "pick one with --where \"ref_key = 'new-8'\" (keys: new-8, old-8)" in message and "\n" not in message
    old = grid_errors(connect(rows), "mix", where="ref_key = 'old-8'")
    assert (old["n_seeds"] == 2).all() and set(old["ref_key"]) == {"old-8"}


def test_mixed_references_are_refused_on_a_connection_without_a_trials_view():
    # the adaptive loop's kept rows are a connection with ``metrics`` only: no start times to read
    import duckdb

    con = duckdb.connect()
    con.register("metrics", _rerun(started=False))
    with pytest.raises(MixedReferencesError, match="the trials view has no start times"):
        grid_errors(con, "mix")


def test_mixed_references_started_at_the_same_time_are_refused():
    rows = _rerun()
    rows["started_at"] = rows["started_at"].min()
    with pytest.raises(MixedReferencesError, match="start times do not tell which is newest"):
        grid_errors(connect(rows), "mix")


def test_one_reference_per_d_is_not_a_mix():
    grid = grid_errors(connect(law_rows(_law("joint"), Ds=(2, 8), seeds=2)), "law")
    assert grid.attrs["notes"] == [] and set(grid["ref_key"]) == {"ref-2", "ref-8"}


def test_coupled_dim_is_a_grid_column_with_nulls():
    plain = law_rows(_law("theory"), seeds=2)
    coupled = plain.assign(coupled_dim=16, trial_key=plain["trial_key"] + "-c16")
    con = connect(pd.concat([plain, coupled, coupled.assign(trial_key=coupled["trial_key"] + "x")],
                            ignore_index=True))
    grid = grid_errors(con, "law")
    assert len(grid) == 48 and (grid["n_seeds"] == np.where(grid["coupled_dim"].isna(), 2, 4)).all()
    with pytest.raises(FitError, match="varies coupled_dim"):
        fit(grid, "theory", n_boot=0)
    result = fit_sweep(con, "law", "theory", n_boot=0)
    assert result.held == {"coupled_dim": 16} and result.n_points == 24
    nulls = fit_sweep(con, "law", "theory", n_boot=0, where="coupled_dim IS NULL")
    assert nulls.n_points == 24 and nulls.held == {}
