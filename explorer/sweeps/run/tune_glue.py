"""The driver's side of Ray Tune: the progress callback, the stoppers (a lost store, a signal),
a silent reporter and the settings under which Tune runs."""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from ..ray import tune
from ..tracking import STORE_LOST, Progress

TUNE_ENV = {
    "RAY_AIR_NEW_OUTPUT": "0",  # the legacy output honours verbose=0 (the new one always prints a header)
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",  # no result.json/CSV/TensorBoard per trial: the store has it all
    "TUNE_GLOBAL_CHECKPOINT_S": "1000000",  # resuming is the store's job, not Tune's experiment state
    "TUNE_WARN_INSUFFICENT_RESOURCE_THRESHOLD_S": "0",
    "TUNE_DISABLE_SIGINT_HANDLER": "1",  # SIGINT and SIGTERM are the driver's (``interrupts.SignalGuard``)
}
TUNE_LOGGERS = ("ray.tune", "ray.train", "ray.air")


class ProgressCallback(tune.Callback):
    """Driver side: turns the workers' reports into progress counts (keys only, no rows)."""

    def __init__(self, progress: Progress, costs: dict[str, float] | None = None):
        self.progress = progress
        self.costs = costs or {}
        self.statuses: dict[str, str] = {}
        self._failed = 0
        self._done_cost = 0.0

    def on_trial_result(self, iteration, trials, trial, result, **info):
        keys = result.get("keys")
        if not keys:
            return
        # counted as the reports come (a sweep of 10^5 trials sends thousands of reports:
        # summing every status again at each would cost O(n^2))
        for key, status in zip(keys.split(","), result["statuses"].split(",")):
            before = self.statuses.get(key)
            if status != "complete" or before is None:
                if before is None:
                    self._done_cost += self.costs.get(key, 0.0)
                self._failed += (status == "failed") - (before == "failed")
                self.statuses[key] = status
        self.progress.update(done=len(self.statuses), failed=self._failed, done_cost=self._done_cost)

    def on_step_end(self, iteration, trials, **info):
        running = sum(t.status == "RUNNING" for t in trials)
        self.progress.update(running=running)


class StopWhenStoreLost(tune.Stopper):
    """Driver side: stops every Tune trial as soon as one reports the store unreachable (every
    other trial would fail the same way, and Tune would retry each of them)."""

    def __init__(self):
        self.lost: str | None = None

    def __call__(self, trial_id, result) -> bool:
        if self.lost is None and result.get(STORE_LOST):
            self.lost = result[STORE_LOST]
        return self.lost is not None

    def stop_all(self) -> bool:
        return self.lost is not None


class StopOnSignal(tune.Callback):
    """Driver side: at every step of Tune's loop, in plain Python between Tune's calls into Ray,
    ``check`` raises ``SweepInterrupted`` when a signal came (never inside Ray's compiled code,
    where the signal handler runs: ``interrupts.py``)."""

    def __init__(self, check: Callable[[], None]):
        self.check = check

    def on_step_begin(self, iteration, trials, **info):
        self.check()


class QuietReporter(tune.ProgressReporter):
    """Ray Tune's own tables stay quiet: our progress line says it all."""

    def should_report(self, trials, done=False):
        return False

    def report(self, trials, done, *sys_info):
        pass


@contextlib.contextmanager
def quiet_loggers(*names: str) -> Iterator[None]:
    """These loggers say nothing below CRITICAL for the duration."""
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
