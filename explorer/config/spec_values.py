"""The checks of a spec's values: each returns the normalized value or raises ``InvalidValue``
(the problem, without the key: the caller names it), and ``spec_field`` declares a key with its
default, its check and its meaning."""
from __future__ import annotations

import difflib
import math
from dataclasses import field
from typing import Any, Callable

from ..bounds import INT64_MAX, MAX_GRID_POINTS, MAX_RESAMPLES
from ..formatting import spec_value


class InvalidValue(Exception):
    """A value's problem, without the key (the caller names it)."""


class InvalidChoice(InvalidValue):
    """A name that is not one of the allowed ones: ``detail`` says which are, with a "did you
    mean" (a list of names repeats it for the item at fault)."""

    def __init__(self, message: str, detail: str):
        super().__init__(message)
        self.detail = detail


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(v)


def positive_int(v: Any) -> int:
    if not is_int(v) or v < 1:
        raise InvalidValue(f"expected a positive integer, got {spec_value(v)}")
    return storable(v)


def nonnegative_int(v: Any) -> int:
    if not is_int(v) or v < 0:
        raise InvalidValue(f"expected a non-negative integer, got {spec_value(v)}")
    return storable(v)


def storable(v: int) -> int:
    # every integer of a spec lands in an int64 column (or sizes an array): refused here, not
    # after a sweep's every write failed
    if v > INT64_MAX:
        raise InvalidValue(f"expected an integer of at most 2^63 - 1 = {INT64_MAX} (it is stored as int64), got {spec_value(v)}")
    return v


def at_most(limit: int, what: str) -> Callable[[Any], int]:
    """A positive integer of at most ``limit`` (explorer.bounds: refused before anything is built)."""
    def check(v: Any) -> int:
        v = positive_int(v)
        if v > limit:
            raise InvalidValue(f"expected at most {limit:,} {what}, got {spec_value(v)}")
        return v

    return check


def positive_number(v: Any) -> float:
    if not is_number(v) or v <= 0:
        raise InvalidValue(f"expected a positive number, got {spec_value(v)}")
    return float(v)


def nonnegative_number(v: Any) -> float:
    if not is_number(v) or v < 0:
        raise InvalidValue(f"expected a non-negative number, got {spec_value(v)}")
    return float(v)


def boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise InvalidValue(f"expected true or false, got {spec_value(v)}")
    return v


def closest(word: Any, known) -> str | None:
    """The known name closest to a misspelt ``word`` (``sedes`` -> ``seeds``), or None."""
    if not isinstance(word, str) or len(word) > 200:  # difflib is quadratic in the length
        return None
    close = difflib.get_close_matches(word, [str(k) for k in known], n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_key(word: Any, known) -> str:
    """The problem of an unknown key: ``unknown key; did you mean 'seeds'? expected one of: ...``."""
    near = closest(word, known)
    hint = f"did you mean {near!r}? " if near else ""
    return f"unknown key; {hint}expected one of: {', '.join(known)}"


def choice(*allowed: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if v not in allowed:
            near = closest(v, allowed)
            hint = f" (did you mean {near!r}?)" if near else ""
            listed = ", ".join(spec_value(a) for a in allowed)
            raise InvalidChoice(f"expected one of {listed}; got {spec_value(v)}{hint}",
                                f"{spec_value(v)} is not one of {listed}{hint}")
        return v

    return check


def list_of(item: Callable[[Any], Any], noun: str) -> Callable[[Any], tuple]:
    def check(v: Any) -> tuple:
        if not isinstance(v, list) or not v:
            raise InvalidValue(f"expected a non-empty list of {noun}, got {spec_value(v)}")
        try:
            values = tuple(item(x) for x in v)
        except InvalidChoice as bad:  # which names are allowed, and the one meant
            raise InvalidValue(f"expected a list of {noun}, got {spec_value(v)}: {bad.detail}") from None
        except InvalidValue:
            raise InvalidValue(f"expected a list of {noun}, got {spec_value(v)}") from None
        seen: set = set()
        for x in values:  # a set, not values[:i]: quadratic in the list's length was minutes at 10^6
            if x in seen:
                raise InvalidValue(f"value {spec_value(x)} is listed twice in {spec_value(v) if len(v) <= 20 else 'the list'}")
            seen.add(x)
        return values

    return check


def sweep_name(v: Any) -> str:
    # The store's own rule (the name is a folder of the store). Imported here, and checked after
    # the sections, so that a typo in a section is reported without importing the store (pyarrow).
    from store import InvalidNameError, check_sweep

    try:
        return check_sweep(v)
    except InvalidNameError:
        raise InvalidValue(
            "expected 1-128 letters, digits, '_', '-' or '.', starting with a letter or digit, no '..' "
            f"(it names a folder in the store), got {spec_value(v)}"
        ) from None


def points_per_trial(v: Any) -> int | str:
    if v == "auto":
        return v
    if not is_int(v) or v < 1 or v > MAX_GRID_POINTS:
        raise InvalidValue(f'expected "auto" or a positive integer of at most {MAX_GRID_POINTS:,}, got {spec_value(v)}')
    return v


def spec_field(default: Any, check: Callable[[Any], Any], doc: str, required: bool = False):
    """A dataclass field carrying its validator and a one-line description (docs/sweeps.md)."""
    return field(default=default, metadata={"check": check, "doc": doc, "required": required})


def resample_count(v: Any) -> int:
    # a CI is the spread of the resamples: one resample (or none) gives no CI, and a loop
    # waiting for a CI that never comes would spend its whole budget
    if not is_int(v) or not 2 <= v <= MAX_RESAMPLES:
        raise InvalidValue(f"expected an integer from 2 to {MAX_RESAMPLES:,} (the CIs are the spread of the resamples; "
                   f"default 200), got {spec_value(v)}")
    return v


def budget_fraction(v: Any) -> float:
    if not is_number(v) or not 0 < v <= 1:
        raise InvalidValue(f"expected a fraction of the full grid's cost in (0, 1], got {spec_value(v)}")
    return float(v)


def law_name(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise InvalidValue(f"expected a name, got {spec_value(v)}")
    return v
