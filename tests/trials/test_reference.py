"""The Mean ODE reference: its key, its own error estimate, and its record."""
from __future__ import annotations

import json

import numpy as np
import pytest

import torch

from trials import ProblemConfig, Reference, ReferenceConfig, TrialConfig, compute_reference, reference_from_trial, train_trial
from trials.model import ResNet

BASE = TrialConfig(L=4, M=2, D=8, steps=6, seeds=(0,), device="cpu")


def _key(**changes) -> str:
    return ReferenceConfig(limit=BASE.replace(**changes), depth=64, width=32).key()


def test_reference_key_ignores_trial_shape_and_seeds():
    base = _key()
    for changes in ({"L": 64}, {"M": 16}, {"seeds": (5, 6, 7)}, {"antithetic": True}, {"device": "auto"}):
        assert _key(**changes) == base, changes


@pytest.mark.parametrize("changes", [
    {"D": 16}, {"alpha": 2.0}, {"lr": 0.5}, {"steps": 7}, {"activation": "gelu"},
    {"problem": ProblemConfig(seed=2)}, {"problem": ProblemConfig(samples=12)}, {"sigma_u": 0.5},
    {"dtype": "float32"},
])
def test_reference_key_changes_with_what_the_limit_depends_on(changes):
    assert _key(**changes) != _key()


def test_reference_key_changes_with_its_resolution():
    keys = {ReferenceConfig(limit=BASE, depth=d, width=w, replicas=r).key() for d, w, r in [(64, 32, 2), (128, 32, 2), (64, 64, 2), (64, 32, 3)]}
    assert len(keys) == 4


@pytest.mark.slow
def test_two_references_agree_within_their_error_estimates():
    refs = [compute_reference(ReferenceConfig(limit=BASE, depth=256, width=128, replicas=2, seed=s, device="cpu"))
            for s in (100, 200)]
    a, b = refs
    gap = np.sqrt(((a.arrays["out"] - b.arrays["out"]) ** 2).reshape(BASE.steps + 1, -1).mean(axis=1))
    bound = 3 * np.hypot(a.arrays["err_out"], b.arrays["err_out"])
    assert np.all(gap[1:] <= bound[1:]), (gap, bound)
    # the estimate is not vacuous: it is within a factor ~10 of the observed gap once training moved
    assert np.all(bound[-1] < 30 * gap[-1])
    assert gap[0] < 1e-12  # antithetic particles: both references start exactly at the identity map


def test_reference_record_is_plain_arrays_and_json():
    ref = compute_reference(ReferenceConfig(limit=BASE, depth=16, width=8, device="cpu"))
    arrays, meta = ref.to_record()
    json.dumps(meta)
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float64 for v in arrays.values())
    assert arrays["out"].shape == (BASE.steps + 1, BASE.problem.samples, BASE.problem.d_out)
    assert arrays["hidden"].shape == (BASE.steps + 1, BASE.problem.samples, BASE.D)
    back = Reference.from_record(arrays, meta)
    assert back.key == ref.key and back.kind == "mean_ode"
    for name, value in ref.arrays.items():
        assert np.array_equal(back.arrays[name], value)


def test_largest_reference_is_the_seed_mean_of_that_grid_point():
    largest = BASE.replace(L=8, M=8, D=8, seeds=(0, 1, 2))
    ref = reference_from_trial(largest)
    assert ref.kind == "largest"
    rows = train_trial(largest, ref)
    last = np.array([[r["err_out"] for r in rows if r["seed"] == s][-1] for s in largest.seeds])
    # each seed's distance to the mean of the three, and the mean's standard error, agree
    assert np.sqrt(np.mean(last**2)) == pytest.approx(ref.arrays["err_out"][-1] * np.sqrt(2), rel=1e-9)


def test_coupled_embeddings_share_their_first_rows_across_D():
    coupled = ProblemConfig(coupled_dim=8)
    small, big = (ResNet(BASE.replace(D=d, M=2, problem=coupled)).problem for d in (4, 8))
    assert torch.equal(small.embed, big.embed[:4]) and torch.equal(small.readout, big.readout[:4])
    largest = BASE.replace(L=8, M=8, D=8, seeds=(0, 1), antithetic=True, problem=coupled)
    rows = train_trial(BASE.replace(D=4, antithetic=True, problem=coupled), reference_from_trial(largest))
    assert rows[0]["err_hidden"] < 1e-12  # both start at h_0 = W_E x on the 4 shared coordinates
    assert rows[-1]["err_hidden"] > 1e-3
