"""The phase diagram: the rule on real trials (alpha sweep) and on constructed cells."""
import functools

import numpy as np
import pandas as pd
import pytest

from explorer.errors import MixedReferencesError, SweepDataError
from explorer.analysis.phase import PHASES, PhaseRule, classify, format_phase, phase_diagram
from trials import TrialConfig

from tests.explorer.analysis_data import connect, grid_configs, law_rows, mark_trial, rerun_with_new_reference, run_trials


@functools.lru_cache(maxsize=1)
def alpha_sweep() -> pd.DataFrame:
    """Real trials: alpha in 1..64 across D in {4, 8}, L = M = 8, antithetic units (no initial
    output noise, so large alpha stays inside the Mean ODE picture), 10 GD steps."""
    base = TrialConfig(L=8, M=8, D=4, steps=10, seeds=(0, 1), device="cpu", antithetic=True)
    configs = grid_configs(base, alpha=(1.0, 4.0, 16.0, 64.0), D=(4, 8))
    return run_trials(configs, sweep="alpha", ref_depth=8, ref_width=4)


@pytest.mark.slow
def test_alpha_one_is_mlu_and_alpha_sixteen_and_more_is_lazy_on_real_trials():
    diagram = phase_diagram(connect(alpha_sweep()), "alpha", "alpha", "D")
    cells = diagram.cells.set_index(["alpha", "D"])
    assert len(cells) == 8
    for D in (4, 8):
        assert cells.loc[(1.0, D), "phase"] == "mlu"
        assert cells.loc[(4.0, D), "phase"] == "lazy"  # local_ratio ~ 0.3, already ~1/alpha
        assert cells.loc[(16.0, D), "phase"] == "lazy"
        assert cells.loc[(64.0, D), "phase"] == "lazy"
        # lazy: the units move ~1/alpha while the output still moves Theta(1)
        ratio = cells.loc[(64.0, D), "local_ratio"] / cells.loc[(1.0, D), "local_ratio"]
        assert 1 / 128 < ratio < 1 / 32
        assert cells.loc[(64.0, D), "output_change"] > 0.5 * cells.loc[(1.0, D), "output_change"]
    assert not cells["init_noise_flag"].any()  # antithetic units: no initial output noise
    assert diagram.counts() == {"mlu": 2, "lazy": 6, "trivial": 0, "diverged": 0, "failed": 0}


@pytest.mark.slow
def test_a_too_small_learning_rate_is_trivial_on_real_trials():
    base = TrialConfig(L=16, M=16, D=8, steps=10, seeds=(0, 1), device="cpu", preset="completep")
    rows = run_trials(grid_configs(base, lr=(0.125, 1.0), L=(4, 16)), sweep="lr", ref_depth=8, ref_width=4)
    cells = phase_diagram(connect(rows), "lr", "lr", "L").cells.set_index(["lr", "L"])
    moved = cells["output_change"] / cells["initial_residual"]
    for L in (4, 16):  # completep at M = 16, D = 8: alpha_eff = 1.41, on the lazy threshold at small lr
        assert cells.loc[(0.125, L), "phase"] == "trivial" and moved[(0.125, L)] < 0.25
        assert cells.loc[(1.0, L), "phase"] == "mlu" and moved[(1.0, L)] > 0.35


def _cells(**columns):
    base = dict(feature_update=0.44, lin_ratio=0.35, output_change=0.63, initial_residual=1.27, n_seeds=2,
                n_diverged=0, n_failed=0, n_final=2)
    base.update(columns)
    return pd.DataFrame({k: [v] if np.isscalar(v) else v for k, v in base.items()})


