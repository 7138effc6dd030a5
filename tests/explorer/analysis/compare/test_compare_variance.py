"""The variance behind the paired and unpaired intervals (``pairing.draws_jackknife``,
``pairing.total_variance``), checked against an independent computation (each draw fitted
alone) and, statistically, for coverage on planted pairs."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from explorer.analysis.decomposed import REGIMES, Regime, draws_of, planted_pair_partly_shared
from explorer.analysis.compare import pair_frames, paired_fit
from explorer.analysis.compare.pairing import draws_jackknife, joint_design, paired_solve, total_variance

from tests.explorer.compare_data import planted_pair

NAN4 = np.full(4, np.nan)


def replicates(spread: float, n: int = 400, seed: int = 0) -> np.ndarray:
    """n replicates of 4 parameters with the given standard deviation, exactly (standardised)."""
    x = np.random.default_rng(seed).standard_normal((n, 4))
    return (x - x.mean(axis=0)) / x.std(axis=0, ddof=1) * spread


def test_the_draws_jackknife_is_used_and_the_bootstrap_only_where_it_is_not_measured():
    G = 2
    inner, within = replicates(1.0), np.full(4, 1.0)
    jackknife = np.array([0.3, np.nan, 0.3, np.nan])
    # the bootstrap's draws' spread G/(G-1) (V_outer - V_inner): 2 (4 - 1) = 6 above the seeds' part 1
    assert np.allclose(total_variance(jackknife, replicates(2.0, seed=1), inner, within, G), [0.3, 6, 0.3, 6])
    # 2 (1.21 - 1) = 0.42 or negative: below the seeds' part, which the whole cannot be
    assert np.allclose(total_variance(NAN4, replicates(1.1, seed=1), inner, within, G), 1.0)
    assert np.allclose(total_variance(NAN4, replicates(0.5, seed=1), inner, within, G), 1.0)
    # no seeds' jackknife (two seeds): the bootstrap alone; one draw: the seeds' jackknife alone
    assert np.allclose(total_variance(NAN4, replicates(2.0, seed=1), inner, NAN4, G), 6.0)
    assert np.allclose(total_variance(NAN4, inner, inner, within, 1), 1.0)


def fitted_draws(frames):
    paired = pair_frames(*frames)
    da, db = draws_of(paired.a), draws_of(paired.b)
    ea, eb = joint_design(da, db, "quadrature")
    return da, db, ea, eb


@pytest.mark.parametrize("make", [lambda: planted_pair(REGIMES["rates"], np.random.default_rng(11)),
                                  lambda: planted_pair_partly_shared(REGIMES["rates"], np.random.default_rng(12),
                                                                     shared=0.5, effect_sd=0.1)])
def test_the_draws_jackknife_of_b_is_the_spread_of_each_draw_fitted_alone(make):
    """The fluctuation's slope has the same rows and weights in every draw, so the pooled b of
    A, of B and their difference are means over draws of each draw fitted alone, and the
    jackknife over draws is exactly their variance over draws / G (the naive computation)."""
    da, db, ea, eb = fitted_draws(make())
    G = len(da)
    pooled = paired_solve(da, db, ea, eb, list(range(G)), [None] * G)
    alone = [paired_solve(da, db, ea, eb, [g], [None]) for g in range(G)]
    jackknife = draws_jackknife(da, db, ea, eb)
    for k, value in enumerate((lambda x: x[0], lambda x: x[1], lambda x: x[1] - x[0])):
        per_draw = np.array([value(x)[3] for x in alone])
        assert value(pooled)[3] == pytest.approx(per_draw.mean())
        assert jackknife[k][3] == pytest.approx(per_draw.var(ddof=1) / G)


@pytest.mark.slow
def test_the_paired_intervals_cover_the_planted_differences():
    """100 planted pairs (4 draws x 4 seeds; B's c1 1.2 x A's; half of the seeds' noise shared;
    B's fluctuation level moved per draw by exp(0.1 N(0, 1))): each paired 95 % interval holds
    the planted difference (c1 ratio 1.2, no change in a, c2, b) in at least 88 of 100 (a true
    rate of 95 % falls below 88 with probability about 0.005); measured 97, 97, 95, 92 of 100 (13 s)."""
    truth = np.array([1.2, 0.0, 1.0, 0.0])
    regime = Regime("four draws", c1=0.065, c2=0.205)
    covered = np.zeros(4)
    for repetition in range(100):
        a, b = planted_pair_partly_shared(regime, np.random.default_rng([31, repetition]), shared=0.5,
                                          effect_sd=0.1)
        rows = paired_fit(pair_frames(a, b), n_boot=20, seed=repetition).rows()
        covered += (rows["ci_low"] <= truth) & (truth <= rows["ci_high"])
    assert stats.binom.cdf(87, 100, 0.95) < 0.01
    assert np.all(covered >= 88), covered
