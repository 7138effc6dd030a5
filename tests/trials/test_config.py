"""Configurations refuse bad values with one clear message naming the field."""
from __future__ import annotations

import pytest

from trials import PRESETS, ConfigError, ProblemConfig, ReferenceConfig, TrialConfig


@pytest.mark.parametrize("changes,message", [
    ({"L": 0}, "L must be a positive integer, got 0"),
    ({"M": 2.5}, "M must be a positive integer, got 2.5"),
    ({"D": True}, "D must be a positive integer"),
    ({"activation": "sigmoid"}, "unknown activation 'sigmoid'; expected one of: tanh, identity, gelu, relu"),
    ({"preset": "mup"}, "unknown preset 'mup'; expected one of: " + ", ".join(PRESETS)),
    ({"dtype": "float16"}, "unknown dtype 'float16'; expected one of: float32, float64"),
    ({"device": "tpu"}, "unknown device 'tpu'"),
    ({"alpha": -1.0}, "alpha must be a positive finite number, got -1.0"),
    ({"lr": float("nan")}, "lr must be a positive finite number"),
    ({"steps": -1}, "steps must be a non-negative integer, got -1"),
    ({"seeds": ()}, "seeds must be a non-empty list"),
    ({"seeds": (1, 1)}, "seeds must be distinct"),
    ({"antithetic": True, "M": 3}, "M must be even, got M=3"),
    ({"preset": "lazy", "alpha": 1.0}, "preset 'lazy' needs alpha > 1"),
    ({"D": 16, "problem": ProblemConfig(coupled_dim=8)}, "coupled_dim=8 is smaller than D=16"),
])
def test_bad_trial_values_are_refused_with_the_field_named(changes, message):
    fields = dict(L=4, M=4, D=8)
    fields.update(changes)
    with pytest.raises(ValueError) as info:
        TrialConfig(**fields)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("changes,message", [
    ({"samples": 0}, "problem.samples must be a positive integer"),
    ({"seed": -2}, "problem.seed must be a non-negative integer"),
])
def test_bad_problem_values_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        ProblemConfig(**changes)


@pytest.mark.parametrize("changes,message", [
    ({"replicas": 1}, "replicas must be at least 2"),
    ({"width": 7}, "width must be even"),
    ({"depth": 9}, "depth must be even"),
])
def test_bad_reference_values_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        ReferenceConfig(limit=TrialConfig(L=2, M=2, D=4), **changes)


def test_cuda_without_a_gpu_is_a_clear_error():
    import torch

    from trials.config import resolve_device

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(ValueError, match="no CUDA device is available"):
        resolve_device("cuda")


def test_trial_key_is_stable_and_sensitive():
    a = TrialConfig(L=4, M=4, D=8, seeds=(0, 1))
    assert a.key() == TrialConfig(L=4, M=4, D=8, seeds=[0, 1]).key()
    assert a.key() == a.replace(device="cpu").key()  # where it runs does not change the numbers' identity
    assert len({a.key(), a.replace(L=8).key(), a.replace(seeds=(0, 2)).key(), a.replace(alpha=2.0).key()}) == 4


@pytest.mark.parametrize("preset,expected", [
    ("mlu", 2.0 / (8 * 4)), ("completep", 2.0 / (8 * 4**0.5 * 16**0.5)), ("depth_mup", 2.0 / (8 * 4 * 16) ** 0.5),
])
def test_residual_scale_of_each_preset(preset, expected):
    assert TrialConfig(L=8, M=4, D=16, alpha=2.0, preset=preset).residual_scale == pytest.approx(expected)


@pytest.mark.parametrize("build, field", [
    (lambda: TrialConfig(L=0, M=4, D=8), "L"),
    (lambda: TrialConfig(L=4, M=3, D=8, antithetic=True), "M"),
    (lambda: TrialConfig(L=4, M=4, D=8, steps=-1), "steps"),
    (lambda: TrialConfig(L=4, M=4, D=8, seeds=(1, 1)), "seeds"),
    (lambda: TrialConfig(L=4, M=4, D=8, preset="lazy", alpha=1.0), "alpha"),
    (lambda: TrialConfig(L=4, M=4, D=8, activation="sin"), "activation"),
    (lambda: ProblemConfig(seed=-1), "problem.seed"),
    (lambda: TrialConfig(L=4, M=4, D=8, problem=ProblemConfig(coupled_dim=4)), "problem.coupled_dim"),
    (lambda: ReferenceConfig(TrialConfig(L=4, M=4, D=8), width=3), "reference.width"),
    (lambda: ReferenceConfig(TrialConfig(L=4, M=4, D=8), depth=3), "reference.depth"),
])
def test_config_error_names_the_field(build, field):
    with pytest.raises(ConfigError) as caught:
        build()
    assert caught.value.field == field
    assert isinstance(caught.value, ValueError)
