"""Shared fixtures: every numerics test runs on the CPU and, when one is present, on CUDA."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from trials.model import ResNet

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")),
]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param


def seed_weights(net: ResNet, r: int):
    """One repetition's units as numpy lists of (D, M) arrays, plus the problem, for tests/naive.py."""
    to_np = lambda t: t.detach().to(torch.float64).cpu().numpy().copy()  # a copy: the engine trains in place
    U = [to_np(net.units.u[l, r]) for l in range(net.config.L)]
    V = [to_np(net.units.v[l, r]) for l in range(net.config.L)]
    p = net.problem
    # naive.py is feature-major (columns are samples), the engine sample-major
    return to_np(p.x).T.copy(), to_np(p.y).T.copy(), to_np(p.embed), to_np(p.readout), U, V


def rms(x) -> float:
    return float(np.sqrt(np.mean(np.square(x))))
