"""Every axis the slice varies gets its own exponent: where D varies, the decomposed law's terms
are c1 D^h L^-a and c2 D^g (LM)^-b, the theory's tie g = b is tested on g - b from the same
resamples, and the tied law is fitted beside it; any law fits one term (``--metric fluct_out``)
or the user's laws both (``--bias``/``--fluct``), weighted and resampled as the decomposed fit."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from explorer.analysis.data import TERM_METRICS
from explorer.analysis.decomposed import (REGIMES, Regime, draws_of, fit_decomposed, fit_term, fit_terms,
                                          local_d_slopes, estimate, planted_grams, as_grid)
from explorer.analysis.fitting import TIE_HALF_WIDTH, fit, format_table, tie_verdict
from explorer.cli import main
from explorer.config.planning import plan
from explorer.sweeps.adaptive import PlantedRunner, TermsLaw
from store import Store

from tests.explorer.sweeps.adaptive.test_adaptive import adaptive_spec

DEXP = REGIMES["dexp"]


def lstsq_fluct(frame: pd.DataFrame) -> tuple[float, float]:
    """(g, b) of an ordinary least-squares regression of each (draw, point)'s log fluctuation on
    log D and log LM with one intercept per draw, the fluctuation computed here from the Gram
    matrix (mean diagonal less the mean of the distinct pairs): no code of the fit is used."""
    y, X = [], []
    draws = sorted(frame["problem_seed"].unique())
    for row in frame.itertuples():
        gram = np.asarray(row.gram)
        R = len(gram)
        pairs = (gram.sum() - np.trace(gram)) / (R * (R - 1))
        y.append(0.5 * math.log(np.trace(gram) / R - pairs))
        X.append([math.log(row.D), math.log(row.L * row.M)] + [float(row.problem_seed == d) for d in draws])
    coef, *_ = np.linalg.lstsq(np.array(X), np.array(y), rcond=None)
    return float(coef[0]), float(-coef[1])


@pytest.fixture(scope="module")
def dexp_fit():
    frame = planted_grams(DEXP, np.random.default_rng(3))
    return frame, fit_decomposed(frame, n_boot=100, seed=1)


def test_a_d_sweep_fits_g_and_h_and_recovers_the_planted_exponents(dexp_fit):
    _, result = dexp_fit
    assert result.expression.text == "sqrt((c1*D**h*L**(-a))**2 + (c2*D**g*(L*M)**(-b))**2)"
    assert set(result.parameters) == {"c1", "a", "c2", "b", "g", "h"}
    for name, truth in DEXP.truth.items():
        assert result.ci_low[name] <= truth <= result.ci_high[name], (name, result.estimate[name])
    assert (result.ci_high["g"] - result.ci_low["g"]) / 2 <= 0.15
    assert set(result.table()["parameter"]) >= {"g", "h"}
    assert set(result.rows()["parameter"]) == {"c1", "a", "c2", "b", "g", "h"}


def test_the_fluctuation_term_agrees_with_an_independent_regression(dexp_fit):
    frame, result = dexp_fit
    g, b = lstsq_fluct(frame)
    # the fit weights each row by its term's standard error and corrects the log's bias; the
    # plain regression does neither: they agree to well within the fit's own interval
    assert abs(result.estimate["g"] - g) < 0.01 and abs(result.estimate["b"] - b) < 0.01, (g, b, result.estimate)
    custom = fit_term(frame.assign(metric="fluct_out"), "c2*D**g*(L*M)**-b", n_boot=40, seed=1)
    assert abs(custom.estimate["g"] - g) < 0.01 and abs(custom.estimate["b"] - b) < 0.01


def test_the_tie_is_rejected_when_g_differs_from_b_and_the_tied_law_is_still_printed(dexp_fit):
    _, result = dexp_fit
    tie = result.tie
    assert tie.verdict == "tie rejected" and tie.ci_high < 0
    assert tie.difference == pytest.approx(result.estimate["g"] - result.estimate["b"], abs=1e-9)
    text = format_table(result)
    assert "g - b = " in text and "tie rejected" in text and "decomposed_tied (the tied law, g = b)" in text
    tied_b = tie.tied_estimates["b"][0]
    assert 0.3 < tied_b < 0.48  # a blend of g = 0.15 and b = 0.5
    assert any("tie g = b is rejected" in w for w in result.warnings)


def test_the_tie_holds_where_the_planted_law_ties_g_to_b():
    tied = dataclasses.replace(DEXP, name="tied", g=None)
    result = fit_decomposed(planted_grams(tied, np.random.default_rng(4)), n_boot=100, seed=1)
    assert result.tie.verdict == "tie holds", result.tie.lines()
    assert not any("rejected" in w for w in result.warnings)


def test_the_tie_verdict_needs_an_informative_interval():
    assert tie_verdict(-0.05, 0.05) == "tie holds"
    assert tie_verdict(-0.3, -0.1) == "tie rejected"
    assert tie_verdict(-TIE_HALF_WIDTH - 0.1, TIE_HALF_WIDTH + 0.1) == "tie not tested"
    assert tie_verdict(math.nan, math.nan) == "tie not tested"


def test_a_single_d_slice_is_fitted_exactly_as_before():
    frame = planted_grams(REGIMES["rates"], np.random.default_rng(5))
    result = fit_decomposed(frame, n_boot=50, seed=2)
    assert result.parameters == ("c1", "c2", "a", "b") and result.tie is None
    fit4 = estimate(draws_of(frame), n_boot=50, seed=2)
    assert result.estimate["b"] == fit4.theta[3] and result.estimate["a"] == fit4.theta[1]
    assert "g - b" not in format_table(result)


def test_h_is_not_fitted_where_no_depth_holds_two_widths():
    frame = planted_grams(DEXP, np.random.default_rng(6))
    diagonal = frame[np.log2(frame["M"]) - 4 == 2 * (np.log2(frame["D"]) - 2)]  # M 16 at D 4, 64 at 8, 256 at 16
    result = fit_decomposed(diagonal.reset_index(drop=True), n_boot=30, seed=1)
    assert "h" in result.unidentified and "two values of D" in result.unidentified["h"]
    assert math.isnan(result.estimate["h"]) and np.isfinite(result.estimate["g"])
    assert "h" not in result.law.parameters


class BentRegime(Regime):
    """The fluctuation's D dependence bends: D^0.3 up to D = 8, flat beyond."""

    def fluct(self, L, M, D):
        return self.c2 * min(D, 8) ** 0.3 * (L * M) ** (-self.b)


