"""The per-step metrics of SPEC section 4, one name -> function registry.

Every function takes a ``Snapshot`` (one forward pass at step k, the units at step 0 and the
reference at step k) and returns one value per repetition: a tensor of shape (R,).

- err_out, err_hidden: RMS distance to the reference's output and last hidden state.
- feature_update: RMS over units (l, j) and samples n of (u_{l,j,k} - u_{l,j,0})^T h_{l-1,k} / D,
  the change of each unit's preactivation due to its own weights, at its current input.
- lin_ratio: the local linearization error of the block around the initial units, at the current
  input, relative to the block's change (0 when nothing moved).
- output_change: RMS of f_k - f_0; weight_change: ||theta_k - theta_0|| / ||theta_0|| over all units.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import torch

from .model import Forward, ResNet, Units


def rms(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return x.square().mean(dim=dims).sqrt()


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype == torch.float64 else t.to(torch.float64)


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(t.shape[0] * t.shape[1], *t.shape[2:])


def _over_samples(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-unit sums over the samples: (L, R, N, M) x2 -> (L, R, M)."""
    return torch.linalg.vecdot(a, b, dim=2)


def _gram_form(rows: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """Per unit j, |rows^T right_j|^2 = right_j^T (rows rows^T) right_j, from the (N, N) Gram
    matrix of the rows: (L, R, N, D) and (L, R, N, M) in float64 -> (L, R, M)."""
    L, R, N = rows.shape[:3]
    flat = _flat(rows)
    gram = torch.bmm(flat, flat.transpose(1, 2))  # (L R, N, N)
    return _over_samples(torch.bmm(gram, _flat(right)).view(right.shape), right)


@dataclass
class Moves:
    """The units' displacement since step 0 at one forward pass, in float64:
    dp = (u_k - u_0)^T h_k / D = P - P0 and p0 = P0 = u_0^T h_k / D, (L, R, N, M); per unit
    |du|^2, v_0 . dv and |dv|^2, (L, R, M), with du = u_k - u_0, dv = v_k - v_0."""

    dp: torch.Tensor
    p0: torch.Tensor
    du_sq: torch.Tensor
    v0_dv: torch.Tensor
    dv_sq: torch.Tensor


class Baseline:
    """What every step is compared with, computed once per trial, and the per-unit sums of the
    displacement since then, kept up to date by the steps themselves.

    Created after the first forward pass, before the first step, it attaches itself to the net
    as its step observer. Each step adds its increments du = -lr_hat H^T G, dv = -lr_hat B^T S
    (rank N per layer) to the float64 sums |du|^2, v_0 . dv and |dv|^2 per unit, from (N, M)-sized
    quantities the step has anyway:
        du_k . du = -lr_hat D sum_n dp G,  |du|^2 = lr_hat^2 G^T (H H^T) G,
        v_0 . dv = -lr_hat sum_n (B v_0) S,  dv_k . dv = -lr_hat sum_n (B V_k - B v_0) S,
        |dv|^2 = lr_hat^2 S^T (B B^T) S,
    so no weight-sized difference or per-unit sum over D is ever taken. The only weight-sized
    reads are P0 = H u_0 / D (one product per metric step) and B v_0 (one per step). In float32
    dp = P - P0 and B dv = B V_k - B v_0 carry an absolute error of a few ulps of P and B V, i.e.
    a relative error of about eps * alpha in the lazy regime (1e-3 at alpha = 65536)."""

    def __init__(self, net: ResNet, out0: torch.Tensor, units0: Units | None = None):
        self.units0 = net.units.clone() if units0 is None else units0
        self.out0 = out0
        L, R, D, M = self.units0.u.shape
        zeros = torch.zeros(L, R, M, dtype=torch.float64, device=self.units0.u.device)
        self.v0_sq = _f64(self.units0.v).square().sum(dim=2)  # (L, R, M)
        self.size0_sq = _f64(self.units0.u).square().sum(dim=(0, 2, 3)) + self.v0_sq.sum(dim=(0, 2))  # (R,)
        self.du_sq, self.v0_dv, self.dv_sq = zeros, zeros.clone(), zeros.clone()
        self._fwd: Forward | None = None
        self._moves: Moves | None = None
        net.observer = self

    def moves(self, fwd: Forward) -> Moves:
        """The displacement at this forward pass (cached for it: the step reuses dp)."""
        if fwd is not self._fwd:
            D = self.units0.u.shape[2]
            # P0 = (h / D) u_0, one batched product: the forward's P = (h / D) u_k less it is dp
            p0 = torch.bmm(_flat(fwd.hidden[:-1]) / D, _flat(self.units0.u)).view(fwd.preact.shape)
            p0 = _f64(p0)
            self._moves = Moves(_f64(fwd.preact) - p0, p0, self.du_sq, self.v0_dv, self.dv_sq)
            self._fwd = fwd
        return self._moves

    def __call__(self, net: ResNet, fwd: Forward, cotangent: torch.Tensor, gated: torch.Tensor, q: torch.Tensor) -> None:
        """The step observer: add this step's increments to the per-unit sums (class docstring).
        New tensors, not in place: a Moves taken before the step keeps its values."""
        lr, D = net.lr_hat, self.units0.u.shape[2]
        dp = self.moves(fwd).dp
        g = _f64(gated)
        s = _f64(fwd.activated)
        h = _f64(fwd.hidden[:-1])
        b = _f64(cotangent)
        bv0 = torch.bmm(_flat(cotangent), _flat(self.units0.v)).view(q.shape)  # B v_0, working dtype
        bdv = _f64(q) * D - _f64(bv0)
        self.du_sq = self.du_sq + (-2.0 * lr * D) * _over_samples(dp, g) + lr * lr * _gram_form(h, g)
        self.v0_dv = self.v0_dv - lr * _over_samples(_f64(bv0), s)
        self.dv_sq = self.dv_sq - 2.0 * lr * _over_samples(bdv, s) + lr * lr * _gram_form(b, s)


@dataclass
class Snapshot:
    """Everything the metrics of one step read, sample-major as in model.Forward. Shapes:
    ref_out (N, d_out); ref_hidden (N, D); the baseline's out0 (R, N, d_out)."""

    net: ResNet
    fwd: Forward
    base: Baseline
    ref_out: torch.Tensor
    ref_hidden: torch.Tensor

    @cached_property
    def moves(self) -> Moves:
        """The float64 displacement sums shared by feature_update, lin_ratio and weight_change."""
        return self.base.moves(self.fwd)


def err_out(s: Snapshot) -> torch.Tensor:
    return rms(s.fwd.out - s.ref_out, (1, 2))


def err_hidden(s: Snapshot) -> torch.Tensor:
    return rms(s.fwd.hidden[-1] - s.ref_hidden, (1, 2))


def loss(s: Snapshot) -> torch.Tensor:
    return s.net.loss(s.fwd.out)


def feature_update(s: Snapshot) -> torch.Tensor:
    return rms(s.moves.dp, (0, 2, 3))


def lin_ratio(s: Snapshot) -> torch.Tensor:
    """sqrt(sum ||phi(h, z_k) - phi(h, z_0) - d_z phi(h, z_0) dz||^2 / sum ||phi(h, z_k) - phi(h, z_0)||^2)
    for phi(h, z) = v sigma(u^T h / D), summed over layers, units and samples, in float64.

    With p0 = u_0^T h / D, dp = du^T h / D, a = sigma(p0 + dp) - sigma(p0) and e = a - sigma'(p0) dp
    (the second-order rest), the residual is v_0 e + dv a and the change v_0 a + dv sigma(p): written
    with the displacement dv, not as v_k and v_0 (whose combinations cancel to nothing in float32
    in the lazy regime), so only |v_0|^2, v_0 . dv and |dv|^2 per unit are needed.
    """
    act, m, base = s.net.activation, s.moves, s.base
    s0 = act.value(m.p0)
    # sigma(P) at the current units: the forward's own in float64, recomputed in float64 otherwise
    sk = s.fwd.activated if s.fwd.activated.dtype == torch.float64 else act.value(_f64(s.fwd.preact))
    a = sk - s0
    e = a - act.derivative(m.p0, s0) * m.dp
    v0v0, v0dv, dvdv = base.v0_sq, m.v0_dv, m.dv_sq  # (L, R, M)
    ee, ea, aa = _over_samples(e, e), _over_samples(e, a), _over_samples(a, a)
    ask, sksk = _over_samples(a, sk), _over_samples(sk, sk)
    num = (v0v0 * ee + 2 * v0dv * ea + dvdv * aa).sum(dim=(0, 2))
    den = (v0v0 * aa + 2 * v0dv * ask + dvdv * sksk).sum(dim=(0, 2))
    ratio = num.clamp_min(0).sqrt() / den.clamp_min(0).sqrt()
    return torch.where(den > 0, ratio, torch.zeros_like(ratio))


def output_change(s: Snapshot) -> torch.Tensor:
    return rms(_f64(s.fwd.out) - _f64(s.base.out0), (1, 2))


def weight_change(s: Snapshot) -> torch.Tensor:
    moved = (s.moves.du_sq + s.moves.dv_sq).sum(dim=(0, 2))
    return (moved / s.base.size0_sq).sqrt()


METRICS: dict[str, Callable[[Snapshot], torch.Tensor]] = {
    "err_out": err_out,
    "err_hidden": err_hidden,
    "loss": loss,
    "feature_update": feature_update,
    "lin_ratio": lin_ratio,
    "output_change": output_change,
    "weight_change": weight_change,
}
