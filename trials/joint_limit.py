"""The exact L, M, D -> infinity limit of training for identity activation (reference kind
``joint_limit``), computed deterministically: no particles, no sampling error.

Source: Chaintron, Chizat, Maass, arXiv:2603.18168, the linear experiment (repository
lchizat/2026-resnets-of-all-shapes-and-sizes, linear_experiments_python/src/linear_correlations.py
computes the same limit through correlation kernels on a depth grid). Derivation, notation of
docs/model.md sections 1-2 (mlu scale c = alpha / (L M), mean-field rate; docs/reproduce.md has the details):

1. With sigma = identity each unit's update is linear in the unit: with
   G_k(s) = sum_n h_n(s) b_n(s)^T / D (B = (D/2) dl/dh, as in model.py) and eta' = eta / alpha,
   u <- u - eta' G v and v <- v - eta' G^T u. So the law of a unit at depth s after k steps is
   Gaussian with covariance Sigma_k(s) = T_k Sigma_{k-1} T_k^T, T = [[I, -eta' G], [-eta' G^T, I]],
   Sigma_0 = D diag(sigma_u^2 I, sigma_v^2 I), and the Mean ODE (L, M -> infinity) only needs
   E[v u^T] = the (v, u) block of Sigma: dh/ds = alpha E[v u^T] h / D, db/ds = -alpha E[u v^T] b / D.
2. Every h and b starts in S = span(columns of W_E, W_U) (dimension r = d_in + d_out), G maps
   into S and Sigma_k - Sigma_0 lives on S x S, so the whole system stays in S exactly. In an
   orthonormal basis of S scaled by 1 / sqrt(D) it is an r-dimensional system that depends on the
   embeddings only through their Gram matrix Gamma = [W_E W_U]^T [W_E W_U] / D.
3. As D -> infinity Gamma -> diag(I / d_in, d_out I) (entries of W_E N(0, 1/d_in), of W_U
   N(0, d_out), independent): that is the joint limit. ``gram = "empirical"`` keeps this D's Gamma
   instead: the exact Mean ODE at fixed D (L, M -> infinity only), used by the tests.

The r-dimensional system is solved step by step: at step k the propagator Psi_k(s) of
dh/ds = alpha C_k(s) h is integrated by classical RK4 with ``grid`` steps over s in [0, 1];
C_k at each RK4 stage comes from the previous steps' stage states (exactly RK4 on the
triangular joint system of all steps), and b_k(s) = Psi_k(s)^-T Psi_k(1)^T b_k(1).

What a trial is compared with:
- out (K+1, N, d_out): the limit's outputs, independent of D.
- hidden (K+1, N, D): the limit's last hidden state written in this problem's embeddings,
  h = W_E a + W_U b where (a, b) are the limit's coordinates of h(1) along the columns of W_E and
  W_U (the authors' per-coordinate solution: their hidden coordinate d depends on row d of W_E
  and W_U only). err_hidden against it therefore contains the O(1/sqrt(D)) term of the joint
  limit, as in the companion paper's hidden-state error.
- err_out, err_hidden: its own numerical error, the distance between the solutions with grid
  and grid / 2 RK4 steps (an upper bound: RK4's error at ``grid`` is about 1/15 of it).
  err_*_sampling are 0 (no sampling), err_*_discretization carry the same numbers.
- path (K+1, grid+1, N, r): the limit's hidden state at every depth s = i / grid, in the r
  coordinates; ``hidden_along_depth`` writes it in a problem's embeddings at the block outputs of a
  depth-L network (the companion's hidden error is a max over depth).
- backward_path (K+1, grid+1, N, r): the limit's backward state b_k(s) (the engine's
  B = (D / 2) dl/dh, b_k(1) = W_U (f_k - y) / (N d_out)) at the same depths and in the same
  coordinates, at every step k = 0..K (the last one too, although no update follows it);
  ``backward_along_depth`` writes it at a depth-L network's block outputs (err_backward).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from .config import JOINT_LIMIT_VERSION, REFERENCE_NUMERICS_VERSION, ConfigError, ReferenceConfig, TrialConfig, stable_hash
from .model import make_problem
from .reference import Reference, ReferenceDiverged

KIND = "joint_limit"
GRAMS = ("expected", "empirical")


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
        if t.lr_scaling != "mean_field":
            raise ConfigError("lr_scaling", f"reference kind joint_limit is the limit of the mean-field step; {t.no_limit_reason()}; "
                              "use reference kind 'largest'")
        if t.block != "2lp":
            raise ConfigError("block", f"reference kind joint_limit is derived for block '2lp', got {t.block!r}")
        if isinstance(self.grid, bool) or not isinstance(self.grid, int) or self.grid < 2 or self.grid % 2:
            raise ConfigError("reference.grid", f"reference.grid must be an even integer >= 2 (a half grid estimates the error), got {self.grid!r}")
        if self.gram not in GRAMS:
            raise ConfigError("reference.gram", f"unknown reference.gram {self.gram!r}; expected one of: {', '.join(GRAMS)}")

    def limit_identity(self) -> tuple:
        """``limit_fields`` as a hashable tuple (see ``ReferenceConfig.limit_identity``)."""
        return ReferenceConfig(self.limit).limit_identity()

    def limit_fields(self) -> dict:
        """What the limit depends on: the same fields as a mean_ode reference (no L, M, seed)."""
        return ReferenceConfig(self.limit).limit_fields()

    def key(self) -> str:
        return stable_hash({
            "kind": KIND, "limit": self.limit_fields(), "grid": self.grid, "gram": self.gram,
            "numerics_version": REFERENCE_NUMERICS_VERSION, "joint_limit_version": JOINT_LIMIT_VERSION,
        })


def solve_linear_limit(w_in: np.ndarray, w_out: np.ndarray, x: np.ndarray, y: np.ndarray, *, alpha: float,
                       lr: float, sigma_u: float, sigma_v: float, steps: int,
                       grid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The r-dimensional limit system (module docstring, point 2), all float64.

    Args:
        w_in (r, d_in), w_out (r, d_out): the embeddings in the scaled orthonormal basis of S,
            i.e. any matrices with [w_in w_out]^T [w_in w_out] = Gamma.
        x (N, d_in), y (N, d_out): the data.
        grid: RK4 steps over s in [0, 1].

    Returns:
        out (K+1, N, d_out), path and backward (K+1, grid+1, N, r): f_k and the coordinates of
        h_k(s) / sqrt(D) and of b_k(s) / sqrt(D) at s = i / grid (path[:, -1] is the last hidden
        state, backward[:, -1] = w_out (f_k - y)^T / (N d_out)). b_k(s) = Psi_k(s)^-T Psi_k(1)^T b_k(1)
        at the grid's nodes: the adjoint of the RK4 propagator, as the update's stage states use it.
    """
    r, n_samples, d_out = w_in.shape[0], x.shape[0], y.shape[1]
    h0 = w_in @ x.T  # (r, N)
    eye = np.eye(r)
    ds = 1.0 / grid
    eta = lr / alpha
    # Sigma / D at every RK4 stage point (grid, 4 stages): blocks (u, u), (u, v); (v, u), (v, v)
    cov = np.zeros((grid, 4, 2 * r, 2 * r))
    cov[..., :r, :r] = sigma_u**2 * eye
    cov[..., r:, r:] = sigma_v**2 * eye
    outs, paths, backwards = [], [], []
    for k in range(steps + 1):
        a = alpha * cov[..., r:, :r]  # alpha E[v u^T] / D, (grid, 4, r, r)
        a1, a2, a3, a4 = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
        # RK4 for the linear ODE Y' = A(s) Y: stage states S_m Y_i and the step matrix R_i
        s2 = eye + (ds / 2) * a1
        s3 = eye + (ds / 2) * (a2 @ s2)
        s4 = eye + ds * (a3 @ s3)
        step = eye + (ds / 6) * (a1 + 2 * (a2 @ s2) + 2 * (a3 @ s3) + a4 @ s4)
        psi = np.empty((grid + 1, r, r))
        psi[0] = eye
        for i in range(grid):
            psi[i + 1] = step[i] @ psi[i]
        h1 = psi[grid] @ h0  # (r, N)
        out = (w_out.T @ h1).T  # (N, d_out)
        outs.append(out)
        paths.append(np.swapaxes(psi @ h0, 1, 2))  # (grid + 1, N, r)
        b1 = w_out @ (out - y).T / (n_samples * d_out)  # b(1) = W_U (f - y) / (N d_out), scaled
        nodes = np.linalg.solve(np.swapaxes(psi[:-1], -1, -2), np.broadcast_to(psi[grid].T @ b1, (grid, r, n_samples)))
        backwards.append(np.swapaxes(np.concatenate([nodes, b1[None]]), 1, 2))  # (grid + 1, N, r), b(1) exactly
        if k == steps:
            break
        stage = np.stack([psi[:-1], s2 @ psi[:-1], s3 @ psi[:-1], s4 @ psi[:-1]], axis=1)  # (grid, 4, r, r)
        h = stage @ h0  # (grid, 4, r, N)
        # b(s) = Psi(s)^-T Psi(1)^T b(1): the adjoint of the forward propagator
        b = np.linalg.solve(np.swapaxes(stage, -1, -2), np.broadcast_to(psi[grid].T @ b1, h.shape))
        g = eta * (h @ np.swapaxes(b, -1, -2))  # eta' sum_n h_n b_n^T, (grid, 4, r, r)
        t = np.broadcast_to(np.eye(2 * r), cov.shape).copy()
        t[..., :r, r:] = -g
        t[..., r:, :r] = -np.swapaxes(g, -1, -2)
        cov = t @ cov @ np.swapaxes(t, -1, -2)
    return np.stack(outs), np.stack(paths), np.stack(backwards)


