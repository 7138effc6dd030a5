"""``train_trial``: one grid point, all its seeds, trained and measured against its reference;
``train_fused``: the points of one shape (``TrialConfig.fusion_key``) trained as one program.

Pure: validated configs and their references in, metric rows (plain dicts) out. No I/O, no Ray.

A pack (``train_fused``) draws the units of a seed index once for all its points, and then
either (the default, on every device) trains its points one after another, each from its share
of the draw, or (``batched=True``) trains its points' seeds side by side on one batch axis
(``ResNet.fused``): each layer's products run once for the pack (once per run of points sharing
a residual scale or step size). Each point is measured as it would be alone (``PointMeter``):
its part of the pass goes through the same metric code. One after another, a point's rows are
those of ``train_trial`` bit for bit on a CPU and on CUDA (a test), and ``train_trial`` is a pack
of one. Batched, they are bit for bit on a CPU only: on CUDA cuBLAS chooses other kernels for a
batch than for one matrix, and the rows differ (docs/numerics.md), so a
trial's numbers would depend on the pack it fell in. On a CPU the batch brings nothing but extra
copies anyway: one thread's step costs the same per seed with 4 or 32 seeds in the batch (bound
by memory traffic), while measuring a point's part of a batch copies its blocks
(docs/benchmarks.md, "Fused points"). A point whose
seeds have all diverged is no longer measured and its rows end as alone; the pack runs on while
any point has a seed alive.

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

from .config import FUSION_FIELDS, TrialConfig, resolve_device, stream_seed
from .coordcheck import COORD_COLUMNS, CoordCheck
from .joint_limit import KIND as JOINT_LIMIT, JointLimitConfig, backward_along_depth, hidden_along_depth
from .metrics import DEPTH_METRICS, GRAMS, METRICS, Baseline, DepthSnapshot, Snapshot
from .model import Forward, ResNet
from .no_reference import MEASURES_ERROR, REFERENCE_COLUMNS
from .units import Scratch, Units
from .reference import Reference

STATUS_OK = "ok"
STATUS_DIVERGED = "diverged"
FLAGS = ("init_noise", "chaotic")  # the vocabulary of the flags column, in written order
CHAOS_NUDGE = 1e-12  # relative nudge of the twin's units in float64 (float32: 100 ulps)
CHAOS_GROWTH = 1e4  # separation beyond this many nudges marks the seed chaotic
METRIC_NAMES = tuple(METRICS)
# held-out metrics of a problem with test samples (ResNet.test_metrics), None in the rows of one without
TEST_METRICS = ("test_loss", "test_err_out")
# A worker keeps the tensors of its last trial, up to this many bytes, for the next one of the
# same shape (``units.Scratch``); ``release_spares`` hands them back to the system.
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


def _nudged_twin(net: ResNet, configs: list[TrialConfig], slots: list[int]) -> ResNet:
    """A copy of these slots of ``net`` (same seeds; the pack of ``configs``) whose units are
    multiplied by 1 + nudge * N(0, 1), the normals drawn on the CPU in float64 from each seed's
    own stream (same twin on every device, and for every point of a seed)."""
    units = Units(*(torch.cat([getattr(net.slot_units(i), name) for i in slots], dim=1) for name in ("u", "v")))
    twin = ResNet.fused(configs, units=units)
    nudge = chaos_nudge(net.dtype)
    L, _, D, M = units.u.shape
    for r, seed in enumerate(twin.seeds):
        gen = torch.Generator().manual_seed(stream_seed("chaos", int(seed)))
        for t in (units.u, units.v):
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
        matrix, see ``seed_gram_rows``), the coordinate check (``COORD_COLUMNS``, trials/coordcheck.py:
        None in a depth bin without blocks), the DEPTH_METRICS values (``err_hidden_depthmax``,
        ``err_hidden_depthmean``, ``err_backward``; None unless the reference gives its depth path,
        kind joint_limit), ref_loss, ref_err_out, ref_err_hidden, status, flags,
        ref_key, ref_kind, device, wall_s.
        A seed that diverges (module docstring) gets a last row with status "diverged" and no
        further rows; divergence never raises. ``flags`` is a comma-separated subset of FLAGS.

    Raises:
        ValueError: the reference does not fit the trial (steps, output shape, width).
    """
    return train_fused([config], [reference])[0]


