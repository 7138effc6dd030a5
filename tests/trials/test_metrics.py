"""Metrics against explicit per-unit loops, and the rows train_trial produces."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests import naive
from tests.trials.conftest import rms, seed_weights
from trials import METRICS, ReferenceConfig, TrialConfig, compute_reference, train_trial
from trials.metrics import Baseline, Moves, Snapshot, error_gram, local_sums
from trials.train import seed_gram_rows
from trials.model import Forward, ResNet

ROW_METRICS = set(METRICS) | {"ref_loss", "ref_err_out", "ref_err_hidden"}


@pytest.fixture(scope="module")
def small_reference():
    limit = TrialConfig(L=2, M=2, D=4, steps=4, device="cpu")
    return compute_reference(ReferenceConfig(limit=limit, depth=32, width=16, replicas=2, device="cpu"))


def _snapshot_after(cfg: TrialConfig, steps: int, history: bool | None = None):
    """The engine's state after ``steps`` GD steps, with a zero reference."""
    net = ResNet(cfg)
    start = [seed_weights(net, r) for r in range(len(cfg.seeds))]
    base = Baseline(net, net.forward().out.clone(), history=history)
    for k, fwd in net.trajectory():
        if k == steps:
            return net, start, Snapshot(net, fwd, base, torch.zeros_like(base.out0[0]), torch.zeros_like(fwd.hidden[-1, 0]))
    raise AssertionError("not reached")


@pytest.mark.parametrize("history", [False, True], ids=["from_units0", "from_history"])
@pytest.mark.parametrize("activation", ["tanh", "gelu", "relu", "identity"])
def test_unit_metrics_match_explicit_loops(device, activation, history):
    cfg = TrialConfig(L=3, M=4, D=5, steps=3, activation=activation, seeds=(5, 6), device=device)
    net, start, snap = _snapshot_after(cfg, 3, history)
    for r in range(2):
        x, _, W_E, W_U, U0, V0 = start[r]
        _, _, _, _, U, V = seed_weights(net, r)
        fu, lin = naive.unit_metrics(x, W_E, W_U, U0, V0, U, V, net.scale, activation)
        assert float(METRICS["feature_update"](snap)[r].cpu()) == pytest.approx(fu, rel=1e-9)
        assert float(METRICS["lin_ratio"](snap)[r].cpu()) == pytest.approx(lin, rel=1e-7)


def test_distance_metrics_match_numpy():
    cfg = TrialConfig(L=3, M=4, D=5, steps=2, seeds=(1,), device="cpu")
    net, start, snap = _snapshot_after(cfg, 2)
    out = snap.fwd.out[0].numpy().T  # (d_out, N), like naive's y
    _, y, _, _, U0, V0 = start[0]
    _, _, _, _, U, V = seed_weights(net, 0)
    assert float(METRICS["err_out"](snap)[0]) == pytest.approx(rms(out))  # reference set to 0 above
    assert float(METRICS["loss"](snap)[0]) == pytest.approx(np.mean((out - y) ** 2))
    assert float(METRICS["output_change"](snap)[0]) == pytest.approx(rms(out - snap.base.out0[0].numpy().T))
    moved = sum(np.sum((a - b) ** 2) for a, b in zip(U + V, U0 + V0))
    assert float(METRICS["weight_change"](snap)[0]) == pytest.approx(math.sqrt(moved / sum(np.sum(b**2) for b in U0 + V0)))


def test_every_metric_is_zero_or_finite_at_step_zero(small_reference):
    rows = train_trial(TrialConfig(L=4, M=2, D=4, steps=4, seeds=(0, 1), device="cpu"), small_reference)
    first = [r for r in rows if r["step"] == 0]
    for name in METRICS:
        assert all(math.isfinite(r[name]) for r in first), name
    for name in ("feature_update", "lin_ratio", "output_change", "weight_change"):
        assert all(r[name] == 0.0 for r in first), name


def test_train_trial_rows_cover_every_seed_and_step(device, small_reference):
    cfg = TrialConfig(L=4, M=2, D=4, steps=4, seeds=(3, 9), device=device)
    rows = train_trial(cfg, small_reference)
    assert [(r["seed"], r["step"]) for r in rows] == [(s, k) for s in (3, 9) for k in range(5)]
    for row in rows:
        assert ROW_METRICS <= set(row)
        assert row["status"] == "ok" and row["ref_key"] == small_reference.key and row["device"] == device
        assert row["ref_err_out"] == small_reference.arrays["err_out"][row["step"]]
        assert {k: row[k] for k in cfg.columns()} == cfg.columns()