def test_local_slopes_in_d_that_disagree_say_g_is_an_average():
    bent = BentRegime(**{f.name: getattr(DEXP, f.name) for f in dataclasses.fields(Regime)})
    result = fit_decomposed(planted_grams(bent, np.random.default_rng(7)), n_boot=30, seed=1)
    message = next(w for w in result.warnings if "is an average over D" in w)
    assert "(D = 4..8)" in message and "(D = 16..32)" in message
    draws = draws_of(planted_grams(bent, np.random.default_rng(7)))
    slopes = local_d_slopes(draws, estimate(draws, n_boot=0))
    assert slopes[0][2] == pytest.approx(0.3, abs=0.05) and slopes[-1][2] == pytest.approx(0.0, abs=0.05)


def test_a_straight_law_rarely_warns_of_bending():
    fired = sum(any("is an average over D" in w for w in
                    fit_decomposed(planted_grams(DEXP, np.random.default_rng(s)), n_boot=0).warnings)
                for s in range(6))
    assert fired <= 1  # a test at p < 0.01: one false alarm in six is already unlikely (p ~ 0.06)


def test_free_rss_gets_an_exponent_per_varied_axis_and_tests_the_tie():
    grid = as_grid(planted_grams(DEXP, np.random.default_rng(8)))
    result = fit(grid, "free_rss", n_boot=60, seed=1)
    assert {"g", "h"} <= set(result.parameters)
    assert result.ci_low["g"] <= 0.15 <= result.ci_high["g"] and result.tie.verdict == "tie rejected"
    assert "free_rss_tied" in format_table(result)
    single = fit(as_grid(planted_grams(REGIMES["rates"], np.random.default_rng(8))), "free_rss", n_boot=20)
    assert single.parameters == ("c1", "c2", "a", "b") and single.tie is None
    user = fit(grid, "sqrt((c1*L**(-a))**2 + (c2*(D/(L*M))**b)**2)", n_boot=20)  # tied by the user's own text
    assert "g" not in user.parameters and user.tie is None


def test_a_term_metric_is_fitted_with_the_decomposed_fits_weights_and_resamples(dexp_fit):
    frame, result = dexp_fit
    custom = fit_term(frame.assign(metric="fluct_out"), "c2*D**g*(L*M)**(-b)", n_boot=100, seed=1)
    # the same rows, weights and resamples as the decomposed fit's fluctuation term: one intercept
    # for every draw instead of one per draw changes nothing on a grid where every draw has every point
    for name in ("c2", "b", "g"):
        assert custom.estimate[name] == pytest.approx(result.estimate[name], rel=1e-3), name
        assert custom.ci_high[name] - custom.ci_low[name] == pytest.approx(
            result.ci_high[name] - result.ci_low[name], rel=0.35), name
    assert custom.metric == "fluct_out" and set(custom.rows()["metric"]) == {"fluct_out"}
    bias = fit_term(frame.assign(metric="bias_out"), "c1*L**(-a)", n_boot=40, seed=1)
    assert bias.ci_low["a"] <= DEXP.a <= bias.ci_high["a"]
    assert bias.n_points == int(sum(u.sum() for u in result.grid.groupby("problem_seed")["bias_used"].apply(np.array)))


