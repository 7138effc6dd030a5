"""Planted surfaces: runs of a metric whose minimum along a log axis is known, drifting across
depth as L^gamma, with the noise of seeds and the effects of problem draws (numpy only; the
transfer benchmark and tests).

The log metric of draw g, seed s, depth L at axis value x is

    level_g + curvature (log x - log x*(L) - shift_g - shift_gL)^2 + seed_gsL + noise_gsLx,

with log x*(L) = log ``center`` + gamma log(L / ``pivot``): a bowl quadratic in the log axis, so
the located minimum of the geometric mean over runs is unbiased. The draw's shift_g moves every
depth's optimum alike (it leaves gamma alone), shift_gL each depth's own way (it moves gamma and
is what the draws' resampling measures). Runs past ``diverge_at`` times the optimum diverge (+inf).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .resample import Runs

LR_GRID = 2.0 ** np.arange(-3, 6)  # 0.125 .. 32, the grid of the worked study


def planted_runs(gamma: float, *, Ls=(4, 16, 64), grid=LR_GRID, n_draws: int = 2, n_seeds: int = 4,
                 center: float = 2 ** 0.3, pivot: float = 16.0, curvature: float = 0.4, seed_noise: float = 0.04,
                 seed_level: float = 0.1, draw_level: float = 0.3, draw_shift: float = 0.15,
                 draw_depth_shift: float = 0.05, diverge_at: float = 8.0, rng=None) -> tuple[Runs, np.ndarray]:
    """Runs of a planted surface along ``lr`` (slices: ``L``), and the true log x*(L) per slice.

    Returns:
        (runs, truth): ``runs.values`` is (len(Ls), n_draws, n_seeds, len(grid)) of the metric.
    """
    rng = rng if rng is not None else np.random.default_rng()
    grid = np.asarray(grid, float)
    logL = np.log(np.asarray(Ls, float))
    truth = np.log(center) + gamma * (logL - np.log(pivot))
    level = rng.normal(0.0, draw_level, n_draws)[None, :, None, None]
    shift = (rng.normal(0.0, draw_shift, n_draws)[None, :] + rng.normal(0.0, draw_depth_shift, (len(Ls), n_draws)))
    seed_part = rng.normal(0.0, seed_level, (len(Ls), n_draws, n_seeds))[..., None]
    noise = rng.normal(0.0, seed_noise, (len(Ls), n_draws, n_seeds, len(grid)))
    u = np.log(grid)[None, None, None, :] - (truth[:, None] + shift)[:, :, None, None]
    log_metric = level + curvature * u**2 + seed_part + noise
    values = np.exp(log_metric)
    diverged = np.log(grid)[None, None, None, :] > (truth[:, None, None, None] + np.log(diverge_at))
    values = np.where(diverged, np.inf, values)
    slices = pd.DataFrame({"L": np.asarray(Ls, dtype=np.int64)})
    return Runs("lr", "loss", None, grid, slices, values, tuple(range(n_draws))), truth


__all__ = ["LR_GRID", "planted_runs"]
