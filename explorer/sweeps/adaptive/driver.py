"""Driving an adaptive loop's rounds through a runner (``loop`` and ``stopping`` decide, this
module schedules; the runners' interfaces are ``runners``'s).

Open rounds are the rounds recorded *planned*: their points are queued on the runner. The oldest
open round is refitted as soon as its last trial has rows (the fit reads only the trials of the
rounds up to it, so the same rounds give the same fit whatever ran beside them), recorded done,
and the next choice is made.

With a runner that runs in the background (``lookahead``, ``session_runner.SessionRunner``) a
round is a logging unit, not a barrier: each refit chooses, from the same linearised model, the
next round (when none is open behind the one refitted) and ``RESERVE_BATCHES`` more batches in
reserve (each one's gains counting the points before it). A batch of the reserve is recorded as
a round and queued whenever the runner wants more points (``room``: for the pool, fewer queued
than it keeps ahead of its workers) while the loop waits for a round, so the workers have points
through the refit that follows; when the reserve runs out before the next refit (a round held up
by a straggler, or points that run faster than the refits), more is chosen from the same fit.
A newer fit's choice replaces the reserve. A reserve's points were chosen one or more fits
earlier than in a loop that waits. When a fit stops the loop while later rounds are open, their
queued points are dropped, the ones already handed to a worker finish, and each is recorded done
with its points that ran, a fit over every trial (run while the runner stops), and the stop
reason.

A plain ``runner(spec, keys)`` (a function that returns when the keys have run: the tests'
planted runner) is driven as before: one round at a time (``BlockingRunner``).
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from store import FINAL_STATUSES

from ...analysis.fitting import target_lines, targets_of
from ...signals import SIGNAL_POLL_S
from .rounds import AdaptiveResult, point_log_rows, read_rounds
from .runners import RoundRunner, TrialRunner
from .selection import Choice
from .stopping import rules_changed

# Batches a refit chooses beyond the next round (and each later choice from the same fit), queued
# as the runner asks for more points. One batch did not cover a refit on two workers: in a traced
# rates run a round often finished during the previous round's refit, with nothing left to queue.
RESERVE_BATCHES = 2


class BlockingRunner:
    """A ``TrialRunner`` (a plain ``runner(spec, keys)``) seen as the driver's ``RoundRunner``:
    ``submit`` runs the keys (when any lacks a final status) and returns when they have; nothing
    is ever pending."""

    lookahead = False

    def __init__(self, runner: TrialRunner, spec, statuses: Callable[[], dict]):
        self.runner, self.spec, self.statuses = runner, spec, statuses
        self.interrupted: int | None = None

    def submit(self, keys: list[str]) -> None:
        known = self.statuses()
        if any(known.get(k) not in FINAL_STATUSES for k in keys):
            outcome = self.runner(self.spec, frozenset(keys))
            self.interrupted = getattr(outcome, "interrupted", None)

    def wait(self, timeout: float = SIGNAL_POLL_S) -> list[str]:
        return []

    def pending(self) -> int:
        return 0

    def room(self) -> int:
        return 0

    def drop_queued(self) -> list[str]:
        return []

    def close(self, interrupted: bool = False) -> None:
        pass


def key_of(item) -> str:
    return item.candidate.trial_key if isinstance(item, Choice) else item.trial_key


class RoundDriver:
    """One run of the loop's rounds: ``loop`` a ``loop.AdaptiveLoop``, ``runner`` a ``RoundRunner``
    (a ``BlockingRunner`` or a ``SessionRunner``)."""

    def __init__(self, loop, runner: RoundRunner):
        self.loop, self.runner = loop, runner
        self.open: list[int] = []  # rounds recorded planned, oldest first
        self.round_keys: dict[int, list[str]] = {}
        self.reserve: tuple[list, str, int] | None = None  # chosen, not yet recorded: (choices, reason, fit round)
        self.last_fit: tuple[object, int] | None = None  # (fit, round) the reserve is chosen from, while it chooses
        self.keys: list[str] = []  # every point of the recorded rounds

    # -- recording and queueing rounds
    def plan_round(self, number: int, choices: list, reason: str) -> None:
        """Record round ``number`` planned with ``choices`` and queue its points."""
        new = [key_of(c) for c in choices]
        self.keys = self.keys + new
        self.loop.write(number, "planned", point_log_rows(choices, reason), self.keys)
        self.queue_round(number, new)

    def queue_round(self, number: int, keys: list[str]) -> None:
        self.open.append(number)
        self.round_keys[number] = keys
        self.loop.log(f"round {number}: running {len(keys)} trial(s)")
        blocking = not self.runner.lookahead
        if blocking:
            self.loop.reads.forget()  # it skips the keys that have rows
        self.runner.submit(keys)
        if blocking:
            self.loop.reads.forget()  # it has written them (a background runner reports its trials as they finish)

    def release_reserve(self) -> None:
        """Record and queue the reserve's next batch when the runner wants more points (``room``),
        choosing more from the last fit when the reserve ran out."""
        if self.runner.room() <= 0:
            return
        if not self.reserve and self.last_fit is not None:
            fit, number = self.last_fit
            choices, reason, _ = self.loop.next_choice(fit, self.keys, number, RESERVE_BATCHES * self.loop.ad.batch)
            self.reserve = (choices, reason, number) if choices else None
            self.last_fit = self.last_fit if choices else None  # nothing more to choose from it
        if self.reserve:
            choices, reason, fitted = self.reserve
            chosen = set(self.keys)
            fresh = [c for c in choices if key_of(c) not in chosen]  # never a point twice
            batch, rest = fresh[:self.loop.ad.batch], fresh[self.loop.ad.batch:]
            self.reserve = (rest, reason, fitted) if rest else None
            if batch:
                behind = max(self.open, default=None)
                where = f"queued behind round {behind}" if behind is not None else "queued when no round was open"
                self.plan_round(max(self.open, default=fitted) + 1, batch,
                                f"{reason}; chosen after round {fitted}, {where}")

    def wait_for(self, number: int, result: AdaptiveResult) -> bool:
        """Until round ``number``'s trials all have rows (True), or a signal or a round that
        cannot complete stops the loop (False, with ``result`` saying why)."""
        if not self.runner.lookahead:
            self.loop.reads.forget()
        missing = {k for k in self.round_keys[number] if k not in self.loop.reads.statuses()}
        if not missing and not self.loop.signalled(result):
            self.release_reserve()  # it finished during an earlier refit: the workers' points for this one
        while missing:
            if self.runner.interrupted is not None:
                result.interrupted = self.runner.interrupted
            if self.loop.signalled(result) or result.interrupted is not None:
                return False
            self.release_reserve()
            if self.runner.pending() == 0:
                result.missing = len(missing)
                return False
            finished = self.runner.wait(SIGNAL_POLL_S)
            self.loop.reads.forget(finished)
            missing -= set(finished)
        return True

    # -- the run
    def start(self, result: AdaptiveResult) -> int | None:
        """Open the rounds the log leaves planned (or round 0's design on a new sweep); returns the
        round to refit first, None when a stopped loop has nothing to do."""
        loop = self.loop
        rounds = read_rounds(loop.store, loop.spec.name)
        self.keys = loop.chosen(rounds)
        if rounds.empty:
            prior = loop.prior([])
            if prior:
                loop.log(f"{len(prior)} trial(s) of this sweep already in the store enter the fit and count as spent")
            self.plan_round(0, loop.initial_plan(prior), "initial space-filling design")
            return 0
        states = rounds.groupby("round")["state"].first()
        planned = [int(n) for n, s in states.items() if s == "planned"]
        last = int(states.index.max())
        if not planned:
            rows = rounds[rounds["round"] == last]
            if len(rows["stop_reason"].dropna()):
                changed = rules_changed(loop, rows)
                if not changed:
                    loop.log(f"the adaptive loop had stopped after round {last}; nothing to run")
                    return None
                # the stop was decided under other rules: decide again under these (the last
                # round is rewritten with the new decision; its trials are not rerun)
                loop.log(f"the [adaptive] rules changed since the loop stopped after round {last} ({changed}): "
                         "deciding again")
            return last
        points = rounds[rounds["entry"] == "point"]
        for n in planned:
            self.queue_round(n, list(points.loc[points["round"] == n, "trial_key"]))
        return planned[0]

    def run(self, result: AdaptiveResult) -> AdaptiveResult:
        loop = self.loop
        try:
            number = self.start(result)
            if number is not None:
                loop.load_fit()
            while number is not None:
                if number in self.open and not self.wait_for(number, result):
                    break
                number = self.refit(number, result)
        finally:
            self.runner.close(interrupted=result.interrupted is not None)
        return loop.finish(result, read_rounds(loop.store, loop.spec.name))

    def refit(self, number: int, result: AdaptiveResult) -> int | None:
        """Refit after round ``number``, record it done and choose what comes next; returns the
        next round to refit, None when the loop stops."""
        loop = self.loop
        if loop.signalled(result):  # the round stays planned: a rerun fits it again, runs nothing twice
            return None
        rounds = read_rounds(loop.store, loop.spec.name)
        upto = set(rounds.loc[(rounds["entry"] == "point") & (rounds["round"] <= number), "trial_key"])
        fitted = loop.fit(upto)
        later = [n for n in self.open if n > number]
        batch = loop.ad.batch
        ahead = RESERVE_BATCHES * batch if self.runner.lookahead else 0  # the reserve, after the next round
        choices, reason, stop = loop.next_choice(fitted, self.keys, number, ahead if later else batch + ahead)
        if loop.signalled(result):
            return None
        this = rounds[(rounds["round"] == number) & (rounds["entry"] == "point")]
        targets = {} if isinstance(fitted, str) else targets_of(fitted, loop.targets)
        loop.write(number, "done", loop.recorded_points(this) + loop.target_rows(targets, "fit after the round"),
                   self.keys, stop)
        if number in self.open:
            self.open.remove(number)
        loop.note_failed(number, list(this["trial_key"]))
        loop.log(f"round {number} done: " + (", ".join(line.strip() for line in target_lines(
            targets, loop.ad.halfwidth, loop.positive)) or str(fitted)))
        if stop is not None:
            loop.log(f"stopping: {stop}")
            if later:
                self.close_rounds(later, number, stop, rounds)
            return None
        self.reserve = None  # a reserve still unrecorded was chosen on an older fit: this choice replaces it
        self.last_fit = (fitted, number) if self.runner.lookahead else None
        if not later:
            self.plan_round(number + 1, choices[:batch], reason)
            choices = choices[batch:]
        if choices:
            self.reserve = (choices, reason, number)
        return number + 1

    def close_rounds(self, later: list[int], stopped: int, stop: str, rounds) -> None:
        """After the loop stopped at round ``stopped``: each round of ``later`` (open) keeps the
        points that ran (the queued ones are dropped, the running ones finish) and is recorded done."""
        loop = self.loop
        self.reserve = self.last_fit = None
        dropped = set(self.runner.drop_queued())
        while self.runner.pending():
            self.runner.wait(SIGNAL_POLL_S)
        loop.reads.forget()  # every trial read again: the fit over all of them
        statuses, _ = loop.reads.statuses(), loop.reads.walls()  # read before the runner compacts the trials rows
        with ThreadPoolExecutor(max_workers=1) as fitter:
            fitting = fitter.submit(loop.fit, None)
            self.runner.close()  # no trial is left to run: Ray stops (a second or two) while the last fit runs
            fitted = fitting.result()
        targets = {} if isinstance(fitted, str) else targets_of(fitted, loop.targets)
        closed = {k for number in later for k in self.round_keys[number]}
        self.keys = [k for k in self.keys if k in statuses or k not in closed]  # what ran stays spent
        for number in later:
            ran = [k for k in self.round_keys[number] if k in statuses]
            gone = len(dropped & set(self.round_keys[number]))
            this = rounds[(rounds["round"] == number) & (rounds["entry"] == "point") & rounds["trial_key"].isin(ran)]
            loop.write(number, "done", loop.recorded_points(this) + loop.target_rows(targets, "fit after every trial"),
                       self.keys, f"{stop} (decided after round {stopped}; of round {number}, queued before that, "
                       f"{len(ran)} trial(s) had started and ran, {gone} were dropped)")
            loop.log(f"round {number}: {len(ran)} trial(s) that had started ran, {gone} dropped")


__all__ = ["BlockingRunner", "RoundDriver"]
