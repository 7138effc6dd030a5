"""explorer reproduce: the registry, the claims' measurement and verdicts, the report."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from explorer import reproduce as rep
from explorer.cli import main
from explorer.planning import plan
from explorer.reproduce import AGREES, DISAGREES, EXPERIMENTS, NOT_MEASURED


def test_list_names_every_experiment_with_its_grid_sizes():
    result = CliRunner().invoke(main, ["reproduce", "--list"])
    assert result.exit_code == 0, result.output
    for name in ("companion-linear", "companion-nonlinear", "hidden-width-rates"):
        assert name in result.output
    assert re.search(r"laptop: 624 points, 1248 runs, 52 references, ~[\d.]+ min of single-core compute; "
                     r"full: 43875 points, 219375 runs, 195 references, ~[\d.]+ h of single-core compute", result.output)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_a_dry_run_prints_each_sweeps_sizes_and_where_the_report_goes(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["reproduce", name, "--dry-run"])
    assert result.exit_code == 0 and result.exception is None or isinstance(result.exception, SystemExit), result.output
    lines = result.output.splitlines()
    exp = EXPERIMENTS[name]
    assert lines[0] == f"experiment {name} at scale laptop: {len(exp.sweeps)} sweep(s), {len(exp.claims)} claims"
    for role in exp.sweeps:
        spec = exp.load(role, "laptop")
        assert f"  sweep {spec.name}: {len(plan(spec).trials)} trials (" in result.output
    assert sum(line.startswith("  references: ") for line in lines) == len(exp.sweeps)
    assert sum(line.startswith("  time: ") for line in lines) == len(exp.sweeps)
    assert f"report: {tmp_path.resolve() / f'reproduce-{name}-laptop'}/ (index.html" in result.output
    assert lines[-1] == "nothing run (--dry-run)"
    assert list(tmp_path.iterdir()) == []  # nothing written, no store, no report


def test_an_unknown_experiment_is_one_line():
    result = CliRunner().invoke(main, ["reproduce", "nope"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "unknown experiment 'nope'" in result.output


@pytest.mark.parametrize("name", list(EXPERIMENTS))
@pytest.mark.parametrize("scale", ["laptop", "tiny"])
def test_the_registry_specs_parse_and_plan(name, scale):
    exp = EXPERIMENTS[name]
    for role in exp.sweeps:
        spec = exp.load(role, scale)
        assert plan(spec).trials
        assert spec.name.endswith({"laptop": "-laptop", "tiny": "-tiny"}[scale])
    for claim in exp.claims:
        assert claim.sweep in exp.sweeps


def test_full_scale_specs_parse():
    for exp in EXPERIMENTS.values():
        for role in exp.sweeps:
            assert exp.load(role, "full").name == exp.sweeps[role]


def test_fit_verdicts():
    assert rep.fit_verdict(0.673, 0.61, 0.5, 0.7, factor=1.5) == AGREES  # in the CI and the factor
    assert rep.fit_verdict(0.673, 0.96, 0.9, 1.0, factor=1.5) == AGREES  # outside the CI, within 1.5x
    assert rep.fit_verdict(0.673, 1.2, 1.1, 1.3, factor=1.5) == DISAGREES
    assert rep.fit_verdict(0.673, 1.2, 0.6, 1.3, factor=1.5) == AGREES  # informative CI holds it
    assert rep.fit_verdict(0.673, 5.0, 1e-10, 1e10, factor=1.5) == NOT_MEASURED  # uninformative CI
    assert rep.fit_verdict(0.673, float("nan")) == NOT_MEASURED
    assert rep.fit_verdict(4e-16, 1e-9, 0.0, 0.2, zero=0.05) == AGREES
    assert rep.fit_verdict(4e-16, 0.3, 0.2, 0.4, zero=0.05) == DISAGREES


def test_curve_and_threshold_verdicts():
    assert rep.ratio_verdict([0.9, 1.2, 1.45], 1.5) == AGREES
    assert rep.ratio_verdict([0.9, 1.6], 1.5) == DISAGREES
    assert rep.ratio_verdict([0.6], 1.5) == DISAGREES
    assert rep.ratio_verdict([], 1.5) == NOT_MEASURED
    assert rep.threshold_verdict(5.6, at_least=4) == AGREES
    assert rep.threshold_verdict(3.0, at_least=4) == DISAGREES
    assert rep.threshold_verdict(0.2, at_most=0.3) == AGREES
    assert rep.threshold_verdict(float("nan"), at_most=0.3) == NOT_MEASURED


def _synthetic(fn, L, M, D, draws=(1, 2), noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for d in draws:
        for l in L:
            for m in M:
                for dd in D:
                    err = float(fn(l, m, dd)) * float(np.exp(noise * rng.standard_normal()))
                    rows.append({"problem_seed": d, "L": l, "M": m, "D": dd, "err": err, "ref_err": 0.0,
                                 "n_seeds": 2, "n_flagged": 0, "floor_limited": False,
                                 "seed_errs": np.array([err * 0.98, err * 1.02]), "sweep": "s", "metric": "m", "step": 5})
    return pd.DataFrame(rows)


class _Spec:  # what measure reads of a spec
    def __init__(self, kind="joint_limit", L=(1,), M=(1,), D=(1,), coupled=True):
        self.reference = type("R", (), {"kind": kind})()
        self.grid = type("G", (), {"L": L, "M": M, "D": D})()
        self.coupled_embeddings = coupled


def test_a_fit_claim_recovers_the_papers_constants_on_their_law(monkeypatch):
    law = lambda L, M, D: np.sqrt(0.673 * D / (L * M) + 0.437 / D)  # noqa: E731
    grid = _synthetic(law, [53, 123, 285], [17, 40, 93, 216], [17, 40, 93, 216], noise=0.05)
    monkeypatch.setattr(rep, "_grid", lambda con, sweep, claim: grid)
    exp = EXPERIMENTS["companion-linear"]
    rows = [rep.measure(c, None, "s", _Spec(), n_boot=20) for c in exp.claims[:3]]
    assert [r["verdict"] for r in rows] == [AGREES, AGREES, AGREES]
    assert abs(rows[0]["value"] / 0.673 - 1) < 0.1 and abs(rows[1]["value"] / 0.437 - 1) < 0.1
    table = rep.claims_table(dataclasses.replace(exp, claims=exp.claims[:3]), rows)
    assert list(table["verdict"]) == [AGREES] * 3 and table["paper"][0] == "a = 0.673 (fitted)"
    # twice the constants: outside 1.5x, and the CI is narrow
    grid2 = _synthetic(lambda L, M, D: np.sqrt(2) * law(L, M, D), [53, 123, 285], [17, 40, 93, 216],
                       [17, 40, 93, 216], noise=0.02)
    monkeypatch.setattr(rep, "_grid", lambda con, sweep, claim: grid2)
    assert rep.measure(exp.claims[0], None, "s", _Spec(), n_boot=20)["verdict"] == DISAGREES


def test_curve_claims_pool_draws_and_leave_the_reference_out(monkeypatch):
    exp = EXPERIMENTS["companion-nonlinear"]
    claim = exp.claims[0]
    spec = _Spec("largest", (50,), (14, 31, 439), (14, 31, 439))
    grid = _synthetic(lambda L, M, D: 1.2 * rep._nonlinear_hidden(L, M, D), [50], [14, 31, 439], [14, 31, 439])
    grid.loc[(grid["M"] == 439) & (grid["D"] == 439), "err"] = 0.0  # the reference itself
    monkeypatch.setattr(rep, "_grid", lambda con, sweep, c: grid)
    row = rep.measure(claim, None, "s", spec)
    assert row["verdict"] == AGREES and row["n_points"] == 8 and abs(row["value"] - 1.2) < 1e-9
    grid["err"] *= 1.5  # 1.8 x the curve
    assert rep.measure(claim, None, "s", spec)["verdict"] == DISAGREES
    # pooled as sqrt(mean err^2) over the draws
    two = pd.DataFrame({"L": [1, 1], "M": [1, 1], "D": [1, 1], "err": [3.0, 4.0]})
    assert rep.pooled(two)["err"].iloc[0] == pytest.approx(np.sqrt(12.5))
    # the frontier claims are not measured
    assert rep.measure(exp.claims[2], None, "s", spec)["verdict"] == NOT_MEASURED


def test_ratio_and_collapse_claims(monkeypatch):
    exp = EXPERIMENTS["hidden-width-rates"]
    grid = _synthetic(lambda L, M, D: 1 / np.sqrt(L * M), [16, 64, 256, 1024], [1, 4, 16], [8])
    monkeypatch.setattr(rep, "_grid", lambda con, sweep, c: grid[grid.eval(c.where)] if c.where else grid)
    ratio = rep.measure(exp.claims[0], None, "s", _Spec("mean_ode"))
    assert ratio["value"] == pytest.approx(8.0) and ratio["verdict"] == AGREES
    collapse = rep.measure(exp.claims[1], None, "s", _Spec("mean_ode"))
    assert collapse["value"] == pytest.approx(0.0, abs=1e-12) and collapse["verdict"] == AGREES
    grid.loc[grid["M"] == 16, "err"] *= 1.5
    assert rep.measure(exp.claims[1], None, "s", _Spec("mean_ode"))["verdict"] == DISAGREES
    short = grid[grid["L"] < 1024]
    monkeypatch.setattr(rep, "_grid", lambda con, sweep, c: short)
    assert rep.measure(exp.claims[0], None, "s", _Spec("mean_ode"))["verdict"] == NOT_MEASURED


@pytest.mark.slow
def test_a_tiny_reproduction_writes_its_report(tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["reproduce", "companion-linear", "--scale", "tiny",
                                       "--store", str(tmp_path / "store"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text()
    assert 'id="claims"' in page and "a = 0.673 (fitted)" in page and "authors&#39; curve" not in page
    assert (out / "charts" / "err_hidden-vs-D-over-LM.svg").exists()
    svg = (out / "charts" / "err_hidden-vs-D-over-LM.svg").read_text()
    assert "this tool (measured)" in svg and "authors' curve" in svg  # the legend says which is which
    assert "| claim | paper |" in result.output
    assert f"reproduce companion-linear (tiny): the report goes to {out.resolve()}/ (--out to change)" in result.output
    assert f"report: {out.resolve() / 'index.html'}" in result.output
    # resumable: a second run trains nothing new
    again = CliRunner().invoke(main, ["reproduce", "companion-linear", "--scale", "tiny",
                                      "--store", str(tmp_path / "store"), "--out", str(out)])
    assert again.exit_code == 0, again.output
