"""The ETA: measured from the trial phase's first finished pack (what came before it, Ray's and
the workers' start, is never extrapolated); until a rate exists, the dry run's estimate,
labelled so."""
from __future__ import annotations

import io

import pytest

from explorer.sweeps.tracking.progress import Progress


def bar_at(total: int, total_cost: float, slots: int) -> tuple[Progress, float]:
    bar = Progress(total=total, stream=io.StringIO(), interactive=False)
    bar.begin(total_cost=total_cost, slots=slots)
    return bar, bar.started


def at(bar: Progress, now: float, done: int, cost: float | None = None) -> str:
    bar.counts.done, bar.counts.done_cost = done, float(done if cost is None else cost)
    return bar.line(now=now)


def test_the_workers_start_is_never_extrapolated():
    # 288 points of one estimated second each on 2 slots, in packs of 2: the workers take 10 s to
    # start, then a pack ends every 0.5 s. The old rate (from the phase's start) priced the 286
    # left at the first pack's 10.5 s: 25 minutes.
    bar, t0 = bar_at(288, 288.0, slots=2)
    bar.expect((80.0, 120.0))
    assert at(bar, t0 + 5.0, 0).endswith("(dry-run estimate)")
    line = at(bar, t0 + 10.5, 2)  # the first pack: the anchor, no rate yet
    assert "(dry-run estimate)" in line and "ETA ~" in line
    assert "(dry-run estimate)" in at(bar, t0 + 11.0, 4)  # one report since: not yet one per slot
    line = at(bar, t0 + 11.5, 6)  # two reports over 1 s: 4 points per second
    assert line.endswith("ETA 1m10s") and "| 4.0/s |" in line  # 282 left at 0.25 s


def test_the_rate_is_weighed_by_the_estimated_cost_left():
    # one big point (100 units) ends first, then small ones of one unit at 2 s each: the cost
    # left, not the count, prices what remains
    bar, t0 = bar_at(10, 109.0, slots=1)
    at(bar, t0 + 200.0, 1, 100.0)
    assert at(bar, t0 + 202.0, 2, 101.0).endswith("ETA 16.0s")  # 8 units at 2 s


def test_without_an_estimate_or_a_rate_the_eta_is_unknown():
    bar, t0 = bar_at(10, 0.0, slots=1)
    assert at(bar, t0 + 1.0, 0).endswith("ETA ?")
    assert at(bar, t0 + 3.0, 2).endswith("ETA ?")  # the anchor only
    assert at(bar, t0 + 5.0, 4).endswith("ETA 6.0s")  # counts alone: 2 trials per 2 s, 6 left


def test_a_finished_sweep_shows_no_eta_and_the_anchor_does_not_travel():
    import pickle

    bar, t0 = bar_at(4, 4.0, slots=1)
    at(bar, t0 + 1.0, 2)
    assert "ETA" not in at(bar, t0 + 2.0, 4)
    copy = pickle.loads(pickle.dumps(bar))
    assert copy.anchor is None


@pytest.mark.parametrize("interactive", [True, False])
def test_a_phase_status_is_one_line_not_one_per_event(interactive):
    out = io.StringIO()
    bar = Progress(total=1, stream=out, interactive=interactive, plain_every_s=3600)
    for n in range(1, 865):
        bar.status(f"references {n}/864 done", force=n == 864)
    text = out.getvalue()
    assert text.count("\n") <= (0 if interactive else 2) and "references 864/864 done" in text
