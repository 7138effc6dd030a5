"""``explorer reproduce`` stopped by a signal writes no verdict (issue 25, item 7: SIGINT at 5 of
27 trials wrote claims.md and index.html saying "agrees")."""
from __future__ import annotations

import signal

from click.testing import CliRunner

import explorer.sweeps
from explorer.cli import main
from explorer.sweeps.tracking.results import SweepResult


def test_a_sweep_stopped_by_sigint_ends_reproduce_with_one_line_and_no_report(tmp_path, monkeypatch):
    seen = []

    def interrupted_sweep(spec, **kwargs):
        seen.append(spec.name)
        return SweepResult(name=spec.name, store=str(kwargs["store"]), total=spec.grid_points(), skipped=0, ran=5,
                           ok=5, missing=spec.grid_points() - 5, interrupted=signal.SIGINT)

    monkeypatch.setattr(explorer.sweeps, "sweep", interrupted_sweep)  # reproduce takes it from the face
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["reproduce", "companion-linear", "--scale", "tiny",
                                       "--store", str(tmp_path / "store"), "--out", str(out)])
    assert result.exit_code == 130, result.output
    lines = result.output.splitlines()
    assert len(seen) == 1  # the next sweeps are not started
    # where the report would go (said when the run starts), then the one error line
    assert len(lines) == 2 and lines[0].startswith("reproduce companion-linear (tiny): the report goes to ")
    assert lines[1].startswith("error: interrupted (SIGINT): partial, 5 of ")
    assert lines[1].endswith(" trials; no verdict written; run the same command again to resume")
    assert not out.exists()  # no claims.md, no index.html, no "agrees"
