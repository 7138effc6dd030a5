"""``train_trial``: one grid point, all its seeds, trained and measured against its reference.

Pure: a validated config and a reference in, metric rows (plain dicts) out. No I/O, no Ray.

Divergence (status ``diverged``): a seed diverges at the first step k where its output has a
NaN/Inf, or its loss exceeds ``divergence_factor`` times its step-0 loss, or max |f| exceeds
``divergence_bound`` times the RMS of the targets. That row keeps its values; no later rows.

Flags (column ``flags``, comma-separated, "" when none), for rows that are not what the Mean ODE
picture measures although the run itself is fine; fits leave them out and count them:
- ``init_noise``: alpha_eff / sqrt(L M) > ``init_noise_limit`` without antithetic units (the
  initial branch output is O(1) or more: outside the Mean ODE picture, docs/model.md sections 3 and 6).
- ``chaotic`` (only with ``chaos_check``): a twin of the seed, its units nudged by a relative
  ``CHAOS_NUDGE`` (1e-12 in float64; 100 ulps in float32), ends up with outputs further than
  ``CHAOS_GROWTH`` times the nudge from the seed's (RMS over samples and outputs, relative to
  the targets' RMS, at any step): its trajectory does not depend continuously on its weights.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .config import TrialConfig, resolve_device, stream_seed
from .joint_limit import KIND as JOINT_LIMIT, JointLimitConfig, backward_along_depth, hidden_along_depth
from .metrics import DEPTH_METRICS, GRAMS, METRICS, Baseline, DepthSnapshot, Snapshot
from .model import ResNet, Scratch
from .reference import Reference

STATUS_OK = "ok"
STATUS_DIVERGED = "diverged"
FLAGS = ("init_noise", "chaotic")  # the vocabulary of the flags column, in written order
CHAOS_NUDGE = 1e-12  # relative nudge of the twin's units in float64 (float32: 100 ulps)
CHAOS_GROWTH = 1e4  # separation beyond this many nudges marks the seed chaotic
METRIC_NAMES = tuple(METRICS)
# A worker keeps the tensors of its last trial, up to this many bytes, for the next one of the
# same shape (``model.Scratch``); ``release_spares`` hands them back to the system.
SPARE_BYTES = 2 << 30
_spares_lock = threading.Lock()
_spares: dict = {}


def take_spares() -> dict:
    """The spare tensors of the last trial (this process), now the caller's alone."""
    global _spares
    with _spares_lock:
        spares, _spares = _spares, {}
    return spares


def keep_spares(spares: dict) -> None:
    """Keep these tensors (``Scratch.returned``) as the next trial's spares, if at most
    SPARE_BYTES in all, in place of any kept before."""
    global _spares
    if sum(t.numel() * t.element_size() for ts in spares.values() for t in ts) > SPARE_BYTES:
        spares = {}
    with _spares_lock:
        _spares = spares


def release_spares() -> None:
    """Drop the kept tensors (their memory goes back to the system)."""
    take_spares()


def chaos_nudge(dtype: torch.dtype) -> float:
    """The twin's relative nudge: 1e-12, or 100 ulps where 1e-12 is not representable."""
    return max(CHAOS_NUDGE, 100 * torch.finfo(dtype).eps)


def _nudged_twin(config: TrialConfig, net: ResNet) -> ResNet:
    """A copy of ``net`` (same seeds) whose units are multiplied by 1 + nudge * N(0, 1), the
    normals drawn on the CPU in float64 from each seed's own stream (same twin on every device)."""
    twin = ResNet(config, units=net.units.clone())
    nudge = chaos_nudge(net.dtype)
    L, R, D, M = net.units.u.shape
    for r, seed in enumerate(config.seeds):
        gen = torch.Generator().manual_seed(stream_seed("chaos", int(seed)))
        for t in (twin.units.u, twin.units.v):
            noise = torch.randn(L, D, M, generator=gen, dtype=torch.float64).mul_(nudge).add_(1.0)
            t[:, r].mul_(noise.to(device=t.device, dtype=t.dtype))
    return twin


def blown_up(config: TrialConfig, out: torch.Tensor, loss: torch.Tensor, loss0: torch.Tensor, y_rms: float) -> torch.Tensor:
    """The divergence rule (module docstring), per repetition: (R,) bool."""
    finite = torch.isfinite(out).all(dim=(1, 2))
    too_big = out.abs().amax(dim=(1, 2)) > config.divergence_bound * y_rms
    grew = loss > config.divergence_factor * loss0
    return ~finite | too_big | grew


def check_compatible(config: TrialConfig, reference: Reference) -> None:
    """A reference can serve a trial only if it was trained for as many steps, on outputs and
    hidden states it can be compared with."""
    out, hidden = reference.arrays["out"], reference.arrays["hidden"]
    p = config.problem
    if out.shape[0] != config.steps + 1:
        raise ValueError(f"reference {reference.key} has {out.shape[0] - 1} steps, the trial has steps={config.steps}")
    if out.shape[1:] != (p.samples, p.d_out):
        raise ValueError(f"reference {reference.key} outputs have shape {out.shape[1:]}, the trial needs {(p.samples, p.d_out)}")
    if hidden.shape[2] < config.D:
        raise ValueError(f"reference {reference.key} has hidden width {hidden.shape[2]} < D={config.D}")


