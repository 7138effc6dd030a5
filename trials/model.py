"""The ResNet with two-layer-perceptron blocks and its gradient-descent step (docs/model.md sections 1-2).

Source: L. Chizat, "The Hidden Width of Deep ResNets" (arXiv:2509.10167), section 2, and the
companion paper Chaintron, Chizat, Maass (arXiv:2603.18168), section 5 (experiments).

Layer l = 1..L adds a residual branch of M units z = (u, v), u, v in R^D:

    p_j = u_j^T h / D,     h <- h + c * sum_j v_j sigma(p_j)

with residual scale c = alpha * L^-a * M^-b * D^-g.  The mean-field ("mlu") preset has
a = b = 1, g = 0, i.e. c = alpha / (L M) as in the paper.  Unit parameters start with entries
N(0, sigma_u^2 D) and N(0, sigma_v^2 D).

Learning-rate convention: each unit parameter takes the step
theta <- theta - eta * D / (2 c^2 L M) * dl/dtheta.  For mlu this is exactly the paper's
(eta / alpha^2) * (L M D / 2) * dl/dtheta, and for every preset it keeps the function's change
per step of order eta.  In backprop form (B = (D / 2) dl/dh, Q = V^T B / D) the update is
U_l -= lr_hat * H_{l-1} (sigma'(P_l) * Q_l)^T and V_l -= lr_hat * B_l sigma(P_l)^T with
lr_hat = eta / (c L M), summed over samples.

Repetitions (seeds) of one configuration are a leading batch axis: every tensor below carries
it, so R seeds cost one batched matrix product per layer, not R Python loops.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .config import UNIT_BLOCK, TrialConfig, resolve_device, stream_seed, torch_dtype
from .data import draw_data


def _flat(t: torch.Tensor) -> torch.Tensor:
    """(L, R, ...) -> (L * R, ...): every layer and repetition as one batch of matrices."""
    return t.reshape(t.shape[0] * t.shape[1], *t.shape[2:])


def _gelu_prime(p: torch.Tensor, _: torch.Tensor) -> torch.Tensor:
    cdf = 0.5 * (1.0 + torch.erf(p * 0.7071067811865476))
    pdf = torch.exp(-0.5 * p * p) * 0.3989422804014327
    return cdf + p * pdf


@dataclass(frozen=True)
class Activation:
    """sigma and its derivative, written out so that backprop needs no autograd. The derivative
    takes (p, sigma(p)): tanh' = 1 - tanh^2 then costs no second transcendental pass."""

    value: Callable[[torch.Tensor], torch.Tensor]
    derivative: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    value_into: Callable[[torch.Tensor, torch.Tensor], object] | None = None  # (p, out): no temporary
    derivative_into: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], object] | None = None  # (p, s, out)

    def apply(self, p: torch.Tensor, out: torch.Tensor) -> None:
        """out = sigma(p), in place."""
        if self.value_into is None:
            out.copy_(self.value(p))
        else:
            self.value_into(p, out)

    def apply_derivative(self, p: torch.Tensor, s: torch.Tensor, out: torch.Tensor) -> None:
        """out = sigma'(p) given s = sigma(p), in place."""
        if self.derivative_into is None:
            out.copy_(self.derivative(p, s))
        else:
            self.derivative_into(p, s, out)


