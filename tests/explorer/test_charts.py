"""Charts: a table in, an Altair chart out, with log axes, theory guides and small inline data."""
import json
import math

import altair as alt
import numpy as np
import pandas as pd
import pytest

from explorer import charts
from explorer.fit import fit, grid_errors, step_errors
from explorer.phase import phase_diagram
from explorer.shapes import shape_advice

from .analysis_data import connect, law_rows

LAW = lambda L, M, D: 0.5 / L + 0.2 * math.sqrt(D / (L * M)) + 0.3 / math.sqrt(D)  # noqa: E731


@pytest.fixture(scope="module")
def sweep():
    rows = law_rows(LAW, Ls=(2, 4, 8, 16), Ms=(1, 4, 16), Ds=(2, 8), alphas=(1.0, 16.0), seeds=3, sweep="c")
    con = connect(rows)
    grid = grid_errors(con, "c", where="alpha = 1")
    result = fit(grid, "joint", n_boot=50)
    return {"con": con, "grid": grid, "fit": result, "steps": step_errors(con, "c", where="alpha = 1"),
            "advice": shape_advice(result, n_samples=10), "phase": phase_diagram(con, "c", "alpha", "D")}


def _all_charts(s):
    return {
        "error_vs_depth": charts.error_vs_depth(s["grid"], s["fit"]),
        "error_vs_units": charts.error_vs_units(s["grid"], s["fit"]),
        "error_heatmap": charts.error_heatmap(s["grid"], s["fit"]),
        "parity": charts.parity(s["fit"]),
        "residuals": charts.residuals(s["fit"]),
        "error_vs_step": charts.error_vs_step(s["steps"]),
        "error_vs_params": charts.error_vs_params(s["grid"], s["advice"]["frontier"]),
        "phase": charts.phase_chart(s["phase"]),
    }


def _walk(spec, key):
    """Every value of ``key`` anywhere in a nested spec."""
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == key:
                yield v
            yield from _walk(v, key)
    elif isinstance(spec, list):
        for v in spec:
            yield from _walk(v, key)


def test_every_chart_is_a_valid_vega_lite_spec_with_small_inline_data(sweep):
    for name, chart in _all_charts(sweep).items():
        assert isinstance(chart, alt.TopLevelMixin), name
        spec = chart.to_dict()  # validates against the Vega-Lite schema
        datasets = spec.get("datasets", {})
        assert datasets, name
        assert all(len(rows) < 2000 for rows in datasets.values()), name
        assert "url" not in json.dumps(spec.get("data", {})), name  # inline, nothing fetched


@pytest.mark.parametrize("name", ["error_vs_depth", "error_vs_units", "error_heatmap", "parity", "error_vs_params"])
def test_power_law_charts_use_log_axes(sweep, name):
    spec = _all_charts(sweep)[name].to_dict()
    assert "log" in [scale.get("type") for scale in _walk(spec, "scale") if isinstance(scale, dict)]


def _guide_slope(spec, label):
    for rows in spec["datasets"].values():
        if rows and rows[0].get("guide") == label:
            (x0, y0), (x1, y1) = [(r["x"], r["y"]) for r in rows]
            return math.log(y1 / y0) / math.log(x1 / x0)
    raise AssertionError(f"no guide {label!r}")


def test_guides_have_the_slopes_of_the_theory(sweep):
    c = _all_charts(sweep)
    assert _guide_slope(c["error_vs_depth"].to_dict(), "slope -1") == pytest.approx(-1)
    assert _guide_slope(c["error_vs_units"].to_dict(), "slope -1/2") == pytest.approx(-0.5)
    assert _guide_slope(c["error_vs_params"].to_dict(), "slope -1/6") == pytest.approx(-1 / 6)


def test_depth_chart_has_one_panel_per_d_and_fitted_curves_per_m(sweep):
    spec = charts.error_vs_depth(sweep["grid"], sweep["fit"]).to_dict()
    assert len(spec["hconcat"]) == 2
    curves = [rows for rows in spec["datasets"].values() if rows and "fitted" in rows[0]]
    assert len(curves) == 2 and {r["M"] for r in curves[0]} == {1, 4, 16}
    for row in curves[0][:5]:
        assert row["fitted"] == pytest.approx(sweep["fit"].predict(row["L"], row["M"], 2.0))
    without_fit = charts.error_vs_depth(sweep["grid"]).to_dict()
    assert not [rows for rows in without_fit["datasets"].values() if rows and "fitted" in rows[0]]


def test_contour_segments_lie_on_their_level_sets():
    segments = charts.contour_segments(lambda x, y: x * y, (1, 100), (1, 100), [10.0, 100.0])
    assert set(segments["level"]) == {10.0, 100.0}
    for end in (("x", "y"), ("x2", "y2")):
        product = segments[end[0]] * segments[end[1]]
        np.testing.assert_allclose(product, segments["level"], rtol=0.05)


def test_heatmap_cells_tile_the_log_grid(sweep):
    spec = charts.error_heatmap(sweep["grid"], sweep["fit"]).to_dict()
    cells = [rows for rows in spec["datasets"].values() if rows and "L_lo" in rows[0]][0]
    for row in cells:
        assert row["L_lo"] < row["L"] < row["L_hi"] and row["M_lo"] < row["M"] < row["M_hi"]
        assert row["L_lo"] * row["L_hi"] == pytest.approx(row["L"] ** 2)


def test_step_chart_draws_at_most_max_curves():
    steps = pd.DataFrame([(L, M, 8, k, 0.1 * (k + 1) / L) for L in range(1, 41) for M in (1, 2) for k in range(3)],
                         columns=["L", "M", "D", "step", "err"])
    spec = charts.error_vs_step(steps).to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert len({r["grid_point"] for r in rows}) == charts.MAX_CURVES


def test_phase_chart_colours_each_phase_the_same_way(sweep):
    spec = charts.phase_chart(sweep["phase"]).to_dict()
    color = next(c for c in _walk(spec, "color") if isinstance(c, dict) and c.get("field") == "phase")
    assert color["scale"]["domain"] == list(charts.PHASE_COLORS)
    assert color["scale"]["range"] == list(charts.PHASE_COLORS.values())
