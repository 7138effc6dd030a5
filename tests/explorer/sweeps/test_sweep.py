"""Sweeps on a local Ray: every row lands once, reruns resume, failures are recorded, resources
are checked; plus the driver-free parts (packing, retries, failed rows, progress)."""
from __future__ import annotations

import io

import pytest
import ray

import explorer
from explorer.sweeps.ray import resources, threads
from explorer.sweeps.references import cache as reference_cache
from explorer.sweeps.references import phase as reference_phase
from explorer.sweeps.run import trial_phase
from explorer.sweeps.worker import packing
from explorer.sweeps.worker import training as worker
from explorer.errors import SpecError
from explorer.sweeps.tracking.progress import Progress
from explorer.config.planning import plan
from explorer.config.spec import parse_spec
from store import SCHEMA_VERSION, Store
from store.catalog import list_kind
from trials import compute_reference, train_trial

TINY = {
    "name": "tiny",
    "train": {"steps": 5},
    "reference": {"depth": 16, "width": 8},
    "grid": {"L": [2, 4, 8, 16], "M": [1, 2, 4], "D": [4, 8], "seeds": 2},
}


def spec_with(**changes) -> dict:
    raw = {k: dict(v) if isinstance(v, dict) else v for k, v in TINY.items()}
    for key, value in changes.items():
        section, _, name = key.partition("__")
        if name:
            raw.setdefault(section, {})[name] = value
        else:
            raw[section] = value
    return raw


def data_files(root, kind: str = "") -> dict[str, float]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*.parquet") if kind in str(p)}


@pytest.mark.slow
def test_sweep_on_embedded_ray_lands_every_row_and_rerun_does_no_work(tmp_path, metric_row_counts):
    assert not ray.is_initialized()
    result = explorer.sweep(TINY, store=tmp_path, progress=False, num_cpus=2)
    assert not ray.is_initialized()  # the embedded Ray is shut down on exit
    # what each trial computes on its own, without Ray or a store: whether a seed of this grid
    # diverges (loss up 10x in 5 steps) depends on the draw of its units, so it is computed, not pinned
    planned_trials = plan(parse_spec(TINY), SCHEMA_VERSION)
    references = {r.ref_key: compute_reference(r.config) for r in planned_trials.references}
    direct = {t.trial_key: train_trial(t.config, references[t.ref_key]) for t in planned_trials.trials}
    expected = {key: "diverged" if any(row["status"] == "diverged" for row in rows) else "ok" for key, rows in direct.items()}
    n_diverged = sorted(expected.values()).count("diverged")
    assert (result.total, result.ran, result.ok, result.diverged, result.failed, result.exit_code) == \
        (24, 24, 24 - n_diverged, n_diverged, 0, 0)
    store = Store(tmp_path)
    counts = store.query("SELECT count(*) AS rows, count(DISTINCT trial_key) AS trials, "
                         "count(DISTINCT node_id) AS nodes FROM metrics", sweep="tiny").to_pylist()[0]
    n_rows = sum(len(rows) for rows in direct.values())
    assert counts == {"rows": n_rows, "trials": 24, "nodes": 1}
    assert metric_row_counts(store, "tiny") == {"n": n_rows, "distinct_n": n_rows}
    assert store.completed_trial_keys("tiny") == set(expected)
    assert store.check().ok
    # every point of two ok seeds or more has its bias and fluctuation (the Gram rows came through Ray)
    points = store.query("SELECT count(*) FILTER (WHERE n_seeds >= 2) AS pairs, count(bias2_out) AS decomposed, "
                         "count(fluct_hidden) AS hidden FROM points", sweep="tiny").to_pylist()[0]
    assert points["pairs"] > 0 and points == {"pairs": points["pairs"], "decomposed": points["pairs"], "hidden": points["pairs"]}
    # The sweep compacted its trials rows: the next start reads one file, not one per trial.
    trials_files = list_kind(store.files, "tiny", "trials")
    assert (len(trials_files.singles), len(trials_files.compacted)) == (0, 1)
    metric_files = list_kind(store.files, "tiny", "metrics")  # and its metric rows: later reads scan one file
    assert (len(metric_files.singles), len(metric_files.compacted)) == (0, 1)
    statuses = store.trial_statuses("tiny")
    assert statuses == expected

    before = data_files(tmp_path)
    again = explorer.sweep(TINY, store=tmp_path, progress=False)
    assert (again.ran, again.skipped, again.ok, again.exit_code) == (0, 24, 24 - n_diverged, 0)
    assert data_files(tmp_path) == before  # not one file rewritten
    assert not ray.is_initialized()  # nothing to do: Ray was not even started


