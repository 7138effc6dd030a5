"""Sweep wall time with fused points against the same sweep without (``[resources] fuse``), or
this tree's sweeps against another tree's (``--base``: today's main, say).

    python benchmarks/fused_sweep_bench.py [--only alpha_phase|lr_study] [--repeats 2] [--num-cpus 2]
        [--json out.json] [--base DIR]

Two sweeps, each from an empty store with its references already cached (the issue's setting):

- ``alpha_phase``: examples/alpha_phase.toml as shipped (7 alphas x D = 4, 8, 16, 32 at (L, M) =
  (64, 64), 3 seeds, K = 10; four shapes of 7 points);
- ``lr_study``: lr = 2^-3 .. 2^5 x L = 4, 16, 64 x M = 16 x D = 8 x 2 problem draws, 4 seeds, K =
  10 (three shapes of 18 points; a coarse mean_ode reference, 64 x 32 particles).

One process: the embedded Ray is started once (its start timed apart) and every sweep joins it,
so that the ratio compares what fusion can change, not Ray's start (8 - 40 s on a shared
machine, the same with and without fusion). First each spec runs once with fusion off under its
own name, which computes and caches its references; then, ``--repeats`` times, the two modes
alternate (off, on, then on, off, ...) each under a new sweep name, so each run trains every
point from an empty sweep with every reference found in the store. Printed per run: the sweep's
wall time (``explorer.sweep``, plan to compaction), when its first and its last point started
(from the sweep's start: what comes before the first is planning, Tune's start and its workers'
start; after the last, that point, the writes and the compaction), the trials' compute (the sum
of the trials' own ``wall_s``: a fused group's time is shared by its points), and how many Tune
trials and fused groups ran; then a table of medians and the ratios fused / unfused.

``--base DIR`` (a source tree of the project, e.g. ``git archive 2210c07 | tar -x -C DIR``)
compares instead this tree's sweeps, as shipped (fusion on), with DIR's, as a user running
``explorer sweep`` meets them: each run is a fresh process (its code from its tree through
PYTHONPATH) that starts an embedded Ray (timed apart: "Ray's start"), copies the cached
references into an empty store and runs the sweep ("sweep wall time", the acceptance figure of
issue 36: plan to compaction, Ray's start excluded). Both trees' references are computed once
first, into the folder every run copies. The runs alternate (base, this tree, then this tree,
base, ...), ``--repeats`` of each; the table gives medians and the ratio this tree / base.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # the embedded Ray on loopback only (Ray is imported here first)

# The project's modules are imported in the functions: with --base, a run imports another tree's.
ROOT = Path(__file__).resolve().parents[1]


def alpha_phase() -> dict:
    with open(ROOT / "examples" / "alpha_phase.toml", "rb") as handle:
        return tomllib.load(handle)


def lr_study() -> dict:
    return {
        "name": "lr_study",
        "problem": {"d_in": 5, "d_out": 5, "samples": 10},
        "train": {"steps": 10},
        "reference": {"depth": 64, "width": 32, "replicas": 2},
        "grid": {"L": [4, 16, 64], "M": [16], "D": [8], "lr": [2.0 ** e for e in range(-3, 6)],
                 "problem_seeds": [1, 2], "seeds": 4},
        "resources": {"cpus_per_trial": 1},
    }


SPECS = {"alpha_phase": alpha_phase, "lr_study": lr_study}


def with_mode(raw: dict, name: str, fuse: bool) -> dict:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    out["name"] = name
    out.setdefault("resources", {})["fuse"] = fuse
    return out


def run_once(raw: dict, store_root: str, slots: int) -> dict:
    """One sweep into the store (its references there already); its wall time and its trials' compute."""
    import explorer
    from explorer.config.planning import plan
    from explorer.config.spec import parse_spec
    from explorer.sweeps.worker import packing
    from store import SCHEMA_VERSION, Store

    spec = parse_spec(raw)
    trials = list(plan(spec, SCHEMA_VERSION).trials)
    packs = packing.packs_of_groups(trials, slots, spec.resources.points_per_trial, spec.resources.fuse)
    started_at = dt.datetime.now(dt.timezone.utc)
    started = time.perf_counter()
    result = explorer.sweep(raw, store=store_root, progress=False)
    wall = time.perf_counter() - started
    if result.failed or result.missing or result.ran != len(trials):
        raise SystemExit(f"{raw['name']}: {result.summary()}")
    got = Store(store_root).query("SELECT sum(wall_s) AS s, min(started_at) AS first, max(started_at) AS last FROM trials",
                                  sweep=raw["name"]).to_pylist()[0]
    since = lambda t: round((t - started_at).total_seconds(), 2)
    return {"sweep": raw["name"], "fuse": spec.resources.fuse, "trials": len(trials), "tune_trials": len(packs),
            "fused_groups": sum(len(g) > 1 for p in packs for g in p), "wall_s": round(wall, 2),
            "trial_compute_s": round(got["s"], 2), "first_point_started_s": since(got["first"]),
            "last_point_started_s": since(got["last"])}


