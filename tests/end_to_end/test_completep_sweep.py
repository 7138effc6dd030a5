"""A real completep sweep over several M: each M is measured against its own Mean ODE limit
(alpha sqrt(M / D)), so the error at fixed M falls with depth. Against another M's limit it stayed
flat (0.19 over L = 4..32 at M = 16), which read as completep not converging."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from store import Store

from tests.paths import REPO_ROOT

pytestmark = pytest.mark.slow

EXPLORER = str(Path(sys.executable).parent / "explorer")
SPEC = REPO_ROOT / "examples" / "quick.toml"


def test_completep_sweep_has_a_reference_per_M_and_its_error_falls_with_depth(tmp_path):
    results = tmp_path / "results"
    env = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run([EXPLORER, "sweep", str(SPEC), "--store", str(results), "name=completep_m",
                           "model.preset=completep", "grid.M=[4, 16, 64]"],
                          cwd=tmp_path, env={**os.environ, **env}, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "references: 3/3 ready" in done.stdout + done.stderr
    store = Store(results)
    keys = store.query("SELECT M, count(DISTINCT ref_key) AS refs FROM trials GROUP BY M ORDER BY M",
                       sweep="completep_m").to_pylist()
    assert [(r["M"], r["refs"]) for r in keys] == [(4, 1), (16, 1), (64, 1)]
    assert store.query("SELECT count(DISTINCT ref_key) AS n FROM trials", sweep="completep_m").to_pylist()[0]["n"] == 3
    # the RMS over seeds of the final output error at M = 16, by depth
    rows = store.query("SELECT L, sqrt(avg(err_out * err_out)) AS err FROM metrics WHERE M = 16 AND step = steps "
                       "GROUP BY L ORDER BY L", sweep="completep_m").to_pylist()
    depths = [r["L"] for r in rows]
    errors = [r["err"] for r in rows]
    assert depths == [4, 8, 16, 32]
    slope = np.polyfit(np.log(depths), np.log(errors), 1)[0]
    assert slope <= -0.3, (errors, slope)
    assert all(math.isfinite(e) for e in errors)
