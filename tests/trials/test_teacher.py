"""The teacher data kind and its held-out set (trials/data.py): the targets are the teacher's
outputs, the held-out metrics are the loss and output error of the trained network on samples it
never saw, computed here independently from the engine's units."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from trials import ConfigError, ProblemConfig, TrialConfig, train_trial
from trials.data import draw_test, teacher
from trials.model import ResNet, make_problem
from trials.reference import reference_from_trial


def teacher_problem(**changes) -> ProblemConfig:
    return ProblemConfig(data="teacher", samples=12, d_in=3, d_out=2, teacher_depth=2, teacher_width=8, **changes)


def direct_outputs(net: ResNet, x: torch.Tensor) -> torch.Tensor:
    """f on inputs x for every repetition, from the units, written out as docs/model.md section 1."""
    cfg, p, c = net.config, net.problem, net.scale
    outs = []
    for r in range(net.repetitions):
        h = x @ p.embed.T
        for layer in range(cfg.L):
            h = h + c * torch.tanh(h @ net.units.u[layer, r] / cfg.D) @ net.units.v[layer, r].T
        outs.append(h @ p.readout / cfg.D)
    return torch.stack(outs)


def test_teacher_targets_are_the_teacher_plus_noise_and_the_test_set_is_apart():
    clean = teacher_problem(test_samples=5)
    noisy = teacher_problem(test_samples=5, label_noise=0.1)
    cfg = TrialConfig(L=2, M=4, D=4, problem=clean, device="cpu")
    p = make_problem(cfg, torch.device("cpu"), torch.float64)
    torch.testing.assert_close(p.y, teacher(clean, p.x), rtol=0, atol=0)
    q = make_problem(cfg.replace(problem=noisy), torch.device("cpu"), torch.float64)
    torch.testing.assert_close(q.x, p.x, rtol=0, atol=0)  # the inputs do not depend on the noise
    gap = (q.y - p.y).std().item()
    assert 0.05 < gap < 0.2
    x_test, y_test, clean_test = draw_test(noisy)
    assert x_test.shape == (5, 3) and not torch.isclose(x_test[0], p.x).all(dim=1).any()
    torch.testing.assert_close(clean_test, teacher(noisy, x_test), rtol=0, atol=0)
    # the training set does not change with the number of test samples
    more = make_problem(cfg.replace(problem=teacher_problem(test_samples=9)), torch.device("cpu"), torch.float64)
    torch.testing.assert_close(more.x, p.x, rtol=0, atol=0)
    # unit RMS by construction (over the teacher's own 1024 inputs): about 1 here too
    assert 0.3 < float(teacher(clean, torch.randn(2000, 3, dtype=torch.float64)).square().mean().sqrt()) < 3


def test_test_metrics_are_the_held_out_loss_and_error_at_every_step():
    cfg = TrialConfig(L=3, M=6, D=4, lr=0.5, steps=3, seeds=(0, 1), device="cpu",
                      problem=teacher_problem(test_samples=7, label_noise=0.05))
    rows = train_trial(cfg, reference_from_trial(cfg.replace(seeds=(50,))))
    net = ResNet(cfg)
    x_test, y_test, clean = draw_test(cfg.problem)
    for k in range(cfg.steps + 1):
        if k:
            net.step(net.forward())
        out = direct_outputs(net, x_test)
        for r, seed in enumerate(cfg.seeds):
            row = next(row for row in rows if row["seed"] == seed and row["step"] == k)
            assert row["test_loss"] == pytest.approx(float((out[r] - y_test).square().mean()), rel=1e-12)
            assert row["test_err_out"] == pytest.approx(float((out[r] - clean).square().mean().sqrt()), rel=1e-12)
    assert rows[-1]["test_loss"] < rows[0]["test_loss"]  # it learned something that generalises


def test_no_test_set_gives_null_test_metrics():
    cfg = TrialConfig(L=2, M=4, D=4, steps=1, device="cpu", problem=teacher_problem())
    rows = train_trial(cfg, reference_from_trial(cfg.replace(seeds=(50,))))
    assert all(row["test_loss"] is None and row["test_err_out"] is None for row in rows)


def test_keys_hold_for_the_other_kinds_and_test_samples_need_a_teacher():
    assert TrialConfig(L=4, M=4, D=8, seeds=(0, 1)).key() == "cfee6f1df54a468c"
    assert ProblemConfig(teacher_depth=5).numerics() == ProblemConfig().numerics()  # acts on teacher data only
    assert teacher_problem().numerics() != teacher_problem(teacher_seed=3).numerics()
    with pytest.raises(ConfigError) as info:
        ProblemConfig(test_samples=4)
    assert info.value.field == "problem.test_samples" and "teacher" in str(info.value)
    assert np.isfinite(teacher_problem().label_noise)
