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
    the initial per-unit norms |v_0|^2, the total ||theta_0||^2 per repetition, and one scratch
    buffer reused by every step's per-unit sums (fresh temporaries of weight size would cost
    more in page faults than in arithmetic)."""

    def __init__(self, units0: Units, out0: torch.Tensor):
        self.units0, self.out0 = units0, out0
        L, R, D, M = units0.u.shape
        size = max(1, _CHUNK_ELEMENTS // max(1, R * D * M))
        self.chunks = [slice(i, min(i + size, L)) for i in range(0, L, size)]
        self.scratch = torch.empty((min(size, L), R, D, M), dtype=units0.u.dtype, device=units0.u.device)
        self.v0_sq = self.unit_dot(units0.v, units0.v)  # (L, R, 1, M)
        self.size0_sq = sum(self.unit_dot(t, t).sum(dim=(0, 2, 3)) for t in (units0.u, units0.v))  # (R,)

    def unit_dot(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Per-unit inner products over the D coordinates: (L, R, D, M) x2 -> (L, R, 1, M)."""
        return torch.cat([self._chunk_dot(a[c], b[c], torch.mul) for c in self.chunks])

    def moved_sq(self, now: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
        """||now - start||^2 per repetition: (L, R, D, M) x2 -> (R,)."""
        return sum(self._chunk_dot(now[c], start[c], torch.sub, square=True).sum(dim=(0, 2, 3)) for c in self.chunks)

    def _chunk_dot(self, a, b, op, square: bool = False) -> torch.Tensor:
        buf = self.scratch[: a.shape[0]]
        op(a, b, out=buf)
        if square:
            buf.square_()
        return buf.sum(dim=2, keepdim=True)


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
    def preact_at_init_weights(self) -> torch.Tensor:
        """u_{l,j,0}^T h_{l-1,k} / D for every layer at once: (L, R, N, M)."""
        L, R, D, M = self.base.units0.u.shape
        hidden_in = self.fwd.hidden[:L].reshape(L * R, -1, D)
        p0 = torch.bmm(hidden_in / D, self.base.units0.u.reshape(L * R, D, M))
        return p0.reshape(L, R, -1, M)

    @cached_property
    def v_dots(self) -> tuple[torch.Tensor, torch.Tensor]:
        """|v_k|^2 and v_k . v_0 per unit, (L, R, 1, M): shared by lin_ratio and weight_change."""
        v = self.net.units.v
        return self.base.unit_dot(v, v), self.base.unit_dot(v, self.base.units0.v)


def err_out(s: Snapshot) -> torch.Tensor:
    return rms(s.fwd.out - s.ref_out, (1, 2))


def err_hidden(s: Snapshot) -> torch.Tensor:
    return rms(s.fwd.hidden[-1] - s.ref_hidden, (1, 2))


def loss(s: Snapshot) -> torch.Tensor:
    return s.net.loss(s.fwd.out)


def feature_update(s: Snapshot) -> torch.Tensor:
    return rms(s.fwd.preact - s.preact_at_init_weights, (0, 2, 3))


def lin_ratio(s: Snapshot) -> torch.Tensor:
    """sqrt(sum ||phi(h, z_k) - phi(h, z_0) - d_z phi(h, z_0) dz||^2 / sum ||phi(h, z_k) - phi(h, z_0)||^2)
    for phi(h, z) = v sigma(u^T h / D), summed over layers, units and samples.

    With p = u_k^T h / D, p0 = u_0^T h / D, both vectors are combinations of v_k and v_0:
    residual = v_k (sigma(p) - sigma(p0)) - v_0 sigma'(p0) (p - p0) and change = v_k sigma(p) -
    v_0 sigma(p0), so only the unit norms |v_k|^2, |v_0|^2 and v_k . v_0 are needed.
    """
    act = s.net.activation
    (vv, vv0), v0v0 = s.v_dots, s.base.v0_sq  # (L, R, 1, M)
    p, p0 = s.fwd.preact, s.preact_at_init_weights  # (L, R, N, M)
    sk = s.fwd.activated
    s0 = act.value(p0)
    a, b = sk - s0, act.derivative(p0, s0) * (p - p0)
    num = (vv * a * a - 2 * vv0 * a * b + v0v0 * b * b).sum(dim=(0, 2, 3))
    den = (vv * sk * sk - 2 * vv0 * sk * s0 + v0v0 * s0 * s0).sum(dim=(0, 2, 3))
    ratio = num.clamp_min(0).sqrt() / den.clamp_min(0).sqrt()
    return torch.where(den > 0, ratio, torch.zeros_like(ratio))


def output_change(s: Snapshot) -> torch.Tensor:
    return rms(s.fwd.out - s.base.out0, (1, 2))


def weight_change(s: Snapshot) -> torch.Tensor:
    vv, vv0 = s.v_dots
    # |v - v0|^2 = |v|^2 - 2 v.v0 + |v0|^2: exactly 0 at step 0, where the three sums are the same numbers
    moved_v = (vv - 2 * vv0 + s.base.v0_sq).sum(dim=(0, 2, 3)).clamp_min(0)
    moved = s.base.moved_sq(s.net.units.u, s.base.units0.u) + moved_v
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
