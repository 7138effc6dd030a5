"""The numerics: the 2LP ResNet, its Mean ODE reference and the error metrics.

Depends on torch and numpy only: no Ray, no Parquet, no CLI. A trial is a pure function from a
validated config (and its reference) to metric rows; it runs the same on CPU and CUDA.
"""
from .config import PRESETS, ConfigError, ProblemConfig, ReferenceConfig, TrialConfig
from .metrics import METRICS
from .reference import Reference, ReferenceDiverged, compute_reference, reference_from_trial
from .train import FLAGS, train_trial

__all__ = [
    "ConfigError",
    "FLAGS",
    "METRICS",
    "PRESETS",
    "ProblemConfig",
    "Reference",
    "ReferenceConfig",
    "ReferenceDiverged",
    "TrialConfig",
    "compute_reference",
    "reference_from_trial",
    "train_trial",
]
