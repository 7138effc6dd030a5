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


# Recorded from the engine before the optimizers existed (commit 094d47f), as float.hex: the
# default optimizer's rows must stay these bit for bit (columns loss, err_out, feature_update,
# lin_ratio, weight_change, output_change, err_hidden; rows in (seed, step) order).
BEFORE_OPTIMIZERS = {
    "mlu/mean_field": ["0a09ae3b28fcf0d2",
        ["0x1.8137e7042744fp+1", "0x1.cf6ea35d3142bp-2", "0x0.0p+0", "0x0.0p+0", "0x0.0p+0", "0x0.0p+0", "0x1.273a93fcc77adp-2"],
        ["0x1.5abe7d32738d2p+1", "0x1.acd944fd60560p-2", "0x1.04cf11f628f2fp-4", "0x1.48ecf61126e46p-5", "0x1.9af3717a5a33ap-5", "0x1.0a2d8ebd57e58p-3", "0x1.1ba2cc914b387p-2"],
        ["0x1.3e79f9ea4c0b6p+1", "0x1.958ba1750bfd7p-2", "0x1.cd99847f70730p-4", "0x1.57f624efcec95p-4", "0x1.7b70d6c90b6c8p-4", "0x1.d9d0ab50f9d49p-3", "0x1.137e8f409a49cp-2"],
        ["0x1.28800cc95a559p+1", "0x1.84221e826f5bcp-2", "0x1.34c89e1aeacebp-3", "0x1.e921213363da1p-4", "0x1.091c76a9b6e0dp-3", "0x1.414b6e87ada88p-2", "0x1.0cad58f2e7ccap-2"],
        ["0x1.346b3f2ab8664p+1", "0x1.7632924672d82p-2", "0x0.0p+0", "0x0.0p+0", "0x0.0p+0", "0x0.0p+0", "0x1.ac6740d78957ep-2"],
        ["0x1.0bd510ece6f88p+1", "0x1.4c39fefbdfaefp-2", "0x1.ec9eb4223c73cp-5", "0x1.f681e864fbb62p-5", "0x1.5ca939d36e44dp-5", "0x1.3984ef649fffep-3", "0x1.8db52d15aa01ap-2"],
        ["0x1.d55b327cf7b0ap+0", "0x1.39ccd694f75f5p-2", "0x1.de51d6dfe2227p-4", "0x1.58b02f6fac234p-4", "0x1.4d8c07fe5431ep-4", "0x1.3071775ec6d87p-2", "0x1.7778a36a4febfp-2"],
        ["0x1.aa55bf6081c64p+0", "0x1.39ce41429191fp-2", "0x1.4aadc7588ed63p-3", "0x1.dee22480fe9f2p-4", "0x1.cf9e10efcf971p-4", "0x1.9ffbd5b6d4848p-2", "0x1.69f674c52452cp-2"],
    ],
    "standard/raw": ["ca718a730d296322",
        ["0x1.3e1920cabf184p+2", "0x1.a6937435b5891p+0", "0x0.0p+0", "0x0.0p+0", "0x0.0p+0", "0x0.0p+0", "0x1.f7f38e899563cp-1"],
        ["0x1.45ca32fe3b683p+1", "0x1.f9f1af676f6c5p-1", "0x1.19b5c9345bbd0p-3", "0x1.3f76f23f3226bp-3", "0x1.40f5928023d9cp-3", "0x1.568f3a9e6cb3cp+0", "0x1.7f513f6a3a166p-1"],
        ["0x1.b6cc0a5d40e9bp+0", "0x1.6431e2c03bcbep-1", "0x1.32a54f0de710ep-3", "0x1.1889903599cccp-3", "0x1.7b23c7d087d41p-3", "0x1.57d9dcec43265p+0", "0x1.0f084686891d0p-1"],
        ["0x1.67550af0c124dp+0", "0x1.1f23f1d3cc3fbp-1", "0x1.50f9df110dadfp-3", "0x1.4ea7e494b8615p-3", "0x1.c054a04c213d9p-3", "0x1.76173902cc1dap+0", "0x1.d6d30593758efp-2"],
        ["0x1.0f7f105ac277cp+1", "0x1.41b1fb245e2d6p+0", "0x0.0p+0", "0x0.0p+0", "0x0.0p+0", "0x0.0p+0", "0x1.466d2673f1792p+0"],
        ["0x1.4e5e6004254afp+0", "0x1.66238a5679745p-1", "0x1.6e060b044b342p-5", "0x1.24908a3601e2fp-5", "0x1.f0c822d67677ep-5", "0x1.095df197af44ep-1", "0x1.13820bd27aaf4p+0"],
        ["0x1.11f4c274089abp+0", "0x1.1b7fdd2034b5fp-1", "0x1.193266c7a4634p-4", "0x1.e3d1ddb64be8dp-5", "0x1.69e8d4281142dp-4", "0x1.665ea8fa65738p-1", "0x1.dc83b330976a8p-1"],
        ["0x1.ec70a41d608a4p-1", "0x1.af6fd59201e2fp-2", "0x1.51a7dbc3cf154p-4", "0x1.16cf755984aa1p-4", "0x1.b4ab11e9f44c4p-4", "0x1.b20b2b4ad422fp-1", "0x1.c6d3a5c29c5b8p-1"],
    ],
}


# The hex values are torch 2.13.0's CPU build's: another build's kernels differ in the last bits
# (torch 2.11.0+cu130 on a 16-core machine gave other bits for both, 2026-12-04), which says
# nothing about the optimizers.
@pytest.mark.skipif(not torch.__version__.startswith("2.13.0"), reason="values recorded with torch 2.13.0's CPU build")
@pytest.mark.parametrize("preset,scaling", [("mlu", "mean_field"), ("standard", "raw")])
def test_gradient_descent_rows_are_bit_identical_to_before_the_optimizers(preset, scaling):
    cfg = TrialConfig(L=3, M=6, D=4, preset=preset, lr_scaling=scaling, lr=0.1, steps=3, seeds=(0, 1), device="cpu",
                      problem=ProblemConfig(samples=5))
    rows = train_trial(cfg, reference_from_trial(cfg.replace(seeds=(7,))))
    keep = ("loss", "err_out", "feature_update", "lin_ratio", "weight_change", "output_change", "err_hidden")
    key, *expected = BEFORE_OPTIMIZERS[f"{preset}/{scaling}"]
    assert cfg.key() == key
    assert [[row[k].hex() for k in keep] for row in rows] == expected


def test_a_batched_pack_of_optimizers_gives_each_point_its_rows_alone():
    """gd, momentum and adam points trained side by side on one batch axis (train_fused, batched)
    give the rows each gives alone: each slot its own optimizer, scalars and state."""
    from trials import train_fused

    base = TrialConfig(L=3, M=6, D=4, lr=0.05, steps=3, seeds=(0, 1), device="cpu", problem=ProblemConfig(samples=5))
    configs = [base, base.replace(optimizer="adam", seeds=(2,)), base.replace(optimizer="momentum", lr=0.2),
               base.replace(optimizer="adam", lr_scaling="raw", lr=0.01, weight_decay=0.3)]
    references = [reference_from_trial(c.replace(seeds=(90,))) for c in configs]
    packed = train_fused(configs, references, batched=True)
    for config, reference, rows in zip(configs, references, packed):
        alone = train_trial(config, reference)
        # repr: the Gram rows hold NaN for a lone seed's missing partners, equal only as text
        assert repr([{k: v for k, v in r.items() if k != "wall_s"} for r in rows]) == \
               repr([{k: v for k, v in r.items() if k != "wall_s"} for r in alone])
