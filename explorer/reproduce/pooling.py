"""How a reproduction pools the runs of one grid point into the error its laws are fitted to.

A paper spec chooses with ``[reproduce] pooling = "..."`` (the default is ``"rms"``):

- ``"authors"``: the companion notebooks' pooling (``plt_cvg_rate``): the *mean* of every run's
  error (seeds x problem draws), where a blown-up run (error above ``BLOWN_UP`` = 1e3) counts as
  0 and stays in the mean; a point whose mean is 0 is left out of the fit (their mask
  ``y > 0``). The tool ends a diverged seed's rows, so such a seed is counted as one more 0 at
  every step after it diverged (``with_blown_up_runs``).
- ``"rms"``: the tool's pooling: the root mean square of every run's error (diverged seeds,
  which have no row, left out).

Only the fit claims fitted to each point's pooled runs (``Claim.mean_of_runs``) read it; the
curve and collapse claims pool draws as sqrt(mean err^2) of each draw's RMS over seeds, and the
report's table says which pooling every claim used.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

POOLINGS = ("authors", "rms")
DEFAULT_POOLING = "rms"
BLOWN_UP = 1e3  # the notebook's THRESHOLD: a run's error above it is a numerical blow-up, counted as 0
OPTIONS = ("pooling",)  # the [reproduce] keys that are options, not a claim's left-out points


def read_pooling(path: str | Path) -> str:
    """The ``[reproduce] pooling`` of a paper spec, else ``DEFAULT_POOLING``.

    Raises:
        UsageError: a value outside ``POOLINGS`` (one line).
    """
    from ..errors import UsageError

    with open(path, "rb") as f:
        table = tomllib.load(f).get("reproduce", {})
    value = table.get("pooling", DEFAULT_POOLING) if isinstance(table, dict) else DEFAULT_POOLING
    if value not in POOLINGS:
        raise UsageError(f"{Path(path).name}: [reproduce] pooling = {value!r}; expected one of: {', '.join(POOLINGS)}")
    return value


def describe(pooling: str) -> str:
    """One phrase for the claims table."""
    if pooling == "authors":
        return f"authors: mean of every run's error, runs above {BLOWN_UP:g} (and diverged seeds) as 0, kept in the mean"
    return "rms: sqrt(mean of every run's error^2), diverged seeds left out"


def pooled_authors(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (L, M, D), the mean of every run's error with blown-up runs as 0 (``grid``: rows with
    ``seed_errs``, and ``n_blown_up`` zeros to add where ``with_blown_up_runs`` counted them); a
    point whose mean is 0 is dropped (the notebook fits only ``y > 0``)."""
    from ..analysis.fitting import pooled_mean

    extra = grid["n_blown_up"] if "n_blown_up" in grid else pd.Series(0, index=grid.index)
    runs = [np.concatenate([np.where(e > BLOWN_UP, 0.0, e), np.zeros(int(n))])
            for e, n in zip(grid["seed_errs"], extra)]
    points = pooled_mean(grid.assign(seed_errs=runs))
    return points[points["err"] > 0].reset_index(drop=True)


def pooled_rms(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (L, M, D), sqrt(mean of every run's error^2): the tool's pooling of seeds, over draws too."""
    from ..analysis.fitting import pooled_mean

    points = pooled_mean(grid.assign(seed_errs=[np.asarray(e, dtype=float) ** 2 for e in grid["seed_errs"]]))
    return points.assign(err=np.sqrt(points["err"]))


POOL = {"authors": pooled_authors, "rms": pooled_rms}


def with_blown_up_runs(con, sweep: str, grid: pd.DataFrame, metric: str, step: int | None) -> pd.DataFrame:
    """``grid`` with ``n_blown_up``: per (L, M, D, problem draw), the seeds the store marks diverged
    that have no finite ``metric`` row with status ok at ``step`` (the tool ends a diverged seed's
    rows, where the notebook keeps the run and counts it as 0)."""
    from ..analysis.data import blown_up_counts

    if con is None or step is None or "problem_seed" not in grid or grid.empty:
        return grid.assign(n_blown_up=0)
    counts = blown_up_counts(con, sweep, metric, step)
    if counts.empty:
        return grid.assign(n_blown_up=0)
    keys = ["L", "M", "D", "problem_seed"]
    counts = counts.astype({k: grid[k].dtype for k in keys})
    # a draw whose every seed blew up has no row in grid: its zeros still count at the grid's points
    counts = counts.merge(grid[["L", "M", "D"]].drop_duplicates(), on=["L", "M", "D"])
    out = grid.drop(columns=["n_blown_up"], errors="ignore").merge(counts, on=keys, how="outer")
    out["seed_errs"] = [e if isinstance(e, np.ndarray) else np.zeros(0) for e in out["seed_errs"]]
    return out.assign(n_blown_up=out["n_blown_up"].fillna(0).astype(int))


__all__ = ["BLOWN_UP", "DEFAULT_POOLING", "OPTIONS", "POOL", "POOLINGS", "describe", "pooled_authors", "pooled_rms",
           "read_pooling", "with_blown_up_runs"]