def _tanh_prime_into(p: torch.Tensor, s: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    # not addcmul: fused, it rounds differently from 1 - s * s, which version-2 numbers used.
    # 1 - x in one pass (a 0-dim tensor broadcast), the same number as -x + 1 in two
    torch.mul(s, s, out=out)
    return torch.sub(_one(out.dtype), out, out=out)


_ONES: dict[torch.dtype, torch.Tensor] = {}


def _one(dtype: torch.dtype) -> torch.Tensor:
    """A 0-dim CPU tensor 1 of this dtype (a scalar operand on any device)."""
    one = _ONES.get(dtype)
    if one is None:
        one = _ONES[dtype] = torch.ones((), dtype=dtype)
    return one


ACTIVATIONS: dict[str, Activation] = {
    "tanh": Activation(torch.tanh, lambda p, s: 1.0 - s * s, lambda p, out: torch.tanh(p, out=out), _tanh_prime_into),
    "identity": Activation(lambda p: p, lambda p, s: torch.ones_like(p), lambda p, out: out.copy_(p)),
    "gelu": Activation(torch.nn.functional.gelu, _gelu_prime),
    "relu": Activation(torch.relu, lambda p, s: (p > 0).to(p.dtype), lambda p, out: torch.clamp(p, min=0, out=out)),
}


@dataclass
class Problem:
    """Data and frozen embeddings: everything the Mean ODE limit shares with a trial.

    Sample-major shapes (rows are samples, so the thin products below stream the weights
    row by row): x (N, d_in), y (N, d_out); embed W_E (D, d_in), readout W_U (D, d_out).
    """

    x: torch.Tensor
    y: torch.Tensor
    embed: torch.Tensor
    readout: torch.Tensor


def make_problem(config: TrialConfig, device: torch.device, dtype: torch.dtype) -> Problem:
    """Draw the synthetic data and embeddings from the problem seed alone.

    With coupled embeddings, W_E and W_U are drawn once at width ``coupled_dim`` and a model of
    width D uses their first D rows, so models of different D see the same directions.
    """
    p = config.problem
    gen = torch.Generator().manual_seed(stream_seed("problem", p.seed))
    f64 = torch.float64
    x, y = draw_data(p, gen)  # trials/data.py: gaussian by default, as before
    if p.independent_embeddings:  # each width its own draw (otherwise W_E's first rows agree across D)
        gen = torch.Generator().manual_seed(stream_seed(f"embeddings:{config.D}", p.seed))
    width = p.coupled_dim or config.D
    embed = torch.randn(width, p.d_in, generator=gen, dtype=f64) / p.d_in**0.5
    readout = torch.randn(width, p.d_out, generator=gen, dtype=f64) * p.d_out**0.5
    return Problem(*(t.to(device=device, dtype=dtype) for t in (x, y, embed[: config.D], readout[: config.D])))


@dataclass
class Units:
    """The trainable unit parameters, stacked as (L, R, D, M): layer, repetition, coordinate, unit."""

    u: torch.Tensor
    v: torch.Tensor

    def clone(self) -> "Units":
        return Units(self.u.clone(), self.v.clone())


Allocator = Callable[[tuple[int, ...], torch.dtype, torch.device], torch.Tensor]


def fresh(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The default ``Allocator``: a new uninitialized tensor."""
    return torch.empty(shape, dtype=dtype, device=device)


class Scratch:
    """An ``Allocator`` for one trial that hands out spare tensors of an earlier one.

    A worker trains many points of one shape in a row; every tensor of a trial is fresh memory
    whose first touch (page faults, zeroing by the kernel) cost about two bare steps per trial
    at (256, 256, 32). ``take`` hands out a spare of the same shape, dtype and device when there
    is one, else a new tensor, and remembers what it lent; after the trial ``lent`` are the
    spares of the next. Every tensor taken is uninitialized as far as the caller knows (like
    ``torch.empty``), so reuse changes no number. The first miss drops the remaining spares:
    a trial of another shape then holds no more memory than it would alone."""

    def __init__(self, spares: dict | None = None):
        self.spares: dict[tuple, list[torch.Tensor]] = spares or {}
        self.lent: list[torch.Tensor] = []

    def __call__(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        key = (tuple(shape), dtype, torch.device(device))
        stack = self.spares.get(key)
        if stack:
            tensor = stack.pop()
        else:
            self.spares.clear()
            tensor = torch.empty(shape, dtype=dtype, device=device)
        self.lent.append(tensor)
        return tensor

    def returned(self) -> dict[tuple, list[torch.Tensor]]:
        """What this trial lent, as the spares of the next one."""
        spares: dict[tuple, list[torch.Tensor]] = {}
        for tensor in self.lent:
            spares.setdefault((tuple(tensor.shape), tensor.dtype, tensor.device), []).append(tensor)
        return spares


def unit_blocks(L: int, D: int, drawn: int) -> list[tuple[int, int]]:
    """The layer ranges [start, stop) that draw from one stream each (``UNIT_BLOCK``)."""
    per_block = max(1, UNIT_BLOCK // (D * drawn))
    return [(start, min(start + per_block, L)) for start in range(0, L, per_block)]


def init_units(config: TrialConfig, seeds: tuple[int, ...], device: torch.device, dtype: torch.dtype,
               alloc: Allocator = fresh) -> Units:
    """Draw unit parameters: entries N(0, sigma_u^2 D) for u and N(0, sigma_v^2 D) for v.

    The numbers: in float64 on the CPU, numpy's SFC64 bit generator and its ziggurat normal
    sampler (``Generator.standard_normal``), one stream per (seed, tensor, block of layers)
    seeded by ``SeedSequence([stream_seed("units", seed), tensor, block])`` (tensor 0 is u, 1 is
    v; blocks from ``unit_blocks``), times sigma sqrt(D), then converted to the working dtype on
    the device. So a seed gives the same network on every device, dtype and number of threads,
    and on every host: SFC64's stream is fixed by numpy on every platform, and the sampler takes
    all but ~0.03 % of its numbers from integer operations and one multiplication (the tail
    beyond 3.65 sigma uses log1p; a wedge rejection compares against exp). Streams per block
    let every core draw (~8 ns per number and core, twice as fast as torch's float64 randn).

    With ``antithetic`` the second half of each layer's units mirrors the first: (u, v) and
    (u, -v). Each unit still has the law mu_0, and the branch output is exactly zero at init.
    """
    L, M, D = config.L, config.M, config.D
    drawn = M // 2 if config.antithetic else M
    # (L, R, D, M): a layer's weights for all seeds are one contiguous block
    u = alloc((L, len(seeds), D, M), dtype, device)
    v = alloc((L, len(seeds), D, M), dtype, device)
    blocks = unit_blocks(L, D, drawn)
    tasks = [(r, tensor, b) for r in range(len(seeds)) for tensor in range(2) for b in range(len(blocks))]

    def draw(task: tuple[int, int, int]) -> None:
        r, tensor, b = task
        (start, stop), out = blocks[b], (u, v)[tensor]
        entropy = [stream_seed("units", int(seeds[r])), tensor, b]
        buf = np.random.Generator(np.random.SFC64(entropy)).standard_normal((stop - start, D, drawn))
        buf *= (config.sigma_u, config.sigma_v)[tensor] * D**0.5
        block = torch.from_numpy(buf)
        out[start:stop, r, :, :drawn].copy_(block)
        if config.antithetic:
            out[start:stop, r, :, drawn:].copy_(block if tensor == 0 else block.neg_())

    # numpy's samplers and torch's copies release the GIL: the blocks draw in parallel threads
    workers = min(len(tasks), torch.get_num_threads())
    if workers > 1 and L * D * drawn >= 1 << 16:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(draw, tasks))
    else:
        for task in tasks:
            draw(task)
    return Units(u, v)


@dataclass
class Forward:
    """One forward pass, sample-major. hidden: (L + 1, R, N, D) block inputs h_0..h_L as rows;
    preact P: (L, R, N, M); activated sigma(P): (L, R, N, M); out: (R, N, d_out)."""

    hidden: torch.Tensor
    preact: torch.Tensor
    activated: torch.Tensor
    out: torch.Tensor


class ResNet:
    """The 2LP ResNet engine for one configuration and a batch of seeds.

    Holds the problem and the current units; ``forward`` and ``step`` work in place on them.
    Every product has the samples as rows: (N, D) @ (D, M) and (N, M) @ (M, D) stream a weight
    matrix once, which on CPUs is several times faster than the column-major (M, D) @ (D, N).
    """

    def __init__(self, config: TrialConfig, units: Units | None = None, alloc: Allocator = fresh):
        """Args: units: start from these (L, R, D, M) units instead of drawing the config's seeds;
        alloc: where the units and the step's buffers come from (``Scratch``: a pack's spares)."""
        self.config = config
        self.device = resolve_device(config.device)
        self.dtype = torch_dtype(config.dtype)
        self.seeds = config.seeds
        self.problem = make_problem(config, self.device, self.dtype)
        self.alloc = alloc
        self.units = init_units(config, self.seeds, self.device, self.dtype, alloc) if units is None else units
        self.activation = ACTIVATIONS[config.activation]
        self.scale = config.residual_scale
        self.lr_hat = config.lr / (self.scale * config.L * config.M)
        self._workspace: dict[str, torch.Tensor] = {}
        self._backprop_of: tuple[Forward, tuple[torch.Tensor, torch.Tensor]] | None = None  # ``backprop``'s last
        # Called as observer(net, fwd, cotangent, gated, q) inside ``step``, after the backward
        # sweep and before the in-place update (q = B V / D before gating): metrics.Baseline
        # uses it to keep its per-unit displacement sums up to date from the step's own factors.
        self.observer = None

    def _buffer(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        """A buffer reused from step to step: large fresh allocations cost page faults every
        step. A Forward's tensors are therefore only valid until the next forward or step."""
        buf = self._workspace.get(name)
        if buf is None or buf.shape != shape:
            buf = self._workspace[name] = self.alloc(shape, self.dtype, self.device)
        return buf

    @property
    def repetitions(self) -> int:
        return self.units.u.shape[1]

    def forward(self) -> Forward:
        cfg, units = self.config, self.units
        L, R, D, N = cfg.L, self.repetitions, cfg.D, cfg.problem.samples
        hidden = self._buffer("hidden", (L + 1, R, N, D))
        preact = self._buffer("preact", (L, R, N, cfg.M))
        activated = self._buffer("activated", (L, R, N, cfg.M))
        hidden[0] = self.problem.x @ self.problem.embed.T
        for layer in range(L):
            # P = (h / D) U: (R, N, D) @ (R, D, M) -> (R, N, M); dividing h is the cheaper side
            torch.bmm(hidden[layer] / D, units.u[layer], out=preact[layer])
            self.activation.apply(preact[layer], activated[layer])
            # h_l = h_{l-1} + c sigma(P) V^T: (R, N, M) @ (R, M, D) -> (R, N, D)
            torch.baddbmm(hidden[layer], activated[layer], units.v[layer].transpose(1, 2), alpha=self.scale, out=hidden[layer + 1])
        out = self.readout(hidden[L])
        return Forward(hidden, preact, activated, out)

    def readout(self, h_last: torch.Tensor) -> torch.Tensor:
        """f = W_U^T h_L / D, per sample: (R, N, D) -> (R, N, d_out)."""
        return torch.matmul(h_last, self.problem.readout) / self.config.D

    def loss(self, out: torch.Tensor) -> torch.Tensor:
        """Full-batch mean squared error per repetition: (R,)."""
        return ((out - self.problem.y) ** 2).mean(dim=(1, 2))

    def backward(self, fwd: Forward) -> Units:
        """Gradients dl/dU, dl/dV of each repetition's loss, shaped like the units."""
        cotangent, gated = self.backprop(fwd)
        factor = 2.0 * self.scale / self.config.D  # dl/dtheta = (2 c / D) * (backprop term)
        return Units(self._outer(fwd.hidden[:-1], gated) * factor, self._outer(cotangent, fwd.activated) * factor)

    def step(self, fwd: Forward) -> None:
        """One gradient-descent step, in place, from the forward pass at the current units:
        U_l -= lr_hat H_{l-1} G_l^T and V_l -= lr_hat B_l sigma(P_l)^T, all layers in two
        batched products once the backward sweep has produced every G_l and B_l."""
        cotangent, gated = self.backprop(fwd)
        if self.observer is not None:
            self.observer(self, fwd, cotangent, gated, self._workspace["q"])
        L, R, D, M = self.units.u.shape
        self._backprop_of = None  # the units move: a later sweep is another one
        self.units.u.view(L * R, D, M).baddbmm_(_flat(fwd.hidden[:-1]).transpose(1, 2), _flat(gated), alpha=-self.lr_hat)
        self.units.v.view(L * R, D, M).baddbmm_(_flat(cotangent).transpose(1, 2), _flat(fwd.activated), alpha=-self.lr_hat)

    def backprop(self, fwd: Forward) -> tuple[torch.Tensor, torch.Tensor]:
        """``_backprop`` of this forward pass, swept once: a metric that reads the backward states
        before the step (``backward_states``) leaves the step nothing to redo. Valid until the next
        step or forward pass, like the pass itself."""
        if self._backprop_of is None or self._backprop_of[0] is not fwd:
            self._backprop_of = (fwd, self._backprop(fwd))
        return self._backprop_of[1]

    def backward_states(self, fwd: Forward) -> torch.Tensor:
        """B_l = (D / 2) dl/dh_l at every block output l = 0..L, (L + 1, R, N, D) in the working dtype
        (the backward sweep's B_1..B_L and B_0 = B_1 + c G_1 U_1^T, which no update needs)."""
        cotangent, gated = self.backprop(fwd)
        L, R, N, D = cotangent.shape
        states = torch.empty((L + 1, R, N, D), dtype=cotangent.dtype, device=cotangent.device)
        states[1:] = cotangent
        torch.baddbmm(cotangent[0], gated[0], self.units.u[0].transpose(1, 2), alpha=self.scale, out=states[0])
        return states

    @staticmethod
    def _outer(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """Per layer and repetition, left^T @ right summed over samples: (L, R, N, D) x (L, R, N, M) -> (L, R, D, M)."""
        L, R = left.shape[:2]
        return torch.bmm(_flat(left).transpose(1, 2), _flat(right)).view(L, R, left.shape[3], right.shape[3])

    def _backprop(self, fwd: Forward) -> tuple[torch.Tensor, torch.Tensor]:
        """The backward sweep. Returns B_l = (D / 2) dl/dh_l at each block's output, (L, R, N, D),
        and G_l = sigma'(P_l) * B_l V_l / D, (L, R, N, M), from the units before any update."""
        cfg, units = self.config, self.units
        D, c = cfg.D, self.scale
        d_out, N = cfg.problem.d_out, cfg.problem.samples
        cotangent = self._buffer("cotangent", tuple(fwd.hidden[1:].shape))
        gated = self._buffer("gated", tuple(fwd.preact.shape))
        q = self._buffer("q", tuple(fwd.preact.shape)) if self.observer is not None else None
        self.activation.apply_derivative(fwd.preact, fwd.activated, gated)  # becomes G in place, layer by layer
        # B_L = (D / 2) dl/dh_L, with l = ||f - y||^2 / (N d_out) and f = W_U^T h / D.
        cotangent[-1] = torch.matmul(fwd.out - self.problem.y, self.problem.readout.T) / (N * d_out)
        for layer in reversed(range(cfg.L)):
            b = cotangent[layer]
            if q is None:
                gated[layer].mul_(torch.bmm(b / D, units.v[layer]))  # B V / D: (R, N, D) @ (R, D, M)
            else:  # the same product, kept for the observer
                gated[layer].mul_(torch.bmm(b / D, units.v[layer], out=q[layer]))
            if layer:
                # B_{l-1} = B_l + c G_l U_l^T
                torch.baddbmm(b, gated[layer], units.u[layer].transpose(1, 2), alpha=c, out=cotangent[layer - 1])
        return cotangent, gated

    def trajectory(self):
        """Yield (k, forward pass at step k) for k = 0..K, taking a GD step after each but the
        last. The consumer reads the pass (metrics, outputs) before the next step mutates it."""
        for k in range(self.config.steps + 1):
            fwd = self.forward()
            yield k, fwd
            if k < self.config.steps:
                self.step(fwd)

    def step_size(self) -> float:
        """The per-parameter learning rate eta * D / (2 c^2 L M) that multiplies dl/dtheta."""
        cfg = self.config
        return cfg.lr * cfg.D / (2.0 * self.scale**2 * cfg.L * cfg.M)
