"""SQL over the store: DuckDB views ``metrics``, ``trials``, ``fits``, ``rounds``, ``comparisons``,
``optima`` and ``references``, and ``points`` (per point and step, the seeds' bias and fluctuation: ``store.points``) over ``metrics``,
``latest_fits`` (the newest fit of each question: ``store.latest_fits``) over ``fits``.

Each view scans a ``pyarrow.dataset`` of exactly the files that serve its rows (one file per
key, see ``catalog.resolve``), so it works the same on local disk and on object storage and
needs no DuckDB extension. The views are a snapshot of the files present at ``connect``: a
connection opened later sees trials written since. Temporary, foreign and (for ``check``)
unreadable files are never scanned.

A read-only connection (the CLI's) cannot read or write files by itself: DuckDB's external
access is disabled and the setting locked once the views are registered.
"""
from __future__ import annotations

import math
import re

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from .catalog import Source, list_kind, list_references, list_sweeps
from .errors import StoreQueryError
from .interrupt import interruptible, memory_limit_bytes
from .files import Files
from .layout import DATA_KINDS, check_sweep
from .latest_fits import LATEST_FITS_VIEW, create_latest_fits_view
from .points import POINTS_VIEW, create_points_view
from .printable import printable
from .schema import KEY_COLUMN, read_defaults, schema
from .screen import QUARANTINE_HINT, Verdict, parquet_format, servable, unreadable_error

VIEWS = DATA_KINDS + ("references",)
# Views defined in SQL over the kinds' views: name -> the kind views they read.
DERIVED_VIEWS = {POINTS_VIEW: ("metrics",), LATEST_FITS_VIEW: ("fits",)}
VIEW_NAMES = VIEWS + tuple(DERIVED_VIEWS)  # every view a connection has (what `explorer sql --help` lists)


def kind_sources(files: Files, kind: str, sweep: str | None = None, exclude: frozenset[str] = frozenset(),
                 left_out: list[Verdict] | None = None, unreadable: str = "raise",
                 fragments: dict | None = None) -> list[Source]:
    """The files (and key filters) that serve the rows of one kind, over one or all sweeps.

    Only files passing ``screen.screen_file`` serve rows (the rule ``check`` applies too).

    Args:
        left_out: when given, receives the verdicts on the files left out (foreign ones, and
            unreadable ones when ``unreadable="skip"``).
        unreadable: "raise" (UnreadableFileError naming the file and ``explorer check
            --quarantine``) or "skip".
        fragments: receives ``path -> fragment`` with footers already read (for ``kind_dataset``).
    """
    if kind == "references":
        listing = list_references(files, stat=True)
        served = [servable(files, listing, kind, exclude)]
    else:
        sweeps = [check_sweep(sweep)] if sweep is not None else list_sweeps(files)
        served = [servable(files, list_kind(files, name, kind, stat=True), kind, exclude) for name in sweeps]
    sources: list[Source] = []
    bad_files: list[Verdict] = []
    for one in served:
        sources += one.resolution.sources
        if fragments is not None:
            fragments.update(one.fragments)
        bad_files += one.unreadable
        if left_out is not None:
            left_out += one.foreign
    if bad_files and unreadable == "raise":
        raise unreadable_error(bad_files)
    if left_out is not None:
        left_out += bad_files
    return sources


def kind_dataset(files: Files, kind: str, sources: list[Source], fragments: dict | None = None) -> list[ds.Dataset | pa.Table]:
    """Datasets reading ``sources`` with the kind's schema (an empty table when there are none).

    Args:
        fragments: ``path -> fragment`` whose footers were read already (by the screening): the
            scan then does not read them again.
    """
    target = schema(kind)
    fmt = parquet_format(files)
    fragments = fragments or {}

    def dataset(paths: list[str]) -> ds.Dataset:
        parts = [fragments.get(p) or fmt.make_fragment(p, filesystem=files.fs) for p in paths]
        return ds.FileSystemDataset(parts, schema=target, format=fmt, filesystem=files.fs)

    plain = [s.path for s in sources if s.keep is None]
    parts: list[ds.Dataset | pa.Table] = []
    if plain:
        parts.append(dataset(plain))
    for source in sources:
        if source.keep is not None:
            one = dataset([source.path])
            parts.append(one.filter(pc.field(KEY_COLUMN[kind]).isin(pa.array(sorted(source.keep), pa.string()))))
    return parts or [target.empty_table()]


