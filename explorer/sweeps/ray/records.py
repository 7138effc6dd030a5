"""What this user's Ray folders record, read without importing Ray (a dry run reads them): the
private folder of the embedded Ray's files (``private_temp_dir``), the session Ray's folder, one
per user and environment (``session_dir``), its record (``session.json``: what a sweep joins,
checked by ``check_session``; ``ray.session`` starts and stops it) and how long Ray's starts took
here (``ray_starts.json``: the dry run and the progress line price Ray's start with them)."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from store import package_root

from ...formatting import format_seconds
from .probe import PROBE_TIMEOUT_S, probe
from .processes import boot_id, start_ticks
from .session_drivers import is_stopping

RECORD = "session.json"  # the session Ray's record (``ray.session``), in ``private_temp_dir()``
STARTS = "ray_starts.json"  # the last embedded Ray starts' durations, in seconds
STARTS_KEPT = 10
RAY_CORE = ("gcs_server", "raylet")  # the session's processes without which its Ray cannot be joined
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


def session_dir() -> str:
    """The session Ray's folder (its record and log): ``explorer-ray-<uid>/<environment key>``
    under ``$XDG_RUNTIME_DIR`` (this user's, 0700), else under the user's cache folder
    (``$XDG_CACHE_HOME``, default ``~/.cache``), each level 0700. Keyed by the environment
    (``environment_key``): a second checkout or virtualenv has a session of its own and never
    joins this one by accident; nothing in a shared ``$TMPDIR`` names it."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if not (runtime and os.path.isabs(runtime) and _own_folder(runtime)):
        runtime = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(runtime, f"explorer-ray-{os.getuid()}", environment_key())
    os.makedirs(folder, mode=0o700, exist_ok=True)
    for level in (os.path.dirname(folder), folder):
        info = os.lstat(level)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise OSError(f"{level} is not a folder of this user's own")
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(level, 0o700)
    return folder


def _own_folder(path: str) -> bool:
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def environment_label() -> str:
    """The environment a session belongs to: the code's folder and the Python's prefix."""
    return f"code {package_root()}, python {sys.prefix}"


def environment_key() -> str:
    """12 hex of the sha256 of ``environment_label()``: the session folder's name."""
    return hashlib.sha256(environment_label().encode()).hexdigest()[:12]


@dataclass(frozen=True)
class SessionRay:
    """A session Ray, as its record says."""

    address: str  # host:port of its GCS, what ``ray.init(address=...)`` joins
    holder_pid: int  # the process that started it and keeps it
    # (pid, start time in ticks, command name) of Ray's processes at its start
    processes: tuple[tuple[int, float, str], ...]
    num_cpus: int
    started_at: float  # seconds since the epoch
    start_seconds: float  # how long ``ray.init`` took
    holder_started: float | None = None  # the holder's start time in ticks (``processes.start_ticks``)
    boot_id: str | None = None  # the boot it started in
    fingerprint: str | None = None  # the code that started it (``store.code_fingerprint``)
    environment: str | None = None  # ``environment_label()`` of that code

    def lines(self) -> list[str]:
        """What ``explorer ray status`` prints of it."""
        up = format_seconds(time.time() - self.started_at)
        return [f"session Ray: running at {self.address} (holder process {self.holder_pid}, {self.num_cpus} CPUs, "
                f"up {up}; its start took {format_seconds(self.start_seconds)})",
                f"its environment: {self.environment}; its code: {self.fingerprint}",
                "sweeps without --address join it; `explorer ray stop` ends it"]


@dataclass(frozen=True)
class SessionCheck:
    """What the record says and whether its Ray can be joined."""

    session: SessionRay | None  # the record, when its holder is still the process that wrote it
    problem: str | None = None  # why its Ray cannot be joined (None: it answers)
    note: str | None = None  # said once: a stale record was removed (and nothing signalled)

    @property
    def running(self) -> SessionRay | None:
        return self.session if self.problem is None else None


def record_path() -> Path:
    """The session Ray's record: ``session.json`` in this environment's session folder (0700)."""
    return Path(session_dir()) / RECORD


def read_record() -> SessionRay | None:
    """The record as written, alive or not (None: no record, or not one of ours)."""
    try:
        data = json.loads(record_path().read_text())
        optional = {name: (None if data.get(name) is None else kind(data[name]))
                    for name, kind in (("holder_started", float), ("boot_id", str), ("fingerprint", str),
                                       ("environment", str))}
        return SessionRay(address=str(data["address"]), holder_pid=int(data["holder_pid"]),
                          processes=tuple((int(p[0]), float(p[1]), str(p[2]) if len(p) > 2 else "")
                                          for p in data["processes"]),
                          num_cpus=int(data["num_cpus"]), started_at=float(data["started_at"]),
                          start_seconds=float(data["start_seconds"]), **optional)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _stale_why(session: SessionRay) -> str | None:
    """Why the record's holder is not the process that wrote it (None: it is)."""
    if session.holder_started is None or session.boot_id is None:
        return "was recorded without its start time (an older explorer wrote the record)"
    if session.boot_id != boot_id():
        return "ran before this machine's last boot"
    if start_ticks(session.holder_pid) is None:
        return "has ended"
    if start_ticks(session.holder_pid) != session.holder_started:
        return "has ended (its number now belongs to another process)"
    return None


def check_session(probe_timeout_s: float = PROBE_TIMEOUT_S) -> SessionCheck:
    """The session Ray of this environment, checked: its holder by identity (process id, start
    time, boot), its GCS and raylet processes likewise, and its address answering as Ray. A record
    whose holder is not the process that wrote it is removed (one note; nothing is signalled)."""
    session = read_record()
    if session is None:
        return SessionCheck(None)
    why = _stale_why(session)
    if why is not None:
        with contextlib.suppress(OSError):
            record_path().unlink()
        return SessionCheck(None, note=f"removed a stale session Ray record: its holder process {session.holder_pid} "
                                       f"{why}; nothing was signalled")
    if is_stopping(record_path().parent):
        return SessionCheck(session, problem="it is being stopped (`explorer ray stop`)")
    for pid, started, name in session.processes:
        if name in RAY_CORE and start_ticks(pid) != started:
            return SessionCheck(session, problem=f"its {name} (process {pid}) has ended")
    answer = probe(session.address, probe_timeout_s)
    if answer is not None:
        return SessionCheck(session, problem=f"its address {session.address} does not answer as Ray: {answer}")
    return SessionCheck(session)


def running_session() -> SessionRay | None:
    """The session Ray when one is running here, checked (``check_session``), else None."""
    return check_session().running


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


__all__ = ["RECORD", "SessionCheck", "SessionRay", "check_session", "environment_key", "environment_label",
           "measured_starts", "private_temp_dir", "read_record", "record_path", "record_start_seconds",
           "running_session", "session_dir", "start_estimate"]
