"""The optimizers (trials/optimizers.py) against torch's own: the engine's hand-derived momentum and
Adam steps equal torch.optim.SGD(momentum) and torch.optim.AdamW stepping the effective weights
W1 = u / D and W2 = c v by autograd (lr_scaling raw, every preset), and the per-layer mean-field
rule (docs/model.md section 2b) equals AdamW with the per-layer lr and eps that section states.
Gradient descent's rows and keys are untouched (the other tests of tests/trials hold them)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from trials import ConfigError, ProblemConfig, ReferenceConfig, TrialConfig, train_trial
from trials.model import ResNet
from trials.reference import reference_from_trial

PRESETS = [("mlu", 1.0), ("lazy", 4.0), ("completep", 1.0), ("depth_mup", 1.0), ("standard", 1.0)]


def torch_trajectory(net: ResNet, r: int, make_optimizer, steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Repetition r's units after each of ``steps`` steps of a torch optimizer on the effective
    weights W1 = u / D, W2 = c v, gradients by autograd from the model's definition alone."""
    cfg, p = net.config, net.problem
    D, L, c = cfg.D, cfg.L, net.scale
    w1 = (net.units.u[:, r].detach().clone().double() / D).requires_grad_()
    w2 = (c * net.units.v[:, r].detach().clone().double()).requires_grad_()
    opt = make_optimizer([w1, w2])
    act = {"tanh": torch.tanh, "identity": lambda t: t}[cfg.activation]
    out = []
    for _ in range(steps):
        h = p.x.double() @ p.embed.double().T
        for layer in range(L):
            h = h + act(h @ w1[layer]) @ w2[layer].T
        f = h @ p.readout.double() / D
        loss = ((f - p.y.double()) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(((w1 * D).detach().numpy().copy(), (w2 / c).detach().numpy().copy()))
    return out


def run_engine(cfg: TrialConfig, steps: int) -> tuple[ResNet, list[tuple[np.ndarray, np.ndarray]]]:
    net = ResNet(cfg)
    start = ResNet(cfg)
    out = []
    for _ in range(steps):
        net.step(net.forward())
        out.append((net.units.u.numpy().copy(), net.units.v.numpy().copy()))
    return start, out


def assert_close(got: np.ndarray, want: np.ndarray, start: np.ndarray) -> None:
    assert np.abs(want - start).max() > 1e-6  # the step did something measurable
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("preset,alpha", PRESETS)
@pytest.mark.parametrize("optimizer", ["momentum", "adam"])
def test_steps_equal_torch_optimizers_on_the_effective_weights(preset, alpha, optimizer):
    cfg = TrialConfig(L=5, M=6, D=4, preset=preset, alpha=alpha, lr=0.01, lr_scaling="raw", seeds=(2, 7),
                      device="cpu", optimizer=optimizer, momentum=0.8, betas=(0.85, 0.99), eps=1e-7,
                      weight_decay=0.5 if optimizer == "adam" else 0.0)
    if optimizer == "momentum":
        def make(params):
            return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum)
    else:
        def make(params):
            return torch.optim.AdamW(params, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay)
    start, engine = run_engine(cfg, 3)
    for r in range(2):
        expected = torch_trajectory(start, r, make, 3)
        for (u, v), (eu, ev) in zip(engine, expected):
            assert_close(u[:, r], eu, start.units.u[:, r].numpy())
            assert_close(v[:, r], ev, start.units.v[:, r].numpy())


@pytest.mark.parametrize("preset,alpha", [("mlu", 1.0), ("completep", 1.0), ("depth_mup", 1.0)])
def test_mean_field_adam_is_adamw_with_the_per_layer_rule(preset, alpha):
    """docs/model.md section 2b: lr_W1 = lr / (c L M D), eps_W1 = 2 c eps; lr_W2 = lr / (L M), eps_W2 = 2 eps / D."""
    cfg = TrialConfig(L=4, M=8, D=4, preset=preset, alpha=alpha, lr=0.05, seeds=(3,), device="cpu",
                      optimizer="adam", eps=1e-6, weight_decay=0.1)
    c, L, M, D = cfg.residual_scale, cfg.L, cfg.M, cfg.D

    def make(params):
        w1, w2 = params
        groups = [{"params": [w1], "lr": cfg.lr / (c * L * M * D), "eps": 2 * c * cfg.eps,
                   "weight_decay": cfg.weight_decay * c * L * M * D},
                  {"params": [w2], "lr": cfg.lr / (L * M), "eps": 2 * cfg.eps / D, "weight_decay": cfg.weight_decay * L * M}]
        return torch.optim.AdamW(groups, betas=cfg.betas)  # decay lr * wd = the config's lr * weight_decay

    start, engine = run_engine(cfg, 3)
    expected = torch_trajectory(start, 0, make, 3)
    for (u, v), (eu, ev) in zip(engine, expected):
        assert_close(u[:, 0], eu, start.units.u[:, 0].numpy())
        assert_close(v[:, 0], ev, start.units.v[:, 0].numpy())


