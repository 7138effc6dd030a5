"""SIGINT and SIGTERM during a sweep: the handler records the signal, the driver acts on it where
it checks.

A Python signal handler runs in the main thread between two bytecodes, and that can be inside
Ray's compiled code: ``ray.wait`` polls for signals, and an exception raised by the handler
there comes out as ``SystemError: <cyfunction CoreWorker.wait ...> returned a result with an
exception set`` (a traceback, exit 1, no resume line). So ``SignalGuard``'s handler never
raises: it records the first signal, and the driver's loops call ``check()``, which raises
``SweepInterrupted`` in plain Python, at points where stopping is safe (planning, every poll of
the reference phase, every step of Ray Tune, the wait for another driver, each step of an
adaptive round). The driver then stops its Ray, releases what it holds and prints its summary
with the command that resumes the run; the exit code is 128 + the signal (130, 143).

A wait for a remote store's call in plain Python (one that a trickling endpoint holds:
``store.interrupt.stoppable``) calls the handler's owner's ``stop_waiting()``: a
plain sweep's guard raises ``SweepInterrupted`` there, once, so that a store that stopped
answering does not hold the driver (its cleanup's calls then run to their deadline); an
adaptive loop's guard never does (its steps check the record themselves).
"""
from __future__ import annotations

import os
import signal
import sys
import threading

from ..formatting import shell_command

SIGNALS = (signal.SIGINT, signal.SIGTERM)
SIGNAL_POLL_S = 0.25  # how often a driver blocked on Ray (or on another driver) looks whether a signal came


class SweepInterrupted(BaseException):
    """SIGINT or SIGTERM reached the driver (a BaseException, as KeyboardInterrupt: no ``except
    Exception`` on the way, in Ray or Tune, swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class SignalGuard:
    """While entered, in the main thread: the first SIGINT or SIGTERM is recorded (``signum``),
    later ones are ignored (the driver is stopping: its cleanup must not be cut short). Other
    threads (a notebook's worker thread) keep the process's handlers and never see a signal.

    Guards nest: an inner guard (a sweep run by an adaptive round) shares the outer one's record,
    so a signal between two rounds and one during a round stop the same loop.

    ``arm()`` (again) after ``ray.init``: Ray's core worker installs its own C-level SIGTERM
    handler in the driver (it aborts the process), replacing Python's.
    """

    _outermost: SignalGuard | None = None

    def __init__(self, stops_store_waits: bool = False) -> None:
        self.active = threading.current_thread() is threading.main_thread()
        self.fired: list[int] = []
        self._saved: dict = {}
        self._owner = False
        self.stops_store_waits = stops_store_waits  # nested guards take the outermost's
        self._stopped_a_wait = False

    @property
    def signum(self) -> int | None:
        """The signal received, or None."""
        return self.fired[0] if self.fired else None

    def check(self) -> None:
        """Raise ``SweepInterrupted`` when a signal was received."""
        if self.fired:
            raise SweepInterrupted(self.fired[0])

    def stop_waiting(self) -> None:
        """Raise ``SweepInterrupted`` in a store's wait, once, when this guard stops those
        (module docstring)."""
        if self.fired and self.stops_store_waits and not self._stopped_a_wait:
            self._stopped_a_wait = True
            raise SweepInterrupted(self.fired[0])

    def _handler(self, signum, frame) -> None:
        if not self.fired:
            self.fired.append(signum)

    def arm(self) -> None:
        if self.active:
            for s in SIGNALS:
                signal.signal(s, self._handler)

    def __enter__(self) -> SignalGuard:
        if not self.active:
            return self
        outer = SignalGuard._outermost
        if outer is not None:
            self.fired = outer.fired  # one record for the whole run
            self.stops_store_waits = outer.stops_store_waits
        else:
            self._saved = {s: signal.getsignal(s) for s in SIGNALS}
            SignalGuard._outermost, self._owner = self, True
        self.arm()
        return self

    def __exit__(self, *exc) -> bool:
        if self._owner:
            for s, h in self._saved.items():
                signal.signal(s, h if h is not None else signal.SIG_DFL)
            SignalGuard._outermost = None
        elif self.active:
            self.arm()  # the outer guard's loop goes on: keep the recording handler installed
        return False


def resume_command() -> str | None:
    """The command line that started this process, when it is the explorer CLI, without the
    credentials a store URI in it may carry (``store.redact_uri``: they are printed)."""
    from store import redact_uri

    argv = [redact_uri(arg) for arg in sys.argv]
    if not argv:
        return None
    head = os.path.basename(argv[0])
    if head == "explorer":
        return shell_command(["explorer", *argv[1:]])  # quoted, control and bidi characters escaped
    if argv[0].endswith(os.path.join("explorer", "cli", "__main__.py")):
        return shell_command(["python", "-m", "explorer.cli", *argv[1:]])
    if argv[0] == "-c" and len(argv) > 1 and argv[1] == "sweep":
        return shell_command(["explorer", *argv[1:]])
    return None