def _basis(config: JointLimitConfig, embed: np.ndarray, readout: np.ndarray):
    """(w_in, w_out, to_hidden): the scaled basis of S and the map from state (.., r) to (.., D)."""
    d_in, d_out = embed.shape[1], readout.shape[1]
    D = embed.shape[0]
    if config.gram == "expected":
        w_in = np.zeros((d_in + d_out, d_in))
        w_out = np.zeros((d_in + d_out, d_out))
        w_in[:d_in] = np.eye(d_in) / math.sqrt(d_in)
        w_out[d_in:] = np.eye(d_out) * math.sqrt(d_out)

        def to_hidden(state: np.ndarray) -> np.ndarray:
            # h / sqrt(D) = w_in a + w_out b, so a = sqrt(d_in) state[:d_in], b = state[d_in:] / sqrt(d_out)
            return state[..., :d_in] @ (embed.T * math.sqrt(d_in)) + state[..., d_in:] @ (readout.T / math.sqrt(d_out))

        return w_in, w_out, to_hidden
    q, rr = np.linalg.qr(np.concatenate([embed, readout], axis=1))  # (D, m), (m, r), m = min(D, r)
    w = rr / math.sqrt(D)
    return w[:, :d_in], w[:, d_in:], lambda state: math.sqrt(D) * state @ q.T