def train_fused(configs: list[TrialConfig], references: list[Reference], batched: bool = False) -> list[list[dict]]:
    """Train the points of one shape as one program and measure each as ``train_trial``.

    Args:
        configs: the points, validated, all with one ``TrialConfig.fusion_key()`` (L, M, D, dtype,
            steps, activation, block, device, samples, d_out); any other field (preset, alpha,
            lr, sigma_u, sigma_v, problem, seeds and their number, antithetic, chaos_check, the
            divergence and flag limits) may differ from point to point.
        references: each point's reference, in the same order.
        batched: train the points as one batch (True: rows bit for bit those alone on a CPU only)
            or one after another from one draw (False, the default: bit for bit everywhere;
            module docstring).

    Returns:
        Per point, in the same order, its rows exactly as ``train_trial(config, reference)``
        gives them (the same numbers), except ``wall_s``: the pack's wall time divided by its
        number of points, each point's share.

    Raises:
        ValueError: no points, points of different shapes, as many references as points not
            given, or a reference that does not fit its point (``check_compatible``).
    """
    configs, references = list(configs), list(references)
    check_pack(configs, references)
    started = time.perf_counter()
    scratch = Scratch(take_spares())
    try:
        if batched or len(configs) == 1:
            measured = _measure(configs, references, scratch)
        else:  # one after another, each from the streams drawn for the first, in the last one's tensors
            measured, streams = [], {}
            for config, reference in zip(configs, references):
                measured += _measure([config], [reference], scratch, streams)
                scratch = Scratch(scratch.returned())
    finally:
        keep_spares(scratch.returned())
    wall_s = (time.perf_counter() - started) / len(configs)
    return [trial_rows(c, r, m, wall_s) for c, r, m in zip(configs, references, measured)]


def check_pack(configs: list[TrialConfig], references: list[Reference]) -> None:
    """``train_fused``'s argument checks (its Raises), one line each."""
    if not configs:
        raise ValueError("a pack needs at least one point; got no configs")
    if len(references) != len(configs):
        raise ValueError(f"a pack needs one reference per point: got {len(configs)} configs and {len(references)} references")
    for i, config in enumerate(configs):
        if not isinstance(config, TrialConfig):
            raise TypeError(f"pack point {i} must be a TrialConfig, got {type(config).__name__}")
    first = configs[0].fusion_key()
    for i, config in enumerate(configs):
        key = config.fusion_key()
        if key != first:
            name, got, want = next((n, g, w) for n, g, w in zip(FUSION_FIELDS, key, first) if g != w)
            raise ValueError(f"the points of a pack share their shape: point {i} has {name}={got!r}, point 0 {name}={want!r}")
    for config, reference in zip(configs, references):
        check_compatible(config, reference)


