"""`explorer sweep SPEC --dry-run` over every shipped spec: it prices the plan (exit 0, no
traceback) whatever this machine can hold, flagging the points that would not fit here; only an
invalid spec exits non-zero."""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

import explorer.config.estimate
from explorer.cli import main
from explorer.config.estimate import reference_memory_bytes, reference_seconds
from explorer.config.planning import plan
from explorer.config.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PAPER = Path(__file__).resolve().parents[2] / "explorer" / "reproduce" / "paper"  # the paper specs ship with the package
SHIPPED = sorted([*EXAMPLES.glob("*.toml"), *PAPER.glob("*.toml")])


def test_the_shipped_specs_are_all_found():
    assert len([p for p in SHIPPED if p.parent.name == "paper"]) == 12 and len(SHIPPED) >= 15


# companion-linear's full grid plans 43,875 trials: with the slow set
FULL_PAPER_GRIDS = ("companion-linear.toml",)
SHIPPED_CASES = [pytest.param(p, marks=pytest.mark.slow) if p.parent.name == "paper" and p.name in FULL_PAPER_GRIDS
                 else p for p in SHIPPED]


@pytest.mark.parametrize("path", SHIPPED_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_spec_dry_runs_cleanly(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(main, ["sweep", str(path), "--dry-run"])
    assert done.exit_code == 0, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), repr(done.exception)
    lines = done.output.splitlines()
    assert lines[0].startswith(f"sweep {load_spec(path).name}: ") and lines[-1] == "nothing run (--dry-run)"
    assert any(line.startswith("time: ") for line in lines) and any(line.startswith("references: ") for line in lines)
    assert list(tmp_path.iterdir()) == []


def test_a_grid_too_large_for_this_machine_is_priced_and_its_points_flagged(monkeypatch):
    # the full hidden-width grid's 8192 x 4096 references need ~31 GiB; here the machine has 8
    monkeypatch.setattr(explorer.config.estimate, "available_memory_bytes", lambda: 8 * 2**30)
    done = CliRunner().invoke(main, ["sweep", str(PAPER / "hidden-width-rates.toml"), "--dry-run"])
    assert done.exit_code == 0, done.output
    assert "time: " in done.output and "memory here: 8 GiB available" in done.output
    flagged = [line for line in done.output.splitlines() if line.startswith("does not fit here: ")]
    assert flagged == ["does not fit here: 0 of 231 trials and 3 of 3 references need more than the memory this machine "
                       "has available less a worker (7.41 GiB); `explorer sweep` refuses them here: run on a larger machine or a "
                       "cluster (--address)"]
    assert done.output.count("  reference ") == 3 and "8192 x 4096 particles" in done.output
    # the adaptive dry run flags them too
    adaptive = CliRunner().invoke(main, ["sweep", str(EXAMPLES / "rates_adaptive.toml"), "--adaptive", "--dry-run",
                                         "reference.depth=8192", "reference.width=4096"])
    assert adaptive.exit_code == 0, adaptive.output
    assert "does not fit here: " in adaptive.output and adaptive.output.splitlines()[-1].startswith("nothing run")


def test_an_invalid_spec_still_exits_2_on_a_dry_run(tmp_path):
    done = CliRunner().invoke(main, ["sweep", str(EXAMPLES / "quick.toml"), "--dry-run", "reference.width=511"])
    assert done.exit_code == 2
    assert done.output.strip() == ("error: spec error: [reference] width: reference.width must be even "
                                   "(antithetic pairs), got 511")


def test_the_joint_limit_estimates_hold_its_measured_memory_and_time_within_a_factor():
    from trials.joint_limit import compute_joint_limit

    spec = load_spec(PAPER / "companion-linear-laptop.toml",
                     ["train.steps=12", "reference.grid=256", "problem.samples=6"])
    ref = plan(spec).references[0].config
    tracemalloc.start()
    compute_joint_limit(ref)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak / 3 < reference_memory_bytes(ref) < 3 * peak, (peak, reference_memory_bytes(ref))
    assert 0 < reference_seconds(ref) < 60