def _solve(config: JointLimitConfig, grid: int, problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    t = config.limit
    x, y, embed, readout = (a.numpy() for a in (problem.x, problem.y, problem.embed, problem.readout))
    w_in, w_out, to_hidden = _basis(config, embed, readout)
    out, path, backward = solve_linear_limit(w_in, w_out, x, y, alpha=t.alpha, lr=t.lr, sigma_u=t.sigma_u,
                                             sigma_v=t.sigma_v, steps=t.steps, grid=grid)
    return out, to_hidden(path[:, -1]), path, backward


def hidden_along_depth(reference: Reference, config: JointLimitConfig, L: int) -> np.ndarray:
    """The reference's hidden states at every block output s = l / L, l = 0..L, written in
    ``config``'s embeddings: (K+1, L+1, N, D), linearly interpolated from its depth grid (as the
    authors do from theirs; the interpolation error is O(grid^-2)). This is what the companion
    paper's hidden error needs: max over l of the mean over coordinates of |h_l - h(l / L)|."""
    return _along_depth(reference.arrays["path"], config, L)


def backward_along_depth(reference: Reference, config: JointLimitConfig, L: int) -> np.ndarray | None:
    """``hidden_along_depth`` of the backward states b_k(l / L) (the engine's B, model.ResNet.
    backward_states): (K+1, L+1, N, D), or None for a record made before it stored them."""
    backward = reference.arrays.get("backward_path")
    return None if backward is None else _along_depth(backward, config, L)


def _along_depth(path: np.ndarray, config: JointLimitConfig, L: int) -> np.ndarray:
    """A (K+1, grid+1, N, r) depth path at s = l / L, l = 0..L, in ``config``'s embeddings."""
    grid = path.shape[1] - 1
    s = np.arange(L + 1) * (grid / L)
    lo = np.minimum(np.floor(s).astype(int), grid - 1)
    w = (s - lo)[None, :, None, None]
    coords = (1 - w) * path[:, lo] + w * path[:, lo + 1]
    problem = make_problem(config.limit.replace(device="cpu"), torch.device("cpu"), torch.float64)
    _, _, to_hidden = _basis(config, problem.embed.numpy(), problem.readout.numpy())
    return to_hidden(coords)


def depth_max_mean_abs(hidden: np.ndarray, along: np.ndarray) -> np.ndarray:
    """The linear experiment's hidden error (plt_cvg_rate.ipynb, ``max_hs_track``): per repetition,
    the max over block outputs l of the mean over samples and coordinates of |h_l - h_ref(l / L)|.

    Args:
        hidden (L+1, R, N, D): a trial's block outputs (``Forward.hidden``).
        along (L+1, N, D): ``hidden_along_depth(...)[k]`` at the same step.
    Returns:
        (R,)
    """
    return np.abs(hidden - along[:, None]).mean(axis=(2, 3)).max(axis=0)


def _rms(a: np.ndarray) -> np.ndarray:
    return np.sqrt((a**2).reshape(a.shape[0], -1).mean(axis=1))


def compute_joint_limit(config: JointLimitConfig) -> Reference:
    """The joint limit of ``config.limit``'s group as a Reference of kind ``joint_limit``."""
    started = time.perf_counter()
    key = config.key()
    t = config.limit
    problem = make_problem(t.replace(device="cpu"), torch.device("cpu"), torch.float64)
    with np.errstate(all="ignore"):
        try:
            out, hidden, path, backward = _solve(config, config.grid, problem)
            half_out, half_hidden, _, _ = _solve(config, config.grid // 2, problem)
        except np.linalg.LinAlgError:  # a propagator overflowed to a singular matrix
            out = hidden = backward = half_out = half_hidden = np.full(1, np.nan)
    if not all(np.isfinite(a).all() for a in (out, hidden, backward, half_out, half_hidden)):
        raise ReferenceDiverged(f"reference {key} (joint_limit) diverged: lower lr")
    y = problem.y.numpy()
    err_out, err_hidden = _rms(out - half_out), _rms(hidden - half_hidden)
    zeros = np.zeros(out.shape[0])
    arrays = {
        "out": out, "hidden": hidden, "loss": ((out - y) ** 2).reshape(out.shape[0], -1).mean(axis=1),
        "err_out": err_out, "err_hidden": err_hidden,
        "err_out_sampling": zeros, "err_hidden_sampling": zeros.copy(),
        "err_out_discretization": err_out.copy(), "err_hidden_discretization": err_hidden.copy(),
        "path": path,  # (K+1, grid+1, N, r): coordinates of h(s) / sqrt(D); see hidden_along_depth
        "backward_path": backward,  # the same for b(s) (err_backward); see backward_along_depth
    }
    meta = {
        "limit": config.limit_fields(), "grid": config.grid, "gram": config.gram, "D": t.D,
        "method": "RK4 on the r-dimensional linear limit system; error = |grid - grid/2| solutions",
        "device": "cpu", "numerics_version": REFERENCE_NUMERICS_VERSION, "joint_limit_version": JOINT_LIMIT_VERSION,
        "wall_s": time.perf_counter() - started,
    }
    return Reference(key, KIND, arrays, meta)
