"""explorer --version; `explorer status` alone lists every sweep with a sweep column; the store's
LeftOutFilesWarning from fit, phase and report is one `warning:` line on stderr (as explorer
sql's), not a raw Python warning."""
from __future__ import annotations

import os
import pathlib
import tomllib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import explorer
from explorer.cli import main
from store import Store

from tests.explorer.analysis_data import law_rows, write_to_store
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


def test_version_is_the_package_version():
    done = CliRunner().invoke(main, ["--version"])
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert done.exit_code == 0 and done.output == f"explorer {version}\n" and explorer.__version__ == version


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("status") / "store")
    law = lambda L, M, D: 1 / L + (D / (L * M)) ** 0.5  # noqa: E731
    write_to_store(law_rows(law, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, steps=2, sweep="law"), store)
    write_to_store(law_rows(law, Ls=(2, 4), Ms=(1,), seeds=2, steps=2, sweep="small"), store)
    return store


def test_status_alone_lists_every_sweep_with_a_sweep_column(two_sweeps):
    done = CliRunner().invoke(main, ["status", "--store", two_sweeps.uri])
    assert done.exit_code == 0, done.output
    assert [line.split() for line in done.output.splitlines()] == [
        ["sweep", "ok", "diverged", "failed", "trials"], ["law", "6", "0", "0", "6"], ["small", "2", "0", "0", "2"]]


def test_status_refuses_a_spec_and_a_sweep_together(two_sweeps, tmp_path):
    done = CliRunner().invoke(main, ["status", str(tmp_path / "x.toml"), "--sweep", "law", "--store", two_sweeps.uri])
    assert done.exit_code == 2 and "not both" in done.output


def test_left_out_files_are_one_warning_line_in_fit_phase_and_report(two_sweeps, tmp_path):
    metrics = next(pathlib.Path(two_sweeps.files.root).rglob("sweep=law/kind=metrics/*.parquet")).parent
    pq.write_table(pa.table({"x": [1], "trial_key": ["abc"]}), os.path.join(metrics, "abc.parquet"))
    try:
        # the synthetic store has no Gram rows: the fit of the RMS errors, not the decomposed default
        for args in (["fit", "--form", "free_rss", "--no-save", "--bootstrap", "5"], ["phase", "--x", "L", "--y", "M"]):
            done = CliRunner().invoke(main, args + ["--sweep", "law", "--store", two_sweeps.uri])
            assert done.exit_code == 0, done.output
            assert done.stderr.startswith("warning: the views left out 1 file(s)"), done.stderr
            assert "LeftOutFilesWarning" not in done.stderr and "warnings.warn" not in done.stderr
    finally:
        os.remove(os.path.join(metrics, "abc.parquet"))


def test_ctrl_c_outside_a_sweeps_own_handlers_is_one_line_and_the_sigint_code(tmp_path, monkeypatch):
    import importlib

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    # the twin of explorer sql lives in explorer/api/store.py
    monkeypatch.setattr(importlib.import_module("explorer.api.store"), "open_store", interrupted)
    done = CliRunner().invoke(main, ["sql", "SELECT 1", "--store", str(tmp_path)])
    assert done.exit_code == 130
    assert done.output.strip() == "interrupted (SIGINT)"
