"""The optimizer registry: name -> ``Optimizer`` (its step, its state, its docstring and source).

Every optimizer steps the unit parameters theta = u, v of docs/model.md in place, from the
backprop term T that gradient descent already uses (``ResNet.update``): dl/dtheta = (2 c / D) T,
T_u = H^T G and T_v = B^T S summed over the samples (trials/model.py). The state (a momentum
buffer; Adam's two moments) is one tensor per unit parameter tensor, shaped like it, (L, R, D, M):
batched over seeds and a pack's points like the units, so a step is a handful of elementwise
passes over the whole batch, once per point (each point has its own scalars).

Each tensor's scalars (``Scalars``: step size ``lr`` and Adam's ``eps``, both in T coordinates,
and the decoupled decay factor) come from ``TrialConfig.optimizer_scalars``: the rules per layer,
preset and ``lr_scaling`` (docs/model.md section 2b). Working in T coordinates is exact: with
W = s theta an effective weight (W1 = u / D: s = 1 / D; W2 = c v: s = c) and g_W = k T
(k_u = 2 c, k_v = 2 / D), Adam on W with (lr_W, eps_W) is Adam on T with lr = lr_W / s and
eps = eps_W / k; momentum is linear, so its buffer in T coordinates is k times W's.

No torch import: tensors' own methods do the work, so that configuration (which reads the names
and the rules) imports no torch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

DEFAULT_OPTIMIZER = "gd"
DEFAULT_MOMENTUM = 0.9
DEFAULT_BETAS = (0.9, 0.999)
DEFAULT_EPS = 1e-8


@dataclass(frozen=True)
class Scalars:
    """One unit tensor's step of one point: ``lr`` multiplies the optimizer's direction in T
    coordinates (theta -= lr * direction), ``eps`` is Adam's epsilon in T coordinates, ``decay`` the
    decoupled weight-decay factor theta *= decay applied first (1 - lr_config * weight_decay),
    ``momentum`` and ``betas`` the optimizer's own."""

    lr: float
    eps: float
    decay: float
    momentum: float
    betas: tuple[float, float]


def _decay(theta, s: Scalars) -> None:
    if s.decay != 1.0:
        theta.mul_(s.decay)


def gd_step(theta, term, state, s: Scalars, t: int) -> None:
    """Gradient descent: theta <- decay theta - lr T. No state."""
    _decay(theta, s)
    theta.add_(term, alpha=-s.lr)


def momentum_step(theta, term, state, s: Scalars, t: int) -> None:
    """Heavy-ball momentum as torch.optim.SGD (dampening 0, not Nesterov): buf <- mu buf + T
    (buf = T at the first step), theta <- decay theta - lr buf."""
    (buf,) = state
    if t == 1:
        buf.copy_(term)
    else:
        buf.mul_(s.momentum).add_(term)
    _decay(theta, s)
    theta.add_(buf, alpha=-s.lr)


def adam_step(theta, term, state, s: Scalars, t: int) -> None:
    """Adam with decoupled weight decay, as torch.optim.AdamW: m <- b1 m + (1 - b1) T,
    v <- b2 v + (1 - b2) T^2, theta <- decay theta - lr / (1 - b1^t) m / (sqrt(v / (1 - b2^t)) + eps)."""
    m, v = state
    b1, b2 = s.betas
    if t == 1:
        m.zero_()
        v.zero_()
    m.mul_(b1).add_(term, alpha=1.0 - b1)
    v.mul_(b2).addcmul_(term, term, value=1.0 - b2)
    denom = v.sqrt().div_(math.sqrt(1.0 - b2**t)).add_(s.eps)
    _decay(theta, s)
    theta.addcdiv_(m, denom, value=-s.lr / (1.0 - b1**t))


@dataclass(frozen=True)
class Optimizer:
    """One optimizer: its step (theta, T, state tensors, Scalars, step number t >= 1, in place),
    the names of its state tensors per unit tensor, what it is and where it comes from."""

    name: str
    step: Callable
    state: tuple[str, ...]
    doc: str
    source: str


OPTIMIZERS: dict[str, Optimizer] = {
    "gd": Optimizer("gd", gd_step, (), "full-batch gradient descent (the default)",
                    "Chizat, The Hidden Width of Deep ResNets (arXiv:2509.10167), section 2"),
    "momentum": Optimizer("momentum", momentum_step, ("buf",),
                          "heavy-ball momentum, torch.optim.SGD(momentum=mu) with decoupled weight decay",
                          "Polyak 1964; the per-layer step sizes are gradient descent's (docs/model.md section 2b)"),
    "adam": Optimizer("adam", adam_step, ("m", "v"),
                      "Adam with decoupled weight decay (AdamW), torch.optim.AdamW's update",
                      "Kingma and Ba 2015; Loshchilov and Hutter 2019 (AdamW); per-layer rules: Yang et al., "
                      "Tensor Programs V (arXiv:2203.03466) for width, Dey et al. 2025, CompleteP (arXiv:2505.01618) for depth"),
}


def no_rule_reason(optimizer: str, preset: str, lr_scaling: str) -> str | None:
    """Why (optimizer, preset, lr_scaling) has no per-layer rule, one sentence, or None when it has
    one. raw has one for every optimizer (one global lr on W1, W2); mean_field has gradient descent's
    for gd and momentum at every preset, and for adam the mean-field rule of docs/model.md section 2b
    at every preset but standard, whose own rule is one global lr (raw)."""
    if optimizer == "adam" and lr_scaling == "mean_field" and preset == "standard":
        return ("optimizer 'adam' with preset 'standard' has no mean_field rule (the standard parametrization's "
                "rule is one global lr): use lr_scaling 'raw'")
    return None


def tensor_scalars(optimizer: str, lr_scaling: str, lr: float, c: float, L: int, M: int, D: int,
                   gd_steps: tuple[float, float], eps: float, weight_decay: float, momentum: float,
                   betas: tuple[float, float]) -> tuple[Scalars, Scalars]:
    """The (u, v) Scalars of one point (module docstring; docs/model.md section 2b).

    gd, momentum: lr = gradient descent's step sizes ``gd_steps`` (TrialConfig.step_sizes).
    adam, raw: AdamW on W1, W2 with one lr and eps: lr_u = lr D, eps_u = eps / (2 c); lr_v = lr / c,
    eps_v = eps D / 2. adam, mean_field: lr_u = lr_v = lr / (c L M) (gradient descent's mean-field
    step size) and eps in T coordinates (the backprop term is Theta(1) in L and M)."""
    if optimizer == "adam":
        if lr_scaling == "raw":
            pairs = ((lr * D, eps / (2.0 * c)), (lr / c, eps * D / 2.0))
        else:
            step = lr / (c * L * M)
            pairs = ((step, eps), (step, eps))
    else:
        pairs = ((gd_steps[0], eps), (gd_steps[1], eps))
    decay = 1.0 - lr * weight_decay
    return tuple(Scalars(a, e, decay, momentum, tuple(betas)) for a, e in pairs)
