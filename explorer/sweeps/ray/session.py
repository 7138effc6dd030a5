"""A session Ray: one local Ray kept running between commands (``explorer ray start``), which
every later sweep of this environment joins instead of starting its own, so a user running many
small sweeps pays Ray's start once (``explorer ray stop`` ends it; the embedded Ray stays the default).

It is the embedded Ray itself (``ray_session``: dashboard off, loopback only, Ray's files in
``private_temp_dir()``, the same environment), started by a small holder process of its own
(``python -m explorer.sweeps.ray.session``, in a session of its own so that closing the terminal
does not end it) that keeps it until told to stop. Its record, ``session.json`` in this user's
and this environment's folder (``records.session_dir``), says where it listens, the holder's
identity (process id, start time, boot), the processes Ray started (the same), and the code that
started it (``store.code_fingerprint``). A sweep with no ``--address`` joins it when its holder
is that process, Ray answers and its code is the sweep's own, and starts its own embedded Ray
otherwise. ``stop_session`` lets the joined sweeps stop first (``session_drivers``), then stops
the holder (which shuts its Ray down) and any process of that Ray still there, each signalled
only while it is still the process recorded, and nothing else: never ``ray stop``, which stops
every Ray on the machine. A stale record is removed with one note, and nothing is signalled.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

from store import code_fingerprint

from ...errors import ClusterError
from ...formatting import format_seconds
from .connection import ray_session
from .imports import ray
from .processes import boot_id, descendants, end_process, process_name, same_process, start_ticks
from .records import RECORD, SessionRay, check_session, environment_label, read_record, record_path, session_dir
from .session_drivers import clear_stopping, let_drivers_stop

LOG = "session.log"
START_LOCK = "start.lock"
START_TIMEOUT_S = 300.0  # Ray's start took 8 to 40 s on a busy 2-core machine
STOP_TIMEOUT_S = 60.0


def start_session(num_cpus: int | None = None, timeout_s: float = START_TIMEOUT_S) -> tuple[SessionRay, bool, list[str]]:
    """Start the session Ray of this environment (or find the one running).

    Args:
        num_cpus: its CPUs (default: all of this machine's).
        timeout_s: how long its start may take.

    Returns:
        The session, whether this call started it (False: one was already running) and the
        notes to say first (a stale record removed).

    Raises:
        ClusterError: Ray could not start (the holder's last line of error), or not in time; or
            a session Ray of this environment is recorded but does not answer.
    """
    try:
        folder = Path(session_dir())
    except OSError as exc:
        raise ClusterError(f"cannot start a session Ray: its folder: {exc}; run sweeps on their own embedded Ray "
                           "(the default)") from None
    with open(folder / START_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two starts at once: the second finds the first's session
        return _start_locked(folder, num_cpus, timeout_s)


def _start_locked(folder: Path, num_cpus: int | None, timeout_s: float) -> tuple[SessionRay, bool, list[str]]:
    check = check_session()
    notes = [check.note] if check.note else []
    if check.session is not None and check.problem is None:
        return check.session, False, notes
    if check.session is not None:
        raise ClusterError(f"the session Ray at {check.session.address} does not answer ({check.problem}); "
                           "`explorer ray stop` ends it, then `explorer ray start` starts a new one")
    clear_stopping(folder)  # left by a stop that was itself stopped
    log = open(folder / LOG, "wb")  # noqa: SIM115 - the holder writes to it after this process moves on
    try:
        holder = subprocess.Popen([sys.executable, "-m", "explorer.sweeps.ray.session", str(num_cpus or 0)],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True, cwd=folder)
    finally:
        log.close()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        session = read_record()
        if session is not None and session.holder_pid == holder.pid:
            return session, True, notes
        if holder.poll() is not None:
            raise ClusterError(f"cannot start a session Ray: {_last_line(folder / LOG)}; retry, or run sweeps on "
                               "their own embedded Ray (the default)")
        time.sleep(0.2)
    holder.terminate()  # this process's own child: its number cannot have been reused
    try:
        holder.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        holder.kill()
    raise ClusterError(f"cannot start a session Ray: not started within {format_seconds(timeout_s)}; the machine "
                       "may be busy: retry later")


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return lines[-1].strip() if lines else "its process ended without a word"


def stop_session(timeout_s: float = STOP_TIMEOUT_S) -> tuple[SessionRay | None, str | None]:
    """Stop the session Ray: its holder (which shuts its Ray down), then any of Ray's processes
    it recorded that are still there, and its record. Each is signalled only while it is still
    the process recorded (its id, start time and boot): a record whose holder is gone is removed
    and nothing is signalled. Returns the session stopped (None: none was running) and the
    note to say (a stale record removed)."""
    check = check_session()
    session = check.session
    if session is None:
        return None, check.note
    folder = record_path().parent
    waited, left = let_drivers_stop(folder)
    end_process(session.holder_pid, session.holder_started, session.boot_id, timeout_s)
    _end_processes(session)
    with contextlib.suppress(OSError):
        if read_record() == session:
            record_path().unlink()
    clear_stopping(folder)
    if not waited:
        return session, None
    note = f"{waited} sweep(s) running on it stopped first (each printed the command that resumes it)"
    if left:
        note = f"{waited - len(left)} of {waited} sweeps running on it stopped first; process(es) " \
               f"{', '.join(map(str, left))} did not stop in time and end with it"
    return session, note


def _end_processes(session: SessionRay, timeout_s: float = 10.0) -> None:
    """End those of Ray's recorded processes that outlived its shutdown, each only if it is still
    the process recorded (the same start time and boot: a number given to another is left alone)."""
    left = [(pid, started) for pid, started, _ in session.processes
            if same_process(pid, started, session.boot_id)]
    for pid, started in left:
        if same_process(pid, started, session.boot_id):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while any(same_process(pid, started, session.boot_id) for pid, started in left) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid, started in left:
        if same_process(pid, started, session.boot_id):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def hold(num_cpus: int | None) -> None:
    """The holder's life: start the embedded Ray, write the record, wait for SIGTERM or SIGINT,
    then shut Ray down and remove the record (``python -m explorer.sweeps.ray.session N``)."""
    stop = threading.Event()
    started = time.monotonic()
    with ray_session(None, num_cpus=num_cpus, join_session=False):
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # after ray.init, which may set its own
            signal.signal(signum, lambda *_: stop.set())
        ray_processes = [(pid, start_ticks(pid), process_name(pid) or "") for pid in descendants(os.getpid())]
        session = SessionRay(address=ray.get_runtime_context().gcs_address, holder_pid=os.getpid(),
                             processes=tuple((pid, t, name) for pid, t, name in ray_processes if t is not None),
                             num_cpus=int(ray.cluster_resources().get("CPU", 0)), started_at=time.time(),
                             start_seconds=time.monotonic() - started, holder_started=start_ticks(os.getpid()),
                             boot_id=boot_id(), fingerprint=code_fingerprint(), environment=environment_label())
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
    session, started, notes = start_session(num_cpus)
    lines = [*notes, ("started" if started else "already running") + ":", *session.lines()]
    return lines + _other_code(session)


def stop_lines() -> list[str]:
    """``explorer ray stop``: stop the session Ray, and say so."""
    session, note = stop_session()
    if session is None:
        return [*([note] if note else []), "no session Ray to stop (sweeps start their own embedded Ray)"]
    return [*([note] if note else []), f"stopped the session Ray at {session.address} (holder process "
            f"{session.holder_pid}); sweeps start their own embedded Ray again"]


def status_lines() -> list[str]:
    """``explorer ray status``: the session Ray that sweeps join, or why there is none."""
    check = check_session()
    notes = [check.note] if check.note else []
    if check.session is None:
        return [*notes, f"no session Ray for this environment ({environment_label()}): each sweep starts its own "
                        "embedded Ray (`explorer ray start` keeps one running)"]
    if check.problem is not None:
        return [f"session Ray: not answering at {check.session.address} (holder process {check.session.holder_pid}): "
                f"{check.problem}; sweeps start their own embedded Ray; `explorer ray stop` ends it, then "
                "`explorer ray start` starts a new one"]
    return check.session.lines() + _other_code(check.session)


def _other_code(session: SessionRay) -> list[str]:
    if session.fingerprint == code_fingerprint():
        return []
    return [f"its code differs from this code ({code_fingerprint()}): sweeps from here run on their own embedded "
            "Ray; `explorer ray stop` then `explorer ray start` runs this code"]


__all__ = ["SessionRay", "descendants", "hold", "start_lines", "start_session", "start_ticks", "status_lines", "stop_lines",
           "stop_session"]


if __name__ == "__main__":
    hold(int(sys.argv[1]) or None)
