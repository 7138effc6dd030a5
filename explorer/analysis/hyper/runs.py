"""A sweep's runs along one hyperparameter axis, read from the store's ``metrics`` view: each
(slice, problem draw, seed, grid value)'s metric at the step asked, a run that diverged as +inf.

A seed that diverges at step k has rows up to k (the last with status ``diverged``) and none after
(docs/store.md), so at a later step it has no row: it is read as diverged (+inf, worse than every
finite value), never as missing. A failed trial (rows with status ``failed``) is missing (NaN).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...bounds import bounded_items
from ...errors import FitError, SweepDataError, UsageError
from ...formatting import fmt
from ..data import (DRAW_COLUMN, GRID_COLUMNS, HELD_OUT_METRICS, axis_run_rows, column_values, described, plain_value,
                    require_measured, require_sweep_rows, sweep_is, table_columns, where_clause)
from .resample import Runs

SHAPE_AXES = ("L", "M", "D")
AXIS_COLUMNS = SHAPE_AXES + GRID_COLUMNS


def numeric_metrics(con) -> list[str]:
    """The floating-point columns of ``metrics`` that are not configuration (the metrics a run measured)."""
    columns = described(con)
    return [str(n) for n, t in zip(columns["column_name"], columns["column_type"])
            if str(t) in ("DOUBLE", "FLOAT") and str(n) not in AXIS_COLUMNS and str(n) != "wall_s"]


def varying_axes(con, sweep: str, where: str | None) -> dict:
    """Every grid column (L, M, D included) that takes more than one value: column -> its values."""
    columns = table_columns(con)
    wanted = [c for c in AXIS_COLUMNS if c in columns]
    found = column_values(con, wanted, f"{sweep_is(sweep)}{where_clause(where)}")
    return {c: [plain_value(v) for v in frame["v"]] for c, frame in found.items() if len(frame) > 1}


def check_axis(axis: str, varying: dict, sweep: str, con, where: str | None) -> None:
    """Refuse an axis the sweep does not vary, or that is not numeric and positive (a log axis).

    Raises:
        FitError: one line naming the axis and what the sweep varies.
    """
    if axis in varying:
        values = varying[axis]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values):
            raise FitError(f"--axis {axis}: its values ({', '.join(fmt(v, 'g') for v in values)}) are not all "
                           "positive numbers; the optimum is located on a log axis")
        return
    if axis not in AXIS_COLUMNS or axis not in table_columns(con):
        raise FitError(f"--axis {axis}: not a grid axis; the sweep varies {', '.join(varying) or 'nothing'}")
    held = column_values(con, [axis], f"{sweep_is(sweep)}{where_clause(where)}")[axis]["v"]
    raise FitError(f"sweep {sweep!r} has no {axis} axis ({axis} is {', '.join(fmt(plain_value(v), 'g') for v in held)}"
                   f" throughout); it varies {', '.join(varying) or 'nothing'}")


def slice_columns(axis: str, varying: dict, by) -> list[str]:
    """The columns that define a slice: ``by`` when given (every other varying column must be held
    with ``--where``; a column given twice counts once), else every varying column but ``axis``.

    Raises:
        FitError: a ``by`` column the sweep does not vary, or a varying column left out of ``by``;
            more than ``MAX_LIST_ITEMS`` columns.
    """
    others = [c for c in varying if c != axis]
    if by is None:
        return others
    try:
        by = list(dict.fromkeys(b for b in bounded_items("--by", by) if b))  # L,L is L
    except UsageError as exc:
        raise FitError(str(exc)) from None
    unknown = [b for b in by if b not in others]
    if unknown:
        raise FitError(f"--by {unknown[0]}: the sweep does not vary it besides {axis} (it varies "
                       f"{', '.join(others) or 'nothing else'})")
    left = [c for c in others if c not in by]
    if left:
        detail = "; ".join(f"{c}: {', '.join(fmt(v, 'g') for v in varying[c])}" for c in left)
        raise FitError(f"the sweep also varies {', '.join(left)} ({detail}): add it to --by, or hold one value "
                       f"with --where, e.g. --where \"{left[0]} = {fmt(varying[left[0]][0], 'g')}\"")
    return by


def _check_step(frame: pd.DataFrame, step: int | None) -> None:
    """Refuse a step past every trial's last (SweepDataError)."""
    if step is not None and step > int(frame["steps"].max()):
        raise SweepDataError(f"--step {step}: the sweep's trials run {int(frame['steps'].max())} steps")


