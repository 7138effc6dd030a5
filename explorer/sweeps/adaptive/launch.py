"""Launching an adaptive sweep (``explorer sweep SPEC --adaptive``; its twin
``explorer.api.adaptive_sweep``), as ``explorer.sweeps.run.launch.sweep`` launches a grid: the spec
loaded and checked first, then one driver per sweep (a lease) and one Ray session with one pool of
workers for every round, started at the first trials to run."""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from store import Store

    from ...config.sections import SweepSpec
    from .rounds import AdaptiveResult


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
    ``run_adaptive`` and ``SessionRunner``; docs/sweeps.md).

    Args: as ``explorer.sweeps.run.launch.sweep``.

    Returns:
        An ``AdaptiveResult`` (``summary()``, ``exit_code``: 0 once the loop stopped).

    Raises:
        SpecError, ClusterError, StoreError: as ``sweep``. DriverBusy (a UsageError): another live
        driver runs this adaptive sweep.
    """
    import sys

    from ...store_access import open_store
    from ..ray import runnable_spec
    from ..tracking import sole_adaptive_driver
    from .loop import run_adaptive
    from .session_runner import SessionRunner

    spec = runnable_spec(spec_or_path, overrides, address)
    st = open_store(store)

    def log(line: str) -> None:
        if progress:
            print(line, file=sys.stderr, flush=True)

    # one Ray session and one pool of workers for every round, started at the first trials to run
    with sole_adaptive_driver(st, spec.name), SessionRunner(spec, st, address=address, max_concurrent=max_concurrent,
                                                            num_cpus=num_cpus, progress=progress) as runner:
        return run_adaptive(spec, st, runner, log=log)


__all__ = ["adaptive_sweep"]
