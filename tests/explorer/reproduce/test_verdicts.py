"""explorer.reproduce.verdicts: the four grades of a reproduction, each with its reason."""
from __future__ import annotations

import math

import numpy as np
import pytest

from explorer.reproduce.verdicts import (CLOSE, CONSISTENT, DISAGREES, EXCEEDS_BOUND, NOT_MEASURED, TIGHT, TIGHT_MARGIN,
                                         WITHIN_BOUND, bound_verdict, bounds_verdict, constant_verdict, exponent_verdict,
                                         headline, negligible_verdict)


def test_a_constant_gets_each_of_the_four_grades():
    v = constant_verdict(0.673, 0.65, 0.55, 0.75, factor=1.15)
    assert v.grade == CONSISTENT and "0.673 lies in [0.55, 0.75]" in v.reason
    v = constant_verdict(0.673, 0.74, 0.71, 0.77, factor=1.15)  # 1.10x, outside a narrow interval
    assert v.grade == CLOSE and "ratio ours / paper 1.1" in v.reason and "standard errors" in v.reason
    v = constant_verdict(0.673, 0.962, 0.867, 1.07, factor=1.15)  # the row: 1.43x, CI excludes
    assert v.grade == DISAGREES and "1.43" in v.reason
    v = constant_verdict(0.0265, 0.0338, 1.44e-8, 7.92e4, factor=1.15)  # the output a
    assert v.grade == NOT_MEASURED and "does not determine" in v.reason


def test_the_old_fudge_is_gone_a_paper_value_outside_the_interval_is_never_consistent():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        paper = float(np.exp(rng.uniform(-3, 3)))
        lo = paper * float(np.exp(rng.uniform(-1, 1)))
        hi = lo * float(np.exp(rng.uniform(0, 2)))
        est = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
        v = constant_verdict(paper, est, lo, hi, factor=1.5)
        if v.grade == CONSISTENT:
            assert lo <= paper <= hi and hi / lo <= 3
        if not lo <= paper <= hi:
            assert v.grade != CONSISTENT


def test_what_is_not_a_measurement():
    assert constant_verdict(1.0, math.nan, 0.5, 2).grade == NOT_MEASURED
    assert constant_verdict(1.0, 1.0, math.nan, math.nan).grade == NOT_MEASURED
    v = constant_verdict(3.42e-13, 3.42e-13, 3.42e-13, 3.42e-13)  # at its bound: width zero
    assert v.grade == NOT_MEASURED and "width zero" in v.reason
    v = constant_verdict(1.0, 1.0, 0.9, 1.1, unexplained="R^2 (log) 0.48: the law does not explain this grid")
    assert v.grade == NOT_MEASURED and "does not explain" in v.reason
    assert constant_verdict(1.0, 1.0, 0.5, 1.6).grade == NOT_MEASURED  # 3.2x wide
    assert constant_verdict(1.0, 1.0, 0.6, 1.8).grade == CONSISTENT  # exactly 3x


def test_an_exponent_is_informative_within_a_half_width_of_0_15():
    assert exponent_verdict(0.5, 0.48, 0.40, 0.56).grade == CONSISTENT
    v = exponent_verdict(0.5, 0.42, 0.38, 0.46, tolerance=0.1)
    assert v.grade == CLOSE and "-0.08" in v.reason
    assert exponent_verdict(0.5, 0.33, 0.30, 0.36, tolerance=0.1).grade == DISAGREES  # 1/3 is not 1/2
    v = exponent_verdict(0.5, 0.45, 0.2, 0.7)
    assert v.grade == NOT_MEASURED and "half-width 0.25" in v.reason


def test_a_negligible_term_needs_its_upper_end_below_the_share():
    v = negligible_verdict(1e-6, 0.0, 0.01, 0.05, estimate=1e-9, ci_low=0.0, ci_high=1e-5)
    assert v.grade == CONSISTENT and "1% at the interval's upper end" in v.reason
    assert negligible_verdict(0.01, 0.0, 0.2, 0.05, estimate=1e-3, ci_low=0.0, ci_high=0.02).grade == NOT_MEASURED
    assert negligible_verdict(0.3, 0.2, 0.4, 0.05, estimate=0.3, ci_low=0.2, ci_high=0.4).grade == DISAGREES
    v = negligible_verdict(0.0, 0.0, 0.0, 0.05, estimate=3.42e-13, ci_low=3.42e-13, ci_high=3.42e-13)
    assert v.grade == NOT_MEASURED and "width zero" in v.reason  # the c: could not fail before