def with_read_defaults(kind: str, table: pa.Table) -> pa.Table:
    """``table`` (rows of ``kind``) as the views give it: a column's nulls as its ``read_null_as``."""
    for column, value in read_defaults(kind).items():
        i = table.schema.get_field_index(column)
        if i >= 0 and table.column(i).null_count:
            table = table.set_column(i, table.field(i), pc.fill_null(table.column(i), value))
    return table


def register_kind(con: duckdb.DuckDBPyConnection, kind: str, parts: list[ds.Dataset | pa.Table]) -> None:
    """The view ``kind`` on ``con`` over ``parts`` (datasets or tables of the kind's schema), a
    column's nulls read as its ``read_null_as`` (lr_scaling's mean_field)."""
    defaults = read_defaults(kind)
    if len(parts) == 1 and not defaults:
        con.register(kind, parts[0])
        return
    names = []
    for i, part in enumerate(parts):
        names.append(f"_{kind}_{i}")
        con.register(names[-1], part)
    star = "*"
    if defaults:
        star += " REPLACE (" + ", ".join(f"coalesce(\"{c}\", '{v}') AS \"{c}\"" for c, v in defaults.items()) + ")"
    con.execute(f'CREATE VIEW "{kind}" AS ' + " UNION ALL ".join(f"SELECT {star} FROM {n}" for n in names))