def train_trial(config: TrialConfig, reference: Reference) -> list[dict]:
    """Train every seed of ``config`` for K steps and measure each step k = 0..K.

    Args:
        config: the grid point; its seeds run as one batch.
        reference: the trial's reference (same data, embeddings and limit knobs, K steps).

    Returns:
        One dict per (seed, step): ``config.columns()`` plus seed, step, the METRICS values,
        the GRAMS rows (``gram_out``, ``gram_hidden``: this seed's row of the step's Gram
        matrix, see ``seed_gram_rows``), the DEPTH_METRICS values (``err_hidden_depthmax``,
        ``err_hidden_depthmean``, ``err_backward``; None unless the reference gives its depth path,
        kind joint_limit), ref_loss, ref_err_out, ref_err_hidden, status, flags,
        ref_key, ref_kind, device, wall_s.
        A seed that diverges (module docstring) gets a last row with status "diverged" and no
        further rows; divergence never raises. ``flags`` is a comma-separated subset of FLAGS.

    Raises:
        ValueError: the reference does not fit the trial (steps, output shape, width).
    """
    check_compatible(config, reference)
    started = time.perf_counter()
    scratch = Scratch(take_spares())
    try:
        steps = _measure(config, reference, scratch)
    finally:
        keep_spares(scratch.returned())
    return trial_rows(config, reference, steps, wall_s=time.perf_counter() - started)


