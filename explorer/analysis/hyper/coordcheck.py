"""The coordinate check (``explorer coordcheck``; muP practice, docs/model.md section 4): how the
sizes of the hidden-state update and of the residual branch's output, per quarter of depth, scale
with width M and depth L at one step, and their exponents with seed-and-draw intervals.

Each run's size at step K is read from its metric row (``coord_update_b0..b3``,
``coord_branch_b0..b3``, ``feature_update``). Per group (every varying grid column but L and M,
e.g. preset, lr_scaling, alpha) each quantity is fitted as log size = c_draw + a log M + b log L
over the runs, an intercept per problem draw (a draw's data moves every size together). The 95%
intervals come from the hyper wing's bootstrap (``resample``): draws with replacement then seeds
within each chosen draw, picked once for every group and quantity, read by ``interval`` (the
fits' rule). A run with no finite positive size there (diverged, failed, a bin without a block,
step 0) is left out of that quantity.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import FitError, SweepDataError
from ...formatting import fmt
from ..data import coord_run_rows, non_null_counts, plain_value, require_sweep_rows, table_columns
from .resample import Runs, interval, resampled_runs
from .runs import varying_axes

COORD_BINS = 4  # trials.coordcheck.COORD_BINS: the store holds as many columns of each kind
COORD_KINDS = ("update", "branch")
COORD_COLUMNS = tuple(f"coord_{kind}_b{b}" for kind in COORD_KINDS for b in range(COORD_BINS))
QUANTITIES = COORD_COLUMNS + ("feature_update",)
SCALE_AXES = ("M", "L")  # the exponents fitted, in this order


@dataclass
class CoordSizes:
    """Each run's sizes at the step read: ``frame`` has the group columns, M, L, ``draw``, ``seed``
    and one column per quantity (NaN where not measured)."""

    sweep: str
    step: int | None
    groups: list
    axes: tuple  # the scale axes the sweep varies, among M and L
    quantities: tuple
    frame: pd.DataFrame

    def table(self) -> pd.DataFrame:
        """The geometric mean over runs of each quantity, per group and (M, L) point."""
        keys = self.groups + ["M", "L"]
        logged = self.frame[keys].copy()
        for q in self.quantities:
            value = self.frame[q].astype(float)
            logged[q] = np.log(value.where(value > 0))
        return np.exp(logged.groupby(keys, dropna=False).mean()).reset_index()


@dataclass
class CoordCheck:
    """The sizes and the fitted exponents: ``fits`` has one row per group, quantity and axis
    (``estimate``, ``ci_low``, ``ci_high``)."""

    sizes: CoordSizes
    fits: pd.DataFrame
    n_boot: int
    notes: list = field(default_factory=list)

    def lines(self) -> list[str]:
        """What ``explorer coordcheck`` prints: per group the size table, then each quantity's exponents."""
        s = self.sizes
        at = "each trial's last step" if s.step is None else f"step {s.step}"
        out = [f"coordinate check of sweep {s.sweep!r} at {at}: geometric mean over runs; update = RMS of "
               "h_l(k) - h_l(0), branch = RMS of the residual branch's output, mean over the blocks of each "
               "quarter of depth b0..b3",
               f"exponents: log size = c_draw + a log M + b log L, 95% intervals from {self.n_boot} "
               "resamples of draws, then seeds"]
        table = s.table()
        shown = [q for q in s.quantities if q in table]
        heads = [q.replace("coord_", "").replace("_b", " b") for q in shown]
        widths = [max(9, len(h) + 2) for h in heads]
        for key, rows in _grouped(table, s.groups):
            out.append(_label(s.groups, key) + ":")
            out.append("  " + f"{'M':>6}{'L':>6}" + "".join(f"{h:>{w}}" for h, w in zip(heads, widths)))
            for row in rows.itertuples(index=False):
                r = row._asdict()
                out.append("  " + f"{fmt(r['M'], 'g'):>6}{fmt(r['L'], 'g'):>6}"
                           + "".join(f"{fmt(r[q], '.3g'):>{w}}" for q, w in zip(shown, widths)))
            fits = self.fits
            for k, v in zip(s.groups, key):
                fits = fits[fits[k].map(plain_value) == v]
            for q, per in fits.groupby("quantity", sort=False):
                parts = [f"{a}^{fmt(f['estimate'], '.3f')} [{fmt(f['ci_low'], '.3f')}, {fmt(f['ci_high'], '.3f')}]"
                         for f in per.to_dict("records") for a in [f["axis"]]]
                out.append(f"  {q}: " + "  ".join(parts))
        return out + self.notes


def _grouped(frame: pd.DataFrame, groups: list):
    if not groups:
        yield (), frame
        return
    for key, rows in frame.groupby(groups, sort=True, dropna=False):
        yield tuple(plain_value(v) for v in (key if isinstance(key, tuple) else (key,))), rows


def _label(groups, key) -> str:
    return ", ".join(f"{c}={fmt(v, 'g')}" for c, v in zip(groups, key)) or "all"