@dataclass
class Steps:
    """What a trial measured, per step k (lists indexed like ``k``): metrics (R, len(METRICS))
    and grams (len(GRAMS), R, R) as float64 numpy arrays, the repetitions alive (not diverged
    before k) and blown (diverged at k); and per repetition its flags."""

    k: list[int] = field(default_factory=list)
    metrics: list[np.ndarray] = field(default_factory=list)
    grams: list[np.ndarray] = field(default_factory=list)
    depth: list[dict[str, np.ndarray]] = field(default_factory=list)  # DEPTH_METRICS served: name -> (R,)
    coord: list[np.ndarray] = field(default_factory=list)  # (len(COORD_COLUMNS), R): the coordinate check
    coord_empty: list[bool] = field(default_factory=list)  # per depth bin: no block in it (null columns)
    test: list[np.ndarray] = field(default_factory=list)  # (R, 2): test_loss, test_err_out (a test set only)
    alive: list[list[bool]] = field(default_factory=list)
    blown: list[list[bool]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


class PointMeter:
    """One point of a pack, measured as if trained alone: its part of each pass and of each
    backward sweep (views into the pack's tensors; a point alone: the tensors themselves) goes
    through ``metrics`` as ``train_trial``'s does, and its own ``Baseline`` observes its steps."""

    def __init__(self, pack: ResNet, index: int, config: TrialConfig, reference: Reference):
        slot = pack.slots[index]
        self.config, self.lo, self.hi = config, slot.lo, slot.hi
        self.alone = len(pack.slots) == 1
        # the point's own network: its problem and scalars, its units views into the pack's
        self.net = ResNet(config, units=pack.slot_units(index), alloc=pack.alloc, problem=slot.problem)
        self.ref_out = torch.as_tensor(reference.arrays["out"], device=pack.device, dtype=pack.dtype)
        self.ref_hidden = torch.as_tensor(reference.arrays["hidden"][:, :, : config.D], device=pack.device, dtype=pack.dtype)
        self.along = depth_paths(config, reference, self.net)
        self.y_rms = float(slot.problem.y.double().square().mean().sqrt())
        self.alive = [True] * len(config.seeds)
        self.steps = Steps()
        self.baseline: Baseline | None = None
        self.coord: CoordCheck | None = None
        self.loss0: torch.Tensor | None = None
        self.separation = torch.zeros(len(config.seeds), dtype=torch.float64)
        self._depth_names: list[str] = []  # the depth metrics served, in ``measure``'s order
        self._blown: list[bool] = []  # the last recorded step's
        self._tested = False  # the problem holds a test set (``measure`` appends its two metrics)

    @property
    def live(self) -> bool:
        return any(self.alive)

    @property
    def needs_backward(self) -> bool:
        """Whether its depth metrics read the backward states (a pass with no step after it
        then needs its own backward sweep)."""
        return self.along is not None and self.along[1] is not None

    def _part(self, t: torch.Tensor) -> torch.Tensor:
        """This point's repetitions of a pack tensor (L, R_pack, ...): an (L, R, ...) view."""
        return t if self.alone else t[:, self.lo:self.hi]

    def measure(self, k: int, fwd: Forward, sweep: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None] | None) -> torch.Tensor:
        """Step k's metrics from the pack's pass (and its backward sweep, when one was taken),
        then, if the pack steps, the baseline's observation of that step. Returns what goes to
        the host: metrics (R, len(METRICS)), blown (R,), grams (len(GRAMS), R, R), the depth
        metrics served (R each), flattened in float64; ``record`` reads it back."""
        own = fwd if self.alone else Forward(self._part(fwd.hidden), self._part(fwd.preact), self._part(fwd.activated),
                                             fwd.out[self.lo:self.hi])
        if sweep is not None:
            cotangent, gated, q = (None if t is None else self._part(t) for t in sweep)
            self.net.adopt_backprop(own, cotangent, gated)
        if self.baseline is None:
            self.baseline = Baseline(self.net, own.out.clone())  # before the first step: the units are u_0
            self.coord = CoordCheck(own)  # and the block outputs h_l(0)
        snapshot = Snapshot(self.net, own, self.baseline, self.ref_out[k], self.ref_hidden[k])
        values = [fn(snapshot).to(torch.float64) for fn in METRICS.values()]
        loss_k = values[METRIC_NAMES.index("loss")]  # the loss metric is net.loss(out) in float64
        if self.loss0 is None:
            self.loss0 = loss_k.clone()
        blown_k = blown_up(self.config, own.out, loss_k, self.loss0, self.y_rms)
        grams = [fn(snapshot) for fn in GRAMS.values()]
        depth = {} if self.along is None else depth_values(DepthSnapshot(self.net, own, *(a if a is None else a[k] for a in self.along)))
        self._depth_names = list(depth)
        test = self.net.test_metrics()
        self._tested = test is not None
        if sweep is not None and q is not None:  # the pack steps: the baseline observes it
            self.baseline(self.net, own, cotangent, gated, q)
        return torch.cat([torch.stack(values, dim=1).flatten(), blown_k.to(torch.float64),
                          torch.stack(grams).flatten(), self.coord(own).flatten(), *depth.values(),
                          *(() if test is None else (test.flatten(),))])

    def record(self, k: int, host: np.ndarray) -> None:
        """Step k's measured values from ``measure``'s host copy."""
        R = len(self.config.seeds)
        cut = R * len(METRICS)
        grams_end = cut + R + len(GRAMS) * R * R
        coord_end = grams_end + len(COORD_COLUMNS) * R
        blown = (host[cut:cut + R] != 0).tolist()
        steps = self.steps
        steps.k.append(k)
        steps.metrics.append(host[:cut].reshape(R, len(METRICS)))
        steps.grams.append(host[cut + R:grams_end].reshape(len(GRAMS), R, R))
        steps.coord.append(host[grams_end:coord_end].reshape(len(COORD_COLUMNS), R))
        depth_end = coord_end + len(self._depth_names) * R
        steps.depth.append(dict(zip(self._depth_names, host[coord_end:depth_end].reshape(len(self._depth_names), R))))
        if self._tested:
            steps.test.append(host[depth_end:depth_end + 2 * R].reshape(R, 2))
        steps.alive.append(list(self.alive))
        steps.blown.append(blown)
        self._blown = blown

    def separate(self, twin_out: torch.Tensor, out: torch.Tensor) -> None:
        """The chaos check: its twin's output separation at this step, kept where larger."""
        gap = (twin_out - out[self.lo:self.hi]).to(torch.float64).square().mean(dim=(1, 2)).sqrt().cpu() / self.y_rms
        live = torch.tensor(self.alive)
        # maximum, not fmax: a twin that turns NaN while its seed does not is chaotic
        self.separation = torch.where(live, torch.maximum(self.separation, gap), self.separation)

    def step_done(self) -> None:
        """After a measured step: seeds that blew up are no longer alive."""
        self.alive = [a and not b for a, b in zip(self.alive, self._blown)]

    def finish(self, dtype: torch.dtype) -> Steps:
        self.steps.flags = trial_flags(self.config, self.separation.tolist() if self.config.chaos_check else None, dtype)
        self.steps.coord_empty = self.coord.empty
        return self.steps


