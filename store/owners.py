"""Who holds a lease or a lock: one identity for a process, ``host:pid``, and one check of whether
such a holder is a process of this machine that no longer runs (its claims and locks can then be
released at once instead of waiting for them to lapse), and the same for the writer of a
temporary file, whose name carries its pid and host."""
from __future__ import annotations

import os
import re
import socket
import uuid


def owner_identity() -> str:
    """This process as a holder of leases and locks: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_alive(pid: int) -> bool:
    """Whether a process of this machine with this id runs (one we may not signal counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_dead_here(owner: str) -> bool:
    """``owner`` (``host:pid``) is a process of this machine that no longer runs. A holder of
    another machine, or text of another form, is never judged dead here."""
    host, _, pid = owner.rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and not process_alive(int(pid))


# -- temporaries named after their writer -------------------------------------------------------
_TEMPORARY_WRITER = re.compile(r"\.tmp\.[a-z]*([0-9]{1,10})@([A-Za-z0-9.-]{1,255})@[0-9a-f]{8,32}\.")


def _safe_host() -> str:
    return re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:255] or "host"


def writer_token(label: str = "") -> str:
    """The token of a temporary file's name (``layout.temporary_path``): ``<label><pid>@<host>@<hex>``,
    so that whoever finds the file can tell whether its writer still runs (``temporary_writer``)."""
    return f"{label}{os.getpid()}@{_safe_host()}@{uuid.uuid4().hex}"


def temporary_writer(name: str) -> tuple[int, bool] | None:
    """``(pid, alive)`` of the writer of a temporary file named by ``writer_token`` on this
    machine; None when its writer is unknown (another machine, or a name of another form)."""
    match = _TEMPORARY_WRITER.match(name)
    if match is None or match.group(2) != _safe_host():
        return None
    pid = int(match.group(1))
    return pid, process_alive(pid)
