"""explorer coordcheck (explorer.analysis.hyper.coordcheck): planted sizes with known exponents in
M and L recovered within their intervals and equal to an independent least squares, the refusals
(no coordinate-check columns, neither M nor L varied), the printed table; one small real sweep."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from explorer import api
from explorer.analysis.hyper import COORD_COLUMNS, coord_exponents, coord_sizes
from explorer.cli import main
from store import Store

from tests.explorer.analysis_data import connect, law_rows, write_to_store

MS, LS = (16, 64, 256), (4, 16, 64)
# preset -> (exponent in M, exponent in L) of every coordinate-check column and of feature_update
PLANTED = {"mlu": (0.0, -0.5), "lazy": (-0.5, 0.25)}


def planted_frame(*, n_draws: int = 3, n_seeds: int = 3, steps: int = 2, sweep: str = "coords", seed: int = 0,
                  Ms=MS, Ls=LS) -> pd.DataFrame:
    """Metric rows whose sizes at the last step are A_q M^a L^b times a draw effect (sd 0.2 in log)
    and seed noise (sd 0.05 in log); 0 at step 0, as the engine writes them."""
    rng = np.random.default_rng(seed)
    template = law_rows(lambda L, M, D: 0.1, Ls=(4,), Ms=(16,), seeds=1, steps=steps).iloc[0].to_dict()
    quantities = COORD_COLUMNS + ("feature_update",)
    scale = {q: 0.1 * (i + 1) for i, q in enumerate(quantities)}
    draw_effect = rng.normal(0, 0.2, n_draws)
    rows = []
    for preset, (a, b) in PLANTED.items():
        for M, L, g, s in itertools.product(Ms, Ls, range(n_draws), range(n_seeds)):
            size = {q: scale[q] * M**a * L**b * np.exp(draw_effect[g] + rng.normal(0, 0.05)) for q in quantities}
            for step in range(steps + 1):
                row = dict(template, sweep=sweep, trial_key=f"{preset}-M{M}-L{L}-g{g}", preset=preset, M=M, L=L,
                           problem_seed=g, seed=s, step=step, steps=steps)
                row.update({q: (v if step == steps else 0.0 * v) for q, v in size.items()})
                rows.append(row)
    return pd.DataFrame(rows)


def lstsq_exponents(frame: pd.DataFrame, preset: str, quantity: str) -> np.ndarray:
    """(a, b) of log size = c_draw + a log M + b log L by numpy's lstsq on the last-step rows."""
    last = frame[(frame["preset"] == preset) & (frame["step"] == frame["steps"])]
    dummies = pd.get_dummies(last["problem_seed"]).to_numpy(float)
    design = np.column_stack([dummies, np.log(last["M"]), np.log(last["L"])])
    return np.linalg.lstsq(design, np.log(last[quantity].to_numpy(float)), rcond=None)[0][-2:]


def test_planted_exponents_are_recovered_within_their_intervals_and_match_lstsq():
    frame = planted_frame()
    result = coord_exponents(coord_sizes(connect(frame), "coords"), n_boot=200)
    fits = result.fits
    assert set(fits["preset"]) == {"mlu", "lazy"} and len(fits) == 2 * 9 * 2
    covered = 0
    for row in fits.to_dict("records"):
        truth = PLANTED[row["preset"]][0 if row["axis"] == "M" else 1]
        covered += row["ci_low"] <= truth <= row["ci_high"]
        assert abs(row["estimate"] - truth) < 0.03 and row["ci_high"] - row["ci_low"] < 0.2, row
        independent = lstsq_exponents(frame, row["preset"], row["quantity"])[0 if row["axis"] == "M" else 1]
        assert row["estimate"] == pytest.approx(independent, abs=1e-10)
    # 95% intervals on 36 exponents (fixed seed): about 34 cover; fewer than 32 would be a wrong width
    assert covered >= 32, covered
    table = result.sizes.table()
    mlu = table[(table["preset"] == "mlu") & (table["L"] == 4)]
    assert list(mlu["M"]) == list(MS)
    # mlu's planted sizes do not move with M: the geometric mean over runs is flat up to noise
    assert np.ptp(np.log(mlu["coord_update_b3"])) < 0.1


