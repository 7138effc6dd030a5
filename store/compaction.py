"""``compact``: merge a sweep's small files into a few large ones, losing nothing.

For each kind (metrics, trials, fits, rounds, comparisons, optima) of one sweep, and for the
store's reference cache (``references``: one small file per reference until merged):
0. screening: the files the views would leave out (``screen.screen_listing``: foreign, of no known
   schema version, holding another key's rows, unreadable) are never inputs: they stay where
   they are, untouched, and the report lists them (``explorer check --quarantine`` moves the
   unreadable ones aside);
1. inputs: every small file (for metrics, only those of complete trials, i.e. with a trials row,
   so that a rerun of an interrupted trial never meets a compacted copy), compacted files under
   half of ``rows_per_file``, and compacted files partly or wholly shadowed by newer copies;
2. read exactly the rows the views serve from them (the screened ``catalog.resolve``: one copy
   per key) one batch of keys at a time in key order (``BATCH_BYTES``, ``BATCH_FILES``), sort
   each batch by key (and seed, step), and stream it into parts of at most ``rows_per_file`` rows
   cut at key boundaries (``cut_parts`` on the whole table gives the same parts), each written
   through a Parquet writer into a hidden temporary and published as
   ``compacted.<gen>.<n>.parquet``. Memory holds one batch, never the inputs or a part;
3. read each part back one record batch at a time and compare its ``ContentDigest`` with that
   of what was meant (row count, columns, types, every value bit for bit); any difference
   removes the new parts and stops, originals untouched;
4. only then delete the inputs. A small file that changed since it was read (a trial rewritten
   meanwhile) is kept, and being a small file it keeps precedence over the compacted copy. On
   local disk each input is renamed aside before it is compared and deleted, so a rewrite
   racing the deletion is never lost (``_remove_unchanged``).
A time budget (``budget_s``) stops step 2 between batches: what was merged goes through steps
3 and 4, the rest stays for the next compaction.
An interruption anywhere leaves every row readable: before step 4 the new parts are extra
copies that the resolution rule ignores or prefers identically, and a later ``compact`` removes
them. Readers racing a compaction may fail with "file not found" and should simply rerun
(a reference read by key looks in the compacted files then: ``references.read``).
"""
from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .catalog import Source, completed_keys, file_keys, list_kind, list_references, resolve
from .cleanup import remove_temporaries
from .errors import StoreError
from .files import Entry, Files
from .content_digest import ContentDigest
from .layout import (
    DATA_KINDS, REFERENCES_DIR, check_kind, check_sweep, compacted_name, join, kind_dir, references_dir, single_key, temporary_path,
)
from .owners import writer_token
from .query import kind_dataset
from .printable import printable
from .schema import KEY_COLUMN
from .screen import Verdict, screen_listing
from .status_counts import StatusTally
from .write import ROW_GROUP_ROWS

SORT_KEYS = {"metrics": ["trial_key", "seed", "step"], "trials": ["trial_key"], "fits": ["fit_id"],
             "rounds": ["round_id", "entry", "trial_key", "parameter"], "comparisons": ["comparison_id", "parameter"],
             "optima": ["optima_id", "parameter"], "references": ["ref_key", "name"]}


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
    sweep: str | None  # None: the reference cache alone
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
        where = f"sweep {self.sweep}" if self.sweep is not None else "reference cache"
        return f"{where}: {done}{kept} in {self.seconds:.2f} s"

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


def cut_parts(table: pa.Table, key_column: str, rows_per_file: int) -> list[pa.Table]:
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


def _inputs(files: Files, sweep: str, kind: str, listing, rows_per_file: int, done: KindCompaction):
    """The inputs of one kind directory: (small files, compacted files, key -> the files that
    serve it, resolution), screened as the views screen them (footers read one at a time, never
    all kept: 10^5 footers would hold gigabytes)."""
    verdicts = screen_listing(files, listing, kind)
    done.left_out = verdicts
    refused = frozenset(v.file for v in verdicts)
    resolution = resolve(files, listing, kind, refused)
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
    return singles, compacted_inputs, resolution, by_path


# How much a batch of inputs may hold (their bytes on disk; rows in memory take a few times more):
# compaction reads its inputs one batch at a time, in key order, so its memory stays this size
# whatever the number of files.
BATCH_BYTES = 32 * 2**20
BATCH_FILES = 512
# References are read by key (``references.read_compacted``): small row groups, each with its
# smallest and largest key in the footer, so that a lookup reads one small row group.
REFERENCE_ROW_GROUP_ROWS = 1024


