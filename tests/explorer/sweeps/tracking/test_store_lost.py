"""The S3 endpoint dies mid-sweep: the driver stops within seconds with one line that names the
store, the filesystem's error and how to resume (issue 13, item 4), instead of retrying every
Tune trial against a store that is gone."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

from store import Store, StoreError, StoreUnreachable

from tests.explorer.sweeps.test_sweep_process import environment, write_spec


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def killable_s3():
    """``host:port`` of a moto S3 server in its own process (the session's server cannot be
    killed), and the process."""
    pytest.importorskip("moto.server")
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-p", str(port), "-H", "127.0.0.1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "moto server did not start"
                time.sleep(0.1)
        yield f"127.0.0.1:{port}", server
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()


@pytest.mark.slow
def test_the_s3_endpoint_killed_mid_sweep_stops_the_driver_with_one_clear_line(tmp_path, killable_s3):
    import pyarrow.fs as pafs

    endpoint, server = killable_s3
    bucket = f"b-{uuid.uuid4().hex[:12]}"
    fs = pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", access_key="x", secret_key="y",
                           region="us-east-1", allow_bucket_creation=True)
    fs.create_dir(bucket)
    store = Store(f"s3://{bucket}/results", filesystem=fs)
    spec = write_spec(tmp_path / "spec.toml", "lost", L=(2, 4, 8, 16, 32, 64), M=(1, 4, 16, 32), steps=40)
    env = environment(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y", AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://{endpoint}")
    cmd = [sys.executable, "-m", "explorer.cli", "sweep", str(spec), "--store", f"s3://{bucket}/results"]
    driver = subprocess.Popen(cmd, cwd=tmp_path, env=env, start_new_session=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and driver.poll() is None:
            if store.completed_trial_keys("lost"):
                break
            time.sleep(0.2)
        assert driver.poll() is None, driver.communicate()
        landed = len(store.completed_trial_keys("lost"))
        server.kill()
        killed = time.monotonic()
        out, err = driver.communicate(timeout=120)
        took = time.monotonic() - killed
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    print(f"endpoint killed -> driver exited in {took:.1f}s ({landed} trials had landed)")
    assert 1 <= landed < 24
    assert driver.returncode == 2, out + err
    assert took < 30, (took, out + err)
    assert "Traceback" not in out + err
    errors = [line for line in (out + err).splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out + err
    line = errors[0]
    assert f"the store became unreachable mid-sweep, which stopped: store s3://{bucket}/results cannot be" in line
    assert "Could not connect to server" in line  # the filesystem's own words
    assert "to resume, run the same command again once the store is back: python -m explorer.cli sweep" in line


def test_a_cleanup_error_after_the_store_was_lost_still_reads_as_the_loss():
    from explorer.sweeps.tracking.progress import Progress
    from explorer.sweeps.tracking.store_lost import stop_when_store_lost

    bar = Progress(total=1, enabled=False)
    with pytest.raises(StoreUnreachable) as caught:
        with stop_when_store_lost(bar):
            try:
                raise StoreUnreachable("store s3://b/p cannot be written: cannot write s3://b/p/x:\n  refused")
            finally:  # run_sweep's cleanup: releasing the claims fails too
                raise StoreError("cannot write s3://b/p/.leases/k: refused")
    text = str(caught.value)
    assert text.startswith("the store became unreachable mid-sweep, which stopped: store s3://b/p cannot be "
                           "written: cannot write s3://b/p/x: refused; the trials already written stay in it")
    assert "\n" not in text and "run the same command again once the store is back" in text


def test_any_other_store_error_passes_through_unchanged():
    from explorer.sweeps.tracking.progress import Progress
    from explorer.sweeps.tracking.store_lost import stop_when_store_lost

    error = StoreError("cannot list s3://b/p/sweep=x: slow down")
    with pytest.raises(StoreError) as caught:
        with stop_when_store_lost(Progress(total=1, enabled=False)):
            raise error
    assert caught.value is error


def test_one_report_of_a_lost_store_stops_every_tune_trial():
    from explorer.sweeps.tracking.store_lost import STORE_LOST
    from explorer.sweeps.run.tune_glue import StopWhenStoreLost

    stopper = StopWhenStoreLost()
    assert not stopper("t1", {"keys": "a", "statuses": "ok"}) and not stopper.stop_all()
    assert stopper("t2", {"keys": "", "statuses": "", STORE_LOST: "store s3://b/p cannot be listed: refused"})
    assert stopper.stop_all() and stopper("t1", {"keys": "b", "statuses": "ok"})
    assert stopper.lost == "store s3://b/p cannot be listed: refused"
