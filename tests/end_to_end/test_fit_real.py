"""The science check of docs/model.md section 6 on a real (small) sweep: trials.train_trial on a grid of
depths and widths against a Mean ODE reference, then the fits of explorer.analysis.fitting."""
import functools

import pytest

from explorer.analysis.fitting import fit
from explorer.analysis.data import grid_errors
from trials import TrialConfig

from tests.explorer.analysis_data import connect, grid_configs, run_trials

pytestmark = pytest.mark.slow


@functools.lru_cache(maxsize=1)
def depth_width_sweep():
    """L in 4..32 and M in 4..2048 at D = 8, K = 10, 4 seeds, antithetic units, against a
    512 x 256 reference (two replicas). Large L*M makes the 1/L term visible next to the
    sampling term; L >= 4 keeps higher-order Euler terms small (from L = 2 the apparent exponent
    of L is 1.2 to 1.7). About 15 s on 2 idle cores, 25 s on busy ones."""
    base = TrialConfig(L=4, M=4, D=8, steps=10, seeds=(0, 1, 2, 3), device="cpu", antithetic=True)
    configs = grid_configs(base, L=(4, 8, 16, 32), M=(4, 32, 256, 2048))
    return run_trials(configs, sweep="real", ref_depth=512, ref_width=256)


@pytest.fixture(scope="module")
def grid():
    return grid_errors(connect(depth_width_sweep()), "real")


def test_theory_law_explains_a_real_grid(grid):
    result = fit(grid, "theory")
    assert result.r2_log >= 0.9
    assert result.n_points >= 14
    assert result.extrapolation_error < 0.25


def test_free_exponents_of_a_real_grid_are_near_the_theory(grid):
    result = fit(grid, "free")
    a, b = result.estimate["a"], result.estimate["b"]
    # Measured (trials numerics version 2), problem seed 1: a = 0.77 [0.66, 0.98], b = 0.70
    # [0.51, 0.84], R^2 0.98; problem seeds 2, 3, 4: a = 0.85, 1.25, 0.93 and b = 0.56, 0.55, 0.52.
    # The bootstrap resamples seeds, not the problem (data, embeddings), whose draw moves the
    # exponents more than the seed noise does: the bands below are those of the problem draws,
    # and the CIs are not asserted to cover the theory on one problem.
    assert 0.6 <= a <= 1.5 and 0.4 <= b <= 0.8
    assert result.ci_low["a"] < a < result.ci_high["a"] and result.ci_low["b"] < b < result.ci_high["b"]
    assert result.r2_log >= 0.9
    # the free exponents are far from the output form's b = 1 and from no depth term at all
    assert result.ci_high["b"] < 1.0 and result.ci_low["a"] > 0.3
