"""Claims of trial keys by concurrent drivers of one sweep; sweep listing and removal."""
from __future__ import annotations

import os
import threading
import time

import pytest
import store_testkit as kit

from store import StoreError
from store.leases import expired_leases, lease_path, leases

KEYS = [f"k{i:03d}" for i in range(40)]


def test_a_key_is_held_by_one_live_owner_at_a_time(any_store):
    assert any_store.claim("s", KEYS[:10], "a", ttl_s=60) == set(KEYS[:10])
    assert any_store.claim("s", KEYS[:20], "b", ttl_s=60) == set(KEYS[10:20])
    assert any_store.claim("s", KEYS[:5], "a", ttl_s=60) == set(KEYS[:5])  # its own: renewed
    assert any_store.renew("s", KEYS[:12], "a") == set(KEYS[:10])
    assert any_store.release("s", KEYS[:3], "b") == 0  # not b's
    assert any_store.release("s", KEYS[:3], "a") == 3
    assert any_store.claim("s", KEYS[:5], "b", ttl_s=60) == set(KEYS[:3])
    assert leases(any_store.files, "s")["k004"] == ("a", True)


def test_a_lapsed_lease_can_be_claimed_and_repair_removes_lapsed_ones(local_store):
    assert local_store.claim("s", ["k1", "k2"], "dead-driver", ttl_s=5) == {"k1", "k2"}
    then = time.time() - 10
    os.utime(lease_path(local_store.files, "s", "k1"), (then, then))  # no heartbeat for 10 s > ttl
    assert local_store.claim("s", ["k1", "k2"], "b", ttl_s=60) == {"k1"}
    assert local_store.renew("s", ["k1"], "dead-driver") == set()  # lost it
    os.utime(lease_path(local_store.files, "s", "k2"), (then, then))
    assert [os.path.basename(p) for p in expired_leases(local_store.files, "s")] == ["k2"]
    assert [os.path.basename(p) for p in local_store.repair().removed] == ["k2"]
    assert local_store.check().ok  # the lease folder is part of the layout


def test_concurrent_claims_never_give_a_key_twice(local_store):
    won: dict[str, set[str]] = {}

    def driver(name):
        won[name] = local_store.claim("s", KEYS, name, ttl_s=60)

    threads = [threading.Thread(target=driver, args=(f"d{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [k for keys in won.values() for k in keys]
    assert sorted(claimed) == KEYS  # every key once, none twice


def test_claim_refuses_bad_arguments(local_store):
    with pytest.raises(ValueError):
        local_store.claim("s", ["k"], "", ttl_s=1)
    with pytest.raises(ValueError):
        local_store.claim("s", ["k"], "a", ttl_s=0)
    with pytest.raises(ValueError):
        local_store.claim("s", ["../x"], "a")


def test_sweeps_summary_and_remove_sweep(any_store):
    for key, rows, trial in kit.grid(n_L=2, n_M=1):
        any_store.write_trial("a", key, rows, trial)
    key, rows, trial = kit.trial(L=3, seeds=(0, 1), diverge_at=2)
    any_store.write_trial("a", key, rows, trial)
    key, rows, trial = kit.trial()
    any_store.write_trial("b", key, rows, trial)
    any_store.claim("b", ["x"], "me")
    summary = {s.sweep: s for s in any_store.sweeps_summary()}
    assert sorted(summary) == ["a", "b"]
    a = summary["a"]
    assert (a.trials, a.ok, a.diverged, a.failed) == (3, 2, 1, 0)
    assert a.bytes > 0 and a.last_write is not None
    assert any_store.remove_sweep("b") >= 3
    assert any_store.sweeps() == ["a"]
    assert any_store.query("SELECT count(*) AS n FROM trials").to_pylist() == [{"n": 3}]
    with pytest.raises(StoreError, match="no sweep 'b'"):
        any_store.remove_sweep("b")
