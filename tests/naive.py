"""Slow, plainly correct numpy versions of the trial engine, for tests only.

One seed at a time, one layer at a time, gradients by the chain rule written out with
g = dl/dh (not the engine's scaled B), and the step in the paper's original form (docs/model.md section 2)
theta <- theta - eta * D / (2 c^2 L M) * dl/dtheta  (= (eta/alpha^2)(L M D / 2) dl/dtheta for mlu).
"""
from __future__ import annotations

import numpy as np
from scipy.special import erf


def sigma(name: str, p: np.ndarray) -> np.ndarray:
    if name == "tanh":
        return np.tanh(p)
    if name == "identity":
        return p.copy()
    if name == "relu":
        return np.maximum(p, 0.0)
    if name == "gelu":
        return 0.5 * p * (1.0 + erf(p / np.sqrt(2.0)))
    raise ValueError(name)


def sigma_prime(name: str, p: np.ndarray) -> np.ndarray:
    if name == "tanh":
        return 1.0 / np.cosh(p) ** 2
    if name == "identity":
        return np.ones_like(p)
    if name == "relu":
        return (p > 0).astype(p.dtype)
    if name == "gelu":
        return 0.5 * (1.0 + erf(p / np.sqrt(2.0))) + p * np.exp(-p * p / 2) / np.sqrt(2 * np.pi)
    raise ValueError(name)


def forward(x, W_E, W_U, U, V, c, act):
    """x (d_in, N); U, V lists of (D, M). Returns block inputs hs[0..L], preacts, output f."""
    D = W_E.shape[0]
    hs = [W_E @ x]
    ps = []
    for u, v in zip(U, V):
        p = u.T @ hs[-1] / D
        ps.append(p)
        hs.append(hs[-1] + c * v @ sigma(act, p))
    f = W_U.T @ hs[-1] / D
    return hs, ps, f


def loss(x, y, W_E, W_U, U, V, c, act) -> float:
    _, _, f = forward(x, W_E, W_U, U, V, c, act)
    return float(np.mean((f - y) ** 2))


def dl_dh(x, y, W_E, W_U, U, V, c, act):
    """The forward pass and dl/dh_l at every block output l = 0..L by the chain rule, from the top:
    returns hs, ps (as ``forward``) and gs, a list of L + 1 arrays (D, N)."""
    D = W_E.shape[0]
    d_out, N = y.shape
    hs, ps, f = forward(x, W_E, W_U, U, V, c, act)
    gs = [None] * (len(U) + 1)
    gs[-1] = W_U @ (2.0 * (f - y) / (N * d_out)) / D  # dl/dh_L
    for l in reversed(range(len(U))):
        back = sigma_prime(act, ps[l]) * (V[l].T @ gs[l + 1])  # (M, N): dl/dp up to the factor c
        gs[l] = gs[l + 1] + c * U[l] @ back / D
    return hs, ps, gs


def gradients(x, y, W_E, W_U, U, V, c, act):
    """dl/dU_l, dl/dV_l by the chain rule, layer by layer from the top."""
    D = W_E.shape[0]
    hs, ps, gs = dl_dh(x, y, W_E, W_U, U, V, c, act)
    gU, gV = [None] * len(U), [None] * len(V)
    for l in reversed(range(len(U))):
        s, sp = sigma(act, ps[l]), sigma_prime(act, ps[l])
        back = sp * (V[l].T @ gs[l + 1])
        gV[l] = c * gs[l + 1] @ s.T
        gU[l] = c * hs[l] @ back.T / D
    return gU, gV


def states_along_depth(x, y, W_E, W_U, U, V, c, act, lr, L, M, steps):
    """K steps of GD (as ``train``); per step k = 0..K the block outputs h_0..h_L and the backward
    states B_l = (D / 2) dl/dh_l (the engine's scaling), each a list of L + 1 arrays (D, N)."""
    D = W_E.shape[0]
    step_size = lr * D / (2.0 * c * c * L * M)
    U, V = [u.copy() for u in U], [v.copy() for v in V]
    hidden, backward = [], []
    for k in range(steps + 1):
        hs, _, gs = dl_dh(x, y, W_E, W_U, U, V, c, act)
        hidden.append(hs)
        backward.append([D / 2 * g for g in gs])
        if k < steps:
            gU, gV = gradients(x, y, W_E, W_U, U, V, c, act)
            U = [u - step_size * g for u, g in zip(U, gU)]
            V = [v - step_size * g for v, g in zip(V, gV)]
    return hidden, backward


def depth_mean_abs_errors(states, along):
    """Per block output l, the mean over samples and coordinates of |states[l] - along[l]|, by loops:
    states a list of (D, N) arrays, along (L + 1, N, D). Returns a list of L + 1 floats."""
    out = []
    for l, state in enumerate(states):
        D, N = state.shape
        out.append(sum(abs(state[d, n] - along[l][n, d]) for d in range(D) for n in range(N)) / (D * N))
    return out


def train(x, y, W_E, W_U, U, V, c, act, lr, L, M, steps):
    """K steps of GD; returns the outputs f_0..f_K and last hidden states h_L at each step."""
    D = W_E.shape[0]
    step_size = lr * D / (2.0 * c * c * L * M)
    U, V = [u.copy() for u in U], [v.copy() for v in V]
    outs, lasts = [], []
    for k in range(steps + 1):
        hs, _, f = forward(x, W_E, W_U, U, V, c, act)
        outs.append(f)
        lasts.append(hs[-1])
        if k < steps:
            gU, gV = gradients(x, y, W_E, W_U, U, V, c, act)
            U = [u - step_size * g for u, g in zip(U, gU)]
            V = [v - step_size * g for v, g in zip(V, gV)]
    return np.array(outs), np.array(lasts), U, V


def unit_metrics(x, W_E, W_U, U0, V0, U, V, c, act):
    """feature_update and lin_ratio by explicit loops over layers, units and samples."""
    D = W_E.shape[0]
    hs, _, _ = forward(x, W_E, W_U, U, V, c, act)
    sq_update, count, num, den = 0.0, 0, 0.0, 0.0
    for l in range(len(U)):
        for j in range(U[l].shape[1]):
            u0, v0, u, v = U0[l][:, j], V0[l][:, j], U[l][:, j], V[l][:, j]
            for n in range(x.shape[1]):
                h = hs[l][:, n]
                p, p0 = u @ h / D, u0 @ h / D
                sq_update += (p - p0) ** 2
                count += 1
                phi_k = v * sigma(act, np.array(p))
                phi_0 = v0 * sigma(act, np.array(p0))
                jvp = (v - v0) * sigma(act, np.array(p0)) + v0 * sigma_prime(act, np.array(p0)) * ((u - u0) @ h / D)
                num += np.sum((phi_k - phi_0 - jvp) ** 2)
                den += np.sum((phi_k - phi_0) ** 2)
    return np.sqrt(sq_update / count), (np.sqrt(num / den) if den > 0 else 0.0)
