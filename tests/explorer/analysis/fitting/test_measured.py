"""No unmeasured parameter is stated as a result: the one rule of ``explorer.analysis.fitting.measured``
(at a search bound, an interval too wide, not identified) on planted data for a registry form, a
custom expression and the decomposed law; what ``explorer fit`` prints, the report's summary, the
model comparison's merged names and the fitted lines' bands."""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from explorer.analysis.fitting import compare_laws, fit, fit_warnings, format_comparison, format_table, unmeasured_in
from explorer.analysis.fitting.measured import interval_reason, jacobian_reasons
from explorer.analysis.laws import law_forms

from tests.explorer.analysis_data import connect, law_grid, law_rows


def _no_depth_grid():
    return law_grid(lambda L, M, D: 0.2 * math.sqrt(D / (L * M)), rng=np.random.default_rng(1))


def _independent_verdict(result, name) -> bool:
    """The rule's width test, computed here from the raw interval (the rule's own code not used)."""
    lo, hi = result.ci_low[name], result.ci_high[name]
    if name in result.law.positive:
        return hi / lo > 10 or abs(math.log(hi)) >= 50 - 1e-6 or abs(math.log(lo)) >= 50 - 1e-6
    return hi - lo > 1 or max(abs(lo), abs(hi), abs(result.estimate[name])) >= 10 - 1e-6


def _row(text: str, name: str) -> str:
    return re.search(rf"^{name}\s.*$", text, re.M).group(0)


def test_the_rule_on_intervals_bounds_and_jacobians():
    # widths: a factor 10 for a constant, 1 for an exponent (just inside is measured)
    assert interval_reason(1.0, 0.33, 3.2, positive=True) is None
    assert "spans a factor 11" in interval_reason(1.0, 0.3, 3.3, positive=True)
    assert "down to zero" in interval_reason(1.0, 0.0, 3.0, positive=True)
    assert interval_reason(0.5, 0.01, 0.99, positive=False) is None
    assert "1.2 wide" in interval_reason(0.5, -0.1, 1.1, positive=False)
    # a search bound, of the estimate or of an interval's end, whatever the width
    assert "search bound" in interval_reason(10.0, 9.9, 10.0, positive=False)
    assert "search bound" in interval_reason(-3.0, -10.0, -2.9, positive=False)
    assert "search bound" in interval_reason(1e-3, math.exp(-50), 2e-3, positive=True)
    assert "width zero" in interval_reason(0.7, 0.7, 0.7, positive=False)
    assert interval_reason(0.7, math.nan, math.nan, positive=False) is None  # no resamples: no interval, no verdict
    # the Jacobian: two proportional columns are one combination; a zero column does not change the fit
    x = np.linspace(1, 2, 6)
    assert set(jacobian_reasons(("c1", "c3", "b"), np.column_stack([x, 2 * x, x**2]))) == {"c1", "c3"}
    assert list(jacobian_reasons(("c1", "b"), np.column_stack([x, 0 * x]))) == ["b"]
    assert jacobian_reasons(("c1", "b"), np.column_stack([x, x**2])) == {}


def test_a_registry_form_states_no_unmeasured_constant():
    result = fit(_no_depth_grid(), "theory", n_boot=50, per_draw=False, range_check=False)
    assert set(result.unmeasured) == {"c1"} and _independent_verdict(result, "c1")
    assert not _independent_verdict(result, "c2")
    text = format_table(result)
    c1 = _row(text, "c1")
    assert "not measured" in c1 and "[" not in c1  # no interval for it
    for value in (result.estimate["c1"], result.ci_low["c1"], result.ci_high["c1"]):
        assert f"{value:.4g}" not in text and f"{value:.3g}" not in text
    assert re.search(r"^warning: c1 not measured: its 95% interval spans a factor", text, re.M)
    assert f"err ~ {result.estimate['c2']:.3g} * sqrt(D / (L * M))" in text  # the measured term alone
    rows = result.rows()
    assert rows.set_index("parameter").loc["c1", ["estimate", "ci_low", "ci_high"]].isna().all()  # stored: no result
    assert "c1 not measured" in rows["warnings"].iloc[0]
    assert unmeasured_in(result, "c1") is None or "search bound" in unmeasured_in(result, "c1")  # a target's own width


