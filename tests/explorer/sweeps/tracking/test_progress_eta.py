"""The ETA: measured from the trial phase's first finished pack (what came before it, Ray's and
the workers' start, is never extrapolated) over a window at least as long as the phase took to
reach it (a burst of packs landing together right after it is not the rate); until a rate
exists, the dry run's estimate with each trial's writes priced, labelled so."""
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
    # two reports over 1 s: one per slot, but the window is shorter than the 10.5 s start
    assert "(dry-run estimate)" in at(bar, t0 + 11.5, 6)
    line = at(bar, t0 + 21.0, 44)  # 42 points over the 10.5 s since the anchor: 4 per second
    assert line.endswith("ETA 1m01s") and "| 4.0/s |" in line  # 244 left at 0.25 s


def first_measured_eta(bar: Progress, t0: float, reports: list[tuple[float, int]], every_s: float = 10.0):
    """(time, ETA line) of the first line with a measured ETA, the line drawn at each report and
    every ``every_s`` as a sweep's plain output is."""
    times = sorted({t for t, _ in reports} | {t0 + k * every_s for k in range(int(reports[-1][0] // every_s) + 2)})
    done = 0
    for now in times:
        done = max([n for t, n in reports if t <= now], default=done)
        line = at(bar, now, done)
        if "ETA" in line and "dry-run" not in line and "ETA ?" not in line:
            return now, line
    return None, None


def test_a_burst_of_packs_after_the_first_is_not_taken_for_the_rate():
    # The 6,400 tiny trials, 16 packs of 400 on 2 slots, on a busy machine: the workers
    # take 300 s to start, the first pack reports its first point, then three packs that waited
    # on the busy driver land within 3 s, and the other 4,800 trials come at 5.3 a second, a pack
    # every 75.5 s. A rate from the first reports after the anchor gave an ETA of seconds where
    # 15 minutes were left; the first measured ETA must be within 3x of the time left.
    bar, t0 = bar_at(6400, 6400.0, slots=2)
    reports = [(t0 + 300.0, 1), (t0 + 301.0, 400), (t0 + 302.0, 800), (t0 + 303.0, 1600)]
    reports += [(t0 + 303.0 + 400 / 5.3 * k, 1600 + 400 * k) for k in range(1, 13)]
    end = reports[-1][0]
    burst = at(bar, t0 + 303.5, 1600)
    assert "ETA ?" in burst  # no dry-run estimate given, and no rate yet
    now, line = first_measured_eta(bar, t0, reports)
    assert now is not None and now - t0 >= 600.0  # the window since the anchor is as long as the start
    eta = _seconds(line.rsplit("ETA ", 1)[1])
    left = end - now
    assert left / 3 <= eta <= 3 * left, (line, left)


def test_before_a_rate_the_dry_run_estimate_prices_each_trial_s_writes():
    # the dry run priced 20 - 50 s of compute; 6,400 trials on 2 slots also write 6,400 pairs
    # of files, TRIAL_OVERHEAD_S each a worker
    from explorer.sweeps.tracking.progress import TRIAL_OVERHEAD_S

    bar = Progress(total=6400, stream=io.StringIO(), interactive=False)
    bar.expect((20.0, 50.0))
    bar.begin(total_cost=30.0, slots=2)
    extra = 6400 * TRIAL_OVERHEAD_S / 2
    low, high = (end - bar.started for end in bar.expected_end)
    assert low == pytest.approx(20.0 + extra, abs=0.5) and high == pytest.approx(50.0 + extra, abs=0.5)
    assert bar.line(now=bar.started).endswith("(dry-run estimate)")


def _seconds(text: str) -> float:
    import re

    h, m, s = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:([0-9.]+)s)?", text.strip()).groups()
    return int(h or 0) * 3600 + int(m or 0) * 60 + float(s or 0)


def test_the_rate_is_weighed_by_the_estimated_cost_left():
    # one big point (100 units) ends first, then small ones of one unit at 2 s each, then ten
    # of 10 units: the cost left, not the count, prices what remains
    bar, t0 = bar_at(111, 300.0, slots=1)
    at(bar, t0 + 200.0, 1, 100.0)
    assert at(bar, t0 + 202.0, 2, 101.0).endswith("ETA ?")  # a window shorter than the 200 s to the anchor
    assert at(bar, t0 + 400.0, 101, 200.0).endswith("ETA 3m20s")  # 100 units at 2 s (by count: 10 points, 20 s)


def test_without_an_estimate_or_a_rate_the_eta_is_unknown():
    bar, t0 = bar_at(10, 0.0, slots=1)
    assert at(bar, t0 + 1.0, 0).endswith("ETA ?")
    assert at(bar, t0 + 3.0, 2).endswith("ETA ?")  # the anchor only
    assert at(bar, t0 + 5.0, 4).endswith("ETA ?")  # a window of 2 s, shorter than the 3 s start
    assert at(bar, t0 + 6.0, 6).endswith("ETA 3.0s")  # counts alone: 4 trials per 3 s, 4 left


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
