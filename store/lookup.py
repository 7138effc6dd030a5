"""Per-trial lookups without SQL: one column of a sweep's ``trials`` rows, by trial key.

A sweep start needs the status of every trial the store holds (which are final, which failed):
that is two columns of the ``trials`` kind, read through a ``pyarrow.dataset`` of exactly the
files that serve them (``catalog.resolve``: one file per key), with no DuckDB connection and no
other view. Its cost is one directory listing plus one file read per file: about 0.4 ms per
small file, a few milliseconds for a compacted file of 10^5 trials. Sweeps therefore compact
the ``trials`` kind when they end (``Store.compact(sweep, kinds=("trials",))``), so that the
next start reads one file.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds

from .catalog import Listing, Source, list_kind
from .errors import SchemaError, StoreError
from .files import Files
from .layout import check_sweep
from .query import kind_dataset, with_read_defaults
from .schema import COLUMNS, KEY_COLUMN
from .screen import servable, unreadable_error

_KIND = "trials"
_READ_ATTEMPTS = 3


def trial_values(files: Files, sweep: str, column: str, keys=None) -> dict[str, object]:
    """``trial_key -> value of column`` for the sweep's trials (only ``keys`` when given).

    Raises:
        InvalidNameError: a bad sweep name. SchemaError: a column the trials rows lack.
        StoreError: a file that cannot be read (run ``explorer check``).
    """
    check_sweep(sweep)
    names = [c.name for c in COLUMNS[_KIND]]
    if column not in names:
        raise SchemaError(f"the trials rows have no column {column!r}; they have: {', '.join(names)}")
    return read_again_if_moved(lambda: read_values(files, sweep, column, keys), sweep, _KIND)


def read_again_if_moved(read, sweep: str, kind: str):
    """``read()``, listed and read again when a file vanished meanwhile: a compaction running
    (every sweep compacts its trials when it ends) may delete a file between the listing and the
    read. Raises StoreError when it keeps happening."""
    for _ in range(_READ_ATTEMPTS - 1):
        try:
            return read()
        except FileNotFoundError:
            pass
    try:
        return read()
    except FileNotFoundError:
        raise StoreError(f"the {kind} files of sweep {sweep} kept changing while being read "
                         "(a compaction running?); try again") from None


def read_values(files: Files, sweep: str, column: str, keys) -> dict[str, object]:
    key_column = KEY_COLUMN[_KIND]
    wanted_columns = [key_column] if column == key_column else [key_column, column]
    values: dict[str, object] = {}
    for table in read_tables(files, sweep, _KIND, keys, wanted_columns):
        values.update(zip(table.column(0).to_pylist(), table.column(wanted_columns[-1]).to_pylist()))
    return values


def trial_rows(files: Files, sweep: str, kind: str, keys) -> pa.Table | None:
    """The rows of one kind (``metrics``) of the sweep's trials of ``keys``, read from exactly the
    files that serve them (None when none of the keys has rows).

    Raises:
        InvalidNameError: a bad sweep name. StoreError: a file that cannot be read.
    """
    check_sweep(sweep)
    tables = read_again_if_moved(lambda: read_tables(files, sweep, kind, keys, None), sweep, kind)
    return pa.concat_tables(tables) if tables else None


def read_tables(files: Files, sweep: str, kind: str, keys, columns: list[str] | None,
                listing: Listing | None = None) -> list[pa.Table]:
    """The ``columns`` (None: all) of the rows of ``kind`` serving ``keys`` (None: every key);
    ``listing``: of these files only (default: the kind's whole folder)."""
    if listing is None:
        listing = list_kind(files, sweep, kind, stat=True)
    served = servable(files, listing, kind)  # the views' rule: foreign files never serve rows
    if served.unreadable:
        raise unreadable_error(served.unreadable)
    resolution = served.resolution
    if keys is None:
        sources = resolution.sources
    else:
        by_path: dict[str, set[str]] = {}
        for key in keys:
            path = resolution.served.get(key)
            if path is not None:
                by_path.setdefault(path, set()).add(key)
        small = {entry.path for entry in listing.singles.values()}
        # A small file holds just its key; a compacted file is filtered to the keys asked for.
        sources = [Source(path, None if path in small else frozenset(wanted)) for path, wanted in by_path.items()]
    if not sources:
        return []
    try:
        return [with_read_defaults(kind, part.to_table(columns=columns) if isinstance(part, ds.Dataset)
                                   else (part if columns is None else part.select(columns)))
                for part in kind_dataset(files, kind, sources, served.fragments)]
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as exc:
        # The filesystem, not the error's wording, says whether a file went away mid-read.
        if any(not files.exists(source.path) for source in sources):
            raise FileNotFoundError(str(exc)) from None
        raise StoreError(f"cannot read the {kind} of sweep {sweep}: {str(exc).strip()}; run `explorer check`") from None
