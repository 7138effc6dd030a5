"""An adaptive sweep driver (`explorer sweep --adaptive`, a subprocess) killed with SIGKILL after
its first round is resumed by running the same command again: the interrupted round is
completed, no round or trial is recorded twice, and the store is consistent."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from explorer.sweeps.adaptive import read_rounds
from store import Store

from tests.explorer.sweeps.adaptive.adaptive_fake import small_adaptive_spec

pytestmark = pytest.mark.slow

SPEC = small_adaptive_spec("adaptive_killed")
INITIAL = 5


def command(spec, store) -> list[str]:
    return [sys.executable, "-c", "from explorer.cli import main; main()", "sweep", str(spec), "--adaptive",
            "--store", str(store)]


def environment() -> dict:
    return dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")


def test_adaptive_driver_killed_mid_round_is_resumed_without_duplicates(tmp_path):
    spec, results = tmp_path / "spec.toml", tmp_path / "results"
    spec.write_text(SPEC)
    store = Store(results)
    driver = subprocess.Popen(command(spec, results), env=environment(), start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        landed = 0
        while time.monotonic() < deadline and driver.poll() is None:
            if results.exists() and "adaptive_killed" in store.sweeps():
                landed = len(store.completed_trial_keys("adaptive_killed"))
            if landed > INITIAL:  # round 0 done, round 1 under way
                break
            time.sleep(0.05)
        assert driver.poll() is None, driver.stdout.read().decode()[-2000:]
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        time.sleep(3)
        try:
            os.killpg(driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        driver.stdout.close()

    killed = read_rounds(store, "adaptive_killed")
    assert killed["round"].max() >= 1
    before = set(store.completed_trial_keys("adaptive_killed"))

    rerun = subprocess.run(command(spec, results), env=environment(), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert "stopped:" in rerun.stdout

    rounds = read_rounds(store, "adaptive_killed")
    assert set(rounds["state"]) == {"done"}
    assert sorted(rounds["round"].unique()) == list(range(rounds["round"].max() + 1))
    points = rounds[rounds["entry"] == "point"]
    assert not points.duplicated(["trial_key"]).any()  # no trial chosen twice
    assert rounds.groupby("round_id")["state"].nunique().max() == 1  # one record per round
    statuses = store.trial_statuses("adaptive_killed")
    assert set(points["trial_key"]) == set(statuses)  # every chosen trial ran, nothing else did
    assert before <= set(statuses)
    assert (rounds["spent_cost"] <= rounds["budget_cost"]).all()
    report = store.check()
    assert report.ok, report.lines()
    assert not [p for p in results.rglob("*") if p.name.startswith(".tmp.")]
