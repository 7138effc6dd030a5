"""Adaptive sweep on the rates grid against the full grid, in one sitting: wall time, compute,
per-round overhead and the estimates.

    python benchmarks/adaptive_bench.py [--dir DIR] [--references STORE]
    python benchmarks/adaptive_bench.py --synthetic

The references (four draws at 1024 x 512) are computed once, untimed (or copied from the
``references`` folder of --references STORE), into two fresh stores under --dir. Then, each as a
subprocess and timed by its wall clock:

- the full grid: ``explorer sweep examples/rates.toml`` and ``explorer fit --sweep rates``
  (the decomposed law, 200 resamples);
- the adaptive run: ``explorer sweep examples/rates_adaptive.toml --adaptive`` (decomposed law,
  targets a and b, half-width 0.1, budget 0.5, batch 8); its last round's refit is its final fit.

Printed as a Markdown table: the two wall times and their ratio, rounds and trials, compute
(predicted seconds and the sum of the trials' wall_s, against the full grid's), the start-up
(command start to the first trial), the per-round overhead (from the first trial's start to
the end of the command, the wall time not spent in trials, ``sum(wall_s) / slots``, divided by
the rounds), and a and b with their 95% CIs next to the full grid's.

--refit-cpu instead runs the loop on the same candidates with the planted runner (the rates
regime's decomposed law, no Ray, no torch) and prints the driver's CPU seconds per round, by
part: the refits, the store's reads, the bootstrap; with --from-scratch each refit reads every
row of the sweep again (no kept rows), as before the refits read incrementally.

--timeline instead runs the adaptive loop in this process on its Ray pool (the same spec, the
references copied or computed first) and prints where the two workers' time went between the
first trial's start and the last one's end: the sum of the trials' durations, and the time a
worker stood idle between two trials, split by whether its next point had been handed to it yet
(``nothing handed``: no point was queued for it) and by how much of it overlapped the driver's
refits.

--synthetic instead runs the loop on the same candidate grid with a fake runner writing a known
law (c1 L^-1 + c2 (D/(LM))^0.5, both exponents identifiable, no Ray): the targets are reached,
and it prints with how much of the grid's compute.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.analysis.decomposed import fit_decomposed  # noqa: E402
from explorer.analysis.data import seed_grams  # noqa: E402
from explorer.config.cost_model import trial_seconds  # noqa: E402
from explorer.config.planning import plan  # noqa: E402
from explorer.config.spec import load_spec  # noqa: E402
from explorer.sweeps.adaptive import read_rounds  # noqa: E402
from store import SCHEMA_VERSION, Store  # noqa: E402

SPEC = ROOT / "examples" / "rates_adaptive.toml"
FULL_SPEC = ROOT / "examples" / "rates.toml"


def timed(command: list[str]) -> tuple[float, dt.datetime]:
    """Run an explorer command; its wall seconds and when it ended (UTC)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "explorer.cli", *command], env=env, text=True, capture_output=True)
    seconds = time.perf_counter() - started
    if proc.returncode:
        sys.exit(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return seconds, dt.datetime.now(dt.timezone.utc)


def references(target: Path, source: str | None) -> None:
    """The rates grid's references in ``target``: copied from ``source``, else computed here."""
    if source:
        shutil.copytree(Path(source) / "references", target / "references")
        return
    from explorer.sweeps.references.cache import load_reference

    store = Store(target)
    for ref in plan(load_spec(FULL_SPEC), SCHEMA_VERSION).references:
        load_reference(store, ref)


def trials_summary(store: Store, sweep: str) -> dict:
    spec = load_spec(SPEC if sweep != "rates" else FULL_SPEC)
    seconds = {t.trial_key: trial_seconds(t.config) for t in plan(spec, SCHEMA_VERSION).trials}
    rows = store.query("SELECT trial_key, started_at, wall_s FROM trials", sweep=sweep).to_pylist()
    return {"n": len(rows), "predicted": sum(seconds[r["trial_key"]] for r in rows),
            "wall": sum(r["wall_s"] for r in rows), "first": min(r["started_at"] for r in rows)}


def decomposed(store: Store, sweep: str):
    con = store.connect(sweep=sweep, views=("metrics",))
    try:
        return fit_decomposed(seed_grams(con, sweep), n_boot=200, seed=0)
    finally:
        con.close()


def real(args) -> None:
    root = Path(args.dir or tempfile.mkdtemp(prefix="adaptive-bench-"))
    full_dir, adaptive_dir = root / "full", root / "adaptive"
    if full_dir.exists() or adaptive_dir.exists():
        sys.exit(f"{root} already holds a sitting: give a new --dir")
    references(full_dir, args.references)
    shutil.copytree(full_dir / "references", adaptive_dir / "references")
    load = os.getloadavg()
    slots = os.cpu_count() or 1
    sweep_s, _ = timed(["sweep", str(FULL_SPEC), "--store", str(full_dir)])
    fit_s, _ = timed(["fit", "--sweep", "rates", "--store", str(full_dir)])
    began = dt.datetime.now(dt.timezone.utc)
    adaptive_s, ended = timed(["sweep", str(SPEC), "--adaptive", "--store", str(adaptive_dir)])
    load_after = os.getloadavg()
    full_store, adaptive_store = Store(full_dir), Store(adaptive_dir)
    full, ad = trials_summary(full_store, "rates"), trials_summary(adaptive_store, "rates_adaptive")
    rounds_log = read_rounds(adaptive_store, "rates_adaptive")
    rounds = int(rounds_log["round"].nunique())
    busy = (ended - ad["first"]).total_seconds()
    overhead = (busy - ad["wall"] / slots) / rounds
    last = rounds_log[(rounds_log["entry"] == "target") & (rounds_log["round"] == rounds_log["round"].max())]
    reference = decomposed(full_store, "rates")
    full_s = sweep_s + fit_s
    print(f"store {root}; {slots} slots; load average {load[0]:.2f} before, {load_after[0]:.2f} after\n")
    print("| | adaptive | full grid |\n|---|---|---|")
    print(f"| wall time, start to final fit | {adaptive_s:.1f} s ({adaptive_s / full_s:.2f}x) | {full_s:.1f} s "
          f"(sweep {sweep_s:.1f} s + fit {fit_s:.1f} s) |")
    print(f"| rounds, trials | {rounds}, {ad['n']} of {full['n']} | 1, {full['n']} |")
    print(f"| compute, predicted seconds | {ad['predicted'] / full['predicted']:.1%} | 100 % |")
    print(f"| compute, sum of trials' wall_s | {ad['wall']:.1f} s ({ad['wall'] / full['wall']:.1%}) | "
          f"{full['wall']:.1f} s |")
    print(f"| start-up: command start to first trial | {(ad['first'] - began).total_seconds():.1f} s | |")
    print(f"| per-round overhead: (first trial to end - wall_s / {slots}) / rounds | {overhead:.2f} s | |")
    for name in ("a", "b"):
        row = last[last["parameter"] == name].iloc[0]
        lo, hi = reference.ci_low[name], reference.ci_high[name]
        inside = "inside" if lo <= row["estimate"] <= hi else "OUTSIDE"
        print(f"| {name} | {row['estimate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}], {inside} the full "
              f"grid's CI | {reference.estimate[name]:.3f} [{lo:.3f}, {hi:.3f}] |")
    stop = rounds_log["stop_reason"].dropna()
    print(f"\nstopped: {stop.iloc[-1] if len(stop) else '(not stopped)'}")


def synthetic(args) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "explorer" / "sweeps" / "adaptive"))
    from adaptive_fake import FakeRunner, free_law

    from explorer.sweeps.adaptive import run_adaptive

    spec = load_spec(SPEC, ["adaptive.halfwidth=0.05", "adaptive.form=free"])  # the planted rows have no Gram rows
    st = Store(tempfile.mkdtemp(prefix="adaptive-synthetic-"))
    started = time.perf_counter()
    result = run_adaptive(spec, st, FakeRunner(st, free_law()))
    print(result.summary())
    print(f"(synthetic law 0.5 L^-1 + 0.3 (D/(LM))^0.5, half-width target 0.05; loop {time.perf_counter() - started:.1f} s)")


