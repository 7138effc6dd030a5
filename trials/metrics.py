"""The per-step metrics of docs/model.md section 4, one name -> function registry.

Every function takes a ``Snapshot`` (one forward pass at step k, the units at step 0 and the
reference at step k) and returns one value per repetition: a tensor of shape (R,).

- err_out, err_hidden: RMS distance to the reference's output and last hidden state.
- feature_update: RMS over units (l, j) and samples n of (u_{l,j,k} - u_{l,j,0})^T h_{l-1,k} / D,
  the change of each unit's preactivation due to its own weights, at its current input.
- lin_ratio: the local linearization error of the block around the initial units, at the current
  input, relative to the block's change (0 when nothing moved).
- output_change: RMS of f_k - f_0; weight_change: ||theta_k - theta_0|| / ||theta_0|| over all units.

``GRAMS`` holds, for err_out and err_hidden, the seeds' Gram matrix of the errors: with
e_s = f_s - f_ref (n entries), G[s, t] = <e_s, e_t> / n, an (R, R) float64 tensor whose diagonal
is the metric squared. Sums of its entries give the seed-mean's distance to the reference (the
bias) apart from the seeds' spread around it (the fluctuation), for any subset of the seeds.

``DEPTH_METRICS`` compare the states along depth with a reference that gives its depth path
(kind joint_limit): each takes a ``DepthSnapshot`` and returns (R,) float64, the mean over samples
and coordinates of |state_l - state_ref(l / L)| at every block output l = 0..L reduced over l.
They are the companion paper's own errors (its notebook exp_cvg_rate.ipynb): err_hidden_depthmax
(their max_hs_track), err_hidden_depthmean (mean_hs_track) and err_backward (max_bs_track, on the
backward states B = (D / 2) dl/dh; docs/store.md says how theirs is normalised).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import torch

from .config import METRICS_BLOCK
from .model import Activation, Forward, ResNet
from .units import Units

F64 = torch.float64
BLOCK = METRICS_BLOCK  # elements taken at once (trials.config)
TANH_SERIES = 0.1  # |dp| below which the float32 tanh path takes tanh(dp) - dp from its series


def rms(x: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return x.square().mean(dim=dims).sqrt()


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype == F64 else t.to(F64)


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(t.shape[0] * t.shape[1], *t.shape[2:])


def _unit_sums(a: torch.Tensor, b: torch.Tensor, product: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Per-unit sums over dim 2 (the samples, or a unit's D coordinates) of a * b, (l, R, N, M) x2
    -> (l, R, M), into float64 ``out``, computed in the inputs' dtype: these are norms and dot
    products whose terms carry the working precision already (the differences that cancel are
    taken before, in float64 where needed)."""
    torch.mul(a, b, out=product)
    return torch.sum(product, dim=2, out=out) if product.dtype == F64 else out.copy_(product.sum(dim=2))


