"""Shape advice from a joint fit: the best (L, M, D) at a parameter budget, and P^(-1/6)."""
import math

import numpy as np
import pytest

from explorer.errors import FitError
from explorer.analysis.fitting import fit
from explorer.analysis.shapes import best_shape, format_advice, shape_advice, shape_frontier

from tests.explorer.analysis_data import law_grid

C1, C2, C3 = 0.5, 0.2, 0.3


@pytest.fixture(scope="module")
def joint():
    law = lambda L, M, D: C1 / L + C2 * math.sqrt(D / (L * M)) + C3 / math.sqrt(D)  # noqa: E731
    grid = law_grid(law, Ls=(2, 4, 8, 16, 32), Ms=(1, 4, 16), Ds=(2, 8, 32), seeds=4)
    return fit(grid, "joint", n_boot=100)


def test_best_shape_matches_the_closed_form_optimum(joint):
    # With L*M = P/D the sampling term is c2 D / sqrt(P) whatever L and M: M = 1, L = P / D, and
    # D minimizes c1 D / P + c2 D / sqrt(P) + c3 / sqrt(D).
    P = 1e8
    c1, c2, c3 = (joint.estimate[k] for k in ("c1", "c2", "c3"))
    Ds = np.geomspace(1, 1e4, 200001)
    D_star = Ds[np.argmin(c1 * Ds / P + c2 * Ds / math.sqrt(P) + c3 / np.sqrt(Ds))]
    shape = best_shape(joint, P, max_extrapolation=math.inf)  # the law's algebra, far beyond the data
    assert shape["M"] == pytest.approx(1.0, abs=0.01) and shape["M_int"] == 1
    assert shape["D"] == pytest.approx(D_star, rel=0.02)
    assert shape["L"] * shape["M"] * shape["D"] == pytest.approx(P, rel=1e-9)
    assert shape["L_int"] * shape["M_int"] * shape["D_int"] <= P
    assert shape["err_int"] == pytest.approx(shape["best_err"], rel=0.01)


def test_best_error_scales_like_p_to_the_minus_one_sixth(joint):
    advice = shape_advice(joint, budgets=np.geomspace(1e6, 1e12, 7), max_extrapolation=math.inf)
    assert advice["exponent"] == pytest.approx(-1 / 6, abs=0.01)
    assert advice["ci_low"] <= advice["exponent"] <= advice["ci_high"]
    frontier = advice["frontier"]
    assert (np.diff(frontier["best_err"]) < 0).all()
    assert np.polyfit(np.log(frontier["P"]), np.log(frontier["D"]), 1)[0] == pytest.approx(1 / 3, abs=0.03)
    text = format_advice(advice)
    assert "best error ~ P^-0.16" in text and "theory -1/6" in text


def test_frontier_has_one_row_per_budget(joint):
    frontier = shape_frontier(joint, [1e3, 1e4])
    assert list(frontier["P"]) == [1e3, 1e4]
    assert set(frontier.columns) >= {"L", "M", "D", "best_err", "L_int", "M_int", "D_int", "err_int"}


@pytest.mark.parametrize("budget", [0.5, 1, float("nan"), "1e6", True])
def test_a_bad_budget_is_refused(joint, budget):
    with pytest.raises(FitError, match="budget P must be a number > 1"):
        best_shape(joint, budget)


def test_one_budget_gives_a_shape_and_says_the_exponent_needs_more(joint):
    text = format_advice(shape_advice(joint, [1e9], n_samples=5))
    assert "P^nan" not in text and "needs two budgets or more" in text
    assert len(text.splitlines()) >= 3  # header, the budget's best shape, the exponent line


def test_advice_beyond_the_data_is_flagged_and_refused_far_beyond(joint):
    largest = float((joint.grid["L"] * joint.grid["M"] * joint.grid["D"]).max())
    advice = shape_advice(joint, budgets=[largest / 4, largest * 10, largest * 1000], n_samples=0)
    inside, beyond, far = advice["frontier"].itertuples()
    assert not inside.refused and inside.extrapolation < 1
    assert not beyond.refused and beyond.extrapolation == pytest.approx(10)
    assert far.refused and far.L_int == 0 and math.isnan(far.err_int)
    text = format_advice(advice)
    assert "refused" in text and "extrapolates 10x beyond the largest measured P" in text
