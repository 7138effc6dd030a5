"""The training data of a problem: which distribution X and Y come from (``ProblemConfig.data``).

- ``gaussian`` (default): X, Y i.i.d. N(0, 1), drawn first from the problem seed's stream.
- ``linear_target``: the linear experiment of Chaintron, Chizat, Maass (arXiv:2603.18168,
  repository lchizat/2026-resnets-of-all-shapes-and-sizes, linear_experiments_python/):
  each sample x has norm 0.8 in the authors' units (a N(0, I) draw rescaled), a teacher A has
  N(0, 1) entries and y = A x + 0.05 * N(0, I). Drawn with numpy's legacy RandomState in the
  authors' order (x, A, noise), so that with one sample and data_seed = 42 (their MAIN_SEED)
  x, A and y are exactly theirs. Their fitted constants depend on this draw: |y| enters the
  gradients, and another draw with twice their |y| gave about 4x their hidden-error constant a.

Units. The authors' embeddings have N(0, 1) entries; this project's W_E has N(0, 1/d_in) and
W_U N(0, d_out) entries (docs/model.md section 1). ``linear_target`` therefore stores
x = sqrt(d_in) * x_authors and y = sqrt(d_out) * y_authors: then h_0 = W_E x and every hidden
state equal the authors' exactly, f = sqrt(d_out) * f_authors, and with lr = eta_0 (their base
rate, whose per-matrix multiplication by D is already inside this project's mean-field rate)
the training is theirs step for step (docs/reproduce.md; tests/trials/test_joint_limit.py checks
it against a transcription of their update).

- ``teacher``: inputs X ~ N(0, 1) and targets y = f_T(x) / s + label_noise * N(0, 1), f_T a fixed
  random network of this family (``teacher``): depth ``teacher_depth``, width and embedding
  dimension ``teacher_width`` (both Q), the standard preset (c = 1 / sqrt(Q Q), so that each block adds
  an O(1) nonlinear change and the teacher is no near-linear map), tanh, its weights drawn from
  ``teacher_seed`` (default: the problem seed) in the units of docs/model.md section 1; s is the
  RMS of f_T over TEACHER_NORM_SAMPLES inputs of the teacher's own stream, so the clean targets
  have RMS about 1 whatever the teacher's shape. ``test_samples`` more inputs of the same law,
  from a stream of their own (the training set does not change with their number), are held out:
  ``draw_test``.

``ProblemConfig.data_seed`` (default None: from the problem seed, as before this option existed)
draws X, Y (and A) from their own stream, so that problem seeds vary the embeddings only, as the
authors' 13 embedding seeds do.
"""
from __future__ import annotations

import numpy as np
import torch

LINEAR_TARGET_X_NORM = 0.8  # |x| in the authors' units
LINEAR_TARGET_NOISE = 0.05  # std of the label noise, authors' units


def draw_data(problem, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """X (N, d_in) and Y (N, d_out) in float64 on the CPU. ``gen`` is the problem stream; it is
    used (and advanced) only for gaussian data without ``problem.data_seed``."""
    from .config import stream_seed  # config imports nothing from here; keep it that way

    if problem.data == "teacher":
        x = _inputs("data", problem, problem.samples)
        return x, teacher_targets(problem, x, "noise")
    if problem.data == "linear_target":
        return _linear_target(problem, stream_seed("data", problem.seed) % 2**32 if problem.data_seed is None else problem.data_seed)
    if problem.data_seed is not None:
        gen = torch.Generator().manual_seed(stream_seed("data", problem.data_seed))
    f64 = torch.float64
    x = torch.randn(problem.samples, problem.d_in, generator=gen, dtype=f64)
    y = torch.randn(problem.samples, problem.d_out, generator=gen, dtype=f64)
    return x, y


def _linear_target(problem, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The authors' draw (np.random.seed(seed); randn x, randn A, randn noise), in project units."""
    rs = np.random.RandomState(seed)
    n, d_in, d_out = problem.samples, problem.d_in, problem.d_out
    x = rs.randn(n, d_in)
    x = LINEAR_TARGET_X_NORM * x / np.linalg.norm(x, axis=1, keepdims=True)
    teacher = rs.randn(d_out, d_in)
    y = x @ teacher.T + LINEAR_TARGET_NOISE * rs.randn(n, d_out)
    return torch.from_numpy(x * d_in**0.5), torch.from_numpy(y * d_out**0.5)


TEACHER_NORM_SAMPLES = 1024  # inputs over which the teacher's output RMS is taken (its own stream)


def _inputs(stream: str, problem, n: int) -> torch.Tensor:
    from .config import stream_seed

    seed = problem.seed if problem.data_seed is None else problem.data_seed
    gen = torch.Generator().manual_seed(stream_seed(stream, seed))
    return torch.randn(n, problem.d_in, generator=gen, dtype=torch.float64)


def teacher(problem, x: torch.Tensor) -> torch.Tensor:
    """The teacher's output on inputs x (n, d_in), normalised (module docstring): (n, d_out) float64."""
    from .config import stream_seed

    seed = problem.seed if problem.teacher_seed is None else problem.teacher_seed
    gen = torch.Generator().manual_seed(stream_seed("teacher", seed))
    q, depth, f64 = problem.teacher_width, problem.teacher_depth, torch.float64
    embed = torch.randn(q, problem.d_in, generator=gen, dtype=f64) / problem.d_in**0.5
    readout = torch.randn(q, problem.d_out, generator=gen, dtype=f64) * problem.d_out**0.5
    u = torch.randn(depth, q, q, generator=gen, dtype=f64) * q**0.5
    v = torch.randn(depth, q, q, generator=gen, dtype=f64) * q**0.5
    norm = torch.randn(TEACHER_NORM_SAMPLES, problem.d_in, generator=gen, dtype=f64)
    c = 1.0 / q  # the standard preset at width and dimension q: 1 / sqrt(q q)

    def forward(inputs: torch.Tensor) -> torch.Tensor:
        h = inputs @ embed.T
        for layer in range(depth):
            h = h + c * torch.tanh(h @ u[layer] / q) @ v[layer].T
        return h @ readout / q

    return forward(x) / forward(norm).square().mean().sqrt()


def teacher_targets(problem, x: torch.Tensor, noise_stream: str) -> torch.Tensor:
    """The teacher's targets for x: its output plus label_noise times normals of their own stream."""
    y = teacher(problem, x)
    if problem.label_noise:
        from .config import stream_seed

        seed = problem.seed if problem.data_seed is None else problem.data_seed
        gen = torch.Generator().manual_seed(stream_seed(noise_stream, seed))
        y = y + problem.label_noise * torch.randn(y.shape, generator=gen, dtype=torch.float64)
    return y


def draw_test(problem) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """The held-out set (``problem.test_samples`` of them), float64 on the CPU: inputs, noisy
    targets and the teacher's clean outputs; None without test samples."""
    if not problem.test_samples:
        return None
    x = _inputs("test", problem, problem.test_samples)
    return x, teacher_targets(problem, x, "test_noise"), teacher(problem, x)
