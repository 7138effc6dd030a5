"""Repairs and housekeeping: quarantine, stale locks and temporaries, probe, sweep listing and removal.

- ``quarantine``: moves the data files whose Parquet footer cannot be read (the ``unreadable``
  files of ``check``) to ``<root>/quarantine/<their path relative to the root>``; nothing is
  deleted. Restore one by moving it back (``mv <root>/quarantine/sweep=s/kind=metrics/k.parquet
  <root>/sweep=s/kind=metrics/``, or ``aws s3 mv`` on S3).
- ``repair``: removes reference locks whose heartbeat is not live (``references.lock_live``:
  older than ``references.STALE_AFTER_S``, dated in the future, or no lock at all; read again
  just before each removal, so a live lock is never removed), temporaries older than
  ``cleanup.STALE_TEMPORARY_S`` or whose writer is a dead process of this machine (a killed
  compaction's aside is put back under its input's name instead, ``cleanup.retire_temporary``),
  and expired or malformed leases.
- ``probe``: lists the root and writes then deletes a hidden marker (before a sweep starts Ray).
- ``sweeps_summary`` / ``remove_sweep``: what ``explorer ls`` and ``explorer rm`` show and do.
"""
from __future__ import annotations

import datetime as _dt
import shutil
import time
import uuid
from dataclasses import dataclass, field

import pyarrow as pa

from .catalog import list_kind, list_references, list_sweeps
from .cleanup import STALE_TEMPORARY_S, dead_writer, retire_temporary
from .errors import StoreError, StoreUnreachable
from .files import Files
from .layout import DATA_KINDS, QUARANTINE_DIR, check_sweep, join, sweep_dir
from .printable import printable
from .references import STALE_AFTER_S, lock_live
from .screen import screen_listing


def quarantine_root(files: Files) -> str:
    return join(files.root, QUARANTINE_DIR)


def quarantined_files(files: Files) -> list[str]:
    """Paths (as the user knows them) of the files in the quarantine folder."""
    return [files.display(e.path) for e in files.walk(quarantine_root(files))]


def _relative(files: Files, path: str) -> str:
    root = files.root.rstrip("/") + "/"
    if not path.startswith(root):
        raise StoreError(f"{files.display(path)} is outside the store root")
    return path[len(root):]


def quarantine(files: Files, sweep: str | None = None) -> list[tuple[str, str]]:
    """Move the unreadable data files (of one sweep, or of the whole store and the reference
    cache) into ``<root>/quarantine/<relative path>``; returns ``(from, to)`` pairs as shown
    to users. A name already taken in the quarantine gets a ``.1``, ``.2`` ... suffix.

    Raises:
        InvalidNameError: a bad sweep name. StoreError: a file cannot be moved.
    """
    listings = []
    for name in [check_sweep(sweep)] if sweep is not None else list_sweeps(files):
        listings += [(list_kind(files, name, kind, stat=True), kind) for kind in DATA_KINDS]
    if sweep is None:
        listings.append((list_references(files, stat=True), "references"))
    moved = []
    for listing, kind in listings:
        for verdict in screen_listing(files, listing, kind):
            if verdict.category != "unreadable":
                continue
            target = join(quarantine_root(files), _relative(files, verdict.file))
            candidate, n = target, 0
            while files.info(candidate) is not None:
                n += 1
                candidate = f"{target}.{n}"
            files.move(verdict.file, candidate)
            moved.append((files.display(verdict.file), files.display(candidate)))
    return moved


@dataclass
class RepairReport:
    removed: list[str] = field(default_factory=list)  # paths as shown to users
    kept_live: list[str] = field(default_factory=list)  # locks found live when looked at again
    restored: list[str] = field(default_factory=list)  # compactions' asides put back under their names

    def lines(self) -> list[str]:
        out = [f"removed {printable(path)}" for path in self.removed]
        out += [f"put back {printable(path)} (an input a killed compaction had moved aside)" for path in self.restored]
        out += [f"kept {printable(path)} (its holder is alive)" for path in self.kept_live]
        out.append(f"repair: removed {len(self.removed)} stale file(s)"
                   + (f", put back {len(self.restored)} moved aside" if self.restored else ""))
        return out


def _age_s(files: Files, path: str, now: float) -> float | None:
    info = files.info(path)
    if info is None or info.mtime is None:
        return None
    return now - info.mtime.timestamp()


