"""Each slice's best value of a hyperparameter axis (``explorer optimum``): the located minimum
of the metric along the axis (``minimum``), its 95% seed-and-draw interval (``resample``), and the
rule that a minimum at the grid's edge is reported as "below 0.125" or "above 32", never as a value.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...formatting import fmt
from ..data import plain_value
from .minimum import ABOVE, BELOW
from .resample import Runs, interval, replicate_minima

EDGE_WORDS = {BELOW: "below", ABOVE: "above"}
OPTIMUM_COLUMNS = ("optimum", "ci_low", "ci_high", "edge", "grid_low", "grid_high", "n_draws", "n_runs",
                   "n_diverged")


@dataclass
class Optima:
    """The optima of every slice: ``table`` (the slice columns, then ``OPTIMUM_COLUMNS``), the
    runs they were read from and the bootstrap's replicates (log axis, slices x n_boot)."""

    runs: Runs
    table: pd.DataFrame
    outer: np.ndarray
    inner: np.ndarray
    n_boot: int
    seed: int
    sweep: str = ""
    where: str | None = None
    notes: list = field(default_factory=list)

    @property
    def slice_columns(self) -> list[str]:
        return list(self.runs.slices.columns)

    def request_id(self, what: str) -> str:
        """``<what>-<axis>-<12 hex>`` of what was asked (a rerun of the same request replaces it)."""
        asked = [self.sweep, self.runs.axis, self.runs.metric, self.runs.step, self.slice_columns, self.where,
                 self.n_boot, self.seed]
        digest = hashlib.sha256(json.dumps(asked, default=str).encode()).hexdigest()[:12]
        return f"{what}-{self.runs.axis}-{digest}"

    def store_rows(self) -> list[dict]:
        """The rows of kind ``optima`` (``store.schema``), one per slice."""
        out = []
        for _, row in self.table.iterrows():
            record = {c: plain_value(row[c]) for c in self.slice_columns}
            record.update(axis=self.runs.axis, metric=self.runs.metric, step=self.runs.step, parameter=None,
                          across=None, verdict=None, n_boot=int(self.n_boot), note="",
                          **{c: plain_value(row[c]) for c in OPTIMUM_COLUMNS})
            for c in ("n_draws", "n_runs", "n_diverged"):
                record[c] = int(record[c])
            out.append(record)
        return out

    def lines(self) -> list[str]:
        """What ``explorer optimum`` prints: a line per slice, then the notes."""
        axis = self.runs.axis
        step = "each trial's last step" if self.runs.step is None else f"step {self.runs.step}"
        out = [f"optimum of {axis} for {self.runs.metric} at {step}, per slice of "
               f"{', '.join(self.slice_columns) or 'the sweep'} (95% interval: {self.n_boot} resamples of draws, "
               "then seeds)"]
        for _, row in self.table.iterrows():
            label = ", ".join(f"{c}={fmt(plain_value(row[c]), 'g')}" for c in self.slice_columns) or "all"
            out.append(f"  {label}: {describe(row, axis)}")
        out += [f"note: {line}" for line in self.runs.notes + self.notes]
        return out


def describe(row, axis: str) -> str:
    """One slice's optimum in words: ``lr* = 2.31 [1.62, 3.30]``, ``below 0.125`` or ``not measured``."""
    diverged = f" ({int(row['n_diverged'])} of {int(row['n_runs'])} runs diverged)" if row["n_diverged"] else ""
    if row["edge"] == "below":
        return f"{axis}* below {fmt(row['grid_low'], 'g')} (the lowest grid value is best){diverged}"
    if row["edge"] == "above":
        return f"{axis}* above {fmt(row['grid_high'], 'g')} (the highest grid value is best){diverged}"
    if not np.isfinite(float(row["optimum"])):
        return f"not measured (no grid value has a finite level){diverged}"
    return (f"{axis}* = {fmt(row['optimum'], '.3g')} [{fmt(row['ci_low'], '.3g')}, {fmt(row['ci_high'], '.3g')}]"
            f"{diverged}")


def optima(runs: Runs, n_boot: int = 200, seed: int = 0) -> Optima:
    """Locate each slice's minimum along ``runs.axis`` with its 95% interval.

    Returns:
        ``Optima``; ``optimum`` is None at an edge (``edge`` says which) or where nothing is finite,
        and the interval is clipped to the slice's grid range (None at an edge).
    """
    location, where = runs.observed()
    outer, inner = replicate_minima(runs, n_boot, seed)
    low, high = interval(location, outer.T, inner.T, runs.n_draws, int(max(runs.seeds_per_draw().max(), 1)))
    present = ~np.isnan(runs.values)
    grid_held = present.any(axis=(1, 2))  # (slices, grid)
    records = []
    for j in range(len(runs.slices)):
        held = runs.grid[grid_held[j]]
        lo_grid, hi_grid = (float(held.min()), float(held.max())) if held.size else (np.nan, np.nan)
        inside = bool(np.isfinite(location[j])) and where[j] not in EDGE_WORDS
        clip = (np.log(lo_grid), np.log(hi_grid)) if held.size else (-np.inf, np.inf)
        records.append({
            "optimum": float(np.exp(location[j])) if inside else None,
            "ci_low": float(np.exp(np.clip(low[j], *clip))) if inside and np.isfinite(low[j]) else None,
            "ci_high": float(np.exp(np.clip(high[j], *clip))) if inside and np.isfinite(high[j]) else None,
            "edge": EDGE_WORDS.get(int(where[j])) if np.isfinite(location[j]) else None,
            "grid_low": lo_grid, "grid_high": hi_grid,
            "n_draws": int(present[j].any(axis=(1, 2)).sum()),
            "n_runs": int(present[j].sum()),
            "n_diverged": int(np.isposinf(runs.values[j]).sum()),
        })
    table = pd.concat([runs.slices.reset_index(drop=True), pd.DataFrame(records, columns=OPTIMUM_COLUMNS)], axis=1)
    for column in ("optimum", "ci_low", "ci_high"):  # NaN where None: a column of all edges stays numeric
        table[column] = pd.to_numeric(table[column]).astype(float)
    return Optima(runs, table, outer, inner, n_boot, seed)


__all__ = ["EDGE_WORDS", "OPTIMUM_COLUMNS", "Optima", "describe", "optima"]