def _batches(files: Files, kind: str, singles: list[Entry], compacted: list[Entry], by_path: dict):
    """Batches of (key, source) in key order, each within BATCH_BYTES and BATCH_FILES: a small
    file is one key; a compacted input serves the keys the resolution gives it."""
    key_column = KEY_COLUMN[kind]
    keyed: list[tuple[str, str, int]] = [(key, e.path, e.size or 0) for key, e in
                                         ((single_key(e.name), e) for e in singles)]
    for entry in compacted:
        source = by_path.get(entry.path)
        if source is None:  # superseded: every key is served elsewhere; only removed
            continue
        keys = source.keep if source.keep is not None else file_keys(files, entry, key_column)
        share = (entry.size or 0) // max(len(keys), 1)
        keyed += [(key, entry.path, share) for key in keys]
    keyed.sort()
    batch: list[tuple[str, str]] = []
    size = 0
    for key, path, nbytes in keyed:
        if batch and (size + nbytes > BATCH_BYTES or len(batch) >= BATCH_FILES) and key != batch[-1][0]:
            yield batch
            batch, size = [], 0
        batch.append((key, path))
        size += nbytes
    if batch:
        yield batch


def _read_batch(files: Files, kind: str, batch: list[tuple[str, str]], sweep: str) -> pa.Table:
    """The rows of one batch, sorted as compaction writes them."""
    wanted: dict[str, set[str]] = {}
    for key, path in batch:
        wanted.setdefault(path, set()).add(key)
    sources = []
    for path, keys in wanted.items():
        small = single_key(path.rpartition("/")[2]) is not None
        sources.append(Source(path) if small else Source(path, frozenset(keys)))
    try:
        parts = kind_dataset(files, kind, sources)
        table = pa.concat_tables([p.to_table() if not isinstance(p, pa.Table) else p for p in parts])
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"cannot compact {sweep}/{kind}: {str(exc).strip()}; run `explorer check`") from None
    return table.sort_by([(k, "ascending") for k in SORT_KEYS[kind]]).combine_chunks()


class _Parts:
    """Writes key-sorted batches into parts of at most ``rows_per_file`` rows, cut between keys
    (one key larger than a part is a part of its own), each streamed into a Parquet writer and
    fingerprinted; ``cut_parts`` on the whole table gives the same parts."""

    def __init__(self, files: Files, directory: str, kind: str, rows_per_file: int):
        self.files, self.directory, self.kind, self.rows_per_file = files, directory, kind, rows_per_file
        self.generation = _generation()
        self.written: list[tuple[str, ContentDigest]] = []
        self.rows = 0
        self._open = None  # (path, writer context, writer, fingerprint, rows, status tally or None)

    def add(self, table: pa.Table) -> None:
        keys = table.column(KEY_COLUMN[self.kind])
        n_rows = table.num_rows
        if n_rows > 1:  # where a key's run of rows ends
            change = pc.not_equal(keys.slice(1), keys.slice(0, n_rows - 1)).to_numpy(zero_copy_only=False)
            ends = np.append(np.flatnonzero(change) + 1, n_rows)
        else:
            ends = np.array([n_rows])
        start = first = 0  # rows [start, first) wait to be written into the open part
        for end in ends.tolist():
            held = self._held() + (first - start)
            if held and held + (end - first) > self.rows_per_file:
                if first > start:
                    self._write(table.slice(start, first - start))
                self._close()
                start = first
            first = end
        if start < n_rows:
            self._write(table.slice(start, n_rows - start))

    def _held(self) -> int:
        return self._open[4] if self._open else 0

    def _write(self, table: pa.Table) -> None:
        if self._open is None:
            path = join(self.directory, compacted_name(self.generation, len(self.written)))
            context = self.files.put_stream(path)
            sink = context.__enter__()
            writer = pq.ParquetWriter(sink, table.schema, compression="zstd")
            # a trials part keeps its rows by status in its footer: counted without reading rows
            self._open = [path, context, writer, ContentDigest(), 0, StatusTally() if self.kind == "trials" else None]
        self._open[2].write_table(table, row_group_size=REFERENCE_ROW_GROUP_ROWS if self.kind == REFERENCES_DIR else ROW_GROUP_ROWS)
        self._open[3].add(table)
        self._open[4] += table.num_rows
        if self._open[5] is not None:
            self._open[5].add(table)
        self.rows += table.num_rows

    def _close(self) -> None:
        if self._open is None:
            return
        path, context, writer, fingerprint, _, tally = self._open
        self._open = None
        try:
            if tally is not None:
                writer.add_key_value_metadata(tally.metadata())
            writer.close()
        except BaseException as exc:
            context.__exit__(type(exc), exc, exc.__traceback__)
            raise
        context.__exit__(None, None, None)
        self.written.append((path, fingerprint))

    def finish(self) -> None:
        self._close()

    def abandon(self) -> None:
        """Remove every part written or being written (the originals stay)."""
        if self._open is not None:
            path, context, writer = self._open[:3]
            self._open = None
            try:
                writer.close()
            except BaseException:
                pass
            error = StoreError("compaction abandoned")
            try:
                context.__exit__(StoreError, error, None)
            except BaseException:
                pass
        for path, _ in self.written:
            self.files.delete(path)


