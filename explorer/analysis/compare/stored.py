"""Two stored sweeps compared (``explorer compare``; its twin ``explorer.api.compare``): the sides
read from one store, by two names or by two values of one sweep's column, the slice fixed by
``at`` and ``where``, compared (``sides.compare``) and filed under A's sweep."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import FitError
from ...store_access import check_where, open_store
from ..laws import DEFAULT_FORM
from .sides import Comparison, Side, at_where, compare as compare_sides, sides_by

if TYPE_CHECKING:
    from store import Store


def compare_stored(sweep_a: str, sweep_b: str | None = None, *, by: str | None = None, store: Store | str = "results",
                   form: str = DEFAULT_FORM, metric: str = "err_out", step: int | None = None,
                   where: str | None = None, n_boot: int = 200, seed: int = 0, save: bool = True,
                   at: dict | None = None) -> Comparison:
    """Compare two sweeps' fitted laws, as ``explorer.api.compare`` documents (its arguments and errors)."""
    if (sweep_b is None) == (by is None):
        raise FitError("compare needs two sweeps, or one sweep and --by COLUMN (not both)")
    st = open_store(store, sweep=sweep_a)
    if sweep_b is not None:
        open_store(st, sweep=sweep_b)
    con = st.connect(read_only=True)
    try:
        if where is not None:
            check_where(con, where)
        where = at_where(con, [s for s in (sweep_a, sweep_b) if s is not None], at, where)
        a, b = sides_by(con, sweep_a, by, where) if by else (Side(sweep_a), Side(sweep_b))
        result = compare_sides(con, a, b, form=form, metric=metric, step=step, where=where, n_boot=n_boot,
                               seed=seed, by=by)
    finally:
        con.close()
    if save:
        st.write_comparison(sweep_a, result.comparison_id, result.store_rows())
    return result


__all__ = ["compare_stored"]
