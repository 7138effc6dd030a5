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


def _over_samples(a: torch.Tensor, b: torch.Tensor, scratch: torch.Tensor) -> torch.Tensor:
    """Per-unit sums over the samples, in float64: (L, R, N, M) x2 -> (L, R, M). The product goes
    into a reused float64 scratch buffer (a fresh tensor of this size costs page faults)."""
    return torch.mul(a, b, out=scratch).sum(dim=2)


def _gram_form(rows: torch.Tensor, right: torch.Tensor, scratch: torch.Tensor, work: torch.Tensor) -> torch.Tensor:
    """Per unit j, |rows^T right_j|^2 = right_j^T (rows rows^T) right_j, from the (N, N) Gram
    matrix of the rows: (L, R, N, D) and (L, R, N, M) -> (L, R, M), in the working dtype up to
    the float64 sum (a norm of an increment: no cancellation)."""
    flat = _flat(rows)
    gram = torch.bmm(flat, flat.transpose(1, 2))  # (L R, N, N)
    torch.bmm(gram, _flat(right), out=_flat(work))
    return _over_samples(work, right, scratch)


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
        v_0 . dv = -lr_hat sum_n (B v_0) S,  dv_k . dv = -lr_hat sum_n B (v_k - v_0) S,
        |dv|^2 = lr_hat^2 S^T (B B^T) S,
    so no weight-sized difference or per-unit sum over D is ever taken. What remains is the
    displacement seen through the current factors, dp = (u_k - u_0)^T h_k / D and B (v_k - v_0),
    obtained in one of two ways (``history``, fixed per trial from its shape):

    - from the history of the updates (when K N (D + M) <= D M, i.e. when storing every step's
      H, G, B, S costs no more than a copy of u_0): u_k - u_0 = -lr_hat sum_s H_s^T G_s, so
      dp = -(lr_hat / D) (h_k H_{<k}^T) G_{<k} and B (v_k - v_0) = -lr_hat (B B_{<k}^T) S_{<k},
      products of (N, k N) and (k N, M) matrices; u_0 and v_0 are never read again. The
      displacement is then computed directly, to a relative precision of the working dtype, with
      no cancellation whatever alpha is;
    - from the step-0 units (otherwise): P0 = H u_0 / D (one weight-sized product per metric step)
      and B v_0 (one per step), dp = P - P0 and B (v_k - v_0) = B V_k - B v_0. In float32 these
      differences carry an absolute error of a few ulps of P and B V, i.e. a relative error of
      about eps * alpha in the lazy regime (1e-3 at alpha = 65536)."""

    def __init__(self, net: ResNet, out0: torch.Tensor, units0: Units | None = None, history: bool | None = None):
        """Args: units0: the step-0 units if already cloned (else cloned here when needed);
        history: force the way dp is obtained (class docstring); None chooses from the shape."""
        cfg = net.config
        L, R, D, M = net.units.u.shape
        N = net.problem.x.shape[0]
        self.history = cfg.steps * N * (D + M) <= D * M if history is None else history
        start = net.units if units0 is None else units0
        self.units0 = None if self.history else (net.units.clone() if units0 is None else units0)
        self.out0 = out0
        self.lr, self.D = net.lr_hat, D
        zeros = torch.zeros(L, R, M, dtype=torch.float64, device=start.u.device)
        self.v0_sq = _f64(start.v).square().sum(dim=2)  # (L, R, M)
        self.size0_sq = _f64(start.u).square().sum(dim=(0, 2, 3)) + self.v0_sq.sum(dim=(0, 2))  # (R,)
        self.du_sq, self.v0_dv, self.dv_sq = zeros, zeros.clone(), zeros.clone()
        self._fwd: Forward | None = None
        self._moves: Moves | None = None
        self._buffers: dict[tuple[str, torch.dtype], torch.Tensor] = {}
        self._rows = 0  # history rows filled: N per step taken
        if self.history:  # (L R, K N, D or M): every step's H, G, B, S, stacked along the samples
            self._past = {name: torch.empty(L * R, max(cfg.steps, 1) * N, width, dtype=net.dtype, device=start.u.device)
                          for name, width in (("h", D), ("g", M), ("b", D), ("s", M))}
        net.observer = self

    def buffer(self, name: str, like: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """A scratch tensor shaped like ``like``, reused from step to step (valid until the next
        step's metrics)."""
        buf = self._buffers.get((name, dtype))
        if buf is None or buf.shape != like.shape:
            buf = self._buffers[(name, dtype)] = torch.empty(like.shape, dtype=dtype, device=like.device)
        return buf

    def _through_past(self, rows: torch.Tensor, left: str, right: str, scale: float, out: torch.Tensor) -> torch.Tensor:
        """rows (L, R, N, width) times the stored updates: scale (rows past[left]^T) past[right]
        into ``out`` (L, R, N, M), one (N, k N) @ (k N, M) product per layer and repetition (the
        scale goes on the small (N, k N) factor)."""
        k = self._rows
        cross = torch.bmm(_flat(rows), self._past[left][:, :k].transpose(1, 2)).mul_(scale)  # (L R, N, k N)
        torch.bmm(cross, self._past[right][:, :k], out=_flat(out))
        return out

    def moves(self, fwd: Forward) -> Moves:
        """The displacement at this forward pass (cached for it: the step reuses dp)."""
        if fwd is not self._fwd:
            P = fwd.preact
            if self.history:
                dp = self.buffer("dp", P)
                if self._rows == 0:
                    dp.zero_()
                elif P.dtype == torch.float64:  # dp = -(lr / D) (h H_{<k}^T) G_{<k}
                    self._through_past(fwd.hidden[:-1], "h", "g", -self.lr / self.D, dp)
                else:
                    dp.copy_(self._through_past(fwd.hidden[:-1], "h", "g", -self.lr / self.D, self.buffer("work", P, P.dtype)))
                p0 = torch.sub(P, dp, out=self.buffer("p0", P))
            else:
                # P0 = (h / D) u_0, one batched product: the forward's P = (h / D) u_k less it is dp
                p0 = self.buffer("p0", P, P.dtype)
                torch.bmm(_flat(fwd.hidden[:-1]) / self.D, _flat(self.units0.u), out=_flat(p0))
                if p0.dtype != torch.float64:
                    p0 = self.buffer("p0", P).copy_(p0)
                dp = torch.sub(P, p0, out=self.buffer("dp", P))  # float64: exact for float32 P, P0
            self._moves = Moves(dp, p0, self.du_sq, self.v0_dv, self.dv_sq)
            self._fwd = fwd
        return self._moves

    def __call__(self, net: ResNet, fwd: Forward, cotangent: torch.Tensor, gated: torch.Tensor, q: torch.Tensor) -> None:
        """The step observer: add this step's increments to the per-unit sums (class docstring).
        New tensors, not in place: a Moves taken before the step keeps its values."""
        lr, D = self.lr, self.D
        dp, s = self.moves(fwd).dp, fwd.activated
        scratch, work = self.buffer("scratch", dp), self.buffer("work", q, q.dtype)
        vk_ds = _over_samples(q, s, scratch) * D  # sum_n (B V_k) S
        if self.history:  # B (v_k - v_0) = -lr (B B_{<k}^T) S_{<k}
            if self._rows == 0:
                bdv_ds = torch.zeros_like(vk_ds)
            else:
                bdv_ds = _over_samples(self._through_past(cotangent, "b", "s", -lr, work), s, scratch)
            v0_ds = vk_ds - bdv_ds
        else:
            torch.bmm(_flat(cotangent), _flat(self.units0.v), out=_flat(work))  # B v_0, working dtype
            v0_ds = _over_samples(work, s, scratch)  # sum_n (B v_0) S
            bdv_ds = vk_ds - v0_ds
        self.du_sq = self.du_sq + (-2.0 * lr * D) * _over_samples(dp, gated, scratch) \
            + lr * lr * _gram_form(fwd.hidden[:-1], gated, scratch, work)
        self.v0_dv = self.v0_dv - lr * v0_ds
        self.dv_sq = self.dv_sq - 2.0 * lr * bdv_ds + lr * lr * _gram_form(cotangent, s, scratch, work)
        if self.history:
            self._remember(fwd.hidden[:-1], gated, cotangent, s)

    def _remember(self, h: torch.Tensor, g: torch.Tensor, b: torch.Tensor, s: torch.Tensor) -> None:
        """Append this step's factors to the history (grown if more steps come than configured)."""
        k, N = self._rows, h.shape[2]
        for name, t in (("h", h), ("g", g), ("b", b), ("s", s)):
            past = self._past[name]
            if k + N > past.shape[1]:
                past = self._past[name] = torch.cat([past, torch.empty_like(past)], dim=1)
            past[:, k:k + N].copy_(_flat(t))
        self._rows = k + N


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
    dp = s.moves.dp  # the norm needs no squared temporary
    return torch.linalg.vector_norm(dp, dim=(0, 2, 3)) / (dp.numel() // dp.shape[1]) ** 0.5


def lin_ratio(s: Snapshot) -> torch.Tensor:
    """sqrt(sum ||phi(h, z_k) - phi(h, z_0) - d_z phi(h, z_0) dz||^2 / sum ||phi(h, z_k) - phi(h, z_0)||^2)
    for phi(h, z) = v sigma(u^T h / D), summed over layers, units and samples, in float64.

    With p0 = u_0^T h / D, dp = du^T h / D, a = sigma(p0 + dp) - sigma(p0) and e = a - sigma'(p0) dp
    (the second-order rest), the residual is v_0 e + dv a and the change v_0 a + dv sigma(p): written
    with the displacement dv, not as v_k and v_0 (whose combinations cancel to nothing in float32
    in the lazy regime), so only |v_0|^2, v_0 . dv and |dv|^2 per unit are needed.
    """
    act, m, base = s.net.activation, s.moves, s.base
    s0 = base.buffer("s0", m.p0)
    act.apply(m.p0, s0)
    # sigma(P) at the current units: the forward's own in float64, recomputed in float64 otherwise
    sk = s.fwd.activated
    if sk.dtype != torch.float64:
        sk = base.buffer("sk", m.p0).copy_(s.fwd.preact)
        act.apply(sk, sk)
    a = torch.sub(sk, s0, out=base.buffer("a", m.p0))
    e = base.buffer("e", m.p0)
    act.apply_derivative(m.p0, s0, e)
    e.mul_(m.dp)
    torch.sub(a, e, out=e)  # e = a - sigma'(p0) dp
    scratch = base.buffer("scratch", m.p0)
    ee, ea, aa = _over_samples(e, e, scratch), _over_samples(e, a, scratch), _over_samples(a, a, scratch)
    ask, sksk = _over_samples(a, sk, scratch), _over_samples(sk, sk, scratch)
    v0v0, v0dv, dvdv = base.v0_sq, m.v0_dv, m.dv_sq  # (L, R, M)
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
