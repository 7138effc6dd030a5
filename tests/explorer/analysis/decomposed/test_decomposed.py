"""The bias / fluctuation decomposition and the decomposed fit: estimators against a naive
computation, unbiasedness on a planted bias vector, the fit on planted laws, the guard, the
shared-seed bootstrap and its coverage."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from explorer.analysis.decomposed import (REGIMES, Regime, draws_of, estimate, fit_decomposed, gram_of, jackknife_se,
                                          planted_grams, terms)
from explorer.errors import FitError
from explorer.analysis.fitting import FITS_COLUMNS, format_table


def naive_terms(errors, pick):
    """bias^2 and fluct^2 straight from per-seed error vectors and a resample of seed indices."""
    n = errors.shape[1]
    total = pairs = 0.0
    for p, i in enumerate(pick):
        for q, j in enumerate(pick):
            if p != q and i != j:
                total += float(errors[i] @ errors[j]) / n
                pairs += 1
    bias2 = total / pairs
    return bias2, float(np.mean([errors[i] @ errors[i] / n for i in pick])) - bias2


def test_terms_match_the_closed_form_and_split_the_rms_exactly():
    rng = np.random.default_rng(0)
    errors = rng.standard_normal((5, 40)) * 0.1 + 0.03
    R, n = errors.shape
    bias2, fluct2 = terms(gram_of(errors))
    closed = (np.sum(errors.sum(axis=0) ** 2) - np.sum(errors**2)) / (R * (R - 1) * n)
    assert bias2 == pytest.approx(closed, rel=1e-12)
    assert bias2 + fluct2 == pytest.approx(np.mean(errors**2), rel=1e-12)  # err^2 = bias^2 + fluct^2
    # the fluctuation is the seeds' unbiased sample variance, summed over entries / n
    assert fluct2 == pytest.approx(errors.var(axis=0, ddof=1).mean(), rel=1e-12)


def test_a_seed_drawn_twice_is_not_its_own_pair():
    rng = np.random.default_rng(1)
    errors = rng.standard_normal((4, 30))
    gram = gram_of(errors)
    for pick in ([0, 0, 1, 2], [3, 3, 3, 1], [0, 1, 2, 3], [2, 2, 0, 0]):
        assert terms(gram, np.array(pick)) == pytest.approx(naive_terms(errors, pick), rel=1e-12)
    assert math.isnan(terms(gram, np.array([2, 2, 2, 2]))[0])  # no distinct pair: no bias


def test_bias_estimator_is_unbiased_for_a_planted_bias_vector():
    rng = np.random.default_rng(2)
    n, R = 20, 4
    mu = rng.standard_normal(n) * 0.05
    truth = float(mu @ mu / n)
    draws = np.array([terms(gram_of(mu + 0.3 * rng.standard_normal((R, n)))) for _ in range(4000)])
    mean, se = draws[:, 0].mean(), draws[:, 0].std(ddof=1) / math.sqrt(len(draws))
    assert abs(mean - truth) < 3 * se  # the noise (0.09 per entry) is 36x the bias^2: no offset survives
    assert draws[:, 1].mean() == pytest.approx(0.09, rel=0.02)
    naive_plugin = np.mean([np.mean((mu + 0.3 * rng.standard_normal((R, n))).mean(axis=0) ** 2) for _ in range(500)])
    assert naive_plugin > truth + 0.02  # the plug-in |seed mean|^2 would carry fluct^2 / R


def test_jackknife_standard_error_matches_the_spread_over_repetitions():
    rng = np.random.default_rng(3)
    mu = np.full(30, 0.2)
    grams = np.stack([gram_of(mu + 0.3 * rng.standard_normal((8, 30))) for _ in range(600)])
    bias2, _ = terms(grams)
    se_b, _ = jackknife_se(grams)
    assert np.mean(se_b) == pytest.approx(bias2.std(ddof=1), rel=0.15)


def test_decomposed_fit_recovers_the_planted_exponents_and_keeps_the_fits_columns():
    frame = planted_grams(REGIMES["rates"], np.random.default_rng(4))
    result = fit_decomposed(frame, n_boot=100)
    for name, value in REGIMES["rates"].truth.items():
        assert result.ci_low[name] <= value <= result.ci_high[name], name
    assert result.ci_high["a"] - result.ci_low["a"] < 0.4 and result.ci_high["b"] - result.ci_low["b"] < 0.05
    rows = result.rows()
    assert list(rows.columns) == list(FITS_COLUMNS) and sorted(rows["parameter"]) == ["a", "b", "c1", "c2"]
    text = format_table(result)
    assert "additive surface (the theorem's bound): err <= c1/L + c2*sqrt(D/(L*M))" in text
    assert "RSS surface" in text and "t(3)" in text
    assert result.bootstrap == "draws, then seed indices shared by a draw's points"
    assert len(result.per_draw) == 16


def test_a_grid_whose_columns_each_hold_one_depth_does_not_measure_a():
    # each M is swept at one L only (per draw), so no column has a slope in L: a is not measured,
    # whatever rounding the columns' weighted means carry (it once came out as exactly 0, CI width 0)
    diagonal = Regime("diagonal", c1=0.065, c2=0.205, entries=50)
    for seed in range(12):
        frame = planted_grams(diagonal, np.random.default_rng(seed))
        frame = frame[np.log2(frame["M"]) == 10 - 2 * (np.log2(frame["L"]) - 2)]  # L = 4 at M = 1024, ..., 128 at 1
        draws = draws_of(frame)
        assert all(len(d.L) == 6 for d in draws)
        result = estimate(draws, n_boot=5, seed=seed)
        assert math.isnan(result.theta[1]) and math.isnan(result.theta[0]), (seed, result.theta)
        assert np.isfinite(result.theta[3])


def test_the_intervals_use_students_t_on_the_draws():
    frame = planted_grams(REGIMES["rates"], np.random.default_rng(5))
    fit = estimate(draws_of(frame), n_boot=100)
    lo, hi = fit.interval()
    assert fit.dof == 3 and fit.quantile == pytest.approx(stats.t.ppf(0.975, 3))
    np.testing.assert_allclose((hi - lo) / 2, fit.quantile * fit.sd)


def test_bootstrap_resamples_seed_indices_once_per_draw(monkeypatch):
    """Every point of a draw gets the same resample of seed indices."""
    import explorer.analysis.decomposed.estimator as module

    seen = []
    original = module.terms

    def spy(grams, pick=None):
        seen.append((grams.shape[0], None if pick is None else tuple(pick)))
        return original(grams, pick)

    monkeypatch.setattr(module, "terms", spy)
    frame = planted_grams(Regime("tiny", 0.1, 0.2, Ls=(4, 8, 16), Ms=(4, 64), draws=2, seeds=4), np.random.default_rng(6))
    module.estimate(module.draws_of(frame), n_boot=3)
    resampled = [s for s in seen if s[1] is not None and len(s[1]) == 4]
    assert resampled and all(points == 6 for points, _ in resampled)  # one call per draw: all 6 points at once


def test_one_seed_per_point_says_why_in_one_line():
    frame = planted_grams(Regime("one", 0.1, 0.2, Ls=(4, 8), Ms=(4, 16), draws=1, seeds=2), np.random.default_rng(7))
    frame["gram"] = frame["gram"].map(lambda g: g[:1, :1])
    frame["seeds"], frame["n_seeds"] = [(0,)] * len(frame), 1
    with pytest.raises(FitError, match="needs at least 2 seeds per point .* this grid has 1") as info:
        fit_decomposed(frame)
    assert "\n" not in str(info.value)


def test_the_guard_names_a_steep_small_depth_with_a_where():
    """A bias with a strong second-order term in 1/L (pre-asymptotic) at the smallest depths."""
    rng = np.random.default_rng(8)
    regime = Regime("steep", c1=0.065, c2=0.02, seeds=8, draw_sd=0.0)
    rows = []
    for g in range(regime.draws):
        u = rng.standard_normal(regime.entries)
        common = rng.standard_normal((regime.seeds, regime.entries))
        for L in regime.Ls:
            for M in regime.Ms:
                bias = regime.c1 / L * (1 + 6.0 / L)
                fluct = regime.c2 * math.sqrt(8 / (L * M))
                errors = bias * u + fluct * (0.5 * common + math.sqrt(0.75) * rng.standard_normal(common.shape))
                rows.append({"problem_seed": g + 1, "L": L, "M": M, "D": 8, "ref_err": 1e-6, "n_seeds": regime.seeds,
                             "seeds": tuple(range(regime.seeds)), "gram": gram_of(errors)})
    result = fit_decomposed(pd.DataFrame(rows), n_boot=50, per_draw=False)
    assert any('--where "L > 4"' in p for p in result.pre_asymptotic), result.pre_asymptotic
    assert any(w.startswith("pre-asymptotic points:") for w in result.warnings)


def test_the_guard_stays_quiet_on_most_planted_laws():
    fired = sum(bool(fit_decomposed(planted_grams(REGIMES["rates"], np.random.default_rng(100 + r)), n_boot=60,
                                    per_draw=False).pre_asymptotic) for r in range(8))
    assert fired <= 2


@pytest.mark.slow  # 100 planted sweeps, ~1 min
def test_decomposed_intervals_cover_at_their_nominal_rate():
    reps = 100
    hits = dict.fromkeys(("c1", "a", "c2", "b"), 0)
    for rep in range(reps):
        result = fit_decomposed(planted_grams(REGIMES["shared"], np.random.default_rng(9000 + rep)), n_boot=100,
                                seed=rep, per_draw=False, range_check=False)
        for name, value in REGIMES["shared"].truth.items():
            hits[name] += result.ci_low[name] <= value <= result.ci_high[name]
    # With 100 repetitions a 95% interval covers between 88 and 99 times in 99.8% of runs (binomial).
    low, high = stats.binom.interval(0.998, reps, 0.95)
    assert all(low <= h <= high for h in hits.values()), hits


def test_an_additive_law_warns_when_a_quadrature_law_ranks_ahead():
    from explorer.analysis.fitting import additive_warning

    table = pd.DataFrame({"law": ["free_rss", "theory_rss", "free", "theory"], "rank": [1, 2, 3, 4]})
    (line,) = additive_warning(table, "free")
    assert line.startswith("theory_rss, free_rss rank ahead of free") or line.startswith("free_rss")
    assert "quadrature" in line and "decomposed" in line
    assert additive_warning(table, "free_rss") == [] and additive_warning(table.iloc[::-1].assign(rank=[1, 2, 3, 4]),
                                                                           "theory") == []


def test_explorer_fit_on_a_store_without_gram_rows_is_one_line_naming_free_rss(tmp_path):
    from click.testing import CliRunner

    from explorer.cli import main
    from store import Store

    from tests.explorer.analysis_data import law_rows, write_to_store

    store = Store(tmp_path / "s")
    write_to_store(law_rows(lambda L, M, D: 0.5 / L + 0.2 * math.sqrt(D / (L * M)), Ls=(4, 8, 16), Ms=(1, 4), seeds=2,
                            sweep="old"), store)
    done = CliRunner().invoke(main, ["fit", "--sweep", "old", "--store", store.uri, "--no-save"])
    assert done.exit_code == 2 and done.output.count("\n") == 1, done.output
    assert "predates the per-seed decomposition" in done.output and "--form free_rss" in done.output
    rss = CliRunner().invoke(main, ["fit", "--sweep", "old", "--store", store.uri, "--no-save", "--form", "free_rss",
                                    "--bootstrap", "20"])
    assert rss.exit_code == 0 and "form free_rss" in rss.output
