"""The coverage of explorer transfer's 95% intervals on gamma over 400 planted sweeps per gamma
(benchmarks/transfer_coverage.py, 4 draws x 4 seeds): the binomial 95% band of the observed
coverage must reach into the target 0.92-0.975 (slow: about a minute per gamma on 2 cores)."""
from __future__ import annotations

import pytest
from scipy import stats

from benchmarks.transfer_coverage import coverage

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("gamma", [-1.0, 0.0, 0.5])
def test_transfer_intervals_cover_the_planted_gamma_at_their_nominal_rate(gamma):
    result = coverage(gamma, reps=400, draws=4, seeds=4, n_boot=200, seed=0)
    assert result["n"] >= 390  # a planted optimum inside the grid is almost always fitted
    held = round(result["coverage"] * result["n"])
    band = stats.binomtest(held, result["n"]).proportion_ci(0.95)
    assert band.high >= 0.92 and band.low <= 0.975, (result, band)
    assert abs(result["mean"] - gamma) < 0.02  # unbiased: the bowl is quadratic in log lr
