"""The answer a sweep gives so far, as intervals: for a sweep with an ``lr`` or ``alpha`` axis each
slice's optimum and the transfer law across the depths and widths it varies (``explorer optimum``
and ``explorer transfer``), else its default fit's parameters (``explorer fit``). The same
functions as those commands on the same rows, so the final answer is theirs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..analysis.fitting import fit_sweep
from ..analysis.laws import DEFAULT_FORM
from ..analysis.hyper import axis_runs, optima, transfer
from ..errors import UsageError

AXES = ("lr", "alpha")  # an axis whose optimum is the answer, in this order
ACROSS = ("L", "M")


@dataclass(frozen=True)
class Interval:
    """One number of the answer with its 95% interval (``low``/``high`` None: none)."""

    name: str  # e.g. "lr* (L=16, preset=mlu)", "delta (preset=mlu)", "a"
    estimate: float | None
    low: float | None
    high: float | None
    note: str = ""  # an optimum's edge ("below 0.125"), a transfer verdict

    @property
    def width(self) -> float | None:
        if self.low is None or self.high is None or not all(map(math.isfinite, (self.low, self.high))):
            return None
        return self.high - self.low

    def as_dict(self) -> dict:
        return {"name": self.name, "estimate": self.estimate, "low": self.low, "high": self.high, "note": self.note}


def _number(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _label(row: dict, columns) -> str:
    parts = [f"{c}={row[c]}" for c in columns if row.get(c) is not None]
    return f" ({', '.join(parts)})" if parts else ""


def answer_axis(axes: dict[str, int]) -> str | None:
    """The optimum's axis of a sweep whose columns take ``axes[column]`` distinct values."""
    return next((axis for axis in AXES if axes.get(axis, 0) > 1), None)


def compute_answer(con, sweep: str, axes: dict[str, int], *, n_boot: int = 200, seed: int = 0,
                   metric: str | None = None) -> tuple[str, list[Interval], str | None]:
    """``(kind, intervals, why not)`` of the rows on ``con``: kind ``optima`` or ``fit``; a sweep
    whose rows cannot answer yet gives no intervals and the reason in one line."""
    axis = answer_axis(axes)
    try:
        if axis is not None:
            return "optima", _optima(con, sweep, axis, axes, n_boot, seed, metric or "loss"), None
        result = fit_sweep(con, sweep, DEFAULT_FORM, metric=metric or "err_out", n_boot=n_boot, seed=seed)
    except (UsageError, ValueError, ArithmeticError) as exc:  # too few rows yet, an axis not varied yet
        return ("optima" if axis else "fit"), [], str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    rows = result.rows().to_dict("records")
    return "fit", [Interval(r["parameter"], _number(r["estimate"]), _number(r["ci_low"]), _number(r["ci_high"]))
                   for r in rows], None


def _optima(con, sweep: str, axis: str, axes: dict[str, int], n_boot: int, seed: int, metric: str) -> list[Interval]:
    found = optima(axis_runs(con, sweep, axis, metric=metric), n_boot=n_boot, seed=seed)
    found.sweep, found.where = sweep, None
    out = []
    for row in found.store_rows():
        note = f"{row['edge']} the grid" if row.get("edge") else ""
        out.append(Interval(f"{axis}*{_label(row, found.slice_columns)}", _number(row["optimum"]),
                            _number(row["ci_low"]), _number(row["ci_high"]), note))
    across = [a for a in ACROSS if axes.get(a, 0) > 1]
    if not across:
        return out
    law = transfer(found, across)
    group_columns = [c for c in found.slice_columns if c not in across]
    for row in law.store_rows():
        if row.get("parameter") in (None, "c"):
            continue
        out.append(Interval(f"{row['parameter']}{_label(row, group_columns)}", _number(row["optimum"]),
                            _number(row["ci_low"]), _number(row["ci_high"]), row.get("verdict") or ""))
    return out
