"""The reference a trial is compared with (docs/model.md section 3).

``mean_ode``: a particle solution of the Neural Mean ODE. The same training as the trial, on a
network of depth L_ref and width M_ref, sharing the data, embeddings and every limit-defining
knob but never the unit parameters. Particles come in antithetic pairs (u, v), (u, -v), which
cancels the initial output noise exactly. R_ref >= 2 independent replicas run as one batch;
their mean is the reference, their spread / sqrt(R_ref) estimates its sampling error. The Euler
discretization error uses common random numbers: each replica is run again at depth L_ref / 2
with the same particles, layers 2i and 2i+1 merged into one layer of 2 M_ref units (``halve``).
The O(1/L) error at L_ref / 2 is about twice that at L_ref, so the two runs differ by about the
error at L_ref, while the sampling noise (same particles) largely cancels; what is left of it is
estimated from the replicas' spread of that difference and subtracted (``_discretization``).
The trial's limit is the mlu Mean ODE at ``TrialConfig.limit_alpha`` (completep's depends on M);
depth_mup has none and is refused (``ReferenceConfig``).

``largest``: the companion paper's protocol for D-sweeps. The largest grid point of the sweep,
run with seeds no trial uses (``largest_reference_config``), is the reference of every point; its error estimate is the
spread of its seeds / sqrt(seeds) (no discretization part).

A reference is plain arrays plus JSON metadata (``to_record`` / ``from_record``), which is what
the store caches; trials never does I/O.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from .config import (NUMERICS_VERSION, REFERENCE_KINDS, REFERENCE_NUMERICS_VERSION, ReferenceConfig, TrialConfig,
                     largest_reference_key, resolve_device, torch_dtype)
from .model import ResNet, make_problem
from .units import Units, init_units


class ReferenceDiverged(RuntimeError):
    """The reference's own training blew up (NaN/Inf): no trial of its group can be measured."""


@dataclass
class Reference:
    """Arrays indexed by step k = 0..K, sample-major: out (K+1, N, d_out), hidden (K+1, N, D_ref),
    loss, err_out, err_hidden and their sampling / discretization parts (K+1,), all float64."""

    key: str
    kind: str
    arrays: dict[str, np.ndarray]
    meta: dict

    def to_record(self) -> tuple[dict[str, np.ndarray], dict]:
        meta = dict(self.meta, key=self.key, kind=self.kind)
        return dict(self.arrays), meta

    @classmethod
    def from_record(cls, arrays: dict[str, np.ndarray], meta: dict) -> "Reference":
        meta = dict(meta)
        key, kind = meta.pop("key"), meta.pop("kind")
        if kind not in REFERENCE_KINDS:  # joint_limit records come from trials/joint_limit.py
            raise ValueError(f"unknown reference kind {kind!r}; expected one of: {', '.join(REFERENCE_KINDS)}")
        missing = {"out", "hidden", "loss", "err_out", "err_hidden"} - set(arrays)
        if missing:
            raise ValueError(f"reference {key} lacks arrays: {', '.join(sorted(missing))}")
        return cls(key, kind, dict(arrays), meta)


