"""``compact``: merge a sweep's small files into a few large ones, losing nothing.

For each kind (metrics, trials, fits, rounds, comparisons, optima) of one sweep:
0. screening: the files the views would leave out (``screen.servable``: foreign, of no known
   schema version, holding another key's rows, unreadable) are never inputs: they stay where
   they are, untouched, and the report lists them (``explorer check --quarantine`` moves the
   unreadable ones aside);
1. inputs: every small file (for metrics, only those of complete trials, i.e. with a trials row,
   so that a rerun of an interrupted trial never meets a compacted copy), compacted files under
   half of ``rows_per_file``, and compacted files partly or wholly shadowed by newer copies;
2. read exactly the rows the views serve from them (the screened ``catalog.resolve``: one copy per key), sort
   them by key (and seed, step), cut them at key boundaries into parts of at most
   ``rows_per_file`` rows, and write each part atomically as ``compacted.<gen>.<n>.parquet``;
3. read each part back and compare it with what was meant, row count and every value bit for
   bit; any difference removes the new parts and stops, originals untouched;
4. only then delete the inputs. A small file that changed since it was read (a trial rewritten
   meanwhile) is kept, and being a small file it keeps precedence over the compacted copy. On
   local disk each input is renamed aside before it is compared and deleted, so a rewrite
   racing the deletion is never lost (``_remove_unchanged``).
An interruption anywhere leaves every row readable: before step 4 the new parts are extra
copies that the resolution rule ignores or prefers identically, and a later ``compact`` removes
them. Readers racing a compaction may fail with "file not found" and should simply rerun.
"""
from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, field

import pyarrow as pa

from .catalog import Source, completed_keys, list_kind
from .cleanup import remove_temporaries
from .errors import StoreError
from .files import Entry, Files
from .layout import DATA_KINDS, check_kind, check_sweep, compacted_name, join, kind_dir, temporary_path
from .owners import writer_token
from .query import kind_dataset
from .printable import printable
from .schema import KEY_COLUMN
from .screen import Verdict, servable
from .write import parquet_bytes

SORT_KEYS = {"metrics": ["trial_key", "seed", "step"], "trials": ["trial_key"], "fits": ["fit_id"],
             "rounds": ["round_id", "entry", "trial_key", "parameter"], "comparisons": ["comparison_id", "parameter"],
             "optima": ["optima_id", "parameter"]}


@dataclass
class KindCompaction:
    """What compaction did to one kind of one sweep."""

    kind: str
    files_in: int = 0
    files_out: int = 0
    rows: int = 0
    removed: int = 0
    kept_changed: int = 0  # inputs rewritten during compaction, kept
    left_out: list[Verdict] = field(default_factory=list)  # files the views refuse: never merged, never removed


@dataclass
class CompactionReport:
    sweep: str
    kinds: list[KindCompaction] = field(default_factory=list)
    temporaries_removed: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """One line: what was merged, per kind."""
        parts = [
            f"{k.kind} {k.files_in} -> {k.files_out} files ({k.rows} rows)"
            + (f", {k.kept_changed} changed meanwhile and kept" if k.kept_changed else "")
            for k in self.kinds if k.files_in
        ]
        done = "; ".join(parts) if parts else "nothing to compact"
        left = self.left_out()
        kept = f"; left {len(left)} file(s) the views refuse in place (see `explorer check`)" if left else ""
        return f"sweep {self.sweep}: {done}{kept} in {self.seconds:.2f} s"

    def lines(self) -> list[str]:
        """The summary, then one line per file left in place (escaped: names come from the store)."""
        return [self.summary()] + [f"left in place: {printable(v.path)}: {printable(v.reason)}" for v in self.left_out()]

    def left_out(self) -> list[Verdict]:
        """The files of every kind that were not compacted because the views refuse them."""
        return [v for k in self.kinds for v in k.left_out]


