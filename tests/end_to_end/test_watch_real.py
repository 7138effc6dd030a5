"""Issue 45 on a real sweep: ``explorer watch --once --json`` taken while an lr sweep runs (in its
own process) shows the ok trials growing and the data partial; after the end the flag is false
and the answer is ``explorer optimum``'s and ``explorer transfer``'s. Then the same spec is run
again with one problem draw fewer: ``explorer optimum`` names the trials of that draw and the
``--where`` that drops them."""
from __future__ import annotations

import json
import subprocess
import time

import numpy as np
import pytest
from click.testing import CliRunner

from explorer import api
from explorer.cli import main
from store import Store

from tests.explorer.sweeps.test_sweep_process import EXPLORER, environment

pytestmark = pytest.mark.slow

LRS = [2.0**k for k in range(-3, 4)]
SPEC = """
name = "watched"
[problem]
d_in = 5
d_out = 5
samples = 10
[model]
activation = "tanh"
preset = "mlu"
[train]
steps = 30
dtype = "float64"
[reference]
kind = "largest"
[grid]
L = [4, 16]
M = [16]
D = [8]
lr = {lrs}
problem_seeds = {draws}
seeds = 4
[resources]
points_per_trial = 1
"""


def _watch_once(store_uri: str) -> dict:
    result = CliRunner().invoke(main, ["watch", "--sweep", "watched", "--store", store_uri, "--once", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def test_watch_follows_a_real_sweep_and_a_smaller_rerun_names_its_leftovers(tmp_path):
    spec = tmp_path / "watched.toml"
    spec.write_text(SPEC.format(lrs=LRS, draws=[1, 2, 3, 4, 5]))
    results = tmp_path / "results"
    driver = subprocess.Popen([EXPLORER, "sweep", str(spec), "--store", str(results)], cwd=tmp_path,
                              env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        deadline = time.monotonic() + 600
        while driver.poll() is None and time.monotonic() < deadline:
            if results.exists() and Store(results).runs("watched") and Store(results).completed_trial_keys("watched"):
                seen.append(_watch_once(str(results)))
            time.sleep(1.0)
        out, err = driver.communicate(timeout=60)
        assert driver.returncode == 0, err[-3000:]
    finally:
        if driver.poll() is None:
            driver.kill()
    during = [s for s in seen if not s["ended"]]
    assert len(during) >= 2, seen
    assert all(s["partial"] for s in during if s["ok"] + s["diverged"] + s["failed"] < 70)
    oks = [s["ok"] + s["diverged"] for s in during]
    assert oks == sorted(oks) and oks[-1] > oks[0], oks

    final = _watch_once(str(results))
    assert final["ended"] and not final["partial"] and final["running"] == 0 and final["pending"] == 0
    assert final["answer"]["kind"] == "optima"
    found = api.optimum("watched", "lr", store=results, save=False)
    law = api.transfer("watched", "lr", ["L"], store=results, save=False)
    intervals = final["answer"]["intervals"]
    optima = [i["estimate"] for i in intervals if i["name"].startswith("lr*")]
    assert np.allclose(np.array(optima, dtype=float), found.table["optimum"].to_numpy(dtype=float), equal_nan=True)
    gamma = next(i for i in intervals if i["name"] == "gamma")
    assert np.isclose(gamma["estimate"], law.fits[0].estimate[1])
    assert np.isclose(gamma["low"], law.fits[0].low[1]) and np.isclose(gamma["high"], law.fits[0].high[1])

    # the same spec with one draw fewer: draw 5's trials lie outside the last run's grid
    spec.write_text(SPEC.format(lrs=LRS, draws=[1, 2, 3, 4]))
    again = subprocess.run([EXPLORER, "sweep", str(spec), "--store", str(results)], cwd=tmp_path, env=environment(),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    printed = subprocess.run([EXPLORER, "optimum", "--sweep", "watched", "--store", str(results), "--no-save"],
                             cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=300)
    assert printed.returncode == 0, printed.stderr[-3000:]
    line = ("14 trials outside the last run's grid (problem_seed = 5) are included; "
            '--where "problem_seed <> 5" leaves them out')
    assert line in printed.stderr
    dropped = subprocess.run([EXPLORER, "optimum", "--sweep", "watched", "--store", str(results), "--no-save",
                              "--where", "problem_seed <> 5"], cwd=tmp_path, env=environment(), capture_output=True,
                             text=True, timeout=300)
    assert dropped.returncode == 0 and "outside the last run's grid" not in dropped.stderr