def halve(units: Units) -> Units:
    """The same particles at half the depth: layers 2i and 2i+1 side by side as one layer of
    twice the width. (L, R, D, M) -> (L / 2, R, D, 2 M)."""
    def merge(t: torch.Tensor) -> torch.Tensor:
        L, R, D, M = t.shape
        # (L/2, 2, R, D, M) -> (L/2, R, D, 2, M) -> (L/2, R, D, 2M)
        return t.reshape(L // 2, 2, R, D, M).permute(0, 2, 3, 1, 4).reshape(L // 2, R, D, 2 * M).contiguous()
    return Units(merge(units.u), merge(units.v))


def trajectory(config: TrialConfig, units: Units | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """Run one batch of seeds (from ``units`` when given); return outputs (K+1, R, N, d_out) and
    last hidden states (K+1, R, N, D) as float64 numpy arrays, and the device it ran on."""
    net = ResNet(config, units=units)
    outs, hiddens = [], []
    for _, fwd in net.trajectory():
        # copies: the engine reuses its buffers at the next step
        outs.append(fwd.out.to(device="cpu", dtype=torch.float64, copy=True))
        hiddens.append(fwd.hidden[-1].to(device="cpu", dtype=torch.float64, copy=True))
    return torch.stack(outs).numpy(), torch.stack(hiddens).numpy(), net.device.type


def _targets(config: TrialConfig) -> np.ndarray:
    return make_problem(config, torch.device("cpu"), torch.float64).y.numpy()


def _spread(samples: np.ndarray) -> np.ndarray:
    """RMS over entries of the standard error of the mean over axis 1: (K+1, R, ...) -> (K+1,)."""
    replicas = samples.shape[1]
    if replicas < 2:
        return np.full(samples.shape[0], np.nan)
    sem = samples.std(axis=1, ddof=1) / math.sqrt(replicas)
    return np.sqrt((sem**2).reshape(samples.shape[0], -1).mean(axis=1))


def _discretization(half_minus_full: np.ndarray) -> np.ndarray:
    """Euler error at L_ref from each replica's half-depth twin (same particles), (K+1,).

    ``half_minus_full`` is (K+1, R, ...). Its replica mean estimates the O(1/L_ref) error; the
    mean square of that mean carries the noise sem^2 of the differences (their spread / sqrt(R)),
    which is subtracted; what remains (never below 0) is the discretization part.
    """
    mean = half_minus_full.mean(axis=1)
    mean_square = (mean**2).reshape(mean.shape[0], -1).mean(axis=1)
    return np.sqrt(np.clip(mean_square - _spread(half_minus_full) ** 2, 0.0, None))


def _loss(out: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ((out - y) ** 2).reshape(out.shape[0], -1).mean(axis=1)


def _seed_mean(out: np.ndarray, hidden: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays both kinds share: the mean over replicas (or seeds) of outputs and last hidden
    states, its loss, and the spread / sqrt(R) of each as its sampling error."""
    mean_out = out.mean(axis=1)
    return {
        "out": mean_out,
        "hidden": hidden.mean(axis=1),
        "loss": _loss(mean_out, y),
        "err_out_sampling": _spread(out),
        "err_hidden_sampling": _spread(hidden),
    }


def _check_finite(key: str, out: np.ndarray) -> None:
    bad = ~np.isfinite(out).reshape(out.shape[0], -1).all(axis=1)
    if bad.any():
        raise ReferenceDiverged(
            f"reference {key} diverged at step {int(np.argmax(bad))}: lower lr or alpha, or use float64"
        )


def compute_reference(config: ReferenceConfig) -> Reference:
    """Solve the Mean ODE with particles; see the module docstring for the error estimate.

    Raises:
        ReferenceDiverged: the particle system's output became NaN/Inf.
    """
    started = time.perf_counter()
    key = config.key()
    full_cfg = config.particle_config(config.depth)
    device_ = resolve_device(full_cfg.device)
    units = init_units(full_cfg, full_cfg.seeds, device_, torch_dtype(full_cfg.dtype))
    half_units = halve(units)  # before training: the engine updates ``units`` in place
    out, hidden, device = trajectory(full_cfg, units)
    _check_finite(key, out)
    half_cfg = full_cfg.replace(L=config.depth // 2, M=2 * config.width)
    half_out, half_hidden, _ = trajectory(half_cfg, half_units)
    _check_finite(key, half_out)
    arrays = _seed_mean(out, hidden, _targets(full_cfg))
    for name, full, half in (("out", out, half_out), ("hidden", hidden, half_hidden)):
        sampling = arrays[f"err_{name}_sampling"]
        disc = _discretization(half - full)
        arrays[f"err_{name}_discretization"] = disc
        arrays[f"err_{name}"] = np.hypot(sampling, disc)
    meta = {
        "limit": config.limit_fields(), "depth": config.depth, "width": config.width,
        "replicas": config.replicas, "seed": config.seed, "D": config.limit.D,
        "device": device, "numerics_version": REFERENCE_NUMERICS_VERSION,
        "wall_s": time.perf_counter() - started,
    }
    return Reference(key, "mean_ode", arrays, meta)


def reference_from_trial(config: TrialConfig) -> Reference:
    """The companion paper's reference: this (largest) grid point's run, averaged over its seeds
    (the planner gives it seeds no trial uses: ``largest_reference_config``). Its error estimate is the seeds' spread / sqrt(seeds), NaN with one seed."""
    started = time.perf_counter()
    key = largest_reference_key(config)
    out, hidden, device = trajectory(config)
    _check_finite(key, out)
    arrays = _seed_mean(out, hidden, _targets(config))
    arrays["err_out"], arrays["err_hidden"] = arrays["err_out_sampling"], arrays["err_hidden_sampling"]
    meta = {
        "trial": config.numerics(), "D": config.D, "L": config.L, "M": config.M,
        "problem": dataclasses.asdict(config.problem), "device": device, "numerics_version": NUMERICS_VERSION,
        "wall_s": time.perf_counter() - started,
    }
    return Reference(key, "largest", arrays, meta)
