"""The adversarial campaign: SIGKILLs at random moments and several hundred hostile inputs, each
against the real `explorer` CLI, with the figures docs/security.md quotes ("The adversarial campaign").

    nice -n 10 python benchmarks/hostile_probe.py --quick                    # 5 kills, 60 inputs
    nice -n 10 python benchmarks/hostile_probe.py --kills 30 --s3 --seed 0   # the kill campaign
    nice -n 10 python benchmarks/hostile_probe.py --inputs                   # every hostile input
    nice -n 10 python benchmarks/hostile_probe.py --session-ray              # the session Ray's cases
    nice -n 10 python benchmarks/hostile_probe.py --holes                    # issue 43's cache and smaller holes

- Kills (benchmarks/kill_campaign.py): a tiny 12-trial spec's clean run gives the fingerprint of
  what the views serve; then each kill SIGKILLs a sweep (fresh or resumed), a `compact` during a
  sweep, an `rm --sweep`, a `report` or an adaptive sweep at a moment drawn from ``--seed``, runs
  the command again, and counts rows lost, rows duplicated, fingerprint mismatches and `explorer
  check` failures. ``--s3`` adds a sweep on a local moto S3 server (127.0.0.1) and kills that
  server once mid-sweep.
- Inputs (benchmarks/input_campaign.py): names, store paths, overrides, TOML shapes, law forms,
  `--where` filters, SQL, output paths, environment variables and tampered stores; per category
  the counts, then every violation of the rule with its input, escaped, and the first output line.

Deterministic given ``--seed`` (the kill moments; the inputs are a fixed list), bounded by a
deadline per command and ``--budget-s`` in all; no network beyond 127.0.0.1. Exits 1 when a kill
lost, doubled or changed a row or an input broke the rule.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import input_campaign  # noqa: E402
import kill_campaign  # noqa: E402
from probe_tools import TINY_SPEC, Budget, MotoServer, environment, explorer, run  # noqa: E402

QUICK_KILLS, QUICK_INPUTS = 5, 60


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{platform.node()}: {platform.machine()}, {os.cpu_count()} cores, load {load}, Python {platform.python_version()}"


def base_store(work: Path, kills: kill_campaign.KillCampaign | None) -> Path:
    """The store the inputs are given to: the kill campaign's clean store, else one tiny sweep."""
    if kills is not None and kills.clean_store.exists():
        return kills.clean_store
    store, spec = work / "base", work / "base.toml"
    spec.write_text(TINY_SPEC.format(name=input_campaign.SWEEP))
    done = run(explorer("sweep", str(spec), "--store", str(store)), 600, environment())
    if done.rc != 0:
        raise SystemExit(f"the base sweep failed ({done.rc}): {done.stderr[-2000:]}")
    return store


def run_kills(args, work: Path, budget: Budget) -> tuple[kill_campaign.KillCampaign, bool]:
    server = MotoServer() if args.s3 else None
    try:
        campaign = kill_campaign.KillCampaign(work / "kills", args.seed, budget, server)
        tallies = campaign.run(args.kills)
        print(f"\n## Kills ({args.kills} drawn, seed {args.seed})\n")
        print("\n".join(kill_campaign.table(tallies)))
        for tally in tallies.values():
            for problem in tally.problems:
                print(f"- {problem}")
        missed = sum(t.finished_first for t in tallies.values())
        if missed:
            print(f"\n{missed} commands ended before their kill moment (not counted as kills)")
        bad = any(t.lost or t.duplicated or t.mismatches or t.check_failures or t.rerun_failures
                  for t in tallies.values())
        if args.s3 and not budget.spent():
            lost = campaign.store_lost()
            print(f"\nS3 server killed mid-sweep: exit {lost.rc} after {lost.seconds:.1f} s, "
                  f"{lost.error_lines} error line(s): {input_campaign.escaped(lost.first_line, 200)}")
            bad |= lost.rc != 2 or lost.error_lines != 1
        return campaign, bad
    finally:
        if server is not None:
            server.kill()


