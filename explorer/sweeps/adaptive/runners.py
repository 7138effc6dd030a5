"""The interfaces of the adaptive loop's runners: what runs the trials the loop chooses.

Two kinds are interchangeable:

- a ``TrialRunner`` is called with a spec and trial keys and returns once those trials have run
  (their rows are in the store): ``explorer.sweeps.run.runner.TuneRunner`` (a Ray Tune sweep of
  those keys) and ``planted_runner.PlantedRunner`` (rows of a planted law, no Ray, no torch);
- a ``RoundRunner`` runs in the background: the loop queues keys (``submit``), collects those
  that finished (``wait``) and may queue the next round while a round's last points run
  (``lookahead``): ``session_runner.SessionRunner`` (one Ray session and one pool of workers for
  every round), and ``driver.BlockingRunner``, which drives a ``TrialRunner`` a round at a time.

``run_adaptive`` takes either: a runner without ``lookahead`` is a ``TrialRunner`` and is wrapped
in a ``BlockingRunner``.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ...config.sections import SweepSpec


@runtime_checkable
class TrialRunner(Protocol):
    """Runs the trials of ``keys`` (a subset of ``spec``'s plan) and returns when they have run.

    The result may carry ``interrupted`` (a signal number, as ``tracking.SweepResult`` does):
    the loop then stops with that exit code. A key whose trial the store already holds may be
    skipped.
    """

    def __call__(self, spec: SweepSpec, keys: frozenset[str]) -> object: ...


@runtime_checkable
class RoundRunner(Protocol):
    """A runner the loop drives without waiting for it (``driver.RoundDriver``).

    Attributes:
        lookahead: whether the loop may queue a round before the previous one is done.
        interrupted: the signal that stopped the runner (SIGINT, SIGTERM), or None.
    """

    lookahead: bool
    interrupted: int | None

    def submit(self, keys: Iterable[str]) -> None:
        """Queue the trials of ``keys``; may return before they have run."""

    def wait(self, timeout: float) -> list[str]:
        """The keys of the trials finished within ``timeout`` seconds (their rows are stored)."""

    def pending(self) -> int:
        """How many queued or running trials have not finished."""

    def room(self) -> int:
        """How many more trials the runner wants queued now (0: none)."""

    def drop_queued(self) -> list[str]:
        """Forget the queued trials that have not started; returns their keys."""

    def close(self, interrupted: bool = False) -> None:
        """Stop running and clean up (``interrupted``: trials may be in flight)."""
