"""The Python API of sweeps: the same as the CLI, for notebooks and scripts.

    import explorer
    result = explorer.sweep("examples/quick.toml", store="results")   # embedded Ray
    result = explorer.sweep(spec, store="s3://bucket/prefix", address="auto")  # join a cluster
    explorer.sweep_status("examples/quick.toml", store="results").counts

A script that already called ``ray.init`` (or joined a cluster) keeps its Ray: ``sweep`` uses it
and leaves it running. Ray is imported only when a sweep actually has trials to run.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from store import SCHEMA_VERSION, STATUSES, Store

from .store_access import open_store, store_errors
from .config.planning import plan
from .config.sections import SweepSpec
from .config.spec import load_spec

if TYPE_CHECKING:
    from .sweeps.adaptive import AdaptiveResult
    from .sweeps.results import SweepResult


def _runnable_spec(spec_or_path, overrides: Sequence[str], address: str | None) -> SweepSpec:
    """The spec, loaded before Ray is even imported (spec errors first); with an embedded Ray
    (``address`` None: it runs on this machine) what cannot fit its memory is refused before it starts."""
    spec = load_spec(spec_or_path, overrides)
    if address is None:
        from .config.estimate import available_memory_bytes, check_fits_memory

        check_fits_memory(spec, available_memory_bytes())
    return spec


def sweep(
    spec_or_path: SweepSpec | Mapping | str | os.PathLike,
    store: Store | str | os.PathLike = "results",
    address: str | None = None,
    max_concurrent: int | None = None,
    overrides: Sequence[str] = (),
    progress: bool = True,
    num_cpus: int | None = None,
) -> "SweepResult":
    """Run a sweep: every trial of the spec that the store does not have yet.

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
    spec = _runnable_spec(spec_or_path, overrides, address)
    from .sweeps.ray_runner import run_sweep

    return run_sweep(spec, open_store(store), address=address,
                     max_concurrent=max_concurrent, progress=progress, num_cpus=num_cpus)


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

    Args: as ``sweep``.

    Returns:
        An ``AdaptiveResult`` (``summary()``, ``exit_code``: 0 once the loop stopped).

    Raises:
        SpecError, ClusterError, StoreError: as ``sweep``. DriverBusy (a UsageError): another live
        driver runs this adaptive sweep.
    """
    import sys

    from .sweeps.adaptive import SessionRunner, run_adaptive
    from .sweeps.leases import sole_adaptive_driver

    spec = _runnable_spec(spec_or_path, overrides, address)
    st = open_store(store)

    def log(line: str) -> None:
        if progress:
            print(line, file=sys.stderr, flush=True)

    # one Ray session and one pool of workers for every round, started at the first trials to run
    with sole_adaptive_driver(st, spec.name), SessionRunner(spec, st, address=address, max_concurrent=max_concurrent,
                                                            num_cpus=num_cpus, progress=progress) as runner:
        return run_adaptive(spec, st, runner, log=log)


def design(sweep: str, targets, store: Store | str | os.PathLike = "results", **options):
    """The cheapest sweep predicted to measure each target exponent, from the pilot ``sweep``
    (``explorer.experiment_design.designer.design``: its arguments, its ``DesignResult``)."""
    from .experiment_design.designer import design as designed

    return designed(sweep, targets, store=store, **options)


@dataclass
class SweepStatus:
    """Counts of a sweep's trials by status, as the store sees them."""

    sweep: str
    store: str
    counts: dict[str, int] = field(default_factory=dict)  # ok, diverged, failed (+ pending, other with a spec)
    planned: int | None = None  # trials the spec defines (None without a spec)
    adaptive: list[str] = field(default_factory=list)  # an adaptive sweep's rounds (explorer.sweeps.adaptive.adaptive_status)

    def lines(self) -> list[str]:
        head = f"sweep {self.sweep} in {self.store}"
        if self.planned is not None:
            done = sum(self.counts.get(s, 0) for s in ("ok", "diverged"))
            head += f": {done}/{self.planned} trials complete"
        order = list(STATUSES) + (["pending", "other"] if self.planned is not None else [])
        lines = [head]
        for name in order:
            note = {"pending": "  (not run yet, or lost: rerun the sweep)",
                    "other": "  (in the store, not in this spec)"}.get(name, "")
            lines.append(f"  {name:<9}{self.counts.get(name, 0):>8}{note}")
        return lines + self.adaptive


