"""The session Ray (``explorer ray start|stop|status``): later sweeps join it, stopping it stops
its processes and nothing else, and a record whose holder is gone is not joined."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from explorer.cli import main
from explorer.sweeps import ray_records, ray_session, session_ray

from .test_cli_sweep import GOOD


def test_start_ticks_and_descendants_read_proc():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in session_ray.descendants(os.getpid())
        assert session_ray.start_ticks(child.pid) >= session_ray.start_ticks(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert session_ray.start_ticks(child.pid) is None


@pytest.fixture
def private_dir(tmp_path, monkeypatch):
    """This test's own private Ray folder (the record lives there), not the machine's."""
    monkeypatch.setattr(ray_records, "private_temp_dir", lambda: str(tmp_path))
    monkeypatch.setattr(session_ray, "private_temp_dir", lambda: str(tmp_path))
    return tmp_path


def test_without_a_session_ray_status_says_sweeps_start_their_own_and_stop_has_nothing_to_do(private_dir):
    done = CliRunner().invoke(main, ["ray", "status"])
    assert done.exit_code == 0 and done.output.startswith("no session Ray: each sweep starts its own embedded Ray")
    done = CliRunner().invoke(main, ["ray", "stop"])
    assert done.exit_code == 0 and done.output.startswith("no session Ray to stop"), done.output


def test_a_record_whose_holder_is_gone_is_removed_and_not_joined(private_dir):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record = {"address": "127.0.0.1:1", "holder_pid": dead.pid, "processes": [], "num_cpus": 2,
              "started_at": 0.0, "start_seconds": 9.0}
    (private_dir / ray_records.RECORD).write_text(json.dumps(record))
    assert ray_records.read_record().holder_pid == dead.pid
    assert ray_records.running_session() is None
    assert not (private_dir / ray_records.RECORD).exists()


def test_ray_starts_measured_here_price_the_next_start_and_a_session_ray_prices_none(private_dir, monkeypatch):
    low, high, said = ray_records.start_estimate()
    assert (low, high) == ray_records.UNMEASURED_START_S and "(not measured here yet: 5 s to 40 s" in said
    for seconds in (12.0, 9.5, 30.25):
        ray_records.record_start_seconds(seconds)
    assert ray_records.measured_starts() == [12.0, 9.5, 30.25]
    low, high, said = ray_records.start_estimate()
    assert (low, high) == (9.5, 30.25) and said == "Ray's start (measured here: 9.5 s to 30 s, the last 3)"
    for seconds in range(20):
        ray_records.record_start_seconds(float(seconds))
    assert ray_records.measured_starts() == [float(s) for s in range(10, 20)]  # the last STARTS_KEPT
    session = ray_records.SessionRay(address="127.0.0.1:6379", holder_pid=os.getpid(), processes=(), num_cpus=2,
                                     started_at=0.0, start_seconds=9.0)
    monkeypatch.setattr(ray_records, "running_session", lambda: session)
    assert ray_records.start_estimate()[:2] == (0.0, 2.0) and "joins the session Ray at 127.0.0.1:6379" in ray_records.start_estimate()[2]


def test_a_sweep_without_an_address_joins_a_running_session_ray(private_dir, monkeypatch):
    running = ray_records.SessionRay(address="127.0.0.1:6379", holder_pid=os.getpid(), processes=(), num_cpus=2,
                                     started_at=0.0, start_seconds=9.0)
    monkeypatch.setattr(ray_session, "running_session", lambda: running)
    started = []
    monkeypatch.setattr(ray_session, "_start", lambda address, num_cpus: started.append(address) or "joined")
    monkeypatch.setattr(ray_session.ray, "shutdown", lambda: None)
    with ray_session.ray_session(None) as kind:
        assert kind == "session" and started == ["127.0.0.1:6379"]
    with ray_session.ray_session("auto") as kind:  # an address given: that cluster, not the session Ray
        assert kind == "joined" and started[-1] == "auto"
    with ray_session.ray_session(None, join_session=False) as kind:  # the holder starts its own
        assert started[-1] is None


def ours(folder: str) -> list[int]:
    """The processes whose command line names ``folder`` (Ray's name the session folder in theirs)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if folder.encode() in entry.joinpath("cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.mark.slow
def test_start_a_session_ray_a_sweep_joins_it_stop_leaves_no_process(tmp_path):
    # A short private TMPDIR: the session folder is this test's own (Ray's socket paths must stay short).
    tmp = tempfile.mkdtemp(prefix="sr", dir="/tmp")
    env = dict(os.environ, TMPDIR=tmp, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")

    def explorer(*args):
        return subprocess.run([sys.executable, "-m", "explorer.cli", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)

    (tmp_path / "tiny.toml").write_text(GOOD)  # two trials
    try:
        started = explorer("ray", "start", "--num-cpus", "2")
        assert started.returncode == 0 and started.stdout.startswith("started:"), started.stdout + started.stderr
        record = json.loads(next(Path(tmp).glob("explorer-ray-*/session.json")).read_text())
        assert session_ray.start_ticks(record["holder_pid"]) is not None and record["address"].startswith("127.0.0.1:")
        assert record["processes"] and ours(tmp)  # Ray's processes, recorded, running in its folder
        assert explorer("ray", "start").stdout.startswith("already running:")
        swept = explorer("sweep", "tiny.toml", "--store", "results")
        assert swept.returncode == 0 and "2 ok" in swept.stdout, swept.stdout + swept.stderr
        assert "joined the session Ray" in swept.stderr
        assert "running at " + record["address"] in explorer("ray", "status").stdout  # the sweep left it running
        stopped = explorer("ray", "stop")
        assert stopped.returncode == 0 and stopped.stdout.startswith("stopped the session Ray at "), stopped.stdout
        assert session_ray.start_ticks(record["holder_pid"]) is None
        assert ours(tmp) == []  # no Ray process of that session is left
        assert all(session_ray.start_ticks(pid) != started for pid, started in record["processes"])
        assert explorer("ray", "status").stdout.startswith("no session Ray")
    finally:
        explorer("ray", "stop")
        shutil.rmtree(tmp, ignore_errors=True)