def test_a_custom_expression_at_its_search_bound_is_not_measured():
    result = fit(_no_depth_grid(), "c2*sqrt(D/(L*M)) + c1*L**(-a)", n_boot=50, per_draw=False, range_check=False)
    assert "search bound" in result.unmeasured["a"]
    assert any(abs(abs(v) - 10) < 1e-6 for v in (result.estimate["a"], result.ci_low["a"], result.ci_high["a"]))
    text = format_table(result)
    assert "[" not in _row(text, "a") and "[" not in _row(text, "c1") and "[" in _row(text, "c2")
    assert "search bound" in unmeasured_in(result, "a")  # no adaptive target can reach it


def test_a_custom_expression_the_jacobian_leaves_unidentified_is_not_measured():
    grid = law_grid(lambda L, M, D: 0.8 / L + 0.3 * math.sqrt(D / (L * M)), rng=np.random.default_rng(2))
    result = fit(grid, "c1/L + c2*sqrt(D/(L*M)) + c3/L", n_boot=0, per_draw=False, range_check=False)
    assert set(result.unmeasured) == {"c1", "c3"}  # without any interval: the Jacobian alone
    assert "c1, c3 are not separately determined" in result.unmeasured["c1"]
    text = format_table(result)
    assert "not measured" in _row(text, "c1") and "not measured" in _row(text, "c3")
    assert f"{result.estimate['c1']:.4g}" not in text
    assert "c2" in result.rows().dropna(subset=["estimate"])["parameter"].tolist()


def test_the_decomposed_law_goes_through_the_rule_too():
    from explorer.analysis.decomposed import REGIMES, fit_decomposed

    from tests.explorer.compare_data import planted_pair

    frame, _ = planted_pair(REGIMES["rates"], np.random.default_rng(3))
    one = frame[frame["problem_seed"] == frame["problem_seed"].iloc[0]].reset_index(drop=True)
    one["gram"] = [g[:3, :3] for g in one["gram"]]  # 3 seeds: the weak bias's exponent is too wide
    one["seeds"] = [s[:3] for s in one["seeds"]]
    one["n_seeds"] = 3
    result = fit_decomposed(one, n_boot=20)
    for name in result.parameters:
        assert (name in result.unmeasured) == _independent_verdict(result, name), name
    assert "a" in result.unmeasured and "wide" in result.unmeasured["a"]
    text = format_table(result)
    assert "[" not in _row(text, "a") and "additive surface" not in text  # the surfaces use measured terms only
    law = next(line for line in text.splitlines() if line.startswith("law, its measured terms alone"))
    assert "L **" not in law and f"{result.estimate['c2']:.3g}" in law  # the bias term (a, L^-a) left out
    assert fit_warnings(result, True, None) == result.warnings  # judging again changes nothing


def test_the_decomposed_law_with_an_unidentified_term_prints_no_interval_for_it():
    from explorer.analysis.decomposed import REGIMES, fit_decomposed

    from tests.explorer.compare_data import planted_pair

    frame, _ = planted_pair(REGIMES["easy"], np.random.default_rng(3))
    frame = frame[frame["problem_seed"] == frame["problem_seed"].iloc[0]].reset_index(drop=True)
    frame["gram"] = [np.eye(len(g)) * 1e-2 + 1e-9 * g for g in frame["gram"]]  # no bias: c1 and a unidentified
    text = format_table(fit_decomposed(frame, n_boot=20))
    assert "[" not in _row(text, "c1") and "[" not in _row(text, "a") and "[" in _row(text, "b")


