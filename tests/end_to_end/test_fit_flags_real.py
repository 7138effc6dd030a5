"""Issue 8's end-to-end check: real trials flag alpha = 256 at L = M = 64 as init_noise, the store
keeps the flag, and ``explorer fit`` leaves that point out and counts it."""
from __future__ import annotations

import datetime as dt
import functools
import json

import pytest
from click.testing import CliRunner

from explorer.cli import main
from explorer.analysis.fitting import fit_sweep
from explorer.store_access import open_sweep
from explorer.analysis.phase import phase_diagram
from store import Store, trial_row_from_metrics
from trials import ProblemConfig, ReferenceConfig, TrialConfig, compute_reference, train_trial

pytestmark = pytest.mark.slow

# alpha = 256, mlu: alpha_eff / sqrt(L M) = 256 / 64 = 4 > 1 at L = M = 64 (flagged); the other
# points have L M >= 2^17, i.e. 0.71 and 0.5 (clean). One seed, one step, D = 2: about 10 s.
POINTS = ((64, 64), (256, 512), (512, 256), (256, 1024))


@functools.lru_cache(maxsize=1)
def _rows() -> tuple:
    base = TrialConfig(L=64, M=64, D=2, alpha=256.0, steps=1, seeds=(0,), device="cpu",
                       problem=ProblemConfig(d_in=2, d_out=2, samples=4))
    # error ~1e-3 at step 1: every point's error (0.08 - 0.6) is far above the floor (3x it), so all
    # three clean points are fitted whatever the draw (at depth 16 x 16 the floor, 0.09, took one)
    reference = compute_reference(ReferenceConfig(limit=base, depth=128, width=128, replicas=2, device="cpu"))
    return tuple((cfg, train_trial(cfg, reference)) for cfg in (base.replace(L=L, M=M) for L, M in POINTS))


@pytest.fixture(scope="module")
def store_uri(tmp_path_factory):
    root = tmp_path_factory.mktemp("flags") / "store"
    st = Store(str(root))
    for cfg, rows in _rows():  # as explorer.sweeps.worker.training.run_point writes a trial
        for row in rows:
            row.update(node_id="test", error=None)
        trial_row = trial_row_from_metrics(rows, config_json=json.dumps(cfg.numerics(), sort_keys=True),
                                           started_at=dt.datetime.now(dt.timezone.utc), seeds=list(cfg.seeds),
                                           node_id="test")
        st.write_trial("flags", cfg.key(), rows, trial_row)
    return str(root)


def test_the_trials_flag_alpha_256_at_l_m_64_only():
    flags = {(cfg.L, cfg.M): {r["flags"] for r in rows} for cfg, rows in _rows()}
    assert flags == {(64, 64): {"init_noise"}, (256, 512): {""}, (512, 256): {""}, (256, 1024): {""}}


def test_explorer_fit_leaves_the_flagged_point_out_and_counts_it(store_uri):
    # one seed per point: the RMS-error law (the decomposed default needs two seeds, and says so)
    out = CliRunner().invoke(main, ["fit", "--sweep", "flags", "--store", store_uri, "--form", "theory",
                                    "--bootstrap", "0", "--no-save"])
    assert out.exit_code == 0, out.output
    assert "3 points fitted" in out.output
    assert "1 flagged seeds left out (init_noise 1; 1 point with every seed flagged not fitted)" in out.output
    _, con = open_sweep(store_uri, "flags")
    result = fit_sweep(con, "flags", "theory", n_boot=0)
    assert sorted(zip(result.grid["L"], result.grid["M"])) == [(256, 512), (256, 1024), (512, 256)]
    assert result.n_excluded == 0 and bool(result.grid["used"].all())
    assert result.flag_counts == {"init_noise": 1} and result.n_flagged_points == 1


def test_the_phase_diagram_marks_the_flagged_point_and_those_at_its_own_criterion(store_uri):
    # the diagram marks a cell the trials flagged, or whose initial hidden noise alpha_eff sqrt(D/(LM))
    # is >= 1: exactly 1 at L M = 2^17 with D = 2 (256 * 2^-8), so those two cells are marked too
    _, con = open_sweep(store_uri, "flags")
    cells = phase_diagram(con, "flags", "L", "M").cells.set_index(["L", "M"])["init_noise_flag"]
    expected = {(L, M): (L, M) == (64, 64) or 256.0 * (2 / (L * M)) ** 0.5 >= 1 for L, M in POINTS}
    assert expected == {(64, 64): True, (256, 512): True, (256, 1024): False, (512, 256): True}
    assert cells.to_dict() == expected
