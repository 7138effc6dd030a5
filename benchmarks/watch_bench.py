"""CPU of one ``explorer watch`` refresh on a 2592-trial store (the width study of the issue that
asked for it: 6 groups x M = 16, 64, 256 x 18 learning rates x 8 draws, 4 seeds).

    python benchmarks/watch_bench.py [--dir DIR] [--bootstrap N]

A synthetic store is written by the store's own writer (``Store.write_trial``: the rows a sweep
writes, a planted loss surface with its optimum drifting as M^-1 in half of the groups), with
a run record of a live run that planned every trial and leases on the trials still "running".
Then ``explorer.watch.Watcher.refresh`` is timed by the process's CPU clock:

- cold: the first refresh (every trial's rows read, the answer computed: 18 optima x 18 slices
  and 6 transfer laws, each with its bootstrap);
- unchanged: a refresh when no trial was added (the answer of the last refresh reused);
- +26 trials: a refresh after 1% more trials were written (their rows alone read, the answer
  computed again on the rows held);
- from scratch: the same data, with a new Watcher (what a refresh without reuse costs);
- run ended: the refresh after the run's record says it ended (the final answer, computed again
  with the command's own resamples; while the run is live the answer has ``RUNNING_BOOT``).

Each with the trials in small files (as while a sweep runs) and again after ``compact`` (as
after it ends). Printed as a Markdown table.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from explorer.watch import Watcher  # noqa: E402
from store import Store, new_run_id, trial_row_from_metrics  # noqa: E402
from tests.explorer.analysis_data import law_rows  # noqa: E402

GROUPS = [("standard", "raw"), ("standard", "mean_field"), ("mlu", "raw"), ("mlu", "mean_field"),
          ("completep", "raw"), ("completep", "mean_field")]
MS = (16, 64, 256)
LRS = tuple(2.0 ** k for k in range(-12, 6))
DRAWS = tuple(range(1, 9))
SEEDS = 4


def planted_trials(rng):
    """(key, metric rows) of every trial: loss = exp(0.4 (log lr - log lr*(M))^2 + noise)."""
    template = law_rows(lambda L, M, D: 0.1, Ls=(16,), Ms=(16,), seeds=1, steps=1).iloc[0].to_dict()
    for g, (preset, scaling) in enumerate(GROUPS):
        gamma = -1.0 if scaling == "raw" else 0.0
        for M in MS:
            center = np.log(2.0 ** (-6 if scaling == "raw" else 1)) + gamma * (np.log(M) - np.log(64))
            for draw in DRAWS:
                shift = rng.normal(0, 0.1)
                for i, lr in enumerate(LRS):
                    key = f"g{g}-m{M}-d{draw}-{i}"
                    rows = []
                    for seed in range(SEEDS):
                        loss = float(np.exp(0.4 * (np.log(lr) - center - shift) ** 2 / 4 + rng.normal(0, 0.05)))
                        for step in (0, 1):
                            rows.append(dict(template, L=16, M=M, D=8, preset=preset, lr_scaling=scaling, lr=lr,
                                             alpha=1.0, problem_seed=draw, seed=seed, step=step, steps=1,
                                             status="ok", loss=loss * (2 - step), err_out=loss / 10, error=None))
                    yield key, rows


def write(st: Store, trials) -> None:
    for key, rows in trials:
        clean = [{k: v for k, v in r.items() if k not in ("sweep", "trial_key")} for r in rows]
        st.write_trial("width", key, clean, trial_row_from_metrics(clean, config_json="{}", started_at=dt.datetime.now(dt.timezone.utc)))


def timed(watcher: Watcher) -> float:
    start = time.process_time()
    watcher.refresh()
    return time.process_time() - start


def measure(st: Store, later, n_boot: int, record) -> dict:
    watcher = Watcher(st, "width", n_boot=n_boot)
    out = {"cold": timed(watcher), "unchanged": timed(watcher)}
    write(st, later)
    out["+26 trials"] = timed(watcher)
    out["from scratch"] = timed(Watcher(st, "width", n_boot=n_boot))
    record(ended=True)
    out["run ended"] = timed(watcher)
    record(ended=False)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--bootstrap", type=int, default=200)
    args = parser.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="watch-bench-")) / "results"
    st = Store(root, durable=False)
    trials = list(planted_trials(np.random.default_rng(0)))
    assert len(trials) == 2592
    early, later, last = trials[:2000], trials[2000:2026], trials[2026:]
    start = time.time()
    write(st, early)
    print(f"wrote {len(early)} trials in {time.time() - start:.0f} s", file=sys.stderr)
    axes = {"L": [16], "M": list(MS), "lr": list(LRS), "problem_seed": list(DRAWS),
            "preset": sorted({p for p, _ in GROUPS}), "lr_scaling": ["raw", "mean_field"]}
    run_id, started = new_run_id(), dt.datetime.now(dt.timezone.utc)

    def record(ended: bool) -> None:
        st.write_run("width", run_id, spec={"name": "width", "axes": axes}, planned_keys=[k for k, _ in trials],
                     started_at=started, ended_at=dt.datetime.now(dt.timezone.utc) if ended else None)

    record(ended=False)
    from store import owner_identity
    st.claim("width", [k for k, _ in later + last], owner_identity(), ttl_s=600)
    rows = {"small files": measure(st, later, args.bootstrap, record)}
    write(st, last[:-26])
    st.compact("width")
    rows["compacted"] = measure(st, last[-26:], args.bootstrap, record)
    print(f"| trials in | cold | unchanged | +26 trials | from scratch | run ended ({args.bootstrap} resamples) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r in rows.items():
        print(f"| {name} | " + " | ".join(f"{r[k]:.2f}" for k in ("cold", "unchanged", "+26 trials", "from scratch",
                                                                   "run ended")) + " |")


if __name__ == "__main__":
    main()
