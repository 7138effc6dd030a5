"""The session Ray (``explorer ray start|stop|status``): later sweeps join it, stopping it stops
its processes and nothing else, and a record whose holder is gone is not joined."""
from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from explorer.cli import main
from explorer.errors import ClusterError
from explorer.sweeps.ray import connection as ray_session
from explorer.sweeps.ray import probe as ray_probe
from explorer.sweeps.ray import processes
from explorer.sweeps.ray import records as ray_records
from explorer.sweeps.ray import session as session_ray
from store import Store, code_fingerprint

from tests.explorer.cli.test_cli_sweep import GOOD
from tests.paths import REPO_ROOT


def test_start_ticks_and_descendants_read_proc():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in session_ray.descendants(os.getpid())
        assert session_ray.start_ticks(child.pid) >= session_ray.start_ticks(os.getpid())
        assert processes.same_process(child.pid, processes.start_ticks(child.pid), processes.boot_id())
        assert not processes.same_process(child.pid, processes.start_ticks(child.pid) + 1, processes.boot_id())
        assert not processes.same_process(child.pid, processes.start_ticks(child.pid), "another-boot")
        assert not processes.same_process(child.pid, None, processes.boot_id())  # not recorded: not verified
    finally:
        child.kill()
        child.wait()
    assert session_ray.start_ticks(child.pid) is None


@pytest.fixture
def private_dir(tmp_path, monkeypatch):
    """This test's own runtime folder (the session record lives there) and private Ray folder."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(ray_records, "private_temp_dir", lambda: str(tmp_path))
    folder = Path(ray_records.session_dir())
    assert folder.parent.parent == runtime
    return folder


def write_record(folder: Path, holder_pid: int, address: str = "127.0.0.1:1", processes=(), **identity) -> Path:
    """A session record as the holder writes it (``identity``: holder_started, boot_id, fingerprint...)."""
    record = {"address": address, "holder_pid": holder_pid, "processes": [list(p) for p in processes], "num_cpus": 2,
              "started_at": 0.0, "start_seconds": 9.0, **identity}
    path = folder / ray_records.RECORD
    path.write_text(json.dumps(record))
    return path


def own_identity(**changes) -> dict:
    """This test process as a session's holder: its start time, this boot, this code."""
    return {"holder_started": processes.start_ticks(os.getpid()), "boot_id": processes.boot_id(),
            "fingerprint": code_fingerprint(), "environment": ray_records.environment_label(), **changes}


def test_without_a_session_ray_status_says_sweeps_start_their_own_and_stop_has_nothing_to_do(private_dir):
    done = CliRunner().invoke(main, ["ray", "status"])
    assert done.exit_code == 0 and done.output.startswith("no session Ray for this environment (code ")
    assert f"python {sys.prefix}" in done.output  # the environment is named
    done = CliRunner().invoke(main, ["ray", "stop"])
    assert done.exit_code == 0 and done.output.startswith("no session Ray to stop"), done.output


def test_a_record_whose_holder_is_gone_is_removed_with_one_note_and_not_joined(private_dir):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = write_record(private_dir, dead.pid, **own_identity(holder_started=1.0))
    assert ray_records.read_record().holder_pid == dead.pid
    check = ray_records.check_session()
    assert check.session is None and ray_records.running_session() is None
    assert check.note == (f"removed a stale session Ray record: its holder process {dead.pid} has ended; "
                          "nothing was signalled")
    assert not path.exists()


def test_the_session_folder_is_private_to_the_user_and_keyed_by_the_environment(tmp_path, monkeypatch):
    # hole 7: not under a shared TMPDIR, and another checkout or virtualenv has a folder of its own
    runtime, cache, tmp = tmp_path / "run", tmp_path / "cache", tmp_path / "tmp"
    for folder in (runtime, cache, tmp):
        folder.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    here = ray_records.record_path()
    assert here.parent.parent == runtime / f"explorer-ray-{os.getuid()}" and here.name == "session.json"
    assert stat.S_IMODE(here.parent.stat().st_mode) == 0o700 == stat.S_IMODE(here.parent.parent.stat().st_mode)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "another-venv"))
    other = ray_records.record_path()
    assert other != here and other.parent.parent == here.parent.parent
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert ray_records.record_path().parent.parent == cache / f"explorer-ray-{os.getuid()}"
    assert not any(tmp.iterdir())


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