def refit_cpu(args) -> None:
    import collections

    import explorer.analysis.decomposed.fit as decomposed_fit
    import explorer.analysis.data as data
    import explorer.sweeps.adaptive.driver as driver
    import explorer.sweeps.adaptive.stopping as stopping
    from explorer.analysis.decomposed import REGIMES
    from explorer.sweeps.adaptive import AdaptiveLoop, PlantedRunner, TermsLaw

    spent, calls = collections.Counter(), collections.Counter()

    def timed_cpu(owner, name: str, label: str) -> None:
        inner = getattr(owner, name)

        def wrapper(*a, **k):
            started = time.process_time()
            try:
                return inner(*a, **k)
            finally:
                spent[label] += time.process_time() - started
                calls[label] += 1
        setattr(owner, name, wrapper)

    timed_cpu(AdaptiveLoop, "fit", "refits (store reads of the rows included)")
    timed_cpu(data, "seed_grams", "  the fit's queries (seed_grams)")
    timed_cpu(decomposed_fit, "estimate", "  point fit and bootstrap")
    timed_cpu(Store, "trial_column", "statuses and wall times read")
    for module in (driver, stopping):
        timed_cpu(module, "read_rounds", "rounds log read")
    planted = REGIMES["rates"]
    spec = load_spec(SPEC)
    st = Store(tempfile.mkdtemp(prefix="adaptive-refit-"))
    law = TermsLaw(c1=planted.c1, a=planted.a, c2=planted.c2, b=planted.b)
    writer = PlantedRunner(st, law, entries=planted.entries, draw_sd=planted.draw_sd, ref_err=planted.ref_err,
                           term_effects=True)

    def runner(spec, keys):  # the trials' writing is not the driver's
        started = time.process_time()
        try:
            return writer(spec, keys)
        finally:
            spent["(runner, left out)"] += time.process_time() - started

    loop = AdaptiveLoop(spec, st, runner, lambda line: None)
    if args.from_scratch:
        loop.rows = None
    started = time.process_time()
    result = loop.run(runner)
    driver = time.process_time() - started - spent["(runner, left out)"]
    rounds = result.rounds
    print(f"{rounds} rounds, {result.trials} trials; driver CPU {driver:.2f} s, {driver / rounds:.3f} s a round "
          f"({'from scratch' if args.from_scratch else 'incremental'}; load average {os.getloadavg()[0]:.2f})")
    for label, seconds in spent.items():
        print(f"  {label}: {seconds / rounds:.3f} s a round ({calls[label]} calls)")


