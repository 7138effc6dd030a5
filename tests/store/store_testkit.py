"""Synthetic trials for the store tests: rows shaped exactly like train_trial's, no torch."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math

from store import trial_row_from_metrics

STARTED = dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)


def config(L: int = 4, M: int = 2, D: int = 8, alpha: float = 1.0, steps: int = 3) -> dict:
    """The hyperparameter columns of one grid point (as TrialConfig.columns() gives them)."""
    return {
        "L": L, "M": M, "D": D, "d_in": 5, "d_out": 5, "samples": 10, "problem_seed": 1,
        "coupled_dim": None, "activation": "tanh", "block": "2lp", "preset": "mlu",
        "alpha": float(alpha), "sigma_u": 1.0, "sigma_v": 1.0, "lr": 1.0, "steps": steps,
        "dtype": "float64", "antithetic": False, "residual_scale": alpha / (L * M),
    }


def trial_key(**cfg) -> str:
    return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


def metric_rows(L=4, M=2, D=8, alpha=1.0, steps=3, seeds=(0, 1), ref_key="ref0000000000000", diverge_at=None) -> list[dict]:
    """One row per (seed, step); seed seeds[-1] diverges at ``diverge_at`` when given."""
    cols = config(L, M, D, alpha, steps)
    rows = []
    for seed in seeds:
        for step in range(steps + 1):
            diverged = diverge_at is not None and seed == seeds[-1] and step == diverge_at
            err = 1.0 / L + math.sqrt(D / (L * M)) * (1 + 0.01 * seed) * (1 + step) / (steps + 1)
            rows.append({
                **cols, "ref_key": ref_key, "ref_kind": "mean_ode", "seed": seed, "step": step,
                "err_out": math.inf if diverged else err, "err_hidden": err * 1.5, "loss": 1.0 / (1 + step),
                "ref_loss": 0.9 / (1 + step), "ref_err_out": 1e-3, "ref_err_hidden": 2e-3,
                "feature_update": 0.4 / alpha, "lin_ratio": 0.3 / alpha, "output_change": 0.6 * step,
                "weight_change": 0.1 * step, "status": "diverged" if diverged else "ok",
                "device": "cpu", "wall_s": 0.25,
            })
            if diverged:
                break
    return rows


def trial(L=4, M=2, D=8, alpha=1.0, steps=3, seeds=(0, 1), **kw) -> tuple[str, list[dict], dict]:
    """(trial_key, metric_rows, trial_row) of one synthetic trial."""
    rows = metric_rows(L, M, D, alpha, steps, seeds, **kw)
    key = trial_key(L=L, M=M, D=D, alpha=alpha, steps=steps, seeds=list(seeds))
    row = trial_row_from_metrics(rows, config_json=json.dumps(config(L, M, D, alpha, steps)), started_at=STARTED, seeds=seeds)
    return key, rows, row


def grid(n_L=3, n_M=2, steps=3, seeds=(0, 1)) -> list[tuple[str, list[dict], dict]]:
    return [trial(L=2 ** (i + 1), M=2 ** j, steps=steps, seeds=seeds) for i in range(n_L) for j in range(n_M)]


def reference_arrays(ref_key: str) -> tuple[dict, dict]:
    """A deterministic fake reference (what compute_reference would return for ref_key)."""
    import numpy as np

    rng = np.random.default_rng(int(ref_key, 16) % 2**32)
    return {"f_ref": rng.standard_normal((4, 5, 10)), "h_ref": rng.standard_normal((4, 8, 10))}, {"ref_key": ref_key}


def concurrent_worker(store, worker: int, n_trials: int, ref_key: str, calls_dir: str) -> dict:
    """Run in a spawned process: ask for the shared reference, then write trials (the last one
    is written by every worker). Returns what this worker saw of the reference."""
    import os
    import time
    import uuid

    def compute():
        with open(os.path.join(calls_dir, f"{worker}-{uuid.uuid4().hex}"), "w"):
            pass
        time.sleep(0.5)  # long enough for the other workers to arrive meanwhile
        return reference_arrays(ref_key)

    arrays, meta = store.get_or_compute_reference(ref_key, compute)
    for i in range(n_trials):
        key, rows, row = trial(L=2 + worker, M=1 + i, steps=3, seeds=(0, 1))
        store.write_trial("race", key, rows, row)
    key, rows, row = trial(L=64, M=64, steps=3, seeds=(0, 1))
    store.write_trial("race", key, rows, row)
    return {"bytes": {k: v.tobytes() for k, v in arrays.items()}, "meta": meta}
