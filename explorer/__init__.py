"""The user-facing package: specs, sweeps on Ray Tune, fits, charts, reports and the CLI."""
__version__ = "0.1.0"
__all__ = ["__version__"]
