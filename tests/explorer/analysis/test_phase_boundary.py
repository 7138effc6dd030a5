"""The phase boundary: alpha* per slice and its exponents, on a planted phase surface checked
against a plain recomputation here, and on a small real sweep run as a user runs it."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from explorer import api
from explorer.analysis.phase import crossing, format_boundary, phase_boundary, theory_exponents
from explorer.errors import SweepDataError
from store import Store

from tests.explorer.analysis_data import connect, law_rows
from tests.paths import REPO_ROOT

ALPHAS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
DS = (4, 8, 16, 32, 64)


def planted_star(D):
    """The planted crossover: alpha* = 1.5 (D / 8)^0.5."""
    return 1.5 * (D / 8) ** 0.5


def planted_rows(draws=3, seeds=4, noise=0.1, draw_sd=0.05, alphas=ALPHAS, Ds=DS, star=planted_star, rng_seed=1):
    """Metric rows whose local ratio at the last step is 0.5 alpha*(D) / alpha times a seed's
    log-normal noise and a draw's shift: it crosses 0.5 at alpha*(D)."""
    rng = np.random.default_rng(rng_seed)
    frames = []
    for g in range(draws):
        rows = law_rows(lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), Ds=Ds, alphas=alphas, seeds=seeds, sweep="p",
                        rng=rng)
        rows["problem_seed"] = g + 1
        rows["trial_key"] = rows["trial_key"] + f"-g{g}"
        shift = rng.normal(0, draw_sd)
        per_seed = {key: math.exp(shift + rng.normal(0, noise)) for key in
                    rows[["trial_key", "seed"]].drop_duplicates().itertuples(index=False)}
        factor = np.array([per_seed[(k, s)] for k, s in zip(rows["trial_key"], rows["seed"])])
        moved = rows["step"] / rows["step"].max()
        rows["feature_update"] = moved * 0.6 * 0.5 * star(rows["D"]) / rows["alpha"] * factor
        rows["lin_ratio"] = 0.8 * rows["feature_update"]
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def naive_crossovers(rows):
    """alpha* per D computed plainly: medians over every seed of the final step, the first pair of
    grid values whose ratios straddle 0.5, log ratio interpolated on log alpha."""
    last = rows[rows["step"] == rows["step"].max()]
    cells = last.groupby(["D", "alpha"])[["feature_update", "lin_ratio", "output_change"]].median()
    ratio = np.maximum(cells["feature_update"], cells["lin_ratio"]) / cells["output_change"]
    out = {}
    for D in sorted(set(last["D"])):
        r = ratio.loc[D].sort_index()
        for (a0, r0), (a1, r1) in zip(r.items(), list(r.items())[1:]):
            if r0 >= 0.5 > r1:
                t = (math.log(0.5) - math.log(r0)) / (math.log(r1) - math.log(r0))
                out[D] = math.exp(math.log(a0) + t * (math.log(a1) - math.log(a0)))
                break
    return out


def test_crossing_interpolates_on_the_log_axis_and_names_the_edges():
    alphas = np.array([1.0, 2.0, 4.0])
    log_star, edge = crossing(alphas, np.array([0.8, 0.6, 0.3]), 0.5)
    t = (math.log(0.5) - math.log(0.6)) / (math.log(0.3) - math.log(0.6))
    assert edge is None and log_star == pytest.approx(math.log(2.0) + t * math.log(2.0))
    assert crossing(alphas, np.array([0.4, 0.3, 0.2]), 0.5) == (-math.inf, "below")
    assert crossing(alphas, np.array([0.9, 0.7, 0.6]), 0.5) == (math.inf, "above")
    assert crossing(alphas, np.array([0.9, 0.5, 0.2]), 0.5)[0] == pytest.approx(math.log(2.0))  # = 0.5 is mlu: it sits there


def test_planted_crossovers_and_their_D_exponent_are_recovered():
    rows = planted_rows()
    boundary = phase_boundary(connect(rows), "p", "D", n_boot=200)
    got = boundary.crossovers.set_index("D")
    naive = naive_crossovers(rows)
    assert sorted(naive) == list(DS)
    for D in DS:
        assert got.loc[D, "alpha_star"] == pytest.approx(naive[D], rel=1e-9)
        assert got.loc[D, "ci_low"] < planted_star(D) < got.loc[D, "ci_high"]
        assert got.loc[D, "edge"] is None
    [exponent] = boundary.exponents.to_dict("records")
    slope = np.polyfit(np.log(list(naive)), np.log(list(naive.values())), 1)[0]
    assert exponent["axis"] == "D" and exponent["exponent"] == pytest.approx(slope, rel=1e-9)
    assert exponent["ci_low"] < 0.5 < exponent["ci_high"] and exponent["ci_high"] - exponent["ci_low"] < 0.4
    assert exponent["theory"] == 0.0 and exponent["preset"] == "mlu"  # mlu: alpha_eff = alpha
    assert boundary.method == "draws, then seeds within draws" and boundary.n_draws == 3
    text = format_boundary(boundary)
    assert "alpha* ~ D^e: e = " in text and "theory 0 (preset mlu" in text and "t(2)" in text


