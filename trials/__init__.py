"""The numerics: the 2LP ResNet, its Mean ODE reference and the error metrics.

Depends on torch and numpy only: no Ray, no Parquet, no CLI. A trial is a pure function from a
validated config (and its reference) to metric rows; it runs the same on CPU and CUDA.
"""
from .config import (ACTIVATION_NAMES, BLOCKS, DEVICES, DTYPES, PRESETS, ConfigError, ProblemConfig, ReferenceConfig,
                     TrialConfig, resolve_device, stable_hash)
from .metrics import METRICS
from .reference import (REFERENCE_KINDS, Reference, ReferenceDiverged, compute_reference, largest_reference_key,
                        reference_from_trial)
from .train import FLAGS, train_trial
from .data import DATA_KINDS
from .joint_limit import JointLimitConfig, compute_joint_limit

__all__ = [
    "ACTIVATION_NAMES",
    "BLOCKS",
    "ConfigError",
    "DATA_KINDS",
    "DEVICES",
    "DTYPES",
    "FLAGS",
    "JointLimitConfig",
    "METRICS",
    "PRESETS",
    "REFERENCE_KINDS",
    "ProblemConfig",
    "Reference",
    "ReferenceConfig",
    "ReferenceDiverged",
    "TrialConfig",
    "compute_joint_limit",
    "compute_reference",
    "largest_reference_key",
    "reference_from_trial",
    "resolve_device",
    "stable_hash",
    "train_trial",
]
