"""The twin of ``explorer compare`` (``explorer.cli.compare``): two stored sweeps' laws compared
(``explorer.analysis.compare``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from store import Store

from ..analysis.laws import DEFAULT_FORM

if TYPE_CHECKING:
    from ..analysis.compare import Comparison


def compare(sweep_a: str, sweep_b: str | None = None, *, by: str | None = None, store: Store | str = "results",
            form: str = DEFAULT_FORM, metric: str = "err_out", step: int | None = None, where: str | None = None,
            n_boot: int = 200, seed: int = 0, save: bool = True, at: dict | None = None) -> Comparison:
    """Compare two sweeps' fitted laws on the grid points, problem draws and seeds they share,
    with paired intervals of the differences (``explorer.analysis.compare``; docs/analysis.md).

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
    from ..analysis.compare import compare_stored

    return compare_stored(sweep_a, sweep_b, by=by, store=store, form=form, metric=metric, step=step, where=where,
                          n_boot=n_boot, seed=seed, save=save, at=at)


__all__ = ["compare"]
