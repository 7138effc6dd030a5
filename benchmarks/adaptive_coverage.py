"""Coverage of the adaptive loop's 95% intervals at its stopping point (docs/measurements.md,
"Coverage at the adaptive loop's stop").

Each repetition runs the real adaptive loop (``explorer.sweeps.adaptive.run_adaptive``) of
examples/rates_adaptive.toml (candidates L = 4..128 x M = 1..1024, D = 8, 4 draws x 4 seeds;
decomposed law, targets a and b, half-width 0.1, budget 0.5, batch 8) on a fresh store, with
``explorer.sweeps.adaptive.PlantedRunner`` writing the trials (no Ray, no torch): the rates-like
regime of ``benchmarks/coverage.py``, c1 = 0.065, c2 = 0.205, a = 1, b = 1/2, each seed's error a
fixed bias vector plus Gaussian fluctuations (50 entries), an independent per-draw effect of sd
0.2 in log on each term, a reference error of 1e-5. Each loop runs to its stop; then the last
round's fit (the loop's own: same rows, same bootstrap seed) is read for a, b, c1 and c2, and the
benchmark counts how often each 95% interval holds the planted value, with the rounds, the share
of the grid's compute (L*M*D*seeds) spent and why each loop stopped.

    python benchmarks/adaptive_coverage.py --loops 100 --resamples 100
    python benchmarks/adaptive_coverage.py --loops 50 --first-seed 50 --save b.jsonl   # in parts,
    python benchmarks/adaptive_coverage.py --merge a.jsonl b.jsonl                      # then the table
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.sweeps.adaptive import FIT_SEED, PlantedRunner, TermsLaw, run_adaptive  # noqa: E402
from explorer.analysis.decomposed import fit_decomposed  # noqa: E402
from explorer.analysis.decomposed import REGIMES  # noqa: E402
from explorer.config.spec import load_spec  # noqa: E402
from explorer.analysis.data import seed_grams  # noqa: E402
from store import Store  # noqa: E402

SPEC = ROOT / "examples" / "rates_adaptive.toml"
PARAMETERS = ("c1", "a", "c2", "b")


@dataclass
class LoopOutcome:
    """One loop at its stop: the final fit's estimates and 95% intervals, and what it cost."""

    seed: int
    estimate: dict
    ci: dict  # parameter -> (low, high)
    rounds: int
    compute: float  # share of the full grid's L*M*D*seeds spent
    trials: int
    stop_reason: str

    def covers(self, name: str, truth: float) -> bool:
        lo, hi = self.ci[name]
        return bool(lo <= truth <= hi)


def stop_kind(reason: str | None) -> str:
    """A short name for why a loop stopped (the loop's stop_reason, see explorer.sweeps.adaptive)."""
    reason = reason or ""
    if reason.startswith("every target reached") and "two consecutive rounds" in reason:
        return "targets held two rounds"
    if "but not confirmed" in reason:
        return "targets met, not confirmed, nothing left to run"
    if reason.startswith("budget spent"):
        return "budget spent"
    if reason.startswith("every candidate has run"):
        return "every candidate run"
    if reason.startswith("no remaining candidate"):
        return "no candidate expected to help"
    return reason or "no stop reason"


def run_loop(seed: int, resamples: int, overrides=(), regime: str = "rates", folder: str | None = None) -> LoopOutcome:
    """One adaptive loop on the planted law of ``regime`` to its stop (a fresh store under
    ``folder``), with the planted errors drawn from ``seed``."""
    planted = REGIMES[regime]
    spec = load_spec(SPEC, [f"adaptive.resamples={resamples}", *overrides])
    with tempfile.TemporaryDirectory(prefix="adaptive-coverage-", dir=folder) as tmp:
        st = Store(Path(tmp) / "store")
        runner = PlantedRunner(st, TermsLaw(c1=planted.c1, a=planted.a, c2=planted.c2, b=planted.b),
                               entries=planted.entries, draw_sd=planted.draw_sd, ref_err=planted.ref_err,
                               seed=seed, term_effects=True)
        result = run_adaptive(spec, st, runner)
        con = st.connect(sweep=spec.name, views=("metrics",))
        try:  # the last round's fit again: the same rows and bootstrap seed give the loop's own intervals
            final = fit_decomposed(seed_grams(con, spec.name), n_boot=resamples, seed=FIT_SEED)
        finally:
            con.close()
    for name, (est, lo, hi) in result.targets.items():  # the refit is the recorded one
        assert np.isclose(final.estimate[name], est) and np.isclose(final.ci_low[name], lo), (seed, name)
    return LoopOutcome(seed=seed, estimate={p: float(final.estimate[p]) for p in PARAMETERS},
                       ci={p: (float(final.ci_low[p]), float(final.ci_high[p])) for p in PARAMETERS},
                       rounds=result.done, compute=result.spent_cost / result.full_cost, trials=result.trials,
                       stop_reason=result.stop_reason or "")