def run_inputs(args, work: Path, budget: Budget, kills) -> bool:
    everything = input_campaign.cases()
    if args.category:
        everything = [case for case in everything if case.category in args.category]
    chosen = input_campaign.quick_selection(everything, QUICK_INPUTS) if args.quick else everything
    campaign = input_campaign.InputCampaign(work / "inputs", base_store(work, kills), budget)
    campaign.run(chosen)
    print(f"\n## Inputs ({len(campaign.results)} of {len(chosen)} run)\n")
    print("\n".join(campaign.summary()))
    if campaign.not_run:
        print(f"\nbudget spent: {campaign.not_run} inputs not run")
    print(f"\n{len(campaign.violations)} violations:")
    print("\n".join(campaign.violation_lines()) or "none")
    return bool(campaign.violations)


# --- the session Ray (issue 43, holes 1, 2, 3, 5, 6, 7: benchmarks/session_ray_campaign.py) -------

def run_session_ray(args, work: Path) -> bool:
    """The session Ray's cases (``--session-ray``; ``--quick`` leaves out those that start Ray)."""
    import session_ray_campaign

    cases = session_ray_campaign.run_cases(work / "session-ray", full=not args.quick)
    print(f"\n## Session Ray ({len(cases)} cases)\n")
    print("\n".join(session_ray_campaign.table(cases)))
    broken = [c for c in cases if not c.ok]
    print(f"\n{len(broken)} violations" + "".join(f"\n- hole {c.hole}, {c.name}: {c.seen}" for c in broken))
    return bool(broken)


# --- end of the session Ray's block ---------------------------------------------------------


# -- issue 43: the cached files and the smaller holes (4, 8-12), benchmarks/holes_campaign.py -----
def run_holes(args, work: Path, budget: Budget, kills) -> bool:
    import holes_campaign

    campaign = holes_campaign.HolesCampaign(work / "holes", base_store(work, kills))
    campaign.run(budget)
    print(f"\n## Cached files and smaller holes ({len(campaign.results)} cases)\n")
    print("\n".join(campaign.table()))
    print(f"\n{campaign.violations} violations")
    return bool(campaign.violations)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The adversarial campaign: random SIGKILLs and hostile inputs "
                                     "against the real explorer CLI (see the module docstring).")
    parser.add_argument("--kills", type=int, default=0, help="SIGKILLs to run (default 0; --quick: 5)")
    parser.add_argument("--inputs", action="store_true", help="run every hostile input")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_KILLS} kills and {QUICK_INPUTS} inputs")
    parser.add_argument("--category", action="append", help="only the inputs of this category (repeatable), "
                        "e.g. 'tampered stores'")
    parser.add_argument("--holes", action="store_true", help="the cached-file and smaller-hole cases of issue 43 "
                        "(benchmarks/holes_campaign.py)")
    parser.add_argument("--s3", action="store_true", help="add the S3 kills and the lost server (moto, 127.0.0.1)")
    parser.add_argument("--session-ray", action="store_true", help="the session Ray's cases (with --quick: "
                        "those that start no Ray)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    parser.add_argument("--budget-s", type=float, default=3600.0, help="wall-clock budget of the whole campaign")
    parser.add_argument("--dir", help="work folder (default: a temporary one, removed unless --keep)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    session_only = args.session_ray and not (args.kills or args.inputs)  # --quick then means the quick session cases
    if args.quick and not session_only:
        args.kills = args.kills or QUICK_KILLS
    if not (args.kills or args.inputs or args.quick or args.session_ray or args.holes):
        parser.error("nothing to run: give --kills N, --inputs, --session-ray, --holes or --quick")
    work = Path(args.dir or tempfile.mkdtemp(prefix="hostile-probe-"))
    work.mkdir(parents=True, exist_ok=True)
    budget, started = Budget(args.budget_s), time.monotonic()
    print(f"# hostile_probe {' '.join(sys.argv[1:])}\n\n{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{machine()}; work folder {work}")
    bad, kills = False, None
    try:
        if args.kills:
            kills, bad = run_kills(args, work, budget)
        if args.inputs or args.quick and not session_only:
            bad |= run_inputs(args, work, budget, kills)
        if args.session_ray:
            bad |= run_session_ray(args, work)
        if args.holes:
            bad |= run_holes(args, work, budget, kills)
    finally:
        if not (args.keep or args.dir):
            shutil.rmtree(work, ignore_errors=True)
    print(f"\ndone in {time.monotonic() - started:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
