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

# Layers per chunk in the per-unit sums: bounds temporaries to a few million elements.
_CHUNK_ELEMENTS = 1 << 22


def rms(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return x.square().mean(dim=dims).sqrt()


@dataclass
class Snapshot:
    """Everything the metrics of one step read, sample-major as in model.Forward. Shapes:
    out0 (R, N, d_out); ref_out (N, d_out); ref_hidden (N, D); units as in model.Units."""

    net: ResNet
    fwd: Forward
    units0: Units
    out0: torch.Tensor
    ref_out: torch.Tensor
    ref_hidden: torch.Tensor

    @cached_property
    def preact_at_init_weights(self) -> torch.Tensor:
        """u_{l,j,0}^T h_{l-1,k} / D for every layer at once: (L, R, N, M)."""
        L, R, D, M = self.units0.u.shape
        hidden_in = self.fwd.hidden[:L].reshape(L * R, -1, D)
        p0 = torch.bmm(hidden_in, self.units0.u.reshape(L * R, D, M)) / D
        return p0.reshape(L, R, -1, M)

    def layer_chunks(self):
        L, R, D, M = self.units0.u.shape
        size = max(1, _CHUNK_ELEMENTS // max(1, R * D * M))
        return [slice(i, min(i + size, L)) for i in range(0, L, size)]


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
    sigma, sigma_prime = s.net.sigma, s.net.sigma_prime
    R = s.fwd.out.shape[0]
    num = torch.zeros(R, dtype=s.fwd.out.dtype, device=s.fwd.out.device)
    den = torch.zeros_like(num)
    for chunk in s.layer_chunks():
        v, v0 = s.net.units.v[chunk], s.units0.v[chunk]
        # (l, R, D, M) -> (l, R, 1, M): per-unit inner products over the D coordinates.
        vv = v.square().sum(2, keepdim=True)
        v0v0 = v0.square().sum(2, keepdim=True)
        vv0 = (v * v0).sum(2, keepdim=True)
        p, p0 = s.fwd.preact[chunk], s.preact_at_init_weights[chunk]
        sk, s0 = sigma(p), sigma(p0)
        a, b = sk - s0, sigma_prime(p0) * (p - p0)
        num += (vv * a * a - 2 * vv0 * a * b + v0v0 * b * b).sum(dim=(0, 2, 3))
        den += (vv * sk * sk - 2 * vv0 * sk * s0 + v0v0 * s0 * s0).sum(dim=(0, 2, 3))
    ratio = num.clamp_min(0).sqrt() / den.clamp_min(0).sqrt()
    return torch.where(den > 0, ratio, torch.zeros_like(ratio))


def output_change(s: Snapshot) -> torch.Tensor:
    return rms(s.fwd.out - s.out0, (1, 2))


def weight_change(s: Snapshot) -> torch.Tensor:
    moved = torch.zeros_like(s.fwd.out[:, 0, 0])  # (R,)
    size = torch.zeros_like(moved)
    for chunk in s.layer_chunks():
        for now, start in ((s.net.units.u[chunk], s.units0.u[chunk]), (s.net.units.v[chunk], s.units0.v[chunk])):
            moved += (now - start).square().sum(dim=(0, 2, 3))
            size += start.square().sum(dim=(0, 2, 3))
    return (moved / size).sqrt()


METRICS: dict[str, Callable[[Snapshot], torch.Tensor]] = {
    "err_out": err_out,
    "err_hidden": err_hidden,
    "loss": loss,
    "feature_update": feature_update,
    "lin_ratio": lin_ratio,
    "output_change": output_change,
    "weight_change": weight_change,
}
