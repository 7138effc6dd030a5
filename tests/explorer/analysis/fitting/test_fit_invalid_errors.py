"""Status-ok rows with NaN, infinite or negative errors (issue 32, item 12): `explorer check` flags
them and `explorer fit` counts them in its left-out line, instead of dropping them silently
("2 points fitted, 7 floor-limited" of 12, while check said ok)."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from explorer.analysis.data import grid_errors
from store import Store

from tests.explorer.analysis_data import law_rows, write_to_store

EXPLORER = str(Path(sys.executable).parent / "explorer")


def _explorer(*args) -> subprocess.CompletedProcess:
    return subprocess.run([EXPLORER, *args], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0"))


def _rows_with_three_impossible_errors():
    rows = law_rows(lambda L, M, D: 0.8 / L + 0.3 * math.sqrt(D / (L * M)), Ls=(2, 4, 8, 16), Ms=(1, 4, 16),
                    seeds=3, steps=2, rng=np.random.default_rng(0))
    last = rows.index[rows["step"] == rows["steps"]]
    for i, bad in zip(last[[0, 4, 8]], (float("nan"), float("inf"), -0.3)):  # three points, one seed each
        rows.loc[i, "err_out"] = bad
    return rows


def test_grid_errors_leaves_out_and_counts_impossible_errors(tmp_path):
    st = Store(tmp_path / "store")
    write_to_store(_rows_with_three_impossible_errors(), st)
    grid = grid_errors(st.connect(), "law")
    assert grid.attrs["n_invalid"] == 3 and len(grid) == 12
    assert sorted(grid["n_seeds"]) == [2, 2, 2] + [3] * 9  # the negative one is left out too, not squared in


@pytest.mark.slow
def test_fit_counts_and_check_flags_status_ok_rows_with_impossible_errors(tmp_path):
    rows = _rows_with_three_impossible_errors()
    uri = str(tmp_path / "store")
    write_to_store(rows, Store(uri))
    check = _explorer("check", "--store", uri)
    assert check.returncode == 1 and check.stdout.count("problem: bad_value: law/") == 3, check.stdout
    fit = _explorer("fit", "--sweep", "law", "--store", uri, "--no-save", "--bootstrap", "20", "--form", "free_rss")
    assert fit.returncode == 0, fit.stdout + fit.stderr
    assert "3 seed rows with a NaN, infinite or negative error left out" in fit.stdout, fit.stdout
    assert "12 points fitted" in fit.stdout  # each point keeps its two other seeds
