"""The read-only SQL of `explorer sql` runs queries only; a --where filter is one expression."""
from __future__ import annotations

import pytest
import store_testkit as kit

from store import StoreQueryError
from store.query import check_read_only, validate_filter


@pytest.fixture
def filled(local_store):
    key, rows, trial = kit.trial()
    local_store.write_trial("s", key, rows, trial)
    return local_store


@pytest.mark.parametrize("sql", [
    "CREATE TABLE x AS SELECT 1",
    "create view v as select * from metrics",
    "SELECT 1; CREATE TABLE x AS SELECT 1",
    "SELECT 1; SELECT 2",
    "INSERT INTO metrics SELECT * FROM metrics",
    "DROP VIEW metrics",
    "SET threads = 1",
    "ATTACH 'other.db'",
    "EXPLAIN ANALYZE CREATE TABLE y AS SELECT 1",
    "PRAGMA enable_profiling",
    "CALL pragma_table_info('metrics')",
    "COPY metrics TO 'x.parquet'",
])
def test_statements_that_are_not_queries_are_refused(filled, sql):
    with pytest.raises(StoreQueryError, match="read-only"):
        filled.query(sql)
    assert filled.query("SELECT count(*) AS n FROM metrics").num_rows == 1


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM metrics",
    "WITH t AS (SELECT * FROM trials) SELECT count(*) FROM t",
    "VALUES (1), (2)",
    "FROM trials",
    "DESCRIBE metrics",
    "SHOW TABLES",
    "SUMMARIZE trials",
    "EXPLAIN SELECT * FROM metrics",
    "PRAGMA table_info('metrics')",
    "(SELECT 1) UNION ALL (SELECT 2)",
])
def test_queries_are_allowed(filled, sql):
    filled.query(sql)


def test_the_message_is_one_line():
    with pytest.raises(StoreQueryError) as info:
        check_read_only("CREATE TABLE x AS SELECT 1")
    assert "\n" not in str(info.value) and "not CREATE" in str(info.value)


@pytest.mark.parametrize("expr", [
    "1=1) OR (1=1",
    "alpha = 1) OR (true",
    "alpha = 1; DROP TABLE x",
    "alpha = 1 -- and the rest",
    "alpha = 1 /* */",
    "(alpha = 1",
    "alpha = 'x",
    "",
    "alpha = $1",
])
def test_a_filter_that_is_not_one_expression_is_refused(expr):
    with pytest.raises(StoreQueryError, match="filter"):
        validate_filter(expr)


@pytest.mark.parametrize("expr", [
    "alpha = 1",
    "L >= 4 AND (M = 2 OR D = 8)",
    "activation = 'it''s (a) string'",
    "\"L\" IN (2, 4)",
    "trial_key IN (SELECT trial_key FROM trials WHERE status = 'ok')",
    "preset = E'a\\'b)'",
])
def test_well_formed_filters_pass(expr):
    assert validate_filter(expr) == expr.strip()
