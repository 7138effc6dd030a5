"""What a sweep run did and where its trials stand, read back from the store (``SweepResult``)."""
from __future__ import annotations

import datetime as dt
import signal
from dataclasses import dataclass, field

from store import Store

from ...config.planning import Plan, PlannedTrial

SHOWN_FAILURES = 5  # failed trials the summary names, with their errors


@dataclass
class SweepResult:
    """What a sweep run did and where its trials stand (read back from the store)."""

    name: str
    store: str
    total: int  # trials (grid points) in the spec
    skipped: int  # already complete (ok or diverged) before this run
    ran: int  # trials this run wrote (read back from the store: what really ran)
    ok: int = 0
    diverged: int = 0
    failed: int = 0
    missing: int = 0  # planned but with no rows: a worker lost for good, a store write failed, an interruption
    wall_s: float = 0.0
    failures: list[str] = field(default_factory=list)  # a few "L=.. M=..: error" lines
    stale: int = 0  # trials of this sweep in the store that the spec no longer defines
    lost: list[str] = field(default_factory=list)  # why Tune trials (packs of points) failed for good
    interrupted: int | None = None  # the signal (SIGINT, SIGTERM) that stopped this run
    resume: str | None = None  # the command that resumes it
    elsewhere: dict[str, int] = field(default_factory=dict)  # owner (host:pid) -> trials it ran or holds
    reference_errors: dict[str, str] = field(default_factory=dict)  # ref_key -> why it is unavailable
    planned: bool = True  # False: a signal stopped the run while it was planning (total is then unknown)

    @property
    def exit_code(self) -> int:
        """0 when every trial ended ok or diverged, 1 when some failed or are missing; 128 + the
        signal number when a signal stopped the run (130 for SIGINT, 143 for SIGTERM)."""
        if self.interrupted is not None:
            return 128 + int(self.interrupted)
        return 0 if self.failed == 0 and self.missing == 0 else 1

    def summary(self) -> str:
        """A few lines for the terminal."""
        counts = f"{self.ok} ok, {self.diverged} diverged, {self.failed} failed"
        if self.missing:
            counts += f", {self.missing} missing"
        run = ("nothing to run" if self.skipped == self.total and not self.ran
               else f"{self.ran} run in {self.wall_s:.1f}s of wall time, Ray's start and the references included")
        lines = [f"sweep {self.name}: {self.total} trials: {counts} ({self.skipped} already complete, {run})"
                 if self.planned else f"sweep {self.name}: stopped while planning its trials; nothing ran",
                 f"store: {self.store}"]
        for owner, n in self.elsewhere.items():
            lines.append(f"{n} claimed by another driver ({owner})")
        lines += [f"failed {line}" for line in self.failures]
        for key, error in list(self.reference_errors.items())[:3]:
            lines.append(f"reference {key} unavailable: {error}")
        if self.interrupted is not None:
            name = signal.Signals(self.interrupted).name
            again = f": {self.resume}" if self.resume else ""
            what = f"{self.missing} trials not run" if self.planned else "no trial ran"
            lines.append(f"interrupted by {name}: {what}; to resume, run the same command again{again}")
        elif self.missing:
            why = f" (first cause: {self.lost[0]})" if self.lost else ""
            lines.append(f"{self.missing} trials have no rows{why}: run the same command again to retry them")
        if self.stale:
            lines.append(f"note: the store holds {self.stale} other trials of sweep {self.name!r} that this spec does "
                         "not define (an earlier version of it); they stay in the store and in its queries")
        return "\n".join(lines)


def describe(trial: PlannedTrial) -> str:
    """A grid point as the summary names it."""
    c = trial.config
    return f"L={c.L} M={c.M} D={c.D} alpha={c.alpha:g}"


def count_started_since(store: Store, sweep: str, keys: set[str], since: dt.datetime) -> int:
    """How many of ``keys`` have a trials row started at or after ``since``: what this run wrote."""
    if not keys:
        return 0
    started = store.trial_column(sweep, "started_at", keys)
    n = 0
    for value in started.values():
        if value is None:
            continue
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        n += value >= since - dt.timedelta(seconds=1)
    return n


def count_statuses(result: SweepResult, store: Store, the_plan: Plan, known: dict[str, str]) -> None:
    """Fill ``result``'s counts by status (``known``: key -> status, read from the store) and
    name the first failed trials with their errors."""
    failed = []
    for trial in the_plan.trials:
        status = known.get(trial.trial_key, "missing")
        setattr(result, status, getattr(result, status) + 1)
        if status == "failed":
            failed.append(trial)
    shown = failed[:SHOWN_FAILURES]
    errors = store.trial_column(result.name, "error", [t.trial_key for t in shown]) if shown else {}
    result.failures = [f"{describe(t)} ({t.trial_key}): {errors.get(t.trial_key)}" for t in shown]
