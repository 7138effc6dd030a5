"""What a cached reference must hold before any trial is measured against it.

The store already refuses a file whose rows carry another key (``store.references``); this is
the explorer's part, which knows what a reference means: its metadata names the same key, and
the arrays every error is computed from (outputs, last hidden states, loss) are all present
and finite. A reference that computes NaN is never stored (``trials.ReferenceDiverged``), so a
cached one with NaN or Inf was changed after it was written. The error estimates
(``err_*``) may be NaN legitimately (one seed of a ``largest`` reference has no spread).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

MEASURED_ARRAYS = ("out", "hidden", "loss")


def reference_problem(ref_key: str, arrays: dict, meta: dict) -> str | None:
    """Why ``(arrays, meta)`` cannot be the reference ``ref_key``, or None when it can."""
    named = meta.get("key") if isinstance(meta, dict) else None
    if named is not None and named != ref_key:
        return f"its metadata names the reference {named}"
    for name in MEASURED_ARRAYS:
        array = arrays.get(name)
        if array is None:
            return f"it lacks the array {name!r}"
        if array.dtype.kind not in "fc":
            return f"its array {name!r} is {array.dtype}, not floating point"
        if not np.isfinite(array).all():
            return f"its array {name!r} holds NaN or Inf"
    return None


def validator(ref_key: str) -> Callable[[dict, dict], str | None]:
    """``reference_problem`` for one key, in the form ``Store.get_or_compute_reference`` takes."""
    return lambda arrays, meta: reference_problem(ref_key, arrays, meta)
