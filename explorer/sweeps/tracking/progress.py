"""Progress of a running sweep on the terminal: one line updated in place, or plain lines.

On a terminal the line is redrawn in place (carriage return) a few times a second; when the
output is a file or a pipe (CI logs, ``nohup``), a plain line is printed every ``plain_every_s``
seconds and at the end, so logs stay short and readable. The counts come from the sweep driver;
this module only formats and throttles.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TextIO


def _duration(seconds: float) -> str:
    """3.2s, 4m05s, 2h03m."""
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


# What a worker spends on each trial beyond its compute, which the cost model does not price:
# its two Parquet files written (and fsynced) and its report. About 25 ms a trial per worker on
# the 2-core machine (docs/benchmarks.md, "Sweep overhead": 10 - 36 ms a trial of wall time at 2
# workers); a sweep of tiny trials is mostly this. Added to the dry run's estimate when the
# trial phase begins, so that its first ETA is not its compute alone.
TRIAL_OVERHEAD_S = 0.025


def eta_seconds(elapsed: float, done: int, total: int, done_cost: float = 0.0, total_cost: float = 0.0,
                slots: int = 1) -> float:
    """Seconds left, from what the finished trials cost.

    With estimated costs (``packing.estimated_seconds`` of each trial, the dry run's cost model), the
    measured wall time per unit of estimated cost so far, times the estimated cost left: trials
    of very different sizes (longest first) do not make it jump. Before any trial finished: NaN
    (shown ``?``): the first trials also pay for starting the workers, which no cost model
    knows. Without costs: the mean time per trial so far. ``Progress`` passes the window from
    the first finished pack on, and the counts since then.
    """
    if done >= total:
        return 0.0
    if total_cost > 0:
        left = max(total_cost - done_cost, 0.0)
        if done_cost > 0 and elapsed > 0:
            return elapsed * left / done_cost
        return float("nan")
    if done > 0 and elapsed > 0:
        return elapsed * (total - done) / done
    return float("nan")


@dataclass
class Counts:
    """Where a sweep stands: trials of this run (already complete ones are not counted)."""

    total: int  # trials this run has to do
    done: int = 0  # ended ok, diverged or failed
    running: int = 0  # grid points being trained right now (one per running Tune trial)
    failed: int = 0  # of ``done``, ended failed
    done_cost: float = 0.0  # estimated cost (seconds of one core) of the done trials
    total_cost: float = 0.0  # estimated cost of all of them (0: unknown)
    slots: int = 1  # trials at once


class Progress:
    """Formats ``Counts`` with throughput and ETA and writes them, throttled.

    Args:
        total: number of trials this run has to do.
        stream: where to write (default: standard error, so standard output keeps the summary).
        interactive: redraw one line in place; default: whether ``stream`` is a terminal.
        plain_every_s: seconds between plain lines when not interactive.
        enabled: False prints nothing at all (the Python API's ``progress=False``).
    """

    def __init__(self, total: int, stream: TextIO | None = None, interactive: bool | None = None,
                 plain_every_s: float = 10.0, enabled: bool = True):
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = _isatty(self.stream) if interactive is None else interactive
        self.counts = Counts(total=total)
        self.enabled = enabled
        self.plain_every_s = plain_every_s
        self.started = time.monotonic()
        self._last_draw = -float("inf")
        self._last_text = ""
        self._width = 0
        self.expected_end: tuple[float, float] | None = None  # (low, high) monotonic times: the first estimate
        # The rate is measured from the trial phase's first finished pack (its time, done and
        # done_cost): what came before it (Ray's start, the workers' start and imports, the first
        # pack's own start) is no steady rate and is never extrapolated (a first ETA of 7h28m for
        # a sweep that ended 30 s later). Until ``slots`` more reports have landed after it, and
        # the window since it is as long as the phase took to reach it, the ETA is the dry run's
        # estimate, labelled so: packs that waited on a busy driver land together right after
        # the first, and a short window would take that burst for the rate (an ETA of 90 s where
        # 905 s were left); over a window as long as the start, the burst is at most the work
        # done during the start, so the rate is at most about twice the true one.
        self.anchor: tuple[float, int, float] | None = None
        self._reports_since_anchor = 0
        self._last_done = 0

    def __getstate__(self):  # a stream does not pickle (Ray client ships Tune callbacks to the cluster)
        elapsed = time.monotonic() - self.started  # monotonic clocks differ between machines
        return dict(self.__dict__, stream=None, interactive=False, _width=0, started=elapsed,
                    _last_draw=-float("inf"), expected_end=None, anchor=None, _reports_since_anchor=0)

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.stream = sys.stderr
        self.started = time.monotonic() - state["started"]

    def expect(self, seconds: tuple[float, float] | None) -> None:
        """The sweep's first estimate (``dry_run.left_to_run``: its compute and Ray's start, from
        now), shown as the ETA until the first trial ends and the measured rate takes over."""
        now = time.monotonic()
        self.expected_end = None if seconds is None else (now + seconds[0], now + seconds[1])

    def begin(self, total_cost: float = 0.0, slots: int = 1) -> None:
        """The trials start now: elapsed time counts from here (not from the references)."""
        now = time.monotonic()
        self.started = now
        self.anchor, self._reports_since_anchor, self._last_done = None, 0, self.counts.done
        self.counts.total_cost, self.counts.slots = total_cost, max(1, slots)
        if self.expected_end is not None:  # the dry run priced the compute, not each trial's writes
            extra = max(self.counts.total - self.counts.done, 0) * TRIAL_OVERHEAD_S / self.counts.slots
            low, high = (max(end, now) + extra for end in self.expected_end)
            self.expected_end = (low, high)

    def _observe(self, now: float) -> None:
        """Note a change of ``done``: the first finished pack sets the anchor, later ones count."""
        done = self.counts.done
        if done <= self._last_done:
            return
        self._last_done = done
        if self.anchor is None:
            self.anchor = (now, done, self.counts.done_cost)
        else:
            self._reports_since_anchor += 1

    def measured(self, now: float) -> tuple[float, float] | None:
        """(trials per second, seconds left) measured since the first finished pack, or None while
        fewer than ``slots`` reports landed after it (each slot has not yet finished a pack in the
        window, and two packs ending together would make it absurdly fast) or while the window
        is shorter than the phase's time to that pack (a burst of packs right after it would)."""
        c = self.counts
        if self.anchor is None or self._reports_since_anchor < c.slots:
            return None
        t0, done0, cost0 = self.anchor
        window = now - t0
        if window <= 0 or window + 1e-3 < t0 - self.started:  # (a millisecond: clocks in floats)
            return None
        eta = eta_seconds(window, c.done - done0, c.total - done0, c.done_cost - cost0,
                          max(c.total_cost - cost0, 0.0) if c.total_cost > 0 else 0.0, c.slots)
        return (c.done - done0) / window, eta

    def line(self, now: float | None = None) -> str:
        """The progress text, e.g. ``trials 120/1000 | running 2 | failed 0 | 8.1/s | ETA 1m49s``;
        before a rate exists, ``ETA ~1m10s (dry-run estimate)`` (or ``ETA ?`` without one)."""
        c = self.counts
        now = time.monotonic() if now is None else now
        self._observe(now)
        elapsed = now - self.started
        measured = self.measured(now)
        rate = measured[0] if measured else (c.done / elapsed if elapsed > 0 else 0.0)
        rate_text = f"{rate:.1f}/s" if rate >= 1 or rate == 0 else f"{rate * 60:.1f}/min"
        parts = [f"trials {c.done}/{c.total}", f"running {c.running}", f"failed {c.failed}", rate_text,
                 f"elapsed {_duration(elapsed)}"]
        if c.done < c.total:
            eta = measured[1] if measured else float("nan")
            parts.append(f"ETA {_duration(eta) if eta == eta else self._first_eta(now)}")
        return " | ".join(parts)

    def _first_eta(self, now: float) -> str:
        """Before a rate exists: the dry run's time left (``~12s (dry-run estimate)``, ``~12s-40s
        (dry-run estimate)``), else ``?``."""
        if self.expected_end is None or self.expected_end[1] <= now:
            return "?"
        low, high = (_duration(max(end - now, 0.0)) for end in self.expected_end)
        return (f"~{low}" if low == high else f"~{low}-{high}") + " (dry-run estimate)"

    def update(self, force: bool = False, **changes: float) -> None:
        """Set counts (``done=``, ``running=``, ``failed=``) and redraw if it is time to."""
        for name, value in changes.items():
            setattr(self.counts, name, value)
        self._observe(time.monotonic())
        if not self.enabled:
            return
        now = time.monotonic()
        every = 0.2 if self.interactive else self.plain_every_s
        if not force and now - self._last_draw < every:
            return
        self._draw(self.line(now), now, force)

    def status(self, text: str, force: bool = False) -> None:
        """A phase's own progress line (e.g. ``references 120/864 ready | elapsed 12.0s``), drawn
        in place and throttled as the trials' line is: one line, not one per event."""
        if self.enabled:
            now = time.monotonic()
            if force or now - self._last_draw >= (0.2 if self.interactive else self.plain_every_s):
                self._draw(text, now, force)

    def _draw(self, text: str, now: float, force: bool) -> None:
        if text == self._last_text and not force:
            return
        self._last_draw, self._last_text = now, text
        if self.interactive:
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        """A line of its own (e.g. "references 2/2 ready"), not overwritten by the progress line."""
        if not self.enabled:
            return
        if self.interactive and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
            self._last_text = ""
        self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """Draw the final state and end the line."""
        if not self.enabled:
            return
        self.update(force=True)
        if self.interactive:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
