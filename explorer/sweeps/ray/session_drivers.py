"""The sweeps that joined the session Ray, known to ``explorer ray stop`` so that it lets them stop
first: a sweep whose Ray vanished under it would be ended by Ray's core worker at once (its
process terminated from compiled code: no explorer line, no resume command, its claims left).

A joined sweep writes ``drivers/<pid>.json`` (its process id, start time and boot) in the session
folder and watches for ``stopping`` there; ``stop_session`` writes ``stopping``, waits while a
registered sweep still runs (each checked by its identity, never signalled), then ends the Ray.
A sweep that sees ``stopping`` stops as on SIGTERM: its trials end at their next step, its claims
are released, and it prints the command that resumes it."""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .processes import boot_id, same_process, start_ticks

DRIVERS = "drivers"
STOPPING = "stopping"
WATCH_S = 0.25  # how often a joined sweep looks for ``stopping``
DRIVERS_WAIT_S = 120.0  # how long ``explorer ray stop`` waits for the joined sweeps to stop


def stopping_marker(folder: str | os.PathLike) -> Path:
    return Path(folder) / STOPPING


def _registrations(folder: str | os.PathLike) -> list[Path]:
    return sorted((Path(folder) / DRIVERS).glob("*.json"))


@contextlib.contextmanager
def joined(folder: str | os.PathLike, on_stop: Callable[[], None]) -> Iterator[None]:
    """While a sweep runs on the session Ray of ``folder``: registered there, and ``on_stop()``
    called once (from a watcher thread) when ``explorer ray stop`` begins."""
    drivers = Path(folder) / DRIVERS
    drivers.mkdir(mode=0o700, exist_ok=True)
    me = drivers / f"{os.getpid()}.json"
    me.write_text(json.dumps({"pid": os.getpid(), "started": start_ticks(os.getpid()), "boot": boot_id()}))
    done = threading.Event()

    def watch() -> None:
        while not done.wait(WATCH_S):
            if stopping_marker(folder).exists():
                on_stop()
                return

    watcher = threading.Thread(target=watch, name="session-stop-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        with contextlib.suppress(OSError):
            me.unlink()


def running_drivers(folder: str | os.PathLike) -> list[int]:
    """The registered sweeps still running (by identity); stale registrations are removed."""
    live = []
    for path in _registrations(folder):
        try:
            data = json.loads(path.read_text())
            pid, started, boot = int(data["pid"]), data.get("started"), data.get("boot")
        except (OSError, ValueError, KeyError, TypeError):
            pid, started, boot = 0, None, None
        if pid and same_process(pid, None if started is None else float(started), boot):
            live.append(pid)
        else:
            with contextlib.suppress(OSError):
                path.unlink()
    return live


def let_drivers_stop(folder: str | os.PathLike, timeout_s: float = DRIVERS_WAIT_S) -> tuple[int, list[int]]:
    """Say ``stopping`` to the joined sweeps and wait until none runs (or ``timeout_s``).
    Returns how many were running and those still running."""
    stopping_marker(folder).write_text(str(os.getpid()))  # from now on, no sweep joins it
    first = running_drivers(folder)
    if not first:
        return 0, []
    deadline = time.monotonic() + timeout_s
    left = first
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = running_drivers(folder)
    return len(first), left


def clear_stopping(folder: str | os.PathLike) -> None:
    with contextlib.suppress(OSError):
        stopping_marker(folder).unlink()


def is_stopping(folder: str | os.PathLike) -> bool:
    return stopping_marker(folder).exists()


__all__ = ["clear_stopping", "is_stopping", "joined", "let_drivers_stop", "running_drivers"]
