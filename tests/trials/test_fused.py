"""Points of one shape trained as one program (trials.train.train_fused, model.ResNet.fused):
each point's rows are its rows trained alone, bit for bit."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from trials import ProblemConfig, ReferenceConfig, TrialConfig, compute_reference, train_trial
from trials.joint_limit import JointLimitConfig, compute_joint_limit
from trials.model import ResNet
from trials.train import train_fused
from trials.units import init_units


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN, lists element by element: bit-identity of stored values."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _differences(alone: list[dict], fused: list[dict]) -> list[tuple[int, str]]:
    if len(alone) != len(fused):
        return [(-1, f"{len(alone)} rows alone, {len(fused)} fused")]
    return [(i, k) for i, (a, f) in enumerate(zip(alone, fused)) for k in a if k != "wall_s" and not _same(a[k], f[k])]


def _pack(device: str, dtype: str, L: int, M: int, D: int, steps: int, samples: int) -> list[TrialConfig]:
    """Presets, alphas, lrs, problem draws, sigma, antithetic, seed counts and the checks mixed in
    one pack; one point diverges, one is chaotic (a lazy alpha = 16 twin that separates)."""
    base = dict(L=L, M=M, D=D, dtype=dtype, device=device, steps=steps)
    draw = lambda seed, d_in=3: ProblemConfig(d_in=d_in, d_out=2, samples=samples, seed=seed)
    return [
        TrialConfig(problem=draw(1), seeds=(0, 1, 2), **base),
        TrialConfig(problem=draw(1), seeds=(0, 1, 2), alpha=2.0, lr=0.5, **base),
        TrialConfig(problem=draw(2), seeds=(0, 1, 2), preset="lazy", alpha=16.0, chaos_check=True, init_noise_limit=100.0, **base),
        TrialConfig(problem=draw(1), seeds=(0, 1), preset="completep", lr=2.0, **base),
        TrialConfig(problem=draw(3, d_in=5), seeds=(1, 4), sigma_u=0.5, sigma_v=1.5, antithetic=M % 2 == 0, **base),
        TrialConfig(problem=draw(1), seeds=(0, 1, 2), lr=60.0, **base),  # diverges, every seed
        TrialConfig(problem=draw(4), seeds=(5,), preset="depth_mup", chaos_check=True, **base),
        TrialConfig(problem=draw(2), seeds=(2, 0), preset="lazy", alpha=12.0, **base),  # init_noise at (16, 4) and (5, 6)
        # raw SGD (its own step size for u and for v) beside the mean-field points, and the standard preset
        TrialConfig(problem=draw(1), seeds=(0, 1), preset="standard", lr=0.05, lr_scaling="raw", init_noise_limit=100.0, **base),
        TrialConfig(problem=draw(2), seeds=(1,), preset="completep", lr=0.2, lr_scaling="raw", init_noise_limit=100.0, **base),
        TrialConfig(problem=draw(1), seeds=(0, 2), preset="standard", lr=0.5, init_noise_limit=100.0, **base),
    ]


def _reference(config: TrialConfig):
    limit = config.replace(preset="mlu", alpha=1.0, lr_scaling="mean_field") if config.limit_alpha is None else config
    return compute_reference(ReferenceConfig(limit=limit, depth=16, width=8, device=config.device))


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("dtype, threads", [("float64", 1), ("float32", 1), ("float64", 2)])  # 2: torch's parallel reductions
@pytest.mark.parametrize("L, M, D, steps, samples", [
    (16, 4, 8, 8, 10),
    (4, 64, 16, 3, 4),  # Baseline's displacement from the update history
    (5, 6, 3, 3, 3),  # a point's part of a layer, R N M, no multiple of the vector width
])
def test_fused_rows_are_the_rows_of_each_point_trained_alone(device, dtype, threads, L, M, D, steps, samples, batched, request):
    if batched and device == "cuda":
        # cuBLAS picks other kernels for a batch than for one matrix: on an H200 (torch 2.11,
        # 2026-12-04) every batched case differed from its points alone in the last bits, which
        # is why train_fused trains one point after another unless asked (docs/numerics.md)
        request.applymarker(pytest.mark.xfail(reason="batched products on CUDA are not bit for bit", strict=False))
    configs = _pack(device, dtype, L, M, D, steps, samples)
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the references are not what is tested: one thread, fast on a loaded machine
    references = [_reference(c) for c in configs]
    torch.set_num_threads(threads)
    try:
        fused = train_fused(configs, references, batched=batched)
        alone = [train_trial(c, r) for c, r in zip(configs, references)]
    finally:
        torch.set_num_threads(before)
    for i, (a, f) in enumerate(zip(alone, fused)):
        assert not _differences(a, f), (i, _differences(a, f)[:5])
    # what the pack holds: a point whose seeds all diverged ends its rows while the others run on,
    # the chaotic point alone is flagged, the wall time is each point's share
    full = len(configs[0].seeds) * (steps + 1)
    assert len(fused[5]) < len(configs[5].seeds) * (steps + 1) and {r["status"] for r in fused[5]} >= {"diverged"}
    assert len(fused[0]) == full and {r["status"] for r in fused[0]} == {"ok"}
    if L == 16:
        assert {r["flags"] for r in fused[2]} == {"chaotic"}
    assert all("chaotic" not in r["flags"] for i in (0, 1, 3, 4, 6, 7) for r in fused[i])
    for config, rows in zip(configs, fused):  # each point's own init_noise flag
        assert {"init_noise" in r["flags"].split(",") for r in rows} == {config.init_noise > config.init_noise_limit}
    assert any(c.init_noise > c.init_noise_limit for c in configs[7:]) == (L != 4)
    assert len({r["wall_s"] for rows in fused for r in rows}) == 1


def test_fused_depth_errors_are_those_of_each_point_alone():
    """Against joint_limit references (the errors along depth, the backward sweep of the last
    step) and a particle reference (none) in one pack."""
    point = lambda **k: TrialConfig(L=6, M=4, D=5, activation="identity", steps=3, seeds=(0, 1), device="cpu",
                                    problem=ProblemConfig(d_in=3, d_out=3, samples=2, data="linear_target", seed=k.pop("seed", 2)), **k)
    configs = [point(lr=0.3), point(lr=0.1, alpha=2.0, seed=5), point(lr=0.3)]
    references = [compute_joint_limit(JointLimitConfig(configs[0], grid=16)), compute_joint_limit(JointLimitConfig(configs[1], grid=16)),
                  compute_reference(ReferenceConfig(limit=configs[2], depth=16, width=8, device="cpu"))]
    for batched in (True, False):
        fused = train_fused(configs, references, batched=batched)
        for c, r, f in zip(configs, references, fused):
            assert not _differences(train_trial(c, r), f)
    assert all(row["err_backward"] > 0 for row in fused[0] + fused[1]) and {row["err_backward"] for row in fused[2]} == {None}


def test_a_seed_index_is_drawn_once_per_pack(monkeypatch):
    """Units depend on the shape and the seed index only: a pack draws each (seed, tensor, block)
    stream once, batched or point by point, and gives each point its own sigma's units, equal
    to its own draw."""
    import trials.units as units

    drawn = []
    sfc64 = np.random.SFC64
    monkeypatch.setattr(units.np.random, "SFC64", lambda entropy: drawn.append(tuple(entropy)) or sfc64(entropy))
    configs = [TrialConfig(L=8, M=6, D=4, seeds=(0, 1), device="cpu", steps=1, alpha=a, sigma_u=s)
               for a, s in ((1.0, 1.0), (2.0, 1.0), (1.0, 0.5))]
    pack = ResNet.fused(configs)
    assert len(drawn) == len(set(drawn)) == 2 * 2  # 2 seeds x (u, v), one block of layers each
    reference = _reference(configs[0])  # its particles draw streams of their own
    drawn.clear()
    train_fused(configs, [reference] * 3, batched=False)
    assert len(drawn) == 2 * 2
    monkeypatch.setattr(units.np.random, "SFC64", sfc64)
    for i, config in enumerate(configs):
        own = init_units(config, config.seeds, torch.device("cpu"), torch.float64)
        assert torch.equal(pack.slot_units(i).u, own.u) and torch.equal(pack.slot_units(i).v, own.v)


def test_a_pack_of_mixed_shapes_or_wrong_references_is_refused_in_one_line():
    a = TrialConfig(L=4, M=2, D=8, steps=2, device="cpu")
    ref = _reference(a)
    with pytest.raises(ValueError, match=r"point 1 has D=4, point 0 D=8") as exc:
        train_fused([a, a.replace(D=4)], [ref, ref])
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="one reference per point"):
        train_fused([a, a.replace(alpha=2.0)], [ref])
    with pytest.raises(ValueError, match="at least one point"):
        train_fused([], [])
    with pytest.raises(ValueError, match="has 2 steps, the trial has steps=3"):
        train_fused([a.replace(steps=3)], [ref])
    assert a.fusion_key() == a.replace(alpha=3.0, lr=0.1, preset="completep", seeds=(4,), problem=ProblemConfig(seed=9)).fusion_key()
