"""The two terms of a point's error, from the Gram matrix of its seeds' errors (numpy only).

A grid point runs R seeds against one reference; with e_s = f_s - f_ref (n entries each) the
store keeps gram[i, j] = <e_i, e_j> / n. The RMS error over seeds splits exactly into

- bias^2: the squared distance of the seed-mean network from the reference, estimated without
  the seeds' own noise by the mean of gram[i, j] over ordered pairs of *distinct* seeds
  (= (|sum_s e_s|^2 - sum_s |e_s|^2) / (R (R - 1) n), unbiased);
- fluct^2 = mean_s gram[s, s] - bias^2: the spread of the seeds around their mean (the
  unbiased sample variance, summed over entries / n).

A resample of seeds is a multiset of indices. Pairs are formed between *positions* of the
resample whose seed indices differ: a seed drawn twice is not paired with itself, which keeps
the bias free of the fluctuation in every resample (``terms``). ``jackknife_se`` gives each
point's standard errors by deleting one seed at a time; ``decompose_gram`` gives the numbers of
the store's ``points`` view, whose standard error of bias^2 is the pair statistic's unbiased
variance (the jackknife over-states it when the bias is small next to the seeds' spread).
"""
from __future__ import annotations

import numpy as np


def terms(grams: np.ndarray, pick: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """bias^2 and fluct^2 of points sharing one seed resample.

    Args:
        grams: (R, R) or (P, R, R) Gram matrices (gram[i, j] = <e_i, e_j> / n).
        pick: seed indices of the resample (a multiset, any length >= 1); default every seed once.
    Returns:
        (bias2, fluct2), each a float or a (P,) array; NaN where the resample holds fewer than
        two distinct seeds (no pair to measure the bias with).
    """
    grams = np.asarray(grams, dtype=float)
    single = grams.ndim == 2
    g = grams[None] if single else grams
    R = g.shape[-1]
    pick = np.arange(R) if pick is None else np.asarray(pick, dtype=int)
    sub = g[:, pick][:, :, pick]
    distinct = pick[:, None] != pick[None, :]
    pairs = int(distinct.sum())
    diag = np.einsum("pii->p", sub) / len(pick)
    if pairs == 0:
        bias2 = np.full(len(g), np.nan)
    else:
        bias2 = np.where(distinct[None], sub, 0.0).sum(axis=(1, 2)) / pairs
    fluct2 = diag - bias2
    return (float(bias2[0]), float(fluct2[0])) if single else (bias2, fluct2)


def jackknife_se(grams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standard errors of bias^2 and fluct^2 by deleting one seed at a time.

    Args:
        grams: (R, R) or (P, R, R), R >= 3 (with two seeds a deletion leaves no pair).
    Returns:
        (se_bias2, se_fluct2), floats or (P,) arrays; NaN when R < 3.
    """
    grams = np.asarray(grams, dtype=float)
    single = grams.ndim == 2
    g = grams[None] if single else grams
    R = g.shape[-1]
    if R < 3:
        nan = np.full(len(g), np.nan)
        return (float("nan"), float("nan")) if single else (nan, nan.copy())
    deleted = [terms(g, np.delete(np.arange(R), k)) for k in range(R)]
    b = np.stack([d[0] for d in deleted])  # (R, P)
    f = np.stack([d[1] for d in deleted])
    scale = (R - 1) / R
    se_b = np.sqrt(scale * ((b - b.mean(axis=0)) ** 2).sum(axis=0))
    se_f = np.sqrt(scale * ((f - f.mean(axis=0)) ** 2).sum(axis=0))
    return (float(se_b[0]), float(se_f[0])) if single else (se_b, se_f)


def decompose_gram(gram: np.ndarray) -> dict:
    """The ``points`` view's numbers from one point's Gram matrix, R distinct seeds.

    Returns:
        ``bias2`` (unbiased, may be negative), ``fluct2`` (mean diagonal less bias2) and
        ``bias2_se`` (the view's standard error: bias2^2 - P4 floored at 2 (P2 - P4) / (R (R - 1)),
        the jackknife with three seeds; see ``store.points``), None where R is too small for it.
    """
    gram = np.asarray(gram, dtype=np.float64)
    R = gram.shape[0]
    if R < 2:
        return {"bias2": None, "fluct2": None, "bias2_se": None}
    bias2, fluct2 = terms(gram)
    pairs = gram - np.diag(np.diag(gram))
    total, rows = pairs.sum(), pairs.sum(axis=1)
    out = {"bias2": bias2, "fluct2": fluct2, "bias2_se": None}
    if R == 3:
        leave_one_out = (total - 2 * rows) / ((R - 1) * (R - 2))
        out["bias2_se"] = float(np.sqrt(2 * leave_one_out.var()))
    elif R >= 4:
        squares = np.sum(pairs ** 2)
        p4 = (total ** 2 - 4 * np.sum(rows ** 2) + 2 * squares) / (R * (R - 1) * (R - 2) * (R - 3))
        variance = max(bias2 ** 2 - p4, 2 * (squares / (R * (R - 1)) - p4) / (R * (R - 1)))
        out["bias2_se"] = float(np.sqrt(max(variance, 0.0)))
    return out


def gram_of(errors: np.ndarray) -> np.ndarray:
    """The Gram matrix of per-seed errors (R, n): <e_i, e_j> / n (for tests and simulations)."""
    errors = np.asarray(errors, dtype=float)
    return errors @ errors.T / errors.shape[-1]


__all__ = ["decompose_gram", "gram_of", "jackknife_se", "terms"]
