"""The lazy public face of a wing (``explorer/analysis/fitting/`` ...): its names imported on first
use (PEP 562), as ``trials`` exports its own, so that importing a wing costs nothing until a name
of it is used, and code outside the wing reaches its modules only through the names it exports.

    _LAZY = {"fit_sweep": "dispatch", "FitResult": "result"}   # name -> the module defining it
    __all__, __getattr__, __dir__ = lazy_face(__name__, _LAZY)
"""
from __future__ import annotations

import importlib
import sys


def lazy_face(package: str, table: dict[str, str]):
    """``__all__``, ``__getattr__`` and ``__dir__`` of the package ``package``, whose public names
    are the keys of ``table`` (name -> the module of the package that defines it).

    Returns:
        (the names, constants first; the module ``__getattr__``, which imports a name's module on
        first use and keeps the value in the package so later lookups skip it; ``__dir__``).
    """
    names = sorted(table, key=lambda name: (name[0].islower(), name))

    def __getattr__(name: str):
        if name in table:
            value = getattr(importlib.import_module(f".{table[name]}", package), name)
            setattr(sys.modules[package], name, value)  # later lookups skip this function
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return names, __getattr__, __dir__


__all__ = ["lazy_face"]
