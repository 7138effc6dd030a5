"""Which files may serve rows: the one rule shared by ``check``, the SQL views and the lookups.

A data file serves rows only when
1. its Parquet footer can be read (otherwise it is *unreadable*: queries refuse to run and name
   it, ``explorer check --quarantine`` moves it aside), and
2. its columns are those of some known schema version of its kind (otherwise it is *foreign*:
   check reports it, the views leave it out and say how many they left out). A file of version v
   has exactly the columns of the current schema minus those added after v (read as NULL),
   each with the current type. The columns added by each version come from
   ``store.schema.ADDED_COLUMNS`` (``{version: {kind: (column, ...)}}``, from each column's ``since``);
   a file with some but not all of a version's additions, or with a column no version has, or
   missing a column of version 1, matches no version. Optional columns
   (``store.schema.OPTIONAL_COLUMNS``) are left out of that comparison: a file of any version may
   hold them (with the current type) or lack them (read as NULL);
3. a small file ``<key>.parquet`` holds only that key's rows: by the footer's statistics, or, for a
   file written without statistics, by reading its key column (small files are one trial each);
4. a file under ``sweep=<name>/`` holds only rows whose ``sweep`` column is ``<name>``, checked
   the same way: a copied sweep folder (``cp -r sweep=a sweep=a_backup``) serves nothing, so no
   view ever counts sweep a's rows twice (``check`` reports the copy's files as foreign).

The verdict is cached per (path, size, mtime): a file's footer is read once per process.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.dataset as ds

from . import schema as _schema_module
from .catalog import Listing, Resolution, resolve
from .errors import UnreadableFileError
from .files import Entry, Files
from .layout import parse_sweep_dir
from .printable import printable
from .schema import KEY_COLUMN, SCHEMA_VERSION, schema

_SOURCE_PREFIX = re.compile(r"^Could not open Parquet input source '[^']*':\s*")
QUARANTINE_HINT = "run `explorer check --quarantine` to move unreadable files aside"


@dataclass(frozen=True)
class Verdict:
    """Why a file cannot serve rows: category ``unreadable`` or ``foreign``, path, reason."""

    category: str
    path: str  # as the user knows it (files.display)
    reason: str
    file: str = ""  # the path on the store's filesystem


def added_columns(kind: str) -> dict[int, tuple[str, ...]]:
    """``{version: columns added by that version}`` for one kind (empty: nothing declared)."""
    declared = getattr(_schema_module, "ADDED_COLUMNS", None) or {}
    out: dict[int, tuple[str, ...]] = {}
    for version, by_kind in declared.items():
        cols = tuple((by_kind or {}).get(kind, ()))
        if cols:
            out[int(version)] = cols
    return out


def optional_columns(kind: str) -> frozenset[str]:
    """The columns of ``kind`` that a file of any version may hold or lack."""
    declared = getattr(_schema_module, "OPTIONAL_COLUMNS", None) or {}
    return frozenset(declared.get(kind, ()))


def version_columns(kind: str) -> dict[int, frozenset[str]]:
    """The column set of each known schema version of ``kind`` (1 .. SCHEMA_VERSION), optional
    columns left out."""
    current = frozenset(schema(kind).names) - optional_columns(kind)
    added = added_columns(kind)
    out = {}
    for version in range(1, SCHEMA_VERSION + 1):
        later = {c for v, cols in added.items() if v > version for c in cols}
        out[version] = current - later
    return out


def schema_mismatch(kind: str, actual: pa.Schema) -> str | None:
    """Why a file's schema matches no known schema version of ``kind`` (None when it matches)."""
    text = actual.to_string(show_field_metadata=False, show_schema_metadata=False)  # fast, unlike iterating fields
    memo_key = (kind, SCHEMA_VERSION, repr(getattr(_schema_module, "ADDED_COLUMNS", None)),
                repr(getattr(_schema_module, "OPTIONAL_COLUMNS", None)), text)
    if memo_key not in _MISMATCH:
        if len(_MISMATCH) > 1024:
            _MISMATCH.clear()
        _MISMATCH[memo_key] = _mismatch(kind, tuple((f.name, f.type) for f in actual))
    return _MISMATCH[memo_key]


