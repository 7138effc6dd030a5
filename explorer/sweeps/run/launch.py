"""Running a spec given as a path, a dict or a ``SweepSpec``: the way in of the Python API
(``explorer.sweep``), of ``explorer reproduce`` and of ``explorer demo``.

The spec is loaded, and on an embedded Ray checked against this machine's memory, before Ray is
even imported: a spec error or a grid too large for the machine is one quick line. Ray comes with
``runner``, imported once the spec is known to run.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...config.sections import SweepSpec
from ...store_access import open_store
from ..ray import runnable_spec  # the spec's checks, shared with the adaptive launch

if TYPE_CHECKING:
    from store import Store

    from ..tracking import SweepResult


def sweep(
    spec_or_path: SweepSpec | Mapping | str | os.PathLike,
    store: Store | str | os.PathLike = "results",
    address: str | None = None,
    max_concurrent: int | None = None,
    overrides: Sequence[str] = (),
    progress: bool = True,
    num_cpus: int | None = None,
) -> "SweepResult":
    """Run a sweep: every trial of the spec that the store does not have yet (``explorer sweep``;
    also ``explorer.sweep`` and ``explorer.api.sweep``).

    Args:
        spec_or_path: a spec file path, a dict of TOML data, or a ``SweepSpec``.
        store: results store, a directory (default ``results``) or ``s3://bucket/prefix``, or a Store.
        address: None starts an embedded Ray (unless this process already has one);
            ``"auto"`` or ``"ray://host:port"`` joins a cluster.
        max_concurrent: at most this many trials at once.
        overrides: ``KEY=VALUE`` strings such as ``"grid.L=[4,8]"``, applied to the spec.
        progress: show the progress line on standard error.
        num_cpus: CPUs of an embedded Ray (default: all of this machine's).

    Returns:
        A ``SweepResult`` (counts by status, ``summary()``, ``exit_code``).

    Raises:
        SpecError: an invalid spec, resources no node provides, or (embedded Ray) a trial or
            reference whose estimated memory exceeds this machine's. ClusterError: Ray cannot start
            or be reached. StoreError: the store cannot be listed or written (before Ray starts).

    SIGINT or SIGTERM (in the main thread) stop the run cleanly: the result has ``interrupted``
    set, ``resume`` the command to run again, and ``exit_code`` 130 or 143.
    """
    spec = runnable_spec(spec_or_path, overrides, address)
    from .runner import run_sweep

    return run_sweep(spec, open_store(store), address=address,
                     max_concurrent=max_concurrent, progress=progress, num_cpus=num_cpus)
