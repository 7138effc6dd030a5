"""What pairing two real sweeps buys, beyond one realization of two draws (docs/measurements.md,
"Comparing sweeps").

With two problem draws each variance of ``explorer compare`` has one degree of freedom, so one
pair's ratio of unpaired to paired width is a ratio of two such estimates: it can land far from
what the pairing buys on average. This runs two real sweeps on the grid of
``tests/end_to_end/test_compare_real.py`` (L = 4..64, M = 16..1024, D = 8, 4 seeds, 10 steps,
references of 512 x 256 particles, 2 replicas) with G draws, differing only in the learning rate,
and prints

- each draw fitted alone in both sweeps (one design for both) and the difference;
- the population ratio: sqrt(var_A + var_B) / sd(B - A) over the per-draw estimates, and the
  comparison on all G draws;
- the seeds' part: the jackknife over seed indices, unpaired against paired;
- with --pairs, the comparison on each pair of draws: the distribution of the two-draw ratios;
- the seeds that took different paths in the two sweeps (``explorer.analysis.compare``).

    python benchmarks/compare_draws.py --store /tmp/draws --draws 16 --pairs    # docs/measurements.md
    python benchmarks/compare_draws.py --store /tmp/draws --draws 8 --lr 1.0 0.5
"""
from __future__ import annotations

import argparse
import itertools
import platform
import time
import warnings
from datetime import datetime, timezone

import numpy as np

import explorer
from explorer.analysis.decomposed import draws_of
from explorer.analysis.compare import departing_seeds
from explorer.analysis.compare.pairing import joint_design, paired_solve, seeds_jackknife
from store import Store

PARAMETERS = ("c1", "a", "c2", "b")
SPEC = {
    "problem": {"d_in": 5, "d_out": 5, "samples": 10},
    "model": {"activation": "tanh", "preset": "mlu"},
    "train": {"steps": 10, "dtype": "float64"},
    "reference": {"depth": 512, "width": 256, "replicas": 2},
    "grid": {"L": [4, 8, 16, 32, 64], "M": [16, 64, 256, 1024], "D": [8], "seeds": 4},
    "resources": {"cpus_per_trial": 1},
}


def width_ratios(comparison) -> np.ndarray:
    """Unpaired over paired width per parameter (log widths for c1, c2: the sds are in log)."""
    fit = comparison.fit
    return np.sqrt(fit.sd_a**2 + fit.sd_b**2) / fit.sd_diff


def run_sweeps(store, names, rates, draws: int) -> None:
    for name, lr in zip(names, rates):
        started = time.time()
        spec = {**SPEC, "name": name, "train": {**SPEC["train"], "lr": lr},
                "grid": {**SPEC["grid"], "problem_seeds": list(range(1, draws + 1))}}
        code = explorer.sweep(spec, store=store, progress=False).exit_code
        print(f"sweep {name} (lr {lr}, {draws} draws): exit {code}, {time.time() - started:.0f} s", flush=True)


def per_draw(comparison) -> None:
    """Each draw alone, the population ratio and the seeds' part."""
    da, db = draws_of(comparison.paired.a), draws_of(comparison.paired.b)
    ea, eb = joint_design(da, db, "quadrature")
    alone = np.array([paired_solve(da, db, ea, eb, [g], [None]) for g in range(len(da))])  # (G, 2, 4)
    print("each draw alone (log c1, a, log c2, b):")
    for g, d in enumerate(da):
        print(f"  draw {d.label}: A {np.round(alone[g, 0], 3)}  B {np.round(alone[g, 1], 3)}  "
              f"B - A {np.round(alone[g, 1] - alone[g, 0], 3)}")
    va, vb, vd = (np.nanvar(x, axis=0, ddof=1) for x in (alone[:, 0], alone[:, 1], alone[:, 1] - alone[:, 0]))
    print("sd over draws: A", np.round(np.sqrt(va), 3), " B", np.round(np.sqrt(vb), 3), " B - A", np.round(np.sqrt(vd), 3))
    print("population ratio sqrt(var A + var B) / sd(B - A):", np.round(np.sqrt((va + vb) / vd), 2))
    wa, wb, wd = seeds_jackknife(da, db, ea, eb)
    print("the seeds' part (jackknife over seed indices), unpaired / paired:", np.round(np.sqrt((wa + wb) / wd), 2))


def pairs_of_draws(store, names, labels, n_boot: int) -> None:
    """The comparison on each pair of draws: the two-draw ratios' distribution."""
    rows = []
    for g, h in itertools.combinations(labels, 2):
        one = explorer.compare(*names, store=store, save=False, n_boot=n_boot, where=f"problem_seed IN ({g}, {h})")
        rows.append(width_ratios(one))
        print(f"  draws ({g}, {h}): unpaired / paired {np.round(rows[-1], 2)}", flush=True)
    rows = np.array(rows)
    for i, name in enumerate(PARAMETERS):
        x = rows[:, i][np.isfinite(rows[:, i])]
        print(f"{name}: over {len(x)} pairs of draws: median {np.median(x):.2f}, quartiles "
              f"{np.round(np.quantile(x, [0.25, 0.75]), 2)}, at least 2 in {(x >= 2).sum()}")
    print(f"a and b both at least 2 in {((rows[:, 1] >= 2) & (rows[:, 3] >= 2)).sum()} of {len(rows)} pairs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--lr", type=float, nargs=2, default=(1.0, 0.8), metavar=("A", "B"))
    parser.add_argument("--pairs", action="store_true", help="also compare each pair of draws (minutes)")
    parser.add_argument("--boot", type=int, default=100, help="bootstrap resamples (where the jackknife cannot)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    store = Store(args.store)
    names = tuple(f"draws_lr{lr:g}".replace(".", "") for lr in args.lr)
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {platform.processor() or '?'}")
    run_sweeps(store, names, args.lr, args.draws)
    comparison = explorer.compare(*names, store=store, save=False, n_boot=args.boot)
    print("\n".join(comparison.lines()))
    print(f"all {args.draws} draws: unpaired / paired width (c1, a, c2, b):", np.round(width_ratios(comparison), 2))
    per_draw(comparison)
    departing = departing_seeds(comparison.paired.a, comparison.paired.b)
    print(f"seeds that took different paths: {len(departing)}, in draws {sorted({d['draw'] for d in departing})}")
    if args.pairs:
        pairs_of_draws(store, names, [d.label for d in draws_of(comparison.paired.a)], args.boot)


if __name__ == "__main__":
    main()
