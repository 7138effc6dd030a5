"""The targets of an adaptive sweep, read from a fit: each parameter's 95% CI half-width in the
units its target is set in (relative for positive constants, fitted as log c; absolute for
exponents), and whether a CI measures anything at all."""
from __future__ import annotations

from collections.abc import Collection

import numpy as np


def positive_parameters(form: str) -> frozenset:
    """The positive constants of a law (``c1, c2, ...`` and a form's own, such as theory's a, b,
    c): their half-widths are relative (``target_halfwidth``). Empty for a form that does not parse."""
    from ..laws import resolve_form

    try:
        return frozenset(resolve_form(form)[1].positive)
    except Exception:  # a log written by another version: fall back to the c-constants
        return frozenset()


def is_positive(name: str, positive: Collection[str] | None) -> bool:
    from ..laws import POSITIVE

    return name in (positive or ()) or bool(POSITIVE.match(name))


def target_halfwidth(name: str, lo: float, hi: float, positive: Collection[str] | None = None) -> float:
    """A target's 95% CI half-width in the units its ``halfwidth`` is measured in.

    A positive constant (``c1, c2, ...``, or a name in ``positive``) is fitted as log c
    (``rms_fit``), and its half-width is relative: half the width of the CI of log c, so 0.1
    means about +-10 %; the selection ranks candidates in the same units. Any other parameter
    (an exponent) has the absolute half-width (hi - lo) / 2. Infinite when the CI has no finite
    ends (or a constant's CI does not lie above 0).
    """
    lo, hi = float(lo), float(hi)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return float("inf")
    if is_positive(name, positive):
        return float((np.log(hi) - np.log(lo)) / 2) if lo > 0 and hi > 0 else float("inf")
    return (hi - lo) / 2


def target_lines(targets: dict, halfwidth: float, positive: Collection[str] | None = None) -> list[str]:
    """``  a = 0.98 [0.90, 1.06]  half-width 0.08 (target 0.1: reached)`` per target; a positive
    constant's half-width is relative (``target_halfwidth``) and says so. A CI that measures
    nothing (``unmeasured``) is "not reached" whatever its width."""
    out = []
    for name, (est, lo, hi) in targets.items():
        hw = target_halfwidth(name, lo, hi, positive)
        kind = "relative half-width" if is_positive(name, positive) else "half-width"
        why = unmeasured(est, lo, hi)
        state = f"not reached: {why}" if why else "reached" if hw <= halfwidth else "not reached"
        out.append(f"  {name} = {est:.4g} [{lo:.4g}, {hi:.4g}]  {kind} {hw:.3g} (target {halfwidth:g}: {state})")
    return out


def unmeasured(est: float, lo: float, hi: float) -> str | None:
    """Why a target's CI measures nothing although it may be narrow, else None: no CI, a CI of
    width zero (every resample gave the same value: a parameter collapsed to its bound or to ~0),
    or a CI cut at the fit's search bound (``solver``: +-FREE_BOUND for exponents, exp(+-50)
    for constants), whose true width is unknown. Such a target is never "reached". (A logged
    target has no law to say whether it is a constant: both bounds are tried; a fit's own
    parameters go through the whole rule, ``unmeasured_in``.)"""
    from .measured import at_search_bound, zero_width

    if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(est)):
        return "no CI (the bootstrap gave none)"
    if zero_width(est, lo, hi):
        return "its CI has width zero (every resample gave the same value), not a measurement"
    if any(at_search_bound(v, False) or at_search_bound(v, True) for v in (est, lo, hi)):
        return "its CI reaches the fit's search bound, so its true width is unknown"
    return None


def halfwidth_of(result, name: str) -> float:
    """``target_halfwidth`` of a fit's parameter: relative for the law's positive constants."""
    return target_halfwidth(name, result.ci_low.get(name, np.nan), result.ci_high.get(name, np.nan),
                            result.law.positive)


def unmeasured_in(result, name: str) -> str | None:
    """Why a fit's parameter can reach no target, else None: not fitted, or not measured by the
    fit's rule (``FitResult.unmeasured``) for a reason other than its interval's width (the
    target's half-width judges that), or ``unmeasured`` of its interval (no CI)."""
    from .measured import interval_reason

    if name not in result.law.parameters:
        return result.unidentified.get(name, "not fitted")
    est, lo, hi = (float(v.get(name, np.nan)) for v in (result.estimate, result.ci_low, result.ci_high))
    why = result.unmeasured.get(name)
    positive = name in result.law.positive
    if why is not None and why == interval_reason(est, lo, hi, positive):  # not the Jacobian's verdict
        why = interval_reason(est, lo, hi, positive, width=False)
    return why or unmeasured(est, lo, hi)


def targets_of(result, names) -> dict:
    return {n: (float(result.estimate[n]), float(result.ci_low[n]), float(result.ci_high[n])) for n in names}


__all__ = ["halfwidth_of", "is_positive", "positive_parameters", "target_halfwidth", "target_lines", "targets_of",
           "unmeasured", "unmeasured_in"]
