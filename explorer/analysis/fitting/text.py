"""A fit in words: the table ``explorer fit`` prints (``format_table``), the sentence saying how its
intervals were made (``interval_description``, the report shows it too) and the stability flags it
left out (``flag_summary``)."""
from __future__ import annotations

import math

import numpy as np

from ...formatting import fmt
from ..data import DRAW_COLUMN
from .measured import stated_law
from .result import FitResult


def format_table(result: FitResult) -> str:
    """Plain text: the law, each measured parameter with its 95% CI ("not measured" or "not
    fitted" for the others, the reason among the warnings), the quality numbers, the law stated
    with its measured terms, per-draw estimates of the measured parameters, then the warnings and
    notes."""
    held = ", ".join(f"{k} = {v}" for k, v in result.held.items())
    lines = [f"form {result.form}: err ~ {result.expression.text}"
             + (f"  (slice {held}: the sweep varies these too; choose with --where)" if held else ""),
             f"{'parameter':<10} {'estimate':>12} {'95% CI':>27}"]
    for row in result.table().itertuples():
        if row.parameter in result.not_measured:  # its reason is a warning: no estimate, no interval
            shown = "not measured" if result.not_measured[row.parameter].startswith("not measured") else "not fitted"
            lines.append(f"{row.parameter:<10} {shown:>12}")
            continue
        lines.append(f"{row.parameter:<10} {fmt(row.estimate, missing='nan'):>12} [{fmt(row.ci_low, missing='nan'):>11}, {fmt(row.ci_high, missing='nan'):>11}]")
    extra = "n/a" if math.isnan(result.extrapolation_error) else f"{100 * result.extrapolation_error:.1f}%"
    flagged = f", {result.n_flagged} flagged seeds left out{flag_summary(result)}" if result.n_flagged else ""
    if result.n_invalid:
        flagged += f", {result.n_invalid} seed rows with a NaN, infinite or negative error left out (see `explorer check`)"
    draws = f"{result.n_draws} problem draw{'s' if result.n_draws != 1 else ''} pooled"
    lines.append(f"R^2 (log) {result.r2_log:.3f}; {result.n_points} points fitted ({draws}), {result.n_excluded} "
                 f"floor-limited left out{flagged}; extrapolation error at the largest L*M: {extra}")
    lines.append(interval_description(result))
    lines.extend(stated_law(result))
    if result.tie is not None:
        lines.extend(result.tie.lines())
    if len(result.per_draw):
        wide = result.per_draw.pivot(index=DRAW_COLUMN, columns="parameter", values="estimate")
        names = [p for p in result.law.parameters if p in wide.columns and result.is_measured(p)]
        lines.append("per draw (each draw fitted alone): " + " ".join(f"{n:>10}" for n in names))
        for label, row in wide.iterrows():
            lines.append(f"  problem_seed {str(label):<6} " + " ".join(f"{fmt(row[n], missing='nan'):>10}" for n in names))
    lines.extend(f"warning: {w}" for w in result.warnings)
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines)


def interval_description(result: FitResult) -> str:
    """The one sentence saying how a fit's 95% intervals were made and what they cover, as
    ``explorer fit`` prints it and the report shows it (from ``ci_quantile`` and ``ci_sd``)."""
    if not result.ci_sd:
        return "no intervals (no resamples: --bootstrap 0)"
    if not any(np.isfinite(result.ci_low[p]) for p in result.law.parameters):
        return f"no intervals: {result.ci_sd} measured no spread (too few seeds or draws)"
    positive = [p for p in result.law.parameters if p in result.law.positive and result.is_measured(p)]
    scale = f" (on a log scale for {', '.join(positive)})" if positive else ""
    covers = ("the draw of data and embeddings and the seeds' noise" if result.n_draws > 1
              else "the seeds' noise only, not the draw of data and embeddings")
    return f"95% intervals: estimate +- {result.ci_quantile} x sd{scale}, the sd from {result.ci_sd}; they cover {covers}"


def format_flag_counts(counts: dict) -> str:
    """``init_noise 3, chaotic 1`` (empty when no flag was counted)."""
    return ", ".join(f"{name} {n}" for name, n in counts.items())


def flag_summary(result: FitResult) -> str:
    """`` (init_noise 3, chaotic 1; 2 points with every seed flagged not fitted)``: the seeds a fit
    left out for stability flags by flag name, and the points dropped whole ('' when none)."""
    parts = [format_flag_counts(result.flag_counts)] if getattr(result, "flag_counts", None) else []
    if getattr(result, "n_flagged_points", 0):
        parts.append(f"{result.n_flagged_points} point{'s' if result.n_flagged_points != 1 else ''} "
                     "with every seed flagged not fitted")
    return f" ({'; '.join(parts)})" if parts else ""


__all__ = ["flag_summary", "format_flag_counts", "format_table", "interval_description"]
