"""The twin of ``explorer watch`` (``explorer.cli.watch``): a sweep followed while it runs
(``explorer.watch``), its report page rewritten at each refresh as ``explorer.api.report`` makes it."""
from __future__ import annotations

import os

from store import Store

from ..store_access import open_store, store_errors
from .echo import Echo


def watch(sweep: str, store: Store | str | os.PathLike = "results", *, every: float = 10.0, once: bool = False,
          as_json: bool = False, html: str | os.PathLike | None = None, n_boot: int = 200, seed: int = 0,
          echo: Echo = print, live: bool | None = False):
    """Follow a sweep while it runs (``explorer watch``; ``explorer.watch``): every ``every``
    seconds its trials by status, rate and ETA, and the answer so far (each slice's optimum and the
    transfer law for a sweep with an lr or alpha axis, else the default fit), with how much each
    interval narrowed; until its last run ends (or ``once``), reading the store without a lock.

        snap = explorer.api.watch("lrwidth", "results", once=True, echo=lambda line: None)
        snap.as_dict()["answer"]

    Args:
        as_json: one JSON object per refresh (``Snapshot.as_dict``). html: also rewrite the report
            page in that folder at each refresh with new rows, reloading itself until the end.
        live: a rich live display (the CLI's default on a terminal); else plain lines to ``echo``.

    Returns:
        The last ``Snapshot``.

    Raises:
        SweepDataError: an unknown sweep. StoreAccessError: an unreachable store.
    """
    from ..watch import Watcher, watch_loop

    with store_errors():
        st = open_store(store, sweep=sweep)

        def page(out, reload_s):
            from ..report.stored_sweep import sweep_report

            return sweep_report(sweep, st, out, save=False, force=True, n_boot=n_boot, reload_s=reload_s)

        return watch_loop(Watcher(st, sweep, n_boot=n_boot, seed=seed), every=every, once=once, as_json=as_json,
                          html=html, make_report=page, echo=echo, live=live)


__all__ = ["watch"]
