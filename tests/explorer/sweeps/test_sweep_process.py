"""The sweep driver as users run it (the `explorer` console script, a subprocess): from a folder
holding folders named like the packages, with cloud credentials in its environment, stopped by
SIGINT or SIGTERM, and two drivers of one sweep at once."""
from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from store import Store

pytestmark = pytest.mark.slow

EXPLORER = str(Path(sys.executable).parent / "explorer")

SPEC = """
name = "{name}"
[train]
steps = {steps}
[reference]
depth = 16
width = 8
[grid]
L = {L}
M = {M}
D = [4]
seeds = 2
[resources]
points_per_trial = 1
"""


def write_spec(path: Path, name: str, L=(2, 4), M=(1, 2), steps=5) -> Path:
    path.write_text(SPEC.format(name=name, L=list(L), M=list(M), steps=steps))
    return path


def environment(**extra) -> dict:
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    env.update(extra)
    return env


def sweep(args, cwd, env=None, timeout=400) -> subprocess.CompletedProcess:
    return subprocess.run([EXPLORER, "sweep", *map(str, args)], cwd=cwd, env=env or environment(),
                          capture_output=True, text=True, timeout=timeout)


def test_a_sweep_runs_from_a_folder_holding_folders_named_like_the_packages(tmp_path):
    # ray.init puts the driver's working directory first on every worker's sys.path: these
    # folders shadowed the installed packages ("cannot import name 'COLUMNS' from 'store'").
    work = tmp_path / "sweeps"
    for name in ("store", "trials", "explorer"):
        (work / name).mkdir(parents=True)
    (work / "store" / "__init__.py").write_text("")  # a user's own package named store
    spec = write_spec(work / "spec.toml", "shadow")
    done = sweep([spec, "--store", "store"], cwd=work)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "4 trials: 4 ok" in done.stdout and "ImportError" not in done.stdout + done.stderr
    assert len(Store(work / "store").completed_trial_keys("shadow")) == 4


# --- credentials ------------------------------------------------------------------------------

MARKERS = ("MarkerSecret123", "MarkerAccessKey456")




def _files_with(root: Path, needles: tuple[str, ...]) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        try:
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
        except OSError:
            continue
        hits += [f"{path}: {n}" for n in needles if n.encode() in data]
    return hits


