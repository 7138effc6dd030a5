"""The data layer's query cache and single-scan ``held_axes``: the same answers as running every
query afresh, and a cache that never outlives its block or serves one query's rows for another."""
import math

import numpy as np
import pandas as pd
import pytest

from explorer.errors import QueryError
from explorer.analysis.data import (GRID_COLUMNS, column_values, grid_errors, held_axes, plain_value, query_cache,
                                    query_frame, sweep_is, table_columns, where_clause)

from tests.explorer.analysis_data import connect, law_rows

LAW = lambda L, M, D: 0.5 / L + 0.2 * math.sqrt(D / (L * M)) + 0.3 / math.sqrt(D)  # noqa: E731


def _held_axes_one_query_per_column(con, sweep, free_axes=("L", "M", "D"), where=None) -> dict:
    """held_axes as it was before the single scan: one GROUP BY per column (the reference)."""
    columns = table_columns(con)
    fixed = {}
    for col in [c for c in ("L", "M", "D") + GRID_COLUMNS if c in columns and c not in free_axes]:
        counts = query_frame(con, f'SELECT "{col}" AS v, count(DISTINCT trial_key) AS n FROM metrics '
                                  f"WHERE {sweep_is(sweep)}{where_clause(where)} GROUP BY 1")
        if len(counts) <= 1:
            continue
        if col in ("L", "M", "D"):
            value = counts["v"].max()
        else:
            top = counts[counts["n"] == counts["n"].max()]["v"]
            value = top.min() if top.notna().any() else None
        fixed[col] = plain_value(value)
    return fixed


@pytest.fixture(scope="module")
def con():
    rows = law_rows(LAW, Ls=(2, 4, 8), Ms=(1, 4), Ds=(2, 8), alphas=(1.0, 4.0, 16.0), seeds=2, steps=2, sweep="s")
    # a nullable column that varies (NULL the most common value), an integer axis with a tie, a string axis
    rows["coupled_dim"] = np.where(rows["L"] == 8, 3, None)
    rows["lr"] = np.where(rows["M"] == 1, 0.5, 1.0)
    rows["activation"] = np.where(rows["D"] == 2, "tanh", "relu")
    return connect(rows)


@pytest.mark.parametrize("free_axes, where", [
    (("L", "M", "D"), None), (("L", "M"), None), (("alpha", "D"), None), ((), None),
    (("L", "M", "D"), "alpha > 1"), (("L", "M"), "L = 8"), (("L",), "coupled_dim IS NULL AND alpha = 4"),
])
def test_held_axes_single_scan_matches_one_query_per_column(con, free_axes, where):
    expected = _held_axes_one_query_per_column(con, "s", free_axes, where)
    got = held_axes(con, "s", free_axes, where)
    assert got == expected
    assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


def test_cached_query_returns_identical_fresh_frames(con):
    sql = "SELECT * FROM metrics WHERE sweep = 's' ORDER BY trial_key, seed, step"
    fresh = query_frame(con, sql)
    with query_cache(con):
        first = query_frame(con, sql)
        first["err_out"] = -1.0  # a caller editing its frame ...
        second = query_frame(con, sql)  # ... does not change what the next caller gets
    pd.testing.assert_frame_equal(second, fresh)
    assert second is not first


def test_cache_serves_no_other_filter_and_ends_with_its_block(con):
    with query_cache(con):
        one = grid_errors(con, "s", where="alpha = 1")
        four = grid_errors(con, "s", where="alpha = 4")
        assert not one["err"].equals(four["err"])
        pd.testing.assert_frame_equal(four, grid_errors(con, "s", where="alpha = 4"))
    con.execute("CREATE TEMP TABLE extra AS SELECT 1 AS x")
    with query_cache(con):
        assert query_frame(con, "SELECT count(*) AS n FROM extra")["n"].iloc[0] == 1
    con.execute("INSERT INTO extra VALUES (2)")  # a change between blocks is seen by the next
    with query_cache(con):
        assert query_frame(con, "SELECT count(*) AS n FROM extra")["n"].iloc[0] == 2
    con.execute("DROP TABLE extra")


def test_grid_errors_in_a_cache_block_equals_outside(con):
    outside = grid_errors(con, "s", where="alpha = 4")
    with query_cache(con):
        grid_errors(con, "s", where="alpha = 4")
        inside = grid_errors(con, "s", where="alpha = 4")
    pd.testing.assert_frame_equal(inside.drop(columns="seed_errs"), outside.drop(columns="seed_errs"))
    assert all(np.array_equal(a, b) for a, b in zip(inside["seed_errs"], outside["seed_errs"]))
    assert inside.attrs == outside.attrs


def test_a_failed_query_is_not_kept(con):
    with query_cache(con):
        with pytest.raises(QueryError):
            query_frame(con, "SELECT * FROM no_such_view")
        con.execute("CREATE TEMP VIEW no_such_view AS SELECT 1 AS x")
        try:
            assert query_frame(con, "SELECT * FROM no_such_view")["x"].tolist() == [1]
        finally:
            con.execute("DROP VIEW no_such_view")


def test_sweep_config_single_scan_matches_one_query_per_column(con):
    from explorer.formatting import fmt
    from explorer.report.page import sweep_config

    got = sweep_config(con, "s")
    expected = []
    for col in got["column"]:  # sweep_config as it was: one DISTINCT ... LIMIT 13 per column
        values = query_frame(con, f'SELECT DISTINCT "{col}" AS v FROM metrics WHERE sweep = \'s\' '
                                  "ORDER BY 1 LIMIT 13")["v"].tolist()
        expected.append({"column": col, "values": ", ".join(fmt(v, "g") for v in values[:12])
                         + (", ..." if len(values) > 12 else ""),
                         "count": len(values) if len(values) <= 12 else "> 12"})
    pd.testing.assert_frame_equal(got, pd.DataFrame(expected))
    assert {"L", "M", "D", "alpha", "coupled_dim", "lr", "activation", "seed"} <= set(got["column"])


def test_column_values_limit_keeps_the_smallest_with_null_last(con):
    values = column_values(con, ["coupled_dim", "L", "alpha"], "sweep = 's'", limit=2)
    assert values["L"]["v"].tolist() == [2, 4] and str(values["L"]["v"].dtype) == "int64"
    assert values["coupled_dim"]["v"].tolist()[0] == 3 and pd.isna(values["coupled_dim"]["v"].tolist()[1])
    assert values["alpha"]["v"].tolist() == [1.0, 4.0]
