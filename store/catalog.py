"""What a store holds, and which file serves each trial.

A trial (or fit) can briefly live in two files: its own small file and a compacted file (a
compaction interrupted before it removed its inputs, or a trial rewritten after compaction), or
two compacted files (a compaction interrupted before it removed the older one). Readers never
see it twice: ``resolve`` gives each key to exactly one file,
1. its own small file ``<key>.parquet`` when there is one (the latest write of that key), else
2. the newest compacted file that holds it (generations sort by time),
and reads the other files without that key. Every reader (the SQL views, completed-trial lookup,
check and compaction) goes through this one rule.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from .files import Entry, Files
from .layout import (
    COMPACTED_PREFIX, LEASES_DIR, QUARANTINE_DIR, RUNS_DIR, REFERENCES_DIR, classify, join, kind_dir, parse_kind_dir, parse_sweep_dir, references_dir,
    single_key,
)
from .schema import KEY_COLUMN


@dataclass
class Listing:
    """The files of one kind directory (or of references/), by role."""

    directory: str
    singles: dict[str, Entry] = field(default_factory=dict)  # key -> its own small file
    compacted: list[Entry] = field(default_factory=list)  # oldest generation first
    temporary: list[Entry] = field(default_factory=list)  # writes in progress or interrupted
    locks: list[Entry] = field(default_factory=list)
    foreign: list[Entry] = field(default_factory=list)  # anything else: never read as data


@dataclass(frozen=True)
class Source:
    """One file to read; ``keep`` limits it to some keys (None: all its rows)."""

    path: str
    keep: frozenset[str] | None = None


@dataclass
class Resolution:
    sources: list[Source]
    served: dict[str, str]  # key -> path of the file that serves it
    superseded: list[str]  # compacted files none of whose keys they serve
    shadowed: dict[str, int]  # path -> number of its keys served by another file


def list_sweeps(files: Files) -> list[str]:
    """Sweeps present in the store, sorted."""
    return [s for e in files.list_dir(files.root) if e.is_dir and (s := parse_sweep_dir(e.name))]


def list_directory(files: Files, directory: str, stat: bool = False) -> Listing:
    listing = Listing(directory)
    for entry in files.list_dir(directory, stat=stat):
        name = classify(entry.name)
        if entry.is_dir or entry.error:
            listing.foreign.append(entry)
        elif name.role == "single":
            listing.singles[name.key] = entry
        elif name.role == "compacted":
            listing.compacted.append(entry)
        elif name.role == "temporary":
            listing.temporary.append(entry)
        elif name.role == "lock":
            listing.locks.append(entry)
        else:
            listing.foreign.append(entry)
    listing.compacted.sort(key=lambda e: e.name)
    return listing


def list_kind(files: Files, sweep: str, kind: str, stat: bool = False) -> Listing:
    return list_directory(files, kind_dir(files.root, sweep, kind), stat=stat)


def list_references(files: Files, stat: bool = False) -> Listing:
    return list_directory(files, references_dir(files.root), stat=stat)


def completed_keys(files: Files, sweep: str) -> set[str]:
    """Trial keys with a trials row: the names of the small trials files, plus the trial_key
    column of the compacted ones. Lists names only, so 10^5 small files take a fraction of a
    second on local disk."""
    directory = kind_dir(files.root, sweep, "trials")
    keys: set[str] = set()
    compacted: list[str] = []
    for name in files.list_file_names(directory):
        key = single_key(name)
        if key is not None:
            keys.add(key)
        elif name.startswith(COMPACTED_PREFIX) and classify(name).role == "compacted":
            compacted.append(name)
    for name in compacted:
        keys |= file_keys(files, Entry(name, join(directory, name), False), "trial_key")
    return keys


_KEYS_CACHE: dict[tuple, frozenset[str]] = {}


def file_keys(files: Files, entry: Entry, key_column: str) -> frozenset[str]:
    """Distinct keys held by a (compacted) file; cached, as compacted files never change."""
    size = entry.size
    if size is None:
        info = files.info(entry.path)
        size = info.size if info else None
    cache_key = (files.uri, entry.path, size, key_column)
    keys = _KEYS_CACHE.get(cache_key)
    if keys is None:
        column = files.read_table(entry.path, columns=[key_column], read_dictionary=[key_column]).column(0)
        distinct = pc.unique(column.combine_chunks().dictionary_decode() if _is_dict(column) else column)
        keys = frozenset(distinct.to_pylist())
        if len(_KEYS_CACHE) > 4096:
            _KEYS_CACHE.clear()
        _KEYS_CACHE[cache_key] = keys
    return keys


def _is_dict(column: pa.ChunkedArray) -> bool:
    return pa.types.is_dictionary(column.type)


def resolve(files: Files, listing: Listing, kind: str, exclude: frozenset[str] = frozenset()) -> Resolution:
    """Give each key of one kind directory to exactly one file (see the module docstring).

    Args:
        exclude: paths never to read (unreadable or foreign files found by check).
    """
    key_column = KEY_COLUMN[kind]
    served: dict[str, str] = {}
    sources: list[Source] = []
    for key, entry in listing.singles.items():
        if entry.path in exclude:
            continue
        served[key] = entry.path
        sources.append(Source(entry.path))
    superseded: list[str] = []
    shadowed: dict[str, int] = {}
    for entry in reversed(listing.compacted):  # newest generation first
        if entry.path in exclude:
            continue
        keys = file_keys(files, entry, key_column)
        mine = frozenset(k for k in keys if k not in served)
        if not mine and keys:
            superseded.append(entry.path)
            continue
        if len(mine) < len(keys):
            shadowed[entry.path] = len(keys) - len(mine)
            sources.append(Source(entry.path, mine))
        else:
            sources.append(Source(entry.path))
        for key in mine:
            served[key] = entry.path
    return Resolution(sources, served, superseded, shadowed)


def unexpected_entries(files: Files) -> list[Entry]:
    """Entries at the root or in a sweep directory that the layout does not know."""
    odd = []
    for entry in files.list_dir(files.root, stat=True):
        if entry.is_dir and (parse_sweep_dir(entry.name) or entry.name == REFERENCES_DIR):
            if entry.name == REFERENCES_DIR:
                continue
            for child in files.list_dir(entry.path, stat=True):
                if not (child.is_dir and (parse_kind_dir(child.name) or child.name in (LEASES_DIR, RUNS_DIR))):
                    odd.append(child)
        elif not entry.name.startswith(".") and not (entry.is_dir and entry.name == QUARANTINE_DIR):
            odd.append(entry)
    return odd
