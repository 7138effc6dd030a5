"""explorer.analysis.shapes: the best error at each compute P = 2 L M D along a grid's frontier, and its
exponent, checked on constructed grids whose frontier slope is known."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from explorer.analysis.shapes import compute, frontier, frontier_exponent, frontier_slope, interior


def naive_frontier(points: pd.DataFrame) -> set:
    """By definition, pair by pair: (L, M, D) is on the frontier when it is the best point of its P
    (the first in grid order on ties) and no point of smaller P does as well."""
    rows = list(points.itertuples(index=False))
    keep = set()
    for r in rows:
        p = 2 * r.L * r.M * r.D
        same = [q for q in rows if 2 * q.L * q.M * q.D == p]
        if min(q.err for q in same) < r.err or next(q for q in same if q.err == r.err) is not r:
            continue
        if all(q.err > r.err for q in rows if 2 * q.L * q.M * q.D < p):
            keep.add((r.L, r.M, r.D))
    return keep


def diagonal_grid(exponent: float, draws=(1, 2, 3, 4), noise=0.0, seed=0) -> pd.DataFrame:
    """Points on M = D have err = P^-exponent exactly (times a per-point noise); every other
    point is 3x above the law at its own P, so the frontier is the diagonal."""
    rng = np.random.default_rng(seed)
    values = [2, 3, 5, 8, 13, 21, 34, 55, 89, 144]
    rows = []
    for draw in draws:
        for m, d in itertools.product(values, values):
            p = 2.0 * 4 * m * d
            err = p ** -exponent * (1.0 if m == d else 3.0) * math.exp(noise * rng.standard_normal())
            rows.append({"problem_seed": draw, "L": 4, "M": m, "D": d, "err": err})
    return pd.DataFrame(rows)


def test_the_frontier_is_the_definitions():
    rng = np.random.default_rng(5)
    pts = pd.DataFrame([{"L": 2, "M": m, "D": d, "err": float(rng.lognormal())}
                        for m, d in itertools.product([1, 2, 3, 4, 6], [1, 2, 3, 4, 6])])
    edge = frontier(pts)
    assert set(zip(edge["L"], edge["M"], edge["D"])) == naive_frontier(pts)
    assert list(edge["P"]) == sorted(edge["P"]) and (np.diff(edge["err"]) < 0).all()
    assert (compute(pts) == 2 * pts["L"] * pts["M"] * pts["D"]).all()


@pytest.mark.parametrize("exponent", [1 / 6, 1 / 5, 1 / 2])
def test_a_known_frontier_slope_is_recovered_exactly_without_noise(exponent):
    grid = diagonal_grid(exponent, draws=(1,))
    edge = frontier(grid)
    assert (edge["M"] == edge["D"]).all() and len(edge) == 10
    assert -frontier_slope(edge) == pytest.approx(exponent, abs=1e-12)


def test_with_noise_the_interval_over_draws_is_students_t_and_holds_the_slope():
    grid = diagonal_grid(1 / 5, draws=(1, 2, 3, 4, 5), noise=0.05, seed=2)
    result = frontier_exponent(grid)
    # independently: each draw's slope by a plain regression on its diagonal, then a t interval
    per = []
    for _, g in grid.groupby("problem_seed"):
        diag = g[(g["M"] == g["D"]) & (g["M"] > 2) & (g["M"] < 144)]  # inside the grid
        per.append(-stats.linregress(np.log(2.0 * 4 * diag["M"] * diag["D"]), np.log(diag["err"])).slope)
    per = np.array(per)
    half = stats.t.ppf(0.975, len(per) - 1) * per.std(ddof=1) / math.sqrt(len(per))
    assert result.estimate == pytest.approx(per.mean(), abs=1e-9)
    assert (result.ci_low, result.ci_high) == pytest.approx((per.mean() - half, per.mean() + half), abs=1e-9)
    assert result.ci_low <= 0.2 <= result.ci_high and result.ci_high - result.ci_low < 0.1
    assert result.ratio_to(lambda P: P ** -0.2)[0] == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize("law, exponent", [
    (lambda L, M, D: np.sqrt((0.8 * np.sqrt(D / (L * M))) ** 2 + (2.5 / np.sqrt(D)) ** 2), 1 / 6),
    (lambda L, M, D: np.sqrt((0.15 * D / (L * M)) ** 2 + (0.9 / np.sqrt(D)) ** 2), 1 / 5),
])
def test_the_theorys_laws_have_their_closed_form_frontier_exponents(law, exponent):
    """err^2 = a^2 D/(LM) + b^2/D is best at D ~ P^(1/3), where err ~ P^(-1/6); with (D/(LM))^2
    instead, D ~ P^(2/5) and err ~ P^(-1/5). A dense grid whose P range keeps the best shape
    inside it recovers the exponents (the grid's edges bend the frontier by about 0.01)."""
    values = np.unique(np.round(np.geomspace(1, 1e5, 80)).astype(int))
    pts = pd.DataFrame([{"L": 50, "M": m, "D": d} for m, d in itertools.product(values, values)])
    pts["err"] = law(50.0, pts["M"], pts["D"])
    edge = frontier(pts)
    inside = edge[(edge["P"] > 1e5) & (edge["P"] < 1e10)]
    assert -frontier_slope(inside) == pytest.approx(exponent, abs=0.01)


AUTHORS_VALUES = [1, 2, 3, 4, 6, 9, 14, 21, 31, 45, 66, 96, 141, 206, 301, 439, 642, 937, 1369, 2000]


@pytest.mark.parametrize("law, exponent", [
    (lambda L, M, D: np.sqrt((0.8 * np.sqrt(D / (L * M))) ** 2 + (2.5 / np.sqrt(D)) ** 2), 1 / 6),
    (lambda L, M, D: np.sqrt((0.15 * D / (L * M)) ** 2 + (0.9 / np.sqrt(D)) ** 2), 1 / 5),
])
def test_on_the_authors_grid_the_frontiers_interior_carries_the_exponent_its_edges_do_not(law, exponent):
    """The authors' 20 x 20 grid of M and D (the reference's D = 2000 left out): where the best
    shape sits on the grid's edge (M = 1 at small P) the frontier bends away from the trade-off's
    exponent; inside the grid it follows it."""
    pts = pd.DataFrame([{"L": 50, "M": m, "D": d} for m in AUTHORS_VALUES for d in AUTHORS_VALUES[:-1]])
    pts["err"] = law(50.0, pts["M"], pts["D"])
    edge = frontier(pts)
    assert -frontier_slope(interior(edge, pts)) == pytest.approx(exponent, abs=0.002)
    assert -frontier_slope(edge) - exponent > 0.015
    noisy = pd.concat([pts.assign(problem_seed=s, err=pts["err"] * np.exp(0.02 * np.random.default_rng(s).standard_normal(len(pts))))
                       for s in (1, 2, 3, 4, 5)])
    result = frontier_exponent(noisy)
    assert result.ci_low <= exponent <= result.ci_high and result.ci_high - result.ci_low < 0.3


def test_too_short_a_frontier_or_a_single_draw_gives_no_interval():
    one = diagonal_grid(0.2, draws=(1,))
    result = frontier_exponent(one)
    assert math.isnan(result.ci_low) and "needs 2" in result.problem and result.estimate == pytest.approx(0.2)
    tiny = pd.DataFrame({"problem_seed": [1, 1, 2, 2], "L": 1, "M": [1, 2, 1, 2], "D": 1, "err": [1.0, 0.5, 1.0, 0.5]})
    assert math.isnan(frontier_exponent(tiny).estimate)
