"""The adaptive loop's reads of its sweep's trials: their statuses and wall times, kept between
the runner's runs.

They change only when the runner runs trials: they are read once and kept until ``forget``, not
re-read by every decision that needs them (a dozen reads a round, each a read of every trial's
file). A blocking runner's trials are read again in full after each call; a background runner
reports the trials it finished, and only those are read (one file each, instead of the sweep's:
a tenth of the driver's CPU on the rates grid).
"""
from __future__ import annotations

from collections.abc import Collection

from store import Store


class TrialReads:
    """The trials column values of one sweep of a store, read as ``forget`` says."""

    def __init__(self, store: Store, sweep: str):
        self.store, self.sweep = store, sweep
        # trials column -> trial_key -> value, and the keys to read again before the next use
        self._columns: dict[str, dict] = {}
        self._stale: dict[str, set[str]] = {}

    def forget(self, keys: Collection[str] | None = None) -> None:
        """Drop the cached statuses and wall times (only those of ``keys`` when given): the next
        use reads them from the store again."""
        if keys is None:
            self._columns, self._stale = {}, {}
        else:
            for stale in self._stale.values():
                stale.update(keys)

    def column(self, name: str) -> dict:
        """``trial_key -> value`` of the sweep's trials column ``name``, read as ``forget`` says."""
        if name not in self._columns:
            self._columns[name] = (self.store.trial_column(self.sweep, name)
                                   if self.sweep in self.store.sweeps() else {})
            self._stale[name] = set()
        elif self._stale[name]:
            self._columns[name].update(self.store.trial_column(self.sweep, name, self._stale[name]))
            self._stale[name] = set()
        return dict(self._columns[name])

    def statuses(self) -> dict[str, str]:
        return self.column("status")

    def walls(self) -> dict:
        return self.column("wall_s")
