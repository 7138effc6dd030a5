"""`explorer demo`, the README's first command, end to end as a user runs it (from a temporary
working directory, through the CLI): its fit measures both of the theory's exponents."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.demo import DEMO_SPEC
from store import Store

from tests.explorer.report.test_demo_report import MAX_LEGEND, legends, single_view, specs_of, visible_text

pytestmark = pytest.mark.slow


def test_demo_runs_a_sweep_and_writes_a_report(tmp_path):
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1",
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    store_dir, out_dir = tmp_path / "results", tmp_path / "report"
    cmd = [sys.executable, "-m", "explorer.cli", "demo", "--store", str(store_dir), "--out", str(out_dir)]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    # the error table: one row per depth, one column per width, every cell a number
    grid = DEMO_SPEC["grid"]
    rows = [line.split() for line in done.stdout.splitlines() if re.match(r"^\s*\d+\s+\d\.\d+e[-+]\d+", line)]
    assert [int(r[0]) for r in rows] == grid["L"]
    assert all(len(r) == 1 + len(grid["M"]) for r in rows)
    # it ends with the fit, led by the theory's two exponents, and then the report's path
    tail = done.stdout.strip().splitlines()
    assert tail[-1].startswith("report: ")
    fit_at = max(i for i, line in enumerate(tail) if line.startswith("form decomposed: err ~"))
    fit_text = "\n".join(tail[fit_at:-1])
    assert re.search(r"^c1\s", fit_text, re.M) and re.search(r"^c2\s", fit_text, re.M) and "95% CI" in fit_text
    # issue 34, item 7: a and b both measured, a's 95% interval holding 1 and b's 1/2, on the lines
    # that lead the fit and in its table
    assert tail[fit_at - 2].startswith("depth exponent a ") and tail[fit_at - 1].startswith("width exponent b "), tail
    for name, truth, lead in (("a", 1.0, tail[fit_at - 2]), ("b", 0.5, tail[fit_at - 1])):
        assert "not measured" not in lead and "the 95% CI holds the theory's" in lead, lead
        row = re.search(rf"^{name}\s.*$", fit_text, re.M).group(0)
        low, high = map(float, re.search(r"\[\s*([-\d.e+]+),\s*([-\d.e+]+)\]", row).groups())
        assert low <= truth <= high and high - low < 1.0, row
        assert f"[{low:.4g}, {high:.4g}]" in lead  # the lead line and the table agree
    assert not re.search(r"^warning: (\w+, )*[ab] not measured", fit_text, re.M)
    report = re.search(r"report: (\S+)", done.stdout).group(1)
    index = Path(report) if os.path.isabs(report) else tmp_path / report
    assert index.is_file() and index.stat().st_size > 10_000
    charts = {p.stem for p in index.parent.glob("*.html")} - {"index"}
    assert len(charts) >= 6 and all(f'data-chart="{name}"' in index.read_text(encoding="utf-8") for name in charts)
    assert not list(index.parent.glob("*.png")) and not list(index.parent.glob("*.svg"))  # exports only on request
    # the page a reader opens: no library warning text, short legends, single charts page-wide
    html = index.read_text(encoding="utf-8")
    specs = specs_of(html)
    assert "WARN" not in visible_text(html)
    assert all(n <= MAX_LEGEND for spec in specs.values() for _, _, n in legends(spec)), specs.keys()
    assert all(spec["width"] == "container" for spec in specs.values() if single_view(spec))
    trials = Store(str(store_dir)).query("SELECT status, count(*) AS n FROM trials WHERE sweep = 'demo' GROUP BY status")
    n_trials = len(grid["L"]) * len(grid["M"]) * len(grid["problem_seeds"])
    assert dict(zip(trials["status"].to_pylist(), trials["n"].to_pylist())) == {"ok": n_trials}
    # rerunning does no work: every trial is already complete
    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0
    assert f"{n_trials} already complete" in again.stdout + again.stderr
    # its metric files were compacted into one, and it prints the same table and fit, read back
    # from the fit and report caches
    assert len(list((store_dir / "sweep=demo" / "kind=metrics").glob("*.parquet"))) == 1
    assert len(list((tmp_path / "cache" / "resnet-scaling-explorer" / "fits").glob("*.pickle"))) > 2
    table_at = "err_out at the last step"
    assert again.stdout[again.stdout.index(table_at):] == done.stdout[done.stdout.index(table_at):]
