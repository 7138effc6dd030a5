"""Coverage of ``explorer compare``'s paired 95% intervals on planted pairs (docs/measurements.md,
"Comparing sweeps"), for three estimates of a difference's variance:

- jackknife: the problem draws' jackknife, each draw left out of both sweeps (what compare uses);
- bootstrap: G/(G-1) (V_outer - V_inner) of the paired two-level bootstrap when positive, else
  the seeds' jackknife;
- bootstrap_floored: the same, not below the seeds' jackknife.

The pairs (``explorer.analysis.decomposed.planted_pair_partly_shared``): the rates law, B's c1 1.2 x
A's, the seeds' noise shared with correlation --shared, B's fluctuation level moved per draw by
exp(--effect-sd N(0, 1)). The truth: c1 ratio 1.2, no change in a, c2, b.

    python benchmarks/compare_coverage.py --reps 150 --draws 4     # the numbers in docs/measurements.md
"""
from __future__ import annotations

import argparse
import dataclasses
import warnings

import numpy as np
from scipy import stats

from explorer.analysis.decomposed import REGIMES, draws_of, planted_pair_partly_shared
from explorer.analysis.compare import pair_frames
from explorer.analysis.compare.pairing import draws_jackknife, joint_design, paired_solve, seeds_jackknife

TRUTH = np.array([np.log(1.2), 0.0, 0.0, 0.0])  # log c1 ratio, a, log c2 ratio, b
RULES = ("jackknife", "bootstrap", "bootstrap_floored")


def variances(a, b, n_boot: int, seed: int) -> tuple[np.ndarray, dict, float]:
    """The difference B - A and its variance by each rule, and the t quantile."""
    paired = pair_frames(a, b)
    da, db = draws_of(paired.a), draws_of(paired.b)
    ea, eb = joint_design(da, db, "quadrature")
    G = len(da)
    theta_a, theta_b = paired_solve(da, db, ea, eb, list(range(G)), [None] * G)
    rng = np.random.default_rng(seed)

    def difference(chosen):
        picks = [rng.integers(0, da[g].R, da[g].R) for g in chosen]
        x, y = paired_solve(da, db, ea, eb, list(chosen), picks)
        return y - x

    inner = np.array([difference(range(G)) for _ in range(n_boot)])
    outer = np.array([difference(rng.integers(0, G, G)) for _ in range(n_boot)])
    between = G / (G - 1) * (np.nanvar(outer, axis=0, ddof=1) - np.nanvar(inner, axis=0, ddof=1))
    within = seeds_jackknife(da, db, ea, eb)[2]
    found = {"jackknife": draws_jackknife(da, db, ea, eb)[2],
             "bootstrap": np.where(between > 0, between, within),
             "bootstrap_floored": np.fmax(np.where(between > 0, between, np.nan), within)}
    return theta_b - theta_a, found, float(stats.t.ppf(0.975, G - 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=150)
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--shared", type=float, default=0.5)
    parser.add_argument("--effect-sd", type=float, default=0.1)
    parser.add_argument("--n-boot", type=int, default=100)
    args = parser.parse_args()
    regime = dataclasses.replace(REGIMES["rates"], draws=args.draws)
    hits = {rule: np.zeros(4) for rule in RULES}
    sds = {rule: [] for rule in RULES}
    counted = np.zeros(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for rep in range(args.reps):
            a, b = planted_pair_partly_shared(regime, np.random.default_rng([7, rep]), shared=args.shared,
                                              effect_sd=args.effect_sd)
            diff, found, quantile = variances(a, b, args.n_boot, rep)
            measured = np.isfinite(diff)
            counted += measured
            for rule, var in found.items():
                hits[rule] += measured & (np.abs(diff - TRUTH) <= quantile * np.sqrt(var))
                sds[rule].append(np.sqrt(var))
    print(f"{args.reps} pairs, {args.draws} draws x {regime.seeds} seeds, shared {args.shared}, "
          f"effect sd {args.effect_sd}, {args.n_boot} resamples; columns log c1, a, log c2, b")
    for rule in RULES:
        print(f"{rule:<18} coverage {np.round(hits[rule] / counted, 3)}  median sd "
              f"{np.round(np.nanmedian(sds[rule], axis=0), 4)}")


if __name__ == "__main__":
    main()
