"""Store speed: write a 20,000-trial x 51-step sweep (~10^6 metric rows), query, compact, query.

    python benchmarks/store_bench.py [--trials 20000] [--steps 50] [--dir DIR] [--keep]

Prints one line per measurement (the sweep start-up at 10^5 trials, status lookup included:
benchmarks/sweep_startup_bench.py). Synthetic rows shaped exactly like train_trial's (one seed,
steps 0..50); files go to a temporary directory unless --dir is given. Writes use
durable=False (no fsync; a crash can then lose the last writes, never corrupt the store); the
cost of fsync is measured separately on a sample.
"""
from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
import os
import platform
import shutil
import tempfile
import time

from store import Store
from store.layout import kind_dir

AGGREGATE = """
SELECT L, M, D, count(*) AS n, avg(err_out) AS mean_err_out, avg(err_hidden) AS mean_err_hidden
FROM metrics WHERE step = steps AND status = 'ok' GROUP BY L, M, D ORDER BY L, M, D"""
STARTED = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def grid(n: int):
    """n distinct grid points over L, M, D, alpha, lr."""
    axes = itertools.product([2**i for i in range(1, 11)], [2**i for i in range(10)], [4, 8, 16, 32],
                             [1.0, 2.0, 4.0, 8.0, 16.0], [0.1 * (i + 1) for i in range(10)])
    return list(itertools.islice(axes, n))


def trial(index: int, point, steps: int):
    L, M, D, alpha, lr = point
    key = f"{index:016x}"
    base = {
        "L": L, "M": M, "D": D, "d_in": 5, "d_out": 5, "samples": 10, "problem_seed": 1, "coupled_dim": None,
        "activation": "tanh", "block": "2lp", "preset": "mlu", "alpha": alpha, "sigma_u": 1.0, "sigma_v": 1.0,
        "lr": lr, "steps": steps, "dtype": "float64", "antithetic": False, "residual_scale": alpha / (L * M),
        "ref_key": f"ref{D:013d}", "ref_kind": "mean_ode", "seed": 0, "status": "ok", "device": "cpu",
        "wall_s": 1.5, "node_id": "bench",
    }
    floor = 1.0 / L + math.sqrt(D / (L * M))
    rows = []
    for step in range(steps + 1):
        grow = (1 + step) / (steps + 1)
        rows.append({**base, "step": step, "err_out": floor * grow, "err_hidden": 1.5 * floor * grow,
                     "loss": 1.0 / (1 + step), "ref_loss": 0.9 / (1 + step), "ref_err_out": 1e-3,
                     "ref_err_hidden": 2e-3, "feature_update": 0.4 / alpha, "lin_ratio": 0.3 / alpha,
                     "output_change": 0.6 * grow, "weight_change": 0.1 * grow})
    trial_row = {k: base[k] for k in base if k not in ("seed", "step")}
    trial_row.update(seeds=[0], n_seeds=1, started_at=STARTED, final_err_out=floor, final_err_hidden=1.5 * floor,
                     config_json="{}")
    return key, rows, trial_row


def timed(fn, repeat: int = 3):
    """(best seconds, result) over ``repeat`` runs."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def report(label: str, seconds: float, extra: str = "") -> None:
    print(f"{label:<52} {seconds:9.3f} s  {extra}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--lookup-trials", type=int, default=100_000, help="trials for the completed-lookup test")
    parser.add_argument("--dir", default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="store-bench-")
    print(f"store benchmark: {args.trials} trials x {args.steps + 1} steps, {os.cpu_count()} CPUs, "
          f"{platform.processor() or platform.machine()}, python {platform.python_version()}, root {root}")
    st = Store(os.path.join(root, "results"), durable=False)
    points = grid(args.trials)
    write_s = gen_s = 0.0
    for index, point in enumerate(points):
        t0 = time.perf_counter()
        key, rows, trial_row = trial(index, point, args.steps)
        t1 = time.perf_counter()
        st.write_trial("bench", key, rows, trial_row)
        gen_s += t1 - t0
        write_s += time.perf_counter() - t1
    n_rows = args.trials * (args.steps + 1)
    report(f"write {args.trials} trials ({n_rows} rows), no fsync", write_s,
           f"{1000 * write_s / args.trials:.2f} ms/trial (row generation {gen_s:.1f} s not counted)")
    durable = Store(os.path.join(root, "durable"), durable=True)
    sample = 200
    start = time.perf_counter()
    for index, point in enumerate(points[:sample]):
        durable.write_trial("bench", *trial(index, point, args.steps))
    per = (time.perf_counter() - start) / sample
    report(f"write {sample} trials with fsync (durable=True)", per * sample, f"{1000 * per:.2f} ms/trial")

    seconds, keys = timed(lambda: st.completed_trial_keys("bench"))
    report(f"completed_trial_keys, {len(keys)} small files", seconds)
    seconds, statuses = timed(lambda: st.trial_statuses("bench"), repeat=1)
    report(f"trial_statuses, {len(statuses)} small files", seconds, f"{1e3 * seconds / len(statuses):.2f} ms/file")
    seconds, table = timed(lambda: st.query(AGGREGATE), repeat=2)
    report(f"GROUP BY (L, M, D) before compaction", seconds, f"{table.num_rows} groups, fresh connection")
    seconds, compacted = timed(lambda: st.compact("bench"), repeat=1)
    report("compact", seconds, compacted.summary())
    seconds, after = timed(lambda: st.query(AGGREGATE), repeat=5)
    report("GROUP BY (L, M, D) after compaction", seconds, f"{after.num_rows} groups, fresh connection each time")
    con = st.connect()
    seconds, _ = timed(lambda: con.sql(AGGREGATE).to_arrow_table(), repeat=5)
    report("GROUP BY (L, M, D) after compaction, open connection", seconds)
    same = table.num_rows == after.num_rows and all(
        b == a or math.isclose(b, a, rel_tol=1e-12) for cb, ca in zip(table.columns, after.columns)
        for b, a in zip(cb.to_pylist(), ca.to_pylist()))
    print(f"{'same answers before and after compaction':<52} {same}")
    seconds, keys = timed(lambda: st.completed_trial_keys("bench"))
    report(f"completed_trial_keys after compaction ({len(keys)})", seconds)
    seconds, after_statuses = timed(lambda: st.trial_statuses("bench"))
    report(f"trial_statuses after compaction ({len(after_statuses)})", seconds,
           "same" if after_statuses == statuses else "DIFFERENT")
    seconds, checked = timed(lambda: st.check(), repeat=1)
    report("check after compaction", seconds, "ok" if checked.ok else "PROBLEMS")

    # Completed lookup at 10^5 trials: it lists file names and never opens a small file, so
    # empty files with trial-key names measure it exactly.
    lookup = Store(os.path.join(root, "lookup"))
    directory = kind_dir(lookup.files.root, "big", "trials")
    os.makedirs(directory)
    for i in range(args.lookup_trials):
        open(os.path.join(directory, f"{i:016x}.parquet"), "wb").close()
    seconds, keys = timed(lambda: lookup.completed_trial_keys("big"))
    report(f"completed_trial_keys, {len(keys)} small files", seconds)
    if not args.keep and args.dir is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
