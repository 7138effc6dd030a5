"""The range check along D: whether the fluctuation's D exponent g is one slope or an average.

The law c2 D^g (LM)^-b has one slope in log D. Between each pair of neighbouring widths D_k <
D_k+1 the fluctuation has its own local slope: the mean over a draw's (L, M) points of the
difference of their log fluctuations, over log(D_k+1 / D_k) (a draw's level cancels). Its
standard error is the larger of the decomposed fit's model (the weights' variances, the two
widths' summed) and the spread of the draws' local slopes (with 3 draws or more). When the local
slopes disagree beyond their noise (a chi-square test of one common slope at ``LEVEL``), g is an
average over the measured range of D, and the fit says so with the slopes.
"""
from __future__ import annotations

import math

import numpy as np

from .estimator import WEIGHT_FLOOR, Decomposed, Draw, terms
from ...formatting import fmt

LEVEL = 0.01  # the local slopes disagree when one common slope explains them with p below this


def local_d_slopes(draws: list[Draw], fit: Decomposed) -> list[tuple[float, float, float, float]]:
    """(D_k, D_k+1, local slope, its standard error) of the log fluctuation for each pair of
    neighbouring widths, from the rows the fit's fluctuation term uses (module docstring)."""
    des = fit.design
    Ds = sorted({float(x) for d in draws for x in d.D})
    out = []
    for D0, D1 in zip(Ds, Ds[1:]):
        step = math.log(D1 / D0)
        per_draw, variances = [], []
        for g, d in enumerate(draws):
            _, f2 = terms(d.grams)
            with np.errstate(all="ignore"):
                y = 0.5 * np.log(f2) + des.fluct_corr[g]
            var = 1.0 / des.fluct_w[g] - WEIGHT_FLOOR**2  # the model's variance of a log fluctuation
            ok = des.fluct_used[g] & np.isfinite(y)
            at = {(d.L[i], d.M[i], d.D[i]): i for i in np.flatnonzero(ok)}
            pairs = [(at[(L, M, D0)], at[(L, M, D1)]) for (L, M, D) in at if D == D0 and (L, M, D1) in at]
            if not pairs:
                continue
            i0, i1 = (np.array(p) for p in zip(*pairs))
            v = np.maximum(var[i0] + var[i1], 1e-12)
            per_draw.append(float(np.sum((y[i1] - y[i0]) / v) / np.sum(1.0 / v)) / step)
            variances.append(1.0 / float(np.sum(1.0 / v)) / step**2)
        if not per_draw:
            continue
        G = len(per_draw)
        slope = float(np.mean(per_draw))
        model_se = math.sqrt(sum(variances)) / G
        draws_se = float(np.std(per_draw, ddof=1)) / math.sqrt(G) if G >= 3 else 0.0
        out.append((D0, D1, slope, max(model_se, draws_se)))
    return out


def d_slope_warnings(draws: list[Draw], fit: Decomposed, est: dict) -> list[str]:
    """A warning naming the local slopes when they disagree beyond their noise: g is then an
    average over the measured widths, not the exponent of each."""
    slopes = local_d_slopes(draws, fit)
    if len(slopes) < 2 or not np.isfinite(est.get("g", math.nan)):
        return []
    s = np.array([x[2] for x in slopes])
    se = np.array([x[3] for x in slopes])
    w = 1.0 / se**2
    common = float(np.sum(w * s) / np.sum(w))
    chi2 = float(np.sum(w * (s - common) ** 2))
    from scipy import stats  # on first use: a fit read back from the cache needs no scipy

    p = float(stats.chi2.sf(chi2, len(s) - 1))
    if p >= LEVEL:
        return []
    shown = ", ".join(f"{fmt(x[2], '.2f')} +- {fmt(x[3], '.2f')} (D = {fmt(x[0], 'g')}..{fmt(x[1], 'g')})" for x in slopes)
    return [f"g = {fmt(est['g'], '.3f')} is an average over D = {fmt(slopes[0][0], 'g')}..{fmt(slopes[-1][1], 'g')}: "
            f"the fluctuation's local slopes in D are {shown}, which disagree beyond their noise (chi-square "
            f"p = {fmt(p, '.2g')}); the law's one D exponent does not hold over this range"]


__all__ = ["LEVEL", "d_slope_warnings", "local_d_slopes"]
