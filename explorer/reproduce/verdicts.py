"""The grades of ``explorer reproduce``: how one measured number compares with one paper's claim.

Four grades, each with a reason that is always printed:

- **consistent**: the paper's value (in our units, after the claim's documented conversion) lies
  inside our 95 % interval, and that interval is informative: for a constant, ci_high / ci_low
  <= ``INFORMATIVE_RATIO``; for an exponent, half-width <= ``INFORMATIVE_HALFWIDTH``.
- **close, CI excludes**: the estimate is within the claim's stated factor of the paper's value
  (a constant) or within ``factor`` of it additively (an exponent), but the informative interval
  leaves the paper's value out. The reason gives the ratio and the distance in standard errors.
- **not measured**: nothing to compare: no estimate, no interval, an interval of width zero
  (every resample gave the same value: a parameter at its bound), an uninformative interval, or a
  fit whose own R^2 says the law does not explain the grid.
- **disagrees**: everything else.
- **not comparable at this scale**: a fitted constant measured on a sub-grid of the paper's (a
  smaller scale): a constant fitted on one region is no evidence about another region's, so it
  is reported, not graded (``not_comparable``).

An exponent the paper *bounds* (a theorem's upper bound, not a rate it states: the sampling
term's D exponent under the sqrt(D/(LM)) bound) has three grades of its own
(``bound_verdict``), so that a bound that holds is not mistaken for a bound that is reached:

- **tight**: the informative interval holds the bound's exponent and leaves out every value
  more than ``TIGHT_MARGIN`` below it: the data reach the bound.
- **consistent with the bound**: the interval lies below the bound's exponent, or holds it
  together with values notably smaller: the bound holds, and nothing says it is reached.
- **exceeds the bound**: the whole interval lies above the bound's exponent.

An uninformative interval (half-width above ``INFORMATIVE_HALFWIDTH``) is *not measured*, as for
any exponent.

A *negligible* claim (a term the paper finds ~0) is consistent only when the interval's upper end
shows the term below a stated share of err^2 at every fitted point (``negligible_verdict``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..analysis.fitting import Z95
from ..formatting import format_percent

CONSISTENT = "consistent"
CLOSE = "close, CI excludes"
NOT_MEASURED = "not measured"
DISAGREES = "disagrees"
NOT_COMPARABLE = "not comparable at this scale"
TIGHT = "tight"
WITHIN_BOUND = "consistent with the bound"
EXCEEDS_BOUND = "exceeds the bound"
BOUND_GRADES = (TIGHT, WITHIN_BOUND, EXCEEDS_BOUND)  # an exponent against a theorem's upper bound
GRADES = (CONSISTENT, CLOSE, NOT_MEASURED, DISAGREES, NOT_COMPARABLE, *BOUND_GRADES)

INFORMATIVE_RATIO = 3.0  # a constant's CI wider than ci_high / ci_low = 3 does not measure it
INFORMATIVE_HALFWIDTH = 0.15  # an exponent's CI wider than +-0.15 does not measure it
# "notably smaller" than a bound's exponent: more than this below it (the rate claims' "close"
# tolerance: a bound is tight when the data tell it from every exponent not close to it)
TIGHT_MARGIN = 0.1
ZERO_WIDTH = 1e-9  # relative width below which an interval is "zero width"


@dataclass(frozen=True)
class Verdict:
    grade: str
    reason: str


def finite(x) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _interval_problem(estimate, ci_low, ci_high) -> str | None:
    """Why an interval measures nothing, or None."""
    if not finite(estimate):
        return "no estimate (the fit or measurement failed)"
    if not (finite(ci_low) and finite(ci_high)):
        return "no interval (the bootstrap gave none)"
    if ci_high - ci_low <= ZERO_WIDTH * max(abs(estimate), abs(ci_low), abs(ci_high), 1e-300):
        return (f"the interval [{ci_low:.3g}, {ci_high:.3g}] has width zero: every resample gave the same value "
                "(a parameter at its bound), not a measurement")
    return None


def constant_verdict(paper: float, estimate, ci_low, ci_high, *, factor: float | None = None,
                     unexplained: str | None = None) -> Verdict:
    """A positive constant against the paper's (both in the paper's units). ``unexplained``: the
    fit's own sentence that its law does not explain the grid (then not measured)."""
    problem = _interval_problem(estimate, ci_low, ci_high)
    if problem:
        return Verdict(NOT_MEASURED, problem)
    if unexplained:
        return Verdict(NOT_MEASURED, unexplained)
    if not (ci_low > 0 and ci_high / ci_low <= INFORMATIVE_RATIO):
        spread = f"{ci_high / ci_low:.3g}x" if ci_low > 0 else "to zero or below"
        return Verdict(NOT_MEASURED, f"the 95 % interval [{ci_low:.3g}, {ci_high:.3g}] spans {spread} (informative: "
                                     f"<= {INFORMATIVE_RATIO:g}x): this grid does not determine the constant")
    ratio = estimate / paper
    if ci_low <= paper <= ci_high:
        return Verdict(CONSISTENT, f"the paper's {paper:.3g} lies in [{ci_low:.3g}, {ci_high:.3g}] "
                                   f"(ratio ours / paper {ratio:.3g})")
    se_log = math.log(ci_high / ci_low) / (2 * Z95)
    n_se = abs(math.log(estimate / paper)) / se_log if estimate > 0 and se_log > 0 else math.inf
    where = f"ratio ours / paper {ratio:.3g}, {n_se:.1f} standard errors (in log) from the paper's {paper:.3g}"
    if factor is not None and estimate > 0 and 1 / factor <= ratio <= factor:
        return Verdict(CLOSE, f"{where}; within the stated factor {factor:g}")
    return Verdict(DISAGREES, where + (f"; outside the stated factor {factor:g}" if factor else ""))


