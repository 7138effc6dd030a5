"""The twins of ``explorer optimum``, ``transfer`` and ``coordcheck`` (``explorer.cli.hyper``): a
stored sweep's hyperparameter optima, their transfer law, and the coordinate check
(``explorer.analysis.hyper``; a designed sweep's targets, ``explorer.experiment_design``)."""
from __future__ import annotations

from collections.abc import Sequence

from store import Store

from ..store_access import open_store, open_sweep, store_errors


def optimum(sweep: str, axis: str = "lr", *, store: Store | str = "results", metric: str = "loss",
            by: Sequence[str] | None = None, step: int | None = None, where: str | None = None, n_boot: int = 200,
            seed: int = 0, save: bool = True):
    """Each slice's best value of ``axis`` (``explorer.analysis.hyper``; docs/hyperparameters.md):
    the minimum of ``metric`` along the axis at ``step``, located on the log axis between grid values,
    with its 95% seed-and-draw interval; "below"/"above" the grid at an edge, never a value.

        explorer.api.optimum("lrxfer", "lr", store="results").lines()

    Args:
        by: the columns defining a slice (default: every other axis the sweep varies; any varying
            column left out must be held with ``where``). step: None reads each trial's last step.
        save: write the rows to the store (kind ``optima``).

    Returns:
        An ``Optima`` (``table``, ``lines()``, ``store_rows()``).

    Raises:
        FitError: the sweep does not vary ``axis`` (or it is not a positive number), a bad ``by`` or
            metric. SweepDataError: an unknown sweep, a step past the last. QueryError: a bad ``where``.
    """
    from ..analysis.data import data_notes
    from ..analysis.hyper import axis_runs, optima
    from ..experiment_design.design_record import read_targets

    with store_errors():
        st, con = open_sweep(store, sweep, where)
        try:
            runs = axis_runs(con, sweep, axis, metric=metric, step=step, by=by, where=where)
            notes = data_notes(st, sweep, con=con, where=where)
            designed = read_targets(con, sweep)
        finally:
            con.close()
        result = optima(runs, n_boot=n_boot, seed=seed)
        result.sweep, result.where, result.data_notes = sweep, where, notes
        result.design_targets = designed
        if save:
            st.write_optima(sweep, result.request_id("optimum"), result.store_rows())
    return result


def transfer(sweep: str, axis: str = "lr", across: Sequence[str] = ("L",), *, store: Store | str = "results",
             metric: str = "loss", step: int | None = None, where: str | None = None, n_boot: int = 200,
             seed: int = 0, drop_edges: bool = False, save: bool = True, pairs=None):
    """Whether the optimum of ``axis`` transfers across ``across`` (L, M, or both): the law log
    axis* = c + gamma log L + delta log M (the terms of the axes asked) fitted per preset (every
    other varying column) to the optima of ``optimum``, intervals from the same bootstrap,
    verdicts, and the paired differences of the exponents between groups that share draws and
    seeds (docs/hyperparameters.md).

        explorer.api.transfer("lrxfer", "lr", across=["L"], store="results").lines()

    Args:
        drop_edges: fit a group without its slices whose optimum sits at a grid edge (they are named
            either way; without this such a group is not fitted). save: write the rows (kind ``optima``).
        pairs: the paired differences: None (each group against the first, the baseline), "all",
            or ``"A:B"`` texts naming two groups by their values (``"standard/raw:mlu/mean_field"``:
            the difference B - A).

    Returns:
        A ``Transfer`` (``fits``, ``differences``, ``lines()``, ``store_rows()``).

    Raises:
        FitError: no such axis, an ``across`` axis the sweep does not vary. As ``optimum`` otherwise.
    """
    from ..analysis.hyper import transfer as fit_transfer

    found = optimum(sweep, axis, store=store, metric=metric, step=step, where=where, n_boot=n_boot, seed=seed,
                    save=False)
    result = fit_transfer(found, across, drop_edges=drop_edges, pairs=pairs)
    from ..experiment_design.transfer_design import transfer_target_lines

    result.data_notes = found.data_notes + transfer_target_lines(found.design_targets, result)
    if save:
        with store_errors():
            st = open_store(store, sweep=sweep)
            st.write_optima(sweep, found.request_id("transfer-" + "-".join(result.across) + ("-dropped" if drop_edges else "")),
                            result.store_rows())
    return result


def coordcheck(sweep: str, *, store: Store | str = "results", step: int | None = None, where: str | None = None,
               n_boot: int = 200, seed: int = 0):
    """The coordinate check (docs/hyperparameters.md): per preset (and every other varying column
    but L and M), the sizes of the hidden-state update and of the residual branch's output per
    quarter of depth, and ``feature_update``, against M and L at ``step`` (None: the last), and
    each one's exponent in M and in L with 95% seed-and-draw intervals.

        explorer.api.coordcheck("coords", store="results").lines()

    Returns:
        A ``CoordCheck`` (``sizes.table()``, ``fits``, ``lines()``).

    Raises:
        SweepDataError: an unknown sweep, a bad step, rows without the coordinate-check columns.
        FitError: a sweep varying neither M nor L. QueryError: a bad ``where``.
    """
    from ..analysis.data import data_notes
    from ..analysis.hyper import coord_exponents, coord_sizes

    with store_errors():
        st, con = open_sweep(store, sweep, where)
        try:
            sizes = coord_sizes(con, sweep, step=step, where=where)
            notes = data_notes(st, sweep, con=con, where=where)
        finally:
            con.close()
    result = coord_exponents(sizes, n_boot=n_boot, seed=seed)
    result.data_notes = notes
    return result


__all__ = ["coordcheck", "optimum", "transfer"]
