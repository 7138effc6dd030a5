"""SIGINT and SIGTERM at every phase of a sweep (planning, references, trials, compaction, an
adaptive round), to the driver alone and to its process group as a terminal's Ctrl-C does: the
driver exits 128 + the signal with the command that resumes it and no traceback; the rerun
completes and `explorer check` finds the store clean.

The handler only records the signal (explorer/signals/interrupts.py): raised inside ``ray.wait`` it came
out as ``SystemError: <cyfunction CoreWorker.wait ...> returned a result with an exception set``
and exit 1."""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from explorer.sweeps.adaptive import read_rounds
from store import Store

from tests.explorer.sweeps.adaptive.adaptive_fake import small_adaptive_spec
from tests.paths import REPO_ROOT

pytestmark = pytest.mark.slow

EXPLORER = str(Path(sys.executable).parent / "explorer")
QUICK = REPO_ROOT / "examples" / "quick.toml"
ADAPTIVE_SPEC = small_adaptive_spec("adaptive_signal")


def environment() -> dict:
    return dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")


class Driver:
    """`explorer ARGS` in its own session (its process group holds the Ray it starts), its
    output (stdout and stderr) collected line by line as it comes."""

    def __init__(self, args: list[str], cwd: Path):
        self.args = args
        self.process = subprocess.Popen([EXPLORER, *args], cwd=cwd, env=environment(), start_new_session=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 300) -> None:
        """Until a line matches ``pattern`` (the phase's progress line), or fail with the output."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(re.search(pattern, line) for line in list(self.lines)):
                return
            assert self.process.poll() is None, f"ended before {pattern!r}:\n{self.output[-3000:]}"
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} within {timeout}s:\n{self.output[-3000:]}")

    def signal(self, signum: int, group: bool) -> None:
        if group:  # a terminal's Ctrl-C: every process of the foreground group
            os.killpg(self.process.pid, signum)
        else:
            os.kill(self.process.pid, signum)

    def finish(self, timeout: float = 120) -> int:
        try:
            code = self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
            self.reader.join(timeout=10)
        return code


def assert_stopped_cleanly(driver: Driver, signum: int) -> None:
    code = driver.finish()
    out = driver.output
    assert code == 128 + signum, out[-3000:]
    assert "Traceback" not in out and "SystemError" not in out, out[-3000:]
    assert f"interrupted by {signal.Signals(signum).name}" in out, out[-3000:]
    assert f"to resume, run the same command again: {shlex.join(['explorer', *driver.args])}" in out, out[-3000:]


def assert_rerun_completes(args: list[str], cwd: Path, results: Path) -> str:
    rerun = subprocess.run([EXPLORER, *args], cwd=cwd, env=environment(), capture_output=True, text=True,
                           timeout=900)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    check = subprocess.run([EXPLORER, "check", "--store", str(results)], cwd=cwd, env=environment(),
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    left = [p for p in results.rglob("*") if p.name.startswith((".tmp.", ".lock.", ".broken."))]
    assert not left
    return rerun.stdout


TARGETS = [pytest.param(signal.SIGINT, True, id="SIGINT-group"), pytest.param(signal.SIGTERM, False, id="SIGTERM-driver"),
           pytest.param(signal.SIGTERM, True, id="SIGTERM-group")]


@pytest.mark.parametrize("signum, group", TARGETS)
def test_a_signal_while_planning_stops_before_anything_runs(tmp_path, signum, group):
    results = tmp_path / "results"
    # 10^5 points: seconds of planning, announced by its progress line
    args = ["sweep", str(QUICK), "--store", str(results), "grid.L=[2,4,6,8,10,12,14,16,18,20]",
            f"grid.M={list(range(2, 102))}".replace(" ", ""), f"grid.alpha={[float(a) for a in range(1, 101)]}".replace(" ", "")]
    driver = Driver(args, tmp_path)
    driver.wait_for(r"^planning: 100,000 trials")
    driver.signal(signum, group)
    assert_stopped_cleanly(driver, signum)
    assert "stopped while planning its trials; nothing ran" in driver.output
    assert not results.exists() or not Store(results).sweeps()


@pytest.mark.parametrize("signum, group", TARGETS[:2])
def test_a_signal_during_the_references_stops_cleanly_and_the_rerun_completes(tmp_path, signum, group):
    results = tmp_path / "results"
    # quick.toml's 1024 x 512 reference: about 16 s of one core, the phase the signal lands in
    args = ["sweep", str(QUICK), "--store", str(results), "name=refsignal"]
    driver = Driver(args, tmp_path)
    driver.wait_for(r"references: 1 to compute")
    time.sleep(1)  # inside the ray.wait of the reference's task
    driver.signal(signum, group)
    assert_stopped_cleanly(driver, signum)
    assert "reference 1/1" not in driver.output  # it stopped during the reference, not after
    out = assert_rerun_completes(args, tmp_path, results)
    assert "12 trials: 12 ok" in out


# SIGTERM to the whole group (not what a terminal sends) reaches Ray's own processes too, which
# die at once: the driver may lose the race to Ray's exit on a dead raylet (docs/sweeps.md), so
# the Ray phases are tested with Ctrl-C to the group and SIGTERM to the driver.
@pytest.mark.parametrize("signum, group", TARGETS[:2])
def test_a_signal_during_the_trials_stops_cleanly_and_the_rerun_completes(tmp_path, signum, group):
    results = tmp_path / "results"
    args = ["sweep", str(QUICK), "--store", str(results), "name=trialsignal", "reference.depth=16",
            "reference.width=8", "grid.L=[2,4,8,16,32,64]", "grid.M=[1,4,16,32]", "resources.points_per_trial=1"]
    store = Store(results)
    driver = Driver(args, tmp_path)
    driver.wait_for(r"trials: 24 to run")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(store.completed_trial_keys("trialsignal") if results.exists() else ()) < 2:
        time.sleep(0.05)
    driver.signal(signum, group)
    assert_stopped_cleanly(driver, signum)
    landed = len(store.completed_trial_keys("trialsignal"))
    assert 2 <= landed < 24
    out = assert_rerun_completes(args, tmp_path, results)
    assert re.search(rf"24 trials: \d+ ok, \d+ diverged, 0 failed \({landed} already complete", out), out


@pytest.mark.parametrize("signum, group", TARGETS[:2])
def test_a_signal_during_an_adaptive_round_stops_the_loop_and_the_rerun_completes(tmp_path, signum, group):
    spec, results = tmp_path / "spec.toml", tmp_path / "results"
    spec.write_text(ADAPTIVE_SPEC)
    args = ["sweep", str(spec), "--adaptive", "--store", str(results)]
    driver = Driver(args, tmp_path)
    driver.wait_for(r"round 1: running")
    driver.signal(signum, group)
    code = driver.finish()
    out = driver.output
    assert code == 128 + signum, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    # rounds are pipelined: round 1 (or, if its trials and refit beat the signal, round 2) is
    # open; the message names the oldest round the log still has planned
    named = re.search(rf"interrupted by {signal.Signals(signum).name} in round (\d+)", out)
    assert named, out[-3000:]
    states = read_rounds(Store(results), "adaptive_signal").groupby("round")["state"].first()
    planned = [int(n) for n, state in states.items() if state == "planned"]
    assert planned and int(named.group(1)) == min(planned) >= 1, (out[-3000:], states)
    assert f"to resume, run the same command again: {shlex.join(['explorer', *args])}" in out
    rerun = assert_rerun_completes(args, tmp_path, results)
    assert "stopped:" in rerun


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_compaction_lets_it_finish_then_says_how_to_resume(tmp_path, monkeypatch, signum):
    # Compaction takes a fraction of a second: the signal is sent from inside it (in-process),
    # the way it lands when a user presses Ctrl-C just then.
    from explorer.sweeps.run.runner import run_sweep
    from explorer.config.spec import load_spec

    spec = load_spec({"name": "compactsignal", "train": {"steps": 3}, "reference": {"depth": 16, "width": 8},
                      "grid": {"L": [2, 4], "M": [1, 2], "D": [4], "seeds": 2}})
    store = Store(tmp_path / "results")
    compact = Store.compact
    sent = []

    def compact_signalled(self, *args, **kwargs):
        sent.append(signum)
        os.kill(os.getpid(), signum)  # handled (recorded) before the compaction's first write
        return compact(self, *args, **kwargs)

    monkeypatch.setattr(Store, "compact", compact_signalled)
    result = run_sweep(spec, store, progress=False, num_cpus=2)
    assert sent == [signum]
    assert result.interrupted == signum and result.exit_code == 128 + signum
    assert result.ok + result.diverged == 4 and result.missing == 0  # every trial is in; only the signal is reported
    assert f"interrupted by {signal.Signals(signum).name}: 0 trials not run; to resume, run the same command again" \
        in result.summary()
    assert store.check().ok
    monkeypatch.setattr(Store, "compact", compact)
    again = run_sweep(spec, store, progress=False, num_cpus=2)
    assert again.exit_code == 0 and again.skipped == 4 and again.ran == 0
