"""A sweep's start-up failures and summaries, without a real Ray: Ray that cannot start is one
line with what to do (exit 2), a store that cannot be written is one line before Ray starts, a
Ray-wrapped store error is reported by its own message, the ETA comes from calibrated costs."""
from __future__ import annotations

import io
import signal

import pytest
import ray
from click.testing import CliRunner

import explorer
import explorer.sweeps.ray
from explorer.sweeps.ray import connection as ray_session
from explorer.sweeps.tracking import cleanup, failures, results
from explorer.sweeps.tracking.leases import Leases
from explorer.cli import main
from explorer.sweeps.tracking.progress import Progress, eta_seconds
from store import StoreError

from tests.explorer.cli.test_cli_sweep import GOOD

SPEC = GOOD.replace('name = "cli"', 'name = "fails"')


def test_ray_that_times_out_at_start_is_one_line_with_what_to_do(tmp_path, monkeypatch):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    assert not ray.is_initialized()

    def timed_out(*args, **kwargs):
        raise Exception("The current node timed out during startup. This could happen because some of the Ray "
                        "processes failed to startup.\nmore lines\nof traceback")

    monkeypatch.setattr(ray_session.ray, "init", timed_out)
    monkeypatch.setattr(ray_session.ray, "shutdown", lambda: None)
    done = CliRunner().invoke(main, ["sweep", str(spec), "--store", str(tmp_path / "results")])
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    # before Ray starts, the first estimate (standard error): what is left and its price, Ray's start included
    assert lines[0].startswith("left to run: 2 trials") and lines[1].startswith("here: ") and "Ray's start" in lines[1]
    lines = lines[2:]
    assert len(lines) == 1, done.output
    assert lines[0].startswith("error: cannot start an embedded Ray: The current node timed out during startup.")
    assert "retry" in lines[0] and "--address" in lines[0] and "Traceback" not in done.output


def test_an_unwritable_store_is_one_line_before_ray_starts(tmp_path, monkeypatch):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")  # a store below a file cannot be written, even by root

    def no_ray(*args, **kwargs):
        raise AssertionError("Ray started before the store was checked")

    monkeypatch.setattr(explorer.sweeps.ray, "ray_session", no_ray)  # the runner takes it from the face when trials run
    done = CliRunner().invoke(main, ["sweep", str(spec), "--store", str(blocker / "results")])
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: store ") and "cannot be" in lines[0], done.output
    with pytest.raises(StoreError, match="cannot be"):
        explorer.sweep(SPEC_DICT, store=blocker / "results", progress=False)


SPEC_DICT = {"name": "fails", "train": {"steps": 5}, "reference": {"depth": 16, "width": 8},
             "grid": {"L": [2, 4], "M": [1], "D": [4], "seeds": 2}}


def test_a_ray_wrapped_store_error_is_reported_by_its_own_message():
    cause = StoreError("cannot write s3://bucket/results/references/abc.parquet: AWS Error ACCESS_DENIED")
    wrapped = ray.exceptions.RayTaskError("ImplicitFunc.train", "Traceback (most recent call last):\n  ...", cause)
    text = failures.error_text(wrapped)
    assert text == "cannot write s3://bucket/results/references/abc.parquet: AWS Error ACCESS_DENIED"
    assert "RayTaskError" not in text and "ray::" not in text
    assert failures.error_text(ValueError("bad")) == "ValueError: bad"


def test_summary_of_an_interrupted_run_says_what_ran_and_how_to_resume():
    result = results.SweepResult(name="big", store="/r", total=90000, skipped=0, ran=120, ok=120, missing=89880,
                                    interrupted=signal.SIGINT, resume="explorer sweep big.toml --store /r",
                                    elsewhere={"host:42": 3})
    text = result.summary()
    assert "120 run in" in text and "90000 run" not in text
    assert "interrupted by SIGINT" in text and "explorer sweep big.toml --store /r" in text
    assert "3 claimed by another driver (host:42)" in text
    assert result.exit_code == 130
    result.interrupted = signal.SIGTERM
    assert result.exit_code == 143


