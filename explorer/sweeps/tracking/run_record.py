"""The record of one ``sweep`` run in the store (``Store.write_run``): written when the run starts
(its resolved spec, the trial keys of its grid, the subset it runs when one), and again when it
ends. What "partial", "leftover" and ``explorer watch``'s "ended" are measured against
(``explorer.analysis.data.run_state``); whether a run is still live is read from its leases.

A record that cannot be written is no reason to stop a run: a store that cannot be written at
all is refused by the run's own probe before Ray starts, and a run whose end cannot be recorded
stops being live when its leases lapse.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from store import Store, StoreError, new_run_id

from ...config.planning import Plan
from ...config.sections import SweepSpec


class RunLog:
    """One run's record: ``start()`` before any trial runs, ``end()`` however the run ends."""

    def __init__(self, store: Store, spec: SweepSpec, plan: Plan, only_keys: Collection[str] | None, ttl_s: float):
        self.store, self.spec, self.ttl_s = store, spec, ttl_s
        self.planned = [t.trial_key for t in plan.trials]
        self.only = None if only_keys is None else sorted(set(only_keys) & set(self.planned))
        self.run_id = new_run_id()
        self.started_at = dt.datetime.now(dt.timezone.utc)
        self.written = False

    def record_spec(self) -> dict:
        """The resolved spec, with ``axes``: each store column's values in the run's grid (the
        scalar of a key not on the grid as one value), what names a trial outside it; and
        ``given``: the keys its user wrote (``section.key``), what a design copies."""
        axes = {name: list(values) for name, values in self.spec.axes().items()}
        axes["problem_seed"] = list(self.spec.problem_seeds())
        return {**self.spec.to_dict(), "axes": axes, "given": sorted(self.spec.given)}

    def _write(self, ended_at: dt.datetime | None) -> None:
        self.store.write_run(self.spec.name, self.run_id, spec=self.record_spec(), planned_keys=self.planned,
                             started_at=self.started_at, ended_at=ended_at, only_keys=self.only, ttl_s=self.ttl_s)

    def start(self) -> None:
        try:
            self._write(None)
            self.written = True
        except StoreError:
            self.written = False

    def end(self) -> None:
        if not self.written:
            return
        try:
            self._write(dt.datetime.now(dt.timezone.utc))
        except StoreError:
            pass
