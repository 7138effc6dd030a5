"""The analysis's one number formatter (fit, diagnostics, phase and report text)."""
from __future__ import annotations

import math

import numpy as np


def fmt(value, spec: str = ".4g", missing: str = "n/a") -> str:
    """A value for text output.

    Floats (numpy's included) go through ``format(value, spec)``; None and NaN print as
    ``missing``; anything else (ints, strings, booleans) as ``str``. ``fmt(x, "g")`` is an axis
    value (floats without trailing zeros), ``fmt(x)`` an estimate (4 significant digits).
    """
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, float):
        return format(value, spec)
    return str(value)


__all__ = ["fmt"]
