"""explorer compare: pairing two sweeps on shared draws and seeds, the paired bootstrap, the
verdicts, the guard rails (exit 2), the saved rows and categorical grid axes."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from explorer.cli import main
from explorer.analysis.compare import Side, check_comparable, check_references, pair_frames, paired_fit
from explorer.errors import FitError
from explorer.config.planning import plan
from explorer.analysis.decomposed import REGIMES
from explorer.config.spec import load_spec
from store import Store

from tests.explorer.compare_data import planted_pair, planted_store


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def pair_store(tmp_path_factory):
    """A store with planted sweeps: base (c1 0.065), more_c1 (c1 x 1.2, same noise), twin (base
    again under another name), steps (another lr too), other_draws, other_problem."""
    tmp = tmp_path_factory.mktemp("compare")
    st = Store(tmp / "results")
    planted_store(st, "base", tmp_path=tmp)
    planted_store(st, "more_c1", c1=0.065 * 1.2, lr=0.8, tmp_path=tmp)
    planted_store(st, "twin", tmp_path=tmp)
    planted_store(st, "other_draws", draws=(7, 8), tmp_path=tmp)
    planted_store(st, "other_problem", d_in=6, tmp_path=tmp)
    return st


def test_a_paired_difference_in_c1_is_found_and_the_unpaired_interval_is_wider():
    a, b = planted_pair(REGIMES["rates"], np.random.default_rng(3))
    rows = paired_fit(pair_frames(a, b), n_boot=100).rows().set_index("parameter")
    assert rows.loc["c1", "verdict"] == "differs"
    assert rows.loc["c1", "ci_low"] < 1.2 < rows.loc["c1", "ci_high"]
    for name in ("c1", "a"):
        paired = rows.loc[name, "ci_high"] - rows.loc[name, "ci_low"]
        unpaired = rows.loc[name, "ci_high_unpaired"] - rows.loc[name, "ci_low_unpaired"]
        assert paired < unpaired / 2
    # the fluctuation is the same in both: its difference is 0 to rounding
    assert abs(rows.loc["b", "difference"]) < 1e-6 and rows.loc["b", "verdict"] == "no difference measured"


def test_the_estimates_are_close_to_each_fit_alone_and_the_difference_is_theirs():
    """estimate_a and estimate_b are each frame's decomposed fit with one set of weights for both
    (the mean of the two fits' variances): close to what each fit alone gives."""
    from explorer.analysis.decomposed import fit_decomposed

    a, b = planted_pair(REGIMES["easy"], np.random.default_rng(5))
    rows = paired_fit(pair_frames(a, b), n_boot=20).rows().set_index("parameter")
    for frame, column in ((a, "estimate_a"), (b, "estimate_b")):
        alone = fit_decomposed(frame, n_boot=0, per_draw=False, range_check=False).estimate
        for name in ("c1", "a", "c2", "b"):
            assert rows.loc[name, column] == pytest.approx(alone[name], rel=0.02)
    assert rows.loc["c1", "difference"] == pytest.approx(rows.loc["c1", "estimate_b"] / rows.loc["c1", "estimate_a"])
    assert rows.loc["a", "difference"] == pytest.approx(rows.loc["a", "estimate_b"] - rows.loc["a", "estimate_a"])


def test_identical_frames_are_called_identical_with_exact_zero_differences():
    a, _ = planted_pair(REGIMES["rates"], np.random.default_rng(4))
    fit = paired_fit(pair_frames(a, a.copy()), n_boot=10)
    rows = fit.rows().set_index("parameter")
    assert fit.identical and set(rows["verdict"]) == {"identical"}
    assert rows.loc["a", "difference"] == 0.0 and rows.loc["b", "difference"] == 0.0
    assert rows.loc["c1", "difference"] == 1.0 and rows.loc["c2", "difference"] == 1.0
    assert rows["ci_low"].isna().all()


def test_pairing_keeps_shared_points_draws_and_seeds_and_lists_the_rest():
    a, b = planted_pair(REGIMES["easy"], np.random.default_rng(6))
    b = b[~((b["L"] == 64) & (b["M"] == 64))].reset_index(drop=True)
    a = a[a["problem_seed"] != 1].copy()
    a = a.reset_index(drop=True)
    a["gram"] = [g[:4, :4] if i == 0 else g for i, g in enumerate(a["gram"])]
    a["seeds"] = [(0, 1, 2, 3) if i == 0 else s for i, s in enumerate(a["seeds"])]
    paired = pair_frames(a, b)
    assert len(paired.a) == len(paired.b) == len(b[b["problem_seed"] != 1])
    assert all(s == (0, 1, 2, 3) for s in paired.a.loc[paired.a["problem_seed"] == 2, "seeds"])
    text = " ".join(paired.left_out)
    assert "only B has" in text and "problem_seed 2: seeds 4" in text and "only A has" in text


def test_no_shared_draw_is_refused():
    a, b = planted_pair(REGIMES["easy"], np.random.default_rng(7))
    b["problem_seed"] += 10
    with pytest.raises(FitError, match="share no problem draw"):
        pair_frames(a, b)


def test_different_reference_kinds_are_refused():
    a, b = Side("a"), Side("b")
    with pytest.raises(FitError, match="different kinds of reference"):
        check_comparable({"ref_kind": ["mean_ode"], "lr": [1.0]}, {"ref_kind": ["largest"], "lr": [1.0]}, a, b)
    assert check_comparable({"ref_kind": ["mean_ode"], "lr": [1.0]}, {"ref_kind": ["mean_ode"], "lr": [0.8]},
                            a, b) == {"lr": ([1.0], [0.8])}


def test_references_of_other_numerics_are_refused_and_other_resolutions_warned():
    a, b = Side("a"), Side("b")
    base = {"depth": ["1024"], "width": ["512"], "replicas": ["2"], "numerics_version": ["4"], "problem": ["{}"]}
    assert check_references(base, dict(base), a, b) == []
    warned = check_references(base, {**base, "depth": ["512"]}, a, b)
    assert len(warned) == 1 and "depth: 1024 against 512" in warned[0]
    with pytest.raises(FitError, match="not comparable .numerics_version"):
        check_references(base, {**base, "numerics_version": ["3"]}, a, b)
    with pytest.raises(FitError, match="problem"):
        check_references(base, {**base, "problem": ['{"data": "sphere"}']}, a, b)


def test_cli_compares_two_planted_sweeps_and_saves_the_rows(pair_store):
    code, out = run("compare", "--sweep", "base", "--sweep", "more_c1", "--store", pair_store.uri,
                    "--bootstrap", "60")
    assert code == 0, out
    c1 = next(line for line in out.splitlines() if line.startswith("c1 "))
    assert "differs" in c1 and "paired [" in c1 and "unpaired [" in c1
    assert "wrote comparison compare-" in out
    rows = pair_store.query("SELECT * FROM comparisons ORDER BY parameter").to_pandas()
    assert list(rows["parameter"]) == ["a", "b", "c1", "c2"]
    assert set(rows["sweep_a"]) == {"base"} and set(rows["sweep_b"]) == {"more_c1"}
    assert rows.set_index("parameter").loc["c1", "verdict"] == "differs"
    assert set(rows["differing_keys"]) == {"lr"}
    assert "warning" not in out  # one knob (lr) differs
    seeds = next(line for line in out.splitlines() if line.startswith("note: the seeds' noise alone"))
    gains = dict(part.split()[-2:] for part in seeds.split(" by ")[1].split(";")[0].split(", "))
    assert float(gains["c1"].rstrip("x")) > 1 and "the draws' 2 degree(s) of freedom" in seeds  # 3 draws


def test_cli_says_two_names_for_one_spec_are_identical(pair_store):
    code, out = run("compare", "--sweep", "base", "--sweep", "twin", "--store", pair_store.uri,
                    "--bootstrap", "20", "--no-save")
    assert code == 0, out
    assert "the runs are identical" in out and "paired [" not in out and "seeds' noise alone" not in out


@pytest.mark.parametrize("other, message", [
    ("other_draws", "share no problem draw"),
    ("other_problem", "solve different problems"),
    ("missing", "unknown sweep"),
])
def test_cli_refuses_incomparable_sweeps_in_one_line(pair_store, other, message):
    code, out = run("compare", "--sweep", "base", "--sweep", other, "--store", pair_store.uri, "--no-save")
    assert code == 2
    assert message in out and len(out.strip().splitlines()) == 1 and "Traceback" not in out


def test_cli_refuses_a_form_it_cannot_pair_and_a_wrong_number_of_sweeps(pair_store):
    code, out = run("compare", "--sweep", "base", "--sweep", "twin", "--store", pair_store.uri, "--form", "theory")
    assert code == 2 and "decomposed law only" in out
    code, out = run("compare", "--sweep", "base", "--store", pair_store.uri)
    assert code == 2 and "twice" in out


def test_preset_and_activation_are_grid_axes_with_their_own_references(tmp_path):
    path = tmp_path / "presets.toml"
    path.write_text('name = "presets"\n[grid]\nL = [4, 8]\nM = [1, 4]\nD = [8]\npreset = ["mlu", "completep"]\n'
                    'activation = ["tanh", "relu"]\nseeds = 2\n')
    the_plan = plan(load_spec(str(path)))
    assert {(t.config.preset, t.config.activation) for t in the_plan.trials} == {
        ("mlu", "tanh"), ("mlu", "relu"), ("completep", "tanh"), ("completep", "relu")}
    by_ref = the_plan.trials_by_reference()
    for trials in by_ref.values():  # a reference serves one preset and one activation
        assert len({(t.config.preset, t.config.activation) for t in trials}) == 1
    columns = the_plan.trials[0].config.columns()
    assert {"preset", "activation"} <= set(columns)
    path.write_text('name = "p"\n[model]\npreset = "mlu"\n[grid]\nL = [4]\nM = [1]\nD = [8]\npreset = ["mlu"]\n')
    code, out = run("sweep", path, "--dry-run")
    assert code == 2 and "[grid] preset" in out


@pytest.mark.slow
def test_cli_compares_two_values_of_one_sweeps_axis(tmp_path):
    """--by: a sweep holding two presets is compared within itself (planted rows, one per preset)."""
    st = Store(tmp_path / "results")
    spec_path = tmp_path / "both.toml"
    spec_path.write_text('name = "both"\n[train]\nsteps = 3\n[reference]\ndepth = 32\nwidth = 16\n[grid]\n'
                         'L = [4, 8, 16, 32]\nM = [64, 256, 1024]\nD = [8]\npreset = ["mlu", "completep"]\n'
                         'problem_seeds = [1, 2]\nseeds = 3\n')
    from explorer.sweeps.adaptive import PlantedRunner, TermsLaw

    spec = load_spec(str(spec_path))
    PlantedRunner(st, TermsLaw(), entries=400, draw_sd=0.2, term_effects=True)(spec, {t.trial_key for t in plan(spec).trials})
    code, out = run("compare", "--sweep", "both", "--by", "preset", "--store", st.uri, "--bootstrap", "20")
    assert code == 0, out
    assert "A = both [preset = 'completep'], B = both [preset = 'mlu']" in out
    rows = st.query("SELECT where_a, where_b, verdict FROM comparisons").to_pandas()
    assert set(rows["where_a"]) == {"preset = 'completep'"} and set(rows["verdict"]) == {"identical"}
    code, out = run("compare", "--sweep", "both", "--by", "lr", "--store", st.uri)
    assert code == 2 and "holds 1 value(s) of lr" in out
    code, out = run("report", "--sweep", "both", "--store", st.uri, "--out", tmp_path / "report", "--bootstrap", "10",
                    "--no-save", "--export", "png")
    assert code == 0, out
    assert (tmp_path / "report" / "error_vs_preset.png").exists()  # a categorical axis gets its chart too


@pytest.mark.slow
def test_report_with_compare_adds_the_table_and_charts(pair_store, tmp_path):
    out = tmp_path / "report"
    code, text = run("report", "--sweep", "base", "--compare", "more_c1", "--store", pair_store.uri, "--out", out,
                     "--bootstrap", "20", "--no-save", "--export", "png")
    assert code == 0, text
    page = (out / "index.html").read_text()
    assert 'id="sweep-comparison"' in page and "sweeps-table" in page and "differs" in page
    for name in ("compare_vs_depth", "compare_vs_units", "compare_differences"):
        assert (out / f"{name}.png").exists() and f'data-chart="{name}"' in page
    code, text = run("report", "--sweep", "base", "--compare", "other_draws", "--store", pair_store.uri,
                     "--out", tmp_path / "refused", "--no-save")
    assert code == 2 and "share no problem draw" in text


def test_each_sides_own_fit_warnings_are_carried(pair_store):
    """A side whose law leaves a term unmeasured says so, prefixed with its letter."""
    from explorer.analysis.compare import Paired
    from explorer.analysis.compare import side_warnings

    a, b = planted_pair(REGIMES["easy"], np.random.default_rng(8))
    paired = pair_frames(a, b)
    assert side_warnings(paired, "quadrature") == []
    flat = paired.a.copy()
    flat["gram"] = [g * 0 + np.eye(len(g)) * 1e-2 for g in flat["gram"]]  # no bias, no slope: nothing measured
    warned = side_warnings(Paired(flat, paired.b, [], paired.n_seeds), "quadrature")
    assert warned and all(w.startswith("A: ") for w in warned)


@pytest.fixture(scope="module")
def lr_store(tmp_path_factory):
    """A sweep of two presets x two learning rates (planted rows): --by preset has lr varying too."""
    tmp = tmp_path_factory.mktemp("lrxfer")
    st = Store(tmp / "results")
    spec_path = tmp / "lrxfer.toml"
    spec_path.write_text('name = "lrxfer"\n[train]\nsteps = 3\n[reference]\ndepth = 32\nwidth = 16\n[grid]\n'
                         'L = [4, 8, 16]\nM = [64, 256]\nD = [8]\npreset = ["mlu", "completep"]\n'
                         'lr = [0.125, 0.5]\nproblem_seeds = [1, 2]\nseeds = 3\n')
    from explorer.sweeps.adaptive import PlantedRunner, TermsLaw

    spec = load_spec(str(spec_path))
    PlantedRunner(st, TermsLaw(), entries=400, draw_sd=0.2, term_effects=True)(spec, {t.trial_key for t in plan(spec).trials})
    return st


def test_compare_by_refuses_to_take_one_slice_of_another_varying_axis_silently(lr_store):
    code, out = run("compare", "--sweep", "lrxfer", "--by", "preset", "--store", lr_store.uri, "--no-save")
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert "also varies lr besides L, M, D and preset (lr: 0.125, 0.5)" in out and "--at lr=0.125" in out
    code, out = run("compare", "--sweep", "lrxfer", "--by", "preset", "--at", "lr=0.3", "--store", lr_store.uri)
    assert code == 2 and "sweep 'lrxfer' has no such lr; it holds 0.125, 0.5" in out
    code, out = run("compare", "--sweep", "lrxfer", "--by", "preset", "--at", "lr", "--store", lr_store.uri)
    assert code == 2 and "expected AXIS=VALUE" in out


@pytest.mark.slow
def test_compare_at_an_axis_value_compares_that_slice_and_says_so(lr_store):
    import explorer

    results = {lr: explorer.compare("lrxfer", by="preset", at={"lr": lr}, store=lr_store, n_boot=10)
               for lr in ("0.125", "0.5")}
    for lr, result in results.items():
        assert f'rows where "lr" = {lr}' in result.lines()[0]
        assert len(result.paired.a) == 12  # 3 L x 2 M x 2 draws: the slice, not the whole sweep
    rows = lr_store.query("SELECT count(DISTINCT comparison_id) AS n FROM comparisons").to_pylist()
    assert rows == [{"n": 2}]  # two slices, two comparisons
    code, out = run("compare", "--sweep", "lrxfer", "--by", "preset", "--at", "lr=0.5", "--store", lr_store.uri,
                    "--bootstrap", "10", "--no-save")
    assert code == 0 and 'rows where "lr" = 0.5' in out, out