def bench(name: str, store_root: str, slots: int, repeats: int) -> list[dict]:
    raw = SPECS[name]()
    warm = run_once(with_mode(raw, f"{name}_warm", False), store_root, slots)  # computes and caches the references
    print(json.dumps({"warm-up (references computed)": warm}), flush=True)
    runs = []
    for r in range(repeats):
        for fuse in ((False, True) if r % 2 == 0 else (True, False)):
            out = run_once(with_mode(raw, f"{name}_{'on' if fuse else 'off'}_{r}", fuse), store_root, slots)
            print(json.dumps(out), flush=True)
            runs.append(out)
    return runs


def table(results: dict[str, list[dict]]) -> str:
    lines = ["| sweep | trials | fusion | Tune trials | fused groups | sweep wall time | first point started | "
             "last point started | trials' compute |", "|---|---|---|---|---|---|---|---|---|"]
    ratios = []
    for name, runs in results.items():
        med = {}
        for fuse in (False, True):
            mine = [r for r in runs if r["fuse"] == fuse]
            columns = ("wall_s", "first_point_started_s", "last_point_started_s", "trial_compute_s")
            med[fuse] = [statistics.median(r[c] for r in mine) for c in columns]
            lines.append(f"| {name} | {mine[0]['trials']} | {'on' if fuse else 'off'} | {mine[0]['tune_trials']} | "
                         f"{mine[0]['fused_groups']} | " + " | ".join(f"{v:.1f} s" for v in med[fuse]) + " |")
        ratios.append(f"{name}: wall time fused / unfused {med[True][0] / med[False][0]:.2f}, "
                      f"trials' compute {med[True][3] / med[False][3]:.2f}")
    return "\n".join(lines + [""] + ratios)


def fresh_process_run(name: str, sweep: str, references: str, num_cpus: int | None) -> dict:
    """(``--child``, in a fresh process) Ray's start, then one sweep from an empty store holding
    only the cached ``references``: as ``explorer sweep`` meets it."""
    import explorer
    from explorer.sweeps.ray.connection import ray_session
    from store import Store

    with tempfile.TemporaryDirectory(prefix="sweep-start-bench-") as root:
        shutil.copytree(references, os.path.join(root, "references"))
        raw = dict(SPECS[name](), name=sweep)
        started = time.perf_counter()
        with ray_session(None, num_cpus=num_cpus):
            ray_start = time.perf_counter() - started
            started_at = dt.datetime.now(dt.timezone.utc)
            started = time.perf_counter()
            result = explorer.sweep(raw, store=root, progress=False)
            wall = time.perf_counter() - started
        if result.failed or result.missing:
            raise SystemExit(f"{sweep}: {result.summary()}")
        got = Store(root).query("SELECT sum(wall_s) AS s, min(started_at) AS first, count(*) AS n FROM trials",
                                sweep=sweep).to_pylist()[0]
    return {"sweep": name, "ray_start_s": round(ray_start, 2), "wall_s": round(wall, 2), "trials": got["n"],
            "first_point_started_s": round((got["first"] - started_at).total_seconds(), 2),
            "trial_compute_s": round(got["s"], 2)}