@pytest.mark.parametrize("columns, phase", [
    ({}, "mlu"),  # docs/model.md section 4: alpha = 1
    ({"feature_update": 0.12, "lin_ratio": 0.12}, "lazy"),  # alpha = 4
    ({"feature_update": 0.035, "lin_ratio": 0.033}, "lazy"),  # alpha = 16
    ({"feature_update": 0.035, "lin_ratio": 0.4}, "mlu"),  # one local measure large is enough
    ({"output_change": 0.02}, "trivial"),
    # a too-small lr: the output moved 0.2 of its initial residual 1.27, the units less (once read "lazy")
    ({"output_change": 0.25, "feature_update": 0.1, "lin_ratio": 0.1}, "trivial"),
    ({"output_change": 0.33, "feature_update": 0.1, "lin_ratio": 0.1}, "lazy"),  # moved 0.26 of the way
    ({"n_diverged": 1}, "diverged"),
    ({"feature_update": float("nan")}, "diverged"),
    ({"n_final": 1}, "diverged"),
    ({"n_failed": 2, "n_final": 0}, "failed"),
])
def test_phase_rule(columns, phase):
    assert classify(_cells(**columns))[0] == phase


def test_thresholds_are_configurable():
    cells = _cells(feature_update=0.12, lin_ratio=0.12)
    assert classify(cells, PhaseRule(lazy_ratio=0.1))[0] == "mlu"


def test_diverged_failed_and_trivial_cells_in_a_sweep():
    rows = law_rows(lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), Ds=(4, 8), alphas=(1.0, 4.0, 64.0), seeds=2, sweep="p")
    rows = mark_trial(rows, "L8-M8-D4-a4", "diverged", seeds=[0], from_step=6)
    rows = mark_trial(rows, "L8-M8-D8-a4", "failed")
    trivial = rows["alpha"] == 64.0
    rows.loc[trivial, "output_change"] *= 0.01
    diagram = phase_diagram(connect(rows), "p", "alpha", "D")
    cells = diagram.cells.set_index(["alpha", "D"])["phase"]
    assert cells[(4.0, 4)] == "diverged" and cells[(4.0, 8)] == "failed"
    assert cells[(64.0, 4)] == "trivial" and cells[(1.0, 8)] == "mlu"
    flags = diagram.cells.set_index(["alpha", "D"])["init_noise_flag"]
    assert flags[(64.0, 8)] and not flags[(1.0, 8)]  # alpha / sqrt(L M) = 8 vs 1/8
    text = format_phase(diagram)
    assert "diverged" in text and "trivial*" in text and set(PHASES) >= set(cells)


def test_other_varying_axes_are_held_where_the_diagram_is_fullest():
    rows = pd.concat([
        law_rows(lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), Ds=(4, 8), alphas=(1.0, 16.0), seeds=1, sweep="p"),
        law_rows(lambda L, M, D: 0.1, Ls=(16,), Ms=(8,), Ds=(4,), alphas=(1.0,), seeds=1, sweep="p")])
    diagram = phase_diagram(connect(rows), "p", "alpha", "D")
    assert diagram.fixed == {"L": 8} and len(diagram.cells) == 4
    assert "other axes held at: L=8" in format_phase(diagram)


@pytest.mark.parametrize("x, y, message", [
    ("alpha", "foo", "unknown phase axis 'foo'; expected one of: L, M, D"),
    ("alpha", "alpha", "two different axes"),
])
def test_bad_axes_are_refused(x, y, message):
    con = connect(law_rows(lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), seeds=1, sweep="p"))
    with pytest.raises(SweepDataError, match=message):
        phase_diagram(con, "p", x, y)


def test_a_rerun_against_a_new_reference_counts_each_seed_once():
    rows = rerun_with_new_reference(lambda L, M, D: 0.2, lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), Ds=(4, 8),
                                    alphas=(1.0, 16.0), seeds=2, sweep="p")
    rows = mark_trial(rows, "L8-M8-D4-a16-old", "diverged", seeds=[0], from_step=6)  # superseded: not counted
    diagram = phase_diagram(connect(rows), "p", "alpha", "D")
    assert (diagram.cells["n_seeds"] == 2).all() and (diagram.cells["phase"] != "diverged").all()
    [note] = [n for n in diagram.notes if "references" in n]  # (alpha = 16 at L = M = 8 is also init_noise)
    assert "4 of 4 grid points have trials against several references" in note
    assert f"note: {note}" in format_phase(diagram)
    with pytest.raises(MixedReferencesError, match="sweep p mixes 4 references"):
        phase_diagram(connect(rows.drop(columns="started_at")), "p", "alpha", "D")


