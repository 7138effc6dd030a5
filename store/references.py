"""The reference cache: one Parquet file per reference key, arrays stored bit-exactly.

A reference is ``(arrays, meta)``: a dict of numpy arrays and a JSON-serializable dict. Each
array is one row (name, dtype with byte order, shape, raw C-order bytes), so it comes back with
the same bits, NaN payloads and signed zeros included. ``meta`` is stored as JSON in each row and
in the file's metadata (so a reference without arrays keeps it too); JSON turns tuples into lists.

Concurrency (``get_or_compute``):
- local disk: the first worker to create ``references/.lock.<key>`` (O_EXCL) computes; the
  others wait for the file. The holder refreshes the lock's mtime while it computes; a lock not
  refreshed for ``stale_after_s`` (its holder died) is removed and the next worker computes.
- object storage has no exclusive create: each worker that misses the cache computes, and,
  just before writing, reads a copy another worker wrote meanwhile instead of its own.
Either way a duplicate computation is harmless: the key fixes the numbers, and every file is
written whole (a worker replacing it writes the same content).

Screening (``read``): a cached file serves a worker only when it is the reference of its name:
it is a readable Parquet file (a truncated one is not), its columns are the references schema's, every row's ``ref_key`` is the key it is named after,
its arrays decode, and the caller's ``validate`` (the explorer checks that the outputs are
finite) finds nothing wrong. A file that fails is never used: ``get_or_compute`` moves it to
``<root>/quarantine/references/`` (nothing deleted) and computes the reference again;
``read`` raises ``ForeignReferenceError`` naming the file and why.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .control import MalformedControl, heartbeat_live, read_control
from .errors import ForeignReferenceError, SchemaError, StoreError
from .files import Files
from .heartbeat import DEFAULT_TTL_S
from .owners import owner_identity
from .layout import COMPACTED_PREFIX, QUARANTINE_DIR, check_key, classify, join, reference_file, reference_lock, references_dir
from .schema import SCHEMA_VERSION, package_version, schema, to_table
from .write import parquet_bytes

META_KEY = "explorer.reference_meta"
STALE_AFTER_S = DEFAULT_TTL_S  # a lock whose heartbeat (mtime) is older than this has lost its holder
Arrays = dict[str, np.ndarray]
Validate = Callable[[Arrays, dict], "str | None"]  # why a decoded reference cannot be used, or None


def encode(ref_key: str, arrays: Mapping[str, np.ndarray], meta: Mapping) -> tuple[pa.Table, str]:
    """The stored table of a reference and its meta as JSON.

    Raises:
        SchemaError: a non-array value, an object array, or meta that is not JSON-serializable.
    """
    if not isinstance(arrays, Mapping):
        raise SchemaError(f"reference arrays must be a dict of numpy arrays, got {type(arrays).__name__}")
    try:
        meta_json = json.dumps(dict(meta), sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"reference meta must be JSON-serializable: {exc}") from None
    rows = []
    for name, array in arrays.items():
        if not isinstance(array, np.ndarray) or array.dtype.hasobject:
            raise SchemaError(f"reference array {name!r} must be a numpy array of numbers, got {type(array).__name__}")
        rows.append({
            "name": str(name), "dtype": array.dtype.str, "shape": list(array.shape),
            "data": np.ascontiguousarray(array).tobytes(), "meta_json": meta_json,
        })
    fill = {"ref_key": ref_key, "schema_version": SCHEMA_VERSION, "package_version": package_version()}
    if rows:
        table = to_table("references", rows, fill)
    else:
        table = schema("references").empty_table()
    return table, meta_json


def decode(table: pa.Table) -> tuple[Arrays, dict]:
    """Arrays and meta back from a stored reference table (writable copies)."""
    metadata = table.schema.metadata or {}
    meta = json.loads(metadata[META_KEY.encode()]) if META_KEY.encode() in metadata else None
    arrays: Arrays = {}
    for row in table.select(["name", "dtype", "shape", "data", "meta_json"]).to_pylist():
        array = np.frombuffer(row["data"], dtype=np.dtype(row["dtype"])).reshape(row["shape"]).copy()
        arrays[row["name"]] = array
        if meta is None:
            meta = json.loads(row["meta_json"])
    return arrays, meta if meta is not None else {}


def read(files: Files, ref_key: str, validate: Validate | None = None) -> tuple[Arrays, dict] | None:
    """The cached reference, or None when it is not cached: its own file when there is one (the
    latest write), else its rows in the newest compacted references file holding them
    (``read_compacted``).

    Raises:
        ForeignReferenceError: its own file is not the reference of ``ref_key`` (see the module
            docstring); it is left where it is. StoreError: it cannot be read at all.
    """
    path = reference_file(files.root, ref_key)
    if not files.exists(path):
        return read_compacted(files, ref_key, validate)
    shown = files.display(path)
    try:
        table = pq.read_table(path, filesystem=files.fs, pre_buffer=True)
    except FileNotFoundError:  # quarantined by another worker, or merged by a compaction, since we looked
        return read_compacted(files, ref_key, validate)
    except pa.ArrowInvalid as exc:  # the bytes are no Parquet file (truncated, overwritten): never used
        reason = " ".join(str(exc).split())[:120]
        raise ForeignReferenceError(f"reference file {shown} is not the reference {ref_key}: "
                                    f"not a readable Parquet file ({reason}); never used") from None
    except (OSError, pa.ArrowException) as exc:  # the store failed, not the file: nothing is quarantined
        raise StoreError(f"cannot read {shown}: {exc}; run `explorer check`") from None
    reason = _table_problem(table, ref_key)
    if reason is None:
        reason, found = _decoded(table, validate)
        if reason is None:
            return found
    raise ForeignReferenceError(f"reference file {shown} is not the reference {ref_key}: {reason}; never used")


def _decoded(table: pa.Table, validate: Validate | None) -> tuple[str | None, tuple[Arrays, dict] | None]:
    """(why the rows cannot serve, None) or (None, (arrays, meta))."""
    try:
        arrays, meta = decode(table)
    except (ValueError, TypeError, KeyError) as exc:
        return f"its arrays do not decode ({' '.join(str(exc).split())[:120]})", None
    reason = validate(arrays, meta) if validate is not None else None
    return (reason, None) if reason is not None else (None, (arrays, meta))


# path -> (size, mtime, [(min key, max key) per row group]): compacted files never change.
_ROW_GROUPS: dict[str, tuple] = {}


def _key_ranges(files: Files, entry) -> list[tuple[str | None, str | None]]:
    cached = _ROW_GROUPS.get(entry.path)
    if cached is not None and cached[0] == entry.size and cached[1] == entry.mtime:
        return cached[2]
    metadata = files.read_metadata(entry.path)
    column = metadata.schema.to_arrow_schema().get_field_index("ref_key")
    ranges = []
    for i in range(metadata.num_row_groups):
        stats = metadata.row_group(i).column(column).statistics if column >= 0 else None
        if stats is not None and stats.has_min_max:
            low, high = stats.min, stats.max
            ranges.append((low.decode() if isinstance(low, bytes) else low, high.decode() if isinstance(high, bytes) else high))
        else:
            ranges.append((None, None))  # no statistics: the row group may hold any key
    if len(_ROW_GROUPS) > 4096:
        _ROW_GROUPS.clear()
    _ROW_GROUPS[entry.path] = (entry.size, entry.mtime, ranges)
    return ranges


def _compacted_files(files: Files) -> list:
    """The compacted references files, oldest generation first: names listed without a stat
    each (a cache of 10^4 single files is listed at every miss), then only these stat'ed."""
    directory = references_dir(files.root)
    try:
        names = sorted(n for n in files.list_file_names(directory) if n.startswith(COMPACTED_PREFIX)
                       and classify(n).role == "compacted")
    except (OSError, StoreError):
        return []
    found = []
    for name in names:
        info = files.info(join(directory, name))
        if info is not None:  # else removed by a compaction since the listing
            found.append(info)
    return found