@dataclass
class Steps:
    """What a trial measured, per step k (lists indexed like ``k``): metrics (R, len(METRICS))
    and grams (len(GRAMS), R, R) as float64 numpy arrays, the repetitions alive (not diverged
    before k) and blown (diverged at k); and per repetition its flags."""

    k: list[int] = field(default_factory=list)
    metrics: list[np.ndarray] = field(default_factory=list)
    grams: list[np.ndarray] = field(default_factory=list)
    depth: list[dict[str, np.ndarray]] = field(default_factory=list)  # DEPTH_METRICS served: name -> (R,)
    alive: list[list[bool]] = field(default_factory=list)
    blown: list[list[bool]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


def _measure(config: TrialConfig, reference: Reference, scratch: Scratch) -> Steps:
    """Train and measure every step (``train_trial``), one device-to-host transfer per step."""
    net = ResNet(config, alloc=scratch)
    R = len(net.seeds)
    ref_out = torch.as_tensor(reference.arrays["out"], device=net.device, dtype=net.dtype)
    ref_hidden = torch.as_tensor(reference.arrays["hidden"][:, :, : config.D], device=net.device, dtype=net.dtype)
    along = depth_paths(config, reference, net)
    alive = [True] * R
    steps = Steps()
    baseline = loss0 = None
    y_rms = float(net.problem.y.double().square().mean().sqrt())
    twin = _nudged_twin(config, net) if config.chaos_check else None
    twin_steps = twin.trajectory() if twin is not None else None
    separation = torch.zeros(R, dtype=torch.float64)
    for k, fwd in net.trajectory():
        if baseline is None:
            baseline = Baseline(net, fwd.out.clone())  # before the first step: net.units are u_0
        snapshot = Snapshot(net, fwd, baseline, ref_out[k], ref_hidden[k])
        values = [fn(snapshot).to(torch.float64) for fn in METRICS.values()]
        loss_k = values[METRIC_NAMES.index("loss")]  # the loss metric is net.loss(out) in float64
        if loss0 is None:
            loss0 = loss_k.clone()
        blown_k = blown_up(config, fwd.out, loss_k, loss0, y_rms)
        grams = [fn(snapshot) for fn in GRAMS.values()]
        depth = {} if along is None else depth_values(DepthSnapshot(net, fwd, *(a if a is None else a[k] for a in along)))
        host = torch.cat([torch.stack(values, dim=1).flatten(), blown_k.to(torch.float64),
                          torch.stack(grams).flatten(), *depth.values()]).cpu().numpy()
        cut, grams_end = R * len(values), R * len(values) + R + len(grams) * R * R
        blown = (host[cut:cut + R] != 0).tolist()
        steps.k.append(k)
        steps.metrics.append(host[:cut].reshape(R, len(values)))
        steps.grams.append(host[cut + R:grams_end].reshape(len(grams), R, R))
        steps.depth.append(dict(zip(depth, host[grams_end:].reshape(len(depth), R))))
        steps.alive.append(list(alive))
        steps.blown.append(blown)
        if twin_steps is not None:
            _, twin_fwd = next(twin_steps)
            gap = (twin_fwd.out - fwd.out).to(torch.float64).square().mean(dim=(1, 2)).sqrt().cpu() / y_rms
            live = torch.tensor(alive)
            # maximum, not fmax: a twin that turns NaN while its seed does not is chaotic
            separation = torch.where(live, torch.maximum(separation, gap), separation)
        alive = [a and not b for a, b in zip(alive, blown)]
        if not any(alive):
            break
    steps.flags = trial_flags(config, separation.tolist() if twin is not None else None, net.dtype)
    return steps


def trial_rows(config: TrialConfig, reference: Reference, steps: Steps, wall_s: float) -> list[dict]:
    """The rows of ``train_trial`` from what it measured, in (seed, step) order."""
    ref_columns = [(name, reference.arrays[source].tolist())
                   for name, source in (("ref_loss", "loss"), ("ref_err_out", "err_out"), ("ref_err_hidden", "err_hidden"))]
    base = dict(config.columns(), ref_key=reference.key, ref_kind=reference.kind,
                device=resolve_device(config.device).type)
    seeds = config.seeds
    gram_rows = [[masked_gram_rows(g, [a and not b for a, b in zip(alive, blown)], seeds) for g in grams]
                 for grams, alive, blown in zip(steps.grams, steps.alive, steps.blown)]
    metrics = [m.tolist() for m in steps.metrics]
    rows = []
    for r in sorted(range(len(seeds)), key=lambda r: seeds[r]):
        for i, k in enumerate(steps.k):
            if not steps.alive[i][r]:
                break
            row = dict(base, seed=seeds[r], step=k)
            row.update(zip(METRIC_NAMES, metrics[i][r]))
            row.update(depth_columns(steps.depth[i], r))
            row.update((name, rows_k[r]) for name, rows_k in zip(GRAMS, gram_rows[i]))
            row.update((name, column[k]) for name, column in ref_columns)
            row["status"] = STATUS_DIVERGED if steps.blown[i][r] else STATUS_OK
            row["wall_s"] = wall_s
            row["flags"] = steps.flags[r]
            rows.append(row)
    return rows


def masked_gram_rows(gram: np.ndarray, ok: list[bool], seeds) -> list[list[float]]:
    """``seed_gram_rows`` of a host array."""
    order = sorted(range(len(seeds)), key=lambda r: seeds[r])
    mask = np.asarray(ok, dtype=bool)
    kept = np.where(mask[:, None] & mask[None, :], gram, np.nan)
    return kept[:, order].tolist()


def depth_paths(config: TrialConfig, reference: Reference, net: ResNet) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The reference's hidden and backward states at each of the trial's block outputs, each
    (K+1, L+1, N, D) float64 on the trial's device, when the reference provides its depth path
    (kind joint_limit; the backward one None in a record made before it was stored); else None."""
    if reference.kind != JOINT_LIMIT or "path" not in reference.arrays:
        return None
    limit = JointLimitConfig(config, grid=int(reference.meta["grid"]), gram=reference.meta.get("gram", "expected"))
    backward = backward_along_depth(reference, limit, config.L)
    return tuple(None if a is None else torch.as_tensor(a, device=net.device, dtype=torch.float64)
                 for a in (hidden_along_depth(reference, limit, config.L), backward))


def depth_values(snapshot: DepthSnapshot) -> dict[str, torch.Tensor]:
    """The DEPTH_METRICS of one step that its reference serves: name -> (R,) float64."""
    values = {name: fn(snapshot) for name, fn in DEPTH_METRICS.items()}
    return {name: value for name, value in values.items() if value is not None}


def depth_columns(values: dict[str, np.ndarray], r: int) -> dict[str, float | None]:
    """Repetition r's DEPTH_METRICS columns from a step's measured ones (``Steps.depth``): None
    for a metric not measured (no depth path, or a reference that cannot serve it)."""
    return {name: None if name not in values else float(values[name][r]) for name in DEPTH_METRICS}


def seed_gram_rows(gram: torch.Tensor, ok: list[bool], seeds) -> list[list[float]]:
    """Each repetition's row of an (R, R) Gram matrix (``trials.metrics.GRAMS``), its entries in
    ascending seed order, as stored: NaN in the entries of a seed not ok at this step (diverged
    now or before), and a whole row of NaN for such a seed itself. Indexed like ``seeds``."""
    return masked_gram_rows(gram.to(torch.float64).cpu().numpy(), ok, seeds)


def trial_flags(config: TrialConfig, separation: list[float] | None, dtype: torch.dtype) -> list[str]:
    """The flags of each seed's rows (module docstring): one comma-separated string per seed.

    Args:
        separation: per seed, the largest output separation of its nudged twin (relative to the
            targets' RMS) over the steps both ran; None when no chaos check ran.
    """
    common = ["init_noise"] if config.init_noise > config.init_noise_limit else []
    out = []
    for r in range(len(config.seeds)):
        chaotic = separation is not None and not separation[r] <= CHAOS_GROWTH * chaos_nudge(dtype)
        out.append(",".join(common + (["chaotic"] if chaotic else [])))
    return out
