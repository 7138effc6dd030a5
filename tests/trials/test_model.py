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
    """The fused update equals -eta * D / (2 c^2 L M) * dl/dtheta (docs/model.md section 2's mean-field step)."""
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
def test_unit_draw_is_one_sfc64_ziggurat_stream_per_seed_tensor_and_block(antithetic, dtype, monkeypatch):
    """init_units's numbers are exactly those of the documented recipe, written here with plain
    numpy: per seed, tensor (u then v) and block of layers, SFC64 seeded by (stream_seed("units",
    seed), tensor, block), standard normals times sigma sqrt(D), mirrored for antithetic units,
    converted last; and they do not depend on the number of threads that draw them."""
    from trials import units as draw
    from trials.config import stream_seed

    monkeypatch.setattr(draw, "UNIT_BLOCK", 3 * 64 * 64)  # several streams per seed and tensor
    cfg = TrialConfig(L=16, M=128, D=64, antithetic=antithetic, sigma_u=0.7, sigma_v=1.3, seeds=(4, 11, 5))
    drawn = cfg.M // 2 if antithetic else cfg.M
    assert len(draw.unit_blocks(cfg.L, cfg.D, drawn)) > 1
    threads = torch.get_num_threads()
    try:
        drawn_by = {}
        for n in (1, 2):
            torch.set_num_threads(n)
            drawn_by[n] = draw.init_units(cfg, cfg.seeds, torch.device("cpu"), dtype)
    finally:
        torch.set_num_threads(threads)
    units = drawn_by[2]
    assert torch.equal(units.u, drawn_by[1].u) and torch.equal(units.v, drawn_by[1].v)
    for r, seed in enumerate(cfg.seeds):
        for tensor, (got, sigma, mirror) in enumerate(((units.u, cfg.sigma_u, 1.0), (units.v, cfg.sigma_v, -1.0))):
            blocks = []
            for b, (start, stop) in enumerate(draw.unit_blocks(cfg.L, cfg.D, drawn)):
                gen = np.random.Generator(np.random.SFC64([stream_seed("units", seed), tensor, b]))
                blocks.append(gen.standard_normal((stop - start, cfg.D, drawn)) * (sigma * cfg.D**0.5))
            expected = np.concatenate(blocks)
            if antithetic:
                expected = np.concatenate([expected, mirror * expected], axis=2)
            assert torch.equal(got[:, r], torch.from_numpy(expected).to(dtype))
    assert units.u.is_contiguous() and units.v.is_contiguous()


@pytest.mark.parametrize("L, D, drawn", [(16, 64, 64), (1000, 8, 1), (7, 1024, 512), (64, 256, 1024)])
def test_unit_blocks_cover_every_layer_once_with_about_unit_block_numbers(L, D, drawn):
    from trials.units import UNIT_BLOCK, unit_blocks

    blocks = unit_blocks(L, D, drawn)
    assert blocks[0][0] == 0 and blocks[-1][1] == L
    assert all(stop == start for (_, stop), (start, _) in zip(blocks, blocks[1:]))
    assert all(stop > start and ((stop - start) * D * drawn <= UNIT_BLOCK or stop - start == 1) for start, stop in blocks)
    assert all((stop - start) * D * drawn > UNIT_BLOCK // 2 for start, stop in blocks[:-1])


def test_unit_draw_has_the_law_of_independent_gaussians():
    """Entries of u and v are N(0, sigma^2 D): a Kolmogorov-Smirnov test of the standardised
    entries, and no correlation between seeds, tensors or blocks of layers (the streams)."""
    from scipy import stats

    from trials import units as draw

    cfg = TrialConfig(L=64, M=64, D=64, sigma_u=0.7, sigma_v=1.3, seeds=(0, 1))
    units = draw.init_units(cfg, cfg.seeds, torch.device("cpu"), torch.float64)
    assert len(draw.unit_blocks(cfg.L, cfg.D, cfg.M)) == 1  # 2^18 numbers: one stream per seed and tensor
    z_u = (units.u / (cfg.sigma_u * cfg.D**0.5)).numpy()
    z_v = (units.v / (cfg.sigma_v * cfg.D**0.5)).numpy()
    for z in (z_u, z_v):
        assert stats.kstest(z.ravel(), "norm").pvalue > 1e-3
    streams = [z_u[:, 0], z_u[:, 1], z_v[:, 0], z_v[:, 1]]
    n = streams[0].size
    for i in range(len(streams)):
        for j in range(i + 1, len(streams)):
            corr = float(np.corrcoef(streams[i].ravel(), streams[j].ravel())[0, 1])
            assert abs(corr) < 5 / n**0.5, (i, j, corr)