def same_content(a: pa.Table, b: pa.Table) -> bool:
    """True when both tables hold the same columns, types and values, bit for bit (NaN too)."""
    if a.num_rows != b.num_rows or a.schema.names != b.schema.names:
        return False
    for x, y in zip(a.columns, b.columns):
        if x.type != y.type:
            return False
        if not _same_values(x.combine_chunks(), y.combine_chunks()):
            return False
    return True


def _same_values(x: pa.Array, y: pa.Array) -> bool:
    """Bit for bit: floats (and lists of floats, a diverged seed's Gram rows) compared as their
    bits, where ``equals`` would call NaN unequal to itself."""
    if pa.types.is_list(x.type) and pa.types.is_floating(x.type.value_type):
        return (x.is_null().equals(y.is_null()) and x.value_lengths().equals(y.value_lengths())
                and _same_values(x.flatten(), y.flatten()))
    if pa.types.is_floating(x.type):
        as_int = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[x.type.bit_width]
        x, y = x.view(as_int), y.view(as_int)
    return x.equals(y)


def _generation() -> str:
    return f"{time.time_ns():020d}{secrets.token_hex(4)}"


def _cut(table: pa.Table, key_column: str, rows_per_file: int) -> list[pa.Table]:
    """Slices of a key-sorted table, at key boundaries, each <= rows_per_file (unless one key is larger)."""
    if table.num_rows <= rows_per_file:
        return [table]
    keys = table.column(key_column).to_pylist()
    parts, start = [], 0
    while start < len(keys):
        end = min(start + rows_per_file, len(keys))
        if end < len(keys):
            boundary = end
            while boundary > start and keys[boundary] == keys[boundary - 1]:
                boundary -= 1
            if boundary == start:  # one key larger than a part: keep it whole
                boundary = end
                while boundary < len(keys) and keys[boundary] == keys[boundary - 1]:
                    boundary += 1
            end = boundary
        parts.append(table.slice(start, end - start))
        start = end
    return parts


def _compact_kind(files: Files, sweep: str, kind: str, rows_per_file: int) -> KindCompaction:
    done = KindCompaction(kind)
    listing = list_kind(files, sweep, kind, stat=True)
    served = servable(files, listing, kind)  # the views' own screen: what they refuse is never an input
    done.left_out = served.foreign + served.unreadable
    refused = frozenset(v.file for v in done.left_out)
    resolution = served.resolution
    by_path = {s.path: s for s in resolution.sources}
    complete = completed_keys(files, sweep) if kind == "metrics" else None
    singles = [e for k, e in listing.singles.items() if (complete is None or k in complete) and e.path not in refused]
    compacted_inputs: list[Entry] = []
    for entry in listing.compacted:
        if entry.path in refused:
            continue
        rows = files.read_metadata(entry.path).num_rows
        if rows < rows_per_file // 2 or entry.path in resolution.shadowed or entry.path in resolution.superseded:
            compacted_inputs.append(entry)
    if len(singles) + len(compacted_inputs) <= 1 and not (resolution.shadowed or resolution.superseded):
        return done
    done.files_in = len(singles) + len(compacted_inputs)
    sources = [Source(e.path) for e in singles] + [by_path[e.path] for e in compacted_inputs if e.path in by_path]
    parts = kind_dataset(files, kind, sources)
    try:
        table = pa.concat_tables([p.to_table() if not isinstance(p, pa.Table) else p for p in parts])
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"cannot compact {sweep}/{kind}: {str(exc).strip()}; run `explorer check`") from None
    table = table.sort_by([(k, "ascending") for k in SORT_KEYS[kind]]).combine_chunks()
    generation = _generation()
    directory = kind_dir(files.root, sweep, kind)
    written: list[str] = []
    try:
        for n, part in enumerate(_cut(table, KEY_COLUMN[kind], rows_per_file)):
            path = join(directory, compacted_name(generation, n))
            files.put(path, parquet_bytes(part, compression="zstd"))
            written.append(path)
            back = files.read_table(path)
            if not same_content(back, part):
                raise StoreError(f"compaction of {sweep}/{kind}: {files.display(path)} does not read back as written; originals kept")
    except BaseException:
        for path in written:
            files.delete(path)
        raise
    done.files_out, done.rows = len(written), table.num_rows
    for entry in singles:
        if _remove_unchanged(files, entry):
            done.removed += 1
        else:
            done.kept_changed += 1
    for entry in compacted_inputs:
        files.delete(entry.path)
        done.removed += 1
    return done


