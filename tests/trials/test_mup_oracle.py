"""The mup library (Yang et al., muP; PyPI mup 1.0.0) as the oracle of the per-layer Adam rule of
mlu + adam + lr_scaling = "mean_field" (docs/model.md section 2b).

A torch module of the same network is built with mup's conventions: base width M = 16 and
``set_base_shapes``; W1 = u / D an ``nn.Linear`` (fan-in D finite, fan-out M: vector-like, lr
unscaled by ``MuAdam``); W2 a ``MuReadout`` (fan-in M: its output multiplied by
output_mult / width_mult, width_mult = M / 16). With one base lr and one output_mult for every
width, ``MuAdam``'s trajectory equals the engine's at M = 64 and 256 for 10 steps, which is the
claim that the engine's rule is muP's in width. The mapping (docs/model.md section 2b): base lr =
lr / (alpha D), output_mult = alpha D / (16 L), the readout's weight W' = (width_mult /
output_mult) c v; mup keeps Adam's eps fixed, the engine scales it (eps_W1 = 2 c eps, eps_W2 =
2 eps / D): the test passes those per parameter group, as a user of mup would."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from trials import ProblemConfig, TrialConfig
from trials.model import ResNet

mup = pytest.importorskip("mup", reason="mup 1.0.0 is a test dependency: pip install --no-deps mup==1.0.0")

BASE_M = 16
L, D, ALPHA, LR, EPS, STEPS = 3, 4, 1.0, 0.05, 1e-8, 10


class MupNet(torch.nn.Module):
    """The engine's network in mup's terms: h <- h + MuReadout(tanh(W1 h)), f = W_U^T h / D."""

    def __init__(self, M: int, output_mult: float):
        super().__init__()
        self.w1 = torch.nn.ModuleList(torch.nn.Linear(D, M, bias=False, dtype=torch.float64) for _ in range(L))
        self.w2 = torch.nn.ModuleList(mup.MuReadout(M, D, bias=False, output_mult=output_mult, dtype=torch.float64)
                                      for _ in range(L))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for w1, w2 in zip(self.w1, self.w2):
            h = h + w2(torch.tanh(w1(h)))
        return h


def engine_losses(M: int) -> tuple[list[float], ResNet]:
    cfg = TrialConfig(L=L, M=M, D=D, alpha=ALPHA, lr=LR, steps=STEPS, seeds=(0,), device="cpu", optimizer="adam",
                      eps=EPS, problem=ProblemConfig(samples=8))
    start = ResNet(cfg)
    net = ResNet(cfg)
    return [float(net.loss(fwd.out)[0]) for _, fwd in net.trajectory()], start


def mup_losses(start: ResNet) -> list[float]:
    cfg, p = start.config, start.problem
    M, c = cfg.M, start.scale
    output_mult = ALPHA * D / (BASE_M * L)
    base_lr = LR / (ALPHA * D)
    model = MupNet(M, output_mult)
    mup.set_base_shapes(model, MupNet(BASE_M, output_mult), rescale_params=False)
    width_mult = model.w2[0].width_mult()
    assert width_mult == M / BASE_M and not model.w1[0].weight.infshape.ninf() == 2  # vector-like: lr unscaled
    with torch.no_grad():
        for layer in range(L):
            model.w1[layer].weight.copy_(start.units.u[layer, 0].T / D)
            model.w2[layer].weight.copy_(start.units.v[layer, 0] * c * width_mult / output_mult)
    groups = [{"params": list(model.w1.parameters()), "eps": 2 * c * EPS},
              {"params": list(model.w2.parameters()), "eps": 2 * EPS / D * output_mult / width_mult}]
    opt = mup.MuAdam(groups, lr=base_lr)
    x, y = p.x.double() @ p.embed.double().T, p.y.double()
    losses = []
    for k in range(STEPS + 1):
        f = model(x) @ p.readout.double() / D
        loss = ((f - y) ** 2).mean()
        losses.append(float(loss.detach()))
        if k < STEPS:
            opt.zero_grad()
            loss.backward()
            opt.step()
    return losses


@pytest.mark.parametrize("M", [64, 256])
def test_mup_reproduces_the_mean_field_adam_trajectory(M):
    ours, start = engine_losses(M)
    theirs = mup_losses(start)
    assert ours[-1] < 0.9 * ours[0]  # it trained
    np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-8)


def test_the_rule_is_not_the_raw_one():
    """The oracle discriminates: the raw rule (one lr on W1, W2) leaves mup's trajectory at M = 256."""
    ours, start = engine_losses(256)
    raw = TrialConfig(L=L, M=256, D=D, alpha=ALPHA, lr=LR / (ALPHA * D), steps=STEPS, seeds=(0,), device="cpu",
                      optimizer="adam", lr_scaling="raw", problem=ProblemConfig(samples=8))
    net = ResNet(raw)
    raw_losses = [float(net.loss(fwd.out)[0]) for _, fwd in net.trajectory()]
    assert np.abs(np.array(raw_losses) - np.array(mup_losses(start))).max() > 1e-4
