"""The companion paper's measures against a joint_limit reference (``err_hidden_depthmean``, the
hidden error's mean over depth, and ``err_backward``, the backward states' error) are fitted like
the other errors: a planted law is recovered from a store, through ``explorer fit --metric``."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from explorer.analysis.data import ERROR_METRICS, FIT_METRICS, grid_errors
from explorer.api import fit
from explorer.cli import main
from store import Store

from tests.explorer.analysis_data import law_rows, write_to_store

# Each measure its own planted law, far from err_out's, so a fit of the wrong column is caught.
PLANTED = {"err_out": (0.3, 1.0), "err_hidden_depthmean": (0.05, 0.5), "err_backward": (2.0, 1.5)}  # c, a in c L^-a


@pytest.fixture(scope="module")
def companion_store(tmp_path_factory):
    """A joint_limit sweep whose rows carry the three measures, each following its planted law in L."""
    c, a = PLANTED["err_out"]
    rows = law_rows(lambda L, M, D: c * L**-a, Ls=(2, 4, 8, 16, 32, 64), Ms=(4, 16), seeds=5, sweep="companion",
                    rng=np.random.default_rng(3))
    rows["ref_kind"] = "joint_limit"
    for metric in ("err_hidden_depthmean", "err_backward"):
        c_m, a_m = PLANTED[metric]
        # the same seed noise as err_out, scaled to this measure's law
        rows[metric] = rows["err_out"] * (c_m * rows["L"] ** -a_m) / (c * rows["L"] ** -a)
    st = Store(tmp_path_factory.mktemp("companion") / "s")
    write_to_store(rows, st)
    return st


def test_both_measures_are_fit_metrics_with_their_references_error():
    assert {"err_hidden_depthmean", "err_backward"} <= set(FIT_METRICS)
    assert ERROR_METRICS["err_hidden_depthmean"].reference == "ref_err_hidden"
    assert ERROR_METRICS["err_backward"].reference is None  # the reference estimates no backward error


@pytest.mark.parametrize("metric", sorted(PLANTED))
def test_a_planted_law_in_depth_is_recovered_for_each_measure(companion_store, metric):
    c, a = PLANTED[metric]
    result = fit("companion", "c*L**-a", store=companion_store, metric=metric, n_boot=50, save=False).result
    assert result.ci_low["a"] <= a <= result.ci_high["a"], (metric, result.ci_low["a"], result.ci_high["a"])
    assert result.estimate["c"] == pytest.approx(c, rel=0.15)


def test_the_backward_error_has_no_floor_and_the_hidden_mean_keeps_the_hidden_one(companion_store):
    con = companion_store.connect(sweep="companion", read_only=True)
    try:
        backward = grid_errors(con, "companion", metric="err_backward")
        hidden = grid_errors(con, "companion", metric="err_hidden_depthmean")
    finally:
        con.close()
    assert backward["ref_err"].isna().all() and not backward["floor_limited"].any()
    assert np.allclose(hidden["ref_err"], 1e-5)


def test_explorer_fit_names_and_stores_the_measure(companion_store):
    result = CliRunner().invoke(main, ["fit", "--sweep", "companion", "--store", companion_store.uri, "--metric",
                                       "err_backward", "--form", "c*L**-a", "--bootstrap", "20"])
    assert result.exit_code == 0, result.output
    con = companion_store.connect(read_only=True)
    try:
        metrics = con.sql("SELECT DISTINCT metric FROM fits WHERE sweep = 'companion'").fetchall()
    finally:
        con.close()
    assert metrics == [("err_backward",)]
