"""Validated configurations of a trial and of its reference, and their stable keys.

A configuration is a frozen dataclass: every default is commented, every field is checked in
``__post_init__`` (one ``ConfigError``: a ``ValueError`` whose ``.field`` names the field and
whose message says what it got and what is allowed), and
``key()`` hashes exactly the fields that define the numbers.

Size: one concept, the configurations (trial, problem, mean_ode and joint_limit references) with
their checks and keys, kept together and free of torch so that reading a spec imports none.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .optimizers import DEFAULT_BETAS, DEFAULT_EPS, DEFAULT_MOMENTUM, DEFAULT_OPTIMIZER, OPTIMIZERS, no_rule_reason, tensor_scalars

if TYPE_CHECKING:  # torch is imported where a tensor is made (resolve_device, torch_dtype), never here:
    import torch  # validating a configuration (a spec, a CLI error) must not pay torch's second of import

# Bumped whenever a change to the numerics changes the numbers a configuration produces.
NUMERICS_VERSION = 5  # 3: divergence by loss growth, flags, CRN discretization estimate, preset-keyed references
# 4: where K N (D + M) <= D M the unit metrics take the displacement from the update history (metrics.Baseline):
#    float32 feature_update, lin_ratio, weight_change move at their rounding level (1e-7 - 1e-4 relative), float64
#    ones by < 1e-12 except lin_ratio at alpha >= 4096 (4e-11; 1e-8 at 65536, its own rounding level there)
# 5: units drawn by numpy's SFC64 ziggurat, one stream per (seed, tensor, block of layers) (units.init_units):
#    every network, trial and reference, is a new draw of the same law
# The references' own version: what changes a reference's arrays (its trajectories and error estimates), not
# the trials' metrics. Version 4 changed only how trials compute unit metrics, so the cached references (minutes
# each) of version 3 stayed valid; bump this with NUMERICS_VERSION only when the change reaches the references.
REFERENCE_NUMERICS_VERSION = 4  # 4: particles drawn as the units of version 5
# The joint limit's own version (trials/joint_limit.py), hashed into its key beside REFERENCE_NUMERICS_VERSION:
# what changes only the arrays of a joint_limit reference (seconds to compute) is bumped here, so that the
# particle references' caches (minutes each) stay valid. A record whose key it changed is computed again.
JOINT_LIMIT_VERSION = 2  # 2: stores backward_path, the backward states along depth that err_backward needs
# Numbers per random stream of the unit draw (units.init_units): a block is as many layers as hold
# this many numbers (at least one), so the blocks, and the numbers, depend on the shape alone,
# never on the threads. Part of the numerics: changing it changes every network.
UNIT_BLOCK = 1 << 18
# Elements of the (L, R, N, M) arrays the metrics take at once (trials.metrics): the per-step work
# goes through the layers in blocks of about this size, so that a block's temporaries stay in cache
# between the passes. Here, with no torch, so that the memory estimate of a spec reads it too.
METRICS_BLOCK = 1 << 19

# Residual scale c = alpha * L^-a * M^-b * D^-g. mlu is the paper's alpha / (L M); completep and
# depth_mup put a standard (muP, 1/sqrt(fan_in)) block in the residual branch with a branch
# multiplier 1/L and 1/sqrt(L): in unit-variance form their scales are 1/(L sqrt(M)) and
# 1/sqrt(L M), against sqrt(D)/(L M) for mlu. standard is the standard parametrization: the
# effective weights W1 = u / D and W2 = c v start with the fan-in variances 1/D and 1/M (for
# alpha = 1) and the branch has no depth factor, so the residual stream's variance grows with L.
PRESETS: dict[str, tuple[float, float, float]] = {
    "mlu": (1.0, 1.0, 0.0),
    "lazy": (1.0, 1.0, 0.0),
    "completep": (1.0, 0.5, 0.5),
    "depth_mup": (0.5, 0.5, 0.5),
    "standard": (0.0, 0.5, 0.5),
}
# What the learning rate lr multiplies (docs/model.md section 2). mean_field: each unit parameter
# steps by lr * D / (2 c^2 L M) * dl/dtheta (every preset moves its units by Theta(1)); raw: plain
# SGD on the effective weights W1 = u / D and W2 = c v, W <- W - lr * dl/dW.
LR_SCALINGS = ("mean_field", "raw")
ACTIVATION_NAMES = ("tanh", "identity", "gelu", "relu")
BLOCKS = ("2lp",)
DEVICES = ("auto", "cpu", "cuda")
FLOAT32_MAX = 3.4028234663852886e38  # numpy.finfo(numpy.float32).max: a float32 trial's values stay below it
# The kinds of data (trials/data.py draws them) and of references (trials/reference.py computes
# them), declared here, with the other closed sets, so that validation needs no torch.
DATA_KINDS = ("gaussian", "linear_target", "teacher")  # teacher: a fixed random network of this family
REFERENCE_KINDS = ("mean_ode", "largest", "joint_limit")  # joint_limit: trials/joint_limit.py


class _Dtypes(Mapping):
    """dtype name -> torch dtype, resolved (torch imported) on first lookup: the names are what
    validation needs, the torch dtypes only a run does."""

    _names = ("float32", "float64")

    def __getitem__(self, name: str) -> "torch.dtype":
        if name not in self._names:
            raise KeyError(name)
        import torch

        return getattr(torch, name)

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return "DTYPES(" + ", ".join(self._names) + ")"


DTYPES: Mapping[str, "torch.dtype"] = _Dtypes()


class ConfigError(ValueError):
    """A configuration value that cannot define a trial. ``field`` names it the way the config
    does (``"L"``, ``"problem.seed"``, ``"reference.width"``), so a caller can map it to its own
    key without reading the message."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _choice(name: str, value: object, allowed) -> None:
    if value not in allowed:
        raise ConfigError(name, f"unknown {name} {value!r}; expected one of: {', '.join(map(str, allowed))}")


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(name, f"{name} must be a positive integer, got {value!r}")


