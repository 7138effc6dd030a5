"""The cost model of a trial: the memory and single-core compute time of one grid point and of
a fused group of points, and the pieces a reference kind prices its own computation with
(``explorer.config.reference_kinds``: each kind owns its estimates).

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
``tests/explorer/config/test_estimate.py`` hold the memory model within 2x of measured peaks (resident
high-water mark in a fresh process) over shapes where X, Y, the activations, the samples' Gram,
the hidden states, the units or the particles dominate, for trials and references.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from trials import METRICS_BLOCK, OPTIMIZERS, UNIT_BLOCK

if TYPE_CHECKING:
    from trials import TrialConfig

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
# tests/explorer/config/test_estimate.py (``_MEASURE``).
_SECONDS = {"fixed": 3e-3, "per_layer_step": 2e-4, "per_entry": {"float64": 1.5e-8, "float32": 7e-9}, "draw": 1.7e-8}


def dims(config: "TrialConfig") -> tuple[int, int, int, int, int, int]:
    return config.L, config.M, config.D, config.problem.samples, len(config.seeds), _DTYPE_BYTES[config.dtype]


def run_bytes(L: int, M: int, D: int, N: int, R: int, b: int) -> int:
    """The units and the forward/backward buffers of one ResNet (no metrics)."""
    W, H, A = L * R * D * M, (L + 1) * R * N * D, L * R * N * M
    return 2 * W * b + 2 * H * b + 3 * A * b


def draw_bytes(L: int, M: int, D: int, R: int, b: int) -> int:
    """init_units at its peak: the units, and one float64 block of layers per drawing thread."""
    return 2 * L * R * D * M * b + _DRAW_THREADS * max(UNIT_BLOCK, D * M) * 8


def problem_bytes(config: "TrialConfig") -> int:
    """``make_problem`` at its peak: X (N, d_in), Y (N, d_out) and the embeddings (width, d_in +
    d_out) drawn in float64, plus their copy in a float32 working dtype; ``linear_target`` data
    are normalised and rescaled through ``_LINEAR_TARGET_COPIES`` temporaries of X."""
    p = config.problem
    N, width, b = p.samples, p.coupled_dim or config.D, _DTYPE_BYTES[config.dtype]
    drawn = (N + width) * (p.d_in + p.d_out) * 8
    if p.data == "linear_target":
        drawn += _LINEAR_TARGET_COPIES * N * p.d_in * 8
    return drawn + ((N + config.D) * (p.d_in + p.d_out) * b if b != 8 else 0)


def outputs_bytes(config: "TrialConfig") -> int:
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
    L, M, D, N, R, b = dims(config)
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
    L, M, D, N, R, b = dims(config)
    W, A = L * R * D * M, L * R * N * M
    # the initial norms a block of units at a time, and the float64 per-unit sums (L, R, M)
    scratch = min(W, max(METRICS_BLOCK, D * M)) * 8 + 8 * L * R * M * 8
    # + the step-0 units (units0), or the update history where it is no larger (metrics.Baseline)
    run = run_bytes(L, M, D, N, R, b) + 2 * W * b + scratch + outputs_bytes(config)
    # an optimizer's state (trials/optimizers.py: a tensor per unit tensor and state name) and the
    # backprop terms T_u, T_v its step reads; the float64 differences of the direct unit sums
    if not config.plain_gd:
        states = len(OPTIMIZERS[config.optimizer].state)
        run += 2 * (states + 1) * W * b + 3 * min(W, max(METRICS_BLOCK, D * M)) * 8
    if config.problem.test_samples:  # the held-out forward pass: a hidden and an activated block per layer
        run += config.problem.test_samples * R * (2 * D + M) * b
    if config.chaos_check:
        run += run_bytes(L, M, D, N, R, b) + outputs_bytes(config)
    metrics = A * b + _METRIC_COPIES * min(A, max(METRICS_BLOCK, R * N * M)) * 8  # dp, and a block's scratch
    metrics += _sample_gram_bytes(config)
    # the coordinate check (trials/coordcheck.py): h_l(0) in float64, and two float64 buffers of a block of layers
    hidden = L * R * N * D
    metrics += 8 * hidden + 2 * 8 * min(hidden, max(METRICS_BLOCK, R * N * D))
    data = problem_bytes(config) + _held_reference_bytes(config)
    return int(max(draw_bytes(L, M, D, R, b), run + metrics) + _rows_bytes(config) + data)


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

def trajectory_bytes(config: "TrialConfig") -> int:
    """A reference run's outputs and last hidden states at every step, (K+1, R, N, d_out + D)
    in float64 (``trials.reference.trajectory``: listed, then stacked into one array)."""
    return (config.steps + 1) * len(config.seeds) * config.problem.samples * (config.D + config.problem.d_out) * 8


def summary_bytes(config: "TrialConfig", runs: int) -> int:
    """After the runs: their trajectories, and either the targets' data drawn again
    (``_targets``) or the spread's temporaries (a difference and numpy's std, three arrays of
    the hidden trajectory's shape)."""
    hidden = (config.steps + 1) * len(config.seeds) * config.problem.samples * config.D * 8
    return runs * trajectory_bytes(config) + max(problem_bytes(config), 3 * hidden)


def trial_seconds(config: "TrialConfig") -> float:
    """Estimated single-core seconds of ``trials.train_trial`` for one grid point (all seeds)."""
    L, M, D, N, R, _ = dims(config)
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



def point(config: "TrialConfig") -> str:
    """A grid point as the dry run and a refusal name it."""
    return f"L={config.L}, M={config.M}, D={config.D}, {len(config.seeds)} seeds, {config.dtype}"