def test_a_sweep_without_an_address_joins_a_running_session_ray_of_its_own_code(private_dir, monkeypatch):
    running = ray_records.SessionRay(address="127.0.0.1:6379", holder_pid=os.getpid(), processes=(), num_cpus=2,
                                     started_at=0.0, start_seconds=9.0, fingerprint=code_fingerprint())
    monkeypatch.setattr(ray_session, "check_session", lambda: ray_records.SessionCheck(running))
    started = []
    monkeypatch.setattr(ray_session, "_start",
                        lambda address, num_cpus, session=None: started.append(address) or ("session" if session else "x"))
    monkeypatch.setattr(ray_session.ray, "shutdown", lambda: None)
    with ray_session.ray_session(None) as kind:
        assert kind == "session" and started == ["127.0.0.1:6379"]
    with ray_session.ray_session("auto") as kind:  # an address given: that cluster, not the session Ray
        assert kind == "x" and started[-1] == "auto"
    with ray_session.ray_session(None, join_session=False) as kind:  # the holder starts its own
        assert started[-1] is None
    with ray_session.ray_session("session") as kind:
        assert kind == "session" and started[-1] == "127.0.0.1:6379"


def test_a_session_ray_of_other_code_is_not_joined_and_address_session_refuses(private_dir, monkeypatch):
    # hole 2: code edited since `explorer ray start` (or another checkout's session) is not run
    other = ray_records.SessionRay(address="127.0.0.1:6379", holder_pid=os.getpid(), processes=(), num_cpus=2,
                                   started_at=0.0, start_seconds=9.0, fingerprint="0.1.0+000000000000")
    monkeypatch.setattr(ray_session, "check_session", lambda: ray_records.SessionCheck(other))
    said, started = [], []
    monkeypatch.setattr(ray_session, "_start", lambda address, num_cpus, session=None: started.append(address) or "embedded")
    monkeypatch.setattr(ray_session.ray, "shutdown", lambda: None)
    monkeypatch.setattr(ray_session, "warn_if_not_loopback", lambda: None)
    with ray_session.ray_session(None, say=said.append) as kind:
        assert kind == "embedded" and started == [None]
    assert said == [f"the session Ray at 127.0.0.1:6379 runs other code (0.1.0+000000000000; this is "
                    f"{code_fingerprint()}): this sweep starts its own embedded Ray; `explorer ray stop` then "
                    "`explorer ray start` runs this code"]
    with pytest.raises(ClusterError, match=r"^--address session: the session Ray at 127.0.0.1:6379 runs other code"):
        with ray_session.ray_session("session"):
            pass