def test_divergence_ends_the_seed_with_a_diverged_row_and_never_raises(device, small_reference):
    cfg = TrialConfig(L=4, M=2, D=4, steps=4, lr=200.0, activation="identity", seeds=(0,), device=device,
                      divergence_bound=1e3)
    rows = train_trial(cfg, small_reference)
    assert rows[-1]["status"] == "diverged"
    assert all(r["status"] == "ok" for r in rows[:-1])
    assert len(rows) < cfg.steps + 1


def test_reference_with_other_steps_is_refused(small_reference):
    with pytest.raises(ValueError, match="steps"):
        train_trial(TrialConfig(L=2, M=2, D=4, steps=5, device="cpu"), small_reference)


@pytest.mark.parametrize("history", [False, True], ids=["from_units0", "from_history"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_metrics_observer_only_reads_the_step(dtype, history):
    """The baseline follows each step (ResNet.observer) from its factors; it must not change them,
    and its per-unit sums must equal the displacement taken explicitly from the weights."""
    cfg = TrialConfig(L=4, M=6, D=5, steps=5, dtype=dtype, seeds=(2, 3), device="cpu")
    plain = torch.stack([fwd.out.clone() for _, fwd in ResNet(cfg).trajectory()])
    net = ResNet(cfg)
    units0 = net.units.clone()
    outs, base = [], None
    for k, fwd in net.trajectory():
        base = base or Baseline(net, fwd.out.clone(), history=history)
        snap = Snapshot(net, fwd, base, torch.zeros_like(base.out0[0]), torch.zeros_like(fwd.hidden[-1, 0]))
        [fn(snap) for fn in METRICS.values()]
        outs.append(fwd.out.clone())
    assert torch.equal(torch.stack(outs), plain)
    du, dv = (net.units.u - units0.u).double(), (net.units.v - units0.v).double()
    rel = 1e-10 if dtype == "float64" else 1e-4
    torch.testing.assert_close(snap.moves.du_sq, du.square().sum(dim=2), rtol=rel, atol=0)
    torch.testing.assert_close(snap.moves.dv_sq, dv.square().sum(dim=2), rtol=rel, atol=0)
    torch.testing.assert_close(snap.moves.v0_dv, (units0.v.double() * dv).sum(dim=2), rtol=rel, atol=rel * 1e-2)


def test_history_is_chosen_where_it_costs_no_more_than_units0():
    """dp from the update history when K N (D + M) <= D M (no larger than a copy of u_0), else
    from the step-0 units; at K = 10, N = 10: (64, 1024, 256) uses the history, (256, 256, 32) not."""
    for (L, M, D), expected in (((2, 1024, 256), True), ((2, 256, 32), False)):
        net = ResNet(TrialConfig(L=L, M=M, D=D, steps=10, device="cpu"))
        base = Baseline(net, net.forward().out.clone())
        assert base.history is expected and (base.units0 is None) is expected


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_history_and_units0_give_the_same_metrics_in_float64(activation):
    """Both ways of obtaining dp agree to rounding over a whole trajectory, also past the
    configured number of steps (the history then grows)."""
    cfg = TrialConfig(L=5, M=6, D=7, steps=3, alpha=4.0, activation=activation, seeds=(1, 2), device="cpu")
    values = []
    for history in (False, True):
        net, bases, rows = ResNet(cfg), None, []
        for k in range(cfg.steps + 3):
            fwd = net.forward()
            bases = bases or Baseline(net, fwd.out.clone(), history=history)
            snap = Snapshot(net, fwd, bases, torch.zeros_like(bases.out0[0]), torch.zeros_like(fwd.hidden[-1, 0]))
            rows.append(torch.stack([fn(snap) for fn in METRICS.values()]))
            net.step(fwd)
        values.append(torch.stack(rows))
    torch.testing.assert_close(values[1], values[0], rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("p_scale, dp_scale", [(1.0, 1e-5), (1.0, 0.1), (0.1, 0.1), (3.0, 1.0), (30.0, 30.0)])
def test_float32_tanh_sums_match_float64(p_scale, dp_scale):
    """In float32 lin_ratio's a = tanh(P) - tanh(P - dp) and e = a - tanh'(P - dp) dp are taken
    without their cancellations: their per-unit sums agree with float64 ones from the lazy regime
    (dp ~ 1e-5) through the switch of tanh(dp) - dp to its series (|dp| = 0.1) to saturation."""
    net = ResNet(TrialConfig(L=8, M=16, D=4, dtype="float32", seeds=(0, 1), device="cpu"))
    fwd = net.forward()
    base = Baseline(net, fwd.out.clone())
    gen = torch.Generator().manual_seed(0)
    P = torch.randn(fwd.preact.shape, generator=gen) * p_scale
    dp = torch.randn(fwd.preact.shape, generator=gen) * dp_scale
    sums = []
    for dtype in (torch.float32, torch.float64):
        p, d = P.to(dtype), dp.to(dtype)
        moves = Moves(d, base.du_sq, base.v0_dv, base.dv_sq)
        sums.append(local_sums(net, Forward(fwd.hidden, p, torch.tanh(p), fwd.out), base, moves).products.clone())
    for name, got, exact in zip(("ee", "ea", "aa", "ask", "sksk"), *sums):
        assert float((got - exact).norm() / exact.norm()) < 2e-6, name  # direct float32: 1e5 at dp ~ 1e-5


def test_gram_rows_are_in_ascending_seed_order_with_nan_for_seeds_not_ok():
    errors = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], dtype=torch.float64)  # seeds 7, 2, 5
    gram = error_gram(errors)
    assert torch.equal(gram, errors @ errors.T / 2)
    rows = seed_gram_rows(gram, [True, False, True], [7, 2, 5])  # seed 2 diverged
    nan = float("nan")
    # rows indexed like the seeds (7, 2, 5), entries in ascending seed order (2, 5, 7)
    expected = [[nan, 0.75, 2.5], [nan, nan, nan], [nan, 0.25, 0.75]]
    np.testing.assert_array_equal(np.array(rows), np.array(expected))


def test_all_seeds_diverging_at_once_store_nan_gram_rows(small_reference):
    cfg = TrialConfig(L=4, M=2, D=4, steps=4, seeds=(0, 1), divergence_bound=1e-6, device="cpu")
    rows = train_trial(cfg, small_reference)
    assert [r["status"] for r in rows] == ["diverged", "diverged"]
    assert all(np.isnan(r["gram_out"]).all() and np.isnan(r["gram_hidden"]).all() for r in rows)


def test_initial_norms_taken_while_copying_equal_a_copy_then_the_norms():
    # Baseline copies u_0 and v_0 and takes their per-unit norms in one read of the weights;
    # several blocks of rows (BLOCK), float64 and float32, against the copy and norms apart and a
    # naive sum over the coordinates
    from trials.metrics import BLOCK, unit_norms_sq

    for dtype in (torch.float64, torch.float32):
        w = torch.randn(9, 3, 16, BLOCK // 16 // 4 + 7, dtype=torch.float64).mul_(3.0).to(dtype)
        copy = torch.full_like(w, float("nan"))
        fused = unit_norms_sq(w, copy_into=copy)
        assert torch.equal(copy, w)
        assert torch.equal(fused, unit_norms_sq(w.clone()))
        naive = w.double().square().sum(dim=2)
        assert fused.dtype == torch.float64 and torch.allclose(fused, naive, rtol=1e-5 if dtype == torch.float32 else 1e-13)


def test_tanh_derivative_in_one_pass_rounds_like_one_minus_the_square():
    # sigma'(p) = 1 - s^2 is written into its buffer as 1 - (s * s): the same floats as the
    # two-pass -(s * s) + 1 that earlier numbers used
    from trials.model import ACTIVATIONS

    tanh = ACTIVATIONS["tanh"]
    for dtype in (torch.float64, torch.float32):
        s = torch.tanh(torch.randn(100_003, dtype=torch.float64) * 3).to(dtype)
        out = torch.empty_like(s)
        tanh.apply_derivative(None, s, out)
        assert torch.equal(out, torch.mul(s, s).neg_().add_(1.0))
        assert torch.equal(out, tanh.derivative(None, s))
