"""``explorer design`` end to end on the engine: the demo sweep as pilot, the designed spec run by
``explorer sweep`` as it is, the decomposed fit's intervals against the theory and the targets
(at targets reduced from the docs' a = 0.2, b = 0.05 to keep it short)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from explorer import api
from explorer.cli import main
from explorer.demo import DEMO_SPEC
from explorer.analysis.fitting import fit_sweep
from store import Store

TARGETS = {"a": 0.3, "b": 0.05}
WITHIN = 1.25  # achieved half-width / target


@pytest.mark.slow
def test_a_design_from_the_demo_measures_the_theorys_exponents_to_its_targets(tmp_path):
    store = tmp_path / "results"
    pilot = api.sweep(DEMO_SPEC, store=str(store), progress=False, num_cpus=2)
    assert pilot.exit_code == 0
    out = tmp_path / "d.toml"
    designed = CliRunner().invoke(main, ["design", "--sweep", "demo", "--store", str(store), "--out", str(out),
                                         *[f"--target={n}={v}" for n, v in TARGETS.items()]])
    assert designed.exit_code == 0, designed.output
    run = subprocess.run([sys.executable, "-m", "explorer.cli", "sweep", str(out), "--store", str(store)],
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    con = Store(str(store)).connect(sweep="demo_design", read_only=True)
    try:
        result = fit_sweep(con, "demo_design", n_boot=100)
    finally:
        con.close()
    for name, truth in (("a", 1.0), ("b", 0.5)):
        low, high = result.ci_low[name], result.ci_high[name]
        assert low <= truth <= high, (name, low, high)
        assert (high - low) / 2 <= WITHIN * TARGETS[name], (name, low, high)
