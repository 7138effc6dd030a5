"""The variance behind the paired and unpaired intervals (``pairing.total_variance``) and the
paired bootstrap checked against an independent computation: each draw fitted alone."""
from __future__ import annotations

import numpy as np

from explorer.analysis.decomposed import draws_of
from explorer.analysis.pairing import joint_design, pair_frames, paired_solve, total_variance
from explorer.analysis.planted import REGIMES, Regime

from .compare_data import planted_pair


def replicates(spread: float, n: int = 400, seed: int = 0) -> np.ndarray:
    """n replicates of 4 parameters with the given standard deviation, exactly (standardised)."""
    x = np.random.default_rng(seed).standard_normal((n, 4))
    return (x - x.mean(axis=0)) / x.std(axis=0, ddof=1) * spread


def test_the_variance_is_the_draws_spread_or_the_seeds_part_whichever_is_larger():
    G = 2
    inner = replicates(1.0)
    within = np.full(4, 1.0)
    # the draws' spread G/(G-1) (V_outer - V_inner): 2 (4 - 1) = 6 above the seeds' part 1
    assert np.allclose(total_variance(replicates(2.0, seed=1), inner, within, G), 6.0)
    # 2 (1.21 - 1) = 0.42: positive but below the seeds' part, which the whole cannot be
    assert np.allclose(total_variance(replicates(1.1, seed=1), inner, within, G), 1.0)
    # negative: the seeds' part
    assert np.allclose(total_variance(replicates(0.5, seed=1), inner, within, G), 1.0)
    # no jackknife (two seeds): the draws' spread alone; one draw: the jackknife alone
    assert np.allclose(total_variance(replicates(2.0, seed=1), inner, np.full(4, np.nan), G), 6.0)
    assert np.allclose(total_variance(inner, inner, within, 1), 1.0)


def unshared_pair(rng, rho: float):
    """A planted pair (c1 x 1.2) whose seeds' noise is only partly shared: B's Gram matrices are
    a weighted mean of the shared ones and a fresh draw's, the way two learning rates can move
    one seed's network apart."""
    regime = Regime("two draws", c1=0.065, c2=0.205, draws=2, seeds=4)
    a, b = planted_pair(regime, rng)
    _, fresh = planted_pair(regime, rng)
    mixed = []
    for g_b, g_new in zip(b["gram"], fresh["gram"]):
        mixed.append(rho * g_b + (1 - rho) * g_new)  # still a Gram matrix: a positive mixture
    b = b.copy()
    b["gram"] = mixed
    return a, b


def test_the_pooled_fit_is_the_mean_of_each_draw_fitted_alone_and_so_is_its_difference():
    """The fluctuation term has one slope over draws with the same rows and weights in each:
    the pooled b of A, of B and their difference are the means of the draws' own fits, each
    from ``paired_solve`` on one draw, so the draws' spread of the difference is theirs."""
    for frames in (planted_pair(REGIMES["rates"], np.random.default_rng(11)),
                   unshared_pair(np.random.default_rng(12), rho=0.5)):
        paired = pair_frames(*frames)
        da, db = draws_of(paired.a), draws_of(paired.b)
        ea, eb = joint_design(da, db, "quadrature")
        G = len(da)
        pooled = paired_solve(da, db, ea, eb, list(range(G)), [None] * G)
        alone = [paired_solve(da, db, ea, eb, [g], [None]) for g in range(G)]
        for side in (0, 1):
            assert np.isclose(pooled[side][3], np.mean([x[side][3] for x in alone]))
        assert np.isclose(pooled[1][3] - pooled[0][3], np.mean([x[1][3] - x[0][3] for x in alone]))
