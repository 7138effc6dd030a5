"""A design's targets, kept where the designed sweep's fit finds them, and the fit's lines that
set each target against what the sweep achieved.

The store keeps no sweep's spec, so ``explorer design --out`` also writes its targets into the
pilot's store under the designed sweep's name, as a record of kind ``fits`` with form
``design`` and fit id ``design`` (a later design of the same name replaces it): per target
exponent, a row ``target_<name>`` (the asked 95% half-width) and a row ``predicted_<name>``
(the design's prediction). ``explorer fit`` on that sweep then prints, for the law the design
predicted (the decomposed fit of err_out),

    target a +- 0.2: achieved +- 0.144 (predicted +- 0.142), met
"""
from __future__ import annotations

import datetime as dt
import math

from ..analysis.laws import DEFAULT_FORM

DESIGN_FORM = "design"  # the form of a design's record in the fits kind (never a law of the registry)
DESIGN_FIT_ID = "design"
DESIGNED_LAW = (DEFAULT_FORM, "err_out")  # the fit a design predicts: its form and metric


def record_rows(sweep: str, targets: dict, predicted: dict, grid_points: int, described: str) -> list[dict]:
    """The fits-kind rows of a design of ``sweep``: ``target_<name>`` and ``predicted_<name>``
    per target, ``described`` (what was designed, from which pilot) in the warnings column."""
    now = dt.datetime.now(dt.timezone.utc)
    common = {"sweep": sweep, "fit_id": DESIGN_FIT_ID, "form": DESIGN_FORM, "metric": DESIGNED_LAW[1],
              "step": None, "ci_low": None, "ci_high": None, "r2_log": None, "n_points": int(grid_points),
              "n_excluded": 0, "extrapolation_error": None, "warnings": described, "created_at": now,
              "fit_key": DESIGN_FIT_ID, "data_hash": None}
    rows = []
    for name, target in targets.items():
        rows.append({**common, "parameter": f"target_{name}", "estimate": float(target)})
        rows.append({**common, "parameter": f"predicted_{name}", "estimate": float(predicted[name])})
    return rows


def write_record(store, sweep: str, rows: list[dict]) -> str | None:
    """Write a design's record; None when written, else why not (a read-only store: the spec is
    still written, its fit prints no targets)."""
    from ..store_access import store_errors
    from ..errors import UsageError

    try:
        with store_errors():
            store.write_fit(sweep, DESIGN_FIT_ID, rows)
    except (UsageError, OSError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def read_targets(con, sweep: str) -> dict:
    """name -> (target half-width, predicted half-width) of the design recorded for ``sweep``
    ({} when none: a sweep ``explorer design`` did not write, or a store without fits)."""
    from ..analysis.data import fit_parameters, view_names

    if "latest_fits" not in view_names(con):  # a connection without the fits views holds no design
        return {}
    rows = fit_parameters(con, sweep, DESIGN_FORM, DESIGN_FIT_ID)
    values = {str(p): float(v) for p, v in rows}
    return {p[len("target_"):]: (v, values.get("predicted_" + p[len("target_"):], math.nan))
            for p, v in values.items() if p.startswith("target_")}


def design_target_lines(targets: dict, result) -> list[str]:
    """Each target against the fit's achieved 95% half-width: met, missed or not measured. Empty
    when there is no target, or the fit is not the law the design predicted (a line says so)."""
    if not targets:
        return []
    if (result.form, result.metric) != DESIGNED_LAW:
        return [f"note: this sweep was designed for the {DESIGNED_LAW[0]} fit of {DESIGNED_LAW[1]} "
                f"(explorer fit --sweep {result.sweep}); its targets are not compared with a {result.form} fit"]
    out = []
    for name, (target, predicted) in targets.items():
        low, high = result.ci_low.get(name, math.nan), result.ci_high.get(name, math.nan)
        achieved = (high - low) / 2 if math.isfinite(low) and math.isfinite(high) else math.nan
        told = f" (predicted +- {predicted:.3g})" if math.isfinite(predicted) else ""
        if not math.isfinite(achieved):
            out.append(f"target {name} +- {target:g}: not measured{told}, missed")
        else:
            verdict = "met" if achieved <= target else "missed"
            out.append(f"target {name} +- {target:g}: achieved +- {achieved:.3g}{told}, {verdict}")
    return out


__all__ = ["DESIGNED_LAW", "DESIGN_FIT_ID", "DESIGN_FORM", "read_targets", "record_rows", "design_target_lines",
           "write_record"]