def read_compacted(files: Files, ref_key: str, validate: Validate | None = None) -> tuple[Arrays, dict] | None:
    """``ref_key``'s rows in the newest compacted references file holding them, or None.

    By key: each file's row groups carry their smallest and largest key (compaction sorts by
    key and writes small row groups, ``compaction.REFERENCE_ROW_GROUP_ROWS``), so a lookup reads the
    footers (cached per process) and the one row group that can hold the key. Rows that do
    not decode or that ``validate`` refuses read as not cached: the reference is computed
    again, and its own file then serves it (it takes precedence over a compacted copy).
    """
    compacted = _compacted_files(files)
    for entry in reversed(compacted):  # newest generation first: the one the views serve
        try:
            ranges = _key_ranges(files, entry)
            groups = [i for i, (low, high) in enumerate(ranges) if low is None or low <= ref_key <= high]
            if not groups:
                continue
            parquet = pq.ParquetFile(entry.path, filesystem=files.fs)
            try:
                table = parquet.read_row_groups(groups)
            finally:
                parquet.close()
        except FileNotFoundError:
            continue  # removed by a compaction since the listing: a newer file holds its rows
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"cannot read {files.display(entry.path)}: {exc}; run `explorer check`") from None
        table = table.filter(pc.equal(table.column("ref_key"), ref_key))
        if table.num_rows == 0:
            continue
        if _table_problem(table, ref_key) is not None:
            return None
        _, found = _decoded(table.replace_schema_metadata(None), validate)
        return found
    return None