def test_momentum_mean_field_is_gradient_descent_steps_with_a_buffer():
    """momentum at mu = 0 is gradient descent (the same step sizes, the SGD rules)."""
    cfg = TrialConfig(L=3, M=5, D=4, preset="completep", lr=0.3, seeds=(1,), device="cpu")
    _, gd = run_engine(cfg, 2)
    _, mom = run_engine(cfg.replace(optimizer="momentum", momentum=0.0), 2)
    for (u, v), (mu, mv) in zip(gd, mom):
        np.testing.assert_allclose(mu, u, rtol=1e-13, atol=1e-14 * np.abs(u).max())
        np.testing.assert_allclose(mv, v, rtol=1e-13, atol=1e-14 * np.abs(v).max())


def test_default_keys_hold_and_optimizer_fields_key_only_where_they_act():
    base = TrialConfig(L=4, M=4, D=8, seeds=(0, 1))
    assert base.key() == "cfee6f1df54a468c"  # as before the optimizers existed
    assert base.replace(momentum=0.5, betas=(0.1, 0.2), eps=1.0).key() == base.key()  # gd ignores them
    assert base.replace(weight_decay=0.1).key() != base.key()
    adam = base.replace(optimizer="adam")
    assert adam.key() != base.key() and adam.replace(momentum=0.5).key() == adam.key()
    assert adam.replace(eps=1e-6).key() != adam.key()
    assert base.columns()["optimizer"] is None and adam.columns()["optimizer"] == "adam"


@pytest.mark.parametrize("changes,field", [
    ({"optimizer": "adam", "preset": "standard"}, "optimizer"),
    ({"optimizer": "lbfgs"}, "optimizer"),
    ({"momentum": 1.0}, "momentum"),
    ({"betas": (0.9,)}, "betas"),
    ({"eps": -1.0}, "eps"),
    ({"weight_decay": 2.0}, "weight_decay"),
])
def test_bad_optimizer_settings_are_refused_in_one_line(changes, field):
    with pytest.raises(ConfigError) as info:
        TrialConfig(L=2, M=2, D=2, **changes)
    assert info.value.field == field and "\n" not in str(info.value)


def test_adam_has_no_mean_ode_reference():
    with pytest.raises(ConfigError) as info:
        ReferenceConfig(TrialConfig(L=2, M=2, D=2, optimizer="adam"))
    assert info.value.field == "optimizer" and "largest" in str(info.value)


def test_adam_trial_rows_measure_the_units_directly():
    """The unit metrics of a non-gradient-descent trial come from the units themselves: weight_change
    equals the independent ||theta_k - theta_0|| / ||theta_0|| of the engine's own trajectory."""
    cfg = TrialConfig(L=3, M=8, D=4, lr=0.05, steps=3, seeds=(0, 1), device="cpu", optimizer="adam",
                      problem=ProblemConfig(samples=6))
    reference = reference_from_trial(cfg.replace(seeds=(100,)))
    rows = train_trial(cfg, reference)
    net = ResNet(cfg)
    u0, v0 = net.units.u.clone(), net.units.v.clone()
    size0 = (u0.square().sum(dim=(0, 2, 3)) + v0.square().sum(dim=(0, 2, 3))).sqrt()
    for k in range(cfg.steps + 1):
        if k:
            net.step(net.forward())
        moved = ((net.units.u - u0).square().sum(dim=(0, 2, 3)) + (net.units.v - v0).square().sum(dim=(0, 2, 3))).sqrt()
        for r, seed in enumerate(cfg.seeds):
            row = next(row for row in rows if row["seed"] == seed and row["step"] == k)
            assert row["weight_change"] == pytest.approx(float(moved[r] / size0[r]), rel=1e-10, abs=1e-15)
            assert row["optimizer"] == "adam"
