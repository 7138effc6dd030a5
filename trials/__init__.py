"""The numerics: the 2LP ResNet, its Mean ODE reference and the error metrics.

Depends on torch and numpy only: no Ray, no Parquet, no CLI. A trial is a pure function from a
validated config (and its reference) to metric rows; it runs the same on CPU and CUDA.

Every public name is imported on first use (PEP 562): the configurations, their ``ConfigError``
and the closed sets (``PRESETS``, ``DTYPES`` ...) come from ``config``, which imports no torch,
so that validating a spec costs no torch import; the engine's names (``train_trial``,
``compute_reference`` ...) import torch when first asked for.
"""
import importlib

# name -> the module of this package that defines it.
_LAZY = {
    "ACTIVATION_NAMES": "config",
    "BLOCKS": "config",
    "ConfigError": "config",
    "DATA_KINDS": "config",
    "DEVICES": "config",
    "DTYPES": "config",
    "PRESETS": "config",
    "LR_SCALINGS": "config",
    "OPTIMIZERS": "optimizers",
    "REFERENCE_KINDS": "config",
    "ProblemConfig": "config",
    "ReferenceConfig": "config",
    "LimitReferenceConfig": "config",
    "TrialConfig": "config",
    "UNIT_BLOCK": "config",
    "METRICS_BLOCK": "config",
    "resolve_device": "config",
    "stable_hash": "config",
    "FLAGS": "train",
    "train_trial": "train",
    "train_fused": "train",
    "release_spares": "train",
    "METRICS": "metrics",
    "Reference": "reference",
    "ReferenceDiverged": "reference",
    "compute_reference": "reference",
    "largest_reference_key": "config",
    "largest_reference_config": "config",
    "LARGEST_REFERENCE_SEED": "config",
    "reference_from_trial": "reference",
    "JointLimitConfig": "config",
    "compute_joint_limit": "joint_limit",
    "NoReferenceConfig": "no_reference",
    "empty_reference": "no_reference",
}

__all__ = sorted(_LAZY, key=lambda name: (name[0].islower(), name))


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'trials' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