def is_cached(files: Files, ref_key: str) -> bool:
    """Whether ``ref_key`` has its own file, or its key is in a compacted references file (the
    keys of each compacted file are read once per process)."""
    from .catalog import file_keys

    if files.exists(reference_file(files.root, ref_key)):
        return True
    return any(ref_key in file_keys(files, entry, "ref_key") for entry in _compacted_files(files))


def _table_problem(table: pa.Table, ref_key: str) -> str | None:
    """Why a reference table is not ``ref_key``'s (the screen of the views, on the rows), or None."""
    from .screen import schema_mismatch  # screen imports the catalog; this module stays light

    mismatch = schema_mismatch("references", table.schema)
    if mismatch:
        return f"not a references file: {mismatch}"
    keys = set(table.column("ref_key").to_pylist())
    if keys - {ref_key}:
        held = ", ".join(sorted(str(k) for k in keys - {ref_key})[:3])
        return f"it holds the rows of {held}"
    return None


def _read_or_quarantine(files: Files, ref_key: str, validate: Validate | None) -> tuple[Arrays, dict] | None:
    """``read``, except that a foreign file is moved to the quarantine and reads as not cached."""
    try:
        return read(files, ref_key, validate)
    except ForeignReferenceError as exc:
        quarantine_reference(files, ref_key, str(exc))
        return None


def quarantine_reference(files: Files, ref_key: str, why: str) -> str | None:
    """Move ``ref_key``'s cached file to ``<root>/quarantine/references/`` (a free name);
    returns where it went, or None when another worker moved it first.

    Raises:
        StoreError: it can be neither moved nor left behind (the sweep must not use it).
    """
    path = reference_file(files.root, ref_key)
    target = join(files.root, QUARANTINE_DIR, "references", f"{ref_key}.parquet")
    candidate, n = target, 0
    while files.info(candidate) is not None:
        n += 1
        candidate = f"{target}.{n}"
    try:
        files.move(path, candidate)
    except StoreError:
        if files.exists(path):
            raise StoreError(f"{why}, and it cannot be moved to the quarantine") from None
        return None
    return files.display(candidate)


def write(files: Files, ref_key: str, arrays: Mapping[str, np.ndarray], meta: Mapping) -> None:
    """Store a reference (replacing any copy of it)."""
    table, meta_json = encode(check_key(ref_key, "reference key"), arrays, meta)
    files.put(reference_file(files.root, ref_key), parquet_bytes(table, {META_KEY: meta_json}))