def timeline(args) -> None:
    import explorer.sweeps.adaptive.driver as driver
    from explorer.sweeps.adaptive import SessionRunner, run_adaptive

    root = Path(args.dir or tempfile.mkdtemp(prefix="adaptive-timeline-"))
    references(root, args.references)
    refits: list[tuple[float, float]] = []
    refit = driver.RoundDriver.refit

    def timed_refit(self, number, result):
        started = time.time()
        try:
            return refit(self, number, result)
        finally:
            refits.append((started, time.time()))

    driver.RoundDriver.refit = timed_refit
    spec, store = load_spec(SPEC), Store(root)
    began = time.time()
    with SessionRunner(spec, store, progress=False) as runner:
        result = run_adaptive(spec, store, runner)
    ended = time.time()
    records, handed = runner.records, runner.handed_at
    first, last = min(r.started for r in records), max(r.ended for r in records)
    busy = sum(r.ended - r.started for r in records)
    idle = starved = during_refits = 0.0
    for pid in {r.worker_pid for r in records}:
        mine = sorted((r for r in records if r.worker_pid == pid), key=lambda r: r.started)
        for before, after in zip(mine, mine[1:]):
            idle += after.started - before.ended
            starved += max(0.0, min(after.started, handed[after.trial_key]) - before.ended)
            during_refits += sum(max(0.0, min(after.started, b) - max(before.ended, a)) for a, b in refits)
    slots = len({r.worker_pid for r in records})
    print(f"{result.rounds} rounds, {len(records)} trials on {slots} workers, {len(refits)} refits; load average "
          f"{os.getloadavg()[0]:.2f}; store {root}\n")
    print("| | seconds |\n|---|---|")
    print(f"| loop start to first trial | {first - began:.1f} |")
    print(f"| first trial start to last trial end (span) | {last - first:.1f} |")
    print(f"| sum of the trials' durations (workers x span: {slots * (last - first):.1f}) | {busy:.1f} |")
    print(f"| workers idle between two trials | {idle:.1f} |")
    print(f"| of which nothing had been handed to the worker | {starved:.1f} |")
    print(f"| of which during a refit | {during_refits:.1f} |")
    print(f"| driver's refits (sum) | {sum(b - a for a, b in refits):.1f} |")
    print(f"| last trial end to the loop's end (last fit, Ray's stop) | {ended - last:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="a new folder for the two stores (default: a temporary one)")
    parser.add_argument("--references", default=None, help="a store whose references/ folder holds the rates "
                        "grid's references (copied; default: computed first, untimed)")
    parser.add_argument("--synthetic", action="store_true", help="the fake-runner benchmark on a known law instead")
    parser.add_argument("--refit-cpu", action="store_true", help="the driver's CPU per round with the planted "
                        "runner instead")
    parser.add_argument("--timeline", action="store_true", help="where the workers' time went in the loop, "
                        "run in this process")
    parser.add_argument("--from-scratch", action="store_true", help="with --refit-cpu: every refit reads every "
                        "row again")
    args = parser.parse_args()
    if args.refit_cpu:
        refit_cpu(args)
    elif args.timeline:
        timeline(args)
    elif args.synthetic:
        synthetic(args)
    else:
        real(args)


if __name__ == "__main__":
    main()
