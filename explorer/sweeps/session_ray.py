"""A session Ray: one local Ray kept running between commands (``explorer ray start``), which
every later sweep on this machine joins instead of starting its own, so a user running many small
sweeps pays Ray's start once (``explorer ray stop`` ends it; the embedded Ray stays the default).

It is the embedded Ray itself (``ray_session``: dashboard off, loopback only, session files in
``private_temp_dir()``, the same environment), started by a small holder process of its own
(``python -m explorer.sweeps.session_ray``, in a session of its own so that closing the terminal
does not end it) that keeps it until told to stop. Its record, ``session.json`` in that private
folder, says where it listens, the holder's process and the processes Ray started; a sweep with
no ``--address`` joins it when the record's holder is alive and its address answers, and starts
its own embedded Ray otherwise (a stale record is removed). ``stop_session`` stops the holder
(which shuts its Ray down) and then any process of that Ray still there, and nothing else: never
``ray stop``, which stops every Ray on the machine.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

from ..errors import ClusterError
from ..formatting import format_seconds
from .ray_import import ray
from .ray_records import RECORD, SessionRay, alive, private_temp_dir, read_record, record_path, running_session
from .ray_session import ray_session

LOG = "session.log"
START_TIMEOUT_S = 300.0  # Ray's start took 8 to 40 s on a busy 2-core machine
STOP_TIMEOUT_S = 60.0


def start_session(num_cpus: int | None = None, timeout_s: float = START_TIMEOUT_S) -> tuple[SessionRay, bool]:
    """Start the session Ray (or find the one running).

    Args:
        num_cpus: its CPUs (default: all of this machine's).
        timeout_s: how long its start may take.

    Returns:
        The session and whether this call started it (False: one was already running).

    Raises:
        ClusterError: Ray could not start (the holder's last line of error), or not in time.
    """
    session = running_session()
    if session is not None:
        return session, False
    folder = Path(private_temp_dir())
    with contextlib.suppress(OSError):
        record_path().unlink()  # a record no running holder stands behind
    log = open(folder / LOG, "wb")  # noqa: SIM115 - the holder writes to it after this process moves on
    try:
        holder = subprocess.Popen([sys.executable, "-m", "explorer.sweeps.session_ray", str(num_cpus or 0)],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True, cwd=folder)
    finally:
        log.close()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        session = read_record()
        if session is not None and session.holder_pid == holder.pid:
            return session, True
        if holder.poll() is not None:
            raise ClusterError(f"cannot start a session Ray: {_last_line(folder / LOG)}; retry, or run sweeps on "
                               "their own embedded Ray (the default)")
        time.sleep(0.2)
    _end(holder.pid)
    raise ClusterError(f"cannot start a session Ray: not started within {format_seconds(timeout_s)}; the machine "
                       "may be busy: retry later")


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return lines[-1].strip() if lines else "its process ended without a word"


def stop_session(timeout_s: float = STOP_TIMEOUT_S) -> SessionRay | None:
    """Stop the session Ray: its holder (which shuts its Ray down), then any of Ray's processes
    it recorded that are still there (the same process, by its creation time), and its record.
    Returns the session stopped, or None when none was recorded. Nothing else is touched."""
    session = read_record()
    if session is None:
        return None
    _end(session.holder_pid, timeout_s)
    _end_processes(session.processes)
    with contextlib.suppress(OSError):
        record_path().unlink()
    return session


def _end(pid: int, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM, then SIGKILL after ``timeout_s``, to one process; back when it is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _end_processes(processes, timeout_s: float = 10.0) -> None:
    """End those of Ray's recorded processes that outlived its shutdown, each only if it is still
    the process recorded (the same start time: a number the system gave to another is left alone)."""
    left = [pid for pid, started in processes if start_ticks(pid) == started]
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while any(start_ticks(pid) is not None for pid in left) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid, started in processes:
        if start_ticks(pid) == started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def start_ticks(pid: int) -> float | None:
    """When a process started, in clock ticks after boot (``/proc/PID/stat``), or None when there
    is no such process (or no ``/proc``: then Ray's own shutdown is all there is)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return float(text.rpartition(")")[2].split()[19])  # field 22, counted after the command name


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


def hold(num_cpus: int | None) -> None:
    """The holder's life: start the embedded Ray, write the record, wait for SIGTERM or SIGINT,
    then shut Ray down and remove the record (``python -m explorer.sweeps.session_ray N``)."""
    stop = threading.Event()
    started = time.monotonic()
    with ray_session(None, num_cpus=num_cpus, join_session=False):
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # after ray.init, which may set its own
            signal.signal(signum, lambda *_: stop.set())
        ray_processes = [(pid, start_ticks(pid)) for pid in descendants(os.getpid())]
        session = SessionRay(address=ray.get_runtime_context().gcs_address, holder_pid=os.getpid(),
                             processes=tuple((pid, t) for pid, t in ray_processes if t is not None),
                             num_cpus=int(ray.cluster_resources().get("CPU", 0)), started_at=time.time(),
                             start_seconds=time.monotonic() - started)
        path = record_path()
        temporary = path.with_name(f".{RECORD}.{os.getpid()}")
        temporary.write_text(json.dumps(asdict(session)))
        os.replace(temporary, path)  # whole or not at all: a sweep reads it at any time
        try:
            while not stop.wait(1.0):  # a timeout: the handler's event is seen even if a wait is not woken
                pass
        finally:
            if read_record() == session:
                with contextlib.suppress(OSError):
                    path.unlink()


def start_lines(num_cpus: int | None = None) -> list[str]:
    """``explorer ray start``: start the session Ray (or say the one running), then what it is."""
    session, started = start_session(num_cpus)
    return [("started" if started else "already running") + ":", *session.lines()]


def stop_lines() -> list[str]:
    """``explorer ray stop``: stop the session Ray, and say so."""
    session = stop_session()
    if session is None:
        return ["no session Ray to stop (sweeps start their own embedded Ray)"]
    return [f"stopped the session Ray at {session.address} (holder process {session.holder_pid}); "
            "sweeps start their own embedded Ray again"]


def status_lines() -> list[str]:
    """``explorer ray status``: the session Ray that sweeps join, or that there is none."""
    session = running_session()
    if session is None:
        return ["no session Ray: each sweep starts its own embedded Ray (`explorer ray start` keeps one running)"]
    return session.lines()


__all__ = ["SessionRay", "descendants", "hold", "start_lines", "start_session", "start_ticks", "status_lines", "stop_lines", "stop_session"]


if __name__ == "__main__":
    hold(int(sys.argv[1]) or None)
