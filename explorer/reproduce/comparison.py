"""The companion notebook's model comparison as a claim (``Claim.kind == "compare"``).

``plt_cvg_rate`` (cells 21-22) fits the output error with the right rate, sqrt(a (D/(LM))^2 + b/D),
and with the hidden state's, sqrt(a D/(LM) + b/D), to the same points and shows both. The claim
fits both by the authors' loss (unweighted least squares on err, bounds >= 0) to the pooled points
and measures how much better the right one fits: RSS(wrong) / RSS(right), with a 95 % interval over
the problem draws (resample the draws, pool, refit both from the point fits; Student's t in log
with G - 1 degrees of freedom, as the tool's other intervals over draws).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .pooling import POOL
from .verdicts import CONSISTENT, DISAGREES, NOT_MEASURED, finite


def rss(form: str, points: pd.DataFrame, start: dict | None = None) -> tuple[float, dict]:
    """(sum of squares of err - law, the constants) of ``form`` fitted to ``points`` by the
    authors' loss (unweighted least squares, bounds >= 0), from ``start`` (default: 1 for each)."""
    from ..analysis.laws import resolve_form
    from ..analysis.fitting import least_squares_on_err

    _, expr = resolve_form(form)
    start = start or {n: 1.0 for n in expr.parameters}
    constants = least_squares_on_err(form, points, start)
    theta = np.array([constants[n] for n in expr.parameters])
    L, M, D, err = (points[c].to_numpy(float) for c in ("L", "M", "D", "err"))
    return float(np.sum((expr(theta, L, M, D) - err) ** 2)), constants


def measure_comparison(claim, grid: pd.DataFrame, row: dict, n_boot: int, pooling: str, seed: int = 0) -> dict:
    """The notebook's right-against-wrong comparison: both laws fitted (authors' loss) to the
    pooled points; value RSS(wrong) / RSS(right), 95 % interval over the problem draws (resample
    the draws, pool, refit both from the point fits; Student's t in log, G - 1 degrees of freedom)."""
    from scipy import stats

    from ..analysis.fitting import MIN_DRAWS

    pool = POOL[pooling]
    points = pool(grid)
    draws = np.sort(grid["problem_seed"].unique()) if "problem_seed" in grid else np.array([])
    if len(points) < 4 or len(draws) < MIN_DRAWS:
        row.update(verdict=NOT_MEASURED, reason=f"{len(points)} points, {len(draws)} draws: the comparison needs at "
                                                f"least 4 points and {MIN_DRAWS} draws")
        return row
    rss_right, right = rss(claim.form, points)
    rss_wrong, wrong = rss(claim.wrong, points)
    by_draw = {d: grid[grid["problem_seed"] == d] for d in draws}
    rng = np.random.default_rng(seed)
    logs = []
    for _ in range(n_boot):
        sample = pool(pd.concat([by_draw[d] for d in rng.choice(draws, len(draws))], ignore_index=True))
        r, w = rss(claim.form, sample, right)[0], rss(claim.wrong, sample, wrong)[0]
        if r > 0 and w > 0:
            logs.append(math.log(w / r))
    ratio = rss_wrong / rss_right if rss_right > 0 else math.inf
    low = high = math.nan
    if len(logs) >= 2 and math.isfinite(ratio):
        t = float(stats.t.ppf(0.975, len(draws) - 1))
        sd = float(np.std(logs, ddof=1))
        low, high = ratio * math.exp(-t * sd), ratio * math.exp(t * sd)
    total = float(np.sum((points["err"] - points["err"].mean()) ** 2))
    r2 = (lambda x: 1 - x / total if total > 0 else math.nan)
    fits = f"{_fitted('right', claim.form, rss_right, r2, right)}; {_fitted('wrong', claim.wrong, rss_wrong, r2, wrong)}"
    row.update(value=ratio, ci_low=low, ci_high=high, n_points=len(points),
               note=f"{fits}; interval: {len(logs)} bootstrap resamples of the {len(draws)} draws")
    if not (finite(low) and finite(high)):
        row.update(verdict=NOT_MEASURED, reason="no interval (the bootstrap over draws gave none)")
    elif low > claim.paper:
        row.update(verdict=CONSISTENT, reason=f"RSS(wrong) / RSS(right) = {ratio:.3g}, 95 % interval [{low:.3g}, "
                                              f"{high:.3g}] above {claim.paper:g}: the right rate fits better")
    elif high < claim.paper:
        row.update(verdict=DISAGREES, reason=f"RSS(wrong) / RSS(right) = {ratio:.3g}, 95 % interval [{low:.3g}, "
                                             f"{high:.3g}] below {claim.paper:g}: the wrong rate fits better")
    else:
        row.update(verdict=NOT_MEASURED, reason=f"RSS(wrong) / RSS(right) = {ratio:.3g}, 95 % interval [{low:.3g}, "
                                                f"{high:.3g}] holds {claim.paper:g}: these points do not tell the "
                                                "rates apart")
    return row


def _fitted(which: str, form: str, total: float, r2, constants: dict) -> str:
    values = ", ".join(f"{k} = {v:.3g}" for k, v in constants.items())
    return f"{which} {form}: RSS {total:.3g}, R^2 {r2(total):.4f} ({values})"


__all__ = ["measure_comparison", "rss"]
