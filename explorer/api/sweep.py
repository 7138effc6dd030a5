"""The twins of ``explorer sweep`` (``--adaptive``, ``--dry-run``), ``status`` and ``demo``
(``explorer.cli.sweep``): the launches (``explorer.sweeps``: its ``run`` and ``adaptive`` wings),
the dry runs, the counts by status and the demo."""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from store import Store

from ..config.sections import SweepSpec
from ..store_access import open_store, store_errors
from ..sweeps import SweepStatus, every_sweep_status_lines, sweep, sweep_status  # sweep: reproduce and demo call it too
from .echo import Echo

if TYPE_CHECKING:
    from ..sweeps import AdaptiveResult


def adaptive_sweep(
    spec_or_path: SweepSpec | Mapping | str | os.PathLike,
    store: Store | str | os.PathLike = "results",
    address: str | None = None,
    max_concurrent: int | None = None,
    overrides: Sequence[str] = (),
    progress: bool = True,
    num_cpus: int | None = None,
) -> "AdaptiveResult":
    """Run (or resume) an adaptive sweep: the spec's [grid] is the candidate set, and rounds of
    points chosen by the [adaptive] rules run on one Ray session's pool of workers until every
    target's CI is narrow enough or the budget is spent (``explorer.sweeps.adaptive``: its
    ``adaptive_sweep``, ``run_adaptive`` and ``SessionRunner``; docs/sweeps.md).

    Args: as ``sweep``.

    Returns:
        An ``AdaptiveResult`` (``summary()``, ``exit_code``: 0 once the loop stopped).

    Raises:
        SpecError, ClusterError, StoreError: as ``sweep``. DriverBusy (a UsageError): another live
        driver runs this adaptive sweep.
    """
    from ..sweeps import adaptive_sweep as launch

    return launch(spec_or_path, store, address, max_concurrent, overrides, progress, num_cpus)


def dry_run(spec: SweepSpec, address: str | None = None, adaptive: bool = False,
            store: Store | str | os.PathLike | None = None) -> list[str]:
    """What ``explorer sweep SPEC --dry-run`` prints: the trials, references and estimated memory
    and time (``adaptive``: the candidates, the budget and the initial design); nothing runs.
    With an embedded Ray (``address`` None) this machine's memory and CPUs price the plan, and
    what cannot fit is flagged. With ``store`` (not adaptive): how many trials it has complete and
    references cached, and what is left priced with Ray's start; the store is only read.

    Raises:
        SpecError: (adaptive) a grid the law cannot be fitted on, or a budget that pays for no point.
        StoreError: the store cannot be read.
    """
    from ..sweeps import adaptive_dry_run_lines, sweep_dry_run_lines

    with store_errors():
        if adaptive:
            return adaptive_dry_run_lines(spec, embedded=address is None)
        return sweep_dry_run_lines(spec, embedded=address is None, store=None if store is None else open_store(store))


def demo(store: Store | str | os.PathLike = "results", out: str | os.PathLike = "report", echo: Echo = print) -> int:
    """``explorer demo``: a small built-in sweep, its error table, report and fit, each line through
    ``echo`` (``explorer.demo.run_demo``). Returns the sweep's exit code."""
    from ..demo import run_demo

    return run_demo(store=store, out=out, echo=echo)


__all__ = ["SweepStatus", "adaptive_sweep", "demo", "dry_run", "every_sweep_status_lines", "sweep", "sweep_status"]
