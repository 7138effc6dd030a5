"""Who holds a lease or a lock: one identity for a process, ``host:pid``, and one check of whether
such a holder is a process of this machine that no longer runs (its claims and locks can then be
released at once instead of waiting for them to lapse)."""
from __future__ import annotations

import os
import socket


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