def table_connection(kind: str, parts: list[ds.Dataset | pa.Table]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection whose one view ``kind`` holds ``parts`` (``register_kind``:
    rows the caller already read, e.g. the adaptive sweep's kept rows), its progress bar off as
    ``connect``'s connections have it."""
    con = duckdb.connect()
    register_kind(con, kind, parts)
    con.execute("SET enable_progress_bar = false")  # as the store's connections
    return con


def probe_filter(con: duckdb.DuckDBPyConnection, where: str, table: str = "metrics") -> None:
    """Run the condition ``where`` on ``table`` without reading a row, so that a filter the rows
    cannot take fails here (``duckdb.Error``: an unknown column, a type mismatch), before a query
    that scans them."""
    con.execute(f'SELECT * FROM "{table}" WHERE ({where}) LIMIT 0').fetchall()


def column_names(con: duckdb.DuckDBPyConnection, table: str = "metrics") -> list[str]:
    """The column names of the view or table ``table`` on ``con`` (``duckdb.Error`` when it has none)."""
    return [str(row[0]) for row in con.execute(f'DESCRIBE "{table}"').fetchall()]


class LeftOutFilesWarning(UserWarning):
    """The views left out files that match no schema version of their kind (see ``explorer check``)."""


def left_out_message(left_out: list[Verdict]) -> str:
    first = left_out[0]
    return (f"the views left out {len(left_out)} file(s) that are not store data "
            f"(e.g. {printable(first.path)}: {printable(first.reason)}); run `explorer check` to list them")


def connect(
    files: Files, sweep: str | None = None, read_only: bool = False, exclude: frozenset[str] = frozenset(),
    left_out: list[Verdict] | None = None, unreadable: str = "raise", views=None, memory_limit: str | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the store's views.

    Args:
        sweep: only this sweep's rows in metrics, trials and fits (references are shared).
        read_only: forbid the connection any file access of its own (for the CLI).
        exclude: paths never to scan.
        left_out: receives the verdicts on the files the views left out (foreign files).
        unreadable: "raise" when a data file cannot be read (default), or "skip" it.
        views: only these views (default all of VIEWS and DERIVED_VIEWS; see ``views_of``).
        memory_limit: DuckDB's memory limit, ``"8GB"``, ``"512MiB"`` or ``"30%"`` of the machine's
            memory (default ``SQL_MEMORY_SHARE`` of it; ``interrupt.memory_limit_bytes``). A query
            that needs more spills to disk or fails with DuckDB's out-of-memory error.

    Raises:
        InvalidNameError: a bad sweep name. UnreadableFileError: a data file that cannot be read
        (the message names it and ``explorer check --quarantine``). StoreError: the store cannot
        be listed.
    """
    limit = memory_limit_bytes(memory_limit)
    con = duckdb.connect()
    if views is not None:
        views = set(views).union(*(DERIVED_VIEWS[v] for v in views if v in DERIVED_VIEWS))
    for kind in VIEWS if views is None else [v for v in VIEWS if v in views]:
        fragments: dict = {}
        sources = kind_sources(files, kind, sweep, exclude, left_out, unreadable, fragments)
        register_kind(con, kind, kind_dataset(files, kind, sources, fragments))
    con.execute(f"SET memory_limit = '{limit // 2**20}MiB'")
    con.execute("SET enable_progress_bar = false")  # DuckDB's bar on stderr would break one-line output
    if views is None or POINTS_VIEW in views:
        create_points_view(con)
    if views is None or LATEST_FITS_VIEW in views:
        create_latest_fits_view(con)
    if read_only:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con


def views_of(sql: str) -> frozenset[str] | None:
    """The store views a statement names (by DuckDB's parser), or None for "all of them" (none
    named, e.g. SHOW TABLES, or a statement the parser cannot list)."""
    try:
        names = {name.lower() for name in duckdb.get_table_names(sql)}
    except (duckdb.Error, TypeError, ValueError):
        return None
    used = frozenset(names & (set(VIEWS) | set(DERIVED_VIEWS)))
    return used or None


_MISSING_TABLE = re.compile(r"Table with name .+ does not exist", re.IGNORECASE)


def missing_view(exc: Exception) -> bool:
    """True when a query failed for a table that is not registered: a store view the parser
    did not see, or a name that is no view (a typo), whose "Did you mean" DuckDB draws only
    from the views registered: both are worth a run over every view."""
    return bool(_MISSING_TABLE.search(str(exc)))


# DuckDB lists a function's candidate signatures one per indented line, sometimes fifty of them.
_CANDIDATES_SHOWN = 3


def _message(exc: Exception) -> str:
    """DuckDB's message on one line: its first line, its hints ("Did you mean "metrics"?",
    "Candidate bindings: ...", a few candidate signatures) and the "LINE n: ..." context if any.

    The caret line under the context is dropped (it points at a column of a line it is no longer
    under), and so are the candidates past ``_CANDIDATES_SHOWN`` (counted instead).
    """
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    hints, context, candidates = [], [], []
    for raw in str(exc).strip().splitlines()[1:]:
        line = raw.strip()
        if not line or set(line) == {"^"}:
            continue
        if line.startswith("LINE "):
            context.append(line)
        elif raw.startswith("\t") and hints and hints[-1].endswith(":"):
            candidates.append(line)  # one signature under "Candidate functions:"
        else:
            hints.append(line)
    if candidates:
        more = len(candidates) - _CANDIDATES_SHOWN
        hints[-1] += " " + "; ".join(candidates[:_CANDIDATES_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    message = " ".join(lines[:1] + hints + context[:1])
    if "reading the stream registered as" in message:  # a store file failed to scan
        message += f" (a store file cannot be read: {QUARANTINE_HINT}; `explorer check` lists it)"
    return message


# The longest query time limit: past it a limit limits nothing, and a timer of 1e308 s overflows.
MAX_TIME_LIMIT_S = 7 * 86_400


def check_time_limit(timeout_s: float | None) -> None:
    """Refuse a query time limit that limits nothing (NaN, inf, over a week) or stops everything (<= 0).

    Raises:
        StoreQueryError: naming the value.
    """
    if timeout_s is not None and not (math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIME_LIMIT_S):
        raise StoreQueryError(f"time limit {timeout_s:g} s: expected a number of seconds above 0 and at most "
                              f"{MAX_TIME_LIMIT_S:,} (a week)")


def run(con: duckdb.DuckDBPyConnection, sql: str, timeout_s: float | None = None) -> pa.Table:
    """Execute SQL and fetch the whole result as Arrow (``interruptible``: Ctrl-C and SIGTERM
    stop it at once, and so does ``timeout_s``).

    Raises:
        StoreQueryError: DuckDB rejected the query (its message, unchanged).
        QueryTimeout: it ran longer than ``timeout_s`` seconds (it was interrupted).
    """
    check_time_limit(timeout_s)

    def fetch() -> pa.Table:
        result = con.sql(sql)
        if result is None:  # a statement without a result (SET, CREATE ...)
            return pa.table({})
        return result.to_arrow_table()

    try:
        return interruptible(con, fetch, timeout_s)
    except duckdb.Error as exc:
        raise StoreQueryError(_message(exc)) from None


# -- the SQL sandbox of read-only connections --------------------------------------------------
_READ_PRAGMAS = frozenset({
    "table_info", "show", "show_tables", "show_tables_expanded", "database_list", "version",
    "platform", "storage_info", "database_size", "functions", "collations",
})
_EXPLAIN = re.compile(r"\s*EXPLAIN\s+(?:ANALYZE\s+)?(.*)\Z", re.IGNORECASE | re.DOTALL)
_PRAGMA = re.compile(r"\s*PRAGMA\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


def check_read_only(sql: str) -> None:
    """Refuse anything but one query: SELECT (WITH ..., VALUES, FROM ..., DESCRIBE, SHOW,
    SUMMARIZE), EXPLAIN [ANALYZE] of such a query, or a reading PRAGMA (table_info, show, ...).

    The statement types come from DuckDB's own parser (``duckdb.extract_statements``).

    Raises:
        StoreQueryError: several statements, a statement that is not a query, or a parse error.
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise StoreQueryError(_message(exc)) from None
    if len(statements) != 1:
        raise StoreQueryError(f"give exactly one query (got {len(statements)} statements); the SQL sandbox is read-only")
    statement = statements[0]
    kind = statement.type
    if kind == duckdb.StatementType.SELECT:
        return
    text = statement.query
    if kind == duckdb.StatementType.EXPLAIN:
        inner = _EXPLAIN.match(text)
        if inner:
            check_read_only(inner.group(1))
            return
    if kind == duckdb.StatementType.PRAGMA:
        name = _PRAGMA.match(text)
        if name and name.group(1).lower() in _READ_PRAGMAS:
            return
    first = text.strip().split(None, 1)[0].upper() if text.strip() else kind.name
    raise StoreQueryError(
        f"only queries are allowed (SELECT, WITH, VALUES, DESCRIBE, SHOW, EXPLAIN), not {first} "
        f"({kind.name.lower()} statement); the SQL sandbox is read-only"
    )


# -- filters given by users (--where) ----------------------------------------------------------
def validate_filter(expr: str) -> str:
    """Check that ``expr`` is ONE SQL boolean expression, safe to paste as ``AND (<expr>)``.

    It must parse as the whole WHERE clause of a query, its parentheses must balance outside
    string literals and quoted names (so ``1=1) OR (1=1`` cannot close the caller's
    parenthesis), and it may hold no ``;``, no comment (``--``, ``/*``) and no ``$`` outside
    literals. Returns ``expr`` stripped.

    Raises:
        StoreQueryError: naming what is wrong with the filter.
    """
    if not isinstance(expr, str) or not expr.strip():
        raise StoreQueryError("empty filter: give a SQL condition such as \"alpha = 1\"")
    text = expr.strip()
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            backslash = c == "'" and i > 0 and text[i - 1] in "eE" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_"))
            j = i + 1
            while True:
                if j >= n:
                    raise StoreQueryError(f"filter {expr!r}: unterminated {'string' if c == chr(39) else 'quoted name'}")
                if backslash and text[j] == "\\":
                    j += 2
                    continue
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
            continue
        if text.startswith("--", i) or text.startswith("/*", i):
            raise StoreQueryError(f"filter {expr!r}: comments are not allowed in a filter")
        if c in ";$":
            raise StoreQueryError(f"filter {expr!r}: {c!r} is not allowed in a filter (one condition only)")
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                raise StoreQueryError(f"filter {expr!r}: a ')' closes a parenthesis the filter did not open")
        i += 1
    if depth:
        raise StoreQueryError(f"filter {expr!r}: {depth} unclosed parenthesis(es)")
    try:
        statements = duckdb.extract_statements(f"SELECT 1 WHERE ({text}\n)")
    except duckdb.Error as exc:
        raise StoreQueryError(f"filter {expr!r} is not one SQL condition: {_message(exc)}") from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise StoreQueryError(f"filter {expr!r} is not one SQL condition")
    return text