def sweep_status(spec_or_path=None, *, sweep: str | None = None, store: Store | str = "results",
                 overrides: Sequence[str] = ()) -> SweepStatus:
    """Counts by status of a sweep's trials: of the spec's trials (with a spec), or of every
    trial the store holds under the name ``sweep``.

    Raises:
        SpecError: an invalid spec. SweepDataError: a sweep name the store does not have (the
            message lists those it has). StoreAccessError: a store that cannot be opened.
        ValueError: neither or both of a spec and a sweep name.
    """
    if (spec_or_path is None) == (sweep is None):
        raise ValueError("give a spec or a sweep name (not both)")
    if sweep is not None:
        st = open_store(store, sweep=sweep)
        counts = {s: 0 for s in STATUSES}
        for status in st.trial_statuses(sweep).values():
            counts[status] = counts.get(status, 0) + 1
        return SweepStatus(sweep=sweep, store=st.uri, counts=counts, adaptive=_adaptive_lines(st, sweep))
    spec = load_spec(spec_or_path, overrides)
    st = open_store(store)  # a spec not run yet: every trial pending, even in an empty store
    planned = {t.trial_key for t in plan(spec, SCHEMA_VERSION).trials}
    known = st.trial_statuses(spec.name)
    counts = {s: 0 for s in (*STATUSES, "pending", "other")}
    for key in planned:
        counts[known.get(key, "pending")] += 1
    counts["other"] = len(set(known) - planned)
    return SweepStatus(sweep=spec.name, store=st.uri, counts=counts, planned=len(planned),
                       adaptive=_adaptive_lines(st, spec.name))


def _adaptive_lines(st: Store, sweep: str) -> list[str]:
    """The rounds of an adaptive sweep, for the status (none for other sweeps)."""
    if sweep not in st.sweeps():
        return []
    from .sweeps.adaptive import adaptive_status

    return adaptive_status(st, sweep)


def compare(sweep_a: str, sweep_b: str | None = None, *, by: str | None = None, store: Store | str = "results",
            form: str = "decomposed", metric: str = "err_out", step: int | None = None, where: str | None = None,
            n_boot: int = 200, seed: int = 0, save: bool = True, at: dict | None = None):
    """Compare two sweeps' fitted laws on the grid points, problem draws and seeds they share,
    with paired intervals of the differences (``explorer.analysis.pairing``; docs/analysis.md).

        explorer.compare("lr10", "lr08", store="results").lines()
        explorer.compare("presets", by="preset", store="results")   # two values of one sweep's axis

    Args:
        sweep_a, sweep_b: the sweeps A and B (B - A is reported); with ``by``, give ``sweep_a`` only.
        by: a configuration column (preset, activation, ...) whose two values in ``sweep_a`` are A and B.
        at: column -> value (``--at lr=0.5``): the slice compared where the sweeps vary other axes
            besides L, M, D (and ``by``); without it such a comparison is refused.
        save: write the rows to the store (kind ``comparisons``, filed under A's sweep).

    Returns:
        A ``Comparison`` (``rows``, ``lines()``, ``comparison_id``, ``fit``, ``paired``).

    Raises:
        FitError: incomparable sides, nothing shared, an unsupported form, a bad ``by``, other varying
            axes not fixed by ``at`` or ``where``, an ``at`` value a sweep does not hold.
        SweepDataError: an unknown sweep. QueryError: a bad ``where``.
    """
    from .analysis.compare_sweeps import Side, at_where, compare as compare_sides, sides_by
    from .errors import FitError

    if (sweep_b is None) == (by is None):
        raise FitError("compare needs two sweeps, or one sweep and --by COLUMN (not both)")
    st = open_store(store, sweep=sweep_a)
    if sweep_b is not None:
        open_store(st, sweep=sweep_b)
    con = st.connect(read_only=True)
    try:
        where = at_where(con, [s for s in (sweep_a, sweep_b) if s is not None], at, where)
        a, b = sides_by(con, sweep_a, by, where) if by else (Side(sweep_a), Side(sweep_b))
        result = compare_sides(con, a, b, form=form, metric=metric, step=step, where=where, n_boot=n_boot,
                               seed=seed, by=by)
    finally:
        con.close()
    if save:
        st.write_comparison(sweep_a, result.comparison_id, result.store_rows())
    return result


def every_sweep_status_lines(store) -> list[str]:
    """``explorer status`` alone: a header and one row per sweep of the store, trials by status.

    Raises:
        StoreAccessError: nothing was written to ``store`` yet.
    """
    st = open_store(store, must_exist=True)
    with store_errors():
        rows = [(name, st.trial_statuses(name)) for name in st.sweeps()]
    lines = [f"{'sweep':<24}" + "".join(f"{s:>10}" for s in STATUSES) + f"{'trials':>10}"]
    for name, statuses in rows:
        counts = [sum(1 for v in statuses.values() if v == s) for s in STATUSES]
        lines.append(f"{name:<24}" + "".join(f"{c:>10}" for c in counts) + f"{len(statuses):>10}")
    return lines