def repair(files: Files, sweep: str | None = None, stale_lock_s: float = STALE_AFTER_S,
           stale_temporary_s: float = STALE_TEMPORARY_S) -> RepairReport:
    """Remove stale reference locks, old or dead writers' temporaries and expired or malformed
    leases (never a live lock).

    A lock is stale when its heartbeat (mtime, refreshed by its holder every ``stale_after_s / 4``)
    is older than ``stale_lock_s`` or dated further ahead than that, or when it is no lock (a
    link, a device, too large); it is read again right before it is removed.
    """
    from .leases import expired_leases  # leases imports this module's neighbours only

    report = RepairReport()
    sweeps = [check_sweep(sweep)] if sweep is not None else list_sweeps(files)
    references = list_references(files, stat=True)
    for lock in references.locks:
        live = lock_live(files, lock.path, stale_lock_s)
        if live is None:
            continue
        if not live:
            files.delete(lock.path)
            report.removed.append(files.display(lock.path))
        else:
            report.kept_live.append(files.display(lock.path))
    listings = [list_kind(files, name, kind, stat=True) for name in sweeps for kind in DATA_KINDS]
    if sweep is None:
        listings.append(references)
    for listing in listings:
        for entry in listing.temporary:
            age = _age_s(files, entry.path, time.time())
            if age is not None and (age > stale_temporary_s or dead_writer(entry.name) is not None):
                if retire_temporary(files, entry) == "restored":  # a compaction's aside: back under its name
                    report.restored.append(files.display(entry.path))
                else:
                    report.removed.append(files.display(entry.path))
    for name in sweeps:
        for path in expired_leases(files, name):
            files.delete(path)
            report.removed.append(files.display(path))
    return report


def probe(files: Files) -> None:
    """Check that the store can be listed and written: list the root, write and delete a hidden
    marker ``<root>/.probe.<token>``.

    Raises:
        StoreUnreachable: saying which of the two failed, with the filesystem's message.
    """
    try:
        files.list_dir(files.root)
    except StoreError as exc:
        raise StoreUnreachable(f"store {files.uri} cannot be listed: {exc}") from None
    marker = join(files.root, f".probe.{uuid.uuid4().hex}")
    try:
        files.put(marker, b"probe")
        if files.info(marker) is None:
            raise StoreError(f"{files.display(marker)} was written but cannot be seen")
    except StoreUnreachable:
        raise  # it already says so, naming the store (Files.write_error)
    except StoreError as exc:
        raise StoreUnreachable(f"store {files.uri} cannot be written: {exc}") from None
    try:
        files.delete(marker)
    except StoreError as exc:
        raise StoreUnreachable(f"store {files.uri} cannot delete files: {exc}") from None


@dataclass(frozen=True)
class SweepSummary:
    """One line of ``explorer ls``."""

    sweep: str
    trials: int
    ok: int
    diverged: int
    failed: int
    bytes: int
    last_write: _dt.datetime | None


def sweeps_summary(files: Files) -> list[SweepSummary]:
    """One summary per sweep: trials (with a trials row) by status, from the compacted files'
    footers where they can be (``status_counts``), bytes on disk, last write."""
    from .status_counts import status_counts

    out = []
    for name in list_sweeps(files):
        counts = status_counts(files, name)
        entries = files.walk(sweep_dir(files.root, name))
        mtimes = [e.mtime for e in entries if e.mtime is not None]
        out.append(SweepSummary(
            name, sum(counts.values()), counts.get("ok", 0), counts.get("diverged", 0), counts.get("failed", 0),
            sum(e.size or 0 for e in entries), max(mtimes) if mtimes else None,
        ))
    return out


def remove_sweep(files: Files, sweep: str) -> int:
    """Delete everything under ``<root>/sweep=<sweep>/`` (nothing else); returns files removed.

    Raises:
        InvalidNameError: a bad sweep name. StoreError: no such sweep, or it cannot be deleted.
    """
    directory = sweep_dir(files.root, check_sweep(sweep))
    if sweep not in list_sweeps(files):
        raise StoreError(f"the store has no sweep {sweep!r}")
    n = len(files.walk(directory))
    try:
        if files.is_local:
            shutil.rmtree(directory)
        else:
            files.fs.delete_dir(directory)
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"cannot remove sweep {sweep}: {exc}") from None
    return n


__all__ = ["RepairReport", "SweepSummary", "probe", "quarantine", "quarantined_files", "remove_sweep", "repair", "sweeps_summary"]
