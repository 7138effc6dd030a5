"""What a sweep will cost before it runs: memory and compute time per trial and reference.

Size: the one cost and memory model (trials, fused groups, references, this machine's memory)
that the planner, the packer, the progress line and the dry run all read; split, their prices
would drift apart.

The memory model counts the real buffers of ``trials`` (model.py, metrics.py, train.py,
reference.py) for one grid point, all its seeds batched; with W = L R D M unit coordinates,
H = L R N D hidden entries and A = L R N M preactivation entries (R seeds, N samples) and b
bytes per number of the working dtype:

- the units u, v (2 W b) and their step-0 copy for the metrics (2 W b), the metrics' two
  scratch chunks (at most 2^22 entries each, or one layer) and per-unit float64 norms;
- the forward and backward buffers: hidden and cotangent (2 H b), preactivations, activations
  and the gated cotangent (3 A b);
- the metrics of a step, in float64: the displacements dp and p0 (and their concatenation),
  then sigma at two points, their difference, the second-order rest and the products of
  ``lin_ratio``: about ``_METRIC_COPIES`` float64 arrays of A entries at the peak;
- the unit draw (init_units), which happens before all of that: every seed drawn in float64,
  then stacked (4 W 8 bytes at its peak, 2 W b more when converted to float32);
- the data (``make_problem``): X (N x d_in), Y (N x d_out) and the embeddings, drawn in
  float64, plus their float32 copy; the tensors of the outputs' shape (R, N, d_out) and of the
  last hidden state's (R, N, D) that a step's loss, divergence test and errors hold; the
  reference the trial is measured against (its outputs and hidden states at every step);
- the metrics' step observer: per layer of a block and seed, the (N, N) Gram matrices of the
  samples (H H^T, B B^T), and with the update history every step's factors: quadratic in N,
  this is what a trial of many samples needs most;
- ``chaos_check`` runs a twin: its units and buffers once more;
- the metric rows (about ``_ROW_BYTES`` per seed and step: Python dicts of ~30 columns, plus two
  Gram rows of R Python floats, ``_LIST_FLOAT_BYTES`` each).

A fused group (``trials.train_fused``, points of one shape) is priced from its points
(``fused_seconds``, ``FusedMemory``): their compute less the unit draws it shares, and their
memory at once (batched) or one point's plus the shared draw and the rows (one after another).

The peak is the larger of the draw and the run. A reference (``mean_ode``) holds the particle
units and their half-depth copy (4 W b at L_ref x M_ref x R_ref) plus one run's buffers and
data, and keeps every step's output and last hidden state (three such trajectories at once
while the half-depth run stacks its own), then the spread's temporaries or the targets' data
drawn again; the ``largest`` kind is a trial without metrics. ``PROCESS_BYTES`` (a worker's
Python, torch and the store's libraries, measured resident) is added once where a whole
machine is judged (``check_fits_memory``), against the memory available now
(``available_memory_bytes``: the kernel's MemAvailable, within a cgroup limit when one is set).

The time model is single-core seconds: a fixed cost, the Python loop over layers and steps, and
the batched tensor work per unit coordinate, sample, seed and step (memory-bound on CPUs), with
the metrics at every step; see ``_SECONDS`` for the constants and how they were measured.
Both are estimates for planning and refusing the impossible, not promises: the tests in
``tests/explorer/test_estimate.py`` hold the memory model within 2x of measured peaks (resident
high-water mark in a fresh process) over shapes where X, Y, the activations, the samples' Gram,
the hidden states, the units or the particles dominate, for trials and references.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from trials import METRICS_BLOCK, UNIT_BLOCK

from ..errors import spec_error
from ..formatting import format_bytes, format_seconds

if TYPE_CHECKING:
    from trials import JointLimitConfig, LimitReferenceConfig, TrialConfig

    from .planning import Plan
    from .sections import SweepSpec

_DTYPE_BYTES = {"float32": 4, "float64": 8}
_METRIC_COPIES = 9  # block-sized float64 scratch arrays alive at the metrics' peak (lin_ratio)
_DRAW_THREADS = 16  # blocks drawn at once: one per thread, bounded by a large host's cores
_ROW_BYTES = 3_000  # one metric row: a dict of ~30 Python values, measured ~2.5 KB
_LIST_FLOAT_BYTES = 32  # a float in a Python list (gram_out, gram_hidden): the object and its pointer
_OUTPUT_COPIES = 6  # float64 arrays of the outputs' shape (R, N, d_out) alive at once in a trial or reference run
_HIDDEN_COPIES = 3  # float64 arrays of the last hidden state's shape (R, N, D) in a step's metrics
_LINEAR_TARGET_COPIES = 2  # float64 temporaries of X while linear_target data are normalised and rescaled
PROCESS_BYTES = 600 * 2**20  # a trial worker: Python + torch + numpy + pyarrow, resident (measured ~450-550 MiB)

# Single-core seconds = fixed + per_layer_step * L * (K + 1) + per_entry[dtype] * L M D N R (K + 1)
# + draw * L D M R (the unit draw, in float64 whatever the dtype), metrics at every step included.
# The draw's coefficient is numpy's SFC64 ziggurat, ~8.4 ns per number on one core, two numbers
# (u and v) per L D M R (NUMERICS_VERSION 5; torch's randn, before, was ~5e-8).
# Least squares (relative) on 13 train_trial runs on this project's 2-core AMD EPYC machine (torch
# 2.13 CPU, one thread, 2026-11-30, other jobs sharing the cores) from (L, M, D, N, R, K) =
# (8, 4, 8, 10, 3, 10) to (16, 1024, 16, 100, 3, 3) and (32, 256, 64, 10, 3, 5), both dtypes:
# the model is within 0.4x - 1.3x of the measured wall times (0.88 - 1.26x on 9 of them; the
# low ones were measured while other jobs loaded the machine). Measured by the script in
# tests/explorer/test_estimate.py (``_MEASURE``).
# A joint_limit reference (trials/joint_limit.py), measured with tracemalloc and wall time on the
# same machine (2026-12-01): companion-linear-laptop's (K + 1 = 6, grid 128, N = 1, r = 6) 0.057 s
# and 2.9 MiB; K + 1 = 21, grid 512, N = 10, r = 10: 3.1 s and 43 MiB.
_JOINT_LIMIT = {"fixed_bytes": 2 * 2**20, "bytes_per_entry": 40, "fixed_s": 0.01, "per_step_pair_grid": 1.3e-5}
_SECONDS = {"fixed": 3e-3, "per_layer_step": 2e-4, "per_entry": {"float64": 1.5e-8, "float32": 7e-9}, "draw": 1.7e-8}


def _dims(config: "TrialConfig") -> tuple[int, int, int, int, int, int]:
    return config.L, config.M, config.D, config.problem.samples, len(config.seeds), _DTYPE_BYTES[config.dtype]


def _run_bytes(L: int, M: int, D: int, N: int, R: int, b: int) -> int:
    """The units and the forward/backward buffers of one ResNet (no metrics)."""
    W, H, A = L * R * D * M, (L + 1) * R * N * D, L * R * N * M
    return 2 * W * b + 2 * H * b + 3 * A * b


def _draw_bytes(L: int, M: int, D: int, R: int, b: int) -> int:
    """init_units at its peak: the units, and one float64 block of layers per drawing thread."""
    return 2 * L * R * D * M * b + _DRAW_THREADS * max(UNIT_BLOCK, D * M) * 8


def _problem_bytes(config: "TrialConfig") -> int:
    """``make_problem`` at its peak: X (N, d_in), Y (N, d_out) and the embeddings (width, d_in +
    d_out) drawn in float64, plus their copy in a float32 working dtype; ``linear_target`` data
    are normalised and rescaled through ``_LINEAR_TARGET_COPIES`` temporaries of X."""
    p = config.problem
    N, width, b = p.samples, p.coupled_dim or config.D, _DTYPE_BYTES[config.dtype]
    drawn = (N + width) * (p.d_in + p.d_out) * 8
    if p.data == "linear_target":
        drawn += _LINEAR_TARGET_COPIES * N * p.d_in * 8
    return drawn + ((N + config.D) * (p.d_in + p.d_out) * b if b != 8 else 0)


def _outputs_bytes(config: "TrialConfig") -> int:
    """Tensors of the outputs' shape (R, N, d_out) alive at once (the output, its residual and
    square in the loss, the step-0 output, the error against the reference, the divergence test),
    and of the last hidden state's (R, N, D) in float64 (its error and its Gram's copies)."""
    R, N = len(config.seeds), config.problem.samples
    return (_OUTPUT_COPIES * config.problem.d_out + _HIDDEN_COPIES * config.D) * R * N * 8


def _sample_gram_bytes(config: "TrialConfig") -> int:
    """The metrics' step observer (``trials.metrics.Baseline``): per layer of a block and seed,
    the (N, N) Gram matrices H H^T and B B^T of the samples, one at a time, in the working dtype
    (the block: ``METRICS_BLOCK`` // (R N M) layers, at least one); with the update history
    (when K N (D + M) <= D M) every step's H, G, B, S and the (N, k N) products through them."""
    L, M, D, N, R, b = _dims(config)
    K = max(config.steps, 1)
    layers = min(L, max(1, METRICS_BLOCK // (R * N * M)))
    gram = layers * R * N * N * b
    if config.steps * N * (D + M) <= D * M:
        gram += L * R * K * N * 2 * (D + M) * b + layers * R * N * K * N * b
    return gram


def _held_reference_bytes(config: "TrialConfig") -> int:
    """The reference a trial is measured against, as its worker holds it: outputs (K+1, N,
    d_out) and last hidden states (K+1, N, D_ref) in float64 (D_ref: the coupled width, which a
    ``largest`` reference has, else D), and their copies in a float32 working dtype."""
    p, K1 = config.problem, config.steps + 1
    b = _DTYPE_BYTES[config.dtype]
    held = K1 * p.samples * (p.d_out + (p.coupled_dim or config.D)) * 8
    return held + (K1 * p.samples * (p.d_out + config.D) * b if b != 8 else 0)


def trial_memory_bytes(config: "TrialConfig") -> int:
    """Estimated peak bytes that ``trials.train_trial`` allocates for one grid point (all seeds,
    all steps, metrics at every step), the data and the reference it holds included, beyond the
    worker process itself."""
    L, M, D, N, R, b = _dims(config)
    W, A = L * R * D * M, L * R * N * M
    # the initial norms a block of units at a time, and the float64 per-unit sums (L, R, M)
    scratch = min(W, max(METRICS_BLOCK, D * M)) * 8 + 8 * L * R * M * 8
    # + the step-0 units (units0), or the update history where it is no larger (metrics.Baseline)
    run = _run_bytes(L, M, D, N, R, b) + 2 * W * b + scratch + _outputs_bytes(config)
    # an optimizer's state (trials/optimizers.py: a tensor per unit tensor and state name) and the
    # backprop terms T_u, T_v its step reads; the float64 differences of the direct unit sums
    if not config.plain_gd:
        states = {"gd": 0, "momentum": 1, "adam": 2}[config.optimizer]
        run += 2 * (states + 1) * W * b + 3 * min(W, max(METRICS_BLOCK, D * M)) * 8
    if config.problem.test_samples:  # the held-out forward pass: a hidden and an activated block per layer
        run += config.problem.test_samples * R * (2 * D + M) * b
    if config.chaos_check:
        run += _run_bytes(L, M, D, N, R, b) + _outputs_bytes(config)
    metrics = A * b + _METRIC_COPIES * min(A, max(METRICS_BLOCK, R * N * M)) * 8  # dp, and a block's scratch
    metrics += _sample_gram_bytes(config)
    # the coordinate check (trials/coordcheck.py): h_l(0) in float64, and two float64 buffers of a block of layers
    hidden = L * R * N * D
    metrics += 8 * hidden + 2 * 8 * min(hidden, max(METRICS_BLOCK, R * N * D))
    data = _problem_bytes(config) + _held_reference_bytes(config)
    return int(max(_draw_bytes(L, M, D, R, b), run + metrics) + _rows_bytes(config) + data)


def _rows_bytes(config: "TrialConfig") -> int:
    """A point's metric rows as Python dicts (``_ROW_BYTES`` and its two Gram rows per seed and step)."""
    R = len(config.seeds)
    return R * (config.steps + 1) * (_ROW_BYTES + 2 * R * _LIST_FLOAT_BYTES)


def _shared_streams(configs: "Sequence[TrialConfig]") -> int:
    """The unit streams a fused group draws: one per seed index (and antithetic flag) of its points."""
    return len({(seed, c.antithetic) for c in configs for seed in c.seeds})


class FusedMemory:
    """Estimated peak bytes of ``trials.train_fused`` over points of one shape, point by point
    (``add``), so that a packer can grow a group without pricing it again. Batched (one batch
    axis, the CUDA default) every point's buffers at once: the sum of the points' estimates. One
    after another (the CPU default): the largest point's peak, the drawn streams kept for the
    group (float64 normals, u and v, per seed index) and every point's rows, held until the
    group ends. A group of one is ``trial_memory_bytes``."""

    def __init__(self, batched: bool):
        self.batched = batched
        self.bytes = 0
        self._largest = self._rows = self._unit = self._points = 0
        self._streams: set[tuple[int, bool]] = set()

    def add(self, config: "TrialConfig") -> int:
        """Count one more point; returns the group's estimate with it."""
        point = trial_memory_bytes(config)
        if self.batched:
            self.bytes += point
            return self.bytes
        self._largest = max(self._largest, point)
        self._rows += _rows_bytes(config)
        self._unit = 2 * config.L * config.D * config.M * 8
        self._streams.update((seed, config.antithetic) for seed in config.seeds)
        self._points += 1
        # a point alone keeps no streams (trials.train_fused trains a pack of one as train_trial)
        held = self._unit * len(self._streams) + self._rows if self._points > 1 else 0
        self.bytes = self._largest + held
        return self.bytes


def fused_memory_bytes(configs: "Sequence[TrialConfig]", batched: bool) -> int:
    """Estimated peak bytes of ``trials.train_fused`` over these points (``FusedMemory``)."""
    total = FusedMemory(batched)
    for config in configs:
        total.add(config)
    return total.bytes


def reference_kind(config: "LimitReferenceConfig | TrialConfig") -> str:
    """mean_ode, joint_limit or largest, from the config's type (by its fields: the joint limit's
    module imports torch, which an estimate must not)."""
    if hasattr(config, "particle_config"):
        return "mean_ode"
    return "joint_limit" if hasattr(config, "gram") else "largest"


def _joint_limit_size(config: "JointLimitConfig") -> tuple[int, int, int, int]:
    """(steps + 1, RK4 grid, samples, r = d_in + d_out) of a joint_limit reference."""
    t = config.limit
    return t.steps + 1, config.grid, t.problem.samples, t.problem.d_in + t.problem.d_out


def reference_memory_bytes(config: "LimitReferenceConfig | TrialConfig") -> int:
    """Estimated peak bytes of computing a reference: a ``ReferenceConfig`` (mean_ode: the
    particles at depth x width, replicas batched, then their half-depth twins), a
    ``JointLimitConfig`` (its r-dimensional path over the RK4 grid: ``_JOINT_LIMIT``), or the
    largest grid point's ``TrialConfig`` (its own run without metrics)."""
    if reference_kind(config) == "joint_limit":
        steps, grid, N, r = _joint_limit_size(config)
        return int(_JOINT_LIMIT["fixed_bytes"] + _JOINT_LIMIT["bytes_per_entry"] * steps * (grid + 1) * N * r)
    if hasattr(config, "particle_config"):
        full = config.particle_config(config.depth)
        L, M, D, N, R, b = _dims(full)
        W = L * R * D * M
        trajectory = _trajectory_bytes(full)
        # the particles and their halved copy, one run's buffers and data; the full run's outputs
        # kept while the half run's are listed and stacked (three trajectories at once)
        run = 2 * W * b + _run_bytes(L, M, D, N, R, b) + _problem_bytes(full) + _outputs_bytes(full) + 3 * trajectory
        return int(max(_draw_bytes(L, M, D, R, b) + 2 * W * b, run, _summary_bytes(full, runs=2)))
    L, M, D, N, R, b = _dims(config)
    run = _run_bytes(L, M, D, N, R, b) + _problem_bytes(config) + _outputs_bytes(config) + 2 * _trajectory_bytes(config)
    return int(max(_draw_bytes(L, M, D, R, b), run, _summary_bytes(config, runs=1)))


def _trajectory_bytes(config: "TrialConfig") -> int:
    """A reference run's outputs and last hidden states at every step, (K+1, R, N, d_out + D)
    in float64 (``trials.reference.trajectory``: listed, then stacked into one array)."""
    return (config.steps + 1) * len(config.seeds) * config.problem.samples * (config.D + config.problem.d_out) * 8


def _summary_bytes(config: "TrialConfig", runs: int) -> int:
    """After the runs: their trajectories, and either the targets' data drawn again
    (``_targets``) or the spread's temporaries (a difference and numpy's std, three arrays of
    the hidden trajectory's shape)."""
    hidden = (config.steps + 1) * len(config.seeds) * config.problem.samples * config.D * 8
    return runs * _trajectory_bytes(config) + max(_problem_bytes(config), 3 * hidden)


def trial_seconds(config: "TrialConfig") -> float:
    """Estimated single-core seconds of ``trials.train_trial`` for one grid point (all seeds)."""
    L, M, D, N, R, _ = _dims(config)
    steps = config.steps + 1
    per_entry = _SECONDS["per_entry"][config.dtype]
    seconds = _SECONDS["per_layer_step"] * L * steps + per_entry * L * M * D * N * R * steps
    return _SECONDS["fixed"] + _SECONDS["draw"] * L * D * M * R + seconds * (2 if config.chaos_check else 1)


def fused_seconds(configs: "Sequence[TrialConfig]") -> float:
    """Estimated single-core seconds of ``trials.train_fused`` over points of one shape: each
    point's ``trial_seconds`` less its unit draw, which the group makes once per seed index.
    What else a CPU shares is small: 8 points one after another at (256, 256, 32) cost 2.41 K
    bare steps a point against 2.56 alone (docs/benchmarks.md, "Fused points")."""
    first = configs[0]
    drawn = sum(_SECONDS["draw"] * c.L * c.D * c.M * len(c.seeds) for c in configs)
    shared = _SECONDS["draw"] * first.L * first.D * first.M * _shared_streams(configs)
    return sum(map(trial_seconds, configs)) - drawn + shared


def reference_seconds(config: "LimitReferenceConfig | TrialConfig") -> float:
    """Estimated single-core seconds of computing a reference: the particles at full and half
    depth (mean_ode), or the largest point's run; without metrics, which cost about as much as
    the step itself (README, "Speed of the trial engine"), hence the factor 1/2. A joint_limit
    solve: each step integrates the previous steps' states again, hence (K + 1)^2 RK4 grids."""
    if reference_kind(config) == "joint_limit":
        steps, grid, _, _ = _joint_limit_size(config)
        return _JOINT_LIMIT["fixed_s"] + _JOINT_LIMIT["per_step_pair_grid"] * steps**2 * grid
    if hasattr(config, "particle_config"):
        full = config.particle_config(config.depth)
        half = full.replace(L=config.depth // 2, M=2 * config.width)
        return 0.5 * (trial_seconds(full) + trial_seconds(half))
    return 0.5 * trial_seconds(config)


def physical_memory_bytes() -> int:
    """This machine's physical memory (what a design for it may plan with)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


# cgroup v2 (the unified hierarchy) and v1 files of this process's memory limit, usage and page cache
_CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat", "inactive_file"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes",
                  "/sys/fs/cgroup/memory/memory.stat", "total_inactive_file"))


def _read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(1 << 16).decode("ascii", "replace")
    except OSError:
        return None


def _meminfo_available() -> int | None:
    """The kernel's MemAvailable: free memory plus what it can reclaim without swapping."""
    text = _read_small("/proc/meminfo")
    for line in (text or "").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_available() -> int | None:
    """What this process's memory cgroup leaves (its limit less its usage, the inactive page
    cache counted as free), or None without a limit."""
    for limit_file, usage_file, stat_file, cache_key in _CGROUP_FILES:
        limit = (_read_small(limit_file) or "").strip()
        if not limit.isdigit():  # absent, or "max": no limit at this level
            continue
        if int(limit) >= 2**60:  # cgroup v1 writes "no limit" as a page-rounded 2^63
            return None
        usage = (_read_small(usage_file) or "0").strip()
        cache = 0
        for line in (_read_small(stat_file) or "").splitlines():
            key, _, value = line.partition(" ")
            if key == cache_key and value.strip().isdigit():
                cache = int(value)
        used = int(usage) - cache if usage.isdigit() else 0
        return max(int(limit) - max(used, 0), 0)
    return None


def available_memory_bytes() -> int:
    """The memory a sweep on this machine can use now: the kernel's available memory (not the
    physical total: other processes hold some), no more than what a cgroup limit
    (``/sys/fs/cgroup/memory.max``, or cgroup v1's ``memory.limit_in_bytes``) leaves; the
    physical memory where neither can be read."""
    known = [n for n in (_meminfo_available(), _cgroup_available()) if n is not None]
    return min(known) if known else physical_memory_bytes()


@dataclass(frozen=True)
class Largest:
    """The point of a sweep with the largest memory estimate: what it is and how much it needs."""

    what: str  # "trial L=..., M=..., D=..." or "reference ..."
    bytes: int


def _point(config: "TrialConfig") -> str:
    return f"L={config.L}, M={config.M}, D={config.D}, {len(config.seeds)} seeds, {config.dtype}"


def _largest_configs(source: "Plan | SweepSpec"):
    """(trial configs, reference configs) whose estimates bound the sweep's: from a plan, all of
    them; from a spec, without expanding it: memory grows with L, M and D, and nothing else of a
    grid point changes it, so the point at the largest L, M and D (and each reference config at
    the largest D) bounds every other."""
    if hasattr(source, "trials"):
        return [t.config for t in source.trials], [r.config for r in source.references]
    spec = source
    axes = spec.axes()
    top = {axis: values[0] for axis, values in axes.items()}
    top.update(L=max(spec.grid.L), M=max(spec.grid.M), D=max(spec.grid.D))
    trial = spec.trial_config(spec.problem_config(spec.problem_seeds()[0]), top)
    if spec.reference.kind in ("mean_ode", "joint_limit"):
        refs = [spec.reference_config(trial)]
    else:
        refs = [trial]
    return [trial], refs


def largest_point(source: "Plan | SweepSpec") -> tuple[Largest, Largest]:
    """The trial and the reference with the largest memory estimates (from a plan, or from a
    spec without expanding it)."""
    trials, refs = _largest_configs(source)
    trial = max(trials, key=trial_memory_bytes)
    ref = max(refs, key=reference_memory_bytes)
    return (Largest(f"trial {_point(trial)}", trial_memory_bytes(trial)),
            Largest(f"reference {_reference_what(ref)}", reference_memory_bytes(ref)))


def _reference_what(ref: "LimitReferenceConfig | TrialConfig") -> str:
    kind = reference_kind(ref)
    if kind == "mean_ode":
        return f"at D={ref.limit.D} ({ref.depth} x {ref.width} particles, {ref.replicas} replicas, {ref.limit.dtype})"
    if kind == "joint_limit":
        return f"joint limit at D={ref.limit.D}, {ref.grid} RK4 steps over depth, {ref.limit.steps} training steps"
    return f"largest grid point {_point(ref)}"


def check_fits_memory(plan_or_spec: "Union[Plan, SweepSpec]", available_bytes: int,
                      where: str = "this machine has available") -> None:
    """Refuse a sweep whose largest trial or reference cannot fit in ``available_bytes`` (a
    machine's or a node's memory), with ``PROCESS_BYTES`` for the worker process that runs it.

    Args:
        plan_or_spec: a ``Plan`` (every trial and reference judged) or a ``SweepSpec`` (its
            largest point, without expanding the grid).
        available_bytes: the memory the largest machine that could run it has for it.
        where: how the message names that memory ("this machine has available", "the largest
            Ray node has").

    Raises:
        SpecError: one line naming the point and its estimate (exit 2).
    """
    trial, ref = largest_point(plan_or_spec)
    for item in (trial, ref):
        if item.bytes + PROCESS_BYTES > available_bytes:
            raise spec_error(
                "[grid]" if item is trial else "[reference]",
                f"the {item.what} needs about {format_bytes(item.bytes)} of memory, more than {where} "
                f"({format_bytes(available_bytes)}, less {format_bytes(PROCESS_BYTES)} for its worker); "
                "sweep smaller L, M or D (or seeds)" + (", or a coarser reference" if item is ref else ""),
            )

def dry_run_lines(plan: "Plan", available_bytes: int | None = None, cpus: int | None = None) -> list[str]:
    """What ``explorer sweep SPEC --dry-run`` prints: the trials, the references (count and
    resolution), and the estimated memory and time per trial and in all. Nothing runs."""
    spec = plan.spec
    axes = {**{name: values for name, values in spec.axes().items() if len(values) > 1 or name in ("L", "M", "D")},
            **({"problem_seeds": spec.problem_seeds()} if len(spec.problem_seeds()) > 1 else {})}
    shape = " x ".join(f"{name} {len(values)}" for name, values in axes.items())
    lines = [f"sweep {spec.name}: {len(plan.trials)} trials ({shape}; {spec.grid.seeds} seeds each, "
             f"{spec.train.steps} steps, {spec.train.dtype})"]
    ref = spec.reference
    if ref.kind == "mean_ode":
        lines.append(f"references: {len(plan.references)} mean_ode, {ref.depth} x {ref.width} particles "
                     f"(depth x width), {ref.replicas} replicas, plus their half-depth twins")
    elif ref.kind == "joint_limit":
        lines.append(f"references: {len(plan.references)} joint_limit (the exact limit, {ref.grid} RK4 steps over "
                     "depth, and half that for its error)")
    else:
        lines.append(f"references: {len(plan.references)} largest (the largest grid point of each group, "
                     "run with its seeds)")
    trial_bytes = [trial_memory_bytes(t.config) for t in plan.trials]
    trial_secs = [trial_seconds(t.config) for t in plan.trials]
    ref_bytes = [reference_memory_bytes(r.config) for r in plan.references]
    ref_secs = [reference_seconds(r.config) for r in plan.references]
    largest, ref_largest = largest_point(plan)
    lines.append(f"memory: largest {largest.what}: {format_bytes(max(trial_bytes))}; largest {ref_largest.what}: "
                 f"{format_bytes(max(ref_bytes))} (peaks, each plus ~{format_bytes(PROCESS_BYTES)} for its worker process)")
    lines.append(f"time: {format_seconds(sum(trial_secs) / len(trial_secs))} per trial on average, longest "
                 f"{format_seconds(max(trial_secs))}; {format_seconds(sum(trial_secs))} of trial compute and "
                 f"{format_seconds(sum(ref_secs))} of references in all (single-core estimates)")
    if cpus:
        slots = slots_here(spec, cpus)
        wall = compute_wall_seconds(trial_secs, ref_secs, slots)
        lines.append(f"on this machine: {cpus} CPUs, {slots} trials at once: about {format_seconds(wall)} of compute "
                     "for the whole grid")
    if available_bytes is not None:
        lines.append(f"memory here: {format_bytes(available_bytes)} available")
        lines += too_large_lines(plan, trial_bytes, ref_bytes, available_bytes)
    lines.append("nothing run (--dry-run)")
    return lines


def slots_here(spec: "SweepSpec", cpus: int) -> int:
    """How many trials run at once on ``cpus`` CPUs (the spec's cpus_per_trial and max_concurrent)."""
    per_trial = max(spec.resources.cpus_per_trial, 1e-9)
    slots = max(1, int(cpus // per_trial)) if per_trial <= cpus else 1
    return min(slots, spec.resources.max_concurrent) if spec.resources.max_concurrent else slots


def compute_wall_seconds(trial_secs: list[float], ref_secs: list[float], slots: int) -> float:
    """Wall seconds of compute for these trials and references, ``slots`` at once: the references
    first, then the trials, each phase at least its longest item."""
    refs = max(max(ref_secs), sum(ref_secs) / slots) if ref_secs else 0.0
    return refs + (max(max(trial_secs), sum(trial_secs) / slots) if trial_secs else 0.0)


def too_large_lines(plan: "Plan", trial_bytes: list[int], ref_bytes: list[int], available_bytes: int,
                    shown: int = 5) -> list[str]:
    """The points of a plan that would not fit in ``available_bytes`` (with ``PROCESS_BYTES`` for
    the worker): a count, then the first ``shown`` of each kind with their estimates. A dry run
    prices a grid for a larger machine or a cluster, so it lists them where a run refuses them."""
    limit = available_bytes - PROCESS_BYTES
    trials = [(t, b) for t, b in zip(plan.trials, trial_bytes) if b > limit]
    refs = [(r, b) for r, b in zip(plan.references, ref_bytes) if b > limit]
    if not trials and not refs:
        return []
    lines = [f"does not fit here: {len(trials)} of {len(plan.trials)} trials and {len(refs)} of "
             f"{len(plan.references)} references need more than the memory this machine has available less a worker "
             f"({format_bytes(limit)}); `explorer sweep` refuses them here: run on a larger machine or a "
             "cluster (--address)"]
    for t, b in sorted(trials, key=lambda item: -item[1])[:shown]:
        lines.append(f"  trial {_point(t.config)}: {format_bytes(b)}")
    for r, b in sorted(refs, key=lambda item: -item[1])[:shown]:
        lines.append(f"  reference {r.ref_key} {_reference_what(r.config)}: {format_bytes(b)}")
    return lines


@dataclass(frozen=True)
class PlanCost:
    """A plan's size and its single-core compute estimate (what ``explorer reproduce --list``
    prints per scale)."""

    trials: int
    references: int
    trial_seconds: float
    reference_seconds: float

    @property
    def seconds(self) -> float:
        return self.trial_seconds + self.reference_seconds


def plan_cost(plan: "Plan") -> PlanCost:
    return PlanCost(len(plan.trials), len(plan.references), sum(trial_seconds(t.config) for t in plan.trials),
                    sum(reference_seconds(r.config) for r in plan.references))
