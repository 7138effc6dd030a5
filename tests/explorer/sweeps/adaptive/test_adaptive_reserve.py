"""The adaptive loop keeps its workers fed when a round is held up: a round whose last point runs
long (a straggler) keeps the refit waiting, and the loop queues the reserve's further batches,
chosen on the last fit, as the workers ask for points. A simulated runner (``TickRunner``: two
workers, one tick per ``wait``); tests/explorer/sweeps/adaptive/test_adaptive_pipeline.py has the others."""
from __future__ import annotations

import pytest

from explorer.sweeps.adaptive import read_rounds, run_adaptive
from store import Store

from tests.explorer.sweeps.adaptive.test_adaptive import adaptive_spec
from tests.explorer.sweeps.adaptive.test_adaptive_pipeline import TickRunner

pytestmark = pytest.mark.slow  # each test runs a whole simulated adaptive loop


class StragglerRunner(TickRunner):
    """A TickRunner whose ``long``-th point takes ``ticks`` ticks, and which records how many
    rounds were open (queued, not done) at every submit."""

    def __init__(self, store, spec, long=12, ticks=25):
        super().__init__(store, spec)
        self.long, self.ticks, self.started = long, ticks, 0
        self.open_at_submit: list[int] = []

    def duration(self, key):
        self.started += 1
        return self.ticks if self.started == self.long else 1

    def submit(self, keys):
        rounds = read_rounds(self.planted.store, self.spec.name)
        self.open_at_submit.append(int(rounds.loc[rounds["state"] == "planned", "round"].nunique()))
        super().submit(keys)


def test_a_straggler_does_not_leave_the_other_worker_idle(tmp_path):
    st = Store(tmp_path / "s")
    spec = adaptive_spec(halfwidth=1e-4, budget=0.6, batch=3, initial=6)  # unreachable: the budget stops it
    runner = StragglerRunner(st, spec)
    result = run_adaptive(spec, st, runner)
    assert result.stop_reason is not None and result.exit_code == 0
    # while the straggler kept its round from being refitted, the reserve's batches were queued
    # one after the other: more than two rounds open at once, and no worker idle before the last submit
    assert max(runner.open_at_submit) >= 3
    last_submit = max(runner.submits)
    assert all(busy == runner.slots for tick, busy, _ in runner.timeline if tick <= last_submit)
    rounds = read_rounds(st, "ad")
    assert set(rounds["state"]) == {"done"}
    points = rounds[rounds["entry"] == "point"]
    assert not points.duplicated(["trial_key"]).any()  # no point chosen twice
    assert set(points["trial_key"]) == set(st.trial_statuses("ad"))  # every chosen trial ran, nothing else did
    assert (rounds["spent_cost"] <= rounds["budget_cost"]).all()
    assert st.check().ok


def test_a_stop_with_several_rounds_open_records_each_with_the_points_that_ran(tmp_path):
    st = Store(tmp_path / "s")
    spec = adaptive_spec(halfwidth=1e-4, budget=0.3, batch=3, initial=6)
    runner = StragglerRunner(st, spec, long=8, ticks=40)  # round 0's straggler: rounds 1.. queue up behind it
    result = run_adaptive(spec, st, runner)
    assert "not reached" in result.stop_reason and result.exit_code == 0
    rounds = read_rounds(st, "ad")
    assert set(rounds["state"]) == {"done"}
    stops = rounds.groupby("round")["stop_reason"].first().dropna()
    decided = [n for n, why in stops.items() if "decided after round" in why]
    assert len(decided) >= 2  # every round open at the stop is closed with the stop reason
    points = rounds[rounds["entry"] == "point"]
    assert not points.duplicated(["trial_key"]).any()
    assert set(points["trial_key"]) == set(st.trial_statuses("ad"))  # a dropped point is in no round
    assert result.spent_cost <= result.budget_cost
    again = TickRunner(st, spec)
    assert run_adaptive(spec, st, again).stop_reason == result.stop_reason and not again.submits  # reports only