def unit_norms_sq(w: torch.Tensor, copy_into: torch.Tensor | None = None) -> torch.Tensor:
    """Per unit |w_j|^2 of weights (L, R, D, M) -> (L, R, M), float64, about BLOCK elements at a
    time: the square of the whole array would be a weight-sized temporary (page faults: at
    (64, 1024, 256) this took 5 steps). With ``copy_into`` (shaped like w), w is also copied
    there, block by block, and the norms are taken from the block just written, still in cache:
    one read of the weights for both (the same numbers as a copy, then the norms)."""
    L, R, D, M = w.shape
    flat = w.reshape(L * R, 1, D, M)
    copy = None if copy_into is None else copy_into.view(L * R, 1, D, M)
    out = torch.empty(L * R, 1, M, dtype=F64, device=w.device)
    rows = max(1, BLOCK // (D * M))
    product = torch.empty(rows, 1, D, M, dtype=w.dtype, device=w.device)
    for lo in range(0, L * R, rows):
        block = flat[lo:lo + rows]
        if copy is not None:
            block = copy[lo:lo + rows].copy_(block)
        _unit_sums(block, block, product[: block.shape[0]], out[lo:lo + rows])
    return out.view(L, R, M)


def _gram(rows: torch.Tensor, scale: float) -> torch.Tensor:
    """scale * rows rows^T per layer and repetition: (l, R, N, width) -> (l R, N, N)."""
    flat = _flat(rows)
    return torch.bmm(flat, flat.transpose(1, 2)).mul_(scale)


@dataclass
class Moves:
    """The units' displacement since step 0 at one forward pass: dp = (u_k - u_0)^T h_k / D,
    (L, R, N, M) in the working dtype, and per unit |du|^2, v_0 . dv and |dv|^2, (L, R, M) in
    float64, with du = u_k - u_0, dv = v_k - v_0. The baseline's own tensors, valid until the
    next step."""

    dp: torch.Tensor
    du_sq: torch.Tensor
    v0_dv: torch.Tensor
    dv_sq: torch.Tensor


class Baseline:
    """What every step is compared with, computed once per trial, and the per-unit sums of the
    displacement since then, kept up to date by the steps themselves.

    Created after the first forward pass, before the first step, it attaches itself to the net
    as its step observer. Each step adds its increments du = -a H^T G, dv = -b B^T S
    ((a, b) = the net's (lr_hat_u, lr_hat_v), equal under the mean-field step; rank N per layer) to
    the float64 sums |du|^2, v_0 . dv and |dv|^2 per unit, each from one sum over the samples of
    (N, M)-sized quantities the step has anyway:
        |du_k + du|^2 - |du_k|^2 = sum_n G (a^2 (H H^T) G - 2 a D dp),
        v_0 . dv = -b sum_n (B v_0) S,  B v_0 = B V_k - B (v_k - v_0),
        |dv_k + dv|^2 - |dv_k|^2 = sum_n S (b^2 (B B^T) S - 2 b B (v_k - v_0)),
    (the (N, N) Gram matrices scaled, the bracket one batched product added to its last term), so
    no weight-sized difference or per-unit sum over D is ever taken. What remains is the
    displacement seen through the current factors, dp = (u_k - u_0)^T h_k / D and B (v_k - v_0),
    obtained in one of two ways (``history``, fixed per trial from its shape):

    - from the history of the updates (when K N (D + M) <= D M, i.e. when storing every step's
      H, G, B, S costs no more than a copy of u_0): u_k - u_0 = -a sum_s H_s^T G_s, so
      dp = -(a / D) (h_k H_{<k}^T) G_{<k} and B (v_k - v_0) = -b (B B_{<k}^T) S_{<k},
      products of (N, k N) and (k N, M) matrices; u_0 and v_0 are never read again. The
      displacement is then computed directly, to a relative precision of the working dtype, with
      no cancellation whatever alpha is;
    - from the step-0 units (otherwise): P0 = H u_0 / D (one weight-sized product per metric step)
      and B v_0 (one per step), dp = P - P0 and B (v_k - v_0) = B V_k - B v_0. In float32 these
      differences carry an absolute error of a few ulps of P and B V, i.e. a relative error of
      about eps * alpha in the lazy regime (1e-3 at alpha = 65536).

    The step's (L, R, N, M) work, like the metrics' (``local_sums``), goes through the layers in
    blocks of about BLOCK elements, so that its temporaries stay in cache."""

    def __init__(self, net: ResNet, out0: torch.Tensor, units0: Units | None = None, history: bool | None = None):
        """Args: units0: the step-0 units if already cloned (else cloned here when needed);
        history: force the way dp is obtained (class docstring); None chooses from the shape."""
        cfg = net.config
        L, R, D, M = net.units.u.shape
        N = net.problem.x.shape[0]
        # another optimizer than plain gradient descent moves the units by no rank-N increment: the
        # sums are taken from the units themselves (``direct``), against a copy of the step-0 units
        self.direct = not cfg.plain_gd
        self.units = net.units  # the current units (views the steps move in place)
        if self.direct:
            history = False
        self.history = cfg.steps * N * (D + M) <= D * M if history is None else history
        start = net.units if units0 is None else units0
        self.alloc = net.alloc
        if self.history or units0 is not None:
            self.units0 = units0 if not self.history else None
            u0_sq, self.v0_sq = unit_norms_sq(start.u), unit_norms_sq(start.v)  # (L, R, M)
        else:  # a copy of u_0, v_0 in the net's memory (a pack's spares), its norms on the way
            self.units0 = Units(*(self.alloc(t.shape, t.dtype, t.device) for t in (net.units.u, net.units.v)))
            u0_sq = unit_norms_sq(net.units.u, copy_into=self.units0.u)
            self.v0_sq = unit_norms_sq(net.units.v, copy_into=self.units0.v)
        self.out0 = out0
        (self.lr, self.lr_v), self.D = net.lr_hat, D  # (lr_hat_u, lr_hat_v)
        self.device = start.u.device
        zeros = torch.zeros(L, R, M, dtype=F64, device=self.device)
        self.size0_sq = (u0_sq + self.v0_sq).sum(dim=(0, 2))  # (R,)
        self.du_sq, self.v0_dv, self.dv_sq = zeros, zeros.clone(), zeros.clone()
        self._block = max(1, BLOCK // (R * N * M))  # layers per block
        self.blocks = [(lo, min(lo + self._block, L)) for lo in range(0, L, self._block)]
        self._fwd: Forward | None = None
        self._moves: Moves | None = None
        self._buffers: dict[tuple[str, torch.dtype], torch.Tensor] = {}
        self._rows = 0  # history rows filled: N per step taken
        if self.history:  # (L R, K N, D or M): every step's H, G, B, S, stacked along the samples
            self._past = {name: self.alloc((L * R, max(cfg.steps, 1) * N, width), net.dtype, self.device)
                          for name, width in (("h", D), ("g", M), ("b", D), ("s", M))}
        net.observer = self

    def buffer(self, name: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """A scratch tensor reused from step to step (valid until the next step's metrics): a fresh
        one of this size would cost page faults every time."""
        buf = self._buffers.get((name, dtype))
        if buf is None or buf.shape != shape:
            buf = self._buffers[(name, dtype)] = self.alloc(shape, dtype, self.device)
        return buf

    def scratch(self, name: str, block: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """A scratch tensor shaped like ``block``, a block of layers (``blocks``) of an (L, ...) array."""
        return self.buffer(name, (self._block, *block.shape[1:]), dtype or block.dtype)[: block.shape[0]]

    def _through_past(self, rows: torch.Tensor, first: int, left: str, right: str, scale: float, out: torch.Tensor) -> torch.Tensor:
        """rows (l, R, N, width) of the layers from ``first`` on, times their stored updates:
        scale (rows past[left]^T) past[right] into ``out`` (l, R, N, M), per layer and repetition an
        (N, k N) @ (k N, M) product (the scale on the small factor), taken as one (N, N) @ (N, M)
        product per past step accumulated into ``out``, a block of layers that stays in cache: 12 -
        25 % faster with MKL on CPUs than the one product over all layers."""
        k, R, N = self._rows, rows.shape[1], rows.shape[2]
        batch = slice(first * R, (first + rows.shape[0]) * R)
        cross = torch.bmm(_flat(rows), self._past[left][batch, :k].transpose(1, 2)).mul_(scale)  # (l R, N, k N)
        flat, past = _flat(out), self._past[right][batch]
        torch.bmm(cross[:, :, :N], past[:, :N], out=flat)
        for row in range(N, k, N):
            flat.baddbmm_(cross[:, :, row:row + N], past[:, row:row + N])
        return out

    def moves(self, fwd: Forward) -> Moves:
        """The displacement at this forward pass (cached for it: the step reuses dp)."""
        if fwd is not self._fwd:
            P = fwd.preact
            dp = self.buffer("dp", tuple(P.shape), P.dtype)
            if self.history and self._rows == 0:
                dp.zero_()
            else:
                for lo, hi in self.blocks:
                    h, block = fwd.hidden[lo:hi], dp[lo:hi]
                    if self.history:  # dp = -(lr / D) (h H_{<k}^T) G_{<k}
                        self._through_past(h, lo, "h", "g", -self.lr / self.D, block)
                    else:  # P0 = (h / D) u_0: the forward's P less it is dp
                        torch.bmm(_flat(h) / self.D, _flat(self.units0.u[lo:hi]), out=_flat(block))
                        torch.sub(P[lo:hi], block, out=block)
            if self.direct:
                self._direct_sums()
            self._moves = Moves(dp, self.du_sq, self.v0_dv, self.dv_sq)
            self._fwd = fwd
        return self._moves

    def _direct_sums(self) -> None:
        """|du|^2, v_0 . dv and |dv|^2 per unit from the current units and the step-0 copy (``direct``)."""
        for lo, hi in self.blocks:
            du = _f64(self.units.u[lo:hi]) - _f64(self.units0.u[lo:hi])
            v0 = _f64(self.units0.v[lo:hi])
            dv = _f64(self.units.v[lo:hi]) - v0
            self.du_sq[lo:hi] = du.square().sum(dim=2)
            self.v0_dv[lo:hi] = (v0 * dv).sum(dim=2)
            self.dv_sq[lo:hi] = dv.square().sum(dim=2)

    def __call__(self, net: ResNet, fwd: Forward, cotangent: torch.Tensor, gated: torch.Tensor, q: torch.Tensor) -> None:
        """The step observer: add this step's increments to the per-unit sums (class docstring),
        in place: a Moves is valid until the next step. With ``direct`` nothing: ``moves`` takes the
        sums from the units."""
        if self.direct:
            return
        lr, lr_v, D, N = self.lr, self.lr_v, self.D, gated.shape[2]
        dp = self.moves(fwd).dp
        if self.history and self._rows + N > self._past["h"].shape[1]:  # more steps than configured
            self._past = {name: torch.cat([past, torch.empty_like(past)], dim=1) for name, past in self._past.items()}
        du, v0, dv = self.buffer("increments", (3, *self.du_sq.shape), F64)
        for lo, hi in self.blocks:
            h, g, b, s, x = (t[lo:hi] for t in (fwd.hidden, gated, cotangent, fwd.activated, q))
            work, product = self.scratch("work", g), self.scratch("product", g)
            torch.baddbmm(_flat(dp[lo:hi]), _gram(h, lr * lr), _flat(g), beta=-2.0 * lr * D, out=_flat(work))
            _unit_sums(work, g, product, du[lo:hi])
            if not self.history:  # B (v_k - v_0) = D q - B v_0, q = B V_k / D
                torch.baddbmm(_flat(x), _flat(b), _flat(self.units0.v[lo:hi]), beta=D, alpha=-1.0, out=_flat(work))
            elif self._rows == 0:
                work.zero_()
            else:  # B (v_k - v_0) = -lr (B B_{<k}^T) S_{<k}
                self._through_past(b, lo, "b", "s", -lr_v, work)
            _unit_sums(torch.sub(x, work, alpha=1.0 / D, out=product), s, product, v0[lo:hi])  # (B v_0 / D) S
            _flat(work).baddbmm_(_gram(b, lr_v * lr_v), _flat(s), beta=-2.0 * lr_v)
            _unit_sums(work, s, product, dv[lo:hi])
            if self.history:
                for name, t in (("h", h), ("g", g), ("b", b), ("s", s)):
                    self._past[name][lo * t.shape[1]:hi * t.shape[1], self._rows:self._rows + N].copy_(_flat(t))
        self.du_sq.add_(du)
        self.v0_dv.add_(v0, alpha=-lr_v * D)
        self.dv_sq.add_(dv)
        if self.history:
            self._rows += N


def _exact_expansion(act: Activation, P: torch.Tensor, dp: torch.Tensor, sk: torch.Tensor, base: Baseline):
    """a = sigma(P) - sigma(p0) and e = a - sigma'(p0) dp at p0 = P - dp, sigma evaluated in
    float64 (for float32 P and dp at P and at P - dp exactly), for one block of layers.
    Returns a, e and sigma(P), in float64."""
    p0, s0 = base.scratch("p0", P, F64), base.scratch("s0", P, F64)
    if P.dtype == F64:
        torch.sub(P, dp, out=p0)
    else:  # the forward's float32 sigma(P) is too coarse for the difference a
        sk = base.scratch("sk", P, F64).copy_(P)
        torch.sub(sk, dp, out=p0)
        act.apply(sk, sk)
    act.apply(p0, s0)
    a = torch.sub(sk, s0, out=base.scratch("a", P, F64))
    e = base.scratch("e", P, F64)
    act.apply_derivative(p0, s0, e)
    return a, torch.addcmul(a, e, dp, value=-1.0, out=e), sk


def _tanh_into(x: torch.Tensor, out: torch.Tensor, work: torch.Tensor) -> torch.Tensor:
    """tanh(x) = E / (E + 2), E = expm1(2 x), into ``out`` (may be x): a third cheaper than torch.tanh
    in float32 on CPUs, to an ulp or two (x clamped at 20: tanh(20) = 1 - 1e-17)."""
    torch.clamp(x, max=20.0, out=out).mul_(2.0).expm1_()
    return out.div_(torch.add(out, 2.0, out=work))


def _tanh_expansion(act: Activation, P: torch.Tensor, dp: torch.Tensor, sk: torch.Tensor, base: Baseline):
    """_exact_expansion for tanh in float32, all in float32. With t = tanh(dp), s0 = tanh(p0),
    sk = s0 + a and d = t - dp:
        a = tanh(P) - tanh(p0) = t (1 - sk s0),   e = a - (1 - s0^2) dp = d - s0 (s0 d + t a),
    no cancellation left but in d (|d| ~ |dp|^3 / 3, while t carries an error of an ulp or two of
    dp): below TANH_SERIES it comes from the series -dp^3 / 3 + 2 dp^5 / 15 - 17 dp^7 / 315
    (relative error < 1e-7), above from t - dp (relative error < 3 ulp / TANH_SERIES^2 ~ 4e-5;
    in e, where it weighs against s0 t a ~ s0 dp^2, < 2e-6 / |s0|)."""
    work = base.scratch("work", P)
    t = _tanh_into(dp, base.scratch("t", P), work)
    x = torch.clamp(dp, -TANH_SERIES, TANH_SERIES, out=base.scratch("e", P))  # the series' argument
    small = torch.eq(x, dp, out=work)  # 1 where the series holds, else 0 (a blend: where is slow)
    x2 = torch.mul(x, x, out=base.scratch("s0", P))
    series = torch.mul(x2, -17.0 / 315.0, out=base.scratch("d", P)).add_(2.0 / 15.0).mul_(x2).sub_(1.0 / 3.0)
    series.mul_(x2).mul_(x)
    d = torch.lerp(torch.sub(t, dp, out=x), series, small, out=series)
    s0 = _tanh_into(torch.sub(P, dp, out=x2), x2, work)
    a = torch.mul(t, sk, out=base.scratch("a", P))
    torch.addcmul(t, a, s0, value=-1.0, out=a)
    e = torch.mul(s0, d, out=base.scratch("e", P))
    e.addcmul_(t, a)
    return a, torch.addcmul(d, s0, e, value=-1.0, out=e), sk


@dataclass
class Local:
    """Sums over the (L, R, N, M) arrays of one forward pass, in float64: dp_sq, |dp|^2 per
    repetition (R,); products, (5, L, R, M), the per-unit sums over the samples of e e, e a, a a,
    a sigma(P) and sigma(P)^2 (lin_ratio's notation), a baseline buffer valid until the next
    step's metrics."""

    dp_sq: torch.Tensor
    products: torch.Tensor


def local_sums(net: ResNet, fwd: Forward, base: Baseline, moves: Moves) -> Local:
    """feature_update's and lin_ratio's sums, in one sweep through the layers (``Baseline.blocks``)."""
    dp = moves.dp
    L, R, _, M = dp.shape
    expansion = _tanh_expansion if dp.dtype != F64 and net.config.activation == "tanh" else _exact_expansion
    products = base.buffer("products", (5, L, R, M), F64)
    dp_sq = torch.zeros(R, dtype=F64, device=dp.device)
    for lo, hi in base.blocks:
        a, e, sk = expansion(net.activation, fwd.preact[lo:hi], dp[lo:hi], fwd.activated[lo:hi], base)
        product = base.scratch("product", a)
        for i, (x, y) in enumerate(((e, e), (e, a), (a, a), (a, sk), (sk, sk))):
            _unit_sums(x, y, product, products[i, lo:hi])
        dp_sq += torch.linalg.vector_norm(dp[lo:hi], dim=(2, 3)).to(F64).square().sum(dim=0)  # float64 over layers
    return Local(dp_sq, products)


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
        """The displacement shared by feature_update, lin_ratio and weight_change."""
        return self.base.moves(self.fwd)

    @cached_property
    def local(self) -> Local:
        """The sums over samples shared by feature_update and lin_ratio."""
        return local_sums(self.net, self.fwd, self.base, self.moves)


def err_out(s: Snapshot) -> torch.Tensor:
    return rms(s.fwd.out - s.ref_out, (1, 2))


def err_hidden(s: Snapshot) -> torch.Tensor:
    return rms(s.fwd.hidden[-1] - s.ref_hidden, (1, 2))


def loss(s: Snapshot) -> torch.Tensor:
    return s.net.loss(s.fwd.out)


def feature_update(s: Snapshot) -> torch.Tensor:
    dp = s.moves.dp
    return (s.local.dp_sq / (dp.numel() // dp.shape[1])).sqrt()


def lin_ratio(s: Snapshot) -> torch.Tensor:
    """sqrt(sum ||phi(h, z_k) - phi(h, z_0) - d_z phi(h, z_0) dz||^2 / sum ||phi(h, z_k) - phi(h, z_0)||^2)
    for phi(h, z) = v sigma(u^T h / D), summed over layers, units and samples, in float64.

    With p0 = u_0^T h / D, dp = du^T h / D, a = sigma(p0 + dp) - sigma(p0) and e = a - sigma'(p0) dp
    (the second-order rest), the residual is v_0 e + dv a and the change v_0 a + dv sigma(p): written
    with the displacement dv, not as v_k and v_0 (whose combinations cancel to nothing in float32
    in the lazy regime), so only |v_0|^2, v_0 . dv and |dv|^2 per unit are needed. a and e come
    from ``local_sums``: without cancellation for tanh in float32, from sigma in float64 otherwise.
    """
    m = s.moves
    ee, ea, aa, ask, sksk = s.local.products  # (L, R, M) each
    v0v0, v0dv, dvdv = s.base.v0_sq, m.v0_dv, m.dv_sq
    weighted = s.base.buffer("weighted", tuple(v0v0.shape), F64)
    num = torch.mul(v0v0, ee, out=weighted).addcmul_(v0dv, ea, value=2.0).addcmul_(dvdv, aa).sum(dim=(0, 2))
    den = torch.mul(v0v0, aa, out=weighted).addcmul_(v0dv, ask, value=2.0).addcmul_(dvdv, sksk).sum(dim=(0, 2))
    ratio = num.clamp_min(0).sqrt() / den.clamp_min(0).sqrt()
    return torch.where(den > 0, ratio, torch.zeros_like(ratio))


def output_change(s: Snapshot) -> torch.Tensor:
    return rms(_f64(s.fwd.out) - _f64(s.base.out0), (1, 2))


def weight_change(s: Snapshot) -> torch.Tensor:
    moved = s.moves.du_sq.sum(dim=(0, 2)) + s.moves.dv_sq.sum(dim=(0, 2))
    return (moved / s.base.size0_sq).sqrt()


def error_gram(errors: torch.Tensor) -> torch.Tensor:
    """G[s, t] = <e_s, e_t> / n for errors (R, ...) of n entries per repetition: one (R, R) product
    in float64 (the bias is a difference of these sums, small against each when the seeds spread
    more than their mean misses, so working precision would not do)."""
    flat = _f64(errors).reshape(errors.shape[0], -1)
    return flat @ flat.T / flat.shape[1]


def gram_out(s: Snapshot) -> torch.Tensor:
    return error_gram(_f64(s.fwd.out) - _f64(s.ref_out))


def gram_hidden(s: Snapshot) -> torch.Tensor:
    return error_gram(_f64(s.fwd.hidden[-1]) - _f64(s.ref_hidden))


GRAMS: dict[str, Callable[[Snapshot], torch.Tensor]] = {"gram_out": gram_out, "gram_hidden": gram_hidden}

@dataclass
class DepthSnapshot:
    """One step's states along depth and the reference's at the same depths s = l / L, float64 on
    the trial's device: along_hidden, along_backward (L + 1, N, D); along_backward None when the
    reference does not give it (a record made before it stored it)."""

    net: ResNet
    fwd: Forward
    along_hidden: torch.Tensor
    along_backward: torch.Tensor | None

    @cached_property
    def hidden_by_depth(self) -> torch.Tensor:
        """(L + 1, R): mean |h_l - h_ref(l / L)| over samples and coordinates."""
        return depth_mean_abs(self.fwd.hidden, self.along_hidden)

    @cached_property
    def backward_by_depth(self) -> torch.Tensor | None:
        """(L + 1, R): mean |B_l - b_ref(l / L)| over samples and coordinates, or None."""
        if self.along_backward is None:
            return None
        return depth_mean_abs(self.net.backward_states(self.fwd), self.along_backward)


def depth_mean_abs(states: torch.Tensor, along: torch.Tensor) -> torch.Tensor:
    """Mean over samples and coordinates of |states_l - along_l|, in float64: (L+1, R, N, D) and
    (L+1, N, D) -> (L+1, R)."""
    return (_f64(states) - along[:, None]).abs_().mean(dim=(2, 3))


def err_hidden_depthmax(s: DepthSnapshot) -> torch.Tensor:
    """max over l = 0..L of the mean over samples and coordinates of |h_l - h_ref(l / L)|."""
    return s.hidden_by_depth.amax(dim=0)


def err_hidden_depthmean(s: DepthSnapshot) -> torch.Tensor:
    """The mean over l = 0..L (L + 1 block outputs, h_0 included) of the same."""
    return s.hidden_by_depth.mean(dim=0)


def err_backward(s: DepthSnapshot) -> torch.Tensor | None:
    """max over l = 0..L of the mean over samples and coordinates of |B_l - b_ref(l / L)|, B_l the
    engine's backward state (D / 2) dl/dh_l at block output l (``ResNet.backward_states``)."""
    by_depth = s.backward_by_depth
    return None if by_depth is None else by_depth.amax(dim=0)


DEPTH_METRICS: dict[str, Callable[[DepthSnapshot], torch.Tensor | None]] = {
    "err_hidden_depthmax": err_hidden_depthmax,
    "err_hidden_depthmean": err_hidden_depthmean,
    "err_backward": err_backward,
}

METRICS: dict[str, Callable[[Snapshot], torch.Tensor]] = {
    "err_out": err_out,
    "err_hidden": err_hidden,
    "loss": loss,
    "feature_update": feature_update,
    "lin_ratio": lin_ratio,
    "output_change": output_change,
    "weight_change": weight_change,
}