def run_in_tree(tree: Path, name: str, sweep: str, references: str, num_cpus: int | None) -> dict:
    """``fresh_process_run`` in a new process that imports the project from ``tree``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--sweep-name", sweep,
               "--references", references] + (["--num-cpus", str(num_cpus)] if num_cpus else [])
    env = dict(os.environ, PYTHONPATH=str(tree))
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {sweep} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return dict(out, process_s=round(time.perf_counter() - started, 2))


def compare_trees(base: Path, names: list[str], repeats: int, num_cpus: int | None) -> dict[str, list[dict]]:
    """Alternated fresh-process runs of each sweep with ``base``'s code and this tree's."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="sweep-start-refs-") as refs_root:
        for name in names:
            references = os.path.join(refs_root, name)
            for label, tree in (("base", base), ("this tree", ROOT)):  # compute and cache both trees' references
                warm = os.path.join(refs_root, f"{name}-warm")
                if os.path.isdir(references):
                    shutil.copytree(references, os.path.join(warm, "references"))
                command = [sys.executable, "-c", "import explorer, sys; sys.exit(explorer.sweep(dict(SPEC), "
                           f"store={warm!r}, progress=False).exit_code)".replace("SPEC", repr(SPECS[name]()))]
                subprocess.run(command, env=dict(os.environ, PYTHONPATH=str(tree)), check=True,
                               cwd=tempfile.gettempdir(), capture_output=True)
                shutil.rmtree(references, ignore_errors=True)
                shutil.copytree(os.path.join(warm, "references"), references)
                shutil.rmtree(warm)
            runs = []
            for r in range(repeats):
                order = (("base", base), ("this tree", ROOT))
                for label, tree in (order if r % 2 == 0 else order[::-1]):
                    out = dict(run_in_tree(tree, name, f"{name}_{r}", references, num_cpus), tree=label,
                               load=round(os.getloadavg()[0], 1))
                    print(json.dumps(out), flush=True)
                    runs.append(out)
            results[name] = runs
    return results


def compare_table(results: dict[str, list[dict]]) -> str:
    """Medians per sweep and tree, and the ratio this tree / base of the sweep's wall time."""
    lines = ["| sweep | trials | code | Ray's start | sweep wall time | first point started | trials' compute | "
             "whole process |", "|---|---|---|---|---|---|---|---|"]
    ratios = []
    columns = ("ray_start_s", "wall_s", "first_point_started_s", "trial_compute_s", "process_s")
    for name, runs in results.items():
        med = {}
        for label in ("base", "this tree"):
            mine = [r for r in runs if r["tree"] == label]
            med[label] = [statistics.median(r[c] for r in mine) for c in columns]
            lines.append(f"| {name} | {mine[0]['trials']} | {label} | "
                         + " | ".join(f"{v:.1f} s" for v in med[label]) + " |")
        ratios.append(f"{name}: sweep wall time this tree / base {med['this tree'][1] / med['base'][1]:.2f} "
                      f"(whole process {med['this tree'][4] / med['base'][4]:.2f})")
    return "\n".join(lines + [""] + ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SPECS), help="run one of the sweeps")
    parser.add_argument("--repeats", type=int, default=2, help="pairs of runs (off and on, or base and this tree) per sweep")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of the embedded Ray (default: all)")
    parser.add_argument("--json", help="also write the runs to this file")
    parser.add_argument("--base", type=Path, help="compare this tree's sweeps with this source tree's (fresh processes)")
    parser.add_argument("--child", choices=sorted(SPECS), help=argparse.SUPPRESS)
    parser.add_argument("--sweep-name", help=argparse.SUPPRESS)
    parser.add_argument("--references", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(fresh_process_run(args.child, args.sweep_name, args.references, args.num_cpus)))
        return
    import ray

    print(f"# {'sweeps against ' + str(args.base) if args.base else 'fused sweeps'}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, ray {ray.__version__}, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    names = [args.only] if args.only else list(SPECS)
    if args.base:
        results = compare_trees(args.base.resolve(), names, args.repeats, args.num_cpus)
        print(f"load at the end {os.getloadavg()[0]:.1f}")
        print(compare_table(results))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
        return
    from explorer.sweeps.ray.connection import ray_session

    results = {}
    with tempfile.TemporaryDirectory(prefix="fused-sweep-bench-") as root:
        started = time.perf_counter()
        with ray_session(None, num_cpus=args.num_cpus):
            print(f"embedded Ray started in {time.perf_counter() - started:.1f} s (once, for every sweep)", flush=True)
            slots = int(ray.cluster_resources().get("CPU", 1))
            for name in names:
                results[name] = bench(name, root, slots, args.repeats)
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