def test_flagged_seeds_are_left_out_of_the_cells_and_counted():
    rows = law_rows(lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), Ds=(4, 8), alphas=(1.0, 16.0), seeds=3, sweep="p")
    clean = phase_diagram(connect(rows), "p", "alpha", "D")
    assert clean.n_flagged == 0 and not any("stability flag" in n for n in clean.notes)
    rows["flags"] = None
    # one seed of the alpha = 1 cells looks lazy; flagged (chaotic), it must not count
    hit = (rows["alpha"] == 1.0) & (rows["seed"] == 0)
    rows.loc[hit, ["feature_update", "lin_ratio"]] *= 0.01
    rows.loc[hit, "flags"] = "chaotic"
    diagram = phase_diagram(connect(rows), "p", "alpha", "D")
    assert diagram.n_flagged == 2 and any("2 seeds with a stability flag" in n for n in diagram.notes)
    cells = diagram.cells.set_index(["alpha", "D"])
    assert (cells["n_seeds"] == [2, 2, 3, 3]).all()
    pd.testing.assert_series_equal(cells["feature_update"], clean.cells.set_index(["alpha", "D"])["feature_update"])


def test_init_noise_marks_the_docs_criterion_with_D_at_or_above_one_and_every_trials_flag():
    rows = law_rows(lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), Ds=(4, 8), alphas=(1.0, 4.0, 16.0), seeds=2, sweep="p")
    rows["residual_scale"] = rows["alpha"] / (rows["L"] * rows["M"])  # mlu: alpha_eff = alpha
    rows["flags"] = ""
    rows.loc[rows["D"] == 4, "flags"] = None  # rows from before the flags column: the criterion alone
    diagram = phase_diagram(connect(rows), "p", "alpha", "D")
    cells = diagram.cells.set_index(["alpha", "D"])
    # the initial hidden noise alpha_eff sqrt(D / (L M)), computed here: alpha = 4 at D = 4 is exactly 1
    noise = {(a, D): a * (D / 64) ** 0.5 for a in (1.0, 4.0, 16.0) for D in (4, 8)}
    np.testing.assert_allclose(cells["init_noise"].to_numpy(), [noise[k] for k in cells.index])
    assert noise[(4.0, 4)] == 1.0
    assert cells["init_noise_flag"].to_dict() == {k: v >= 1.0 for k, v in noise.items()}
    assert cells.loc[(16.0, 8), "n_seeds"] == 2 and diagram.n_flagged == 0 and diagram.n_init_noise == 8
    assert "init noise: alpha_eff sqrt(D/(LM)) >= 1" in format_phase(diagram)
    assert "note: 8 seeds flagged init_noise in 4 cells (marked *)" in format_phase(diagram)
    # a seed the trials flagged (a sweep with a lower init_noise_limit) marks its cell below the criterion
    rows.loc[(rows["alpha"] == 1.0) & (rows["D"] == 8), "flags"] = "init_noise"
    marked = phase_diagram(connect(rows), "p", "alpha", "D").cells.set_index(["alpha", "D"])["init_noise_flag"]
    assert marked[(1.0, 8)] and not marked[(1.0, 4)]


def test_the_footnote_appears_only_when_a_cell_is_marked():
    rows = law_rows(lambda L, M, D: 0.1, Ls=(8,), Ms=(8,), Ds=(4,), alphas=(1.0, 2.0), seeds=2, sweep="p")
    text = format_phase(phase_diagram(connect(rows), "p", "alpha", "D"))  # noise 0.25 and 0.5: none marked
    assert "*" not in text and "init noise" not in text