def get_or_compute(
    files: Files,
    ref_key: str,
    compute: Callable[[], tuple[Mapping[str, np.ndarray], Mapping]],
    *,
    stale_after_s: float = STALE_AFTER_S,
    poll_s: float = 0.1,
    validate: Validate | None = None,
) -> tuple[Arrays, dict]:
    """The reference of ``ref_key``, computed by ``compute()`` only when no worker has stored it.

    Args:
        compute: returns ``(arrays, meta)``; called at most once per call, and (on local disk)
            by at most one worker at a time per key.
        stale_after_s: a lock whose holder stopped refreshing it this long ago is broken.
        poll_s: how often a waiting worker looks for the file.
        validate: ``validate(arrays, meta)`` says why a cached reference cannot be used (None:
            it can); such a file, like one holding another key's rows, is quarantined and the
            reference computed again.

    Returns:
        ``(arrays, meta)`` as stored: read back from the cache, or what ``compute`` returned
        (with ``meta`` normalized through JSON) when this worker computed it.

    Raises:
        Whatever ``compute`` raises (the lock is released first); SchemaError for arrays or meta
        that cannot be stored; StoreError when the store cannot be read or written.
    """
    check_key(ref_key, "reference key")

    def cached_copy():
        return _read_or_quarantine(files, ref_key, validate)

    cached = cached_copy()
    if cached is not None:
        return cached
    if not files.is_local:
        return _compute_and_store(files, ref_key, compute, recheck=cached_copy)
    lock = reference_lock(files.root, ref_key)
    token = owner_identity().encode()
    while True:
        if files.create_exclusive(lock, token):
            try:
                cached = cached_copy()  # finished by another worker since we looked
                if cached is not None:
                    return cached
                with _Heartbeat(lock, interval_s=max(stale_after_s / 4, 0.05)):
                    return _compute_and_store(files, ref_key, compute, recheck=None)
            finally:
                try:
                    os.remove(lock)
                except FileNotFoundError:
                    pass
        cached = cached_copy()
        if cached is not None:
            return cached
        _break_if_stale(files, lock, stale_after_s)
        time.sleep(poll_s)


def _compute_and_store(files: Files, ref_key: str, compute, recheck) -> tuple[Arrays, dict]:
    result = compute()
    try:
        arrays, meta = result
    except (TypeError, ValueError):
        raise SchemaError(f"compute() must return (arrays, meta), got {type(result).__name__}") from None
    table, meta_json = encode(ref_key, arrays, meta)
    if recheck is not None:
        cached = recheck()
        if cached is not None:
            return cached
    files.put(reference_file(files.root, ref_key), parquet_bytes(table, {META_KEY: meta_json}))
    return {k: np.array(v, copy=True) for k, v in arrays.items()}, json.loads(meta_json)


def _break_if_stale(files: Files, lock: str, stale_after_s: float) -> None:
    """Remove ``lock`` when its holder is gone: its heartbeat is not live (``control.heartbeat_live``:
    lapsed, or dated further ahead of this machine's clock than ``stale_after_s``), or it is no
    lock at all (a link, a device, too large)."""
    if lock_live(files, lock, stale_after_s) is False:
        # Two waiters may both break it and both compute: harmless (identical whole-file writes).
        try:
            os.remove(lock)
        except FileNotFoundError:
            pass


def lock_live(files: Files, lock: str, stale_after_s: float = STALE_AFTER_S) -> bool | None:
    """Whether a reference lock's holder is alive by its heartbeat; None when there is no lock."""
    try:
        found = read_control(files, lock)
    except MalformedControl:
        return False
    except OSError:
        return True  # unreadable for now: never break what cannot be judged
    if found is None:
        return None
    return heartbeat_live(found[1], stale_after_s)


class _Heartbeat:
    """Refreshes a lock file's mtime from a daemon thread while its holder computes."""

    def __init__(self, path: str, interval_s: float):
        self.path, self.interval_s = path, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                os.utime(self.path)
            except OSError:
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False
