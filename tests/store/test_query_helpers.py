"""The store's query helpers for rows already read and for checking a filter: ``table_connection``
(a view over tables in memory, read defaults applied as the store's views apply them),
``probe_filter`` and ``column_names``."""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from store import column_names, probe_filter, schema, table_connection


def metric_rows(n: int) -> pa.Table:
    """``n`` metrics rows of the store's schema, every column null but trial_key, step and M."""
    columns = {f.name: pa.nulls(n, f.type) for f in schema("metrics")}
    columns.update(trial_key=pa.array([f"t{i}" for i in range(n)]), step=pa.array(range(n), pa.int64()),
                   M=pa.array([1 + i for i in range(n)], schema("metrics").field("M").type))
    return pa.table(columns, schema=schema("metrics"))


def test_table_connection_gives_the_rows_back_as_one_view_with_the_read_defaults():
    con = table_connection("metrics", [metric_rows(2), metric_rows(3)])
    try:
        assert con.execute("SELECT count(*) FROM metrics").fetchone() == (5,)
        assert column_names(con) == schema("metrics").names
        assert con.execute("SELECT count(*) FROM metrics WHERE optimizer IS NULL").fetchone() == (0,)  # read_null_as
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    finally:
        con.close()


def test_probe_filter_refuses_a_filter_the_rows_cannot_take():
    con = table_connection("metrics", [metric_rows(2)])
    try:
        probe_filter(con, "M > 1")
        with pytest.raises(duckdb.Error, match="width"):
            probe_filter(con, "width > 1")
        with pytest.raises(duckdb.Error):
            column_names(con, "nothing")
    finally:
        con.close()