def _measure(configs: list[TrialConfig], references: list[Reference], scratch: Scratch,
             streams: dict | None = None) -> list[Steps]:
    """Train the pack as one batch and measure every live point at every step (``train_fused``):
    one device-to-host transfer per step for the whole pack. ``streams``: the unit draw's cache."""
    net = ResNet.fused(configs, alloc=scratch, streams=streams)
    net.keep_q = True  # the points' baselines observe the pack's steps outside it (PointMeter.measure)
    points = [PointMeter(net, i, c, r) for i, (c, r) in enumerate(zip(configs, references))]
    chaos = [i for i, c in enumerate(configs) if c.chaos_check]
    twin = _nudged_twin(net, [configs[i] for i in chaos], chaos) if chaos else None
    twin_steps = twin.trajectory() if twin is not None else None
    K = net.config.steps
    for k in range(K + 1):
        fwd = net.forward()
        live = [p for p in points if p.live]
        sweep = None
        if k < K or any(p.needs_backward for p in live):
            cotangent, gated = net.backprop(fwd)
            sweep = (cotangent, gated, net.q if k < K else None)
        measured = [p.measure(k, fwd, sweep) for p in live]
        host = torch.cat(measured).cpu().numpy()
        for p, part in zip(live, np.split(host, np.cumsum([t.numel() for t in measured])[:-1])):
            p.record(k, part)
        if twin_steps is not None:
            _, twin_fwd = next(twin_steps)
            for slot, i in enumerate(chaos):
                if points[i].live:
                    points[i].separate(twin_fwd.out[twin.slots[slot].lo:twin.slots[slot].hi], fwd.out)
        for p in live:
            p.step_done()
        if not any(p.live for p in points):
            break
        if k < K:
            net.update(fwd)
    return [p.finish(net.dtype) for p in points]


def trial_rows(config: TrialConfig, reference: Reference, steps: Steps, wall_s: float) -> list[dict]:
    """The rows of ``train_trial`` from what it measured, in (seed, step) order."""
    ref_columns = [(name, reference.arrays[source].tolist())
                   for name, source in (("ref_loss", "loss"), ("ref_err_out", "err_out"), ("ref_err_hidden", "err_hidden"))]
    base = dict(config.columns(), ref_key=reference.key, ref_kind=reference.kind,
                device=resolve_device(config.device).type)
    seeds = config.seeds
    measures_error = reference.meta.get(MEASURES_ERROR, True)
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
            row.update(zip(TEST_METRICS, steps.test[i][r].tolist() if steps.test else (None, None)))
            row.update(coord_columns(steps.coord[i], r, steps.coord_empty))
            row.update((name, rows_k[r]) for name, rows_k in zip(GRAMS, gram_rows[i]))
            row.update((name, column[k]) for name, column in ref_columns)
            row["status"] = STATUS_DIVERGED if steps.blown[i][r] else STATUS_OK
            row["wall_s"] = wall_s
            row["flags"] = steps.flags[r]
            if not measures_error:  # the none kind: no reference, so no error (null, never NaN)
                row.update(dict.fromkeys(REFERENCE_COLUMNS))
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


def coord_columns(values: np.ndarray, r: int, empty: list[bool]) -> dict[str, float | None]:
    """Repetition r's coordinate-check columns (trials.coordcheck) from a step's measured ones
    (``Steps.coord``): None in a depth bin that holds no block."""
    bins = len(empty)
    return {name: None if empty[i % bins] else float(values[i, r]) for i, name in enumerate(COORD_COLUMNS)}


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
