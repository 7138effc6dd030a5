"""A sweep driver killed with SIGKILL mid-run is resumed by running the same command again:
every trial complete, no duplicate (trial_key, seed, step) row, no partial file."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from store import Store

pytestmark = pytest.mark.slow

SPEC = """
name = "killed"
[train]
steps = 10
[reference]
depth = 16
width = 8
[grid]
L = [2, 4, 8, 16, 32, 64]
M = [1, 4, 16, 32]
D = [4]
seeds = 2
"""
TOTAL = 24


def sweep_command(spec, store) -> list[str]:
    return [sys.executable, "-c", "from explorer.cli import main; main()", "sweep", str(spec), "--store", str(store)]


def environment() -> dict:
    return dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kill_driver_once_landed(spec, results, sweep: str, enough: int, deadline_s: float = 180) -> int:
    """Run ``explorer sweep`` on ``spec`` and SIGKILL its driver once ``enough`` of its points have
    landed in the store; returns how many had."""
    store = Store(results)
    # Its own session: the driver's process group holds every Ray process it started.
    driver = subprocess.Popen(sweep_command(spec, results), env=environment(), start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + deadline_s
        landed = 0
        while time.monotonic() < deadline and driver.poll() is None:
            if results.exists():
                landed = len(store.completed_trial_keys(sweep))
            if landed >= enough:
                break
            time.sleep(0.05)
        assert driver.poll() is None, driver.stdout.read().decode()[-2000:]
        os.kill(driver.pid, signal.SIGKILL)  # the driver only: Ray's workers die with it
        driver.wait(timeout=30)
    finally:
        time.sleep(3)  # let Ray's own processes notice the driver is gone
        try:  # Ray's dashboard/runtime-env agents can outlive a SIGKILLed driver: end that group
            os.killpg(driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        driver.stdout.close()
    return landed


def test_driver_killed_with_sigkill_is_resumed_by_rerunning(tmp_path, metric_row_counts):
    spec, results = tmp_path / "spec.toml", tmp_path / "results"
    spec.write_text(SPEC)
    store = Store(results)
    landed = kill_driver_once_landed(spec, results, "killed", 3)
    assert 3 <= landed < TOTAL  # killed mid-run

    before = store.completed_trial_keys("killed")
    rerun = subprocess.run(sweep_command(spec, results), env=environment(), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    summary = rerun.stdout
    assert f"{TOTAL} trials: {TOTAL} ok" in summary
    assert f"({len(before)} already complete, {TOTAL - len(before)} run in" in summary

    assert len(store.completed_trial_keys("killed")) == TOTAL
    assert metric_row_counts(store, "killed") == {"n": TOTAL * 2 * 11, "distinct_n": TOTAL * 2 * 11}
    report = store.check()
    assert report.ok, report.lines()  # no unreadable, temporary, duplicate, incomplete or missing-step file
    assert not [p for p in results.rglob("*") if p.name.startswith(".tmp.")]
