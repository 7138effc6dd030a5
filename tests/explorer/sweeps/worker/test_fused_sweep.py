"""Fused points in a sweep: the packer keeps the points of one shape together (within a worker's
memory), the worker trains them as one program and writes each point's rows as its own, the dry
run shows the groups, and a sweep gives the same rows with fusion on and off."""
from __future__ import annotations

import json
import math

import pytest

import explorer
from explorer.config.cost_model import (FusedMemory, fused_memory_bytes, fused_seconds, trial_memory_bytes,
                                        trial_seconds)
from explorer.config.planning import plan
from explorer.config.spec import parse_spec
from explorer.sweeps.worker import packing
from explorer.sweeps.worker import training as worker
from explorer.sweeps.run.dry_run import sweep_dry_run_lines
from store import SCHEMA_VERSION, Store

# Several alphas, lrs and problem draws per shape (L x D: four shapes), one lr that diverges.
MIXED = {
    "name": "mixed",
    "train": {"steps": 4},
    "reference": {"depth": 8, "width": 4},
    "grid": {"L": [2, 4], "M": [3], "D": [4, 6], "alpha": [1.0, 2.0], "lr": [0.5, 1.0, 200.0],
             "problem_seeds": [1, 2], "seeds": 2},
}
# What differs between the same point run fused and alone: its sweep, its share of its group's time, its node.
RUN_COLUMNS = {"sweep", "wall_s", "node_id"}


def _plan(raw=MIXED):
    return plan(parse_spec(raw), SCHEMA_VERSION)


def _exact(row: dict) -> str:
    """A row as text that tells every float apart (repr round-trips; NaN equals NaN, -0.0 is not 0.0)."""
    return json.dumps(row, sort_keys=True, default=str)


def _rows(store: Store, sweep: str) -> dict[tuple, dict]:
    """Every metric row of the sweep by (trial_key, seed, step), without the run's own columns."""
    rows = store.query("SELECT * FROM metrics", sweep=sweep).to_pylist()
    return {(r["trial_key"], r["seed"], r["step"]): {k: v for k, v in r.items() if k not in RUN_COLUMNS} for r in rows}


def _assert_same_rows(fused: dict, alone: dict) -> None:
    assert fused.keys() == alone.keys()
    different = [(key, col) for key in alone for col in alone[key] if _exact({col: alone[key][col]}) != _exact({col: fused[key][col]})]
    assert not different, different[:5]


# --- the packer ------------------------------------------------------------------------------


def test_fused_packs_hold_every_point_once_in_groups_of_one_shape():
    the_plan = _plan()
    trials = list(the_plan.trials)
    for slots in (1, 2, 8):
        packs = packing.fused_packs(trials, slots)
        groups = [g for p in packs for g in p]
        assert sorted(t.trial_key for g in groups for t in g) == sorted(t.trial_key for t in trials)
        assert all(len({t.config.fusion_key() for t in g}) == 1 for g in groups)
        assert len(packs) == len(packing.pack(trials, slots))  # as many Tune trials as without fusion
        loads = [sum(packing.group_seconds(g) for g in p) for p in packs]
        assert loads == sorted(loads, reverse=True)
    # one slot, 4 packs: a shape is cut only where it holds more than a pack's share of the compute
    one = [g for p in packing.fused_packs(trials, 1) for g in p]
    share = sum(map(packing.estimated_seconds, trials)) / 4
    cuts = {L: math.ceil(sum(packing.estimated_seconds(t) for t in trials if (t.config.L, t.config.D) == (L, 4)) / share)
            for L in (2, 4)}
    assert cuts == {2: 1, 4: 2}  # L = 4 costs about twice L = 2
    assert sorted(len(g) for g in one) == [6, 6, 6, 6, 12, 12]
    # fixed-size packs: the points ordered by shape, so that a pack of 12 is one shape's group
    fixed = packing.fused_packs(trials, 2, points_per_trial=12)
    assert [[len(g) for g in p] for p in fixed] == [[12]] * 4
    assert [[len(g) for g in p] for p in packing.fused_packs(trials, 2, points_per_trial=18)] == [[12, 6], [6, 12], [12]]
    # without fusion: pack's packs, each point a group of one
    unfused = packing.packs_of_groups(trials, 2, "auto", fuse=False)
    assert [[g[0] for g in p] for p in unfused] == packing.pack(trials, 2)
    assert all(len(g) == 1 for p in unfused for g in p)


