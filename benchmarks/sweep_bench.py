"""Benchmark of the sweep machinery on the embedded local Ray (figures in docs/benchmarks.md).

Two sweeps, each into a fresh store:
- tiny: 1,024 trials with L <= 8, M <= 4, D = 4, steps = 5 (L x M x 32 values of alpha, so 32
  references too); what it measures is the overhead per trial beyond its compute,
  (wall - compute / parallelism) / trials, where compute is the sum of the trials' own wall_s
  (``train_trial`` time, as stored) and parallelism the number of trials Ray runs at once.
- medium: 200 trials with L in 32..256, M in 16..256, D = 8, steps = 20, 3 seeds (0.05 to 2 s of
  compute each, 0.5 s on average); what it measures is the share of wall time spent in trial
  compute, compute / (wall x parallelism).

Wall times are given with and without starting the embedded Ray (the benchmark starts it itself
first, exactly as ``explorer sweep`` does, and times it apart).

    python benchmarks/sweep_bench.py            # both
    python benchmarks/sweep_bench.py --only tiny
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import explorer  # noqa: E402  (before Ray: it keeps the embedded Ray on loopback)
import ray  # noqa: E402
from explorer.sweeps.ray.connection import ray_session  # noqa: E402
from store import Store  # noqa: E402

ALPHAS = [round(0.5 + 0.05 * i, 2) for i in range(32)]
SWEEPS = {
    "tiny": {
        "name": "bench_tiny",
        "train": {"steps": 5},
        "reference": {"depth": 16, "width": 8},
        "grid": {"L": [1, 2, 3, 4, 5, 6, 7, 8], "M": [1, 2, 3, 4], "D": [4], "alpha": ALPHAS, "seeds": 2},
    },
    "medium": {
        "name": "bench_medium",
        "train": {"steps": 20},
        "reference": {"depth": 64, "width": 32},
        "grid": {"L": [32, 64, 128, 256], "M": [16, 32, 64, 128, 256], "D": [8],
                 "alpha": [0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0], "seeds": 3},
    },
}


def run(name: str, num_cpus: int | None) -> dict:
    spec = SWEEPS[name]
    with tempfile.TemporaryDirectory(prefix=f"sweep-bench-{name}-") as root:
        t0 = time.perf_counter()
        with ray_session(None, num_cpus=num_cpus):
            ray_start_s = time.perf_counter() - t0
            slots = int(ray.cluster_resources().get("CPU", 1))
            t1 = time.perf_counter()
            result = explorer.sweep(spec, store=root, progress=False)
            sweep_s = time.perf_counter() - t1
        total_s = time.perf_counter() - t0
        store = Store(root)
        compute = store.query("SELECT sum(wall_s) AS s, count(*) AS n FROM trials", sweep=spec["name"]).to_pylist()[0]
        refs = store.query("SELECT count(DISTINCT ref_key) AS n FROM \"references\"").to_pylist()[0]["n"]
    trials = compute["n"]
    compute_s = compute["s"]
    out = {
        "sweep": name, "trials": trials, "ok": result.ok, "failed": result.failed, "references": refs,
        "parallelism": slots, "ray_start_s": round(ray_start_s, 2), "sweep_wall_s": round(sweep_s, 2),
        "total_wall_s": round(total_s, 2), "trial_compute_s": round(compute_s, 2),
        "overhead_per_trial_ms": round(1000 * (sweep_s - compute_s / slots) / trials, 1),
        "overhead_per_trial_with_ray_start_ms": round(1000 * (total_s - compute_s / slots) / trials, 1),
        "compute_share": round(compute_s / (sweep_s * slots), 3),
        "compute_share_with_ray_start": round(compute_s / (total_s * slots), 3),
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SWEEPS), help="run one of the sweeps")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of the embedded Ray (default: all)")
    args = parser.parse_args()
    print(json.dumps({"machine": platform.machine(), "cpus": os.cpu_count(), "ray": ray.__version__}))
    for name in [args.only] if args.only else list(SWEEPS):
        print(json.dumps(run(name, args.num_cpus)), flush=True)


if __name__ == "__main__":
    main()
