"""The explorer's one formatter of values for text: numbers in fits, diagnostics, phase and report
text (``fmt``), spec values in error messages (``spec_value``), sizes and durations in estimates
(``format_bytes``, ``format_seconds``), shares (``format_percent``)."""
from __future__ import annotations

import json
import math
from typing import Any


def fmt(value, spec: str = ".4g", missing: str = "n/a") -> str:
    """A value for text output.

    Floats (numpy's included) go through ``format(value, spec)``; None and NaN print as
    ``missing``; anything else (ints, strings, booleans) as ``str``. ``fmt(x, "g")`` is an axis
    value (floats without trailing zeros), ``fmt(x)`` an estimate (4 significant digits).
    """
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()  # a numpy scalar (duck-typed: a spec error must not import numpy)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, float):
        return format(value, spec)
    return str(value)



def format_percent(share: float) -> str:
    """A share as a percentage with 3 significant digits, whatever its size (0.0001 -> '0.01%',
    2.5e12 -> '2.5e+14%')."""
    return f"{100 * share:.3g}%" if math.isfinite(share) else fmt(share)


def spec_value(value: Any) -> str:
    """A spec value as TOML writes it, for error messages: strings quoted (control characters
    escaped), booleans as true/false, lists item by item, a table as "a table"."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string: control characters escaped
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(spec_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "a table"
    return repr(value)


def format_bytes(n: float) -> str:
    """A size in bytes with a binary unit (``31 GiB``), three significant digits."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


def format_seconds(s: float) -> str:
    """A duration in s, min, h or days, two or three significant digits."""
    if s < 60:
        return f"{s:.2g} s"
    if s < 3600:
        return f"{s / 60:.3g} min"
    if s < 86400 * 2:
        return f"{s / 3600:.3g} h"
    return f"{s / 86400:.3g} days"


__all__ = ["fmt", "format_bytes", "format_seconds", "spec_value"]
