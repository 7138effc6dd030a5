"""Render a query result (an Arrow table) as text: an aligned table, CSV or JSON.

The table and CSV go to a terminal, and a store's text is whoever wrote it: their cells and
column names show control, format and separator characters as visible escapes
(``store.printable``: an OSC title sequence, a BEL or a U+202E cannot act on the terminal).
JSON is for programs and keeps every value exact (its own escapes make it safe to print).
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math

import pyarrow as pa

from store import printable

FORMATS = ("table", "csv", "json")


def _plain(value):
    """A JSON-friendly value: NaN/inf -> null, times -> ISO text, bytes -> hex."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


def _cell(value) -> str:
    """One value as terminal text (``printable``: one line, no control characters)."""
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return printable(_plain(value))


def render(table: pa.Table, fmt: str = "table") -> str:
    """The table as text.

    Args:
        fmt: ``table`` (aligned columns, numbers right-aligned, a row count), ``csv`` (with a
            header) or ``json`` (an array of objects; NaN and infinities become null). Table and
            CSV escape non-printable characters (``store.printable``); JSON is exact.

    Raises:
        ValueError: an unknown format (the message lists the formats).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of: {', '.join(FORMATS)}")
    rows = table.to_pylist()
    names = table.column_names
    if fmt == "json":
        return json.dumps([{k: _plain(v) for k, v in row.items()} for row in rows], allow_nan=False) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([printable(n) for n in names])
        for row in rows:
            writer.writerow(["" if row[n] is None else _cell(row[n]) for n in names])
        return out.getvalue()
    cells = [[_cell(row[n]) for n in names] for row in rows]
    names = [printable(n) for n in names]
    numeric = [pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) for t in table.schema.types]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    lines = [line(names), "  ".join("-" * w for w in widths)] + [line(r) for r in cells]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines) + "\n"
