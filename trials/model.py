"""The ResNet with two-layer-perceptron blocks and its gradient-descent step (docs/model.md sections 1-2).

Source: L. Chizat, "The Hidden Width of Deep ResNets" (arXiv:2509.10167), section 2, and the
companion paper Chaintron, Chizat, Maass (arXiv:2603.18168), section 5 (experiments).

Layer l = 1..L adds a residual branch of M units z = (u, v), u, v in R^D:

    p_j = u_j^T h / D,     h <- h + c * sum_j v_j sigma(p_j)

with residual scale c = alpha * L^-a * M^-b * D^-g.  The mean-field ("mlu") preset has
a = b = 1, g = 0, i.e. c = alpha / (L M) as in the paper.  Unit parameters start with entries
N(0, sigma_u^2 D) and N(0, sigma_v^2 D).

Learning-rate convention (``lr_scaling``, docs/model.md section 2): with mean_field (the default)
each unit parameter takes the step theta <- theta - eta * D / (2 c^2 L M) * dl/dtheta.  For mlu
this is exactly the paper's (eta / alpha^2) * (L M D / 2) * dl/dtheta, and for every preset it
keeps the function's change per step of order eta.  In backprop form (B = (D / 2) dl/dh,
Q = V^T B / D) the update is U_l -= lr_hat_u * H_{l-1} (sigma'(P_l) * Q_l)^T and
V_l -= lr_hat_v * B_l sigma(P_l)^T, summed over samples, with lr_hat_u = lr_hat_v = eta / (c L M).
With raw, plain SGD on the effective weights W1 = U / D and W2 = c V, lr_hat_u = 2 lr c D and
lr_hat_v = 2 lr / (c D) (``TrialConfig.step_sizes``).

Repetitions (seeds) of one configuration are a leading batch axis: every tensor below carries
it, so R seeds cost one batched matrix product per layer, not R Python loops. The points of a
pack that share a shape (``ResNet.fused``) share that axis too: (point, seed).
The units' draw and the memory they live in are in trials/units.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from .config import TrialConfig, resolve_device, stream_seed, torch_dtype
from .data import draw_data, draw_test
from .optimizers import OPTIMIZERS
from .units import Allocator, UnitDraw, Units, draw_units, fresh, init_units


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
    # the held-out set (trials/data.py ``draw_test``): inputs (N_test, d_in), noisy targets and the
    # teacher's clean outputs (N_test, d_out); None without test samples
    test: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None


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
    test = draw_test(p)
    if test is not None:
        test = tuple(t.to(device=device, dtype=dtype) for t in test)
    return Problem(*(t.to(device=device, dtype=dtype) for t in (x, y, embed[: config.D], readout[: config.D])), test)


@dataclass
class Forward:
    """One forward pass, sample-major. hidden: (L + 1, R, N, D) block inputs h_0..h_L as rows;
    preact P: (L, R, N, M); activated sigma(P): (L, R, N, M); out: (R, N, d_out)."""

    hidden: torch.Tensor
    preact: torch.Tensor
    activated: torch.Tensor
    out: torch.Tensor


@dataclass(frozen=True)
class Slot:
    """One point's place in a batch: its repetitions lo:hi of the batch axis, its problem and
    its scalars (residual scale c and the step sizes (lr_hat_u, lr_hat_v), ``TrialConfig.step_sizes``)."""

    lo: int
    hi: int
    problem: Problem
    scale: float
    lr_hat: tuple[float, float]
    # the point's optimizer and its (u, v) trials.optimizers.Scalars; None: plain gradient descent
    # (no weight decay), stepped by the products of ``update`` as before the optimizers existed
    optimizer: tuple[str, tuple] | None = None


def _slot_optimizer(config: TrialConfig) -> tuple[str, tuple] | None:
    """``Slot.optimizer`` of a point: None for plain gradient descent."""
    return None if config.plain_gd else (config.optimizer, config.optimizer_scalars())


def _runs(slots: tuple[Slot, ...], name: str) -> list[tuple[int, int, object]]:
    """(lo, hi, value) over consecutive slots with one value of a scalar: one batched call each."""
    runs: list[tuple[int, int, float]] = []
    for slot in slots:
        value = getattr(slot, name)
        if runs and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], slot.hi, value)
        else:
            runs.append((slot.lo, slot.hi, value))
    return runs


class ResNet:
    """The 2LP ResNet engine for one configuration and a batch of seeds, or for a pack of
    configurations of one shape (``fused``) whose seeds are one batch.

    Holds the problem and the current units; ``forward`` and ``step`` work in place on them.
    Every product has the samples as rows: (N, D) @ (D, M) and (N, M) @ (M, D) stream a weight
    matrix once, which on CPUs is several times faster than the column-major (M, D) @ (D, N).

    The batch axis (R) holds slots (``Slot``): one for a single configuration, one per point of a
    pack. A product that takes a point's scalar (c or lr_hat) runs once per run of slots sharing
    its value, on their part of the batch, with the very call a single point makes; every other
    product and pass runs once over the whole batch. Each repetition's numbers are those of its
    point trained alone: a batched product computes each of its matrices alone (test).
    """

    def __init__(self, config: TrialConfig, units: Units | None = None, alloc: Allocator = fresh,
                 problem: Problem | None = None):
        """Args: units: start from these (L, R, D, M) units instead of drawing the config's seeds;
        alloc: where the units and the step's buffers come from (``Scratch``: a pack's spares);
        problem: this config's problem if already made (``make_problem``)."""
        self.config = config
        self.device = resolve_device(config.device)
        self.dtype = torch_dtype(config.dtype)
        self.seeds = config.seeds
        self.problem = make_problem(config, self.device, self.dtype) if problem is None else problem
        self.alloc = alloc
        self.units = init_units(config, self.seeds, self.device, self.dtype, alloc) if units is None else units
        self.activation = ACTIVATIONS[config.activation]
        self.scale = config.residual_scale
        self.lr_hat = config.step_sizes()  # (lr_hat_u, lr_hat_v)
        self._set_slots((Slot(0, len(self.seeds), self.problem, self.scale, self.lr_hat, _slot_optimizer(config)),))
        self._init_state()

    def _init_state(self) -> None:
        self._workspace: dict[str, torch.Tensor] = {}
        self._backprop_of: tuple[Forward, tuple[torch.Tensor, torch.Tensor]] | None = None  # ``backprop``'s last
        # Called as observer(net, fwd, cotangent, gated, q) inside ``step``, after the backward
        # sweep and before the in-place update (q = B V / D before gating): metrics.Baseline
        # uses it to keep its per-unit displacement sums up to date from the step's own factors.
        self.observer = None
        self.keep_q = False  # keep q (``q``) without an observer: a pack's points observe it outside
        self.optimizer_state: dict[str, Units] = {}  # per state name of the slots' optimizers, shaped like the units
        self.updates = 0  # steps taken: the optimizers' step number t is this plus one

    @classmethod
    def fused(cls, configs: list[TrialConfig], alloc: Allocator = fresh, units: Units | None = None,
              streams: dict | None = None) -> "ResNet":
        """One network for a pack of configurations that share their shape (``TrialConfig.
        fusion_key``): their seeds side by side on the batch axis, point after point, each
        point's units drawn as its own (the streams of a seed drawn once, ``draw_units``), or
        ``units`` when given; ``streams``: the draw's cache of streams (``draw_units``).

        ``config`` is then the first point's, for the shape fields only; ``problem``, ``scale``
        and ``lr_hat`` are each point's, in ``slots``, and None on the pack."""
        first = configs[0]
        net = cls.__new__(cls)
        net.config, net.alloc = first, alloc
        net.device, net.dtype = resolve_device(first.device), torch_dtype(first.dtype)
        net.seeds = tuple(seed for c in configs for seed in c.seeds)
        draws = [UnitDraw(int(seed), c.sigma_u, c.sigma_v, c.antithetic) for c in configs for seed in c.seeds]
        if units is None:
            units = draw_units(first.L, first.M, first.D, draws, net.device, net.dtype, alloc, streams)
        net.units = units
        net.activation = ACTIVATIONS[first.activation]
        net.problem = net.scale = net.lr_hat = None
        slots, lo = [], 0
        for c in configs:
            scale = c.residual_scale
            slots.append(Slot(lo, lo + len(c.seeds), make_problem(c, net.device, net.dtype), scale, c.step_sizes(),
                              _slot_optimizer(c)))
            lo += len(c.seeds)
        net._set_slots(tuple(slots))
        net._init_state()
        return net

    def _set_slots(self, slots: tuple[Slot, ...]) -> None:
        self.slots = slots
        self._scale_runs, self._lr_runs = _runs(slots, "scale"), _runs(slots, "lr_hat")

    def slot_units(self, index: int) -> Units:
        """A slot's units, (L, hi - lo, D, M) views into the batch's (contiguous when it is alone)."""
        slot = self.slots[index]
        return Units(self.units.u[:, slot.lo:slot.hi], self.units.v[:, slot.lo:slot.hi])

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

    @property
    def q(self) -> torch.Tensor:
        """The last backward sweep's q = B_l V_l / D before gating, (L, R, N, M): kept when the net
        has an observer or ``keep_q``."""
        return self._workspace["q"]

    def forward(self) -> Forward:
        cfg, units = self.config, self.units
        L, R, D, N = cfg.L, self.repetitions, cfg.D, cfg.problem.samples
        hidden = self._buffer("hidden", (L + 1, R, N, D))
        preact = self._buffer("preact", (L, R, N, cfg.M))
        activated = self._buffer("activated", (L, R, N, cfg.M))
        for slot in self.slots:
            hidden[0, slot.lo:slot.hi] = slot.problem.x @ slot.problem.embed.T
        for layer in range(L):
            # P = (h / D) U: (R, N, D) @ (R, D, M) -> (R, N, M); dividing h is the cheaper side
            torch.bmm(hidden[layer] / D, units.u[layer], out=preact[layer])
            self.activation.apply(preact[layer], activated[layer])
            # h_l = h_{l-1} + c sigma(P) V^T: (R, N, M) @ (R, M, D) -> (R, N, D)
            for lo, hi, c in self._scale_runs:
                torch.baddbmm(hidden[layer, lo:hi], activated[layer, lo:hi], units.v[layer, lo:hi].transpose(1, 2),
                              alpha=c, out=hidden[layer + 1, lo:hi])
        out = self.readout(hidden[L])
        return Forward(hidden, preact, activated, out)

    def readout(self, h_last: torch.Tensor) -> torch.Tensor:
        """f = W_U^T h_L / D, per sample: (R, N, D) -> (R, N, d_out)."""
        outs = [torch.matmul(h_last[s.lo:s.hi], s.problem.readout) / self.config.D for s in self.slots]
        return outs[0] if len(outs) == 1 else torch.cat(outs)

    def test_metrics(self) -> torch.Tensor | None:
        """(R, 2) float64: the held-out test_loss (mean squared error against the noisy targets) and
        test_err_out (RMS distance to the teacher's clean outputs) at the current units, from a
        forward pass of the test inputs of a network of one slot; None without a test set."""
        test = self.slots[0].problem.test
        if test is None:
            return None
        x, y, clean = test
        cfg, units, c = self.config, self.units, self.slots[0].scale
        h = (x @ self.slots[0].problem.embed.T).expand(self.repetitions, -1, -1)
        for layer in range(cfg.L):
            s = torch.bmm(h / cfg.D, units.u[layer])
            self.activation.apply(s, s)
            h = torch.baddbmm(h, s, units.v[layer].transpose(1, 2), alpha=c)
        out = torch.matmul(h, self.slots[0].problem.readout) / cfg.D
        loss = (out - y).to(torch.float64).square().mean(dim=(1, 2))
        err = (out - clean).to(torch.float64).square().mean(dim=(1, 2)).sqrt()
        return torch.stack([loss, err], dim=1)

    def loss(self, out: torch.Tensor) -> torch.Tensor:
        """Full-batch mean squared error per repetition: (R,)."""
        losses = [((out[s.lo:s.hi] - s.problem.y) ** 2).mean(dim=(1, 2)) for s in self.slots]
        return losses[0] if len(losses) == 1 else torch.cat(losses)

    def backward(self, fwd: Forward) -> Units:
        """Gradients dl/dU, dl/dV of each repetition's loss, shaped like the units."""
        cotangent, gated = self.backprop(fwd)
        grads = Units(self._outer(fwd.hidden[:-1], gated), self._outer(cotangent, fwd.activated))
        for lo, hi, c in self._scale_runs:
            factor = 2.0 * c / self.config.D  # dl/dtheta = (2 c / D) * (backprop term)
            for grad in (grads.u, grads.v):
                grad[:, lo:hi] *= factor
        return grads

    def step(self, fwd: Forward) -> None:
        """One gradient-descent step, in place, from the forward pass at the current units:
        U_l -= lr_hat H_{l-1} G_l^T and V_l -= lr_hat B_l sigma(P_l)^T, all layers in two
        batched products once the backward sweep has produced every G_l and B_l."""
        cotangent, gated = self.backprop(fwd)
        if self.observer is not None:
            self.observer(self, fwd, cotangent, gated, self.q)
        self.update(fwd)

    def update(self, fwd: Forward) -> None:
        """The step's in-place update from this pass's backward sweep (``backprop``): for a pack,
        after each point's observer (trials.train)."""
        cotangent, gated = self.backprop(fwd)
        self._backprop_of = None  # the units move: a later sweep is another one
        self.updates += 1
        L, R, D, M = self.units.u.shape
        factors = ((self.units.u, fwd.hidden[:-1], gated), (self.units.v, cotangent, fwd.activated))
        if any(slot.optimizer is not None for slot in self.slots):
            self._optimizer_update(factors)
            return
        if len(self._lr_runs) == 1:  # one pair of step sizes: every layer and repetition in one product
            for (units, left, right), lr_hat in zip(factors, self._lr_runs[0][2]):
                units.view(L * R, D, M).baddbmm_(_flat(left).transpose(1, 2), _flat(right), alpha=-lr_hat)
            return
        for lo, hi, lr_hats in self._lr_runs:  # a run's repetitions are no view across layers: layer by layer
            for (units, left, right), lr_hat in zip(factors, lr_hats):
                for layer in range(L):
                    units[layer, lo:hi].baddbmm_(left[layer, lo:hi].transpose(1, 2), right[layer, lo:hi], alpha=-lr_hat)

    def _optimizer_update(self, factors) -> None:
        """``update`` of a batch with a slot whose optimizer is not plain gradient descent: each
        such slot's registry step (trials/optimizers.py) on the backprop terms T_u = H^T G and
        T_v = B^T S of the whole batch (one batched product each), the state tensors shaped like
        the units; a plain gradient-descent slot takes its products as in a mixed pack."""
        L = self.units.u.shape[0]
        terms = Units(self._outer(factors[0][1], factors[0][2]), self._outer(factors[1][1], factors[1][2]))
        for slot in self.slots:
            if slot.optimizer is None:
                for (units, left, right), lr_hat in zip(factors, slot.lr_hat):
                    for layer in range(L):
                        units[layer, slot.lo:slot.hi].baddbmm_(left[layer, slot.lo:slot.hi].transpose(1, 2),
                                                               right[layer, slot.lo:slot.hi], alpha=-lr_hat)
                continue
            name, scalars = slot.optimizer
            optimizer = OPTIMIZERS[name]
            part = slice(slot.lo, slot.hi)
            for i, tensor in enumerate(("u", "v")):
                state = [getattr(self._state(state_name), tensor)[:, part] for state_name in optimizer.state]
                optimizer.step(getattr(self.units, tensor)[:, part], getattr(terms, tensor)[:, part], state,
                               scalars[i], self.updates)

    def _state(self, name: str) -> Units:
        """The optimizer state ``name`` of every repetition, shaped like the units (its values set
        by the optimizer's first step)."""
        state = self.optimizer_state.get(name)
        if state is None:
            shape = tuple(self.units.u.shape)
            state = self.optimizer_state[name] = Units(*(self.alloc(shape, self.dtype, self.device) for _ in range(2)))
        return state

    def backprop(self, fwd: Forward) -> tuple[torch.Tensor, torch.Tensor]:
        """``_backprop`` of this forward pass, swept once: a metric that reads the backward states
        before the step (``backward_states``) leaves the step nothing to redo. Valid until the next
        step or forward pass, like the pass itself."""
        if self._backprop_of is None or self._backprop_of[0] is not fwd:
            self._backprop_of = (fwd, self._backprop(fwd))
        return self._backprop_of[1]

    def adopt_backprop(self, fwd: Forward, cotangent: torch.Tensor, gated: torch.Tensor) -> None:
        """Take this pass's backward sweep from elsewhere (a point's part of its pack's sweep,
        trials.train) instead of sweeping again: ``backprop(fwd)`` returns it."""
        self._backprop_of = (fwd, (cotangent, gated))

    def backward_states(self, fwd: Forward) -> torch.Tensor:
        """B_l = (D / 2) dl/dh_l at every block output l = 0..L, (L + 1, R, N, D) in the working dtype
        (the backward sweep's B_1..B_L and B_0 = B_1 + c G_1 U_1^T, which no update needs)."""
        cotangent, gated = self.backprop(fwd)
        L, R, N, D = cotangent.shape
        states = torch.empty((L + 1, R, N, D), dtype=cotangent.dtype, device=cotangent.device)
        states[1:] = cotangent
        for lo, hi, c in self._scale_runs:
            torch.baddbmm(cotangent[0, lo:hi], gated[0, lo:hi], self.units.u[0, lo:hi].transpose(1, 2), alpha=c,
                          out=states[0, lo:hi])
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
        D = cfg.D
        d_out, N = cfg.problem.d_out, cfg.problem.samples
        cotangent = self._buffer("cotangent", tuple(fwd.hidden[1:].shape))
        gated = self._buffer("gated", tuple(fwd.preact.shape))
        q = self._buffer("q", tuple(fwd.preact.shape)) if self.observer is not None or self.keep_q else None
        self.activation.apply_derivative(fwd.preact, fwd.activated, gated)  # becomes G in place, layer by layer
        # B_L = (D / 2) dl/dh_L, with l = ||f - y||^2 / (N d_out) and f = W_U^T h / D.
        for s in self.slots:
            cotangent[-1, s.lo:s.hi] = torch.matmul(fwd.out[s.lo:s.hi] - s.problem.y, s.problem.readout.T) / (N * d_out)
        for layer in reversed(range(cfg.L)):
            b = cotangent[layer]
            if q is None:
                gated[layer].mul_(torch.bmm(b / D, units.v[layer]))  # B V / D: (R, N, D) @ (R, D, M)
            else:  # the same product, kept for the observer
                gated[layer].mul_(torch.bmm(b / D, units.v[layer], out=q[layer]))
            if layer:
                # B_{l-1} = B_l + c G_l U_l^T
                for lo, hi, c in self._scale_runs:
                    torch.baddbmm(b[lo:hi], gated[layer, lo:hi], units.u[layer, lo:hi].transpose(1, 2), alpha=c,
                                  out=cotangent[layer - 1, lo:hi])
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
        """The mean-field per-parameter learning rate eta * D / (2 c^2 L M) that multiplies dl/dtheta
        (``lr_scaling = "mean_field"``; raw SGD's are ``step_sizes``)."""
        cfg = self.config
        return cfg.lr * cfg.D / (2.0 * self.scale**2 * cfg.L * cfg.M)

    def step_sizes(self) -> tuple[float, float]:
        """The factors (a_u, a_v) of the steps U <- U - a_u dl/dU and V <- V - a_v dl/dV:
        lr_hat_u D / (2 c) and lr_hat_v D / (2 c) (``TrialConfig.step_sizes``)."""
        factor = self.config.D / (2.0 * self.scale)
        return self.lr_hat[0] * factor, self.lr_hat[1] * factor