def test_bounds_and_the_headline():
    assert bounds_verdict([0.9, 1.2, 1.45], 1 / 1.5, 1.5, "ratio").grade == CONSISTENT
    v = bounds_verdict([0.9, 1.6], 1 / 1.5, 1.5, "ratio")
    assert v.grade == DISAGREES and v.reason.startswith("1 of 2 ratios outside")
    assert bounds_verdict([], 0, 1, "ratio").grade == NOT_MEASURED
    assert bounds_verdict([0.103], 0, 0.3, "worst spread").reason == "worst spread 0.103 in [0, 0.3]"
    assert bounds_verdict([0.4], 0, 0.3, "worst spread").grade == DISAGREES
    assert headline([CONSISTENT, CLOSE, CLOSE, NOT_MEASURED]) == (
        "1 consistent, 2 close (CI excludes), 1 not measured, 0 disagree")


@pytest.mark.parametrize("grade", [CONSISTENT, CLOSE, NOT_MEASURED, DISAGREES])
def test_every_grade_has_a_reason(grade):
    cases = {CONSISTENT: (1.0, 1.0, 0.8, 1.2), CLOSE: (1.0, 1.1, 1.05, 1.15), NOT_MEASURED: (1.0, 1.0, 0.1, 10),
             DISAGREES: (1.0, 2.0, 1.9, 2.1)}
    v = constant_verdict(*cases[grade], factor=1.15)
    assert v.grade == grade and len(v.reason) > 20


def test_an_exponent_against_a_bound_is_tight_consistent_with_it_or_exceeds_it():
    """The theorem's sqrt(D/(LM)) bounds the D exponent by 1/2: an interval at the bound that leaves
    out everything notably smaller is tight; one that holds the bound and much smaller values, or
    lies below it, is only consistent with the bound; one above it exceeds it."""
    v = bound_verdict(0.5, 0.49, 0.43, 0.55)
    assert v.grade == TIGHT and "leaves out every value below 0.4" in v.reason
    v = bound_verdict(0.5, 0.45, 0.32, 0.58)  # holds 1/2, and 0.35, notably smaller
    assert v.grade == WITHIN_BOUND and "cannot say whether it is reached" in v.reason
    v = bound_verdict(0.5, 0.15, 0.07, 0.23)  # the err_out D sweep's g: the bound holds, far from reached
    assert v.grade == WITHIN_BOUND and "lies below the bound's 0.5" in v.reason
    v = bound_verdict(0.5, 0.745, 0.68, 0.81)  # fluct_hidden's g on the same sweep
    assert v.grade == EXCEEDS_BOUND and "lies above the bound's 0.5" in v.reason and "standard errors" in v.reason
    v = bound_verdict(0.5, 0.07, -0.36, 0.50)  # the 3-draw err_out interval: too wide to grade
    assert v.grade == NOT_MEASURED and "half-width 0.43" in v.reason
    assert bound_verdict(0.5, math.nan, 0.4, 0.6).grade == NOT_MEASURED
    assert bound_verdict(0.5, 0.5, 0.45, 0.55, unexplained="the law does not explain this grid").grade == NOT_MEASURED
    # the edges: tight down to exactly the margin below, never consistent with an interval above
    assert bound_verdict(0.5, 0.5, 0.5 - TIGHT_MARGIN, 0.6).grade == TIGHT
    assert bound_verdict(0.5, 0.5, 0.5 - TIGHT_MARGIN - 0.01, 0.6).grade == WITHIN_BOUND
    assert bound_verdict(0.5, 0.6, 0.501, 0.7).grade == EXCEEDS_BOUND


def test_the_headline_counts_the_bound_grades_apart():
    line = headline([CONSISTENT, TIGHT, WITHIN_BOUND, WITHIN_BOUND, NOT_MEASURED])
    assert line == "1 consistent, 0 close (CI excludes), 1 not measured, 0 disagree; against a bound: 1 tight, 2 consistent with the bound"
    assert headline([CONSISTENT]) == "1 consistent, 0 close (CI excludes), 0 not measured, 0 disagree"
