"""An adaptive sweep on Ray: one Ray session and one pool of workers serve every round, and the
next round's points start while the previous round's last points still run (read from the
workers' recorded start and end times, not from wall-clock thresholds)."""
from __future__ import annotations

import time

import pytest

from explorer.config.spec import load_spec
from explorer.sweeps.adaptive import SessionRunner, read_rounds, run_adaptive
from store import Store

from tests.explorer.sweeps.adaptive.adaptive_fake import small_adaptive_spec

pytestmark = pytest.mark.slow


def test_one_pool_of_workers_serves_every_round_without_barriers(tmp_path, monkeypatch):
    from explorer.sweeps.ray.imports import ray

    starts = []
    real_init = ray.init

    def counted_init(*args, **kwargs):
        starts.append(kwargs.get("address"))
        return real_init(*args, **kwargs)

    monkeypatch.setattr(ray, "init", counted_init)
    path = tmp_path / "spec.toml"
    path.write_text(small_adaptive_spec("pooled"))
    spec = load_spec(str(path))
    st = Store(tmp_path / "results")
    with SessionRunner(spec, st, num_cpus=2, progress=False) as runner:
        result = run_adaptive(spec, st, runner)
        records = runner.records
    assert result.exit_code == 0 and result.stop_reason is not None, result.summary()
    assert len(starts) == 1  # one Ray session for the whole loop
    rounds = read_rounds(st, "pooled")
    assert rounds["round"].nunique() >= 3
    points = rounds[rounds["entry"] == "point"]
    assert {r.trial_key for r in records} == set(points["trial_key"]) == set(st.trial_statuses("pooled"))
    assert len({r.worker_pid for r in records}) <= 2  # the same two workers ran every round's points
    # a round is not a barrier: some round's first point started before the previous round's last one ended
    round_of = dict(zip(points["trial_key"], points["round"]))
    start = {n: min(r.started for r in records if round_of[r.trial_key] == n) for n in set(round_of.values())}
    end = {n: max(r.ended for r in records if round_of[r.trial_key] == n) for n in set(round_of.values())}
    assert any(start[n + 1] < end[n] for n in sorted(start)[:-1] if n + 1 in start)
    assert st.check().ok


def test_the_pools_workers_record_the_trials_of_a_diverged_reference_failed(tmp_path):
    # identity activation at lr=1000: the reference blows up; the worker that needs it first finds
    # so, and its trials are recorded failed with the reason (as a sweep's reference phase does)
    from explorer.config.spec import parse_spec

    from tests.explorer.sweeps.test_sweep import spec_with

    spec = parse_spec(spec_with(name="failing", model={"activation": "identity"},
                                grid={"L": [2, 4], "M": [1], "D": [4], "lr": [1000.0], "seeds": 2}))
    st = Store(tmp_path / "results")
    with SessionRunner(spec, st, num_cpus=2, progress=False) as runner:
        runner.submit(sorted(runner.trials))
        while runner.pending():
            runner.wait()
        records = runner.records
    assert sorted(r.status for r in records) == ["failed", "failed"]
    errors = st.trial_column("failing", "error")
    assert len(errors) == 2 and all("reference" in e and "diverged" in e for e in errors.values()), errors
    assert st.check().ok


def test_the_pool_hands_out_every_queued_point_while_the_driver_is_busy(tmp_path):
    # the driver queues twice as many points as the workers hold and then makes no call at all (as
    # while it refits): the pool's own thread hands each worker its next point as one finishes
    path = tmp_path / "spec.toml"
    path.write_text(small_adaptive_spec("fed"))
    spec = load_spec(str(path))
    st = Store(tmp_path / "results")
    with SessionRunner(spec, st, num_cpus=2, progress=False) as runner:
        keys = sorted(runner.trials)[:12]
        runner.submit(keys)
        held = runner.pool.slots * runner.pool.DEPTH
        assert len(keys) > 2 * held
        deadline = time.monotonic() + 600  # a guard against a hang, not a timing: the points are tiny
        while len(runner.records) < len(keys) and time.monotonic() < deadline:
            time.sleep(0.05)  # the driver is "refitting": no wait, no submit
        records = runner.records
        assert sorted(r.trial_key for r in records) == sorted(keys)
        assert sorted(runner.wait()) == sorted(keys)  # the driver then collects them all, once
        assert runner.pending() == 0 and runner.wait() == []
    assert set(st.trial_statuses("fed")) == set(keys)
