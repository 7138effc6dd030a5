"""The user-facing package: specs, sweeps on Ray Tune, fits, charts, reports and the CLI."""
__version__ = "0.1.0"
__all__ = ["__version__"]

# Sweeps (explorer.api), imported on first use so that `import explorer` stays light (no torch, no Ray).
_LAZY_API = {"sweep": "sweep", "sweep_status": "sweep_status", "load_spec": "load"}
__all__ += list(_LAZY_API)


def __getattr__(name):
    if name in _LAZY_API:
        from . import api

        return getattr(api, _LAZY_API[name])
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")


# Analysis (explorer.fit, phase, shapes, report), also imported on first use (scipy, Altair).
_LAZY_ANALYSIS = {"grid_errors": "fit", "fit_sweep": "fit", "phase_diagram": "phase",
                  "shape_advice": "shapes", "build_report": "report", "write_report": "report"}
__all__ += list(_LAZY_ANALYSIS)
_sweep_getattr = __getattr__


def __getattr__(name):  # noqa: F811 - extends the lazy loader above
    if name in _LAZY_ANALYSIS:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY_ANALYSIS[name]}", __name__), name)
    return _sweep_getattr(name)
