"""A process of this machine, told apart from any later one that gets its number: its id, its
start time (clock ticks after boot, ``/proc/PID/stat``) and the boot's id. The session Ray
(``ray.session``) signals a process only when all three still match what it recorded when it
started that process: a number the system gave to another process since is never signalled."""
from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def start_ticks(pid: int) -> float | None:
    """When a process started, in clock ticks after boot (``/proc/PID/stat``), or None when there
    is no such process, it has ended (a zombie), or there is no ``/proc`` (then nothing can be
    told apart, and nothing is signalled)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        if fields[0] in ("Z", "X"):  # field 3, the state: ended, not yet reaped
            return None
        return float(fields[19])  # field 22, counted after the command name
    except (OSError, IndexError, ValueError):
        return None


def process_name(pid: int) -> str | None:
    """The command name of a process (``/proc/PID/comm``), or None."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def boot_id() -> str | None:
    """This boot's id (``/proc/sys/kernel/random/boot_id``), or None without ``/proc``."""
    try:
        return BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def same_process(pid: int, started: float | None, boot: str | None) -> bool:
    """Whether ``pid`` is still the process recorded as started at ``started`` in boot ``boot``
    (False when either was not recorded: such a record cannot be verified)."""
    return (started is not None and boot is not None and boot == boot_id()
            and start_ticks(pid) == started)


def end_process(pid: int, started: float | None, boot: str | None, timeout_s: float) -> bool:
    """SIGTERM, then SIGKILL after ``timeout_s``, to the process recorded, each sent only while
    ``pid`` is still that process; back when it is gone. Returns whether it was signalled."""
    if not same_process(pid, started, boot):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while same_process(pid, started, boot) and time.monotonic() < deadline:
        time.sleep(0.1)
    if same_process(pid, started, boot):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return True


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (children, theirs, ...), from ``/proc``; none without it."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parent = int(entry.joinpath("stat").read_text().rpartition(")")[2].split()[1])
            parents.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


__all__ = ["boot_id", "descendants", "end_process", "process_name", "same_process", "start_ticks"]
