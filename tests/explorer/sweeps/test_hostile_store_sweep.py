"""A sweep resumed on a hostile store (issue 32): leases that hold JSON null or are dated 2100, a
reference lock dated 2100, a truncated reference file and a dead worker's temporary. The driver
(a subprocess, as users run it) breaks the leases and the lock instead of waiting forever,
quarantines and recomputes the reference instead of marking its group missing, removes the dead
writer's temporary, and `explorer check` passes after it."""
from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from store import Store, owners
from store.catalog import list_kind
from store.layout import key_file, reference_file, reference_lock, temporary_path
from store.leases import lease_path

from tests.explorer.sweeps.test_sweep_process import EXPLORER, environment, sweep, write_spec

pytestmark = pytest.mark.slow

YEAR_2100 = 4102444800.0
LEASE_TTL_S = 20  # EXPLORER_LEASE_TTL_S: the bound the resume must finish within, twice over


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_resume_on_a_hostile_store_breaks_what_never_lapses_and_recomputes_the_reference(tmp_path):
    spec = write_spec(tmp_path / "spec.toml", "tiny", L=(2, 4), M=(1, 2), steps=3)
    results = tmp_path / "results"
    env = environment(EXPLORER_LEASE_TTL_S=str(LEASE_TTL_S))
    first = sweep([spec, "--store", results], cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    st = Store(results)
    keys = sorted(st.completed_trial_keys("tiny"))
    (ref_key,) = {row["ref_key"] for row in st.query("SELECT DISTINCT ref_key FROM metrics").to_pylist()}
    root = st.files.root
    # two trials to run again, each with a lease that never lapses by its age: their rows taken out of
    # the files the sweep's end compacted its metrics and trials into
    for kind in ("metrics", "trials"):
        for entry in list_kind(st.files, "tiny", kind).compacted:
            table = pq.read_table(entry.path)
            pq.write_table(table.filter(pc.invert(pc.is_in(table.column("trial_key"), pa.array(keys[:2])))),
                           entry.path)
    os.makedirs(os.path.dirname(lease_path(st.files, "tiny", keys[0])), exist_ok=True)
    with open(lease_path(st.files, "tiny", keys[0]), "w") as f:
        f.write("null")
    with open(lease_path(st.files, "tiny", keys[1]), "w") as f:
        f.write('{"owner": "elsewhere:1", "ttl_s": 60}')
    os.utime(lease_path(st.files, "tiny", keys[1]), (YEAR_2100, YEAR_2100))
    reference = reference_file(root, ref_key)
    with open(reference, "r+b") as f:
        f.truncate(os.path.getsize(reference) // 2)
    lock = reference_lock(root, ref_key)
    open(lock, "w").close()
    os.utime(lock, (YEAR_2100, YEAR_2100))
    dead = temporary_path(reference, owners.writer_token().replace(f"{os.getpid()}@", f"{_dead_pid()}@", 1))
    open(dead, "wb").close()

    # before: an AttributeError traceback on the null lease; "claimed by another driver" for ever
    # on the 2100 one; the group missing (exit 1) on the truncated reference
    resumed = sweep([spec, "--store", results], cwd=tmp_path, env=env)
    out = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, out[-4000:]
    assert "claimed by another driver" not in out and "Traceback" not in out
    assert "4 trials: 4 ok" in resumed.stdout and "(2 already complete, 2 run in" in resumed.stdout, out[-3000:]
    assert sorted(st.completed_trial_keys("tiny")) == keys
    assert st.quarantined() and os.path.exists(reference) and not os.path.exists(lock)
    assert not os.path.exists(dead)
    assert not list(results.rglob(".leases/*"))
    # a compaction killed mid-write, then a resume with nothing left to run: its temporary goes too
    killed = temporary_path(key_file(root, "tiny", "metrics", keys[0]), owners.writer_token("compacting").replace(
        f"{os.getpid()}@", f"{_dead_pid()}@", 1))
    open(killed, "wb").close()
    again = sweep([spec, "--store", results], cwd=tmp_path, env=env)
    assert again.returncode == 0 and "(4 already complete, nothing to run)" in again.stdout, again.stdout + again.stderr
    assert not os.path.exists(killed)
    check = subprocess.run([EXPLORER, "check", "--store", str(results)], capture_output=True, text=True, env=env,
                           timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
