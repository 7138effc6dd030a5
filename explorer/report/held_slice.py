"""The report's robustness: a part it cannot make is one line, never the end of the report.

``made`` runs one part (a chart, the shape advice, the local slopes) and keeps why it failed in
``report.not_made``; ``held_grid`` reads the slice the L, M, D fits hold and, when nothing trains
there (an lr held where every run diverged), names it in one line and holds the nearest slice that
trains (``training_slice``) instead.
"""
from __future__ import annotations

import numpy as np

from ..analysis.data import (final_step_clause, grid_errors, held_where, ok_rows_per_value, plain_value, status_counts,
                             table_columns, where_clause)
from ..errors import FitError, SweepDataError, UsageError
from ..formatting import fmt
from .contents import Report


# What a part of the report that cannot be made raises: the analysis's one-line errors, and the
# numerical ones of a slice too small or degenerate to fit or draw.
MADE_ERRORS = (UsageError, ValueError, ZeroDivisionError, np.linalg.LinAlgError)


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def made(report: Report, what: str, make):
    """``make()``, or None with ``what`` and why in ``report.not_made`` (one line in the summary)."""
    try:
        return make()
    except MADE_ERRORS as exc:
        report.not_made[what] = one_line(exc)
        return None


def held_words(fixed: dict) -> str:
    """'preset = completep, lr = 32' (the values the fits hold)."""
    return ", ".join(f"{k} = {fmt(v, 'g')}" for k, v in fixed.items())


def held_grid(report: Report, con, sweep: str, metric: str, step: int | None, where: str | None):
    """The per-point errors of the slice the L, M, D fits hold (``report.fixed``), or None when no
    slice has any. When the held slice has none (every run there diverged or failed: an lr held
    where nothing trains), the fits hold the slice nearest it that trains (``training_slice``),
    and one line names the slice left and what its trials did; values that no trial combines
    (grid cases: each preset on its own lr range) are replaced without a line."""
    fit_where = held_where(report.fixed, where)
    try:
        return grid_errors(con, sweep, metric=metric, step=step, where=fit_where), fit_where
    except (SweepDataError, FitError) as exc:
        if not report.fixed:
            report.not_made[f"the fits and charts of {metric}"] = one_line(exc)
            return None, fit_where
        counts = status_counts(con, sweep, fit_where)
        done = counts.get("diverged_trials", 0) + counts.get("failed_trials", 0)
        why = (f"nothing trains there: {counts.get('diverged_trials', 0)} of {counts.get('trials', 0)} trials "
               f"diverged, {counts.get('failed_trials', 0)} failed" if counts.get("trials") and done
               else one_line(exc))
        what = f"the fits and charts of {metric} on the held slice {held_words(report.fixed)}"
        other = training_slice(con, sweep, report.fixed, metric, step, where)
        if other is not None:
            try:
                grid = grid_errors(con, sweep, metric=metric, step=step, where=held_where(other, where))
            except (SweepDataError, FitError):
                grid = None
            if grid is not None:
                if counts.get("trials"):  # trials that do not train are said; values no trial combines are not
                    report.not_made[what] = f"{why}; they hold {held_words(other)} instead"
                report.fixed = other
                return grid, held_where(other, where)
        report.not_made[what] = why
        return None, fit_where


def training_slice(con, sweep: str, fixed: dict, metric: str, step: int | None, where: str | None) -> dict | None:
    """The values of the held columns whose slice has the most finite status-ok ``metric`` rows
    at the step; among equals, the one that keeps most of ``fixed``'s values, then the smallest.
    None: no slice has any."""
    columns = list(fixed)
    at_step, condition = final_step_clause(table_columns(con), sweep, step), where_clause(where)
    try:
        found = ok_rows_per_value(con, sweep, columns, metric, at_step, condition)
    except UsageError:
        return None
    if found.empty:
        return None
    records = [{c: plain_value(r[c]) for c in columns} | {"n": int(r["n"])} for r in found.to_dict("records")]
    kept = lambda r: sum(r[c] == fixed[c] for c in columns)  # noqa: E731
    best = max(records, key=lambda r: (r["n"], kept(r)))
    ties = [r for r in records if (r["n"], kept(r)) == (best["n"], kept(best))]
    chosen = min(ties, key=lambda r: tuple((v is None, str(type(v)), v if v is not None else 0)
                                           for v in (r[c] for c in columns)))
    return {c: chosen[c] for c in columns}


__all__ = ["MADE_ERRORS", "held_grid", "held_words", "made", "one_line", "training_slice"]
