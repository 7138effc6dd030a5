"""The explorer's environment variables, each parsed with its bounds or refused in one line.

A value outside its range is an error naming the variable, never a silent fallback to the
default (``EXPLORER_TORCH_THREADS=-1`` used to be ignored) nor a traceback or a hang
(``EXPLORER_LEASE_TTL_S=inf`` broke the lease thread; ``1e-6`` made it spin). Every command
checks them all when it starts (``check_environment``), so a typo is reported before any work.
The store's own variables (``EXPLORER_S3_*``, ``EXPLORER_STORE_DEADLINE_S``) are parsed the same way by ``store.files``.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..errors import UsageError


class SettingError(UsageError):
    """An environment variable outside its documented range."""


@dataclass(frozen=True)
class Setting:
    default: float | int | None  # None: unset means "decide at run time"
    integer: bool
    low: float
    high: float
    meaning: str


SETTINGS = {
    "EXPLORER_TORCH_THREADS": Setting(None, True, 1, 1024,
                                      "torch threads per worker (default: the CPUs Ray gave the worker)"),
    "EXPLORER_LEASE_TTL_S": Setting(None, False, 1.0, 86_400.0,
                                    "seconds a driver's claim on its trials lives without renewal "
                                    "(default: the store's heartbeat lifetime, store.heartbeat.DEFAULT_TTL_S)"),
}


def setting(name: str) -> float | int | None:
    """The value of one of ``SETTINGS`` from the environment, or its default when unset or empty.

    Raises:
        SettingError: not a number of the right kind, not finite, or outside [low, high].
    """
    spec = SETTINGS[name]
    text = os.environ.get(name, "").strip()
    if not text:
        return spec.default
    try:
        value = int(text) if spec.integer else float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or not spec.low <= value <= spec.high:
        kind = "an integer" if spec.integer else "a number"
        default = "" if spec.default is None else f"; default {spec.default:g}"
        raise SettingError(f"environment variable {name}={text[:40]!r}: expected {kind} from {spec.low:g} to "
                           f"{spec.high:g} ({spec.meaning}{default})")
    return value


def check_environment() -> None:
    """Parse every one of ``SETTINGS`` (raises the first ``SettingError``)."""
    for name in SETTINGS:
        setting(name)
