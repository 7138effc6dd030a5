"""A signal between the steps of an adaptive round (after its trials, before its fit is recorded)
stops the loop with 128 + the signal and the resume line; the rerun fits the round again without
rerunning its trials. No Ray: the fake runner writes the trials (tests/explorer/sweeps/adaptive/adaptive_fake.py)."""
from __future__ import annotations

import os
import signal

import pytest

from explorer.sweeps.adaptive import read_rounds, run_adaptive
from store import Store

from tests.explorer.sweeps.adaptive.adaptive_fake import FakeRunner, free_law
from tests.explorer.sweeps.adaptive.test_adaptive import adaptive_spec


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_after_a_rounds_trials_stops_the_loop_and_the_rerun_goes_on(tmp_path, signum):
    st = Store(tmp_path / "s")
    spec = adaptive_spec(halfwidth=0.1, budget=0.5, batch=4, initial=8)
    first = FakeRunner(st, free_law())

    def signalled_after_round_1(spec, keys):
        first(spec, keys)
        if len(first.calls) == 2:  # round 1's trials are written; its fit comes next
            os.kill(os.getpid(), signum)

    before = signal.getsignal(signum)
    result = run_adaptive(spec, st, signalled_after_round_1)
    assert signal.getsignal(signum) is before  # the loop's handler is gone with the loop
    assert result.interrupted == signum and result.exit_code == 128 + signum
    assert f"interrupted by {signal.Signals(signum).name} in round 1 (0 of its trials without rows); to resume, " \
           "run the same command again" in result.summary()
    rounds = read_rounds(st, "ad")
    assert rounds.loc[rounds["round"] == 1, "state"].unique().tolist() == ["planned"]  # its fit not recorded
    assert st.check().ok

    again = FakeRunner(st, free_law())
    resumed = run_adaptive(spec, st, again)
    assert resumed.stop_reason is not None and resumed.exit_code == 0
    assert not set(again.written) & set(first.written)  # round 1's trials were not run twice
    rounds = read_rounds(st, "ad")
    assert set(rounds["state"]) == {"done"}
    assert not rounds[rounds["entry"] == "point"].duplicated(["trial_key"]).any()