def test_a_fused_group_stays_within_the_memory_bound():
    trials = list(_plan().trials)
    one_shape = packing.fusion_groups(trials)[0]
    single = max(trial_memory_bytes(t.config) for t in one_shape)
    for batched in (False, True):
        bound = fused_memory_bytes([t.config for t in one_shape[:5]], batched)
        packs = packing.fused_packs(one_shape, 1, points_per_trial=12, memory_bound=bound, batched=batched)
        assert [[len(g) for g in p] for p in packs] == [[5, 5, 2]]  # one pack: the bound alone cuts the group
        assert all(packing.group_memory(g, batched) <= bound for g in packs[0])
    # a bound below one point: every point alone, none refused
    alone = packing.fused_packs(one_shape, 1, points_per_trial=12, memory_bound=single // 2)
    assert sorted(len(g) for p in alone for g in p) == [1] * len(one_shape)


def test_a_worker_may_hold_its_share_of_the_largest_node_less_its_process(monkeypatch):
    from explorer.sweeps.run import trial_phase

    gib = 2**30
    nodes = [{"Alive": True, "Resources": {"CPU": 8.0, "memory": 16 * gib}},
             {"Alive": True, "Resources": {"CPU": 2.0, "memory": 4 * gib}}]
    monkeypatch.setattr(trial_phase.ray, "nodes", lambda: nodes)
    spec = parse_spec(MIXED)
    worker_process = 600 * 2**20
    assert trial_phase.fused_memory_bound(spec, 10, 16 * gib) == 2 * gib - worker_process  # 8 at once on the large node
    assert trial_phase.fused_memory_bound(spec, 2, 16 * gib) == 8 * gib - worker_process  # only 2 run at once
    two_cpus = parse_spec({**MIXED, "resources": {"cpus_per_trial": 2}})
    assert trial_phase.fused_memory_bound(two_cpus, 10, 16 * gib) == 4 * gib - worker_process
    assert trial_phase.fused_memory_bound(spec, 10, 0) is None  # Ray reports no memory: no bound


def test_the_fused_estimates_share_the_unit_draw_and_count_the_group():
    configs = [t.config for t in packing.fusion_groups(_plan().trials)[0]]
    one = configs[0]
    assert fused_seconds([one]) == pytest.approx(trial_seconds(one))
    # the draw, 1.7e-8 s per number, two numbers (u, v) per L D M and seed: made once for the group's 2 seeds
    draw = 1.7e-8 * one.L * one.D * one.M * len(one.seeds)
    assert fused_seconds(configs) == pytest.approx(sum(map(trial_seconds, configs)) - (len(configs) - 1) * draw)
    # batched: every point's buffers at once; one after another: one point, the streams kept and every point's rows
    assert fused_memory_bytes(configs, batched=True) == sum(map(trial_memory_bytes, configs))
    streams = 2 * one.L * one.D * one.M * 8 * len(one.seeds)
    rows = len(one.seeds) * (one.steps + 1) * (3_000 + 2 * len(one.seeds) * 32)
    assert fused_memory_bytes(configs, batched=False) == max(map(trial_memory_bytes, configs)) + streams + len(configs) * rows
    assert fused_memory_bytes([one], batched=False) == fused_memory_bytes([one], batched=True) == trial_memory_bytes(one)
    grown = FusedMemory(batched=False)
    assert [grown.add(c) for c in configs[:3]] == [fused_memory_bytes(configs[:n], batched=False) for n in (1, 2, 3)]


def test_the_dry_run_shows_the_fused_groups_and_their_price():
    spec = parse_spec(MIXED)
    lines = sweep_dry_run_lines(spec, embedded=False)
    fused = [line for line in lines if line.startswith("fused groups:")]
    # packed for one trial at a time (no machine): 4 packs, the two shapes at L = 4 cut in two (as the packer above)
    assert len(fused) == 1 and fused[0].startswith("fused groups: 6 (2 of 12, 4 of 6 points); 4 shapes in 4 Tune trials")
    single = sweep_dry_run_lines(parse_spec({**MIXED, "grid": {**MIXED["grid"], "alpha": [1.0], "lr": [1.0],
                                                            "problem_seeds": [1]}}), embedded=False)
    assert "fused groups: none (no two points of one shape to fuse in a Tune trial; 4 points alone)" in single
    off = sweep_dry_run_lines(parse_spec({**MIXED, "resources": {"fuse": False}}), embedded=False)
    assert "fused groups: none ([resources] fuse = false: every point trains alone)" in off
    assert lines[-1] == off[-1] == "nothing run (--dry-run)"


# --- the worker, without Ray -----------------------------------------------------------------


def _job(store, the_plan, sweep):
    return worker.Job(sweep=sweep, store=store, packs=(), references={r.ref_key: r for r in the_plan.references},
                      reference_errors={}, rerun=frozenset(), retries=1, ledger=None)


def test_a_fused_group_writes_the_rows_of_its_points_trained_alone(tmp_path, monkeypatch):
    the_plan = _plan()
    store = Store(tmp_path)
    group = tuple(packing.fusion_groups(the_plan.trials)[0])  # 12 points: alphas, lrs, draws; some diverge
    fused_calls = []
    real = worker.train_fused
    monkeypatch.setattr(worker, "train_fused", lambda cs, rs: fused_calls.append(len(cs)) or real(cs, rs))
    statuses = dict(worker.run_group(_job(store, the_plan, "fused"), group, "node-a", set()))
    assert fused_calls == [12]
    for trial in group:
        worker.run_point(_job(store, the_plan, "alone"), trial, "node-a")
    fused, alone = _rows(store, "fused"), _rows(store, "alone")
    _assert_same_rows(fused, alone)
    assert statuses == store.trial_statuses("alone") == store.trial_statuses("fused")
    assert {"ok", "diverged"} <= set(statuses.values())  # lr = 200 diverges, its neighbours run on


def test_a_group_resumes_only_its_missing_points_and_runs_point_by_point_when_it_raises(tmp_path, monkeypatch):
    the_plan = _plan()
    store = Store(tmp_path)
    group = tuple(packing.fusion_groups(the_plan.trials)[1][:6])
    real = worker.train_fused
    given = []
    monkeypatch.setattr(worker, "train_fused", lambda cs, rs: given.append([c.key() for c in cs]) or real(cs, rs))
    done = {group[0].trial_key, group[3].trial_key}
    out = list(worker.run_group(_job(store, the_plan, "resume"), group, "node-a", done))
    assert [k for k, _ in out] == [t.trial_key for t in group]
    assert [s for _, s in out][0] == [s for _, s in out][3] == "complete"
    assert given == [[t.config.key() for i, t in enumerate(group) if i not in (0, 3)]]  # only the missing points
    assert set(store.trial_statuses("resume")) == {t.trial_key for i, t in enumerate(group) if i not in (0, 3)}

    # a group that raises runs again point by point: the point that raises is failed alone
    bad = group[2].config
    monkeypatch.setattr(worker, "train_fused", lambda cs, rs: 1 / 0)
    trained_alone = []
    real_trial = worker.train_trial

    def trial_alone(config, reference):
        trained_alone.append(config)
        if config == bad:
            raise RuntimeError("this point's trouble")
        return real_trial(config, reference)

    monkeypatch.setattr(worker, "train_trial", trial_alone)
    statuses = dict(worker.run_group(_job(store, the_plan, "raises"), group, "node-a", set()))
    assert statuses[group[2].trial_key] == "failed" and trained_alone.count(bad) == 2  # retries = 1
    assert all(s in ("ok", "diverged") for k, s in statuses.items() if k != group[2].trial_key)
    errors = store.query("SELECT DISTINCT trial_key, error FROM metrics WHERE status = 'failed'", sweep="raises").to_pylist()
    assert errors == [{"trial_key": group[2].trial_key, "error": "RuntimeError: this point's trouble"}]


# --- a real sweep, fused and not -------------------------------------------------------------


@pytest.mark.slow
def test_a_fused_sweep_writes_the_rows_of_the_same_sweep_without_fusion(tmp_path, local_ray):
    on = explorer.sweep(MIXED, store=tmp_path, progress=False)
    off = explorer.sweep({**MIXED, "name": "mixed_off", "resources": {"fuse": False}}, store=tmp_path, progress=False)
    assert (on.total, on.ran, on.failed, on.missing) == (off.total, off.ran, off.failed, off.missing) == (48, 48, 0, 0)
    assert on.diverged == off.diverged > 0
    store = Store(tmp_path)
    _assert_same_rows(_rows(store, "mixed"), _rows(store, "mixed_off"))
    assert store.trial_statuses("mixed") == store.trial_statuses("mixed_off")
    assert all(store.has_reference(r.ref_key) for r in _plan().references)  # computed once, read by both


# The fused group's memory estimate against its measured peak: a fresh process, one shape where
# the units dominate, a tiny reference computed first and dropped (as test_estimate's
# _MEASURE_PEAK does for one point), then the group trained in the given mode.
_MEASURE_FUSED = r"""
import ctypes, gc, json, resource, sys
import torch
torch.set_num_threads(1)
from trials import ProblemConfig, ReferenceConfig, TrialConfig, compute_reference, train_fused
from explorer.config.cost_model import fused_memory_bytes

batched = sys.argv[1] == "batched"
base = TrialConfig(L=64, M=256, D=64, problem=ProblemConfig(samples=10), seeds=(0, 1, 2), steps=3, device="cpu")
configs = [base.replace(alpha=a) for a in (1.0, 1.5, 2.0, 3.0)]
references = [compute_reference(ReferenceConfig(limit=c, depth=2, width=2, replicas=2, device="cpu")) for c in configs]
gc.collect()
ctypes.CDLL("libc.so.6").malloc_trim(0)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
with open("/proc/self/statm") as f:
    before = int(f.read().split()[1]) * resource.getpagesize()
train_fused(configs, references, batched=batched)
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
print(json.dumps({"growth": peak - before, "estimate": fused_memory_bytes(configs, batched)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sequential", "batched"])
def test_the_fused_memory_estimate_is_within_2x_of_the_measured_peak(mode):
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _MEASURE_FUSED, mode], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    print(mode, got)
    assert got["growth"] > 100 * 2**20  # the group dominates the measurement
    assert 0.5 <= got["estimate"] / got["growth"] <= 2.0, got


# test_sweep_kill's sweep (steps, reference), its grid 2 shapes of 12 points (alphas x lrs)
FUSED_KILL_GRID = """[grid]
L = [8, 32]
M = [16]
D = [4]
alpha = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0]
lr = [0.5, 1.0]
seeds = 2
"""


@pytest.mark.slow
def test_a_fused_sweep_killed_mid_run_leaves_whole_points_and_a_rerun_trains_only_the_rest(tmp_path, metric_row_counts):
    import subprocess

    from tests.explorer.sweeps.test_sweep_kill import SPEC, environment, kill_driver_once_landed, sweep_command

    spec, results = tmp_path / "spec.toml", tmp_path / "results"
    spec.write_text(SPEC.replace('name = "killed"', 'name = "killed_fused"').split("[grid]")[0] + FUSED_KILL_GRID)
    store, total = Store(results), 24
    kill_driver_once_landed(spec, results, "killed_fused", 2, deadline_s=240)
    before = store.completed_trial_keys("killed_fused")
    assert 2 <= len(before) < total
    rerun = subprocess.run(sweep_command(spec, results), env=environment(), capture_output=True, text=True, timeout=400)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"({len(before)} already complete, {total - len(before)} run in" in rerun.stdout
    assert len(store.completed_trial_keys("killed_fused")) == total
    counts = metric_row_counts(store, "killed_fused")
    assert counts["n"] == counts["distinct_n"] >= total * 2  # no point written twice
    report = store.check()
    assert report.ok, report.lines()  # no temporary, duplicate, incomplete or missing-step file
