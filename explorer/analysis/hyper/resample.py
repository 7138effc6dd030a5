"""The seed-and-draw bootstrap of the minima along an axis, as the fits resample
(``explorer.analysis.fitting``: problem draws with replacement, then seed indices within each
chosen draw), and the 95% interval it gives.

The runs of a sweep share their randomness: a problem draw is the same data and embeddings at
every grid value and slice, and a seed index the same unit streams. So one resample picks draws
and seed indices once and applies them to every slice and grid value: the minima of two slices
(two depths, two presets) move together, and a law across slices or a difference between presets
gets the pairing for free.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..fitting import Z95, spread
from .minimum import levels, locate, log_scale_for


@dataclass
class Runs:
    """The runs of a sweep along one axis, slice by slice.

    ``values`` is (slices, draws, seeds, grid): the metric of each run at the step read, +inf for a
    run that diverged before or at it, NaN where there is no run (a seed index a draw lacks, a grid
    value a slice lacks, a failed trial). ``slices`` holds one row per slice: the values of the
    columns that define it (its grid axes other than ``axis``).
    """

    axis: str
    metric: str
    step: int | None
    grid: np.ndarray
    slices: pd.DataFrame
    values: np.ndarray
    draws: tuple = ()
    notes: list = field(default_factory=list)

    @property
    def log_grid(self) -> np.ndarray:
        return np.log(self.grid)

    @property
    def n_draws(self) -> int:
        return self.values.shape[1]

    def seeds_per_draw(self) -> np.ndarray:
        """How many seed indices each draw holds (anywhere in the sweep)."""
        return (~np.isnan(self.values)).any(axis=(0, 3)).sum(axis=1)

    def observed(self) -> tuple[np.ndarray, np.ndarray]:
        """(location, where) of each slice's minimum on all its runs (``locate``)."""
        flat = self.values.reshape(self.values.shape[0], -1, self.values.shape[-1])
        return locate(levels(flat, log_scale_for(self.values)), self.log_grid)


def resampled_runs(runs: Runs, n_boot: int, rng, resample_draws: bool) -> tuple[np.ndarray, np.ndarray]:
    """Draw and seed indices of ``n_boot`` resamples, each (n_boot, draws x seeds).

    Draws with replacement (``resample_draws``; else each draw once, as observed), then the seed
    indices of each chosen draw with replacement among those it holds; a draw with fewer seeds
    than the most pads its picks with an index past the last seed (no run: NaN).
    """
    present = (~np.isnan(runs.values)).any(axis=(0, 3))  # (draws, seeds)
    n_draws, width = present.shape
    table = np.full((n_draws, width), width)
    for g in range(n_draws):
        held = np.flatnonzero(present[g])
        table[g, : len(held)] = held
    counts = present.sum(axis=1)
    if resample_draws and n_draws > 1:
        chosen = rng.integers(0, n_draws, (n_boot, n_draws))
    else:
        chosen = np.tile(np.arange(n_draws), (n_boot, 1))
    own = counts[chosen][..., None]
    pick = (rng.random((n_boot, n_draws, width)) * np.maximum(own, 1)).astype(int)
    seeds = np.where(np.arange(width) < own, table[chosen[..., None], pick], width)
    draws = np.broadcast_to(chosen[..., None], seeds.shape)
    return draws.reshape(n_boot, -1), seeds.reshape(n_boot, -1)


def replicate_minima(runs: Runs, n_boot: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The located minima (log axis; an edge at the edge's value) of each slice on ``n_boot``
    resamples: (outer, inner), each (slices, n_boot); outer resamples draws then seeds, inner
    seeds within the draws as observed (the part of the spread the seeds make twice)."""
    rng = np.random.default_rng(seed)
    padded = np.concatenate([runs.values, np.full(runs.values.shape[:2] + (1,) + runs.values.shape[3:], np.nan)],
                            axis=2)
    log_scale = log_scale_for(runs.values)
    out = []
    for resample_draws in (True, False):
        draws, seeds = resampled_runs(runs, n_boot, rng, resample_draws)
        picked = padded[:, draws, seeds, :]  # (slices, n_boot, runs, grid)
        location, _ = locate(levels(picked, log_scale), runs.log_grid)
        out.append(location)
    return out[0], out[1]


def interval(estimate: np.ndarray, outer: np.ndarray, inner: np.ndarray, n_draws: int,
             n_seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """The 95% interval of each column's estimate from its replicates (the fits' rule,
    ``explorer.analysis.fitting``): with G > 1 draws estimate +- t(G-1) x the draws' part of the
    spread; with one draw estimate +- 1.96 sd of the seed resamples, widened by sqrt(n / (n - 1))
    (resampling n seeds spreads their mean by only (n - 1)/n of its variance). Columns of
    ``outer``/``inner``: one per estimate; a replicate with NaN is left out of its column.

    Returns:
        (low, high), NaN where fewer than 2 replicates are finite.
    """
    estimate = np.atleast_1d(np.asarray(estimate, float))
    low, high = np.full(estimate.shape, np.nan), np.full(estimate.shape, np.nan)
    for j in range(estimate.size):
        a, b = outer[:, j], inner[:, j]
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        if len(a) < 2 or not np.isfinite(estimate[j]):
            continue
        if n_draws > 1:
            sd, q = spread(a[:, None], b[:, None] if len(b) >= 2 else None, n_draws)
            sd = float(sd[0])
        else:
            sd, q = float(a.std(ddof=1)) * np.sqrt(n_seeds / max(n_seeds - 1, 1)), Z95
        low[j], high[j] = estimate[j] - q * sd, estimate[j] + q * sd
    return low, high


__all__ = ["Runs", "interval", "replicate_minima", "resampled_runs"]
