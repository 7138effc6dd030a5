"""Charts: a table in, an Altair chart out, with log axes, theory guides and small inline data."""
import json
import math

import altair as alt
import numpy as np
import pandas as pd
import pytest

from explorer.report import charts, diagnostic_charts
from explorer.analysis.fitting import diagnostics, fit
from explorer.analysis.data import grid_errors, step_errors
from explorer.analysis.phase import phase_diagram
from explorer.analysis.shapes import shape_advice

from tests.explorer.analysis_data import connect, law_rows
from tests.explorer.conftest import spec_values

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
        "phase": diagnostic_charts.phase_chart(s["phase"]),
    }


@pytest.fixture(scope="module")
def built(sweep):
    """Every chart of the sweep with its Vega-Lite spec, made once: ``to_dict`` validates the spec
    against the schema, the slow part of a chart."""
    return {name: (chart, chart.to_dict()) for name, chart in _all_charts(sweep).items()}


def test_every_chart_is_a_valid_vega_lite_spec_with_small_inline_data(built):
    for name, (chart, spec) in built.items():
        assert isinstance(chart, alt.TopLevelMixin), name
        datasets = spec.get("datasets", {})
        assert datasets, name
        assert all(len(rows) < 2000 for rows in datasets.values()), name
        assert "url" not in json.dumps(spec.get("data", {})), name  # inline, nothing fetched


@pytest.mark.parametrize("name", ["error_vs_depth", "error_vs_units", "error_heatmap", "parity", "error_vs_params"])
def test_power_law_charts_use_log_axes(built, name):
    spec = built[name][1]
    assert "log" in [scale.get("type") for scale in spec_values(spec, "scale") if isinstance(scale, dict)]


def _guide_slope(spec, label):
    for rows in spec["datasets"].values():
        if rows and rows[0].get("guide") == label:
            (x0, y0), (x1, y1) = [(r["x"], r["y"]) for r in rows]
            return math.log(y1 / y0) / math.log(x1 / x0)
    raise AssertionError(f"no guide {label!r}")


def test_guides_have_the_slopes_of_the_theory(built):
    assert _guide_slope(built["error_vs_depth"][1], "slope -1") == pytest.approx(-1)
    assert _guide_slope(built["error_vs_units"][1], "slope -1/2") == pytest.approx(-0.5)
    assert _guide_slope(built["error_vs_params"][1], "slope -1/6") == pytest.approx(-1 / 6)


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
    spec = diagnostic_charts.phase_chart(sweep["phase"]).to_dict()
    color = next(c for c in spec_values(spec, "color") if isinstance(c, dict) and c.get("field") == "phase")
    assert color["scale"]["domain"] == list(charts.PHASE_COLORS)
    assert color["scale"]["range"] == list(charts.PHASE_COLORS.values())


def test_local_slopes_match_a_hand_computation():
    # err = 1/L + 1/sqrt(L*M), D = 8; one floor-limited point (L=8, M=4) is left out.
    grid = pd.DataFrame([(L, M, 8, 1 / L + 1 / math.sqrt(L * M)) for M in (1, 4) for L in (2, 4, 8)],
                        columns=["L", "M", "D", "err"])
    grid["floor_limited"] = (grid["L"] == 8) & (grid["M"] == 4)
    slopes = diagnostic_charts.local_slopes(grid)
    e = {(L, M): 1 / L + 1 / math.sqrt(L * M) for L in (2, 4, 8) for M in (1, 4)}
    along_l = slopes[slopes["along"] == "L"].reset_index(drop=True)
    assert along_l[["M", "x_low", "x_high"]].values.tolist() == [[1, 2, 4], [1, 4, 8], [4, 2, 4]]
    expected = [math.log(e[4, 1] / e[2, 1]) / math.log(2), math.log(e[8, 1] / e[4, 1]) / math.log(2),
                math.log(e[4, 4] / e[2, 4]) / math.log(2)]
    np.testing.assert_allclose(along_l["slope"], expected, rtol=1e-12)
    assert (along_l["theory"] == -1).all() and along_l["x"].iloc[0] == pytest.approx(math.sqrt(8))
    # Along L*M: neighbouring M at each L (M = 1 -> 4 at L = 2 and 4; L = 8, M = 4 is floor-limited).
    along_lm = slopes[slopes["along"] == "LM"].reset_index(drop=True)
    assert along_lm[["L", "x_low", "x_high"]].values.tolist() == [[2, 2, 8], [4, 4, 16]]
    expected = [math.log(e[2, 4] / e[2, 1]) / math.log(4), math.log(e[4, 4] / e[4, 1]) / math.log(4)]
    np.testing.assert_allclose(along_lm["slope"], expected, rtol=1e-12)
    assert (along_lm["theory"] == -0.5).all() and along_lm["M"].isna().all()