def test_the_users_laws_of_both_terms_are_fitted_together(dexp_fit):
    frame, _ = dexp_fit
    both = fit_terms(frame, bias="c1*L**(-a)", fluct="c2*D**g*(L*M)**(-b)", n_boot=40, seed=1)
    assert both.expression.text == "sqrt((c1*L**(-a))**2 + (c2*D**g*(L*M)**(-b))**2)"
    for name in ("a", "b", "g"):
        truth = {"a": DEXP.a, "b": DEXP.b, "g": DEXP.g}[name]
        assert both.ci_low[name] <= truth <= both.ci_high[name], name
    assert both.samples.shape[1] == len(both.parameters)
    with pytest.raises(Exception, match="share b"):
        fit_terms(frame, bias="c1*L**(-b)", fluct="c2*(L*M)**(-b)", n_boot=0)


def test_the_term_metrics_come_from_the_registry():
    assert set(TERM_METRICS) == {"bias_out", "fluct_out", "bias_hidden", "fluct_hidden"}
    help_text = CliRunner().invoke(main, ["fit", "--help"]).output
    for name in TERM_METRICS:
        assert name in help_text


class DexpLaw(TermsLaw):
    """TermsLaw with the fluctuation's D exponent apart from its L*M one."""

    def __init__(self, g=0.15, **kwargs):
        super().__init__(**kwargs)
        self.g = g

    def terms(self, L, M, D):
        return self.c1 * L ** -self.a, self.c2 * D**self.g * (L * M) ** -self.b


@pytest.fixture(scope="module")
def dexp_store(tmp_path_factory):
    grid = {"L": [4, 16, 64], "M": [16, 64], "D": [4, 8, 16, 32], "problem_seeds": [1, 2, 3], "seeds": 4}
    spec = adaptive_spec(name="dexp", grid=grid, form="decomposed")
    st = Store(tmp_path_factory.mktemp("dexp") / "s")
    PlantedRunner(st, DexpLaw(), entries=60, term_effects=True)(spec, frozenset(t.trial_key for t in plan(spec).trials))
    return st


def test_explorer_fit_reports_g_and_the_tie_and_fits_a_term_metric(dexp_store):
    done = CliRunner().invoke(main, ["fit", "--sweep", "dexp", "--store", dexp_store.uri, "--bootstrap", "40"])
    assert done.exit_code == 0, done.output
    assert "\ng " in done.output and "g - b = " in done.output and "decomposed_tied" in done.output
    term = CliRunner().invoke(main, ["fit", "--sweep", "dexp", "--store", dexp_store.uri, "--metric", "fluct_out",
                                     "--form", "c2*D**g*(L*M)**-b", "--bootstrap", "40"])
    assert term.exit_code == 0, term.output
    assert "fluct_out: the fluct term of err_out" in term.output
    con = dexp_store.connect(sweep="dexp", read_only=True)
    try:
        stored = con.execute("SELECT DISTINCT metric, parameter FROM fits WHERE metric = 'fluct_out'").fetchall()
    finally:
        con.close()
    assert {p for _, p in stored} == {"c2", "b", "g"}
    pair = CliRunner().invoke(main, ["fit", "--sweep", "dexp", "--store", dexp_store.uri, "--no-save", "--bootstrap",
                                     "20", "--bias", "c1*L**(-a)", "--fluct", "c2*D**g*(L*M)**(-b)"])
    assert pair.exit_code == 0 and "user laws on each term" in pair.output, pair.output


@pytest.mark.parametrize("args, message", [
    (["--form", "free_rss", "--bias", "c1*L**-a"], "use them with --form decomposed"),
    (["--metric", "fluct_out", "--bias", "c1*L**-a"], "is one term"),
    (["--metric", "fluct_out", "--form", "decomposed"], "fits both terms itself"),
    (["--metric", "fluct_nothing"], "unknown metric"),
])
def test_bad_term_requests_are_one_line(dexp_store, args, message):
    done = CliRunner().invoke(main, ["fit", "--sweep", "dexp", "--store", dexp_store.uri, "--no-save", *args])
    assert done.exit_code != 0 and done.output.count("\n") == 1 and message in done.output, done.output


@pytest.mark.slow  # 100 planted D sweeps, two fits each: 2 - 8 min on a shared 2-core machine
def test_the_d_exponents_intervals_cover_at_their_nominal_rate():
    from scipy import stats

    reps = 100
    hits = {(law, name): 0 for law in ("decomposed", "terms") for name in ("a", "b", "g")}
    for rep in range(reps):
        frame = planted_grams(DEXP, np.random.default_rng(7000 + rep))
        results = {"decomposed": fit_decomposed(frame, n_boot=100, seed=rep, per_draw=False, range_check=False),
                   "terms": fit_terms(frame, bias="c1*L**(-a)", fluct="c2*D**g*(L*M)**(-b)", n_boot=100, seed=rep,
                                      per_draw=False, range_check=False)}
        for (law, name) in hits:
            result = results[law]
            hits[(law, name)] += result.ci_low[name] <= DEXP.truth[name] <= result.ci_high[name]
    # With 100 repetitions a 95% interval covers between 88 and 99 times in 99.8% of runs (binomial).
    low, high = stats.binom.interval(0.998, reps, 0.95)
    assert all(low <= h <= high for h in hits.values()), hits