# Test hook: called with a small input's path just before compaction takes it away (the moment a
# concurrent rewrite of that trial would be lost if inputs were compared, then deleted).
_before_take_away = None


def _changed(entry: Entry, now: Entry | None) -> bool:
    return now is None or now.size != entry.size or bool(entry.mtime and now.mtime and now.mtime != entry.mtime)


def _remove_unchanged(files: Files, entry: Entry) -> bool:
    """Remove a small input unless it was rewritten since it was read; True when removed.

    Local disk: the file is first renamed aside (atomic), then the moved file is compared with
    what was read. A rewrite before the rename is caught by the comparison and the file goes
    back (a hard link, which never replaces a newer file written meanwhile); a rewrite after
    the rename creates a new file at the name, which compaction never touches. Object storage
    has no rename: compare, then delete (a rewrite in between, within milliseconds, can lose
    that trial's newest rows; the next run of the trial restores them).
    """
    if _before_take_away is not None:
        _before_take_away(entry.path)
    if not files.is_local:
        if _changed(entry, files.info(entry.path)):
            return False
        files.delete(entry.path)
        return True
    aside = temporary_path(entry.path, writer_token("compacting"))
    try:
        os.rename(entry.path, aside)
    except FileNotFoundError:
        return False
    try:
        if not _changed(entry, files.info(aside)):
            files.delete(aside)
            return True
    except BaseException:  # interrupted: put the input back (its rows are also compacted)
        _put_back(aside, entry.path)
        raise
    _put_back(aside, entry.path)
    return False


def _put_back(aside: str, path: str) -> None:
    """Move ``aside`` back to ``path`` unless a newer file is there now (which then wins)."""
    try:
        os.link(aside, path)
    except FileExistsError:
        pass
    except FileNotFoundError:
        return
    os.remove(aside)


def compact(files: Files, sweep: str, rows_per_file: int = 4_000_000, kinds=DATA_KINDS) -> CompactionReport:
    """Compact one sweep (see the module docstring); safe to interrupt and to rerun.

    Args:
        rows_per_file: target size of a compacted file; one trial is never split.
        kinds: the kinds to compact (default all; a sweep's end compacts ``("trials",)``, which
            makes the next start's status lookup read one file, and ``metrics`` while its small
            files are few enough to merge in memory). Each kind keeps every
            guarantee above on its own: metrics inputs are chosen by the trials rows, which
            compacting trials never loses.

    Returns:
        A CompactionReport with, per kind, files read and written, rows and files removed.

    Raises:
        InvalidNameError: a bad sweep name or kind. StoreError: an unreadable input (run
            check) or a part that does not read back as written (nothing removed).
    """
    check_sweep(sweep)
    if isinstance(kinds, str):
        kinds = (kinds,)
    chosen = {check_kind(kind) for kind in kinds}
    if rows_per_file < 1:
        raise ValueError(f"rows_per_file must be positive, got {rows_per_file}")
    started = time.perf_counter()
    report = CompactionReport(sweep)
    # metrics first: its inputs are chosen by the trials rows, which compaction never loses.
    for kind in DATA_KINDS:
        if kind in chosen:
            report.kinds.append(_compact_kind(files, sweep, kind, rows_per_file))
    report.temporaries_removed = remove_temporaries(files, sweep)
    report.seconds = time.perf_counter() - started
    return report
