"""`explorer demo`, the README's first command, end to end as a user runs it."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from store import Store

from .test_demo_report import MAX_LEGEND, legends, single_view, specs_of, visible_text

pytestmark = pytest.mark.slow


def test_demo_runs_a_sweep_and_writes_a_report(tmp_path):
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")
    store_dir, out_dir = tmp_path / "results", tmp_path / "report"
    cmd = [sys.executable, "-m", "explorer.cli", "demo", "--store", str(store_dir), "--out", str(out_dir)]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    # the error table: one row per depth, one column per width, every cell a number
    rows = [line.split() for line in done.stdout.splitlines() if re.match(r"^\s*\d+\s+\d\.\d+e[-+]\d+", line)]
    assert [int(r[0]) for r in rows] == [4, 8, 16, 32, 64]
    assert all(len(r) == 6 for r in rows)
    # it ends with the fit (law, constants with their CIs) and then the report's path
    tail = done.stdout.strip().splitlines()
    assert tail[-1].startswith("report: ")
    fit_at = max(i for i, line in enumerate(tail) if line.startswith("form decomposed: err ~"))
    fit_text = "\n".join(tail[fit_at:-1])
    assert re.search(r"^c1\s", fit_text, re.M) and re.search(r"^c2\s", fit_text, re.M) and "95% CI" in fit_text
    # a: an interval that holds the theory's 1, or a plain "not measured" with the reason in a warning
    a_line = re.search(r"^a\s.*$", fit_text, re.M).group(0)
    if "not measured" in a_line:
        assert re.search(r"^warning: (\w+, )*a not measured on this grid: ", fit_text, re.M)
    else:
        low, high = map(float, re.search(r"\[\s*([-\d.e+]+),\s*([-\d.e+]+)\]", a_line).groups())
        assert low <= 1.0 <= high, a_line
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
    assert dict(zip(trials["status"].to_pylist(), trials["n"].to_pylist())) == {"ok": 25}
    # rerunning does no work: every trial is already complete
    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0
    assert "25 already complete" in again.stdout + again.stderr