def summary_lines(outcomes: list[LoopOutcome], truth: dict) -> list[str]:
    """The coverage table (all loops, then by why they stopped), the rounds and the compute."""
    lines = ["| loops | stop | c1 | a | c2 | b | median a | median b | rounds (median, range) | compute (median, range) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    groups = [("all", outcomes)] + [(kind, [o for o in outcomes if stop_kind(o.stop_reason) == kind])
                                    for kind, _ in Counter(stop_kind(o.stop_reason) for o in outcomes).most_common()]
    for kind, group in groups:
        if not group:
            continue
        cover = " | ".join(f"{np.mean([o.covers(p, truth[p]) for o in group]):.3f}" for p in PARAMETERS)
        rounds = [o.rounds for o in group]
        compute = [o.compute for o in group]
        lines.append(f"| {len(group)} | {kind} | {cover} | {np.median([o.estimate['a'] for o in group]):.3f} | "
                     f"{np.median([o.estimate['b'] for o in group]):.3f} | {np.median(rounds):g} "
                     f"({min(rounds)}-{max(rounds)}) | {np.median(compute):.1%} ({min(compute):.1%}-{max(compute):.1%}) |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=100)
    parser.add_argument("--resamples", type=int, default=100, help="bootstrap resamples of each round's fit")
    parser.add_argument("--first-seed", type=int, default=0, help="seed of the first loop (to split a run)")
    parser.add_argument("--save", help="append each loop's outcome to this JSON-lines file")
    parser.add_argument("--merge", nargs="+", help="only tabulate the loops saved in these files")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="a spec override, e.g. adaptive.halfwidth=0.05 (repeatable)")
    args = parser.parse_args(argv)
    truth = REGIMES["rates"].truth
    if args.merge:
        outcomes = [LoopOutcome(**{**row, "ci": {k: tuple(v) for k, v in row["ci"].items()}})
                    for path in args.merge for row in map(json.loads, Path(path).read_text().splitlines())]
        print(f"python benchmarks/adaptive_coverage.py --merge {' '.join(args.merge)}  ({len(outcomes)} loops)")
        report(outcomes, truth)
        return 0
    start = time.time()
    outcomes = []
    for seed in range(args.first_seed, args.first_seed + args.loops):
        o = run_loop(seed, args.resamples, args.overrides)
        outcomes.append(o)
        if args.save:
            with open(args.save, "a") as out:
                out.write(json.dumps(dataclasses.asdict(o)) + "\n")
        miss = [p for p in PARAMETERS if not o.covers(p, truth[p])]
        print(f"# loop {seed}: {o.rounds} rounds, {o.compute:.1%} compute, a = {o.estimate['a']:.3f} "
              f"[{o.ci['a'][0]:.3f}, {o.ci['a'][1]:.3f}], b = {o.estimate['b']:.3f} [{o.ci['b'][0]:.3f}, "
              f"{o.ci['b'][1]:.3f}]; misses {','.join(miss) or '-'}; {stop_kind(o.stop_reason)} "
              f"({time.time() - start:.0f} s)", file=sys.stderr, flush=True)
    sets = "".join(f" --set {s}" for s in args.overrides)
    print(f"python benchmarks/adaptive_coverage.py --loops {args.loops} --resamples {args.resamples} "
          f"--first-seed {args.first_seed}{sets}")
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()} {platform.processor() or ''}, "
          f"{time.time() - start:.0f} s")
    report(outcomes, truth)
    return 0


def report(outcomes: list[LoopOutcome], truth: dict) -> None:
    print("\n".join(summary_lines(outcomes, truth)))
    for kind, n in Counter(stop_kind(o.stop_reason) for o in outcomes).most_common():
        warned = sum(stop_kind(o.stop_reason) == kind and "the fit warns" in o.stop_reason for o in outcomes)
        print(f"{n} x {kind}" + (f" ({warned} with a warning of the fit: the pre-asymptotic guard)" if warned else ""))


if __name__ == "__main__":
    sys.exit(main())
