"""The user-facing package: specs, sweeps on Ray Tune, fits, charts, reports and the CLI.

Every public name is imported on first use, so that ``import explorer`` stays light (no torch,
no Ray, no scipy, no Altair until a function that needs them is called).
"""
from .signals import hold_startup_signals

hold_startup_signals()  # the explorer command only: a Ctrl-C from here on is one line, exit 130 (signals.hold)

import importlib  # noqa: E402

__version__ = "0.1.0"

# name -> the module (of this package) that defines it under the same name.
_LAZY = {
    "load_spec": "config.spec",  # the same function as explorer.config.spec.load_spec
    "sweep": "api",
    "sweep_status": "api",
    "adaptive_sweep": "api",
    "design": "api",
    "compare": "api",
    "fit": "api",
    "grid_errors": "analysis.data",
    "fit_sweep": "analysis.fitting",
    "phase_diagram": "analysis.phase",
    "shape_advice": "analysis.shapes",
    "build_report": "report.page",
    "write_report": "report.page",
}
__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")
