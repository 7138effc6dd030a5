"""The report cache: a report whose inputs have not changed is written again from its last build.

``build_report`` reads the store only through the analysis's queries, inside one
``query_cache`` block: its page, its charts' specs and its fits are a function of the options it
was given, the code (``fit_cache.code_fingerprint``) and the results of those queries. So a build
keeps, in the ``FitCache``'s folder:

- per options: the SQL of every query it ran (``queries``), those that failed (a view the store
  does not have) too;
- per options and the digest of those queries' results: what it made (``Built``).

A later build with the same options runs the same queries again (a second or less on a compacted
store) and hashes their results (every value, column and type: their Arrow stream, the rows in a
canonical order, since DuckDB returns an aggregate's rows in any order). The same digest means the
same inputs, so a report the build would make from them: it is written from what was kept, with the
fits not fitted again and the charts not drawn again. Any other digest (a trial added or
changed, a fit saved in between that a query reads, another code) is a miss and the report is
built in full, its queries' results already in hand. Not cached: a report with a comparison
(its own reads) or with exports. A query's error is part of the digest: the same error is the
same input (the build caught it), a query that now succeeds is a miss.

The options include the Vega bundle's sha256 (``chart_files.bundle_digest``): a page kept with
another bundle is never replayed, and a page read back that does not hold this bundle inline is a
miss (the cache's files are checked against their own sha256 too: ``FitCache``).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..analysis.data import cached_queries, query_table
from ..errors import QueryError
from .chart_files import vega_bundle
from .contents import Report


@dataclass
class Built:
    """What a build made, as the report cache keeps it: the report (its charts as their specs), the
    charts' specs and the page."""

    report: Report
    specs: dict
    page: str


def results_digest(con, queries: list[str]) -> str:
    """sha256 of ``queries`` and their results on ``con``, or the error of one that fails (a
    missing view, the build caught it): run inside its ``query_cache`` block, so a full build after
    a miss reads them from memory."""
    digest = hashlib.sha256()
    for sql in queries:
        try:
            table = query_table(con, sql)
        except QueryError as exc:
            digest.update(sql.encode() + b"\0error\0" + str(exc).encode() + b"\0")
            continue
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(_in_order(table))
        digest.update(sql.encode() + b"\0" + sink.getvalue().to_pybytes() + b"\0")
    return digest.hexdigest()


def _in_order(table: pa.Table) -> pa.Table:
    """The rows sorted by every column that sorts (not lists or structs): DuckDB returns the rows
    of an aggregate without ORDER BY in any order, which the report does not depend on, so one set
    of rows is one digest. Rows that tie on those columns keep their order: at worst a miss."""
    keys = [(name, "ascending") for name, kind in zip(table.column_names, table.schema.types)
            if not pa.types.is_nested(kind)]
    if not keys or table.num_rows < 2:
        return table
    return table.take(pc.sort_indices(table, sort_keys=keys))


def replayed(cache, con, options: dict) -> Built | None:
    """The build kept for ``options`` when every query it ran gives the same results on ``con``
    now; None otherwise (a miss: build the report)."""
    found, queries = cache.read("report-queries", options)
    if not found:
        return None
    digest = results_digest(con, queries)
    found, built = cache.read("report", {**options, "results": digest})
    if not found or not isinstance(built, Built) or vega_bundle() not in built.page:
        return None  # a kept page without this bundle inline (never written so, checked anyway): built again
    return built


def record(cache, con, options: dict, built: Built) -> None:
    """Keep ``built`` under ``options`` and the digest of every query run on ``con`` so far."""
    queries = list(cached_queries(con))  # those that failed too: the same error is the same input
    digest = results_digest(con, queries)
    report = built.report
    kept = Report(**{**report.__dict__, "charts": dict(built.specs)})  # specs, not Altair objects
    cache.keep("report", {**options, "results": digest}, Built(kept, built.specs, built.page))
    cache.keep("report-queries", options, queries)


__all__ = ["Built", "record", "replayed", "results_digest"]
