"""Claims (leases) of trial keys, for several drivers of one sweep running at once.

    <root>/sweep=<sweep>/.leases/<trial_key>      JSON {"owner", "ttl_s"}; its mtime is the heartbeat

A lease is live while its heartbeat is (``control.heartbeat_live``: within ``ttl_s`` of this
machine's clock, behind or ahead); after that it has lapsed and anyone may claim the key. A file
that is no lease (not a JSON object with an owner, a TTL that is not finite, a link, a device,
more than ``control.CONTROL_LIMIT_BYTES``) has lapsed too. ``claim`` returns the keys the caller
now holds: keys with no lease, with a lapsed lease, or already held by the same owner (renewed).

- Local disk: a lease is created with O_EXCL, so of two drivers claiming one key exactly one
  wins. A lapsed lease is broken by renaming it to a unique hidden name (atomic: one breaker
  wins); if the renamed lease turns out to be live after all (renewed in between), it is put
  back with a hard link, which never replaces a newer lease.
- Object storage has no exclusive create: best effort. A claim writes the lease, reads it back
  and keeps the key only if it reads its own token; two drivers racing within one round trip
  may both believe they hold a key. Trials are idempotent (same key, same numbers, whole-file
  writes), so the worst case is a trial computed twice.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from .control import MAX_TTL_S, MalformedControl, heartbeat_live, lease_ttl, read_control
from .errors import StoreError, StoreUnreachable
from .files import Files
from .heartbeat import DEFAULT_TTL_S
from .layout import LEASES_DIR, check_key, check_sweep, join, sweep_dir
from .owners import writer_token


def lease_dir(files: Files, sweep: str) -> str:
    return join(sweep_dir(files.root, check_sweep(sweep)), LEASES_DIR)


def lease_path(files: Files, sweep: str, key: str) -> str:
    return join(lease_dir(files, sweep), check_key(key))


@dataclass(frozen=True)
class _Lease:
    """What a lease file holds; ``problem`` says why it is no lease at all (then it has lapsed)."""

    content: dict
    mtime: float
    problem: str | None = None

    @property
    def owner(self) -> str | None:
        return None if self.problem else self.content.get("owner")


def _read(files: Files, path: str) -> _Lease | None:
    """The lease at ``path`` (bounded, never through a link: ``control.read_control``), None when
    there is none. A file that is not a JSON object with a string owner and a finite TTL is a
    lease with a ``problem``: lapsed, whoever wrote it."""
    try:
        found = read_control(files, path)
    except MalformedControl as exc:
        return _Lease({}, 0.0, str(exc))
    except OSError as exc:  # unreadable (permissions, I/O): no lease anyone can honour
        if not files.is_local:
            return None
        return _Lease({}, 0.0, f"cannot be read ({exc.strerror or exc})")
    if found is None:
        return None
    data, mtime = found
    try:
        content = json.loads(data)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        return _Lease({}, mtime, "not JSON")
    if not isinstance(content, dict) or not isinstance(content.get("owner"), str) or not content["owner"]:
        return _Lease({}, mtime, f"not a lease (a JSON {type(content).__name__} without an owner)")
    if lease_ttl(content.get("ttl_s", DEFAULT_TTL_S)) is None:
        return _Lease(content, mtime, f"ttl_s {str(content.get('ttl_s'))[:20]!r} is not a finite number "
                                      f"of seconds in (0, {MAX_TTL_S:g}]")
    return _Lease(content, mtime)


def _lapsed(lease: _Lease) -> bool:
    """A malformed lease has lapsed; a lease is live while its heartbeat is (``control.heartbeat_live``)."""
    if lease.problem:
        return True
    return not heartbeat_live(lease.mtime, lease_ttl(lease.content.get("ttl_s", DEFAULT_TTL_S)))


def _payload(owner: str, ttl_s: float, token: str) -> bytes:
    return json.dumps({"owner": owner, "ttl_s": float(ttl_s), "token": token}).encode()


def _create(path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` only if it does not exist, content and name at once (a hard
    link of a complete temporary: a reader never sees an empty lease)."""
    directory = os.path.dirname(path)
    tmp = join(directory, f".tmp.{writer_token()}.lease")
    try:
        os.makedirs(directory, exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
    except OSError as exc:  # a full or read-only disk: the store's failure, one line
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise StoreUnreachable(f"cannot write the lease {path}: [Errno {exc.errno}] {exc.strerror}") from None
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.remove(tmp)


def _claim_local(files: Files, path: str, owner: str, ttl_s: float) -> bool:
    for _ in range(3):
        if _create(path, _payload(owner, ttl_s, uuid.uuid4().hex)):
            return True
        found = _read(files, path)
        if found is None:
            continue  # released meanwhile: try again
        if found.owner == owner:
            os.utime(path)
            return True
        if not _lapsed(found):
            return False
        aside = join(os.path.dirname(path), f".broken.{uuid.uuid4().hex}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            continue  # another claimer broke it first
        again = _read(files, aside)
        if again is not None and not _lapsed(again):
            try:  # renewed between our look and the rename: put it back, never over a newer one
                os.link(aside, path)
            except FileExistsError:
                pass
            _remove(aside)
            return again.owner == owner
        _remove(aside)
    return False


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _claim_remote(files: Files, path: str, owner: str, ttl_s: float) -> bool:
    found = _read(files, path)
    if found is not None and found.owner != owner and not _lapsed(found):
        return False
    token = uuid.uuid4().hex
    files.put(path, _payload(owner, ttl_s, token))
    back = _read(files, path)
    return back is not None and not back.problem and back.content.get("token") == token


def claim(files: Files, sweep: str, keys: Iterable[str], owner: str, ttl_s: float = DEFAULT_TTL_S) -> set[str]:
    """Claim trial keys for ``owner`` for ``ttl_s`` seconds; returns the keys now held.

    Raises:
        InvalidNameError: a bad sweep name or key. ValueError: an empty owner or ttl_s <= 0.
        StoreError: the store cannot be written.
    """
    if not owner or not isinstance(owner, str):
        raise ValueError("owner must be a non-empty string (e.g. host:pid of the driver)")
    if lease_ttl(ttl_s) is None:
        raise ValueError(f"ttl_s must be a finite number of seconds in (0, {MAX_TTL_S:g}], got {ttl_s}")
    held = set()
    for key in keys:
        path = lease_path(files, sweep, key)
        try:
            ok = _claim_local(files, path, owner, ttl_s) if files.is_local else _claim_remote(files, path, owner, ttl_s)
        except OSError as exc:
            raise StoreError(f"cannot claim {sweep}/{key}: {exc}") from None
        if ok:
            held.add(key)
    return held


def renew(files: Files, sweep: str, keys: Iterable[str], owner: str, ttl_s: float = DEFAULT_TTL_S) -> set[str]:
    """Refresh the heartbeat of ``owner``'s leases; returns the keys still held (a lease that
    lapsed and was claimed by another owner is lost)."""
    held = set()
    for key in keys:
        path = lease_path(files, sweep, key)
        found = _read(files, path)
        if found is None or found.owner != owner:
            continue
        if files.is_local:
            try:
                os.utime(path)
            except FileNotFoundError:
                continue
        else:
            files.put(path, _payload(owner, ttl_s, found.content.get("token") or uuid.uuid4().hex))
        held.add(key)
    return held


def release(files: Files, sweep: str, keys: Iterable[str], owner: str) -> int:
    """Remove ``owner``'s leases on ``keys`` (others' leases are left alone); returns how many."""
    n = 0
    for key in keys:
        path = lease_path(files, sweep, key)
        found = _read(files, path)
        if found is not None and found.owner == owner:
            files.delete(path)
            n += 1
    return n


def leases(files: Files, sweep: str) -> dict[str, tuple[str, bool]]:
    """``trial_key -> (owner, live)`` of the sweep's leases."""
    out = {}
    for entry in files.list_dir(lease_dir(files, sweep)):
        if entry.is_dir or entry.name.startswith("."):
            continue
        found = _read(files, entry.path)
        if found is not None:
            out[entry.name] = (str(found.owner), not _lapsed(found))
    return out


def expired_leases(files: Files, sweep: str) -> list[str]:
    """Paths of the sweep's lapsed leases (and of broken ones left aside by a crashed claimer)."""
    out = []
    for entry in files.list_dir(lease_dir(files, sweep)):
        if entry.is_dir:
            continue
        if entry.name.startswith(".broken."):
            out.append(entry.path)
            continue
        found = _read(files, entry.path)
        if found is not None and _lapsed(found):
            out.append(entry.path)
    return out


def malformed_leases(files: Files, sweep: str) -> list[tuple[str, str]]:
    """``(path, why)`` of the sweep's lease files that are no lease (not a JSON object with an
    owner, a non-finite TTL, a link, a device, too large) or whose heartbeat is dated further
    in the future than its TTL: they never lapse by age, so ``check`` names them."""
    out = []
    for entry in files.list_dir(lease_dir(files, sweep)):
        if entry.is_dir or entry.name.startswith("."):
            continue
        found = _read(files, entry.path)
        if found is None:
            continue
        if found.problem:
            out.append((entry.path, found.problem))
        elif found.mtime - time.time() > lease_ttl(found.content.get("ttl_s", DEFAULT_TTL_S)):
            out.append((entry.path, "its heartbeat is dated in the future"))
    return out
