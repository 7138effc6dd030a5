"""The store's small control files (leases, reference locks): read bounded, judged by their heartbeat.

A control file is a few hundred bytes that a holder writes and then refreshes by touching it
(its mtime is the heartbeat). Anyone can put anything at its name, so:

- ``read_control`` reads at most ``CONTROL_LIMIT_BYTES``, never through a symbolic link
  (O_NOFOLLOW) and only from a regular file: a lease that is a link to /dev/zero, a FIFO or a
  1 GB file is *malformed*, never read whole;
- ``heartbeat_live`` judges a holder alive only while its heartbeat is within ``ttl_s`` of this
  machine's clock, either way. An mtime further in the future than ``ttl_s`` (a file dated 2100)
  is no heartbeat: stale at once. One slightly ahead (clock skew between hosts) is live while
  it keeps up: a heartbeat that stops advancing falls behind by more than ``ttl_s`` within
  ``2 * ttl_s`` of this machine's time, so no date a holder writes keeps its claim alive;
- ``lease_ttl`` accepts only a finite TTL in (0, ``MAX_TTL_S``]: ``"nan"``, ``"inf"`` or
  ``1e300`` would make a lease live forever.
"""
from __future__ import annotations

import math
import os
import stat as _stat
import time

import pyarrow as pa

from .files import Files

CONTROL_LIMIT_BYTES = 64 * 1024  # a lease or lock is under 200 bytes: anything this large is not one
MAX_TTL_S = 86_400.0  # no holder renews less than once a day: a longer TTL is not a heartbeat


class MalformedControl(Exception):
    """A control file that is not one: a link, a device, a FIFO, too large (the message says which)."""


def read_control(files: Files, path: str, limit: int = CONTROL_LIMIT_BYTES) -> tuple[bytes, float] | None:
    """``(content, mtime in epoch seconds)`` of a control file, None when there is none.

    Raises:
        MalformedControl: not a regular file (a symbolic link, a device, a FIFO) or larger
            than ``limit`` bytes; nothing beyond ``limit`` bytes is read.
        OSError: it cannot be read (permissions, I/O).
    """
    if not files.is_local:
        info = files.info(path)
        if info is None:
            return None
        if info.is_dir:
            raise MalformedControl("a directory, not a file")
        if info.size is not None and info.size > limit:
            raise MalformedControl(f"{info.size} bytes, more than a control file's {limit}")
        try:
            with files.fs.open_input_stream(path) as f:
                data = f.read(limit + 1)
        except FileNotFoundError:
            return None
        except pa.ArrowException as exc:
            raise OSError(str(exc)) from None
        if len(data) > limit:
            raise MalformedControl(f"more than a control file's {limit} bytes")
        return data, info.mtime.timestamp() if info.mtime else time.time()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):  # ELOOP: O_NOFOLLOW met a link
            raise MalformedControl("a symbolic link, not a file") from None
        raise
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            raise MalformedControl("not a regular file (a device, a FIFO or a directory)")
        if st.st_size > limit:
            raise MalformedControl(f"{st.st_size} bytes, more than a control file's {limit}")
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise MalformedControl(f"more than a control file's {limit} bytes")
        return data, st.st_mtime
    finally:
        os.close(fd)


def lease_ttl(value) -> float | None:
    """A TTL as a holder may declare it: a finite number in (0, MAX_TTL_S], else None."""
    if isinstance(value, bool):
        return None
    try:
        ttl = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return ttl if math.isfinite(ttl) and 0 < ttl <= MAX_TTL_S else None


def heartbeat_live(mtime: float, ttl_s: float, now: float | None = None) -> bool:
    """Whether a heartbeat (file mtime) of ``ttl_s`` seconds' lifetime is live on this machine's
    clock: at most ``ttl_s`` old, and at most ``ttl_s`` ahead (clock skew between hosts). A holder
    that stopped renewing lapses within ``2 * ttl_s`` of this machine's clock whatever date it
    wrote; one dated further ahead (2100) never wrote a heartbeat this clock can judge: stale."""
    age = (time.time() if now is None else now) - mtime
    return -ttl_s <= age <= ttl_s
