"""A sweep's trials counted by status from Parquet footers: ``explorer status`` and ``explorer ls``
flat in the number of trials.

Compaction writes into the footer of every compacted ``trials`` file (its key-value metadata,
``FOOTER_KEY``) the file's rows by status and its smallest and largest trial key
(``StatusTally``). Counting then reads footers, not rows: a compacted file whose key range
meets no other file of the kind (no other compacted file's range, no small file's key) serves
every one of its keys (the resolution rule of ``catalog``: a key is served by its small file,
else by the newest compacted file holding it), so its counts add as they are. Every other file
(small files, compacted files whose ranges meet, files compacted before the counts were kept,
footers whose counts do not match their row count) is read as ``trial_statuses`` reads it, with
the resolution rule over those files alone. So the counts equal those of ``trial_statuses``
whatever the store holds, and a sweep's end (its trials compacted into parts of disjoint key
ranges) leaves a store whose counts cost one footer per 4 million trials.

Files are screened as the views screen them (``screen.screen_listing``): a foreign file counts
nothing, an unreadable one raises ``UnreadableFileError`` naming it.
"""
from __future__ import annotations

import bisect
import json
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

from .catalog import Listing, list_kind
from .files import Entry, Files
from .layout import check_sweep, classify, kind_dir
from .lookup import read_again_if_moved, read_tables
from .schema import STATUSES
from .screen import key_range, screen_listing, unreadable_error

FOOTER_KEY = b"explorer:trial_status_counts"
_KIND = "trials"
_KEY = "trial_key"


class StatusTally:
    """Rows by status and the key range of a stream of ``trials`` rows (compaction feeds it each
    batch it writes into a part); ``metadata()`` is what goes into the part's footer."""

    def __init__(self):
        self.rows = 0
        self.counts: Counter = Counter()
        self.low: str | None = None
        self.high: str | None = None

    def add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        self.rows += table.num_rows
        for item in pc.value_counts(table.column("status").combine_chunks()).to_pylist():
            self.counts[item["values"]] += item["counts"]
        bounds = pc.min_max(table.column(_KEY)).as_py()
        if bounds["min"] is not None:
            self.low = bounds["min"] if self.low is None else min(self.low, bounds["min"])
            self.high = bounds["max"] if self.high is None else max(self.high, bounds["max"])

    def metadata(self) -> dict[bytes, bytes]:
        """``{FOOTER_KEY: JSON}``: rows, rows by status, smallest and largest key."""
        text = json.dumps({"rows": self.rows, "statuses": dict(self.counts), "key_min": self.low, "key_max": self.high},
                          sort_keys=True)
        return {FOOTER_KEY: text.encode()}


def footer_metadata(table: pa.Table) -> dict[str, str]:
    """The footer metadata of a compacted ``trials`` file holding ``table`` (as ``str``, for
    ``write.parquet_bytes``)."""
    tally = StatusTally()
    tally.add(table)
    return {k.decode(): v.decode() for k, v in tally.metadata().items()}