def test_the_summary_states_no_unmeasured_constant(tmp_path, monkeypatch):
    import explorer.report.page as report_module

    monkeypatch.setattr(report_module, "compare_laws", lambda grid, forms=None: pd.DataFrame())  # not under test
    monkeypatch.setattr(report_module, "vega_bundle", lambda: "")
    rows = law_rows(lambda L, M, D: 0.2 * math.sqrt(D / (L * M)), Ls=(2, 4, 8, 16), Ms=(1, 4, 16), seeds=3, sweep="s")
    report = report_module.build_report(connect(rows), "s", tmp_path, n_boot=30)  # no export: the default
    theory = report.fits["theory"]
    assert "c1" in theory.unmeasured
    sentence = next(str(line) for line in report.summary if str(line).startswith("Theory fit"))
    assert "its measured term alone" in sentence and "c1 not measured" in sentence
    for value in (theory.estimate["c1"], theory.ci_low["c1"], theory.ci_high["c1"]):
        assert f"{value:.3g}" not in sentence
    assert f"{theory.estimate['c2']:.3g}" in sentence
    html = report.path.read_text()
    block = html[html.index("<h3>theory: err ~"):]
    block = block[:block.index("</table>")]
    assert "<td>not measured</td>" in block and f"{theory.ci_high['c1']:.4g}" not in block


def test_the_comparison_is_one_row_per_law_and_only_laws_it_fitted():
    grid = _no_depth_grid()  # a single D: joint is theory, companion_hidden is theory_rss
    table = compare_laws(grid, forms=[*law_forms(), "c1*D + c2*D**2"], n_starts=2)
    names = [name for law in table["law"] for name in law.split(" = ")]
    assert len(names) == len(set(names))  # every name once
    assert "theory = joint" in set(table["law"]) and "theory_rss = companion_hidden" in set(table["law"])
    merged = table.set_index("law")
    for law in ("theory = joint", "theory_rss = companion_hidden"):  # one row: its numbers are the whole law's
        alone = compare_laws(grid, forms=[law.split(" = ")[0]], n_starts=2).iloc[0]
        assert merged.loc[law, "cv_loo"] == pytest.approx(alone["cv_loo"], rel=1e-6)
    assert "output" in set(table["law"]) and "free" in set(table["law"])  # different laws stay apart
    (custom,) = table.attrs["not_fitted"]  # no term of it varies on this grid (D is fixed): not ranked
    assert custom not in names and f"not fitted: {custom}" in format_comparison(table)


def test_a_fitted_line_band_is_the_samples_spread_at_the_intervals_quantile():
    from explorer.report import charts

    grid = law_grid(lambda L, M, D: 0.8 / L + 0.3 * math.sqrt(D / (L * M)), rng=np.random.default_rng(4))
    result = fit(grid, "theory", n_boot=60, per_draw=False, range_check=False)
    L, M, D = np.array([2.0, 10.0, 64.0]), np.array([1.0, 4.0, 64.0]), np.full(3, 8.0)
    low, high = result.band(L, M, D)
    # independently: each sample's law value, one at a time, and their log spread
    logs = np.array([[math.log(s[0] / L[i] + s[1] * math.sqrt(D[i] / (L[i] * M[i]))) for i in range(3)]
                     for s in result.samples])
    center = np.log(result.predict(L, M, D))
    assert np.allclose(np.log(high) - center, 1.959963984540054 * logs.std(axis=0, ddof=1), rtol=1e-9)
    assert np.allclose(center - np.log(low), np.log(high) - center)
    spec = charts.error_vs_depth(result.grid, result).to_dict()
    bands = [rows for rows in spec["datasets"].values() if rows and "band_low" in rows[0]]
    assert bands and all(r["band_low"] < result.predict(r["L"], r["M"], 8.0) < r["band_high"] for r in bands[0])
