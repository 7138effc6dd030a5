"""The adaptive loop with a runner that runs in the background (``lookahead``): a round is a
logging unit, not a barrier. A simulated runner with two workers advances one tick per ``wait``
(a point takes 1 to 3 ticks, by its size) and writes each finished point with the planted law;
the tests read its timeline. No Ray: tests/explorer/sweeps/adaptive/test_adaptive_session.py runs the real pool."""
from __future__ import annotations

import collections

import pytest

from explorer.sweeps.adaptive import read_rounds, run_adaptive
from store import Store

from tests.explorer.sweeps.adaptive.adaptive_fake import FakeRunner, free_law
from tests.explorer.sweeps.adaptive.test_adaptive import adaptive_spec

pytestmark = pytest.mark.slow  # each test runs a whole simulated adaptive loop


class TickRunner:
    """Two workers, a queue, one tick per ``wait``; ``timeline``: (tick, busy workers, queued
    points) at every tick, ``submits``: the tick of every ``submit``."""

    lookahead = True

    def __init__(self, store, spec, slots=2, crash_at_tick=None, spread=3):
        self.planted, self.spec, self.slots, self.spread = FakeRunner(store, free_law()), spec, slots, spread
        self.queue: collections.deque = collections.deque()
        self.running: dict[str, int] = {}  # key -> ticks left
        self.tick, self.timeline, self.submits = 0, [], []
        self.crash_at_tick = crash_at_tick
        self.interrupted = None

    def duration(self, key: str) -> int:
        return 1 + sum(map(ord, key)) % self.spread  # points of 1 to spread ticks: rounds end with stragglers

    def fill(self):
        while len(self.running) < self.slots and self.queue:
            key = self.queue.popleft()
            self.running[key] = self.duration(key)

    def submit(self, keys):
        self.submits.append(self.tick)
        self.queue.extend(keys)
        self.fill()

    def wait(self, timeout=0.25):
        self.tick += 1
        if self.tick == self.crash_at_tick:
            raise KeyboardInterrupt  # the driver dies mid-round
        self.timeline.append((self.tick, len(self.running), len(self.queue)))
        done = []
        for key in list(self.running):
            self.running[key] -= 1
            if self.running[key] == 0:
                del self.running[key]
                self.planted(self.spec, frozenset([key]))
                done.append(key)
        self.fill()
        return done

    def pending(self):
        return len(self.queue) + len(self.running)

    def room(self):
        return self.slots - len(self.running) - len(self.queue)

    def drop_queued(self):
        dropped = list(self.queue)
        self.queue.clear()
        return dropped

    def close(self, interrupted=False):
        pass


def spec_():
    return adaptive_spec(halfwidth=0.1, budget=0.5, batch=4, initial=8)


def test_no_worker_idles_at_a_round_boundary_while_the_loop_goes_on(tmp_path):
    st = Store(tmp_path / "s")
    spec = spec_()
    runner = TickRunner(st, spec)
    result = run_adaptive(spec, st, runner)
    assert result.stop_reason is not None and result.exit_code == 0
    rounds = read_rounds(st, "ad")
    assert rounds["round"].nunique() >= 4
    last_submit = max(runner.submits)
    # until the last points were queued, both workers were busy at every tick: no tick waited for a refit
    assert all(busy == runner.slots for tick, busy, _ in runner.timeline if tick <= last_submit)
    # rounds after the first were queued while the previous round still ran
    assert len(runner.submits) == rounds["round"].nunique() and len(set(runner.submits)) == len(runner.submits)
    assert set(rounds["state"]) == {"done"}
    points = rounds[rounds["entry"] == "point"]
    assert not points.duplicated(["trial_key"]).any()
    assert set(points["trial_key"]) == set(st.trial_statuses("ad"))  # every chosen trial ran, nothing else did
    assert (rounds["spent_cost"] <= rounds["budget_cost"]).all()
    assert st.check().ok


def test_a_blocking_runner_leaves_the_workers_idle_at_every_boundary(tmp_path):
    # the same timeline with the queue refilled only after each refit: the barrier the lookahead removes
    st = Store(tmp_path / "s")
    spec = spec_()
    runner = TickRunner(st, spec)
    runner.lookahead = False
    run_adaptive(spec, st, BlockingTicks(runner))
    idle = [tick for tick, busy, _ in runner.timeline if busy < runner.slots and tick <= max(runner.submits)]
    assert idle and read_rounds(st, "ad")["round"].nunique() >= 4