def test_credentials_reach_no_log_runtime_env_store_file_or_terminal(tmp_path, s3_endpoint):
    import pyarrow.fs as pafs

    from explorer.sweeps.ray.connection import private_temp_dir

    bucket = f"b-{uuid.uuid4().hex[:12]}"
    fs = pafs.S3FileSystem(endpoint_override=s3_endpoint, scheme="http", access_key="x", secret_key="y",
                           region="us-east-1", allow_bucket_creation=True)
    fs.create_dir(bucket)
    private = Path(private_temp_dir())
    temp_root = private / "ray"
    sessions_before = set(temp_root.iterdir()) if temp_root.exists() else set()
    env = environment(AWS_ACCESS_KEY_ID=MARKERS[1], AWS_SECRET_ACCESS_KEY=MARKERS[0], AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://{s3_endpoint}")
    spec = write_spec(tmp_path / "spec.toml", "secret")
    done = sweep([spec, "--store", f"s3://{bucket}/results"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "4 trials: 4 ok" in done.stdout
    assert not [m for m in MARKERS if m in done.stdout + done.stderr]

    # Ray's session files: in a private folder of this user, not in the world-readable /tmp/ray
    assert stat.S_IMODE(private.stat().st_mode) == 0o700 and private.stat().st_uid == os.getuid()
    new_sessions = [p for p in set(temp_root.iterdir()) - sessions_before if p.name.startswith("session_2")]
    assert new_sessions, sorted(temp_root.iterdir())
    assert any((s / "logs").is_dir() for s in new_sessions)
    hits = [h for s in new_sessions for h in _files_with(s, MARKERS)]
    if Path("/tmp/ray").is_dir():  # any session there (other users' runs too) holds none of these markers
        hits += _files_with(Path("/tmp/ray"), MARKERS)
    hits += _files_with(tmp_path, MARKERS)  # the spec folder, any report or temporary
    # every object of the store
    for info in fs.get_file_info(pafs.FileSelector(bucket, recursive=True)):
        if info.type == pafs.FileType.File:
            with fs.open_input_stream(info.path) as f:
                data = f.read()
            hits += [f"s3://{info.path}: {m}" for m in MARKERS if m.encode() in data]
    assert not hits


# --- signals ----------------------------------------------------------------------------------

SLOW_GRID = dict(L=(2, 4, 8, 16, 32, 64), M=(1, 4, 16, 32), steps=10)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_driver_cleanly_and_it_says_how_to_resume(tmp_path, signum, code):
    spec = write_spec(tmp_path / "spec.toml", "stopped", **SLOW_GRID)
    results = tmp_path / "results"
    store = Store(results)
    driver = subprocess.Popen([EXPLORER, "sweep", str(spec), "--store", str(results)], cwd=tmp_path,
                              env=environment(), start_new_session=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and driver.poll() is None:
            if results.exists() and len(store.completed_trial_keys("stopped")) >= 2:
                break
            time.sleep(0.05)
        assert driver.poll() is None, driver.communicate()
        sent = time.monotonic()
        driver.send_signal(signum)
        out, err = driver.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    assert driver.returncode == code, out + err
    assert took < 10, took
    assert "Traceback" not in out + err
    landed = len(store.completed_trial_keys("stopped"))
    assert 2 <= landed < 24
    # the summary says what really ran, and how to resume
    assert re.search(rf"\(0 already complete, {landed} run in", out), out
    assert f"interrupted by {signal.Signals(signum).name}" in out
    assert f"to resume, run the same command again: explorer sweep {spec} --store {results}" in out
    # nothing left behind: no temporary, no reference lock, no lease
    left = [p for p in results.rglob("*") if p.name.startswith((".tmp.", ".lock.", ".broken."))]
    assert not left
    assert not [p for p in results.rglob(".leases/*")]
    assert store.check().ok


# --- two drivers ------------------------------------------------------------------------------


def test_two_drivers_of_one_sweep_share_the_work(tmp_path, metric_row_counts):
    spec = write_spec(tmp_path / "spec.toml", "shared", L=(2, 4, 8, 16, 32, 64), M=(1, 4, 16), steps=10)
    results = tmp_path / "results"
    total = 18
    cmd = [EXPLORER, "sweep", str(spec), "--store", str(results)]
    env = environment(EXPLORER_LEASE_TTL_S="20")
    drivers = [subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True) for _ in range(2)]
    outputs = [d.communicate(timeout=500) for d in drivers]
    for d, (out, err) in zip(drivers, outputs):
        assert d.returncode == 0, out + err
    ran = [int(re.search(r"already complete, (\d+) run in", out).group(1)) for out, _ in outputs]
    assert sum(ran) == total, outputs
    assert any("claimed by another driver" in out + err for out, err in outputs)
    store = Store(results)
    assert len(store.completed_trial_keys("shared")) == total
    assert metric_row_counts(store, "shared") == {"n": total * 2 * 11, "distinct_n": total * 2 * 11}
    assert not [p for p in results.rglob(".leases/*")]


def test_a_dead_drivers_claims_lapse_and_are_taken_over(tmp_path):
    import explorer

    spec_dict = {"name": "orphan", "train": {"steps": 5}, "reference": {"depth": 16, "width": 8},
                 "grid": {"L": [2], "M": [1], "D": [4], "seeds": 2}}
    from explorer.config.planning import plan
    from explorer.config.spec import parse_spec
    from store import SCHEMA_VERSION

    key = plan(parse_spec(spec_dict), SCHEMA_VERSION).trials[0].trial_key
    store = Store(tmp_path)
    # a driver of another machine that died (its pid cannot be checked from here): its claim lapses
    assert store.claim("orphan", [key], "gone-host:1", ttl_s=20.0) == {key}
    t0 = time.monotonic()
    result = explorer.sweep(spec_dict, store=tmp_path, progress=False, num_cpus=1)
    assert result.ok == 1 and result.ran == 1 and time.monotonic() - t0 >= 19
    assert result.elsewhere == {"gone-host:1": 1}


def test_the_embedded_ray_keeps_token_authentication_without_its_warning(tmp_path):
    # Ray 2.60 turns token authentication on for a new local cluster when RAY_AUTH_MODE is unset,
    # writing ~/.ray/auth_token, and logged a WARNING about it on every sweep.
    spec = write_spec(tmp_path / "spec.toml", "auth", L=(2,), M=(1,), steps=2)
    home = tmp_path / "home"
    home.mkdir()
    env = environment(HOME=str(home))
    env.pop("RAY_AUTH_MODE")
    done = sweep([spec, "--store", tmp_path / "results"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Token authentication" not in done.stdout + done.stderr
    assert "WARNING" not in done.stderr
    assert (home / ".ray" / "auth_token").is_file()  # the token Ray made: authentication stayed on