def _exponent_not_measured(estimate, ci_low, ci_high, unexplained: str | None) -> Verdict | None:
    """NOT_MEASURED with its reason when an exponent's interval cannot grade it (no interval, an
    unexplained point, a half-width above ``INFORMATIVE_HALFWIDTH``), else None."""
    problem = _interval_problem(estimate, ci_low, ci_high)
    if problem:
        return Verdict(NOT_MEASURED, problem)
    if unexplained:
        return Verdict(NOT_MEASURED, unexplained)
    half = (ci_high - ci_low) / 2
    if half > INFORMATIVE_HALFWIDTH:
        return Verdict(NOT_MEASURED, f"the 95 % interval [{ci_low:.3g}, {ci_high:.3g}] has half-width {half:.3g} "
                                     f"(informative: <= {INFORMATIVE_HALFWIDTH:g}): this grid does not determine the exponent")
    return None


def exponent_verdict(paper: float, estimate, ci_low, ci_high, *, tolerance: float | None = None,
                     unexplained: str | None = None) -> Verdict:
    """An exponent against the paper's: informative when the half-width is <= 0.15; close when
    |ours - paper| <= ``tolerance`` but outside the interval."""
    unmeasured = _exponent_not_measured(estimate, ci_low, ci_high, unexplained)
    if unmeasured:
        return unmeasured
    half = (ci_high - ci_low) / 2
    if ci_low <= paper <= ci_high:
        return Verdict(CONSISTENT, f"the paper's {paper:.3g} lies in [{ci_low:.3g}, {ci_high:.3g}]")
    n_se = abs(estimate - paper) / (half / Z95)
    where = f"ours - paper = {estimate - paper:+.3g}, {n_se:.1f} standard errors"
    if tolerance is not None and abs(estimate - paper) <= tolerance:
        return Verdict(CLOSE, f"{where}; within the stated tolerance {tolerance:g}")
    return Verdict(DISAGREES, where)


def bound_verdict(bound: float, estimate, ci_low, ci_high, *, margin: float = TIGHT_MARGIN,
                  unexplained: str | None = None) -> Verdict:
    """An exponent against a theorem's upper bound on it (``bound``): tight, consistent with the
    bound, exceeds the bound, or not measured (an uninformative interval), with the reason."""
    unmeasured = _exponent_not_measured(estimate, ci_low, ci_high, unexplained)
    if unmeasured:
        return unmeasured
    half = (ci_high - ci_low) / 2
    interval = f"[{ci_low:.3g}, {ci_high:.3g}]"
    if ci_low > bound:
        n_se = (estimate - bound) / (half / Z95)
        return Verdict(EXCEEDS_BOUND, f"the interval {interval} lies above the bound's {bound:.3g} "
                                      f"({n_se:.1f} standard errors)")
    if ci_high < bound:
        return Verdict(WITHIN_BOUND, f"the interval {interval} lies below the bound's {bound:.3g}: the bound "
                                     "holds and is not reached")
    if ci_low >= bound - margin:
        return Verdict(TIGHT, f"the interval {interval} holds the bound's {bound:.3g} and leaves out every "
                              f"value below {bound - margin:.3g}: the bound is reached")
    return Verdict(WITHIN_BOUND, f"the interval {interval} holds the bound's {bound:.3g} and values down to "
                                 f"{ci_low:.3g}, more than {margin:g} below it: the bound holds, and this grid "
                                 "cannot say whether it is reached")


