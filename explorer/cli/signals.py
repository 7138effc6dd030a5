"""How every command ends on SIGINT and SIGTERM: one line, exit 130 or 143, no traceback.

Every write of the store is atomic, so a command stopped anywhere leaves nothing half-written;
what a user needs is one line saying it was interrupted and the shell's code for the signal.
SIGINT raises Python's KeyboardInterrupt; ``terminate_as_exception`` makes SIGTERM raise
``Terminated`` the same way (a BaseException: no ``except Exception`` on the way swallows it).
A DuckDB query that Ctrl-C stops raises ``RuntimeError("Query interrupted")`` (or DuckDB's
``InterruptException``) instead: ``is_interrupted_query`` recognises it. A sweep arms its own
handlers while it runs (``explorer.sweeps.run.runner``), and restores these after.

The start-up window, from the process's first line until a command's work begins, is
``explorer.signal_hold``'s.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..signal_hold import HOLD, abandoned_imports, begin_work, import_held, is_cli_process

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Terminated(BaseException):
    """SIGTERM reached a command."""


def _raise_terminated(signum, frame):
    raise Terminated()


def _raise_for(signum: int) -> BaseException:
    """The exception a signal raises in a command: KeyboardInterrupt for SIGINT, else ``Terminated``."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


HOLD.raises(_raise_for, _raise_terminated)


class OneLineSignals:
    """What the CLI's click group adds: SIGTERM raises ``Terminated`` while a command runs, and a
    signal that stops a command is one line and the shell's code for it (before a sweep arms its
    own handlers, or in any other command: nothing is half-written, every write is atomic). For
    the start-up window (``explorer.signal_hold``), a command begins its work once click has
    resolved it, unless it is one of ``begin_work_themselves`` (they call ``begin_work`` once
    their modules are imported); and the process ends at once, with its exit code, when a store
    call or an import was abandoned (``exit_now_if_abandoned``)."""

    begin_work_themselves: frozenset[str] = frozenset()

    def main(self, *args, **kwargs):
        try:
            return super().main(*args, **kwargs)
        except SystemExit as exc:
            exit_now_if_abandoned(exc.code)
            raise

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and name not in self.begin_work_themselves:
            begin_work()
        return name, command, rest

    def invoke(self, ctx):
        with terminate_as_exception():  # restores SIGTERM's handler when the command ends
            try:
                outcome = super().invoke(ctx)
                begin_work()  # a signal held through a command that ended before its work began
                return outcome
            except BaseException as exc:
                signum = interrupted_signal(exc)
                if signum is None or ctx.meta.get("explorer.debug"):
                    raise
                print(f"interrupted ({signal.Signals(signum).name})", file=sys.stderr, flush=True)
                sys.exit(EXIT_CODES[signum])


def exit_now_if_abandoned(code) -> None:
    """End the explorer process at once when a store call was abandoned (its endpoint stopped
    answering, or a signal cut the wait), or an import a signal cut short: pyarrow's exit
    handler would otherwise wait for that call, and the interpreter's for that import. Output is flushed first; elsewhere (a program, a test) nothing happens."""
    io = sys.modules.get("store.interrupt")
    if not is_cli_process() or not (abandoned_imports() or io is not None and io.abandoned_work()):
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


@contextmanager
def terminate_as_exception() -> Iterator[None]:
    """While the block runs in the main thread, SIGTERM raises ``Terminated``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if not HOLD.holding:  # while held, SIGTERM is recorded until the command's work begins
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def is_interrupted_query(exc: BaseException) -> bool:
    """A DuckDB query stopped by Ctrl-C (DuckDB turns the signal into its own error)."""
    duckdb = sys.modules.get("duckdb")
    if duckdb is not None and isinstance(exc, getattr(duckdb, "InterruptException", ())):
        return True
    return isinstance(exc, RuntimeError) and str(exc).strip() == "Query interrupted"


def interrupted_signal(exc: BaseException) -> int | None:
    """The signal an exception stands for (SIGINT, SIGTERM), or None; follows ``__cause__`` and
    ``__context__`` (a store error raised while handling the interrupt). An ``Exception`` other
    than DuckDB's ``RuntimeError`` is a failure of its own, even raised while handling a signal."""
    if isinstance(exc, Exception) and not isinstance(exc, RuntimeError):
        return None
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, Terminated):
            return signal.SIGTERM
        signum = getattr(exc, "signum", None)  # a sweep's SweepInterrupted (explorer.sweeps: Ray's room)
        if not isinstance(exc, Exception) and signum in EXIT_CODES:
            return signum
        if isinstance(exc, KeyboardInterrupt) or is_interrupted_query(exc):
            return signal.SIGINT
        exc = exc.__cause__ or exc.__context__
    return None
