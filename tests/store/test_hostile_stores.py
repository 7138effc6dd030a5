"""Hostile or unlucky stores (issue 32): a copied sweep folder, leases and locks that are links to
/dev/zero, hold no lease, or are dated in 2100, dead writers' temporaries, status-ok rows with
impossible errors, a truncated reference file. Each is served, judged or repaired as
docs/store.md says, never read without bound, and never a traceback."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import store_testkit as kit

from store import Store, references
from store.layout import join, key_file, reference_file, reference_lock, temporary_path
from store.leases import expired_leases, lease_dir, lease_path, leases
from store import owners
from store.query import LeftOutFilesWarning

EXPLORER = str(Path(sys.executable).parent / "explorer")
YEAR_2100 = 4102444800.0  # 2100-01-01 UTC

VIEW_QUERIES = {
    "metrics": "SELECT sweep, trial_key, seed, step, err_out FROM metrics ORDER BY ALL",
    "trials": "SELECT sweep, trial_key, n_seeds FROM trials ORDER BY ALL",
    "points": "SELECT * FROM points ORDER BY ALL",
    "fits": "SELECT * FROM fits ORDER BY ALL",
    "rounds": "SELECT * FROM rounds ORDER BY ALL",
    "comparisons": "SELECT * FROM comparisons ORDER BY ALL",
    "references": "SELECT ref_key, name FROM \"references\" ORDER BY ALL",
    "per sweep": "SELECT sweep, count(*) AS n FROM metrics GROUP BY sweep ORDER BY sweep",
}


def explorer(*args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([EXPLORER, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0"))


def _served(st: Store) -> dict[str, list[dict]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeftOutFilesWarning)
        return {name: st.query(sql).to_pylist() for name, sql in VIEW_QUERIES.items()}


def _tiny(st: Store) -> None:
    for key, rows, trial in kit.grid(n_L=2, n_M=2):
        st.write_trial("tiny", key, rows, trial)
    st.get_or_compute_reference("aaaa000000000001", lambda: kit.reference_arrays("aaaa000000000001"))


def _lease(st: Store, key: str, content: bytes, mtime: float | None = None) -> str:
    path = lease_path(st.files, "tiny", key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


# --- item 5: a copied sweep folder ---------------------------------------------------------


@pytest.mark.parametrize("compacted", [False, True], ids=["small files", "compacted"])
def test_a_copied_sweep_folder_changes_no_view_and_check_reports_the_copy(local_store, compacted):
    _tiny(local_store)
    if compacted:
        local_store.compact("tiny")
    clean = _served(local_store)
    root = local_store.files.root
    shutil.copytree(join(root, "sweep=tiny"), join(root, "sweep=tiny_backup"))
    assert _served(local_store) == clean  # the probe's tiny 192 (really 96), n_seeds 4 instead of 2
    report = local_store.check()
    copied = {f.where for f in report.problems if f.category == "foreign"}
    assert copied and all("sweep=tiny_backup" in where for where in copied)
    assert any("under sweep=tiny_backup but holds sweep tiny..tiny" in f.detail for f in report.problems)


# --- items 6, 7, 8: leases that are no lease, or from the future -----------------------------

HOSTILE_LEASES = {
    "null": (b"null", None),
    "list": (b"[]", None),
    "string": (b'"x"', None),
    "number": (b"1", None),
    "ttl nan": (b'{"owner": "elsewhere:1", "ttl_s": "nan"}', None),
    "ttl inf": (b'{"owner": "elsewhere:1", "ttl_s": "inf"}', None),
    "ttl 1e300": (b'{"owner": "elsewhere:1", "ttl_s": 1e300}', None),
    "dated 2100": (b'{"owner": "elsewhere:1", "ttl_s": 60}', YEAR_2100),
    "nested 30000 deep": (b"[" * 30000 + b"]" * 30000, None),  # under the 64 KiB cap: json.loads recurses
}


@pytest.mark.parametrize("name", HOSTILE_LEASES)
def test_a_lease_that_never_lapses_by_itself_is_stale_named_by_check_and_repaired(local_store, name):
    _tiny(local_store)
    content, mtime = HOSTILE_LEASES[name]
    path = _lease(local_store, "k1", content, mtime)
    assert leases(local_store.files, "tiny")["k1"][1] is False  # not live
    report = local_store.check()
    assert [f.where for f in report.problems if f.category == "stale_lease"] == [path]
    assert local_store.claim("tiny", ["k1"], "me:1", ttl_s=60) == {"k1"}  # the claim breaks it
    _lease(local_store, "k1", content, mtime)
    assert path in expired_leases(local_store.files, "tiny")
    assert local_store.repair().removed == [path] and local_store.check().ok


def test_a_lease_linked_to_dev_zero_is_never_read_whole(local_store):
    _tiny(local_store)
    os.makedirs(lease_dir(local_store.files, "tiny"))
    os.symlink("/dev/zero", lease_path(local_store.files, "tiny", "k1"))
    big = _lease(local_store, "k2", b" " * (1 << 20) + b'{"owner": "x:1", "ttl_s": 60}')
    report = local_store.check()  # before the fix: MemoryError or the machine's RAM exhausted
    assert {f.where for f in report.problems if f.category == "stale_lease"} == {
        lease_path(local_store.files, "tiny", "k1"), big}
    assert local_store.claim("tiny", ["k1", "k2"], "me:1", ttl_s=60) == {"k1", "k2"}
    os.symlink("/dev/zero", join(lease_dir(local_store.files, "tiny"), "k3"))
    assert [os.path.basename(p) for p in local_store.repair().removed] == ["k3"]
    assert os.path.exists("/dev/zero")  # the link went, not what it points to


def test_a_reference_lock_linked_to_dev_zero_or_dated_2100_is_stale(local_store):
    _tiny(local_store)
    zero, future = reference_lock(local_store.files.root, "bbbb"), reference_lock(local_store.files.root, "cccc")
    os.symlink("/dev/zero", zero)
    open(future, "w").close()
    os.utime(future, (YEAR_2100, YEAR_2100))
    assert {f.where for f in local_store.check().problems if f.category == "stale_lock"} == {zero, future}
    # a worker waiting on the 2100 lock breaks it and computes (it stalled at "references: 1 to compute")
    arrays, _ = local_store.get_or_compute_reference("cccc", lambda: kit.reference_arrays("cccc"), stale_after_s=60)
    assert set(arrays) == {"f_ref", "h_ref"} and not os.path.exists(future)
    assert local_store.repair().removed == [zero]


def test_a_lease_slightly_ahead_of_this_clock_lapses_once_its_heartbeat_stands_still(local_store):
    ttl = 2.0
    path = _lease(local_store, "k1", json.dumps({"owner": "elsewhere:1", "ttl_s": ttl}).encode(), time.time() + 0.9 * ttl)
    assert local_store.claim("tiny", ["k1"], "me:1", ttl_s=60) == set()  # a holder whose clock runs ahead
    t0 = time.monotonic()
    while not local_store.claim("tiny", ["k1"], "me:1", ttl_s=60):
        assert time.monotonic() - t0 < 2 * ttl, "a lease ahead of this clock never lapsed"
        time.sleep(0.1)
    assert json.loads(open(path, "rb").read())["owner"] == "me:1"


def test_a_lease_ahead_of_this_clock_stays_live_while_its_holder_renews_it(local_store):
    ttl = 1.0
    path = _lease(local_store, "k1", json.dumps({"owner": "elsewhere:1", "ttl_s": ttl}).encode())
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2.5 * ttl:
        ahead = time.time() + 0.5 * ttl  # a live holder whose clock runs half a TTL ahead
        os.utime(path, (ahead, ahead))
        assert local_store.claim("tiny", ["k1"], "me:1", ttl_s=60) == set()
        time.sleep(ttl / 4)


def test_claim_refuses_a_ttl_that_is_not_finite(local_store):
    for ttl in (float("nan"), float("inf"), 1e300):
        with pytest.raises(ValueError, match="finite"):
            local_store.claim("tiny", ["k1"], "me:1", ttl_s=ttl)


# --- item 10: temporaries of dead writers ---------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_dead_writers_temporary_is_a_problem_a_live_ones_a_note_and_a_resume_removes_the_dead(local_store):
    _tiny(local_store)
    dead = owners.writer_token().replace(f"{os.getpid()}@", f"{_dead_pid()}@", 1)
    killed = temporary_path(reference_file(local_store.files.root, "dddd000000000001"), dead)  # a worker SIGKILLed
    busy = temporary_path(key_file(local_store.files.root, "tiny", "metrics", "k9"), owners.writer_token())  # this process
    for path in (killed, busy):
        open(path, "wb").close()
    report = local_store.check()
    assert [f.where for f in report.problems] == [killed]
    assert "is dead" in report.problems[0].detail and "--repair" in report.problems[0].detail
    assert [f.where for f in report.findings if f.category == "writing"] == [busy]
    # a resume removes the sweep's and the reference cache's dead temporaries, whatever their age
    assert local_store.remove_temporaries("tiny", references=True) == 1
    assert not os.path.exists(killed) and os.path.exists(busy)
    open(killed, "wb").close()
    assert local_store.repair().removed == [killed] and os.path.exists(busy)
    os.remove(busy)
    assert local_store.check().ok


def test_writes_name_their_temporaries_after_their_writer(local_store, monkeypatch):
    seen = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (seen.append(os.path.basename(a)), real_replace(a, b)))
    _tiny(local_store)
    assert seen and all(name.startswith(f".tmp.{os.getpid()}@") for name in seen)


# --- item 12: status-ok rows with impossible errors -----------------------------------------


def test_check_flags_status_ok_rows_with_nan_infinite_or_negative_errors(local_store):
    for i, bad in enumerate((float("nan"), float("inf"), -0.5)):
        key, rows, trial = kit.trial(L=2 ** (i + 1))
        rows[-1]["err_out"] = bad
        local_store.write_trial("tiny", key, rows, trial)
    key, rows, trial = kit.trial(L=32, seeds=(0, 1), diverge_at=2)  # a diverged seed's inf is no problem
    local_store.write_trial("tiny", key, rows, trial)
    found = [f for f in local_store.check().problems if f.category == "bad_value"]
    assert len(found) == 3 and all(f.where.endswith("seed=1") for f in found)


# --- item 15: a truncated reference file ----------------------------------------------------


def test_a_truncated_reference_is_quarantined_and_recomputed(local_store):
    _tiny(local_store)
    key = "aaaa000000000001"
    path = reference_file(local_store.files.root, key)
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeftOutFilesWarning)
        assert local_store.query("SELECT count(*) AS n FROM metrics").to_pylist() == [{"n": 32}]
    calls = []
    arrays, _ = local_store.get_or_compute_reference(key, lambda: (calls.append(1), kit.reference_arrays(key))[1])
    assert calls == [1] and set(arrays) == {"f_ref", "h_ref"}
    assert references.read(local_store.files, key) is not None
    assert local_store.quarantined() == [join(local_store.files.root, "quarantine", "references", key + ".parquet")]


@pytest.mark.slow
def test_the_cli_on_a_hostile_store(tmp_path):
    """The user's commands, as subprocesses: sql on a copied sweep and a truncated reference,
    check naming a /dev/zero lease and a null one, check --repair removing them."""
    st = Store(tmp_path / "S")
    _tiny(st)
    shutil.copytree(join(st.files.root, "sweep=tiny"), join(st.files.root, "sweep=tiny_backup"))
    ref = reference_file(st.files.root, "aaaa000000000001")
    open(ref, "r+b").truncate(100)
    os.makedirs(lease_dir(st.files, "tiny"))
    os.symlink("/dev/zero", lease_path(st.files, "tiny", "k1"))
    null = _lease(st, "k2", b"null")
    r = explorer("sql", "SELECT sweep, count(*) AS n FROM metrics GROUP BY sweep ORDER BY sweep",
                 "--store", st.uri, "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["sweep,n", "tiny,32"]
    r = explorer("check", "--store", st.uri)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"stale_lease: {lease_path(st.files, 'tiny', 'k1')}" in r.stdout and f"stale_lease: {null}" in r.stdout
    assert "sweep=tiny_backup" in r.stdout
    r = explorer("check", "--repair", "--store", st.uri)
    assert "Traceback" not in r.stderr and f"removed {null}" in r.stdout
    assert not os.path.lexists(lease_path(st.files, "tiny", "k1")) and not os.path.exists(null)