def test_eta_is_calibrated_by_the_measured_cost_of_finished_points():
    # 10 points: one big (estimated 100 s of one core), nine small (1 s each); the big one runs
    # first (longest first) and, measured, the machine runs at half the estimated speed.
    costs = [100.0] + [1.0] * 9
    total = sum(costs)
    # after the big one: 200 s elapsed for 100 s of estimate -> 2 s per unit, 9 units left
    assert eta_seconds(200.0, 1, 10, done_cost=100.0, total_cost=total) == pytest.approx(18.0)
    # the count-based estimate would say 1800 s (20 x more) and then fall: the calibrated one is steady
    assert eta_seconds(200.0, 1, 10) == pytest.approx(1800.0)
    etas = []
    elapsed, done_cost = 200.0, 100.0
    for n in range(2, 10):
        elapsed += 2.0
        done_cost += 1.0
        etas.append(eta_seconds(elapsed, n, 10, done_cost=done_cost, total_cost=total))
    true_left = [2.0 * (10 - n) for n in range(2, 10)]
    assert all(abs(e - t) / t < 0.05 for e, t in zip(etas, true_left))
    # before anything finished: unknown (starting the workers costs what no model knows)
    assert eta_seconds(3.0, 0, 10, total_cost=total, slots=2) != eta_seconds(3.0, 0, 10, total_cost=total, slots=2)
    assert eta_seconds(5.0, 10, 10, done_cost=total, total_cost=total) == 0.0


def test_reference_locks_of_dead_local_workers_are_released(tmp_path):
    import os
    import socket

    from explorer.config.planning import plan
    from explorer.config.spec import parse_spec
    from store import SCHEMA_VERSION, Store

    the_plan = plan(parse_spec(dict(SPEC_DICT, grid={"L": [2], "M": [1], "D": [4, 8], "seeds": 2})), SCHEMA_VERSION)
    dead_key, live_key = [r.ref_key for r in the_plan.references]
    refs = tmp_path / "references"
    refs.mkdir()
    host = socket.gethostname()
    (refs / f".lock.{dead_key}").write_text(f"{host}:999999999")  # an interrupted worker, gone
    (refs / f".lock.{live_key}").write_text(f"{host}:{os.getpid()}")  # a live holder (another driver's)
    assert cleanup.release_dead_locks(Store(tmp_path), the_plan, wait_s=0.3) == 1
    assert sorted(p.name for p in refs.iterdir()) == [f".lock.{live_key}"]


def test_claims_of_a_dead_driver_of_this_machine_are_taken_over_at_once(tmp_path):
    import socket

    from store import Store

    store = Store(tmp_path)
    ghost = f"{socket.gethostname()}:999999999"  # this machine, a pid that does not run
    assert store.claim("s", ["k1", "k2"], ghost, ttl_s=600) == {"k1", "k2"}
    assert store.claim("s", ["k3"], "elsewhere:1", ttl_s=600) == {"k3"}
    leases = Leases(store, "s", ttl_s=600)
    try:
        assert leases.claim(["k1", "k2", "k3"]) == {"k1", "k2"}  # k3: a live claim of another machine
        assert leases.others({"k1", "k2", "k3"}) == {"k3": "elsewhere:1"}
    finally:
        leases.close()
    assert set(store.leases("s")) == {"k3"}


def test_memory_requests_bucket_by_powers_of_two_and_never_exceed_the_largest_node():
    from explorer.sweeps.ray.resources import MEMORY_REQUEST_FLOOR, memory_request

    node = 12 * 2**30
    assert memory_request(MEMORY_REQUEST_FLOOR - 1, node) == 0  # small points schedule by CPUs alone
    assert memory_request(300 * 2**20, node) == 512 * 2**20
    assert memory_request(500 * 2**20, node) == memory_request(400 * 2**20, node)  # one shape: actors reused
    assert memory_request(9 * 2**30, node) == node  # 16 GiB would wait forever on a 12 GiB node
    assert memory_request(9 * 2**30, 0) == 0  # a cluster that reports no memory resource


