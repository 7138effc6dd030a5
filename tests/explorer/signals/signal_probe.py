"""Helpers for the tests that send signals to a real ``explorer`` process: start it with SIGINT at
its default disposition, wait until its own code runs, and time how long it takes to end."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

EXPLORER = os.path.join(os.path.dirname(sys.executable), "explorer")  # the console script a user runs


@dataclass
class Ended:
    returncode: int
    stdout: str
    stderr: str
    after_signal_s: float | None  # from the signal to the exit (None: no signal sent)
    wall_s: float  # from the start of the command's own code to the exit


def start(args: list[str], env: dict | None = None, cwd=None) -> subprocess.Popen:
    return subprocess.Popen([EXPLORER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_own_code(process: subprocess.Popen, timeout_s: float = 120.0) -> None:
    """Until the process catches SIGTERM: the first line of ``explorer`` ran (its start-up hold,
    explorer.signals.hold); before that, the interpreter itself is starting."""
    bit = 1 << (signal.SIGTERM - 1)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with open(f"/proc/{process.pid}/status") as f:
                caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
        except (OSError, StopIteration):
            caught = 0
        if caught & bit:
            return
        time.sleep(0.005)
    raise AssertionError("explorer never started its own code")


def run_and_signal(args: list[str], delay_s: float | None, signum: int = signal.SIGINT, env: dict | None = None,
                   cwd=None, ready=None, timeout_s: float = 180.0) -> Ended:
    """Run ``explorer ARGS``; ``delay_s`` after its own code starts (and after ``ready()`` is true,
    when given), send ``signum``. None: no signal, let it end."""
    process = start(args, env, cwd)
    try:
        wait_for_own_code(process)
        began = time.monotonic()
        while ready is not None and not ready() and process.poll() is None and time.monotonic() - began < 120:
            time.sleep(0.02)
        sent = None
        if delay_s is not None:
            time.sleep(delay_s)
            sent = time.monotonic()
            process.send_signal(signum)
        out, err = process.communicate(timeout=timeout_s)
        ended = time.monotonic()
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return Ended(process.returncode, out, err, None if sent is None else ended - sent, ended - began)
