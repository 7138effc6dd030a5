"""The standard preset and the two learning-rate scalings (docs/model.md sections 1-2), each
against an independent computation: torch autograd on the effective weights W1 = u / D and
W2 = c v for raw SGD, autograd on u and v for the mean-field step, and the initial weights'
measured variances for the standard parametrization's fan-in initialisation."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from trials import ConfigError, JointLimitConfig, ProblemConfig, ReferenceConfig, TrialConfig
from trials.model import ResNet

PRESETS = [("mlu", 1.0), ("lazy", 4.0), ("completep", 1.0), ("depth_mup", 1.0), ("standard", 1.0)]


def autograd_step(net: ResNet, r: int, lr_scaling: str) -> tuple[np.ndarray, np.ndarray]:
    """Repetition r's units after one SGD step computed by torch autograd from the model's
    definition alone: the forward pass written with the effective weights, the loss as the mean
    squared error, and the step either plain SGD on W1 = u / D, W2 = c v (raw) or the mean-field
    step lr D / (2 c^2 L M) on u and v. Returns (u, v) as (L, D, M) float64 arrays."""
    cfg, p = net.config, net.problem
    D, L, M, c = cfg.D, cfg.L, cfg.M, net.scale
    u = net.units.u[:, r].detach().clone().double()
    v = net.units.v[:, r].detach().clone().double()
    act = {"tanh": torch.tanh, "identity": lambda t: t}[cfg.activation]
    if lr_scaling == "raw":
        params = [(u / D).requires_grad_(), (c * v).requires_grad_()]
        w1, w2 = params
    else:
        params = [u.requires_grad_(), v.requires_grad_()]
        w1, w2 = params[0] / D, c * params[1]
    h = p.x.double() @ p.embed.double().T  # (N, D)
    for layer in range(L):
        h = h + act(h @ w1[layer]) @ w2[layer].T
    f = h @ p.readout.double() / D
    loss = ((f - p.y.double()) ** 2).mean()
    grads = torch.autograd.grad(loss, params)
    if lr_scaling == "raw":
        new_w1, new_w2 = (w - cfg.lr * g for w, g in zip(params, grads))
        return (new_w1 * D).detach().numpy(), (new_w2 / c).detach().numpy()
    step = cfg.lr * D / (2 * c * c * L * M)
    return tuple((w - step * g).detach().numpy() for w, g in zip(params, grads))


@pytest.mark.parametrize("lr_scaling", ["raw", "mean_field"])
@pytest.mark.parametrize("preset,alpha", PRESETS)
def test_one_step_equals_autograd_sgd(preset, alpha, lr_scaling):
    cfg = TrialConfig(L=6, M=5, D=4, preset=preset, alpha=alpha, lr=0.3, lr_scaling=lr_scaling, seeds=(2, 7),
                      device="cpu")
    net = ResNet(cfg)
    before = net.units.clone()
    expected = [autograd_step(net, r, lr_scaling) for r in range(2)]
    net.step(net.forward())
    for r, (u, v) in enumerate(expected):
        moved = np.abs(u - before.u[:, r].numpy()).max()
        assert moved > 1e-6  # the step did something measurable
        np.testing.assert_allclose(net.units.u[:, r].numpy(), u, rtol=1e-11, atol=1e-12 * np.abs(u).max())
        np.testing.assert_allclose(net.units.v[:, r].numpy(), v, rtol=1e-11, atol=1e-12 * np.abs(v).max())


def test_raw_steps_are_plain_sgd_on_the_effective_weights_in_closed_form():
    """raw: U <- U - lr D^2 dl/dU and V <- V - (lr / c^2) dl/dV (W1 = U / D, W2 = c V)."""
    cfg = TrialConfig(L=3, M=4, D=6, preset="standard", lr=0.2, lr_scaling="raw", device="cpu")
    net = ResNet(cfg)
    c = cfg.residual_scale
    a_u, a_v = net.step_sizes()
    assert a_u == pytest.approx(cfg.lr * cfg.D**2) and a_v == pytest.approx(cfg.lr / c**2)
    mean_field = ResNet(cfg.replace(lr_scaling="mean_field"))
    assert mean_field.step_sizes() == pytest.approx((mean_field.step_size(), mean_field.step_size()))


def test_standard_preset_initialises_both_layers_at_fan_in():
    """W1 = u / D has entries of variance 1 / D (fan-in D) and W2 = c v of variance 1 / M (fan-in
    M), measured on the drawn units; the residual scale has no depth factor."""
    L, M, D = 4, 256, 64
    cfg = TrialConfig(L=L, M=M, D=D, preset="standard", device="cpu")
    net = ResNet(cfg)
    w1 = net.units.u[:, 0] / D
    w2 = net.scale * net.units.v[:, 0]
    n = w1.numel()  # the sample variance's relative standard error is sqrt(2 / n) = 0.6 %
    assert float(w1.var()) * D == pytest.approx(1.0, abs=5 * (2 / n) ** 0.5)
    assert float(w2.var()) * M == pytest.approx(1.0, abs=5 * (2 / n) ** 0.5)
    assert cfg.replace(L=64).residual_scale == cfg.residual_scale  # no depth factor
    # the preactivations of the first block have the variance of its input's coordinates (fan-in)
    fwd = net.forward()
    h0, p1 = fwd.hidden[0, 0], fwd.preact[0, 0]
    assert float(p1.var()) == pytest.approx(float(h0.square().mean()), rel=0.1)


def test_default_scaling_keeps_the_trial_keys():
    """mean_field is left out of the key at its default: keys computed before lr_scaling existed hold."""
    assert TrialConfig(L=4, M=4, D=8, seeds=(0, 1)).key() == "cfee6f1df54a468c"
    old = TrialConfig(L=16, M=8, D=8, preset="completep", alpha=2.0, lr=0.5, problem=ProblemConfig(seed=3))
    assert old.key() == "d26fec45e58aa3a7"
    assert old.replace(lr_scaling="mean_field").key() == old.key()
    assert old.replace(lr_scaling="raw").key() != old.key()
    assert TrialConfig(L=4, M=4, D=8, preset="standard").key() != TrialConfig(L=4, M=4, D=8).key()


@pytest.mark.parametrize("changes,field,needle", [
    ({"preset": "standard"}, "preset", "preset 'standard' has no depth limit"),
    ({"preset": "depth_mup"}, "preset", "preset 'depth_mup' has no Mean ODE limit"),
    ({"lr_scaling": "raw"}, "lr_scaling", "lr_scaling 'raw'"),
    ({"preset": "completep", "lr_scaling": "raw"}, "lr_scaling", "lr_scaling 'raw'"),
])
def test_no_limit_means_no_mean_ode_reference(changes, field, needle):
    cfg = TrialConfig(L=4, M=4, D=8, **changes)
    assert cfg.limit_alpha is None
    with pytest.raises(ConfigError, match=needle) as info:
        ReferenceConfig(cfg)
    assert info.value.field == field and "'largest'" in str(info.value)


def test_raw_scaling_has_no_joint_limit():
    with pytest.raises(ConfigError, match="lr_scaling 'raw'") as info:
        JointLimitConfig(TrialConfig(L=4, M=4, D=8, activation="identity", lr_scaling="raw"))
    assert info.value.field == "lr_scaling"


def test_unknown_lr_scaling_is_refused_with_the_field_named():
    with pytest.raises(ConfigError, match="unknown lr_scaling 'sgd'; expected one of: mean_field, raw") as info:
        TrialConfig(L=4, M=4, D=8, lr_scaling="sgd")
    assert info.value.field == "lr_scaling"