def _positive_float(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(name, f"{name} must be a positive finite number, got {value!r}")


def stream_seed(stream: str, seed: int) -> int:
    """The seed of one named random stream: data and units never share numbers, even when a
    trial seed equals the problem seed."""
    return int.from_bytes(hashlib.sha256(f"{stream}:{seed}".encode()).digest()[:7], "little")


def stable_hash(payload: dict) -> str:
    """A 16-hex-digit SHA-256 of a JSON-serializable dict, independent of key order."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ProblemConfig:
    """The data and the frozen embeddings: shared by a trial and its reference."""

    d_in: int = 5  # input dimension
    d_out: int = 5  # output dimension
    samples: int = 10  # N, full-batch training set size
    seed: int = 1  # draws X, Y, W_E, W_U (never the units)
    coupled_dim: int | None = None  # draw W_E, W_U at this width and keep the first D rows
    data: str = "gaussian"  # gaussian | linear_target (|x| = 0.8, y = A x + noise): see trials/data.py
    data_seed: int | None = None  # draws X, Y apart from W_E, W_U; None: from seed (as before)
    independent_embeddings: bool = False  # uncoupled: every D draws W_E, W_U from its own stream
    teacher_seed: int | None = None  # data teacher: draws the teacher network; None: from seed
    teacher_depth: int = 2  # data teacher: the teacher's L
    teacher_width: int = 16  # data teacher: the teacher's M and D
    label_noise: float = 0.0  # data teacher: std of the noise added to its unit-RMS targets
    test_samples: int = 0  # held-out samples of the same law, never trained on (data teacher): test_loss, test_err_out

    def __post_init__(self) -> None:
        for name in ("d_in", "d_out", "samples"):
            _positive_int(f"problem.{name}", getattr(self, name))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError("problem.seed", f"problem.seed must be a non-negative integer, got {self.seed!r}")
        if self.coupled_dim is not None:
            _positive_int("problem.coupled_dim", self.coupled_dim)
        _choice("problem.data", self.data, DATA_KINDS)
        if self.data_seed is not None and (isinstance(self.data_seed, bool) or not isinstance(self.data_seed, int) or self.data_seed < 0):
            raise ConfigError("problem.data_seed", f"problem.data_seed must be a non-negative integer or unset, got {self.data_seed!r}")
        if self.teacher_seed is not None and (isinstance(self.teacher_seed, bool) or not isinstance(self.teacher_seed, int) or self.teacher_seed < 0):
            raise ConfigError("problem.teacher_seed", f"problem.teacher_seed must be a non-negative integer or unset, got {self.teacher_seed!r}")
        for name in ("teacher_depth", "teacher_width"):
            _positive_int(f"problem.{name}", getattr(self, name))
        if isinstance(self.label_noise, bool) or not isinstance(self.label_noise, (int, float)) or not math.isfinite(self.label_noise) or self.label_noise < 0:
            raise ConfigError("problem.label_noise", f"problem.label_noise must be a non-negative number, got {self.label_noise!r}")
        if isinstance(self.test_samples, bool) or not isinstance(self.test_samples, int) or self.test_samples < 0:
            raise ConfigError("problem.test_samples", f"problem.test_samples must be a non-negative integer, got {self.test_samples!r}")
        if self.test_samples and self.data != "teacher":
            raise ConfigError("problem.test_samples", f"problem.test_samples needs data 'teacher' (the kind whose targets are a "
                              f"function of the inputs), got data {self.data!r}")
        if self.independent_embeddings is not False and (self.independent_embeddings is not True or self.coupled_dim is not None):
            raise ConfigError("problem.independent_embeddings", f"problem.independent_embeddings must be true or false, and false with coupled_dim, got {self.independent_embeddings!r}")

    def numerics(self) -> dict:
        """The fields that define the numbers. data, data_seed and independent_embeddings are left
        out at their defaults, so the keys of configurations made before they existed hold."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if d["data"] == "gaussian":
            del d["data"]
        if d["data_seed"] is None:
            del d["data_seed"]
        if not d["independent_embeddings"]:
            del d["independent_embeddings"]
        if self.data != "teacher":  # the teacher's fields act on its data only
            for name in ("teacher_seed", "teacher_depth", "teacher_width", "label_noise"):
                del d[name]
        elif d["teacher_seed"] is None:
            del d["teacher_seed"]
        if not d["test_samples"]:
            del d["test_samples"]
        return d


# The fields that points of one pack share (``TrialConfig.fusion_key``); samples and d_out are the problem's.
FUSION_FIELDS = ("L", "M", "D", "dtype", "steps", "activation", "block", "device", "samples", "d_out")


@dataclass(frozen=True)
class TrialConfig:
    """One grid point: a ResNet shape, its initialization and training, and its seeds."""

    L: int  # depth: number of residual blocks
    M: int  # hidden width: units per block
    D: int  # embedding dimension
    problem: ProblemConfig = field(default_factory=ProblemConfig)
    activation: str = "tanh"  # sigma, one of ACTIVATION_NAMES
    block: str = "2lp"  # residual block type, one of BLOCKS
    preset: str = "mlu"  # residual scaling, one of PRESETS
    alpha: float = 1.0  # residual multiplier; >> 1 is the lazy regime
    sigma_u: float = 1.0  # init std of u entries, in units of sqrt(D)
    sigma_v: float = 1.0  # init std of v entries, in units of sqrt(D)
    lr: float = 1.0  # eta, in the convention lr_scaling names (see model.py)
    steps: int = 10  # K gradient steps; metrics at k = 0..K
    dtype: str = "float64"  # float32 | float64
    device: str = "auto"  # auto (cuda if available) | cpu | cuda
    seeds: tuple[int, ...] = (0,)  # repetitions: seeds of the unit parameters, batched
    antithetic: bool = False  # units in pairs (u, v), (u, -v): cancels the init noise; M even
    divergence_factor: float = 10.0  # loss above this times its step-0 loss marks a repetition diverged
    divergence_bound: float = 1e3  # |f| above this times the targets' RMS (or NaN/Inf) marks it diverged
    init_noise_limit: float = 1.0  # flag init_noise when alpha_eff / sqrt(L M) exceeds this (not antithetic)
    chaos_check: bool = False  # run a twin nudged by 1e-12 and flag seeds whose trajectories separate
    lr_scaling: str = "mean_field"  # mean_field | raw (plain SGD on W1 = u / D, W2 = c v): LR_SCALINGS
    optimizer: str = DEFAULT_OPTIMIZER  # gd | momentum | adam: OPTIMIZERS (trials/optimizers.py)
    momentum: float = DEFAULT_MOMENTUM  # mu of optimizer momentum, in [0, 1)
    betas: tuple[float, float] = DEFAULT_BETAS  # Adam's (beta1, beta2), each in [0, 1)
    eps: float = DEFAULT_EPS  # Adam's epsilon, in the units lr_scaling names (docs/model.md section 2b)
    weight_decay: float = 0.0  # decoupled (AdamW): every step first multiplies the units by 1 - lr * weight_decay

    def __post_init__(self) -> None:
        for name in ("L", "M", "D"):
            _positive_int(name, getattr(self, name))
        if not isinstance(self.problem, ProblemConfig):
            raise TypeError(f"problem must be a ProblemConfig, got {type(self.problem).__name__}")
        _choice("activation", self.activation, ACTIVATION_NAMES)
        _choice("block", self.block, BLOCKS)
        _choice("preset", self.preset, tuple(PRESETS))
        _choice("lr_scaling", self.lr_scaling, LR_SCALINGS)
        self._check_optimizer()
        _choice("dtype", self.dtype, tuple(DTYPES))
        _choice("device", self.device, DEVICES)
        for name in ("alpha", "sigma_u", "sigma_v", "lr", "divergence_bound", "init_noise_limit"):
            _positive_float(name, getattr(self, name))
        _positive_float("divergence_factor", self.divergence_factor)
        if self.divergence_factor <= 1:
            raise ConfigError("divergence_factor", f"divergence_factor must be > 1 (a loss growth factor), got {self.divergence_factor!r}")
        if not isinstance(self.chaos_check, bool):
            raise ConfigError("chaos_check", f"chaos_check must be true or false, got {self.chaos_check!r}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 0:
            raise ConfigError("steps", f"steps must be a non-negative integer, got {self.steps!r}")
        seeds = tuple(self.seeds)
        if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
            raise ConfigError("seeds", f"seeds must be a non-empty list of non-negative integers, got {self.seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise ConfigError("seeds", f"seeds must be distinct, got {self.seeds!r}")
        object.__setattr__(self, "seeds", seeds)
        if self.preset == "lazy" and self.alpha <= 1:
            raise ConfigError("alpha", f"preset 'lazy' needs alpha > 1 (typically >= 8), got alpha={self.alpha}; use preset 'mlu' for alpha = 1")
        if self.antithetic and self.M % 2:
            raise ConfigError("M", f"antithetic units come in pairs: M must be even, got M={self.M}")
        if self.dtype == "float32":
            self._check_float32()
        if self.problem.coupled_dim is not None and self.problem.coupled_dim < self.D:
            raise ConfigError(
                "problem.coupled_dim",
                f"problem.coupled_dim={self.problem.coupled_dim} is smaller than D={self.D}; "
                "coupled embeddings are drawn at the largest D of the sweep"
            )

    def _check_float32(self) -> None:
        """A float32 trial computes with its values and the scalars the engine derives from them
        (the residual scale c, the step sizes, the gradient factor 2c/D) as float32: one past
        float32's largest finite value would be refused by torch at the first step ("cannot be
        converted to type float without overflow"), on every retry. Refused here, naming it."""
        for name in ("alpha", "sigma_u", "sigma_v", "lr", "divergence_factor", "divergence_bound", "init_noise_limit"):
            value = getattr(self, name)
            if abs(value) > FLOAT32_MAX:
                raise ConfigError(name, f"{name} = {value:g} overflows float32 (its largest value is {FLOAT32_MAX:.4g}); "
                                  f"use dtype float64 or a smaller {name}")
        c = self.residual_scale
        try:
            derived = {"the residual scale c": c, "the gradient factor 2c/D": 2.0 * c / self.D,
                       **dict(zip(("the step size of u", "the step size of v"), self.step_sizes()))}
        except (ZeroDivisionError, OverflowError):
            derived = {"the residual scale c": math.inf}
        for what, value in derived.items():
            if not math.isfinite(value) or abs(value) > FLOAT32_MAX:
                raise ConfigError("dtype", f"{what} = {value:g} of this point (alpha={self.alpha:g}, lr={self.lr:g}, "
                                  f"L={self.L}, M={self.M}, D={self.D}) overflows float32 (its largest value is "
                                  f"{FLOAT32_MAX:.4g}); use dtype float64")

    def _check_optimizer(self) -> None:
        _choice("optimizer", self.optimizer, tuple(OPTIMIZERS))
        if isinstance(self.momentum, bool) or not isinstance(self.momentum, (int, float)) or not 0 <= self.momentum < 1:
            raise ConfigError("momentum", f"momentum must be a number in [0, 1), got {self.momentum!r}")
        betas = self.betas
        if (isinstance(betas, (str, bytes)) or not hasattr(betas, "__len__") or len(betas) != 2
                or any(isinstance(b, bool) or not isinstance(b, (int, float)) or not 0 <= b < 1 for b in betas)):
            raise ConfigError("betas", f"betas must be two numbers in [0, 1), got {betas!r}")
        object.__setattr__(self, "betas", (float(betas[0]), float(betas[1])))
        for name in ("eps", "weight_decay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ConfigError(name, f"{name} must be a non-negative finite number, got {value!r}")
        if self.lr * self.weight_decay >= 1:
            raise ConfigError("weight_decay", f"lr * weight_decay must be below 1 (the decay factor is 1 - lr * weight_decay), "
                              f"got {self.lr} * {self.weight_decay}")
        reason = no_rule_reason(self.optimizer, self.preset, self.lr_scaling)
        if reason is not None:
            raise ConfigError("optimizer", reason)

    @property
    def plain_gd(self) -> bool:
        """Gradient descent without weight decay: the engine's original step (bit for bit)."""
        return self.optimizer == "gd" and self.weight_decay == 0

    def optimizer_scalars(self):
        """The (u, v) ``trials.optimizers.Scalars`` of this point's step (docs/model.md section 2b)."""
        return tensor_scalars(self.optimizer, self.lr_scaling, self.lr, self.residual_scale, self.L, self.M, self.D,
                              self.step_sizes(), self.eps, self.weight_decay, self.momentum, self.betas)

    @property
    def residual_scale(self) -> float:
        """c = alpha * L^-a * M^-b * D^-g for this preset."""
        a, b, g = PRESETS[self.preset]
        return self.alpha * self.L**-a * self.M**-b * self.D**-g

    @property
    def limit_alpha(self) -> float | None:
        """The multiplier alpha of the mlu Mean ODE this trial approaches as L grows at fixed M,
        or None when no Mean ODE is its limit (``no_limit_reason`` says why).

        The mean-field learning rate (lr_hat = eta / (c L M)) makes any preset at (L, M) the mlu
        network with alpha_eff = c L M. mlu and lazy: alpha_eff = alpha. completep: alpha sqrt(M / D),
        fixed as L grows, so its limit is the mlu Mean ODE at that alpha (it depends on M).
        depth_mup: alpha sqrt(L M / D) grows without bound with L while the initial noise
        alpha_eff / sqrt(L M) = alpha / sqrt(D) stays put: the 1/sqrt(L) branch has a random
        (SDE-like) limit, not a deterministic Mean ODE. standard: alpha L sqrt(M / D), and its initial
        noise alpha sqrt(L / D) grows with L. Raw SGD (``lr_scaling = "raw"``) moves v by 2 L M / D
        times the mean-field step at eta = lr, which diverges with L for every preset.
        """
        if self.no_limit_reason() is not None:
            return None
        if self.preset in ("mlu", "lazy"):
            return float(self.alpha)
        return float(self.alpha) * math.sqrt(self.M / self.D)  # completep

    def no_limit_reason(self) -> str | None:
        """Why no deterministic limit exists as L grows (``limit_alpha``), one sentence naming the
        field to change, or None when one does."""
        if not self.plain_gd:
            return (f"optimizer {self.optimizer!r}" + (" with weight_decay" if self.weight_decay else "")
                    + " has no Mean ODE reference here (it is derived for gradient descent)")
        if self.lr_scaling == "raw":
            return ("lr_scaling 'raw' (plain SGD on the effective weights) takes steps that grow like L M in mean-field "
                    "units, so no limit exists as L grows")
        if self.preset == "depth_mup":
            return ("preset 'depth_mup' has no Mean ODE limit (its residual scale alpha/sqrt(L M D) leaves initial noise "
                    "alpha/sqrt(D) at every depth)")
        if self.preset == "standard":
            return ("preset 'standard' has no depth limit (no depth factor on the branch: the residual stream's "
                    "variance grows with L)")
        return None

    def step_sizes(self) -> tuple[float, float]:
        """(lr_hat_u, lr_hat_v): the factors of the engine's update U -= lr_hat_u H^T G and
        V -= lr_hat_v B^T S (trials/model.py), dl/dU = (2 c / D) H^T G and dl/dV = (2 c / D) B^T S.

        mean_field: both eta / (c L M) (docs/model.md section 2). raw: plain SGD on W1 = U / D and
        W2 = c V, i.e. U -= lr D^2 dl/dU and V -= (lr / c^2) dl/dV: 2 lr c D and 2 lr / (c D).
        """
        c = self.residual_scale
        if self.lr_scaling == "raw":
            return 2.0 * self.lr * c * self.D, 2.0 * self.lr / (c * self.D)
        lr_hat = self.lr / (c * self.L * self.M)
        return lr_hat, lr_hat

    @property
    def init_noise(self) -> float:
        """Initial output noise scale alpha_eff / sqrt(L M) = c sqrt(L M) (docs/model.md section 3); 0 with
        antithetic units, whose branch output is exactly zero at step 0."""
        return 0.0 if self.antithetic else self.residual_scale * math.sqrt(self.L * self.M)

    def fusion_key(self) -> tuple:
        """The values of FUSION_FIELDS: what fixes the tensor shapes and the program of this trial's
        training. Trials with equal keys can train as one pack (trials.train.train_fused),
        whatever their other fields."""
        problem = {"samples": self.problem.samples, "d_out": self.problem.d_out}
        return tuple(problem[name] if name in problem else getattr(self, name) for name in FUSION_FIELDS)

    def replace(self, **changes) -> "TrialConfig":
        return dataclasses.replace(self, **changes)

    def numerics(self) -> dict:
        """Every field that defines the numbers, as plain values (device excluded). Built
        shallowly (not dataclasses.asdict, a deep copy): planning 10^5 trials calls it 10^5 times."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "device"}
        d["problem"] = self.problem.numerics()
        d["seeds"] = list(self.seeds)
        d["numerics_version"] = NUMERICS_VERSION
        if d["lr_scaling"] == "mean_field":  # left out at its default: keys made before it existed hold
            del d["lr_scaling"]
        # the optimizer's fields, each left out where it does not act (all of them for gd without
        # weight decay): the keys of gradient descent's configurations hold
        unused = {"gd": ("optimizer", "momentum", "betas", "eps"), "momentum": ("betas", "eps"), "adam": ("momentum",)}
        for name in unused[self.optimizer]:
            del d[name]
        if "betas" in d:
            d["betas"] = list(self.betas)
        if not self.weight_decay:
            del d["weight_decay"]
        return d

    def key(self) -> str:
        """Stable hash of everything that defines this trial's numbers."""
        return stable_hash(self.numerics())

    def columns(self) -> dict:
        """Flat hyperparameter columns written with every metric row."""
        p = self.problem
        return {
            "L": self.L, "M": self.M, "D": self.D,
            "d_in": p.d_in, "d_out": p.d_out, "samples": p.samples, "problem_seed": p.seed,
            "coupled_dim": p.coupled_dim,
            "activation": self.activation, "block": self.block, "preset": self.preset,
            "alpha": float(self.alpha), "sigma_u": float(self.sigma_u), "sigma_v": float(self.sigma_v),
            "lr": float(self.lr), "steps": self.steps, "dtype": self.dtype,
            "antithetic": self.antithetic, "residual_scale": self.residual_scale,
            # null at the default, as in every row written before the column existed: a sweep extended
            # after it was added holds one value of this grid column for its mean-field points, not two
            "lr_scaling": None if self.lr_scaling == "mean_field" else self.lr_scaling,
            # null where they do not act (all of them for gradient descent without weight decay)
            "optimizer": None if self.optimizer == "gd" else self.optimizer,
            "momentum": float(self.momentum) if self.optimizer == "momentum" else None,
            "beta1": self.betas[0] if self.optimizer == "adam" else None,
            "beta2": self.betas[1] if self.optimizer == "adam" else None,
            "eps": float(self.eps) if self.optimizer == "adam" else None,
            "weight_decay": float(self.weight_decay) if self.weight_decay else None,
        }


@runtime_checkable
class LimitReferenceConfig(Protocol):
    """What the configuration of a reference kind that computes the trials' limit declares:
    ``ReferenceConfig`` (mean_ode, a particle solution) and ``joint_limit.JointLimitConfig``
    (joint_limit, exact). The third kind, largest, is no limit: its configuration is the largest
    grid point's ``TrialConfig``, keyed by ``largest_reference_key``.

    Trials whose ``limit_identity`` is equal share one limit, so one reference: the planner
    computes one key per distinct identity, the store caches the reference under ``key()``.
    """

    @property
    def limit(self) -> TrialConfig:
        """Any trial of the group whose limit this is (its L, M and seeds are ignored)."""

    def limit_identity(self) -> tuple:
        """The values the limit depends on, as a hashable tuple."""

    def limit_fields(self) -> dict:
        """Exactly what the limit depends on (no trial seed; L and M only through an effective
        scale the limit depends on), as the data its key hashes."""

    def key(self) -> str:
        """Stable hash of the limit's fields, this reference's resolution and the reference
        numerics version: the reference's identity in the store."""


@dataclass(frozen=True)
class ReferenceConfig:
    """A particle solution of the Mean ODE: the trial's limit-defining fields, at resolution
    (depth, width), with ``replicas`` independent particle systems (docs/model.md section 3)."""

    limit: TrialConfig  # any trial of the group; its L, M, seeds and antithetic are ignored
    depth: int = 1024  # L_ref
    width: int = 512  # M_ref (even: particles come in antithetic pairs)
    replicas: int = 2  # R_ref >= 2: their spread estimates the sampling error
    seed: int = 1_000_003  # particle seeds are seed, seed + 1, ...: never a trial's seeds
    device: str = "auto"

    def __post_init__(self) -> None:
        _positive_int("reference.depth", self.depth)
        _positive_int("reference.width", self.width)
        _positive_int("reference.replicas", self.replicas)
        if self.replicas < 2:
            raise ConfigError("reference.replicas", f"reference.replicas must be at least 2 to estimate its own error, got {self.replicas}")
        if self.width % 2:
            raise ConfigError("reference.width", f"reference.width must be even (antithetic pairs), got {self.width}")
        if self.depth < 2 or self.depth % 2:
            raise ConfigError("reference.depth", f"reference.depth must be even and >= 2 (a half-depth replica estimates discretization), got {self.depth}")
        _choice("reference.device", self.device, DEVICES)
        reason = self.limit.no_limit_reason()
        if reason is not None:
            field = "optimizer" if not self.limit.plain_gd else "lr_scaling" if self.limit.lr_scaling == "raw" else "preset"
            raise ConfigError(field,
                              f"{reason}; use reference kind 'largest' (reference kind mean_ode needs the Mean ODE limit)")

    def limit_identity(self) -> tuple:
        """The values ``limit_fields`` is made of, as a hashable tuple: trials with equal
        identities have the same limit (planning caches references by it, computing one key per
        distinct limit rather than one per trial)."""
        t = self.limit  # lr_scaling is mean_field (the only one with a limit): the limit is keyed as before
        return (t.problem, t.D, t.activation, t.block, t.limit_alpha, t.sigma_u, t.sigma_v, t.lr, t.steps, t.dtype)

    def limit_fields(self) -> dict:
        """Exactly what the Mean ODE limit depends on: no trial seed, and L or M only through
        the effective mlu multiplier ``limit.limit_alpha`` (completep's depends on M)."""
        problem, D, activation, block, alpha, sigma_u, sigma_v, lr, steps, dtype = self.limit_identity()
        return {
            "problem": problem.numerics(), "D": D, "activation": activation, "block": block,
            "scaling": list(PRESETS["mlu"]), "alpha": alpha, "sigma_u": sigma_u, "sigma_v": sigma_v,
            "lr": lr, "steps": steps, "dtype": dtype,
        }

    def key(self) -> str:
        """Stable hash of the limit's fields and this reference's resolution."""
        payload = {
            "limit": self.limit_fields(), "depth": self.depth, "width": self.width,
            "replicas": self.replicas, "seed": self.seed, "numerics_version": REFERENCE_NUMERICS_VERSION,
        }
        return stable_hash(payload)

    def particle_config(self, depth: int) -> TrialConfig:
        """The trial configuration that runs this reference's particles at a given depth: the mlu
        network at the limit's effective alpha (see ``TrialConfig.limit_alpha``)."""
        seeds = tuple(range(self.seed, self.seed + self.replicas))
        return self.limit.replace(L=depth, M=self.width, seeds=seeds, antithetic=True, device=self.device,
                                  preset="mlu", alpha=self.limit.limit_alpha, chaos_check=False)


# The largest reference's seeds start here: its units are never a trial's (seeds 0..S-1) nor a
# particle reference's (1_000_003, ...). With the trial's own seeds, a point whose layers draw
# one stream each (D*M >= UNIT_BLOCK) had the first row of every layer's units equal to the
# reference's, and the error vanished at that point for a reason that is not the model.
LARGEST_REFERENCE_SEED = 2_000_003


def largest_reference_config(config: TrialConfig, L: int, M: int, D: int) -> TrialConfig:
    """The companion paper's reference for ``config``: the grid's largest point (L, M, D), every
    other field the trial's, run with as many seeds as the trial but none a trial uses."""
    seeds = tuple(LARGEST_REFERENCE_SEED + s for s in config.seeds)
    return config.replace(L=L, M=M, D=D, seeds=seeds)


def largest_reference_key(config: TrialConfig) -> str:
    """Key of the ``largest`` reference made from this grid point (trials/reference.py)."""
    return stable_hash({"kind": "largest", "trial": config.numerics()})


def resolve_device(name: str) -> "torch.device":
    """'auto' -> cuda when available, else cpu; 'cuda' without a GPU is a clear error."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device", "device 'cuda' requested but no CUDA device is available; use device='cpu' or 'auto'")
    return torch.device(name)


def torch_dtype(name: str) -> "torch.dtype":
    _choice("dtype", name, tuple(DTYPES))
    return DTYPES[name]


# The joint limit's configuration lives here, beside the others, not in joint_limit.py: reading a
# spec that names it must not import torch (the reading commands import neither Ray nor torch).
JOINT_LIMIT_KIND = "joint_limit"
JOINT_LIMIT_GRAMS = ("expected", "empirical")


@dataclass(frozen=True)
class JointLimitConfig:
    """The joint limit of one trial group (any L, M, trial seed): its limit-defining fields and
    the resolution of the depth integration."""

    limit: TrialConfig  # any trial of the group; its L, M, seeds and antithetic are ignored
    grid: int = 256  # RK4 steps over depth s in [0, 1]; the error estimate reruns at grid / 2
    gram: str = "expected"  # expected: the joint limit (D -> infinity); empirical: this D's W_E, W_U

    def __post_init__(self) -> None:
        t = self.limit
        if not isinstance(t, TrialConfig):
            raise TypeError(f"limit must be a TrialConfig, got {type(t).__name__}")
        if t.activation != "identity":
            raise ConfigError(
                "activation",
                f"reference kind joint_limit is exact for activation 'identity' only, got {t.activation!r}; use kind mean_ode or largest",
            )
        if t.preset not in ("mlu", "lazy"):
            raise ConfigError("preset", f"reference kind joint_limit needs the residual scale alpha / (L M) (preset mlu or lazy), got {t.preset!r}")
        if not t.plain_gd:
            raise ConfigError("optimizer", f"reference kind joint_limit: {t.no_limit_reason()}; use reference kind 'largest'")
        if t.lr_scaling != "mean_field":
            raise ConfigError("lr_scaling", f"reference kind joint_limit is the limit of the mean-field step; {t.no_limit_reason()}; "
                              "use reference kind 'largest'")
        if t.block != "2lp":
            raise ConfigError("block", f"reference kind joint_limit is derived for block '2lp', got {t.block!r}")
        if isinstance(self.grid, bool) or not isinstance(self.grid, int) or self.grid < 2 or self.grid % 2:
            raise ConfigError("reference.grid", f"reference.grid must be an even integer >= 2 (a half grid estimates the error), got {self.grid!r}")
        if self.gram not in JOINT_LIMIT_GRAMS:
            raise ConfigError("reference.gram", f"unknown reference.gram {self.gram!r}; expected one of: {', '.join(JOINT_LIMIT_GRAMS)}")

    def limit_identity(self) -> tuple:
        """``limit_fields`` as a hashable tuple (see ``ReferenceConfig.limit_identity``)."""
        return ReferenceConfig(self.limit).limit_identity()

    def limit_fields(self) -> dict:
        """What the limit depends on: the same fields as a mean_ode reference (no L, M, seed)."""
        return ReferenceConfig(self.limit).limit_fields()

    def key(self) -> str:
        return stable_hash({
            "kind": JOINT_LIMIT_KIND, "limit": self.limit_fields(), "grid": self.grid, "gram": self.gram,
            "numerics_version": REFERENCE_NUMERICS_VERSION, "joint_limit_version": JOINT_LIMIT_VERSION,
        })
