"""What this user's private Ray folder records, read without importing Ray (a dry run reads it):
the folder itself (``private_temp_dir``), the session Ray's record (``session.json``: what a sweep
joins; ``session_ray`` starts and stops it) and how long Ray's starts took here
(``ray_starts.json``: the dry run and the progress line price Ray's start with them)."""
from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..formatting import format_seconds

RECORD = "session.json"  # the session Ray's record (``session_ray``), in ``private_temp_dir()``
STARTS = "ray_starts.json"  # the last embedded Ray starts' durations, in seconds
STARTS_KEPT = 10
# Ray's start when none was measured here yet: 8 to 40 s on a busy 2-core machine (docs/benchmarks.md).
UNMEASURED_START_S = (5.0, 40.0)


def private_temp_dir() -> str:
    """This user's private folder for the embedded Ray: ``<tempdir>/explorer-ray-<uid>``, mode
    0700, owned by this user. Ray keeps its session files (logs, sockets, spilled objects) in its
    ``ray`` subfolder (``ray.init(_temp_dir=...)``), instead of the world-readable ``/tmp/ray``;
    Ray makes the folders it creates world-writable (0777), so the privacy comes from this
    parent, which nobody else can enter. A folder of that name that is not this user's own (another
    user made it, or it is a link) is not used: a fresh ``mkdtemp`` folder is.
    """
    base = os.path.join(tempfile.gettempdir(), f"explorer-ray-{os.getuid()}")
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return tempfile.mkdtemp(prefix="explorer-ray-")
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return tempfile.mkdtemp(prefix="explorer-ray-")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(base, 0o700)
    return base


@dataclass(frozen=True)
class SessionRay:
    """A running session Ray, as its record says."""

    address: str  # host:port of its GCS, what ``ray.init(address=...)`` joins
    holder_pid: int  # the process that started it and keeps it
    processes: tuple[tuple[int, float], ...]  # (pid, start time in ticks) of Ray's processes at its start
    num_cpus: int
    started_at: float  # seconds since the epoch
    start_seconds: float  # how long ``ray.init`` took

    def lines(self) -> list[str]:
        """What ``explorer ray status`` prints of it."""
        up = format_seconds(time.time() - self.started_at)
        return [f"session Ray: running at {self.address} (holder process {self.holder_pid}, {self.num_cpus} CPUs, "
                f"up {up}; its start took {format_seconds(self.start_seconds)})",
                "sweeps without --address join it; `explorer ray stop` ends it"]


def record_path() -> Path:
    """The session Ray's record: ``session.json`` in this user's private Ray folder (0700)."""
    return Path(private_temp_dir()) / RECORD


def read_record() -> SessionRay | None:
    """The record as written, alive or not (None: no record, or not one of ours)."""
    try:
        data = json.loads(record_path().read_text())
        return SessionRay(address=str(data["address"]), holder_pid=int(data["holder_pid"]),
                          processes=tuple((int(p), float(t)) for p, t in data["processes"]),
                          num_cpus=int(data["num_cpus"]), started_at=float(data["started_at"]),
                          start_seconds=float(data["start_seconds"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running_session() -> SessionRay | None:
    """The session Ray when one is running here: its holder alive and its address answering.
    A record whose holder is gone is removed (the Ray it kept is gone with it)."""
    session = read_record()
    if session is None:
        return None
    if not alive(session.holder_pid):
        with contextlib.suppress(OSError):
            record_path().unlink()
        return None
    return session if _answers(session.address) else None


def alive(pid: int) -> bool:
    """Whether a process of this number runs (and is this user's to signal)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process took the number
        return False
    return True


def _answers(address: str, timeout_s: float = 2.0) -> bool:
    """Whether something accepts connections at ``host:port``."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def record_start_seconds(seconds: float) -> None:
    """Keep how long an embedded Ray's start took (the last ``STARTS_KEPT``); never fails a sweep."""
    path = Path(private_temp_dir()) / STARTS
    kept = [*measured_starts(), round(seconds, 3)][-STARTS_KEPT:]
    temporary = path.with_name(f".{STARTS}.{os.getpid()}")
    with contextlib.suppress(OSError):
        temporary.write_text(json.dumps(kept))
        os.replace(temporary, path)


def measured_starts() -> list[float]:
    """The durations of the last embedded Ray starts here, oldest first (none: never measured)."""
    try:
        values = json.loads((Path(private_temp_dir()) / STARTS).read_text())
        return [float(v) for v in values if isinstance(v, (int, float)) and v >= 0]
    except (OSError, ValueError, TypeError):
        return []


def start_estimate() -> tuple[float, float, str]:
    """Ray's start for a sweep about to run here, as (low, high) seconds and a phrase saying
    where they come from: nothing when the session Ray runs (joining it takes about a second),
    the range of the starts measured here, or ``UNMEASURED_START_S`` when none was."""
    session = running_session()
    if session is not None:
        return 0.0, 2.0, f"no Ray start (it joins the session Ray at {session.address}, `explorer ray start`)"
    starts = measured_starts()
    if starts:
        low, high = min(starts), max(starts)
        return low, high, f"Ray's start (measured here: {_span(low, high)}, the last {len(starts)})"
    low, high = UNMEASURED_START_S
    return low, high, f"Ray's start (not measured here yet: {_span(low, high)} on a busy machine)"


def _span(low: float, high: float) -> str:
    return format_seconds(low) if format_seconds(low) == format_seconds(high) else \
        f"{format_seconds(low)} to {format_seconds(high)}"


__all__ = ["RECORD", "SessionRay", "alive", "measured_starts", "private_temp_dir", "read_record", "record_path",
           "record_start_seconds", "running_session", "start_estimate"]