def _read_back(files: Files, path: str) -> ContentDigest:
    """The fingerprint of a written part, read back one record batch at a time."""
    back = ContentDigest()
    parquet = pq.ParquetFile(path, filesystem=files.fs) if files.is_local is False else pq.ParquetFile(path)
    try:
        for batch in parquet.iter_batches(batch_size=64 * 1024):
            back.add(pa.Table.from_batches([batch]))
    finally:
        parquet.close()
    return back


def _compact_kind(files: Files, sweep: str | None, kind: str, rows_per_file: int, deadline: float | None = None) -> KindCompaction:
    done = KindCompaction(kind)
    if kind == "references":
        listing = list_references(files, stat=True)
        directory = references_dir(files.root)
    else:
        listing = list_kind(files, sweep, kind, stat=True)
        directory = kind_dir(files.root, sweep, kind)
    singles, compacted_inputs, resolution, by_path = _inputs(files, sweep, kind, listing, rows_per_file, done)
    if len(singles) + len(compacted_inputs) <= 1 and not (resolution.shadowed or resolution.superseded):
        return done
    where = sweep if kind != "references" else "the store"
    parts = _Parts(files, directory, kind, rows_per_file)
    taken: set[str] = set()  # keys written (the inputs of which may go)
    try:
        for batch in _batches(files, kind, singles, compacted_inputs, by_path):
            if deadline is not None and taken and time.monotonic() > deadline:
                break
            table = _read_batch(files, kind, batch, where)
            if table.num_rows:
                parts.add(table)
            if kind == REFERENCES_DIR:  # a reference without arrays keeps its meta in its file's footer: it stays
                taken.update(pc.unique(table.column(KEY_COLUMN[kind])).to_pylist())
            else:
                taken.update(key for key, _ in batch)
        parts.finish()
        for path, meant in parts.written:
            if not same_content(_read_back(files, path).table(), meant.table()):
                raise StoreError(f"compaction of {where}/{kind}: {files.display(path)} does not read back as written; originals kept")
    except BaseException:
        parts.abandon()
        raise
    done.files_out, done.rows = len(parts.written), parts.rows
    done.files_in = 0
    for entry in singles:
        if single_key(entry.name) not in taken:
            continue  # the time budget ran out before it: it stays for the next compaction
        done.files_in += 1
        if _remove_unchanged(files, entry):
            done.removed += 1
        else:
            done.kept_changed += 1
    for entry in compacted_inputs:
        source = by_path.get(entry.path)
        keys = (source.keep if source.keep is not None else file_keys(files, entry, KEY_COLUMN[kind])) if source else frozenset()
        if keys - taken:
            continue  # partly merged (time budget): its merged keys are now shadowed, a later compaction ends it
        done.files_in += 1
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


def compact(files: Files, sweep: str | None, rows_per_file: int = 4_000_000, kinds=DATA_KINDS,
            budget_s: float | None = None) -> CompactionReport:
    """Compact one sweep (see the module docstring); safe to interrupt and to rerun.

    Inputs are read one batch of keys at a time (``BATCH_BYTES``) and streamed into the parts,
    and the read-back check compares fingerprints: memory stays bounded whatever the number of
    files or rows.

    Args:
        sweep: the sweep; None with ``kinds=("references",)`` compacts the reference cache alone.
        rows_per_file: target size of a compacted file; one trial is never split.
        kinds: the kinds to compact (default all; ``"references"`` adds the store's reference
            cache, shared by every sweep). A sweep's end compacts ``("trials", "metrics",
            "references")`` within its budget (``explorer.sweeps.tracking.cleanup``). Each kind keeps
            every guarantee above on its own: metrics inputs are chosen by the trials rows,
            which compacting trials never loses.
        budget_s: per kind: past this many seconds no new batch of that kind is started: what
            was merged is checked and its inputs removed, the rest stays for the next
            compaction (None: no limit).

    Returns:
        A CompactionReport with, per kind, files read and written, rows and files removed.

    Raises:
        InvalidNameError: a bad sweep name or kind. StoreError: an unreadable input (run
            check) or a part that does not read back as written (nothing removed).
    """
    if isinstance(kinds, str):
        kinds = (kinds,)
    chosen = {kind if kind == REFERENCES_DIR else check_kind(kind) for kind in kinds}
    if sweep is not None or chosen - {REFERENCES_DIR}:
        check_sweep(sweep)
    if rows_per_file < 1:
        raise ValueError(f"rows_per_file must be positive, got {rows_per_file}")
    started = time.perf_counter()
    report = CompactionReport(sweep)
    # metrics first: its inputs are chosen by the trials rows, which compaction never loses.
    for kind in DATA_KINDS + (REFERENCES_DIR,):
        if kind in chosen:
            deadline = None if budget_s is None else time.monotonic() + budget_s
            report.kinds.append(_compact_kind(files, sweep, kind, rows_per_file, deadline))
    if sweep is not None:
        report.temporaries_removed = remove_temporaries(files, sweep)
    report.seconds = time.perf_counter() - started
    return report
