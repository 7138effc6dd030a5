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

# Layers per chunk in the per-unit sums: bounds the scratch buffer to a few million elements.
_CHUNK_ELEMENTS = 1 << 22


def rms(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return x.square().mean(dim=dims).sqrt()


class Baseline:
    """What every step is compared with, computed once per trial: the units and output at step 0,
    the initial per-unit norms |v_0|^2 and the total ||theta_0||^2 per repetition (both float64),
    and the chunks of layers in which the per-unit sums run (bounding their temporaries)."""

    def __init__(self, units0: Units, out0: torch.Tensor):
        self.units0, self.out0 = units0, out0
        L, R, D, M = units0.u.shape
        size = max(1, _CHUNK_ELEMENTS // max(1, R * D * M))
        self.chunks = [slice(i, min(i + size, L)) for i in range(0, L, size)]
        scratch = (min(size, L), R, D, M)
        self.scratch_a = torch.empty(scratch, dtype=units0.u.dtype, device=units0.u.device)
        self.scratch_b = torch.empty(scratch, dtype=units0.u.dtype, device=units0.u.device)
        self.v0_sq = torch.cat([_f64(units0.v[c]).square().sum(dim=2, keepdim=True) for c in self.chunks])  # (L, R, 1, M)
        self.size0_sq = sum(
            _f64(t[c]).square().sum(dim=(0, 2, 3)) for t in (units0.u, units0.v) for c in self.chunks
        )  # (R,)


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype == torch.float64 else t.to(torch.float64)


@dataclass
class Moves:
    """The units' displacement since step 0, in float64 so that nothing cancels:
    dp = (u_k - u_0)^T h_k / D and p0 = u_0^T h_k / D (as P - dp), (L, R, N, M); per unit v_0 . dv and
    |dv|^2, (L, R, 1, M), with dv = v_k - v_0; ||u_k - u_0||^2 per repetition, (R,). The
    differences u_k - u_0 are taken in the working dtype, where they are exact (Sterbenz)
    while the units stay within a factor 2 of their start; the products and per-unit sums of
    those differences then lose nothing to cancellation and are widened to float64 before
    they are combined."""

    dp: torch.Tensor
    p0: torch.Tensor
    v0_dv: torch.Tensor
    dv_sq: torch.Tensor
    du_sq: torch.Tensor


def _moves(net: ResNet, fwd: Forward, base: Baseline) -> Moves:
    u, v, u0, v0 = net.units.u, net.units.v, base.units0.u, base.units0.v
    D = u.shape[2]
    dps, p0s, v0dvs, dvsqs, dusq = [], [], [], [], 0.0
    for c in base.chunks:
        # Differences in the working dtype (exact while a unit stays within 2x of its start) into
        # reused buffers; the products and per-unit sums over D below involve no cancellation,
        # so they run in the working dtype too and are widened before anything is combined.
        du = torch.sub(u[c], u0[c], out=base.scratch_a[: c.stop - c.start])  # (l, R, D, M)
        dv = torch.sub(v[c], v0[c], out=base.scratch_b[: c.stop - c.start])
        dp = _f64(torch.matmul(fwd.hidden[c] / D, du))  # (l, R, N, D) @ (l, R, D, M) -> (l, R, N, M)
        dps.append(dp)
        # the forward's P = u_k^T h / D less dp: no second product; P's rounding only moves the
        # point p0 where sigma is expanded, while a and e below stay differences taken in float64
        p0s.append(_f64(fwd.preact[c]) - dp)
        dusq = dusq + _f64(_unit_dot(du, du)).sum(dim=(0, 2, 3))
        v0dvs.append(_f64(_unit_dot(v0[c], dv)))
        dvsqs.append(_f64(_unit_dot(dv, dv)))
    return Moves(torch.cat(dps), torch.cat(p0s), torch.cat(v0dvs), torch.cat(dvsqs), dusq)


def _unit_dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-unit inner products over the D coordinates: (l, R, D, M) x2 -> (l, R, 1, M)."""
    return torch.linalg.vecdot(a, b, dim=2).unsqueeze(2)


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
        return _moves(self.net, self.fwd, self.base)


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
    act, m = s.net.activation, s.moves
    s0 = act.value(m.p0)
    sk = act.value(m.p0 + m.dp)
    a = sk - s0
    e = a - act.derivative(m.p0, s0) * m.dp
    v0v0, v0dv, dvdv = s.base.v0_sq, m.v0_dv, m.dv_sq  # (L, R, 1, M)
    num = (v0v0 * e * e + 2 * v0dv * e * a + dvdv * a * a).sum(dim=(0, 2, 3))
    den = (v0v0 * a * a + 2 * v0dv * a * sk + dvdv * sk * sk).sum(dim=(0, 2, 3))
    ratio = num.clamp_min(0).sqrt() / den.clamp_min(0).sqrt()
    return torch.where(den > 0, ratio, torch.zeros_like(ratio))


def output_change(s: Snapshot) -> torch.Tensor:
    return rms(_f64(s.fwd.out) - _f64(s.base.out0), (1, 2))


def weight_change(s: Snapshot) -> torch.Tensor:
    moved = s.moves.du_sq + s.moves.dv_sq.sum(dim=(0, 2, 3))
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