def run_values(frame: pd.DataFrame) -> np.ndarray:
    """Each run's value: its metric where its row at the step is ok and finite, +inf where it
    diverged at or before the step, NaN where it failed or has no row there."""
    ok = (frame["status_k"] == "ok").to_numpy()
    value = frame["value"].astype(float).to_numpy()
    diverged = ((frame["status_k"] == "diverged") | (frame["status_k"].isna() & (frame["last_status"] == "diverged")
                                                    & (frame["last_step"] < frame["at_step"]))).to_numpy()
    out = np.where(ok & np.isfinite(value), value, np.nan)
    out = np.where(ok & np.isposinf(value), np.inf, out)
    return np.where(diverged, np.inf, out)


def axis_runs(con, sweep: str, axis: str, metric: str = "loss", step: int | None = None, by=None,
              where: str | None = None) -> Runs:
    """The runs of ``sweep`` along ``axis``, sliced by the other varying axes (or ``by``).

    Raises:
        FitError: an axis the sweep does not vary (or not a positive number), a bad ``by``, an unknown
            metric. SweepDataError: an unknown sweep, a step past the trials' last. QueryError: a bad ``where``.
    """
    require_sweep_rows(con, sweep, where)
    metrics = numeric_metrics(con)
    if metric not in metrics:
        raise FitError(f"--metric {metric}: not a stored metric; use one of {', '.join(metrics)}")
    require_measured(con, sweep, metric)
    varying = varying_axes(con, sweep, where)
    check_axis(axis, varying, sweep, con, where)
    columns = slice_columns(axis, varying, by)
    draw = DRAW_COLUMN if DRAW_COLUMN in table_columns(con) else None
    if step is not None and not (isinstance(step, (int, np.integer)) and step >= 0):
        raise SweepDataError(f"--step must be a non-negative integer, got {step!r}")
    frame = axis_run_rows(con, sweep, [*columns, axis, *([draw] if draw else []), "seed"], metric, step, where)
    _check_step(frame, step)
    if metric in HELD_OUT_METRICS and frame["value"].isna().all():
        raise FitError(f"--metric {metric}: sweep {sweep!r} has no held-out set ([problem] test_samples = 0); "
                       "set test_samples with data = \"teacher\"")
    frame["run_value"] = run_values(frame)
    frame["draw"] = frame[draw].map(plain_value) if draw else 0
    slices = frame[columns].drop_duplicates().sort_values(columns).reset_index(drop=True) if columns \
        else pd.DataFrame(index=[0])
    slice_of = {tuple(plain_value(v) for v in row): j for j, row in enumerate(slices.itertuples(index=False))}
    grid = np.array(sorted({float(v) for v in frame[axis]}))
    draws = sorted(set(frame["draw"]), key=str)
    seeds = {d: sorted(set(frame.loc[frame["draw"] == d, "seed"])) for d in draws}
    values = np.full((len(slices), len(draws), max(len(s) for s in seeds.values()), len(grid)), np.nan)
    for row, value in zip(frame.itertuples(index=False), frame["run_value"]):
        record = row._asdict()
        j = slice_of[tuple(plain_value(record[c]) for c in columns)] if columns else 0
        g = draws.index(record["draw"])
        values[j, g, seeds[record["draw"]].index(record["seed"]), np.searchsorted(grid, float(record[axis]))] = value
    notes = []
    failed = int((frame["last_status"] == "failed").sum())
    if failed:
        notes.append(f"{failed} run(s) of failed trials left out (missing, not diverged)")
    return Runs(axis, metric, step, grid, slices[columns] if columns else slices.iloc[:, :0], values,
                tuple(draws), notes)


__all__ = ["AXIS_COLUMNS", "axis_runs", "check_axis", "numeric_metrics", "run_values", "slice_columns",
           "varying_axes"]
