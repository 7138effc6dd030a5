"""The library's errors worded in the command's flags: where a wing's error names what would work
instead, the command line says it as the flag that asks for it. The library (``explorer.api``)
raises the wing's error as it is; only the commands know their flags.

- ``fit_flag_words``: a law whose data is missing (its error's ``fallback_form``, set by
  ``explorer.analysis.fitting.fit_stored_sweep``) ends with ``--form FALLBACK fits the RMS errors
  instead``.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import UsageError


@contextmanager
def fit_flag_words() -> Iterator[None]:
    """Re-raise a fit's error that names a fallback law as the same error ending with the flag
    that fits it (one line, no chained cause)."""
    try:
        yield
    except UsageError as exc:
        fallback = getattr(exc, "fallback_form", None)
        if fallback is None:
            raise
        raise type(exc)(f"{exc}; --form {fallback} fits the RMS errors instead") from None


__all__ = ["fit_flag_words"]
