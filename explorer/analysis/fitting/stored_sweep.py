"""A law fitted to a sweep as the store holds it (``explorer fit``): ``fit_stored_sweep`` fits
through ``fit_sweep`` and, where the law's own data is missing (the decomposed law without the
seeds' Gram rows, or with one seed a point), names on the error the law that fits the same sweep
from its RMS errors instead (its ``fallback_form``), which the command line words as a ``--form``."""
from __future__ import annotations

from ...errors import FitError, NoDecompositionError
from ..laws import DEFAULT_FORM, method_of, resolve_form
from .dispatch import fit_sweep
from .result import FitResult


def fit_stored_sweep(con, sweep: str, form: str = DEFAULT_FORM, *, metric: str = "err_out", **options) -> FitResult:
    """``fit_sweep(con, sweep, form, metric=metric, **options)``.

    Raises:
        FitError, NoDecompositionError: as ``fit_sweep``; where the law's method has a fallback and
            the error is its data's (``Method.missing_data``: a missing decomposition, or a ``FitError``
            naming the method),
            the error's ``fallback_form`` is that law (else it has none).
    """
    try:
        return fit_sweep(con, sweep, form, metric=metric, **options)
    except (NoDecompositionError, FitError) as exc:
        label, _ = resolve_form(form)
        method = method_of(label, metric)
        if method.fallback is None or not method.missing_data(exc):
            raise
        exc.fallback_form = method.fallback
        raise


__all__ = ["fit_stored_sweep"]
