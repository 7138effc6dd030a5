"""A sweep whose store fills its disk stops with one line and exit 2, instead of rerunning the
"lost" points for minutes with hundreds of workers (issue 25, item 5: a 600 KB tmpfs). The
trials already stored pass ``explorer check``."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from store import Store

from tests.explorer.sweeps.test_sweep_process import environment, write_spec


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.slow
def test_a_sweep_on_a_full_disk_stops_with_one_line_and_what_landed_passes_check(tmp_path, small_disk):
    spec = write_spec(tmp_path / "spec.toml", "full", L=(2, 4, 8, 16, 32, 64), M=(1, 2, 4, 8), steps=40)
    store = small_disk / "store"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "explorer.cli", "sweep", str(spec), "--store", str(store)],
                          cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=600)
    ended = time.time()
    last_write = max(p.stat().st_mtime for p in store.rglob("*.parquet"))  # about when the disk filled
    print(f"sweep on a 600k tmpfs: ended {time.monotonic() - started:.1f} s after its start, "
          f"{ended - last_write:.1f} s after its last file landed")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    errors = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stdout + done.stderr
    assert f"store {store} cannot be written: [Errno 28] No space left on device" in errors[0]
    landed = Store(store).completed_trial_keys("full")
    assert 0 < len(landed) < 24
    check = subprocess.run([sys.executable, "-m", "explorer.cli", "check", "--store", str(store)],
                           capture_output=True, text=True, env=environment(), timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
