"""Work that a signal or a time limit stops at once (DuckDB queries, store I/O), and DuckDB's
memory limit.

DuckDB runs a query in C++ without returning to Python, so a Python signal handler (Ctrl-C's
KeyboardInterrupt, a command's SIGTERM handler) would run only when the query ends, and DuckDB's
own Ctrl-C handling stops working once any Python handler is installed. pyarrow's object-store
calls block the same way, for as long as a trickling endpoint keeps sending. ``stoppable`` runs
the work in a helper thread while the main thread waits in Python: a signal's exception is
raised there at once, and a time limit ends the wait (``WorkExpired``). ``interruptible`` is that
for DuckDB work: it also stops the query (``con.interrupt()``), and the exception goes on
(KeyboardInterrupt stays KeyboardInterrupt). Store I/O cannot be cancelled: its helper thread is
a daemon, abandoned to end with the process.

A handler that records a signal instead of raising (the CLI's start-up hold, a sweep's
``SignalGuard``) is a bound method of an object with ``stop_waiting()``, which raises the
recorded signal's exception (or nothing, where its owner acts on the signal itself): a store
call's wait calls it before the work starts and while it waits (``act_on_recorded_signal``), so
a signal recorded earlier, or during the wait, ends it too. DuckDB work is left to finish there,
as before: a sweep's guard acts on the signal after it.

Memory: DuckDB's own default is 80 % of the machine's memory; the store's connections use
``SQL_MEMORY_SHARE`` of it unless told otherwise (``memory_limit_bytes``).
"""
from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from .errors import QueryTimeout, StoreQueryError

T = TypeVar("T")
SQL_MEMORY_SHARE = 0.5  # of the machine's physical memory, for each DuckDB connection of the store
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%|[kmgt]i?b|b)\s*$", re.IGNORECASE)
_STOP_WAIT_S = 10.0  # how long an interrupted query may take to notice
_POLL_S = 0.05  # how often a waiting main thread lets signal handlers run and looks at the clock


class WorkExpired(Exception):
    """Work that ran past its time limit (``stoppable``); the caller says what it was."""


_ABANDONED: list[threading.Thread] = []  # helper threads whose wait ended before their work


def abandoned_work() -> int:
    """How many helper threads were given up (a signal, a time limit) and still run: store calls
    pyarrow cannot cancel. A process that ends should not wait for them (pyarrow's exit handler
    would)."""
    return sum(thread.is_alive() for thread in _ABANDONED)


def physical_memory_bytes() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30  # a platform without sysconf: a modest machine


def memory_limit_bytes(text: str | None) -> int:
    """Bytes of a memory limit: ``"8GB"``, ``"512MiB"``, ``"30%"`` (of physical memory), or None
    for ``SQL_MEMORY_SHARE`` of it. At least 64 MiB, at most the machine's memory.

    Raises:
        StoreQueryError: text that is not a size or a percentage from 1 to 100.
    """
    total = physical_memory_bytes()
    if text is None:
        return max(int(total * SQL_MEMORY_SHARE), 64 * 2**20)
    match = _SIZE.match(str(text))
    if not match:
        raise StoreQueryError(f"memory limit {str(text)[:40]!r}: expected a size such as 8GB or 512MiB, or a share such as 30%")
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit == "%":
        if not 1 <= number <= 100:
            raise StoreQueryError(f"memory limit {text!r}: a share of the machine's memory is from 1% to 100%")
        wanted = total * number / 100
    else:
        wanted = number * _UNITS[unit]
    if not 64 * 2**20 <= wanted <= total:
        raise StoreQueryError(f"memory limit {text!r}: expected from 64MiB to the machine's {total / 2**30:.1f} GiB")
    return int(wanted)


def act_on_recorded_signal() -> None:
    """In the main thread: when SIGINT's handler records signals instead of raising (its owner
    has ``stop_waiting()``), let it raise what it recorded; nothing otherwise."""
    if threading.current_thread() is not threading.main_thread():
        return
    stop_waiting = getattr(getattr(signal.getsignal(signal.SIGINT), "__self__", None), "stop_waiting", None)
    if callable(stop_waiting):
        stop_waiting()


def stoppable(work: Callable[[], T], timeout_s: float | None = None, stop: Callable[[], None] | None = None,
              name: str = "explorer-work", recorded: bool = True) -> T:
    """``work()`` in a daemon helper thread while this thread waits in Python.

    Args:
        timeout_s: end the wait after this many seconds (None: no limit).
        stop: called when the wait ends early (a signal, the limit), to stop ``work`` if it can.
        recorded: also end it for a signal that a recording handler holds (module docstring);
            False for DuckDB work, which a sweep's guard lets finish and then acts on.

    Raises:
        WorkExpired: ``work`` ran longer than ``timeout_s``.
        Whatever ``work`` raises; in the main thread, whatever a signal handler raises (or a
        recording handler's ``check()``) before or while it runs.
    """
    check = act_on_recorded_signal if recorded else (lambda: None)
    check()  # a signal that came before the work began ends it before it starts
    done = threading.Event()
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=target, name=name, daemon=True)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    thread.start()
    try:
        while not done.wait(_POLL_S):  # waiting in Python: signal handlers run here, at once
            check()
            if deadline is not None and time.monotonic() > deadline:
                raise WorkExpired(f"longer than {timeout_s:g} s")
    except BaseException:
        if stop is not None:
            stop()
            done.wait(_STOP_WAIT_S)
        if not done.is_set():
            _ABANDONED.append(thread)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def interruptible(con, work: Callable[[], T], timeout_s: float | None = None) -> T:
    """``work()`` (DuckDB calls on ``con``), stoppable by signals and by ``timeout_s``.

    Raises:
        QueryTimeout: ``work`` ran longer than ``timeout_s`` (it was interrupted).
        Whatever ``work`` raises; whatever a signal handler raises while it runs.
    """
    if threading.current_thread() is not threading.main_thread():
        return work()  # signals only reach the main thread; a worker thread has nothing to gain
    try:
        return stoppable(work, timeout_s, stop=lambda: _interrupt(con), name="explorer-duckdb", recorded=False)
    except WorkExpired:
        raise QueryTimeout(f"the query ran longer than its time limit of {timeout_s:g} s and was stopped") from None


def _interrupt(con) -> None:
    try:
        con.interrupt()
    except Exception:  # noqa: BLE001 - a closed connection has nothing left to stop
        pass
