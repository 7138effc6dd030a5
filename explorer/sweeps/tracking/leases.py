"""The lease policy: a driver claims the trials it runs (``Store.claim``), a daemon thread renews
the claims while they run, and they are released at the end or lapse after their TTL if the
driver died. Trials a live driver of the same sweep holds are left to it and waited for; the
claims of a dead driver of this machine are taken over at once."""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from store import DEFAULT_TTL_S, Store, owner_dead_here, owner_identity

from ...config.env_settings import setting
from ...errors import UsageError

from ...signals import SIGNAL_POLL_S
from .progress import Progress
from .results import SweepResult

LEASE_TTL_ENV = "EXPLORER_LEASE_TTL_S"  # how long a driver's claim on its trials lives without renewal
WAIT_POLL_S = 2.0  # how often a driver waiting on another driver's claims looks again


def driver_ttl_s(explicit: float | None = None) -> float:
    """How long this driver's claims live without renewal: ``explicit`` (``run_sweep(lease_ttl_s=)``),
    else ``$EXPLORER_LEASE_TTL_S``, else the store's heartbeat lifetime."""
    return explicit or setting(LEASE_TTL_ENV) or DEFAULT_TTL_S


class Leases:
    """This driver's claims on the trials it runs: claimed before, renewed by a daemon thread
    while they run, released at the end (or lapsing after ``ttl_s`` if the driver dies)."""

    def __init__(self, store: Store, sweep: str, ttl_s: float):
        self.store, self.sweep, self.ttl_s = store, sweep, ttl_s
        self.owner = owner_identity()
        self.held: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def claim(self, keys: Sequence[str]) -> set[str]:
        """Claim what no live driver holds; returns the keys this driver now holds."""
        got = self.store.claim(self.sweep, keys, self.owner, self.ttl_s)
        if len(got) < len(keys) and self.reap_dead(set(keys) - got):
            got |= self.store.claim(self.sweep, set(keys) - got, self.owner, self.ttl_s)
        with self._lock:
            self.held |= got
        if got and self._thread is None:
            self._thread = threading.Thread(target=self._renew, name="explorer-leases", daemon=True)
            self._thread.start()
        return got

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl_s / 4):
            with self._lock:
                keys = list(self.held)
            try:
                self.store.renew(self.sweep, keys, self.owner, self.ttl_s)
            except Exception:  # noqa: BLE001 - a missed renewal is retried; lapsing only risks duplicate work
                pass

    def release(self, keys=None) -> None:
        """Release these keys (default: every key held)."""
        with self._lock:
            keys = set(self.held if keys is None else keys) & self.held
            self.held -= keys
        if keys:
            self.store.release(self.sweep, keys, self.owner)

    def reap_dead(self, keys: set[str]) -> int:
        """Release the claims of drivers of this machine that no longer run (killed with SIGKILL):
        no need to wait for their TTL. Returns how many were released."""
        dead: dict[str, set[str]] = {}
        for key, owner in self.others(keys).items():
            if owner_dead_here(owner):
                dead.setdefault(owner, set()).add(key)
        return sum(self.store.release(self.sweep, held, owner) for owner, held in dead.items())

    def others(self, keys: set[str]) -> dict[str, str]:
        """``key -> owner`` of the live leases of other drivers among ``keys``."""
        found = self.store.leases(self.sweep)
        return {k: owner for k, (owner, live) in found.items() if k in keys and live and owner != self.owner}

    def close(self) -> None:
        """Stop renewing and release every claim."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.release()


ADAPTIVE_DRIVER_KEY = "adaptive-driver"  # the lease an adaptive loop holds on its whole sweep


class DriverBusy(UsageError):
    """Another live driver already runs this adaptive sweep."""


@contextlib.contextmanager
def sole_adaptive_driver(store: Store, sweep: str, ttl_s: float | None = None) -> Iterator[Leases]:
    """Hold the sweep's adaptive-driver lease while its loop runs (renewed, released at the end,
    lapsing if the driver dies). An adaptive loop claims no trials (its pool runs what it chose),
    so two loops of one sweep would choose and log rounds over each other: the second is refused.

    Raises:
        DriverBusy: another live driver holds the lease (a dead one of this machine is reaped).
    """
    leases = Leases(store, sweep, driver_ttl_s(ttl_s))
    if not leases.claim([ADAPTIVE_DRIVER_KEY]):
        owner = leases.others({ADAPTIVE_DRIVER_KEY}).get(ADAPTIVE_DRIVER_KEY, "another driver")
        raise DriverBusy(f"adaptive sweep {sweep!r} is already run by {owner}: run one driver per adaptive sweep "
                         f"(its lease lapses {leases.ttl_s:g} s after that driver stops)")
    try:
        yield leases
    finally:
        leases.close()


def note_other_drivers(leases: Leases, theirs: set[str], mine: set[str], result: SweepResult, bar: Progress) -> None:
    """Say which other drivers hold some of the trials, and remember it for the summary."""
    owners = leases.others(theirs)
    for owner in sorted(set(owners.values())):
        n = sum(o == owner for o in owners.values())
        result.elsewhere[owner] = max(result.elsewhere.get(owner, 0), n)
        bar.message(f"{n} claimed by another driver ({owner}): "
                    + ("running the others, then waiting for those" if mine else "waiting for them"))


def wait_for(leases: Leases, keys: set[str], check: Callable[[], None]) -> None:
    """Until no other live driver holds a lease on ``keys`` (they completed, were released, or
    lapsed); ``check`` (a signal) is called every fraction of a second."""
    while leases.others(keys):
        if not leases.reap_dead(keys):
            deadline = time.monotonic() + WAIT_POLL_S
            while time.monotonic() < deadline:
                check()
                time.sleep(SIGNAL_POLL_S)