def test_a_point_larger_than_every_node_is_refused_before_it_waits_forever(monkeypatch):
    import explorer.sweeps.ray.resources as runner
    from explorer.errors import SpecError
    from explorer.config.spec import load_spec

    nodes = [{"Alive": True, "Resources": {"CPU": 8.0, "memory": 4 * 2**30}}]
    monkeypatch.setattr(runner.ray, "nodes", lambda: nodes)
    spec = load_spec({"name": "big", "grid": {"L": [64], "M": [1024], "D": [1024], "seeds": 4}})
    with pytest.raises(SpecError, match="the largest Ray node"):
        runner.check_resources(spec)
    small = load_spec({"name": "small", "grid": {"L": [4], "M": [4], "D": [8]}})
    assert runner.check_resources(small) == 8


def test_points_of_tune_trials_lost_for_good_run_once_more(monkeypatch):
    import types

    import explorer.sweeps.run.trial_phase as runner

    points = [types.SimpleNamespace(trial_key=k) for k in ("a", "b", "c")]
    landed: dict[str, str] = {}
    calls = []

    def run_trials(run, todo):
        calls.append([t.trial_key for t in todo])
        if len(calls) == 1:  # the first pass: "c"'s actor died with its node, Tune gave up on it
            landed.update(a="ok", b="failed")
            return ["ActorDiedError: The actor died unexpectedly"]
        landed.update({t.trial_key: "ok" for t in todo})
        return []

    monkeypatch.setattr(runner, "run_trials", run_trials)
    store = types.SimpleNamespace(trial_statuses=lambda sweep: dict(landed))
    spec = types.SimpleNamespace(name="s")
    bar = types.SimpleNamespace(message=lambda text: None)
    run = runner.RunContext(spec, store, None, {}, set(), 2, None, bar, lambda: None)
    causes = runner.run_trials_again_when_lost(run, points)
    assert calls == [["a", "b", "c"], ["c"]]  # only the point without rows runs again, once
    assert landed == {"a": "ok", "b": "failed", "c": "ok"}
    assert causes == ["ActorDiedError: The actor died unexpectedly"]


def test_until_a_trial_ends_the_progress_eta_is_the_first_estimate_with_rays_start():
    bar = Progress(total=4, stream=io.StringIO(), interactive=False)
    assert bar.line().endswith("ETA ?")  # no estimate: unknown
    bar.expect((12.0, 40.0))  # compute plus Ray's start measured from 8 s to 36 s here
    start = bar.expected_end[0] - 12.0
    assert bar.line(now=start + 2.0).endswith("ETA ~10.0s-38.0s (dry-run estimate)")
    bar.expect((30.0, 30.0))
    assert bar.line(now=bar.expected_end[0] - 30.0).endswith("ETA ~30.0s (dry-run estimate)")
    assert bar.line(now=bar.expected_end[1] + 1.0).endswith("ETA ?")  # past it: unknown again, not negative
    bar.begin(total_cost=4.0, slots=1)
    now = bar.started
    bar.counts.done, bar.counts.done_cost = 1, 1.0
    # the first pack ended: no rate yet (the estimate with the 4 trials' writes, TRIAL_OVERHEAD_S each)
    assert bar.line(now=now + 5.0).endswith("ETA ~25.1s (dry-run estimate)")
    bar.counts.done, bar.counts.done_cost = 2, 2.0
    assert bar.line(now=now + 7.0).endswith("(dry-run estimate)")  # a window shorter than the 5 s to the first
    # a pack since the first, over a window as long as the phase took to reach it: the measured rate takes over
    assert bar.line(now=now + 10.0).endswith("ETA 10.0s")