def test_the_chart_slopes_are_the_diagnostics_slopes():
    grid = pd.DataFrame([(L, M, D, seed, LAW(L, M, D) * (1 + 0.1 * seed)) for L in (2, 4, 8, 16) for M in (1, 4, 16)
                         for D in (2, 8) for seed in (0, 1)], columns=["L", "M", "D", "problem_seed", "err"])
    grid["floor_limited"] = (grid["L"] == 16) & (grid["M"] == 16)
    ours, theirs = diagnostic_charts.local_slopes(grid), diagnostics.local_slopes(grid)
    assert len(ours) == len(theirs) > 0 and set(ours["along"]) == {"L", "LM"}
    pd.testing.assert_frame_equal(ours.rename(columns={"along": "axis"}), theirs)


def test_local_slopes_of_a_pure_power_law_are_its_exponents():
    grid = pd.DataFrame([(L, M, 4, (L * M) ** -0.5) for L in (2, 4, 8) for M in (1, 2, 4)], columns=["L", "M", "D", "err"])
    slopes = diagnostic_charts.local_slopes(grid)
    np.testing.assert_allclose(slopes.loc[slopes["along"] == "L", "slope"], -0.5, rtol=1e-12)
    np.testing.assert_allclose(slopes.loc[slopes["along"] == "LM", "slope"], -0.5, rtol=1e-12)


def test_local_slopes_chart_has_both_panels_and_the_theory_guides(sweep):
    spec = diagnostic_charts.local_slopes_chart(diagnostic_charts.local_slopes(sweep["grid"])).to_dict()
    assert len(spec["hconcat"]) == 2
    guides = {row["theory"] for rows in spec["datasets"].values() for row in rows if "guide" in row}
    assert guides == {-1.0, -0.5}


def test_error_vs_axis_draws_one_line_per_grid_point_over_the_axis(sweep):
    grid = grid_errors(sweep["con"], "c", where="D = 8")
    spec = diagnostic_charts.error_vs_axis(grid, "alpha").to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert {r["alpha"] for r in rows} == {1.0, 16.0} and len({r["series"] for r in rows}) == 12
    assert "log" in [s.get("type") for s in spec_values(spec, "scale") if isinstance(s, dict)]
    spec = diagnostic_charts.error_vs_axis(sweep["grid"], "D").to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert {r["D"] for r in rows} == {2, 8} and {r["series"] for r in rows} >= {"L=2 M=1", "L=16 M=16"}


def test_per_draw_chart_shows_each_draw_and_the_pooled_band(sweep):
    pooled = sweep["fit"].table()
    per_draw = pd.DataFrame([(seed, p, 1.0 + seed, 0.5, 2.5 + seed) for seed in (1, 2, 3) for p in pooled["parameter"]],
                            columns=["problem_seed", "parameter", "estimate", "ci_low", "ci_high"])
    spec = diagnostic_charts.per_draw_chart(per_draw, pooled).to_dict()
    assert len(spec["hconcat"]) == len(pooled)
    bands = [rows for rows in spec["datasets"].values() if len(rows) == 1 and "ci_low" in rows[0]]
    assert {r[0]["parameter"] for r in bands} == set(pooled["parameter"])


