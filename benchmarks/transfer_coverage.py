"""Coverage of ``explorer transfer``'s 95% intervals on gamma, on planted surfaces
(``explorer.analysis.hyper.planted_runs``: a log-quadratic bowl in lr whose optimum drifts as
L^gamma, with seed noise, per-draw levels and per-draw shifts of the optimum, common to every
depth and each depth's own), at L = 4, 16, 64 over lr = 2^-3 .. 2^5 (docs/hyperparameters.md,
"Coverage").

    python benchmarks/transfer_coverage.py --reps 400 --draws 4 --seeds 4
    python benchmarks/transfer_coverage.py --reps 400 --draws 2 --seeds 4   # the real study's design

Prints, per gamma, the fraction of repetitions whose interval holds the planted gamma with its
binomial 95% band, the median width and the mean estimate; repetitions where some slice's optimum
sits at a grid edge (not fitted) are counted apart.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from explorer.analysis.hyper import optima, planted_runs, transfer

GAMMAS = (-1.0, 0.0, 0.5)


def coverage(gamma: float, reps: int, draws: int, seeds: int, n_boot: int, seed: int) -> dict:
    """Run ``reps`` planted sweeps and count the intervals that hold ``gamma``."""
    rng = np.random.default_rng(seed)
    held, widths, estimates, unfitted = 0, [], [], 0
    for rep in range(reps):
        runs, _ = planted_runs(gamma, n_draws=draws, n_seeds=seeds, rng=rng)
        fit = transfer(optima(runs, n_boot=n_boot, seed=rep), ("L",)).fits[0]
        if not fit.measured or not np.isfinite(fit.low[1]):
            unfitted += 1
            continue
        held += bool(fit.low[1] <= gamma <= fit.high[1])
        widths.append(fit.high[1] - fit.low[1])
        estimates.append(fit.estimate[1])
    n = reps - unfitted
    band = stats.binomtest(held, n).proportion_ci(0.95) if n else None
    return {"gamma": gamma, "n": n, "coverage": held / n if n else float("nan"),
            "band": (band.low, band.high) if band else (float("nan"),) * 2, "width": float(np.median(widths)),
            "mean": float(np.mean(estimates)), "unfitted": unfitted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{args.reps} repetitions per gamma, {args.draws} draws x {args.seeds} seeds, {args.bootstrap} resamples")
    for gamma in GAMMAS:
        start = time.perf_counter()
        r = coverage(gamma, args.reps, args.draws, args.seeds, args.bootstrap, args.seed)
        print(f"gamma {gamma:+.1f}: coverage {r['coverage']:.3f} (binomial 95% band {r['band'][0]:.3f}-"
              f"{r['band'][1]:.3f}, n = {r['n']}), median width {r['width']:.3f}, mean estimate {r['mean']:+.3f}, "
              f"not fitted {r['unfitted']} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
