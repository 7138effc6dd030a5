"""explorer.analysis.fitting.fit_pooled: the law of the mean error over every run, with a bootstrap over draws."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from explorer.errors import FitError
from explorer.analysis.fitting import fit, fit_pooled, pooled_mean

L, M, D = [53, 123, 285], [17, 40, 93, 216], [17, 40, 93, 216]


def scattered_draws(n_draws: int, a: float = 0.673, b: float = 0.437, spread: float = 0.3, seed: int = 0):
    """Each draw's errors are the law times the draw's own factor f = exp(spread N(0,1)) (the draws
    scatter as the embedding draws do), two seeds a little off it. The mean over the draws is then
    the law with constants a mean(f)^2 and b mean(f)^2, known from the realized factors."""
    rng = np.random.default_rng(seed)
    rows, factors = [], []
    for draw in range(1, n_draws + 1):
        factor = math.exp(spread * rng.standard_normal())
        factors.append(factor)
        for l in L:
            for m in M:
                for d in D:
                    seeds = factor * math.sqrt(a * d / (l * m) + b / d) * (1 + 0.01 * np.array([-1.0, 1.0]))
                    rows.append({"problem_seed": draw, "L": l, "M": m, "D": d, "err": float(np.sqrt(np.mean(seeds**2))),
                                 "ref_err": 0.0, "seed_errs": seeds, "sweep": "s", "metric": "m", "step": 5})
    return pd.DataFrame(rows), np.mean(factors) ** 2


def test_the_pooled_errors_are_the_mean_of_every_run():
    grid, _ = scattered_draws(3)
    pooled = pooled_mean(grid)
    assert len(pooled) == len(L) * len(M) * len(D)
    one = grid[(grid["L"] == 53) & (grid["M"] == 17) & (grid["D"] == 40)]
    assert pooled.set_index(["L", "M", "D"]).loc[(53, 17, 40), "err"] == pytest.approx(np.concatenate(list(one["seed_errs"])).mean())


def test_the_fit_is_the_laws_on_the_means_and_its_interval_comes_from_the_draws():
    grid, scale = scattered_draws(12, seed=3)
    result = fit_pooled(grid, "companion_hidden", n_boot=30)
    naive = grid.assign(s=grid["seed_errs"].apply(np.sum), n=2).groupby(["L", "M", "D"], as_index=False)[["s", "n"]].sum()
    naive = naive.assign(err=naive["s"] / naive["n"], ref_err=0.0, sweep="s", metric="m", step=5)
    direct = fit(naive, "companion_hidden", n_boot=0)
    for p in ("a", "b"):
        assert result.estimate[p] == pytest.approx(direct.estimate[p])
        assert result.ci_low[p] < result.estimate[p] < result.ci_high[p]
    # the draws scatter, their means follow the law exactly: the fit recovers its constants
    assert result.r2_log > 0.99 and result.n_draws == 12 and result.bootstrap.startswith("draws")
    for p, truth in (("a", 0.673 * scale), ("b", 0.437 * scale)):
        assert result.estimate[p] == pytest.approx(truth, rel=1e-3)
        assert result.ci_low[p] <= truth <= result.ci_high[p]
        assert result.ci_high[p] / result.ci_low[p] > 1.2  # the draws' spread, not the seeds'
    # a fit to every draw's rows counts the draws' spread against the law
    assert fit(grid, "companion_hidden", n_boot=0).r2_log < result.r2_log - 0.1


def test_fewer_than_three_draws_is_refused_in_one_line():
    grid, _ = scattered_draws(2)
    with pytest.raises(FitError, match="2 problem draw"):
        fit_pooled(grid, "companion_hidden", n_boot=10)


def test_the_authors_residuals_give_their_curve_fit_on_the_means():
    """Under a law that is not exact (the means carry a 1/L term the law lacks), the squares of
    err - law and the log residuals give different constants; residuals="err" is scipy's curve_fit
    on the pooled means, as the authors fit them."""
    from scipy.optimize import curve_fit

    grid, _ = scattered_draws(6, seed=5)
    grid = grid.assign(seed_errs=[e * (1 + 3.0 / row.L) for e, row in zip(grid["seed_errs"], grid.itertuples())])
    means = pooled_mean(grid)
    l, m, d, y = (means[c].to_numpy(float) for c in ("L", "M", "D", "err"))
    (a, b, c), _ = curve_fit(lambda _, a, b, c: np.sqrt(a * d / (l * m) + b / d + c / l**2), None, y,
                             p0=[0.85, 2.4, 0.001], bounds=(0, np.inf))
    authors = fit_pooled(grid, "companion_hidden", n_boot=30, residuals="err")
    tool = fit_pooled(grid, "companion_hidden", n_boot=30)
    for name, theirs in (("a", a), ("b", b)):
        assert authors.estimate[name] == pytest.approx(theirs, rel=1e-4)
        assert authors.ci_low[name] < authors.estimate[name] < authors.ci_high[name]
    assert abs(tool.estimate["a"] / authors.estimate["a"] - 1) > 0.01  # the losses differ here
    assert "least squares on err" in authors.notes[-1] and "log-residual fit" in authors.notes[-1]
    with pytest.raises(FitError, match="residuals"):
        fit_pooled(grid, "companion_hidden", n_boot=5, residuals="linear")
