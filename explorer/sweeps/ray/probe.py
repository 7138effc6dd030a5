"""Whether Ray answers at an address, asked without importing Ray and within a bounded time, and
how long a join may take (``EXPLORER_RAY_JOIN_TIMEOUT_S``, default 30 s).

A Ray GCS (``host:port``) and a Ray Client server (``ray://host:port``) are gRPC servers: on a
new connection they send an HTTP/2 SETTINGS frame at once. A port that accepts connections but
sends nothing, closes them, or answers something else (a web server, a plain TCP listener) is
not Ray, and is said so in one line instead of Ray's own retry loop ("Failed to connect to GCS",
for minutes)."""
from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator

from ...formatting import format_seconds

SESSION_ADDRESS = "session"  # --address session: the session Ray of this environment, or an error
JOIN_TIMEOUT_ENV = "EXPLORER_RAY_JOIN_TIMEOUT_S"
DEFAULT_JOIN_TIMEOUT_S = 30.0
PROBE_TIMEOUT_S = 5.0  # a Ray answers a new connection at once; a busy machine gets a few seconds
# The HTTP/2 client preface and an empty SETTINGS frame: a gRPC server answers with its SETTINGS.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SETTINGS_FRAME = 4


def join_timeout_s() -> float:
    """How long joining a Ray may take: ``EXPLORER_RAY_JOIN_TIMEOUT_S`` (seconds, > 0), else 30."""
    raw = os.environ.get(JOIN_TIMEOUT_ENV, "").strip()
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_JOIN_TIMEOUT_S
    return value if math.isfinite(value) and value > 0 else DEFAULT_JOIN_TIMEOUT_S


def host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``host:port`` or ``ray://host:port``; None for other forms (``auto``)."""
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)


def _shown(data: bytes) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in data[:40].decode("latin-1").strip())
    return repr(text)


def probe(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when a gRPC server (a Ray) answers at ``address``, else what answered, as a phrase
    ("nothing listens there", "it accepts connections but sends nothing back within 5 s", ...).
    Addresses of other forms (``auto``) are Ray's to resolve: None."""
    target = host_port(address)
    if target is None:
        return None
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection(target, timeout=timeout_s)
    except socket.timeout:
        return f"nothing answered a connection within {format_seconds(timeout_s)}"
    except OSError as exc:
        return f"nothing listens there ({exc.strerror or type(exc).__name__})"
    data = b""
    with sock:
        try:
            sock.sendall(H2_PREFACE)
            while len(data) < 9:
                sock.settimeout(max(0.05, deadline - time.monotonic()))
                chunk = sock.recv(9 - len(data))
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            if not data:
                return (f"it accepts connections but sends nothing back within {format_seconds(timeout_s)} "
                        "(a Ray answers at once): not a Ray")
        except OSError as exc:
            return f"it accepts connections, then fails ({exc.strerror or type(exc).__name__}): not a Ray"
        if len(data) == 9 and data[3] == SETTINGS_FRAME:
            return None
        data += _more(sock, 31)  # what else it said, to name it
    if not data:
        return "it accepts connections and closes them without a word: not a Ray"
    return f"it answers, but not as a Ray does ({_shown(data)})"


def _more(sock: socket.socket, limit: int, timeout_s: float = 0.2) -> bytes:
    """Up to ``limit`` more bytes already sent (none after ``timeout_s``)."""
    more = b""
    with contextlib.suppress(OSError):
        sock.settimeout(timeout_s)
        while len(more) < limit:
            chunk = sock.recv(limit - len(more))
            if not chunk:
                break
            more += chunk
    return more


class JoinTimedOut(BaseException):
    """The join's time ran out (a BaseException: Ray's retry loops catch every Exception)."""


@contextlib.contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Raise ``JoinTimedOut`` in this (main) thread once ``seconds`` have passed; elsewhere, or
    where the platform has no interval timer, the block runs unbounded."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(*_):
        raise JoinTimedOut

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


__all__ = ["DEFAULT_JOIN_TIMEOUT_S", "JOIN_TIMEOUT_ENV", "SESSION_ADDRESS", "JoinTimedOut", "host_port", "join_timeout_s", "probe",
           "time_bound"]
