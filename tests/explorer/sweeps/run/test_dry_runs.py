"""`explorer sweep SPEC --dry-run` over every shipped spec: it prices the plan (exit 0, no
traceback) whatever this machine can hold, flagging the points that would not fit here; only an
invalid spec exits non-zero."""
from __future__ import annotations

import tracemalloc

import pytest
from click.testing import CliRunner

import explorer.config.host_memory
from explorer.cli import main
from explorer.config.estimate import reference_memory_bytes, reference_seconds
from explorer.config.planning import plan
from explorer.config.spec import load_spec

from tests.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
PAPER = REPO_ROOT / "explorer" / "reproduce" / "paper"  # the paper specs ship with the package
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
    monkeypatch.setattr(explorer.config.host_memory, "available_memory_bytes", lambda: 8 * 2**30)
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


class _StoreHolding:
    """A store that holds some trials (their statuses) and some cached references: what the dry
    run reads of one (``Store.exists``, ``trial_statuses``, ``has_reference``)."""

    def __init__(self, statuses: dict[str, str], cached: set[str]):
        self.statuses, self.cached = statuses, cached

    def exists(self) -> bool:
        return True

    def trial_statuses(self, sweep: str) -> dict[str, str]:
        return dict(self.statuses)

    def has_reference(self, ref_key: str) -> bool:
        return ref_key in self.cached


def test_a_grown_sweeps_dry_run_prices_only_what_is_left_with_rays_start(monkeypatch):
    import re

    from explorer.config.cost_model import trial_seconds
    from explorer.config.estimate import compute_wall_seconds
    from explorer.formatting import format_seconds
    from explorer.sweeps.ray import records as ray_records
    from explorer.sweeps.run import dry_run

    monkeypatch.setattr(ray_records, "measured_starts", lambda: [8.0, 12.0])
    monkeypatch.setattr(ray_records, "running_session", lambda: None)
    spec = load_spec({"name": "grown", "train": {"steps": 5}, "reference": {"depth": 16, "width": 8},
                      "grid": {"L": [2, 4, 8], "M": [1, 4], "D": [4, 8, 16], "seeds": 2}})
    the_plan = plan(spec)
    refs = sorted({t.ref_key for t in the_plan.trials})
    assert len(refs) == 3  # one per D
    # the first grid: D = 4 and 8, all complete (one diverged, one failed: that one runs again)
    old = [t for t in the_plan.trials if t.config.D in (4, 8)]
    statuses = {t.trial_key: "ok" for t in old}
    statuses[old[0].trial_key], statuses[old[1].trial_key] = "diverged", "failed"
    held = _StoreHolding(statuses, {t.ref_key for t in old})
    lines = dry_run.left_to_run_lines(the_plan, held, cpus=2)
    left = [t for t in the_plan.trials if t.config.D == 16] + [old[1]]
    assert lines[0] == f"in the store: {len(old) - 1} of {len(the_plan.trials)} trials already complete, 2 of 3 references cached"
    new_ref = [r for r in the_plan.references if r.ref_key not in held.cached]
    costs = [trial_seconds(t.config) for t in left]
    ref_costs = [reference_seconds(r.config) for r in new_ref]
    assert lines[1].startswith(f"left to run: {len(left)} trials (") and ", 1 references: " in lines[1]
    assert lines[1].endswith(f": {format_seconds(sum(costs) + sum(ref_costs))} of single-core compute")
    compute = compute_wall_seconds(costs, ref_costs, 2)
    assert lines[2] == (f"here: about {format_seconds(compute)} of compute + Ray's start (measured here: 8 s to 12 s, "
                        f"the last 2) = about {format_seconds(compute + 8)} to {format_seconds(compute + 12)}")
    assert all(len(n.replace(".", "").lstrip("0")) <= 3 for n in re.findall(r"\d+\.\d+", "\n".join(lines)))  # rounded
    complete = _StoreHolding({t.trial_key: "ok" for t in the_plan.trials}, set(refs))
    assert dry_run.left_to_run_lines(the_plan, complete, cpus=2)[1] == (
        "left to run: nothing (the sweep prints its summary without starting Ray)")


def test_the_sweep_dry_run_reads_the_store_and_leaves_no_store_behind(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n[train]\nsteps = 5\n[reference]\ndepth = 16\nwidth = 8\n[grid]\nL = [2]\nM = [1]\nD = [4]\n')
    done = CliRunner().invoke(main, ["sweep", str(spec), "--dry-run", "--store", str(tmp_path / "none")])
    assert done.exit_code == 0, done.output
    assert "in the store: 0 of 1 trials already complete, 0 of 1 references cached" in done.output
    assert "left to run: 1 trials (100%), 1 references" in done.output and "Ray's start" in done.output
    assert not (tmp_path / "none").exists()


def test_a_store_whose_references_cannot_be_read_prices_them_as_not_cached(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n[train]\nsteps = 5\n[reference]\ndepth = 16\nwidth = 8\n[grid]\nL = [2]\nM = [1]\nD = [4]\n')
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "references").write_text("a file where the reference cache goes")
    done = CliRunner().invoke(main, ["sweep", str(spec), "--dry-run", "--store", str(tmp_path / "store")])
    assert done.exit_code == 0 and "Traceback" not in done.output, done.output
    assert "0 of 1 references cached" in done.output and "left to run: 1 trials (100%), 1 references" in done.output