def test_one_draw_intervals_cover_the_seeds_and_narrow_with_them():
    few = phase_boundary(connect(planted_rows(draws=1, seeds=4, draw_sd=0.0)), "p", "D", n_boot=200)
    many = phase_boundary(connect(planted_rows(draws=1, seeds=32, draw_sd=0.0)), "p", "D", n_boot=200)
    width = {name: (b.crossovers["ci_high"] / b.crossovers["ci_low"]).median() for name, b in
             (("few", few), ("many", many))}
    assert few.method == "seeds" and width["many"] < width["few"]
    # the seeds' noise is 0.1 in log per seed: 32 seeds give a median's sd near 0.1 * 1.25 / sqrt(32)
    assert 1.02 < width["many"] < 1.3


def test_a_slice_past_the_grid_is_an_edge_and_left_out_of_the_exponent():
    rows = planted_rows(star=lambda D: np.where(D >= 64, 0.1, planted_star(D)))
    boundary = phase_boundary(connect(rows), "p", "D", n_boot=50)
    got = boundary.crossovers.set_index("D")
    assert got.loc[64, "edge"] == "below" and math.isnan(got.loc[64, "alpha_star"])
    assert boundary.exponents.iloc[0]["n_slices"] == 4
    assert "below 0.5   (every cell lazy)" in format_boundary(boundary)


def test_theory_exponents_follow_each_presets_residual_scale():
    assert theory_exponents("mlu") == {"L": 0.0, "M": 0.0, "D": 0.0}
    assert theory_exponents("completep") == {"L": 0.0, "M": -0.5, "D": 0.5}  # alpha_eff = alpha sqrt(M/D)
    assert theory_exponents("depth_mup") == {"L": -0.5, "M": -0.5, "D": 0.5}  # alpha_eff = alpha sqrt(LM/D)


def test_a_sweep_with_one_alpha_has_no_boundary():
    rows = law_rows(lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), Ds=(4, 8), alphas=(1.0,), seeds=2, sweep="p")
    with pytest.raises(SweepDataError, match="one value of alpha"):
        phase_boundary(connect(rows), "p", "D")


@pytest.mark.slow
def test_explorer_phase_on_a_small_real_alpha_by_D_sweep(tmp_path):
    """examples/alpha_phase.toml shrunk (L = M = 16, D = 4, 16, 2 draws x 3 seeds, 5 steps), run
    from a temporary folder as a user runs it; alpha* per D printed with intervals and the D
    exponent beside the theory's 0."""
    spec = str(REPO_ROOT / "examples" / "alpha_phase.toml")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    exe = [sys.executable, "-m", "explorer.cli"]
    run = subprocess.run(exe + ["sweep", os.path.abspath(spec), "grid.L=[16]", "grid.M=[16]", "grid.D=[4, 16]",
                                "grid.alpha=[0.5, 1.0, 2.0, 4.0, 8.0]", "grid.problem_seeds=[1, 2]", "problem.seed=",
                                "reference.depth=32", "reference.width=16", "train.steps=5"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    shown = subprocess.run(exe + ["phase", "--sweep", "alpha_phase", "--x", "alpha", "--y", "D"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-2000:]
    text = shown.stdout
    assert "phase boundary: alpha* where local_ratio crosses 0.5" in text and "t(1)" in text
    assert "alpha* ~ D^e: e = " in text and "theory 0 (preset mlu" in text
    print(text)  # the measurement, under pytest -s
    diagram = api.phase("alpha_phase", Store(str(tmp_path / "results")), x="alpha", y="D")
    stars = diagram.boundary.crossovers.set_index("D")["alpha_star"]
    assert ((stars > 0.5) & (stars < 8)).all()  # the crossover near alpha ~ 1 - 2 at every D
    shutil.rmtree(tmp_path / "results", ignore_errors=True)


def test_a_sweep_without_an_mlu_or_lazy_cell_has_no_boundary():
    rows = law_rows(lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), Ds=(4, 8), alphas=(1.0, 4.0), seeds=2, sweep="p")
    rows["output_change"] *= 0.01  # every cell trivial
    with pytest.raises(SweepDataError, match="no mlu or lazy cell"):
        phase_boundary(connect(rows), "p", "D")
