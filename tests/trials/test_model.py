"""The engine against independent computations: finite differences and a naive numpy loop."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tests import naive
from tests.trials.conftest import rms, seed_weights
from trials import PRESETS, TrialConfig
from trials.model import ACTIVATIONS, ResNet

SMALL = dict(L=3, M=4, D=5, steps=3)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_gradient_matches_finite_differences(device, activation):
    net = ResNet(TrialConfig(**SMALL, activation=activation, seeds=(7,), device=device))
    x, y, W_E, W_U, U, V = seed_weights(net, 0)
    c = net.scale
    grads = net.backward(net.forward())
    eps = 1e-6
    rng = np.random.default_rng(0)
    for which, params, engine_grad in (("u", U, grads.u), ("v", V, grads.v)):
        for _ in range(6):
            l, i, j = rng.integers(SMALL["L"]), rng.integers(SMALL["D"]), rng.integers(SMALL["M"])
            plus = [p.copy() for p in params]
            minus = [p.copy() for p in params]
            plus[l][i, j] += eps
            minus[l][i, j] -= eps
            args = (plus, V) if which == "u" else (U, plus)
            args_minus = (minus, V) if which == "u" else (U, minus)
            fd = (naive.loss(x, y, W_E, W_U, *args, c, activation) - naive.loss(x, y, W_E, W_U, *args_minus, c, activation)) / (2 * eps)
            got = float(engine_grad[l, 0, i, j].cpu())
            assert got == pytest.approx(fd, rel=1e-5, abs=1e-9), (which, l, i, j)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_step_moves_units_by_step_size_times_gradient(activation):
    """The fused update equals -eta * D / (2 c^2 L M) * dl/dtheta (SPEC's mean-field step)."""
    cfg = TrialConfig(**SMALL, activation=activation, alpha=2.0, lr=0.5, seeds=(3,), device="cpu")
    net = ResNet(cfg)
    before = net.units.clone()
    fwd = net.forward()
    grads = net.backward(fwd)
    net.step(fwd)
    expected = cfg.lr / cfg.alpha**2 * cfg.L * cfg.M * cfg.D / 2
    assert net.step_size() == pytest.approx(expected)
    torch.testing.assert_close(net.units.u - before.u, -expected * grads.u, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(net.units.v - before.v, -expected * grads.v, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("preset,alpha", [("mlu", 1.0), ("lazy", 2.0), ("completep", 1.0), ("depth_mup", 1.0)])
def test_training_matches_naive_numpy_loop(device, activation, preset, alpha):
    # moderate lr and alpha: deep linear (identity) blocks with 3 units blow up at lr ~ 1 for some draws
    cfg = TrialConfig(L=5, M=3, D=4, steps=4, activation=activation, preset=preset, alpha=alpha, lr=0.3,
                      sigma_u=0.8, sigma_v=1.0, seeds=(11, 12), device=device)
    net = ResNet(cfg)
    start = [seed_weights(net, r) for r in range(2)]
    engine_out = torch.stack([fwd.out.clone() for _, fwd in net.trajectory()]).transpose(2, 3)  # (K+1, R, d_out, N)
    for r, (x, y, W_E, W_U, U, V) in enumerate(start):
        outs, _, U_K, V_K = naive.train(x, y, W_E, W_U, U, V, net.scale, activation, cfg.lr, cfg.L, cfg.M, cfg.steps)
        got = engine_out[:, r].cpu().numpy()
        assert np.isfinite(outs).all() and np.max(np.abs(outs[-1] - outs[0])) > 1e-3  # it trained, and stayed finite
        assert np.max(np.abs(got - outs)) <= 1e-10 * np.max(np.abs(outs))
        # the final forward pass saw the units after K steps: compare them too
        assert np.allclose(net.units.u[:, r].cpu().numpy(), np.stack(U_K), rtol=1e-10, atol=1e-12)
        assert np.allclose(net.units.v[:, r].cpu().numpy(), np.stack(V_K), rtol=1e-10, atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_and_cpu_train_the_same_network():
    cfg = TrialConfig(L=16, M=8, D=8, steps=5, seeds=(0, 1), device="cpu")
    cpu = [fwd.out.clone() for _, fwd in ResNet(cfg).trajectory()][-1]
    cuda = [fwd.out.clone() for _, fwd in ResNet(cfg.replace(device="cuda")).trajectory()][-1].cpu()
    torch.testing.assert_close(cuda, cpu, rtol=1e-10, atol=1e-12)


def test_seed_batch_equals_seeds_run_one_at_a_time():
    cfg = TrialConfig(L=4, M=3, D=4, steps=3, seeds=(1, 2, 3), device="cpu")
    batched = torch.stack([fwd.out.clone() for _, fwd in ResNet(cfg).trajectory()])
    for r, seed in enumerate(cfg.seeds):
        alone = torch.stack([fwd.out.clone() for _, fwd in ResNet(cfg.replace(seeds=(seed,))).trajectory()])
        torch.testing.assert_close(batched[:, r], alone[:, 0], rtol=1e-12, atol=1e-14)


def test_float32_tracks_float64():
    cfg = TrialConfig(L=8, M=8, D=8, steps=5, seeds=(0,), device="cpu")
    out64 = [fwd.out.clone() for _, fwd in ResNet(cfg).trajectory()][-1]
    out32 = [fwd.out.clone() for _, fwd in ResNet(cfg.replace(dtype="float32")).trajectory()][-1]
    assert out32.dtype == torch.float32
    assert rms((out32.double() - out64).numpy()) < 1e-4 * rms(out64.numpy())


def test_antithetic_units_cancel_the_initial_branch_output():
    net = ResNet(TrialConfig(L=6, M=4, D=5, antithetic=True, seeds=(0,), device="cpu"))
    fwd = net.forward()
    torch.testing.assert_close(fwd.hidden[-1], fwd.hidden[0], rtol=0, atol=1e-12)
    # pairs share u and mirror v, so each unit individually still has the law mu_0
    torch.testing.assert_close(net.units.u[:, :, :, :2], net.units.u[:, :, :, 2:])
    torch.testing.assert_close(net.units.v[:, :, :, :2], -net.units.v[:, :, :, 2:])


@pytest.mark.parametrize("L", [4, 16, 64])
def test_hidden_rms_at_init_is_stable_across_depth(L):
    """With residual scale 1/(L M) the branch sum is a Monte-Carlo average: h_L stays O(1) and
    its distance to h_0 shrinks like 1/sqrt(L M), whatever L is."""
    M = 8
    net = ResNet(TrialConfig(L=L, M=M, D=8, seeds=tuple(range(8)), device="cpu"))
    fwd = net.forward()
    h0, hL = fwd.hidden[0].numpy(), fwd.hidden[-1].numpy()
    moved = rms(hL - h0) * np.sqrt(L * M)
    assert 0.5 < rms(hL) / rms(h0) < 1.5
    assert 0.3 < moved < 3.0, moved  # sqrt(L M) * RMS(h_L - h_0) is Theta(1) at every depth


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_runs_and_learns(preset):
    alpha = 8.0 if preset == "lazy" else 1.0
    cfg = TrialConfig(L=8, M=8, D=8, steps=10, preset=preset, alpha=alpha, seeds=(0,), device="cpu")
    losses = [float(ResNet(cfg).loss(fwd.out)[0]) for _, fwd in ResNet(cfg).trajectory()]
    assert all(np.isfinite(losses))
    assert losses[-1] < losses[0]


def test_units_never_reuse_the_data_stream():
    """A trial seed equal to the problem seed must not draw its units from the data's numbers."""
    net = ResNet(TrialConfig(L=2, M=16, D=8, seeds=(1,), device="cpu"))  # problem seed is 1 too
    x = net.problem.x.flatten()
    u = net.units.u[0, 0].flatten() / 8**0.5
    assert not torch.isclose(u[: x.numel()], x).any()
    assert abs(float(torch.corrcoef(torch.stack([u[: x.numel()], x]))[0, 1])) < 0.3


@pytest.mark.parametrize("antithetic", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_unit_draw_is_randn_times_sigma_per_seed_stacked(antithetic, dtype):
    """init_units draws each seed into its slice of (L, R, D, M); the numbers are exactly those of
    the plain recipe (randn(L, D, M') * sigma sqrt(D) for u, then for v, from the seed's stream,
    mirrored for antithetic units, stacked over seeds, then converted), whatever the threads."""
    from trials.config import stream_seed
    from trials.model import init_units

    cfg = TrialConfig(L=16, M=64, D=64, antithetic=antithetic, sigma_u=0.7, sigma_v=1.3, seeds=(4, 11, 5))
    units = init_units(cfg, cfg.seeds, torch.device("cpu"), dtype)
    drawn = cfg.M // 2 if antithetic else cfg.M
    for r, seed in enumerate(cfg.seeds):
        gen = torch.Generator().manual_seed(stream_seed("units", seed))
        u = torch.randn(cfg.L, cfg.D, drawn, generator=gen, dtype=torch.float64) * (cfg.sigma_u * cfg.D**0.5)
        v = torch.randn(cfg.L, cfg.D, drawn, generator=gen, dtype=torch.float64) * (cfg.sigma_v * cfg.D**0.5)
        if antithetic:
            u, v = torch.cat([u, u], dim=2), torch.cat([v, -v], dim=2)
        assert torch.equal(units.u[:, r], u.to(dtype)) and torch.equal(units.v[:, r], v.to(dtype))
    assert units.u.is_contiguous() and units.v.is_contiguous()
