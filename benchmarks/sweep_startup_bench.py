"""Start-up of a sweep whose trials are all in the store: plan, status lookup, summary.

    python benchmarks/sweep_startup_bench.py            # 10^5 trials
    python benchmarks/sweep_startup_bench.py --lrs 1    # 10^4 trials (quicker)

A sweep start plans the spec (trial keys) and reads the status of every trial the store holds
(``Store.trial_statuses``), to skip the finished ones. This benchmark plans a spec of
10^4 x ``--lrs`` grid points, stores a trials row for every one of them (1% diverged, the rest
ok; one-row files written directly, as ``write_trial`` would, without their metrics, which the
start never reads), then times:
- the status lookup over one small trials file per trial (a sweep interrupted before its end);
- the compaction of the trials kind that every sweep does when it ends;
- the status lookup after it (one compacted file: what every later start reads);
- ``explorer.sweep`` on the complete sweep: the whole start (plan, lookup, summary; nothing to
  run, so no Ray);
- the claims a driver holds on the trials it runs (``Store.claim``, one lease file per trial key,
  so that several drivers of one sweep can share it): claiming every planned key, renewing them
  (the heartbeat, every ttl / 4), listing the sweep's leases (what a driver reads to see other
  drivers' claims) and releasing them.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import tempfile
import time

import pyarrow as pa

import explorer
from explorer.config.planning import plan
from explorer.config.spec import parse_spec
from store import SCHEMA_VERSION, Store
from store.layout import key_file
from store.schema import to_table
from store.write import parquet_bytes, provenance


def spec(lrs: int) -> dict:
    return {
        "name": "startup",
        "train": {"steps": 5},
        "reference": {"depth": 16, "width": 8},
        "grid": {"L": [2 * i + 2 for i in range(10)], "M": list(range(1, 11)), "D": list(range(4, 14)),
                 "alpha": [1.0 + i for i in range(10)], "lr": [round(0.1 * (i + 1), 1) for i in range(lrs)],
                 "seeds": 2},
    }


def trials_row(cfg) -> dict:
    row = dict(cfg.columns(), ref_key="ref0000000000000", ref_kind="mean_ode", device="cpu", wall_s=0.1,
               seeds=list(cfg.seeds), n_seeds=len(cfg.seeds), status="ok", error=None,
               started_at=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), final_err_out=0.1,
               final_err_hidden=0.2, config_json="{}", node_id="bench")
    return row


def timed(fn, repeat: int = 1):
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def report(label: str, seconds: float, extra: str = "") -> None:
    print(f"{label:<58} {seconds:9.3f} s  {extra}", flush=True)


def time_claims(store: Store, keys: list[str]) -> None:
    """Claim, renew, list and release a lease on every key (module docstring)."""
    n, owner = len(keys), f"bench:{os.getpid()}"
    per_key = lambda seconds: f"{1e6 * seconds / n:.0f} us/trial"
    seconds, held = timed(lambda: store.claim("claims", keys, owner))
    assert len(held) == n
    report(f"claim {n} trial keys (one lease file each)", seconds, per_key(seconds))
    seconds, renewed = timed(lambda: store.renew("claims", keys, owner))
    assert len(renewed) == n
    report(f"renew {n} claims (the heartbeat)", seconds, per_key(seconds))
    seconds, listed = timed(lambda: store.leases("claims"))
    assert len(listed) == n
    report(f"list the sweep's {n} leases (other drivers' claims)", seconds, per_key(seconds))
    seconds, released = timed(lambda: store.release("claims", keys, owner))
    assert released == n
    report(f"release {n} claims", seconds, per_key(seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lrs", type=int, default=10, help="values of lr: 10^4 trials each")
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="sweep-startup-")
    raw = spec(args.lrs)
    print(f"sweep start-up benchmark: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}, root {root}")

    seconds, the_plan = timed(lambda: plan(parse_spec(raw), SCHEMA_VERSION))
    n = len(the_plan.trials)
    report(f"plan {n} grid points (trial keys)", seconds, f"{1e6 * seconds / n:.0f} us/trial")

    store = Store(os.path.join(root, "results"), durable=False)
    template = to_table("trials", [trials_row(the_plan.trials[0].config)], provenance("startup", "trial_key", "x"))
    key_index, status_index = template.schema.get_field_index("trial_key"), template.schema.get_field_index("status")
    t0 = time.perf_counter()
    for i, trial in enumerate(the_plan.trials):
        table = template.set_column(key_index, "trial_key", pa.array([trial.trial_key]))
        if i % 100 == 0:
            table = table.set_column(status_index, "status", pa.array(["diverged"]))
        store.files.put(key_file(store.files.root, "startup", "trials", trial.trial_key), parquet_bytes(table))
    report(f"store {n} one-row trials files (setup, not a sweep cost)", time.perf_counter() - t0)

    seconds, statuses = timed(lambda: store.trial_statuses("startup"))
    assert len(statuses) == n
    report(f"trial_statuses, {n} small files", seconds, f"{1e3 * seconds / n:.2f} ms/file")
    seconds, compacted = timed(lambda: store.compact("startup", kinds=("trials",)))
    report("compact the trials kind (what a sweep's end does)", seconds, compacted.summary())
    seconds, after = timed(lambda: store.trial_statuses("startup"), repeat=3)
    assert after == statuses
    report(f"trial_statuses, {n} trials in 1 compacted file", seconds)
    seconds, result = timed(lambda: explorer.sweep(raw, store=store, progress=False), repeat=3)
    assert (result.ran, result.skipped) == (0, n), result.summary()
    report(f"explorer.sweep start, {n} trials complete (nothing to run)", seconds, "plan + lookup + summary")
    time_claims(store, [trial.trial_key for trial in the_plan.trials])
    if args.dir is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
