"""Coverage of the fits' 95% intervals on planted laws (docs/measurements.md, "Coverage of the fits' intervals").

Three regimes (``explorer.analysis.decomposed.REGIMES``):
- easy: c1 = 0.8, c2 = 0.3 on L = 2..64 x M = 1..64, 4 draws x 5 seeds, no draw effect;
- rates: c1 = 0.065, c2 = 0.205 (the engine's size) on L = 4..128 x M = 1..1024, D = 8, 4 draws x
  4 seeds, a per-draw effect of sd 0.2 in log on each term, each seed's error the RMS of a fixed
  bias vector plus Gaussian fluctuations (50 entries);
- shared: as rates, the seeds' fluctuations common random numbers across the grid (correlation
  0.8 between points), as the engine's unit streams are;
- dexp: issue 34's D sweep, L = 4, 16, 64 x M = 16, 64, 256 x D = 4, 8, 16, 32, 5 draws x 8 seeds,
  the fluctuation c2 D^g (LM)^-b with g = 0.15 apart from b = 0.5 (and h = 0 in the bias): every
  law fits g and h besides c1, a, c2, b.

For each repetition it fits ``decomposed`` (from the Gram rows), ``free_rss`` and the additive
``free`` (from the RMS errors), and ``terms``: the user's laws of the two terms fitted by
``fit_terms`` (c1*L**(-a) on the bias, c2*D**g*(L*M)**(-b) or c2*(D/(L*M))**b on the fluctuation,
as ``explorer fit --metric bias_out/fluct_out --form EXPR`` fits each), and counts how often each
95% interval holds the planted value.

    python benchmarks/coverage.py --reps 400            # the table of docs/measurements.md
    python benchmarks/coverage.py --reps 40 --regimes rates --forms decomposed
    python benchmarks/coverage.py --reps 200 --regimes shared --forms decomposed --draws 2
    python benchmarks/coverage.py --reps 400 --regimes dexp --forms decomposed terms
"""
from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from datetime import datetime, timezone

import numpy as np

from explorer.analysis.fitting import fit
from explorer.analysis.decomposed import REGIMES, as_grid, fit_decomposed, fit_terms, planted_grams

PARAMETERS = ("c1", "a", "c2", "b", "g", "h")
FORMS = ("decomposed", "free_rss", "free", "terms")


def one_fit(form: str, frame, n_boot: int, seed: int):
    if form == "decomposed":
        return fit_decomposed(frame, n_boot=n_boot, seed=seed, per_draw=False, range_check=False)
    if form == "terms":  # the user's law of each term, the fluctuation's with a D exponent where D varies
        fluct = "c2*D**g*(L*M)**(-b)" if frame["D"].nunique() > 1 else "c2*(D/(L*M))**b"
        return fit_terms(frame, bias="c1*L**(-a)", fluct=fluct, n_boot=n_boot, seed=seed, per_draw=False,
                         range_check=False)
    return fit(as_grid(frame), form, n_boot=n_boot, seed=seed, per_draw=False, range_check=False)


def coverage(regime: str, forms, reps: int, n_boot: int, first_seed: int = 0, draws: int | None = None) -> dict:
    """form -> {"hits": {parameter: count}, "a": [estimates], "reps": n} over ``reps`` sweeps
    (``draws``: that many problem draws instead of the regime's)."""
    planted = REGIMES[regime] if draws is None else dataclasses.replace(REGIMES[regime], draws=draws)
    out = {f: {"hits": dict.fromkeys(PARAMETERS, 0), "a": [], "reps": 0, "failed": 0} for f in forms}
    for rep in range(reps):
        frame = planted_grams(planted, np.random.default_rng(first_seed + rep))
        for form in forms:
            try:
                result = one_fit(form, frame, n_boot, rep)
            except Exception:  # a failed fit counts as a miss  # noqa: BLE001
                out[form]["failed"] += 1
                out[form]["reps"] += 1
                continue
            out[form]["reps"] += 1
            out[form]["a"].append(result.estimate["a"])
            for name in PARAMETERS:
                if name not in planted.truth or name not in result.parameters:
                    out[form]["hits"][name] = None  # not planted apart, or not in this law: no column
                    continue
                lo, hi = result.ci_low[name], result.ci_high[name]
                out[form]["hits"][name] += bool(lo <= planted.truth[name] <= hi)
    return out


def table(results: dict) -> list[str]:
    lines = ["| regime | law | c1 | a | c2 | b | g | h | median a | repetitions |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for regime, by_form in results.items():
        for form, r in by_form.items():
            cells = " | ".join("-" if r["hits"][p] is None else f"{r['hits'][p] / r['reps']:.3f}" for p in PARAMETERS)
            median = f"{np.median(r['a']):.3f}" if r["a"] else "-"
            failed = f" ({r['failed']} failed)" if r["failed"] else ""
            lines.append(f"| {regime} | {form} | {cells} | {median} | {r['reps']}{failed} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--boot", type=int, default=200, help="bootstrap resamples per fit")
    parser.add_argument("--regimes", nargs="+", default=list(REGIMES), choices=list(REGIMES))
    parser.add_argument("--forms", nargs="+", default=list(FORMS))
    parser.add_argument("--first-seed", type=int, default=0, help="seed of the first repetition (to split a run)")
    parser.add_argument("--draws", type=int, default=None, help="problem draws per sweep (default: the regime's, 4)")
    args = parser.parse_args(argv)
    start = time.time()
    results = {}
    for regime in args.regimes:
        results[regime] = coverage(regime, args.forms, args.reps, args.boot, args.first_seed, args.draws)
        print(f"# {regime} done after {time.time() - start:.0f} s", file=sys.stderr, flush=True)
        print("\n".join(table({regime: results[regime]})[2:]), file=sys.stderr, flush=True)
    print(f"python benchmarks/coverage.py --reps {args.reps} --boot {args.boot} --regimes {' '.join(args.regimes)} "
          f"--forms {' '.join(args.forms)} --first-seed {args.first_seed}"
          + (f" --draws {args.draws}" if args.draws is not None else ""))
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()} {platform.processor() or ''}, "
          f"{time.time() - start:.0f} s")
    print("\n".join(table(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