def negligible_verdict(share_estimate, share_low, share_high, share_limit: float, *, estimate=None, ci_low=None,
                       ci_high=None, unexplained: str | None = None) -> Verdict:
    """A term the paper finds negligible: ``share_*`` are the largest share of err^2 the term
    takes at any fitted point, at the estimate and at the interval's ends. Consistent when even
    the upper end stays below ``share_limit``; disagrees when even the lower end is above it;
    else (the interval straddles the limit) not measured."""
    problem = _interval_problem(estimate, ci_low, ci_high)
    if problem:
        return Verdict(NOT_MEASURED, problem)
    if unexplained:
        return Verdict(NOT_MEASURED, unexplained)
    shares = (f"the term's largest share of err^2 over the fitted points: {format_percent(share_estimate)} at the "
              f"estimate, {format_percent(share_high)} at the interval's upper end (limit {format_percent(share_limit)})")
    if share_high <= share_limit:
        return Verdict(CONSISTENT, shares)
    if share_low > share_limit:
        return Verdict(DISAGREES, shares + f"; {format_percent(share_low)} even at the lower end")
    return Verdict(NOT_MEASURED, shares + ": the interval allows both a negligible and a sizeable term")


def bounds_verdict(values, low: float, high: float, what: str) -> Verdict:
    """Every value in [low, high] (a hand-set curve's ratios, a threshold): consistent, else
    disagrees; none: not measured."""
    values = [float(v) for v in values if finite(v)]
    if not values:
        return Verdict(NOT_MEASURED, f"no {what} measured")
    outside = [v for v in values if not low <= v <= high]
    if len(values) == 1:
        inside = "in" if not outside else "outside"
        return Verdict(DISAGREES if outside else CONSISTENT, f"{what} {values[0]:.3g} {inside} [{low:.3g}, {high:.3g}]")
    if not outside:
        return Verdict(CONSISTENT, f"every {what} ({len(values)}) in [{low:.3g}, {high:.3g}]")
    return Verdict(DISAGREES, f"{len(outside)} of {len(values)} {what}s outside [{low:.3g}, {high:.3g}] "
                              f"(from {min(values):.3g} to {max(values):.3g})")


def not_comparable(why: str) -> Verdict:
    """A constant fitted on another grid or region than the paper's: reported, not graded."""
    return Verdict(NOT_COMPARABLE, f"not comparable at this scale: {why}")


def headline(grades) -> str:
    """``2 consistent, 1 close (CI excludes), 1 not measured, 0 disagree``: each grade counted
    (then ``, 3 not comparable at this scale`` when some are, and ``; against a bound: 1 tight``
    when an exponent was graded against a bound)."""
    grades = list(grades)
    n = {g: grades.count(g) for g in GRADES}
    line = (f"{n[CONSISTENT]} consistent, {n[CLOSE]} close (CI excludes), {n[NOT_MEASURED]} not measured, "
            f"{n[DISAGREES]} disagree{'s' if n[DISAGREES] == 1 else ''}")
    line += f", {n[NOT_COMPARABLE]} {NOT_COMPARABLE}" if n[NOT_COMPARABLE] else ""
    bounds = [f"{n[g]} {g}" for g in BOUND_GRADES if n[g]]
    return line + (f"; against a bound: {', '.join(bounds)}" if bounds else "")


__all__ = ["BOUND_GRADES", "CLOSE", "CONSISTENT", "DISAGREES", "EXCEEDS_BOUND", "GRADES", "TIGHT", "TIGHT_MARGIN",
           "WITHIN_BOUND", "bound_verdict", "INFORMATIVE_HALFWIDTH", "INFORMATIVE_RATIO", "NOT_COMPARABLE",
           "NOT_MEASURED", "Verdict", "not_comparable", "bounds_verdict", "constant_verdict", "exponent_verdict", "finite", "headline",
           "negligible_verdict"]
