"""Claims (leases) of trial keys, for several drivers of one sweep running at once.

    <root>/sweep=<sweep>/.leases/<trial_key>      JSON {"owner", "ttl_s"}; its mtime is the heartbeat

A lease is live while ``now - mtime <= ttl_s``; after that it has lapsed and anyone may claim
the key. ``claim`` returns the keys the caller now holds: keys with no lease, with a lapsed
lease, or already held by the same owner (renewed).

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

from .errors import StoreError, StoreUnreachable
from .files import Files
from .heartbeat import DEFAULT_TTL_S
from .layout import LEASES_DIR, check_key, check_sweep, join, sweep_dir


def lease_dir(files: Files, sweep: str) -> str:
    return join(sweep_dir(files.root, check_sweep(sweep)), LEASES_DIR)


def lease_path(files: Files, sweep: str, key: str) -> str:
    return join(lease_dir(files, sweep), check_key(key))


def _read(files: Files, path: str) -> tuple[dict, float] | None:
    """(content, age in seconds) of a lease, None when there is none."""
    if files.is_local:
        try:
            with open(path, "rb") as f:
                data = f.read()
            age = time.time() - os.stat(path).st_mtime
        except FileNotFoundError:
            return None
    else:
        info = files.info(path)
        if info is None:
            return None
        try:
            with files.fs.open_input_stream(path) as f:
                data = f.read()
        except (OSError, FileNotFoundError):
            return None
        age = time.time() - info.mtime.timestamp() if info.mtime else 0.0
    try:
        content = json.loads(data or b"{}")
    except ValueError:
        content = {}
    return content, age


def _lapsed(content: dict, age: float) -> bool:
    try:
        ttl = float(content.get("ttl_s", DEFAULT_TTL_S))
    except (TypeError, ValueError):
        ttl = DEFAULT_TTL_S
    return age > ttl


def _payload(owner: str, ttl_s: float, token: str) -> bytes:
    return json.dumps({"owner": owner, "ttl_s": float(ttl_s), "token": token}).encode()


def _create(path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` only if it does not exist, content and name at once (a hard
    link of a complete temporary: a reader never sees an empty lease)."""
    directory = os.path.dirname(path)
    tmp = join(directory, f".tmp.{uuid.uuid4().hex}")
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
        content, age = found
        if content.get("owner") == owner:
            os.utime(path)
            return True
        if not _lapsed(content, age):
            return False
        aside = join(os.path.dirname(path), f".broken.{uuid.uuid4().hex}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            continue  # another claimer broke it first
        again = _read(files, aside)
        if again is not None and not _lapsed(*again):
            try:  # renewed between our look and the rename: put it back, never over a newer one
                os.link(aside, path)
            except FileExistsError:
                pass
            _remove(aside)
            return again[0].get("owner") == owner
        _remove(aside)
    return False


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _claim_remote(files: Files, path: str, owner: str, ttl_s: float) -> bool:
    found = _read(files, path)
    if found is not None and found[0].get("owner") != owner and not _lapsed(*found):
        return False
    token = uuid.uuid4().hex
    files.put(path, _payload(owner, ttl_s, token))
    back = _read(files, path)
    return back is not None and back[0].get("token") == token


def claim(files: Files, sweep: str, keys: Iterable[str], owner: str, ttl_s: float = DEFAULT_TTL_S) -> set[str]:
    """Claim trial keys for ``owner`` for ``ttl_s`` seconds; returns the keys now held.

    Raises:
        InvalidNameError: a bad sweep name or key. ValueError: an empty owner or ttl_s <= 0.
        StoreError: the store cannot be written.
    """
    if not owner or not isinstance(owner, str):
        raise ValueError("owner must be a non-empty string (e.g. host:pid of the driver)")
    if not ttl_s > 0:
        raise ValueError(f"ttl_s must be positive, got {ttl_s}")
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
        if found is None or found[0].get("owner") != owner:
            continue
        if files.is_local:
            try:
                os.utime(path)
            except FileNotFoundError:
                continue
        else:
            files.put(path, _payload(owner, ttl_s, found[0].get("token") or uuid.uuid4().hex))
        held.add(key)
    return held


def release(files: Files, sweep: str, keys: Iterable[str], owner: str) -> int:
    """Remove ``owner``'s leases on ``keys`` (others' leases are left alone); returns how many."""
    n = 0
    for key in keys:
        path = lease_path(files, sweep, key)
        found = _read(files, path)
        if found is not None and found[0].get("owner") == owner:
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
            out[entry.name] = (str(found[0].get("owner")), not _lapsed(*found))
    return out


def expired_leases(files: Files, sweep: str) -> list[str]:
    """Paths of the sweep's lapsed leases (and of broken ones left aside by a crashed claimer)."""
    out = []
    for entry in files.list_dir(lease_dir(files, sweep)):
        if entry.is_dir:
            continue
        found = _read(files, entry.path)
        if entry.name.startswith(".broken.") or (found is not None and _lapsed(*found)):
            out.append(entry.path)
    return out