_MISMATCH: dict[tuple, str | None] = {}


def _mismatch(kind: str, fields: tuple) -> str | None:
    expected = schema(kind)
    expected_names = list(expected.names)
    known = {f.name: f.type for f in expected}
    names = [name for name, _ in fields]
    present = frozenset(names)
    if len(present) != len(names):
        return "duplicate column names"
    versions = version_columns(kind)
    oldest = versions[min(versions)]
    missing = [n for n in expected_names if n in oldest and n not in present]
    if missing:
        return f"missing column(s) {_few(missing)}"
    unknown = [n for n in names if n not in known]
    if unknown:
        return f"unknown column(s) {_few(unknown)}"
    for name, got in fields:
        if got != known[name]:
            return f"column {name!r} is {got}, expected {known[name]}"
    if any(present - optional_columns(kind) == cols for cols in versions.values()):
        return None
    newest = versions[max(versions)]
    lacking = [n for n in expected_names if n in newest and n not in present]
    return f"columns of no schema version (lacks {_few(lacking)})"


def _few(names: list[str], shown: int = 6) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


SCREEN_CACHE: dict[tuple, Verdict | None] = {}
# Pre-buffering coalesces reads into few large requests: a win on object storage, a loss locally.
_LOCAL_FORMAT = ds.ParquetFileFormat()
_REMOTE_FORMAT = ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=True))


def parquet_format(files: Files) -> ds.ParquetFileFormat:
    return _LOCAL_FORMAT if files.is_local else _REMOTE_FORMAT


def screen_file(files: Files, entry: Entry, kind: str, key: str | None, fragments: dict | None = None) -> Verdict | None:
    """The verdict on one data file (None: it may serve rows). Reads its footer only.

    Args:
        fragments: when given, receives ``path -> ParquetFileFragment`` (footer already read, so
            a scan does not read it again) for a file that passes.
    """
    cache_key = None
    if entry.size is not None and entry.mtime is not None:
        cache_key = (files.uri, entry.path, entry.size, entry.mtime, kind, key, SCHEMA_VERSION)
        if cache_key in SCREEN_CACHE:  # a file that passed is then scanned from its path
            return SCREEN_CACHE[cache_key]
    verdict = _screen(files, entry, kind, key, fragments)
    if cache_key is not None and (verdict is None or verdict.category == "foreign"):
        if len(SCREEN_CACHE) > 100_000:
            SCREEN_CACHE.clear()
        SCREEN_CACHE[cache_key] = verdict
    return verdict


def _screen(files: Files, entry: Entry, kind: str, key: str | None, fragments: dict | None = None) -> Verdict | None:
    shown = files.display(entry.path)
    if entry.error:
        return Verdict("foreign", shown, f"cannot be opened ({entry.error}); never read", entry.path)
    try:
        fragment = parquet_format(files).make_fragment(entry.path, filesystem=files.fs)
        fragment.ensure_complete_metadata()
        metadata = fragment.metadata
        actual = metadata.schema.to_arrow_schema()
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as exc:
        if not files.exists(entry.path):  # removed since the listing (a compaction): not unreadable
            raise FileNotFoundError(str(exc)) from None
        reason = _SOURCE_PREFIX.sub("", str(exc).strip()).strip()
        return Verdict("unreadable", shown, f"not a readable Parquet file ({reason[:160]})", entry.path)
    reason = schema_mismatch(kind, actual)
    if reason:
        return Verdict("foreign", shown, f"not a {kind} file: {reason}", entry.path)
    expected = [(KEY_COLUMN[kind], key, f"named after {key}")] if key is not None else []
    folder = _sweep_folder(entry.path) if "sweep" in actual.names else None
    if folder is not None:
        expected.append(("sweep", folder, f"under sweep={folder}"))
    for column, value, where in expected:
        held = key_range(metadata, column)
        if held is None and metadata.num_rows:  # no statistics: the rows themselves say whose they are
            try:
                held = _key_range_from_rows(fragment, column)
            except (OSError, pa.ArrowException) as exc:
                reason = " ".join(str(exc).split())[:160]
                return Verdict("unreadable", shown, f"its {column} column cannot be read ({reason})", entry.path)
        if held is not None and held != (value, value):
            return Verdict("foreign", shown, f"{where} but holds {column} {held[0]}..{held[1]}", entry.path)
    if fragments is not None:
        fragments[entry.path] = fragment
    return None