_EMBEDDED = """
import json, os, warnings
warnings.simplefilter("error")  # the not-on-loopback warning fails the run
from explorer.sweeps.ray.connection import ray_session
import ray
with ray_session(None, num_cpus=1) as kind:
    seen = {"kind": kind, "nodes": sorted({n["NodeManagerAddress"] for n in ray.nodes()}),
            "gcs": ray.get_runtime_context().gcs_address}
seen["up_after"] = ray.is_initialized()
seen["switch_left"] = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
print(json.dumps(seen))
"""


@pytest.mark.slow
def test_embedded_ray_listens_on_loopback_only_and_is_shut_down():
    # In a fresh interpreter, as the CLI runs it: explorer imports Ray (tests here imported it first).
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    done = subprocess.run([sys.executable, "-c", _EMBEDDED], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert (seen["kind"], seen["nodes"], seen["up_after"]) == ("embedded", ["127.0.0.1"], False)
    assert seen["gcs"].startswith("127.0.0.1:")
    assert seen["switch_left"] is None  # processes started later (a `ray start` for a cluster) do not inherit it


@pytest.mark.slow
def test_extending_the_grid_runs_only_the_new_points(tmp_path, local_ray):
    small = spec_with(grid={"L": [2, 4], "M": [1], "D": [4], "seeds": 2})
    first = explorer.sweep(small, store=tmp_path, progress=False)
    assert (first.ran, first.ok) == (2, 2)
    store = Store(tmp_path)
    order = "ORDER BY trial_key, seed, step"
    metrics_before = store.query(f"SELECT * FROM metrics {order}", sweep="tiny")
    trials_before = store.query("SELECT * FROM trials ORDER BY trial_key", sweep="tiny")
    extended = explorer.sweep(small, store=tmp_path, progress=False, overrides=["grid.L=[2, 4, 8]", "grid.M=[1, 2]"])
    assert (extended.total, extended.skipped, extended.ran, extended.ok) == (6, 2, 4, 6)
    old_keys = ", ".join(f"'{k}'" for k in trials_before.column("trial_key").to_pylist())
    # the old trials' rows, merged with the new ones into the sweep's compacted file, are the same rows
    metrics_after = store.query(f"SELECT * FROM metrics WHERE trial_key IN ({old_keys}) {order}", sweep="tiny")
    assert metrics_after.equals(metrics_before)
    trials_after = store.query(f"SELECT * FROM trials WHERE trial_key IN ({old_keys}) ORDER BY trial_key", sweep="tiny")
    assert trials_after.equals(trials_before)  # their trials rows too (merged into the new compacted file)
    assert ray.is_initialized()  # a Ray the caller started stays up


@pytest.mark.slow
def test_diverged_trials_are_recorded_and_the_sweep_still_succeeds(tmp_path, local_ray):
    # tanh at L=2, M=1: lr=1 trains; lr=1000 blows the trial's output up past the divergence
    # threshold while the wide reference (bounded activations, averaged particles) stays finite.
    raw = spec_with(grid={"L": [2], "M": [1], "D": [4], "lr": [1.0, 1000.0], "seeds": 2})
    result = explorer.sweep(raw, store=tmp_path, progress=False)
    assert (result.ok, result.diverged, result.failed, result.exit_code) == (1, 1, 0, 0)
    rows = Store(tmp_path).query("SELECT seed, max(step) AS last, count(*) FILTER (status = 'diverged') AS marks "
                                 "FROM metrics WHERE lr = 1000 GROUP BY seed", sweep="tiny").to_pylist()
    assert any(r["marks"] == 1 and r["last"] < 5 for r in rows)  # its rows stop at the diverged step
    rerun = explorer.sweep(raw, store=tmp_path, progress=False)
    assert (rerun.ran, rerun.skipped) == (0, 2)  # diverged trials are final, not retried


@pytest.mark.slow
def test_failed_trials_are_recorded_with_their_error_and_run_again(tmp_path, local_ray, metric_row_counts):
    # identity activation at lr=1000: the reference itself blows up, so its trials cannot be
    # measured and are recorded failed (one row per seed at step 0, NaN metrics, the error).
    raw = spec_with(name="failing", model={"activation": "identity"},
                    grid={"L": [2, 4], "M": [1], "D": [4], "lr": [1000.0], "seeds": 2})
    result = explorer.sweep(raw, store=tmp_path, progress=False)
    assert (result.ok, result.failed, result.exit_code) == (0, 2, 1)
    assert "reference" in result.failures[0] and "diverged" in result.failures[0]
    assert "2 failed" in result.summary()
    store = Store(tmp_path)
    failed = store.query("SELECT L, seed, step, error, err_out FROM metrics ORDER BY L, seed", sweep="failing").to_pylist()
    assert [(r["L"], r["seed"], r["step"]) for r in failed] == [(2, 0, 0), (2, 1, 0), (4, 0, 0), (4, 1, 0)]
    assert all("diverged" in r["error"] and r["err_out"] != r["err_out"] for r in failed)  # message, NaN
    rerun = explorer.sweep(raw, store=tmp_path, progress=False)
    assert (rerun.ran, rerun.failed, rerun.exit_code) == (2, 2, 1)  # failed trials run again
    assert metric_row_counts(store, "failing") == {"n": 4, "distinct_n": 4}
    errors = store.trial_column("failing", "error")
    assert len(errors) == 2 and all("reference" in e and "diverged" in e for e in errors.values())


@pytest.mark.slow
def test_gpu_request_on_a_cluster_without_gpus_is_a_clear_error(tmp_path, local_ray):
    with pytest.raises(SpecError, match=r"\[resources\] gpus_per_trial: 0.5 GPU per trial, but the Ray cluster has "
                                        r"2 CPUs and 0 GPUs"):
        explorer.sweep(spec_with(resources={"gpus_per_trial": 0.5}), store=tmp_path, progress=False)
    with pytest.raises(SpecError, match=r"cpus_per_trial: a trial asks for 4 CPUs"):
        explorer.sweep(spec_with(resources={"cpus_per_trial": 4}), store=tmp_path, progress=False)
    assert not Store(tmp_path).exists()  # refused before anything ran


# --- the parts that need no Ray --------------------------------------------------------------


def test_packing_balances_cost_and_keeps_every_point_once():
    the_plan = plan(parse_spec(spec_with(grid={"L": [2, 4, 8, 16, 32, 64, 128], "M": [1, 4, 16, 64], "D": [8]})),
                    SCHEMA_VERSION)
    packs = packing.pack(list(the_plan.trials), slots=2)
    keys = [t.trial_key for p in packs for t in p]
    assert sorted(keys) == sorted(t.trial_key for t in the_plan.trials)
    assert len(packs) >= 8  # at least 4 per slot
    loads = [sum(map(packing.estimated_seconds, p)) for p in packs]
    assert loads == sorted(loads, reverse=True)  # longest first
    biggest = max(map(packing.estimated_seconds, the_plan.trials))
    assert max(loads) - min(loads) <= biggest  # longest-first greedy: within one point
    assert [len(p) for p in packing.pack(list(the_plan.trials), slots=2, points_per_trial=5)][:2] == [5, 5]
    tiny = plan(parse_spec(spec_with(grid={"L": [2, 4, 8], "M": [1, 2, 4, 8], "D": [4], "seeds": 1},
                                     train={"steps": 5})), SCHEMA_VERSION)
    many = [t for _ in range(50) for t in tiny.trials]  # 600 tiny points
    assert len(packing.pack(many, slots=2)) == 8  # tiny points share Tune trials


def _job(store, the_plan, retries=2):
    return worker.Job(sweep="tiny", store=store, packs=(), references={r.ref_key: r for r in the_plan.references},
                             reference_errors={}, rerun=frozenset(), retries=retries, ledger=None)


def test_a_point_that_raises_is_retried_then_recorded_failed(tmp_path, monkeypatch):
    the_plan = plan(parse_spec(spec_with(grid={"L": [2], "M": [1], "D": [4]})), SCHEMA_VERSION)
    trial = the_plan.trials[0]
    store = Store(tmp_path)
    real = worker.train_trial
    calls = []

    def flaky(config, reference):
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("transient worker trouble")
        return real(config, reference)

    monkeypatch.setattr(worker, "train_trial", flaky)
    status = worker.run_point(_job(store, the_plan, retries=2), trial, node_id="node-a")
    assert (status, len(calls)) == ("ok", 3)

    calls.clear()
    monkeypatch.setattr(worker, "train_trial", lambda c, r: calls.append(1) or 1 / 0)
    status = worker.run_point(_job(store, the_plan, retries=1), trial, node_id="node-a")
    assert (status, len(calls)) == ("failed", 2)
    rows = store.query("SELECT status, error, node_id FROM trials", sweep="tiny").to_pylist()
    assert rows == [{"status": "failed", "error": "ZeroDivisionError: division by zero", "node_id": "node-a"}]


def test_progress_redraws_in_place_on_a_terminal_and_prints_lines_otherwise():
    tty = io.StringIO()
    bar = Progress(total=10, stream=tty, interactive=True)
    bar.update(force=True, done=3, running=2, failed=1)
    bar.update(force=True, done=4)
    bar.finish()
    text = tty.getvalue()
    assert text.count("\r") >= 3 and text.count("\n") == 1
    assert "trials 4/10 | running 2 | failed 1" in text and "ETA" in text

    log = io.StringIO()
    bar = Progress(total=10, stream=log, interactive=False, plain_every_s=3600)
    bar.update(done=1)
    bar.update(done=2)  # throttled: no line
    bar.finish()
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in log.getvalue()
    assert lines[-1].startswith("trials 2/10")


@pytest.mark.slow
def test_worker_tasks_run_torch_with_the_cpus_ray_gave_them(tmp_path, local_ray):
    the_plan = plan(parse_spec(spec_with(grid={"L": [2], "M": [1], "D": [4]})), SCHEMA_VERSION)
    store = Store(tmp_path)
    task = ray.remote(reference_cache.reference_task)
    _, one, _ = ray.get(task.options(num_cpus=1).remote(store, the_plan.references[0]))
    _, two, _ = ray.get(task.options(num_cpus=2).remote(store, the_plan.references[0]))
    assert (one, two) == (1, 2)
    override = task.options(num_cpus=1, runtime_env={"env_vars": {threads.THREADS_ENV: "3"}})
    assert ray.get(override.remote(store, the_plan.references[0]))[1] == 3


@pytest.mark.slow
def test_a_reference_that_raises_stops_its_group_and_the_summary_shows_its_error(tmp_path, local_ray):
    (tmp_path / "references").write_text("a file where the reference cache goes: every reference write fails")
    # D = 16: a reference no other test of this module computed (workers cache references in memory)
    result = explorer.sweep(spec_with(grid={"L": [2, 4], "M": [1], "D": [16]}), store=tmp_path, progress=False)
    assert (result.ok, result.failed, result.missing, result.exit_code) == (0, 0, 2, 1), result.summary()
    assert not Store(tmp_path).completed_trial_keys("tiny")  # its trials were not scheduled
    text = result.summary()
    assert "reference " in text and " unavailable: " in text, text
    assert "RayTaskError" not in text and "ray::" not in text and "Traceback" not in text, text


@pytest.mark.slow
def test_points_that_ask_ray_for_memory_are_scheduled_and_run(tmp_path, local_ray, monkeypatch):
    # Every point asks for memory here (the floor at 0), as the large points of a real grid do.
    monkeypatch.setattr(resources, "MEMORY_REQUEST_FLOOR", 0)
    asked = []
    real = resources.memory_request
    for caller in (reference_phase, trial_phase):  # the phases that ask Ray for memory, each its own name
        monkeypatch.setattr(caller, "memory_request", lambda need, node: asked.append(real(need, node)) or asked[-1])
    # D = 32: a reference no other test of this module computed, so its task asks for memory too.
    result = explorer.sweep(spec_with(grid={"L": [2, 4], "M": [1, 2], "D": [32]}), store=tmp_path, progress=False)
    assert (result.ok, result.failed, result.missing) == (4, 0, 0), result.summary()
    assert asked and all(a > 0 for a in asked)