@pytest.fixture
def listener():
    """A port that accepts TCP connections and never says a word (not a Ray)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted = []
    stop = threading.Event()

    def serve():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_the_probe_tells_a_ray_from_a_port_that_is_not_one(listener):
    # hole 3: an address that accepts TCP but is not Ray
    said = ray_probe.probe(listener, 1.0)
    assert said == "it accepts connections but sends nothing back within 1 s (a Ray answers at once): not a Ray"
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert ray_probe.probe(f"127.0.0.1:{port}", 1.0).startswith("nothing listens there (")
    assert ray_probe.probe("auto") is None and ray_probe.host_port("ray://example.org:10001") == ("example.org", 10001)
    with socket.socket() as web:
        web.bind(("127.0.0.1", 0))
        web.listen(1)
        answer = threading.Thread(target=lambda: web.accept()[0].sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n"), daemon=True)
        answer.start()
        assert ray_probe.probe(f"127.0.0.1:{web.getsockname()[1]}", 2.0) == \
            "it answers, but not as a Ray does ('HTTP/1.1 400 Bad Request')"
        answer.join()


def test_a_session_whose_address_is_not_ray_is_not_running_and_a_sweep_does_not_join_it(private_dir, listener, monkeypatch):
    # holes 3 and 6: the holder lives (this process), but its address is a plain TCP listener
    write_record(private_dir, os.getpid(), address=listener, **own_identity())
    monkeypatch.setattr(ray_probe, "PROBE_TIMEOUT_S", 1.0)
    monkeypatch.setattr(ray_records, "PROBE_TIMEOUT_S", 1.0)
    done = CliRunner().invoke(main, ["ray", "status"])
    assert done.exit_code == 0 and done.output.startswith(f"session Ray: not answering at {listener} "), done.output
    assert "not a Ray" in done.output and "`explorer ray stop` ends it" in done.output
    said = []
    monkeypatch.setattr(ray_records, "check_session", functools.partial(ray_records.check_session, 1.0))
    assert ray_session.session_to_join(None, True, said.append) is None
    assert len(said) == 1 and said[0].startswith(f"the session Ray at {listener} does not answer (")
    with pytest.raises(ClusterError, match="^cannot join the session Ray at"):
        ray_session.session_to_join("session", True, said.append)


def test_a_session_whose_raylet_ended_is_not_running(private_dir, listener):
    # hole 6: the holder lives and the address answers, but the raylet recorded is gone
    gone = (os.getpid(), processes.start_ticks(os.getpid()) + 1, "raylet")  # this number, another start time
    write_record(private_dir, os.getpid(), address=listener, processes=[gone], **own_identity())
    check = ray_records.check_session()
    assert check.session is not None and check.running is None
    assert check.problem == f"its raylet (process {os.getpid()}) has ended"
    assert "not answering" in CliRunner().invoke(main, ["ray", "status"]).output


def test_a_join_is_bounded_in_time(monkeypatch):
    monkeypatch.setenv(ray_probe.JOIN_TIMEOUT_ENV, "0.3")
    assert ray_probe.join_timeout_s() == 0.3
    started = time.monotonic()
    with pytest.raises(ray_probe.JoinTimedOut):
        with ray_probe.time_bound(ray_probe.join_timeout_s()):
            while True:
                try:
                    time.sleep(0.05)
                except Exception:  # noqa: BLE001 - as Ray's retry loops do: the bound still ends it
                    pass
    assert time.monotonic() - started < 2.0
    for bad in ("", "x", "-1", "nan", "0"):
        monkeypatch.setenv(ray_probe.JOIN_TIMEOUT_ENV, bad)
        assert ray_probe.join_timeout_s() == ray_probe.DEFAULT_JOIN_TIMEOUT_S


@pytest.mark.slow
def test_stop_never_signals_a_process_whose_number_a_stale_record_names(private_dir):
    # hole 1: the holder died and its number went to a process of someone else (here the test's own)
    sleeper = subprocess.Popen(["setsid", "sleep", "3000"])
    try:
        time.sleep(0.2)
        assert processes.start_ticks(sleeper.pid) is not None
        records = [{},  # an older explorer's record: no identity
                   own_identity(holder_started=processes.start_ticks(sleeper.pid) - 5),  # the number reused
                   own_identity(holder_started=processes.start_ticks(sleeper.pid), boot_id="an-earlier-boot")]
        for identity in records:
            write_record(private_dir, sleeper.pid, processes=[(sleeper.pid, processes.start_ticks(sleeper.pid) - 5, "raylet")],
                         **identity)
            done = CliRunner().invoke(main, ["ray", "stop"])
            assert done.exit_code == 0, done.output
            lines = done.output.splitlines()
            assert lines[0].startswith(f"removed a stale session Ray record: its holder process {sleeper.pid} ")
            assert lines[0].endswith("; nothing was signalled") and lines[1].startswith("no session Ray to stop")
            time.sleep(0.3)
            assert sleeper.poll() is None and processes.start_ticks(sleeper.pid) is not None  # still alive
            assert not (private_dir / ray_records.RECORD).exists()
    finally:
        sleeper.kill()
        sleeper.wait()


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


def private_env(tmp: str) -> dict:
    """A short private TMPDIR (Ray's socket paths must stay short) and runtime and cache folders."""
    for name in ("run", "cache"):
        os.makedirs(os.path.join(tmp, name), mode=0o700, exist_ok=True)
    return dict(os.environ, TMPDIR=tmp, XDG_RUNTIME_DIR=os.path.join(tmp, "run"), XDG_CACHE_HOME=os.path.join(tmp, "cache"),
                RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")


def runner(cwd, env, code: Path | None = None):
    """``explorer ARGS`` in a subprocess (of the code at ``code``: a second checkout)."""
    if code is not None:
        env = dict(env, PYTHONPATH=str(code))

    def explorer(*args, timeout=600):
        return subprocess.run([sys.executable, "-m", "explorer.cli", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=timeout)
    return explorer


def session_record(tmp: str) -> dict:
    return json.loads(next(Path(tmp, "run").glob("explorer-ray-*/*/session.json")).read_text())


@pytest.mark.slow
def test_start_a_session_ray_a_sweep_joins_it_a_dead_raylet_is_not_running_stop_leaves_no_process(tmp_path):
    tmp = tempfile.mkdtemp(prefix="sr", dir="/tmp")
    explorer = runner(tmp_path, private_env(tmp))
    (tmp_path / "tiny.toml").write_text(GOOD)  # two trials
    try:
        started = explorer("ray", "start", "--num-cpus", "2")
        assert started.returncode == 0 and started.stdout.startswith("started:"), started.stdout + started.stderr
        record = session_record(tmp)
        assert not list(Path(tmp).glob("explorer-ray-*/session.json"))  # not in the shared TMPDIR (hole 7)
        assert session_ray.start_ticks(record["holder_pid"]) == record["holder_started"]
        assert record["address"].startswith("127.0.0.1:") and record["fingerprint"] == code_fingerprint()
        assert {"raylet", "gcs_server"} <= {name for _, _, name in record["processes"]}
        assert record["processes"] and ours(tmp)  # Ray's processes, recorded, running in its folder
        assert explorer("ray", "start").stdout.startswith("already running:")
        swept = explorer("sweep", "tiny.toml", "--store", "results")
        assert swept.returncode == 0 and "2 ok" in swept.stdout, swept.stdout + swept.stderr
        assert "joined the session Ray" in swept.stderr
        status = explorer("ray", "status").stdout
        assert "running at " + record["address"] in status  # the sweep left it running
        assert f"its environment: code {REPO_ROOT}, python {sys.prefix}" in status
        # hole 6: its raylet dies; the holder lives on, and the session is not "running"
        raylet = next(pid for pid, _, name in record["processes"] if name == "raylet")
        os.kill(raylet, signal.SIGKILL)
        time.sleep(1)
        status = explorer("ray", "status")
        assert status.stdout.startswith(f"session Ray: not answering at {record['address']}"), status.stdout
        assert f"its raylet (process {raylet}) has ended" in status.stdout
        stopped = explorer("ray", "stop")
        assert stopped.returncode == 0 and stopped.stdout.startswith("stopped the session Ray at "), stopped.stdout
        assert session_ray.start_ticks(record["holder_pid"]) is None
        time.sleep(1)
        assert ours(tmp) == []  # no Ray process of that session is left
        assert all(session_ray.start_ticks(pid) != started for pid, started, _ in record["processes"])
        assert explorer("ray", "status").stdout.startswith("no session Ray")
    finally:
        explorer("ray", "stop")
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.slow
def test_a_sweep_against_a_port_that_is_not_ray_ends_within_45_s_with_one_line(tmp_path, listener):
    # hole 3: the port accepts TCP and says nothing
    tmp = tempfile.mkdtemp(prefix="sr", dir="/tmp")
    explorer = runner(tmp_path, private_env(tmp))
    (tmp_path / "tiny.toml").write_text(GOOD)
    try:
        started = time.monotonic()
        done = explorer("sweep", "tiny.toml", "--store", "results", "--address", listener, timeout=120)
        assert time.monotonic() - started < 45
        assert done.returncode == 2, done.stdout + done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert lines[-1] == (f"error: cannot join the Ray cluster at {listener!r}: it accepts connections but sends "
                             "nothing back within 5 s (a Ray answers at once): not a Ray; check the address and that "
                             "the cluster is up (`ray status` on its head node), or run without --address (an embedded "
                             "Ray)"), done.stderr
        assert "Traceback" not in done.stderr and "GCS" not in done.stderr
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def second_checkout(root: Path) -> Path:
    """A copy of the three packages whose trials report wall_s = 777.0 (its own code's value)."""
    here = REPO_ROOT
    for package in ("trials", "store", "explorer"):
        shutil.copytree(here / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    train = root / "trials" / "train.py"
    text = train.read_text()
    assert "    wall_s = (time.perf_counter() - started) / len(configs)\n" in text
    train.write_text(text.replace("    wall_s = (time.perf_counter() - started) / len(configs)\n", "    wall_s = 777.0\n"))
    return root


LONG = GOOD.replace("steps = 5", "steps = 400").replace("L = [2, 4]", "L = [2, 4, 8, 16]").replace("M = [1]", "M = [1, 2, 4, 8]")


@pytest.mark.slow
def test_a_second_checkout_runs_its_own_code_and_a_stop_under_a_sweep_ends_it_in_one_line(tmp_path):
    # hole 2: a second checkout's rows carry its own fingerprint and values; hole 5: a sweep whose
    # session Ray is stopped under it stops in one explorer line with the resume command, no claim left
    tmp = tempfile.mkdtemp(prefix="sr", dir="/tmp")
    env = private_env(tmp)
    first = runner(tmp_path, env)
    copy = second_checkout(tmp_path / "copy")
    second = runner(tmp_path, env, code=copy)
    (tmp_path / "tiny.toml").write_text(GOOD)
    (tmp_path / "long.toml").write_text(LONG)
    try:
        assert first("ray", "start", "--num-cpus", "2").returncode == 0
        address = session_record(tmp)["address"]
        theirs = subprocess.run([sys.executable, "-c", "from store import code_fingerprint; print(code_fingerprint())"],
                                cwd=tmp_path, env=dict(env, PYTHONPATH=str(copy)), capture_output=True, text=True).stdout.strip()
        assert theirs != code_fingerprint() and theirs.startswith("0.")
        assert second("ray", "status").stdout.startswith("no session Ray for this environment (code " + str(copy))
        joined = second("sweep", "tiny.toml", "--store", "results", "--address", address)  # the first's session
        assert joined.returncode == 2, joined.stdout + joined.stderr
        assert f"its workers run other code ({code_fingerprint()}; this is {theirs})" in joined.stderr.splitlines()[-1]
        own = second("sweep", "tiny.toml", "--store", "results")  # not joined: its own embedded Ray
        assert own.returncode == 0 and "2 ok" in own.stdout, own.stdout + own.stderr
        assert "joined the session Ray" not in own.stderr
        stored = Store(str(tmp_path / "results"))
        trials = stored.query("SELECT wall_s, code_fingerprint FROM trials").to_pylist()
        metrics = stored.query("SELECT DISTINCT wall_s, code_fingerprint FROM metrics").to_pylist()
        assert trials == [{"wall_s": 777.0, "code_fingerprint": theirs}] * 2
        assert metrics == [{"wall_s": 777.0, "code_fingerprint": theirs}]

        # hole 5: `explorer ray stop` while a sweep runs on the session Ray
        sweep = subprocess.Popen([sys.executable, "-m", "explorer.cli", "sweep", "long.toml", "--store", "long"],
                                 cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        leases = tmp_path / "long" / "sweep=cli" / ".leases"
        deadline = time.monotonic() + 300
        while not (leases.is_dir() and any(leases.iterdir())) and time.monotonic() < deadline and sweep.poll() is None:
            time.sleep(0.5)
        assert leases.is_dir() and any(leases.iterdir()), "the sweep never claimed a trial"
        stopped = first("ray", "stop")
        assert stopped.returncode == 0 and stopped.stdout.startswith("1 sweep(s) running on it stopped first"), stopped.stdout
        out, err = sweep.communicate(timeout=120)
        assert sweep.returncode == 143, out + err
        assert "the session Ray is being stopped (`explorer ray stop`): this sweep stops, its claims released" in err
        assert "core_worker" not in err and "Traceback" not in err, err
        assert "to resume, run the same command again: python -m explorer.cli sweep long.toml --store long" in out
        assert not any(leases.iterdir())  # no claim left for the rerun to stumble on
    finally:
        first("ray", "stop")
        shutil.rmtree(tmp, ignore_errors=True)