def _sweep_folder(path: str) -> str | None:
    """The sweep of a data file's place ``.../sweep=<name>/kind=<kind>/<file>`` (None elsewhere)."""
    parts = path.rstrip("/").split("/")
    return parse_sweep_dir(parts[-3]) if len(parts) >= 3 else None


def key_range(metadata, column: str) -> tuple[str, str] | None:
    """(min, max) of a string column from the row-group statistics, None when not recorded."""
    index = metadata.schema.names.index(column)
    low = high = None
    for g in range(metadata.num_row_groups):
        stats = metadata.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max:
            return None
        low = stats.min if low is None else min(low, stats.min)
        high = stats.max if high is None else max(high, stats.max)
    return None if low is None else (low, high)


def _key_range_from_rows(fragment, column: str) -> tuple[str, str] | None:
    """(min, max) of a string column read from the file itself (None: only NULLs)."""
    import pyarrow.compute as pc

    values = fragment.to_table(columns=[column]).column(column)
    bounds = pc.min_max(values).as_py()
    low, high = bounds["min"], bounds["max"]
    if values.null_count:  # a row without a key belongs to no trial: never this file's
        return ("NULL", high if high is not None else "NULL")
    return None if low is None else (low, high)


def screen_listing(files: Files, listing: Listing, kind: str, workers: int = 8, fragments: dict | None = None) -> list[Verdict]:
    """Verdicts on the data files (small and compacted) of one listing; in parallel.

    Args:
        fragments: receives the footer-read fragments of the files that pass (see screen_file).
    """
    jobs = [(e, key) for key, e in listing.singles.items()] + [(e, None) for e in listing.compacted]
    if not jobs:
        return []
    if len(jobs) == 1 or files.is_local:  # local footers are cheap reads: threads only add contention
        found = [screen_file(files, e, kind, k, fragments) for e, k in jobs]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            found = list(pool.map(lambda job: screen_file(files, job[0], kind, job[1], fragments), jobs))
    return [v for v in found if v is not None]


@dataclass
class Served:
    """What may serve the rows of one kind directory, and what was left out."""

    resolution: Resolution
    foreign: list[Verdict] = field(default_factory=list)
    unreadable: list[Verdict] = field(default_factory=list)
    fragments: dict = field(default_factory=dict)  # path -> fragment whose footer is already read


def servable(files: Files, listing: Listing, kind: str, exclude: frozenset[str] = frozenset()) -> Served:
    """Resolve one kind directory over the files that pass ``screen_file`` only."""
    fragments: dict = {}
    verdicts = screen_listing(files, listing, kind, fragments=fragments)
    bad = frozenset(v.file for v in verdicts)
    served = Served(resolve(files, listing, kind, exclude | bad), fragments=fragments)
    for v in verdicts:
        (served.unreadable if v.category == "unreadable" else served.foreign).append(v)
    return served


def unreadable_error(verdicts: list[Verdict]) -> UnreadableFileError:
    first = verdicts[0]
    more = f" (and {len(verdicts) - 1} more)" if len(verdicts) > 1 else ""
    return UnreadableFileError(f"cannot read {printable(first.path)}{more}: {printable(first.reason)}; {QUARANTINE_HINT}")
