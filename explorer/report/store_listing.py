"""The sweeps of a store as ``explorer ls`` lists them (its twin ``explorer.api.ls``): each with its
trials by status, size on disk (MiB) and last write (UTC); an empty or new store lists none."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..formatting import printable_text
from ..store_access import open_store, store_errors

if TYPE_CHECKING:
    from store import Store


@dataclass
class SweepListing:
    """The sweeps of a store (``explorer ls``): ``rows`` as ``Store.sweeps_summary`` gives them."""

    store: str
    rows: list = field(default_factory=list)

    def lines(self) -> list[str]:
        if not self.rows:  # an empty or new store is an answer, not an error
            return [f"no sweeps in {printable_text(self.store)}"]
        lines = [f"{'sweep':<24} {'trials':>7} {'ok':>7} {'diverged':>8} {'failed':>7} {'MiB':>9}  last write"]
        for r in self.rows:
            when = r.last_write.strftime("%Y-%m-%d %H:%M:%S") if r.last_write else "-"
            lines.append(f"{r.sweep:<24} {r.trials:>7} {r.ok:>7} {r.diverged:>8} {r.failed:>7} "
                         f"{r.bytes / 2**20:>9.2f}  {when}")
        return lines


def list_sweeps(store: Store | str | os.PathLike = "results") -> SweepListing:
    """The store's sweeps (none for an empty or new store)."""
    st = open_store(store)
    with store_errors():
        rows = st.sweeps_summary() if st.exists() else []
    return SweepListing(store=st.uri, rows=rows)


__all__ = ["SweepListing", "list_sweeps"]