def footer_counts(metadata) -> tuple[dict[str, int], str, str] | None:
    """(rows by status, smallest key, largest key) from a compacted trials file's footer, or None
    when it has none or they do not add up to its rows (then its rows are read)."""
    pairs = metadata.metadata or {}
    raw = pairs.get(FOOTER_KEY)
    if raw is None:
        return None
    try:
        found = json.loads(raw)
        counts = {str(k): int(v) for k, v in found["statuses"].items()}
        rows, low, high = int(found["rows"]), found["key_min"], found["key_max"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if rows != metadata.num_rows or sum(counts.values()) != rows or any(v < 0 for v in counts.values()):
        return None
    if rows == 0:
        return counts, "", ""
    if not isinstance(low, str) or not isinstance(high, str) or low > high:
        return None
    return counts, low, high


_FOOTERS: dict[tuple, tuple | None] = {}


def _footer(files: Files, entry: Entry, fragments: dict) -> tuple:
    """(counts or None, key range or None) of one compacted file that passed the screening;
    cached per (path, size, mtime), as ``screen`` caches its verdicts."""
    cache_key = (files.uri, entry.path, entry.size, entry.mtime)
    if entry.size is not None and entry.mtime is not None and cache_key in _FOOTERS:
        return _FOOTERS[cache_key]
    fragment = fragments.get(entry.path)
    metadata = fragment.metadata if fragment is not None else files.read_metadata(entry.path)
    counts = footer_counts(metadata)
    if counts is not None:
        found = (counts[0], None if metadata.num_rows == 0 else (counts[1], counts[2]))
    else:
        found = (None, key_range(metadata, _KEY) if metadata.num_rows else None)
    if entry.size is not None and entry.mtime is not None:
        if len(_FOOTERS) > 100_000:
            _FOOTERS.clear()
        _FOOTERS[cache_key] = found
    return found


def status_counts(files: Files, sweep: str) -> dict[str, int]:
    """Trials of the sweep by status (``ok``, ``diverged``, ``failed``, each present, 0 when
    none): the counts of ``lookup.trial_values(files, sweep, "status")``, from footers where they
    can be (see the module docstring).

    Raises:
        InvalidNameError: a bad sweep name. UnreadableFileError: an unreadable trials file.
        StoreError: a file that cannot be read.
    """
    check_sweep(sweep)
    return read_again_if_moved(lambda: _status_counts(files, sweep), sweep, _KIND)


def _status_counts(files: Files, sweep: str) -> dict[str, int]:
    counts = {status: 0 for status in STATUSES}
    listing = list_kind(files, sweep, _KIND, stat=True)
    fragments: dict = {}
    # the compacted files' footers, screened as the views screen them (in parallel on object storage)
    verdicts = screen_listing(files, Listing(listing.directory, compacted=listing.compacted), _KIND, fragments=fragments)
    unreadable = [v for v in verdicts if v.category == "unreadable"]
    if unreadable:
        raise unreadable_error(unreadable)
    refused = {v.file for v in verdicts}  # foreign: serves no rows
    footers: list[tuple[Entry, dict | None, tuple[str, str] | None]] = [
        (entry, *_footer(files, entry, fragments)) for entry in listing.compacted if entry.path not in refused]
    clean = _clean_files(footers, sorted(listing.singles))
    for entry, by_status, _ in footers:
        if entry.path in clean:
            for status, n in by_status.items():
                counts[status] = counts.get(status, 0) + n
    rest = Listing(listing.directory, singles=listing.singles,
                   compacted=[e for e in listing.compacted if e.path not in clean])
    if rest.singles or rest.compacted:
        for table in read_tables(files, sweep, _KIND, None, [_KEY, "status"], listing=rest):
            for item in pc.value_counts(table.column("status").combine_chunks()).to_pylist():
                counts[item["values"]] = counts.get(item["values"], 0) + item["counts"]
    return counts


def _clean_files(footers, small_keys: list[str]) -> set[str]:
    """Paths of the compacted files with counts whose key range meets no other compacted file's
    range (a file without a known range meets every other) and holds no small file's key."""
    ranged = [(rng, entry.path) for entry, _, rng in footers if rng is not None]
    unknown = any(rng is None and by is None for _, by, rng in footers)  # rows of unknown keys
    if unknown:
        return {entry.path for entry, by, rng in footers if by is not None and rng is None}  # empty files only
    ranged.sort()
    clean = {entry.path for entry, by, rng in footers if by is not None and rng is None}  # empty, with counts
    with_counts = {entry.path for entry, by, _ in footers if by is not None}
    reach = None  # the largest key of the ranges before this one
    for i, ((low, high), path) in enumerate(ranged):
        alone = (reach is None or reach < low) and (i + 1 == len(ranged) or ranged[i + 1][0][0] > high)
        reach = high if reach is None else max(reach, high)
        if not alone or path not in with_counts:
            continue
        at = bisect.bisect_left(small_keys, low)
        if at < len(small_keys) and small_keys[at] <= high:
            continue
        clean.add(path)
    return clean


def has_kind(files: Files, sweep: str, kind: str) -> bool:
    """Whether the sweep's folder of ``kind`` holds a data file (small or compacted; one listing,
    nothing read): a caller skips reading a kind the sweep does not have (an adaptive sweep's
    ``rounds``, for ``explorer status``)."""
    names = files.list_file_names(kind_dir(files.root, check_sweep(sweep), kind))
    return any(classify(name).role in ("single", "compacted") for name in names)


__all__ = ["FOOTER_KEY", "StatusTally", "footer_counts", "footer_metadata", "has_kind",
           "status_counts"]
