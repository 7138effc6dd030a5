"""Removing the temporary files of writes that will never finish.

A writer killed mid-write (its worker or node lost, its driver SIGKILLed) leaves a hidden
``.tmp.<token>.<name>`` sibling of the file it was writing. Readers and listings never see it,
but it takes space and ``explorer check`` reports it. Only local disks have temporaries (an
object is sent in one request). The token names the writer (``owners.writer_token``: pid and
host), so a temporary whose writer is a process of this machine that no longer runs is removed
whatever its age (``dead_writer``); for the others only the caller knows when no writer can
still be at work: hence the ``before`` cut-off (files last touched before it are removed).

A compaction moves each small input aside (``.tmp.compacting<pid>@<host>@<hex>.<name>``) before
it compares and deletes it; one killed in between leaves the aside behind. Its rows are in the
compacted file, unless the trial was rewritten just before the move: so it is never deleted but
put back under its own name (``retire_temporary``), where it is an ordinary small file that the
views read and the next compaction merges, unless a newer file holds that name (which wins).
"""
from __future__ import annotations

import datetime as _dt
import os
import re

from collections.abc import Iterable

from .catalog import completed_keys, list_kind, list_references
from .files import Entry, Files
from .layout import DATA_KINDS, check_key, check_sweep, key_file
from .owners import temporary_writer

STALE_TEMPORARY_S = 3600.0  # no write takes an hour: a temporary this old has no live writer


def dead_writer(name: str) -> int | None:
    """The pid of a temporary's writer when it is a process of this machine that no longer runs
    (its temporary will never be finished), else None (alive, elsewhere, or unknown)."""
    writer = temporary_writer(name)
    return writer[0] if writer is not None and not writer[1] else None


# A compaction's aside (``store.compaction._remove_unchanged``: ``writer_token("compacting")``), then the
# input's own name.
_ASIDE = re.compile(r"\.tmp\.compacting[0-9]{1,10}@[A-Za-z0-9.-]{1,255}@[0-9a-f]{8,32}\.(.+)")


def _parquet(path: str) -> bool:
    """Whether ``path`` holds a Parquet file whose footer reads (an aside is a whole input, moved
    by a rename; anything else there is no data to put back)."""
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(path)
    except Exception:  # noqa: BLE001 - any unreadable file: deleted like any temporary
        return False
    return True


def retire_temporary(files: Files, entry: Entry) -> str:
    """Take away a temporary whose writer will never finish: a compaction's aside goes back to its
    input's name when that name is free ("restored"; a newer file there wins and the aside is
    deleted), any other temporary (or an aside that is no readable Parquet file) is deleted
    ("removed"). Returns which."""
    match = _ASIDE.fullmatch(entry.name)
    if match is not None and files.is_local and _parquet(entry.path):
        original = os.path.join(os.path.dirname(entry.path), match.group(1))
        try:
            os.link(entry.path, original)  # never replaces a file written there since
        except FileExistsError:
            pass
        except FileNotFoundError:
            return "removed"  # gone meanwhile
        else:
            os.remove(entry.path)
            return "restored"
    files.delete(entry.path)
    return "removed"


def remove_temporaries(files: Files, sweep: str, before: _dt.datetime | None = None, references: bool = False) -> int:
    """Delete the sweep's temporary files last modified before ``before``, and those whose
    writer is a dead process of this machine (``dead_writer``), whatever their age.

    Args:
        before: a timezone-aware cut-off (default: an hour ago, ``STALE_TEMPORARY_S``).
        references: also those of the reference cache (shared by every sweep of the store).

    Returns:
        How many files were deleted (always 0 on object storage).

    Raises:
        InvalidNameError: a bad sweep name. StoreError: a directory cannot be listed.
    """
    check_sweep(sweep)
    if not files.is_local:
        return 0
    if before is None:
        before = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(seconds=STALE_TEMPORARY_S)
    listings = [list_kind(files, sweep, kind, stat=True) for kind in DATA_KINDS]
    if references:
        listings.append(list_references(files, stat=True))
    removed = 0
    for listing in listings:
        for entry in listing.temporary:
            if entry.mtime is None or entry.mtime < before or dead_writer(entry.name) is not None:
                retire_temporary(files, entry)  # a compaction's aside is put back, not deleted
                removed += 1
    return removed


def remove_unfinished(files: Files, sweep: str, keys: Iterable[str]) -> int:
    """Delete the metrics files of those ``keys`` that have no trials row: trials whose worker was
    stopped between the two writes (a signal, a lost node). The rerun would replace them anyway;
    until then ``check`` reports them as incomplete. Only the caller knows that no writer of these
    keys is still at work (a driver that held their claims and has stopped its workers).

    Returns:
        How many files were deleted.

    Raises:
        InvalidNameError: a bad sweep name or key. StoreError: the store cannot be listed.
    """
    check_sweep(sweep)
    unfinished = {check_key(k) for k in keys} - completed_keys(files, sweep)
    removed = 0
    for key in sorted(unfinished):
        path = key_file(files.root, sweep, "metrics", key)
        if files.exists(path):
            files.delete(path)
            removed += 1
    return removed