def coord_sizes(con, sweep: str, step: int | None = None, where: str | None = None) -> CoordSizes:
    """Each run's coordinate-check sizes at ``step`` (None: each trial's last).

    Raises:
        SweepDataError: an unknown sweep, a bad step, a sweep whose rows hold no coordinate check
            (written before it was stored). FitError: a sweep varying neither M nor L.
    """
    require_sweep_rows(con, sweep, where)
    columns = table_columns(con)
    if step is not None and not (isinstance(step, (int, np.integer)) and step >= 0):
        raise SweepDataError(f"--step must be a non-negative integer, got {step!r}")
    varying = varying_axes(con, sweep, where)
    axes = tuple(a for a in SCALE_AXES if a in varying)
    if not axes:
        raise FitError(f"sweep {sweep!r} varies neither M nor L (it varies {', '.join(varying) or 'nothing'}): "
                       "the coordinate check measures how sizes scale with them")
    coords = [c for c in COORD_COLUMNS if c in columns]
    held = non_null_counts(con, sweep, coords, where)
    if not coords or int(held[coords].to_numpy().sum()) == 0:
        raise SweepDataError(f"sweep {sweep!r} has no coordinate check (its rows' coord_update and coord_branch "
                             "columns are null: written before they were stored); rerun it to measure them")
    quantities = tuple(q for q in QUANTITIES if q in columns)
    groups = [c for c in varying if c not in ("L", "M")]
    frame = coord_run_rows(con, sweep, columns, groups, quantities, step, where)
    if step is not None and step > int(frame["steps"].max()):
        raise SweepDataError(f"--step {step}: the sweep's trials run {int(frame['steps'].max())} steps")
    for g in groups:
        frame[g] = frame[g].map(plain_value)
    frame["draw"] = frame["draw"].map(plain_value)
    return CoordSizes(sweep, step, groups, axes, quantities, frame.drop(columns=["trial_key", "steps"]))


def _fit(y: np.ndarray, slot: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Least squares of y on an intercept per slot and the scale columns: the scale coefficients
    (NaN when the rows cannot fix them)."""
    keep = np.isfinite(y)
    y, slot, scales = y[keep], slot[keep], scales[keep]
    names = np.unique(slot)
    design = np.column_stack([(slot[:, None] == names[None, :]).astype(float), scales])
    if len(y) <= design.shape[1] or np.linalg.matrix_rank(design) < design.shape[1]:
        return np.full(scales.shape[1], np.nan)
    return np.linalg.lstsq(design, y, rcond=None)[0][len(names):]


def coord_exponents(sizes: CoordSizes, n_boot: int = 200, seed: int = 0) -> CoordCheck:
    """Fit every quantity's exponents in M and L per group, with seed-and-draw intervals."""
    frame = sizes.frame
    draws = sorted(set(frame["draw"]), key=str)
    seeds = {d: sorted(set(frame.loc[frame["draw"] == d, "seed"])) for d in draws}
    width = max(len(s) for s in seeds.values())
    points = frame[sizes.groups + ["M", "L"]].drop_duplicates().reset_index(drop=True)
    point_of = {tuple(r): j for j, r in enumerate(points.itertuples(index=False))}
    # values: (quantity, point, draw, seed + 1 padding), the log size, NaN where not measured
    values = np.full((len(sizes.quantities), len(points), len(draws), width + 1), np.nan)
    for row in frame.to_dict("records"):
        j = point_of[tuple(row[c] for c in points.columns)]
        g = draws.index(row["draw"])
        s = seeds[row["draw"]].index(row["seed"])
        for i, q in enumerate(sizes.quantities):
            v = row[q]
            values[i, j, g, s] = np.log(v) if v is not None and np.isfinite(v) and v > 0 else np.nan
    present = Runs("run", "size", sizes.step, np.ones(1), points, np.where(np.isfinite(values).any(axis=0), 1.0,
                                                                          np.nan)[:, :, :width, None])
    rng = np.random.default_rng(seed)
    picks = [resampled_runs(present, n_boot, rng, resample_draws) for resample_draws in (True, False)]
    scales = np.log(points[list(sizes.axes)].astype(float).to_numpy())
    slots = np.repeat(np.arange(len(draws)), width)
    observed_draws, observed_seeds = slots, np.tile(np.arange(width), len(draws))
    rows = []
    for key, members in _grouped(points.reset_index(), sizes.groups):
        idx = members["index"].to_numpy()
        point_col = np.repeat(np.arange(len(idx)), len(slots))
        for i, q in enumerate(sizes.quantities):
            block = values[i][idx]  # (points of the group, draws, seeds + 1)

            def fit(d, s):
                y = block[:, d, s].reshape(-1)
                return _fit(y, np.tile(slots, len(idx)), scales[idx][point_col])

            estimate = fit(observed_draws, observed_seeds)
            reps = [np.array([fit(d[b], s[b]) for b in range(n_boot)]) for d, s in picks]
            low, high = interval(estimate, reps[0], reps[1], len(draws), width)
            for a, axis in enumerate(sizes.axes):
                rows.append(dict(zip(sizes.groups, key), quantity=q, axis=axis, estimate=estimate[a],
                                 ci_low=low[a], ci_high=high[a]))
    fits = pd.DataFrame(rows, columns=sizes.groups + ["quantity", "axis", "estimate", "ci_low", "ci_high"])
    notes = []
    if not np.isfinite(fits["estimate"].astype(float)).any():
        notes.append("no exponent measured: no finite positive sizes at that step (step 0 has no update)")
    return CoordCheck(sizes, fits, n_boot, notes)


__all__ = ["COORD_COLUMNS", "QUANTITIES", "CoordCheck", "CoordSizes", "coord_exponents", "coord_sizes"]