class BlockingTicks:
    """``runner(spec, keys)``: submit the keys to the TickRunner and tick until they are done."""

    def __init__(self, ticks: TickRunner):
        self.ticks = ticks

    def __call__(self, spec, keys):
        self.ticks.submit(sorted(keys))
        while self.ticks.pending():
            self.ticks.wait()


@pytest.mark.parametrize("spread", [3, 9])  # 9: a round can finish before the one queued ahead of it
def test_a_stop_while_the_next_round_runs_keeps_the_points_that_started(tmp_path, spread):
    st = Store(tmp_path / "s")
    spec = adaptive_spec(halfwidth=1e-4, budget=0.3, batch=3, initial=6)  # unreachable: the budget stops it
    runner = TickRunner(st, spec, spread=spread)
    result = run_adaptive(spec, st, runner)
    assert "not reached" in result.stop_reason
    rounds = read_rounds(st, "ad")
    last = rounds[rounds["round"] == rounds["round"].max()]
    assert "decided after round" in last["stop_reason"].iloc[0]
    points = rounds[rounds["entry"] == "point"]
    assert not points.duplicated(["trial_key"]).any()  # no point chosen twice
    assert set(points["trial_key"]) == set(st.trial_statuses("ad"))
    assert result.spent_cost <= result.budget_cost
    again = TickRunner(st, spec)
    assert run_adaptive(spec, st, again).stop_reason == result.stop_reason and not again.submits  # reports only


@pytest.mark.parametrize("crash_at_tick, open_rounds", [(9, 1), (22, 2), (28, 2)])
def test_a_driver_dying_with_two_rounds_open_resumes_both(tmp_path, crash_at_tick, open_rounds):
    st = Store(tmp_path / "s")
    spec = spec_()
    with pytest.raises(KeyboardInterrupt):
        run_adaptive(spec, st, TickRunner(st, spec, crash_at_tick=crash_at_tick))
    killed = read_rounds(st, "ad")
    planned = sorted(killed.loc[killed["state"] == "planned", "round"].unique())
    assert len(planned) == open_rounds  # the later one queued while the earlier one ran
    before = set(st.trial_statuses("ad"))
    resumed = TickRunner(st, spec)
    result = run_adaptive(spec, st, resumed)
    assert result.stop_reason is not None and result.exit_code == 0
    rounds = read_rounds(st, "ad")
    assert set(rounds["state"]) == {"done"}
    assert sorted(rounds["round"].unique()) == list(range(rounds["round"].max() + 1))
    assert set(planned) <= set(rounds["round"])
    points = rounds[rounds["entry"] == "point"]
    assert not points.duplicated(["trial_key"]).any()
    assert set(points["trial_key"]) == set(st.trial_statuses("ad"))
    assert before <= set(st.trial_statuses("ad"))
    assert not before & set(resumed.planted.written)  # nothing that had rows ran again
    assert st.check().ok


class FlushRunner(TickRunner):
    """Every ``wait`` finishes every queued point at once, and the workers always take more: a
    queued round can finish before the driver comes back for the one ahead of it."""

    def fill(self):
        pass

    def room(self):
        return 1

    def wait(self, timeout=0.25):
        self.tick += 1
        done, self.queue = list(self.queue), collections.deque()
        for key in done:
            self.planted(self.spec, frozenset([key]))
        return done


@pytest.mark.parametrize("budget", [0.2, 0.3, 0.5])
def test_a_reserve_chosen_on_an_older_fit_is_never_queued_after_a_newer_choice(tmp_path, budget):
    st = Store(tmp_path / "s")
    spec = adaptive_spec(halfwidth=1e-4, budget=budget, batch=3, initial=6)
    result = run_adaptive(spec, st, FlushRunner(st, spec))
    assert result.stop_reason is not None
    rounds = read_rounds(st, "ad")
    points = rounds[rounds["entry"] == "point"]
    assert not points.duplicated(["trial_key"]).any()  # no point chosen twice
    assert set(points["trial_key"]) == set(st.trial_statuses("ad"))
    assert (rounds["spent_cost"] <= rounds["budget_cost"]).all()