def test_a_sweep_without_the_columns_or_without_m_and_l_is_refused_in_one_line(tmp_path):
    root = str(tmp_path / "results")
    st = Store(root)
    old = planted_frame(sweep="old", n_draws=1, n_seeds=2, Ms=(16, 64), Ls=(4,))
    for column in COORD_COLUMNS:
        old[column] = None
    write_to_store(old, st)
    write_to_store(planted_frame(sweep="flat", n_draws=1, n_seeds=2, Ms=(16,), Ls=(4,)), st)
    for sweep, words in (("old", "has no coordinate check"), ("flat", "varies neither M nor L")):
        result = CliRunner().invoke(main, ["coordcheck", "--sweep", sweep, "--store", root])
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1 and words in lines[0], result.output


def test_the_command_prints_the_tables_and_exponents_the_twin_returns(tmp_path):
    root = str(tmp_path / "results")
    write_to_store(planted_frame(n_draws=2, n_seeds=2), Store(root))
    result = CliRunner().invoke(main, ["coordcheck", "--sweep", "coords", "--store", root, "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == api.coordcheck("coords", store=root, n_boot=50).lines()
    text = result.output
    assert "preset=lazy:" in text and "preset=mlu:" in text
    assert "update b0" in text and "branch b3" in text and "feature_update" in text
    header = next(line for line in text.splitlines() if "update b0" in line).split()
    assert header[:2] == ["M", "L"]
    assert "coord_update_b3: M^" in text and " L^" in text
    at_zero = api.coordcheck("coords", store=root, step=0, n_boot=10)
    assert at_zero.fits["estimate"].isna().all() and "no exponent measured" in at_zero.lines()[-1]


def test_the_report_adds_the_coordinate_check_charts_when_the_columns_exist():
    from explorer.report.hyper_report import hyper_charts

    charts = hyper_charts(connect(planted_frame(n_draws=1, n_seeds=2)), "coords", ["L", "M", "preset"], n_boot=10)
    assert sorted(charts) == ["hyper_coordcheck_branch", "hyper_coordcheck_update"]
    assert charts["hyper_coordcheck_update"].to_dict()["facet"]["column"]["field"] == "bin"
    old = planted_frame(n_draws=1, n_seeds=2)
    for column in COORD_COLUMNS:
        old[column] = np.nan
    assert hyper_charts(connect(old), "coords", ["L", "M", "preset"], n_boot=10) == {}


@pytest.mark.slow
def test_a_real_sweep_measures_theta_one_feature_updates_for_mlu_and_falling_ones_for_lazy():
    # M = 16, 64 x L = 4, 16, mlu (alpha 1) and lazy (alpha 16), 1 draw x 2 seeds, 5 steps: about 10 s
    from trials import TrialConfig

    from tests.explorer.analysis_data import grid_configs, run_trials

    base = TrialConfig(L=4, M=16, D=8, steps=5, seeds=(0, 1), device="cpu")
    configs = [c for preset, alpha in (("mlu", 1.0), ("lazy", 16.0))
               for c in grid_configs(base.replace(preset=preset, alpha=alpha), M=(16, 64), L=(4, 16))]
    frame = run_trials(configs, sweep="coords", ref_depth=8, ref_width=4)
    result = coord_exponents(coord_sizes(connect(frame), "coords"), n_boot=200)
    fits = result.fits.set_index(["preset", "quantity", "axis"])
    assert result.sizes.groups == ["preset", "alpha"]
    for preset in ("mlu", "lazy"):
        for q in result.sizes.quantities:
            independent = lstsq_exponents(frame, preset, q)
            assert fits.loc[(preset, q, "M"), "estimate"] == pytest.approx(independent[0], abs=1e-9)
            assert fits.loc[(preset, q, "L"), "estimate"] == pytest.approx(independent[1], abs=1e-9)
    # mlu: Theta(1) feature updates in M and L; lazy (alpha = 16): they fall with L (docs/hyperparameters.md)
    assert abs(fits.loc[("mlu", "feature_update", "M"), "estimate"]) < 0.1
    assert abs(fits.loc[("mlu", "feature_update", "L"), "estimate"]) < 0.1
    assert fits.loc[("lazy", "feature_update", "L"), "ci_high"] < -0.5
