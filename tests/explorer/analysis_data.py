"""Data for the analysis tests (explorer.fit, phase, charts, report): metric rows shaped like
the store's ``metrics`` view, from the real trial engine or from a known law, on a DuckDB
connection. Used only by tests."""
from __future__ import annotations

import itertools

import duckdb
import numpy as np
import pandas as pd

from trials import ReferenceConfig, TrialConfig, compute_reference, train_trial


def connect(metrics: pd.DataFrame) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with ``metrics`` (and a one-row-per-trial ``trials``) registered."""
    con = duckdb.connect()
    con.register("metrics", metrics)
    trials = metrics.groupby(["sweep", "trial_key"], as_index=False).agg(L=("L", "first"), M=("M", "first"),
                                                                       D=("D", "first"))
    con.register("trials", trials)
    return con


def run_trials(configs, *, sweep: str = "analysis", ref_depth: int = 64, ref_width: int = 32) -> pd.DataFrame:
    """Metric rows of real trials (trials.train_trial, no Ray), one reference per limit group."""
    references, rows = {}, []
    for cfg in configs:
        rc = ReferenceConfig(limit=cfg, depth=ref_depth, width=ref_width, replicas=2, device="cpu")
        if rc.key() not in references:
            references[rc.key()] = compute_reference(rc)
        for row in train_trial(cfg, references[rc.key()]):
            row.update(sweep=sweep, trial_key=cfg.key(), error=None)
            rows.append(row)
    return pd.DataFrame(rows)


def grid_configs(base: TrialConfig, **axes) -> list[TrialConfig]:
    """The full factorial of ``axes`` (name -> values) around ``base``."""
    names = list(axes)
    return [base.replace(**dict(zip(names, values))) for values in itertools.product(*(axes[n] for n in names))]


def law_rows(law, *, Ls=(2, 4, 8, 16, 32, 64), Ms=(1, 4, 16, 64), Ds=(8,), seeds: int = 5, entries: int = 50,
             steps: int = 10, ref_err: float = 1e-5, sweep: str = "law", rng=None) -> pd.DataFrame:
    """Synthetic metric rows whose per-seed error is an RMS over ``entries`` Gaussian errors of
    mean square law(L, M, D)^2: err_seed = law * sqrt(chi2_entries / entries), so the RMS over
    seeds estimates the law itself (as a trial's error estimates its expected error)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    rows = []
    for L, M, D in itertools.product(Ls, Ms, Ds):
        true = float(law(L, M, D))
        for seed in range(seeds):
            noise = np.sqrt(rng.chisquare(entries, size=steps + 1) / entries)
            for step in range(steps + 1):
                scale = (step + 1) / (steps + 1)  # errors grow along training, like the real ones
                rows.append(dict(sweep=sweep, trial_key=f"{L}-{M}-{D}", seed=seed, step=step, steps=steps, L=L, M=M,
                                 D=D, alpha=1.0, lr=1.0, status="ok", err_out=true * scale * noise[step],
                                 err_hidden=true * scale * noise[step], ref_err_out=ref_err, ref_err_hidden=ref_err))
    return pd.DataFrame(rows)
