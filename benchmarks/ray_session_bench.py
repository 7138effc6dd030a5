"""Where users wait, in one sitting: a sweep's start-up with its own embedded Ray against one that
joins the session Ray (``explorer ray start``), and, against another checkout (``--base``, e.g.
main exported with ``git archive``), ``explorer demo`` rerun on a complete store and ``explorer
report`` of the demo sweep.

    python benchmarks/ray_session_bench.py [--runs 3] [--base DIR] [--demo-store DIR] [--base-demo-store DIR]

Start-up is from the command's start to its first trial's ``started_at`` (the store's clock),
each run a fresh store and a one-trial spec; the session runs share one ``explorer ray start``,
timed on its own. The session Ray lives in a private TMPDIR of this benchmark, so no other
explorer on the machine joins it, and it is stopped at the end.

With ``--base`` and ``--demo-store`` (a store the demo completed): each command is run
alternately with this checkout and the base (``PYTHONPATH=BASE``), ``--runs`` times, and its
wall and CPU seconds printed with the ratio of the medians. ``--base-demo-store``: the store the
base's own demo completed, which the base's commands read (the base's demo is another sweep, and
its views may not read this checkout's files); without it both read ``--demo-store``. Each command
runs once on each side before the timed runs (``--warm-up``): a rerun is what is timed (the
operating system's file cache warm, and this checkout's fit cache filled by that first run). The
machine's load average is printed with each table: on a shared machine the wall times move with it.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from store import Store

# one trial (dotted TOML keys: the same tables)
SPEC = ('name = "one"\ntrain.steps = 5\nreference.depth = 16\nreference.width = 8\n'
        'grid.L = [2]\ngrid.M = [1]\ngrid.D = [4]\ngrid.seeds = 2\n')


def run(args: list[str], env: dict, cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall and CPU (user + system of the children) seconds of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def startup_s(folder: Path, env: dict) -> tuple[float, float]:
    """One sweep of the one-trial spec in a fresh store: (start-up to its first trial, wall)."""
    store = folder / f"s{time.monotonic_ns()}"
    began = dt.datetime.now(dt.timezone.utc)
    wall, _, _ = run([sys.executable, "-m", "explorer.cli", "sweep", "one.toml", "--store", str(store)], env, folder)
    first = Store(str(store)).query("SELECT min(started_at) AS t FROM trials")["t"][0].as_py()
    shutil.rmtree(store, ignore_errors=True)
    return (first - began).total_seconds(), wall


def session_table(runs: int) -> list[str]:
    private = tempfile.mkdtemp(prefix="rsb", dir="/tmp")  # short: Ray's socket paths
    env = dict(os.environ, TMPDIR=private, RAY_AUTH_MODE=os.environ.get("RAY_AUTH_MODE", "disabled"),
               RAY_USAGE_STATS_ENABLED="0")
    folder = Path(private) / "work"
    folder.mkdir()
    (folder / "one.toml").write_text(SPEC)
    rows = [("embedded Ray (default)", [startup_s(folder, env) for _ in range(runs)])]
    try:
        start_wall, _, _ = run([sys.executable, "-m", "explorer.cli", "ray", "start"], env, folder)
        rows.append(("joins the session Ray", [startup_s(folder, env) for _ in range(runs)]))
    finally:
        subprocess.run([sys.executable, "-m", "explorer.cli", "ray", "stop"], env=env, cwd=folder, capture_output=True)
        shutil.rmtree(private, ignore_errors=True)
    lines = ["| sweep of one trial | start-up to the first trial, s (median; runs) | whole command, s (median) |",
             "| --- | --- | --- |"]
    for name, measured in rows:
        starts = [s for s, _ in measured]
        lines.append(f"| {name} | {statistics.median(starts):.1f} ({', '.join(f'{s:.1f}' for s in starts)}) | "
                     f"{statistics.median(w for _, w in measured):.1f} |")
    lines.append(f"| `explorer ray start` itself (once per session) | {start_wall:.1f} | |")
    return lines


def base_table(runs: int, base: Path, demo_store: Path, base_store: Path | None = None, warm_up: int = 1) -> list[str]:
    env = dict(os.environ, RAY_AUTH_MODE=os.environ.get("RAY_AUTH_MODE", "disabled"), RAY_USAGE_STATS_ENABLED="0")
    work = Path(tempfile.mkdtemp(prefix="rsb-base"))
    commands = {
        "`explorer demo` rerun on a complete store": ["demo", "--store", "{store}", "--out", "{out}"],
        "`explorer report --sweep demo` (no exports)": ["report", "--sweep", "demo", "--store", "{store}",
                                                       "--out", "{out}", "--no-save"],
    }
    stores = {"base": str(base_store or demo_store), "new": str(demo_store)}
    lines = ["| command | main: wall s (CPU s), median | this branch: wall s (CPU s), median | ratio of wall (of CPU) |",
             "| --- | --- | --- | --- |"]
    for name, args in commands.items():
        measured: dict[str, list[tuple[float, float]]] = {"base": [], "new": []}
        for i in range(-warm_up, runs):
            for side in ("base", "new"):  # alternately: both see the same load
                side_env = dict(env, PYTHONPATH=str(base)) if side == "base" else env
                out = work / f"{side}{i}"
                wall, cpu, _ = run([sys.executable, "-m", "explorer.cli",
                                    *[a.replace("{out}", str(out)).replace("{store}", stores[side]) for a in args]],
                                   side_env, work)
                if i >= 0:
                    measured[side].append((wall, cpu))
        med = {side: (statistics.median(w for w, _ in m), statistics.median(c for _, c in m)) for side, m in measured.items()}
        lines.append(f"| {name} | {med['base'][0]:.1f} ({med['base'][1]:.1f}) | {med['new'][0]:.1f} ({med['new'][1]:.1f}) "
                     f"| {med['new'][0] / med['base'][0]:.2f} ({med['new'][1] / med['base'][1]:.2f}) |")
    shutil.rmtree(work, ignore_errors=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--base", type=Path, help="a checkout to compare with (PYTHONPATH), e.g. main from git archive")
    parser.add_argument("--demo-store", type=Path, help="a store the demo completed (with --base)")
    parser.add_argument("--base-demo-store", type=Path, help="a store the base's demo completed (default: --demo-store)")
    parser.add_argument("--warm-up", type=int, default=1, help="untimed runs of each command on each side first")
    parser.add_argument("--skip-session", action="store_true", help="only the comparison with --base")
    args = parser.parse_args()
    print(f"{dt.date.today()} on {platform.node()} ({os.cpu_count()} CPUs), load average {os.getloadavg()[0]:.1f}")
    if not args.skip_session:
        print("\n".join(session_table(args.runs)))
    if args.base is not None and args.demo_store is not None:
        base_store = args.base_demo_store.resolve() if args.base_demo_store else None
        print("\n".join(base_table(args.runs, args.base.resolve(), args.demo_store.resolve(), base_store, args.warm_up)))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
