"""explorer.reproduce.pooling: the notebooks' pooling (mean over runs, blown-up runs as 0) beside the tool's RMS."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from explorer.errors import UsageError
from explorer.reproduce import pooling
from explorer.reproduce.leave_out import read_leave_out


def _grid():
    rows = [{"L": 4, "M": 2, "D": 3, "problem_seed": 1, "seed_errs": np.array([1.0, 3.0]), "ref_err": 0.0},
            {"L": 4, "M": 2, "D": 3, "problem_seed": 2, "seed_errs": np.array([5e3, 2.0]), "ref_err": 0.0},
            {"L": 8, "M": 2, "D": 3, "problem_seed": 1, "seed_errs": np.array([2e3]), "ref_err": 0.0}]
    return pd.DataFrame(rows)


def test_the_authors_pooling_zeroes_blown_up_runs_keeps_them_in_the_mean_and_drops_zero_points():
    grid = _grid().assign(n_blown_up=[1, 0, 0])  # one diverged seed at the first draw: one more 0
    points = pooling.pooled_authors(grid)
    assert points[["L", "err"]].to_dict("records") == [{"L": 4, "err": pytest.approx((1 + 3 + 0 + 0 + 2) / 5)}]


def test_the_tools_pooling_is_the_rms_of_every_run():
    points = pooling.pooled_rms(_grid())
    assert points.set_index("L")["err"][8] == pytest.approx(2e3)
    assert points.set_index("L")["err"][4] == pytest.approx(np.sqrt((1 + 9 + 25e6 + 4) / 4))


def test_the_spec_chooses_the_pooling_and_a_bad_value_is_one_line(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[reproduce]\npooling = "authors"\nclaim-x = [ { where = "D < 3", why = "small" } ]\n')
    assert pooling.read_pooling(spec) == "authors"
    assert list(read_leave_out(spec)) == ["claim-x"]  # the option is not a claim's left-out points
    (tmp_path / "none.toml").write_text("")
    assert pooling.read_pooling(tmp_path / "none.toml") == "rms"
    spec.write_text('[reproduce]\npooling = "median"\n')
    with pytest.raises(UsageError, match=r"^s.toml: \[reproduce\] pooling = 'median'; expected one of: authors, rms$"):
        pooling.read_pooling(spec)


def test_the_linear_specs_use_the_authors_pooling():
    from explorer.reproduce.claims import EXPERIMENTS

    exp = EXPERIMENTS["companion-linear"]
    assert {pooling.read_pooling(exp.spec_path("main", s)) for s in ("laptop", "full")} == {"authors"}