def test_local_slopes_count_each_grid_point_once_over_draws():
    grid = pd.DataFrame([(L, 1, 8, seed, L ** -1.0 * (1 + 0.5 * seed)) for L in (2, 4, 8) for seed in (0, 1)],
                        columns=["L", "M", "D", "problem_seed", "err"])
    slopes = diagnostic_charts.local_slopes(grid)
    assert len(slopes[slopes["along"] == "L"]) == 2
    np.testing.assert_allclose(slopes["slope"], -1.0, rtol=1e-12)


@pytest.mark.parametrize("chart", ["error_vs_step", "error_vs_alpha"])
def test_lines_coloured_by_l_times_m_get_a_gradient_legend_not_a_cut_list(chart):
    """25 and more grid points: the L*M colour is a continuous log scale drawn as one gradient,
    not a symbol legend of every tick value cut off after 25 ("...5 entries")."""
    import vl_convert

    points = [(L, M) for L in (4, 8, 16, 32, 64) for M in (1, 4, 16, 64, 256)]
    if chart == "error_vs_step":
        steps = pd.DataFrame([(L, M, 8, k, 0.1 * (k + 1) / L) for L, M in points for k in range(3)],
                             columns=["L", "M", "D", "step", "err"])
        spec = charts.error_vs_step(steps).to_dict()
    else:
        grid = pd.DataFrame([(L, M, 8, alpha, 0.1 * alpha / L, 3) for L, M in points for alpha in (1.0, 4.0)],
                            columns=["L", "M", "D", "alpha", "err", "n_seeds"])
        spec = diagnostic_charts.error_vs_axis(grid, "alpha").to_dict()
    svg = vl_convert.vegalite_to_svg(spec)
    assert "linearGradient" in svg and "entries" not in svg


def _panels(spec: dict) -> dict:
    """D -> the rows of each layer of that panel (a term chart's panels are titled "... (D=8)")."""
    out, stack = {}, [spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "layer" in node and "(D=" in str(node.get("title", "")):
                D = float(str(node["title"]).split("(D=")[1].rstrip(")"))
                out[D] = [spec["datasets"][layer["data"]["name"]] for layer in node["layer"]]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


@pytest.fixture(scope="module")
def d_varying_fit():
    """A planted sweep over several D whose terms carry their own D exponents (g = 0.15 apart from
    b = 0.5, h = 0.3): the decomposed fit measures g and h."""
    import dataclasses

    from explorer.analysis.decomposed import REGIMES, fit_decomposed, planted_grams

    regime = dataclasses.replace(REGIMES["dexp"], name="dexp-h", h=0.3)
    result = fit_decomposed(planted_grams(regime, np.random.default_rng(3)), n_boot=50, seed=1)
    assert result.is_measured("g") and result.is_measured("h"), result.not_measured
    return result


@pytest.mark.parametrize("chart, x, term", [
    ("fluct_vs_units", "LM", lambda e, LM, D: e["c2"] * D ** e["g"] / LM ** e["b"]),
    ("bias_vs_depth", "L", lambda e, L, D: e["c1"] * D ** e["h"] / L ** e["a"]),
])
def test_term_charts_draw_each_terms_own_d_exponent_where_the_fit_has_one(d_varying_fit, chart, x, term):
    """Where D varies the drawn line is the fitted term with g (h), written out here, not the tied
    c2 (D/(LM))^b (5.6 times higher at D = 32 with these exponents), and its 95% band holds it."""
    spec = getattr(charts, chart)(d_varying_fit).to_dict()
    panels = _panels(spec)
    assert sorted(panels) == [4.0, 8.0, 16.0, 32.0]
    est = d_varying_fit.estimate
    for D, layers in panels.items():
        (line,) = [rows for rows in layers if rows and "fitted" in rows[0]]
        (band,) = [rows for rows in layers if rows and "band_low" in rows[0]]
        for row in line[::6]:
            assert row["fitted"] == pytest.approx(term(est, row[x], D), rel=1e-9)
        assert all(b["band_low"] < r["fitted"] < b["band_high"] for b, r in zip(band, line))
