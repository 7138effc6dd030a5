"""A Ctrl-C in a command's start-up window stops it just the same (issue 31, item 3): from the
first line of ``explorer`` until its work begins, SIGINT is held and acted on as the work
begins (explorer.signals.hold). It used to land in an import (a traceback, exit -2, or an abort
inside an extension's initialisation) or be lost while the query ran on.

Real ``explorer`` processes, SIGINT at its default disposition, sent at 20 moments from 0.1 to
3 s after the command's own code starts, spread over the long commands."""
from __future__ import annotations

import os
import sys

import pytest

from tests.explorer.signals.signal_probe import EXPLORER, run_and_signal
from tests.paths import REPO_ROOT, STORE_TESTKIT

sys.path.insert(0, str(STORE_TESTKIT))
import store_testkit as kit  # noqa: E402

from store import Store  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (os.path.exists(EXPLORER) and os.path.exists("/proc/self/status")),
                                 reason="needs the explorer console script and Linux's /proc")]

ROOT = str(REPO_ROOT)
LONG_QUERY = "SELECT count(*) FROM range(10000000000000) t(i) WHERE i % 7 = 3"  # hours of work
# Each command with work that lasts far longer than the test (a query of hours, 10^5 bootstrap
# resamples, a sweep on Ray), and when in its first 3 s the signal comes. A sweep's start-up
# window ends where Ray's start begins (about 0.5 s here, Ray imported only then): a signal
# during Ray's start is served once it returns, which no signal can shorten. A tiny reproduction
# reaches Ray's start at about 0.9 s here (its plan printed), so its window is the first 0.8 s:
# at 1.8 s the signal waited out Ray's start (3.8 s unloaded, past 5 s at load 4, 2026-12-04).
CASES = [("sql", d) for d in (0.1, 0.25, 0.5, 0.8, 1.2, 2.0, 3.0)] + \
        [("fit", d) for d in (0.15, 0.6, 1.5, 3.0)] + \
        [("report", d) for d in (0.2, 0.9, 2.5)] + \
        [("sweep", d) for d in (0.1, 0.25, 0.4)] + \
        [("reproduce", d) for d in (0.3, 0.55, 0.8)]


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    root = tmp_path_factory.mktemp("analysed")
    st = Store(root / "store")
    for key, rows, trial in kit.grid(n_L=4, n_M=3, seeds=(0, 1, 2)):
        st.write_trial("tiny", key, rows, trial)
    return root


def _args(command: str, root, tmp_path) -> list[str]:
    store = str(root / "store")
    long_fit = ["--sweep", "tiny", "--store", store, "--form", "free", "--bootstrap", "100000"]
    return {
        "sql": ["sql", LONG_QUERY, "--store", store],
        "fit": ["fit", *long_fit, "--no-save"],
        "report": ["report", *long_fit, "--no-save", "--out", str(tmp_path / "report")],
        "sweep": ["sweep", os.path.join(ROOT, "examples", "quick.toml"), "--store", str(tmp_path / "s")],
        "reproduce": ["reproduce", "companion-linear", "--scale", "tiny", "--store", str(tmp_path / "s"),
                      "--out", str(tmp_path / "reproduction")],
    }[command]


@pytest.mark.parametrize("command, delay_s", CASES, ids=[f"{c}-{d}s" for c, d in CASES])
def test_a_ctrl_c_in_the_start_up_window_stops_the_command(analysed, tmp_path, command, delay_s):
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    ended = run_and_signal(_args(command, analysed, tmp_path), delay_s, env=env, cwd=tmp_path)
    assert ended.returncode == 130, (ended.stdout[-1000:], ended.stderr[-3000:])
    assert "Traceback" not in ended.stderr, ended.stderr[-3000:]
    assert ended.after_signal_s <= 5.0, ended.stderr[-1000:]
    if command not in ("sweep", "reproduce"):  # a sweep also prints its summary and how to resume it
        assert ended.stderr.endswith("interrupted (SIGINT)\n"), ended.stderr[-1000:]
