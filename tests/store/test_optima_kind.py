"""The optima kind: written, validated, served by its view, compacted."""
from __future__ import annotations

import pytest

from store import SchemaError, Store


def _row(L, **over):
    row = dict(axis="lr", metric="loss", step=None, parameter=None, across=None, L=L, preset="mlu", optimum=2.0,
               ci_low=1.5, ci_high=2.5, edge=None, grid_low=0.125, grid_high=32.0, verdict=None, n_draws=2,
               n_runs=72, n_diverged=3, n_boot=200)
    row.update(over)
    return row


def test_optima_rows_are_written_queried_through_their_view_and_compacted(tmp_path):
    st = Store(str(tmp_path / "results"))
    st.write_optima("s", "optimum-lr-abc", [_row(4), _row(16, optimum=None, ci_low=None, ci_high=None, edge="above")])
    st.write_optima("s", "transfer-L-lr-abc", [_row(None, parameter="gamma", across="L", verdict="drifts",
                                                    optimum=-0.9, ci_low=-1.2, ci_high=-0.6)])
    got = st.query("SELECT L, M, preset, optimum, edge, parameter, verdict FROM optima ORDER BY optima_id, L").to_pylist()
    assert got == [
        {"L": 4, "M": None, "preset": "mlu", "optimum": 2.0, "edge": None, "parameter": None, "verdict": None},
        {"L": 16, "M": None, "preset": "mlu", "optimum": None, "edge": "above", "parameter": None, "verdict": None},
        {"L": None, "M": None, "preset": "mlu", "optimum": -0.9, "edge": None, "parameter": "gamma", "verdict": "drifts"},
    ]
    report = st.compact("s")
    assert [(k.kind, k.files_in, k.files_out) for k in report.kinds if k.kind == "optima"] == [("optima", 2, 1)]
    assert st.query("SELECT count(*) AS n FROM optima").to_pylist() == [{"n": 3}]


@pytest.mark.parametrize("bad, needle", [({"edge": "left"}, "edge"), ({"verdict": "maybe"}, "verdict"),
                                         ({"L": 4.0}, "'L'")])
def test_an_optima_row_outside_the_schema_is_refused(tmp_path, bad, needle):
    with pytest.raises(SchemaError, match=needle):
        Store(str(tmp_path / "results")).write_optima("s", "optimum-lr-x", [{**_row(4), **bad}])
