"""The start-up window of the ``explorer`` process: SIGINT and SIGTERM recorded, not raised, from
its first line until a command's work begins.

Raised there, KeyboardInterrupt lands in an import (a traceback, exit -2; inside a C extension's
initialisation, an abort) or in click's parsing (click's "Aborted!", exit 1), and a command
could miss it altogether. So ``explorer/__init__`` installs the hold (``hold_startup_signals``)
before anything else is imported, only in the explorer process, and ``begin_work`` ends it and
raises what was recorded, at a point where the CLI turns it into one line and exit 130 or 143.
Short commands begin their work when click has resolved them; the long ones (sql, sweep, fit,
report, reproduce) once their modules are imported: each gives ``begin_work`` the functions that
import them (through the wings' faces, as any import does), run in a helper thread. Meanwhile
every remote store call's wait (``store.interrupt.stoppable``) acts on the record through
``stop_waiting()``.

Only ``os``, ``signal`` and ``sys`` are imported here (and ``explorer.faces`` by this wing's face):
the window before the hold is the interpreter's own start-up.
"""
from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable


class StartupHold:
    """Records the first SIGINT or SIGTERM while installed."""

    def __init__(self) -> None:
        self.fired: list[int] = []
        self.holding = False
        self._exception = lambda signum: KeyboardInterrupt()
        self._sigterm_handler = signal.SIG_DFL

    def raises(self, exception, sigterm_handler) -> None:
        """What a recorded signal raises (``handlers``: KeyboardInterrupt or ``Terminated``), and
        SIGTERM's handler once the hold ends."""
        self._exception, self._sigterm_handler = exception, sigterm_handler

    def _handler(self, signum, frame) -> None:
        if not self.fired:
            self.fired.append(signum)

    def check(self) -> None:
        """Raise the recorded signal's exception, once (``store.interrupt`` calls it while it waits)."""
        if self.fired:
            raise self._exception(self.fired.pop())

    stop_waiting = check  # what store.interrupt's waits call

    def install(self) -> None:
        try:
            for s in (signal.SIGINT, signal.SIGTERM):
                signal.signal(s, self._handler)
        except ValueError:  # not the main thread: signals are not this thread's
            return
        self.holding = True

    def release(self) -> None:
        """Signals raise again, as they do once a command's work began."""
        if self.holding:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, self._sigterm_handler)
            self.holding = False


HOLD = StartupHold()


def is_cli_process() -> bool:
    """Whether this process is the ``explorer`` command (its console script or ``python -m
    explorer.cli``), not a program or a test that imported the CLI."""
    head = sys.argv[0] if sys.argv else ""
    return os.path.basename(head) == "explorer" or head.endswith(os.path.join("explorer", "cli", "__main__.py"))


def hold_startup_signals() -> None:
    """In the explorer process, record SIGINT and SIGTERM until ``begin_work``; nothing elsewhere,
    or when SIGINT's handler is not Python's default (whoever started Python chose one)."""
    if is_cli_process() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        HOLD.install()


def begin_work(*loaders: Callable[[], object]) -> None:
    """The command's work begins: signals raise from now on, and one recorded since start-up is
    raised now.

    Args:
        loaders: functions that import what the command needs (the store: pyarrow, DuckDB), each
            by its imports through the wings' faces (``from .. import api``); run first in a helper
            thread while this one waits in Python: a signal during those seconds of imports ends
            the command at once, never inside an extension's initialisation. The helper is then
            abandoned (``abandoned_imports``).
    """
    import_held(*loaders)
    HOLD.release()
    HOLD.check()


def import_held(*loaders: Callable[[], object]) -> None:
    """Run ``loaders`` as ``begin_work`` does, and go on holding signals (a command with two
    steps of imports: the sweep reads its spec before the store is imported)."""
    if loaders and HOLD.holding:
        import threading

        done = threading.Event()

        def load() -> None:
            try:
                for loader in loaders:
                    loader()
            except BaseException:  # noqa: BLE001 - the import is done again, and fails, in the command
                pass
            finally:
                done.set()

        helper = threading.Thread(target=load, name="explorer-imports", daemon=True)
        helper.start()
        try:
            while not done.wait(0.05):
                HOLD.check()
        except BaseException:
            _ABANDONED.append(helper)
            raise


_ABANDONED: list = []  # import helpers a signal stopped waiting for


def abandoned_imports() -> bool:
    """Whether an import helper a signal stopped waiting for is still importing (the process
    should end without waiting for it)."""
    return any(helper.is_alive() for helper in _ABANDONED)
