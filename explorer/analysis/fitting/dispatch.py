"""``fit_sweep``: a law fitted to one slice of a sweep read from the store."""
from __future__ import annotations

from ...bounds import MAX_RESAMPLES
from ...errors import FitError
from ..data import grid_errors, held_axes, held_where
from ..laws import DEFAULT_FORM, FORMS, resolve_form
from .result import FitResult
from .rms_fit import fit
from .solver import check_single_slice


def fit_sweep(con, sweep: str, form: str = DEFAULT_FORM, *, metric: str = "err_out", step: int | None = None,
              where: str | None = None, n_boot: int = 200, seed: int = 0, hold: bool = True,
              floor: str = "quadrature") -> FitResult:
    """``grid_errors`` then ``fit``: the whole analysis of one sweep slice (see both).

    Args:
        hold: when the sweep varies axes besides L, M, D (alpha, lr, ...), fit the slice at
            ``held_axes`` (their most common values) instead of failing; the slice is recorded
            in the result's ``where`` and ``held``. Problem draws are pooled, not held: select
            one with ``where="problem_seed = 2"``.
    """
    label, _ = resolve_form(form)  # a bad form fails before any query
    if not 0 <= n_boot <= MAX_RESAMPLES:
        raise FitError(f"n_boot must be from 0 to {MAX_RESAMPLES:,} bootstrap resamples, got {n_boot}")
    held = held_axes(con, sweep, ("L", "M", "D"), where) if hold else {}
    where = held_where(held, where)
    if label in FORMS and FORMS[label].method == "decomposed":
        from ..data import seed_grams
        from ..decomposed import fit_decomposed

        frame = seed_grams(con, sweep, metric=metric, step=step, where=where)
        check_single_slice(frame)
        result = fit_decomposed(frame, n_boot=n_boot, seed=seed, where=where, floor=floor)
        result.held = held
        return result
    grid = grid_errors(con, sweep, metric=metric, step=step, where=where)
    result = fit(grid, form, n_boot=n_boot, seed=seed, where=where, floor=floor)
    result.held = held
    return result


def save_fit(store, result: FitResult) -> str:
    """Write a fit's rows into a store (``store.write_fit``); returns the fit_id."""
    if result.sweep is None:
        raise FitError("this fit has no sweep name; fit a grid from grid_errors to save it")
    store.write_fit(result.sweep, result.fit_id, result.rows().to_dict("records"))
    return result.fit_id


__all__ = ["fit_sweep", "save_fit"]
