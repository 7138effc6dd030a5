"""The ``decomposed`` fit: each term of the law fitted on the term it describes.

A point's RMS error over seeds splits into bias^2 + fluct^2 (``gram_terms``): the
seed-mean's distance from the reference and the seeds' spread around it. The law
err^2 ~ (c1 L^-a)^2 + (c2 (D/(LM))^b)^2 is fitted term by term from the Gram rows of
``explorer.analysis.data.seed_grams``:

- Bias: the reference's own error, common to every seed, sits in the bias; it is removed in
  quadrature (bias^2 - ref_err^2) and points with bias < ``FLOOR_FACTOR`` x ref_err are left out
  and counted. A point whose bias is not resolved (below) is left out too, the same points in
  every draw and resample.
  log bias = alpha(draw, M, D) - a log L, weighted least squares with one intercept per draw
  and (M, D) column: any factor of the bias that depends on M only, such as the second-order
  sampling part of order D/(LM) = (D/M)/L, moves a column's level and not its slope, so a does
  not feel it. c1 is the level of the column with the smallest D/M measured at >= 2 depths
  (geometric mean over draws); the notes compare the column levels to say how large the
  second-order part is.
- Fluctuation: log fluct = alpha(draw) + b log(D/(LM)), weighted least squares; the reference
  does not enter. c2 is the geometric mean of exp(alpha(draw)).
- Standard errors: a model of the Gram entries as Gaussian errors with n_eff independent
  entries (n_eff one number for the sweep, ``effective_entries``), evaluated at the draw-pooled
  terms with the bias smoothed by a first fit. A point is neither chosen nor weighted by its
  own noise: choosing points whose bias happened to come out high at large depths would flatten
  the slope. Weights are 1 / (var of the log term + 0.02^2); log terms are corrected for the
  -var/2 bias of a log. A bias is "resolved" where it exceeds ``RESOLVED_SE`` of one draw's
  standard errors.
- Intervals: a two-level bootstrap that respects the shared seeds (unit streams depend on the
  seed index only): draws with replacement, then within each chosen draw one resample of seed
  indices applied to every point of that draw, the decomposition recomputed from the resampled
  Gram rows (a seed drawn twice is not its own pair). The replicate variance V2 holds the seed
  noise twice (once inside the draws' spread, once from the inner resample); the seed-only
  replicates (draws as observed) measure that inner part, Vs. The variance used is
  G/(G-1) (V2 - Vs), where that is positive, else the jackknife variance over seed indices
  (``within_variance``), and the 95% interval is estimate +- t(G-1) sd in the
  fit's parametrization (log for c1, c2): Student's t because G, the number of draws, is small.
  With one draw: the jackknife variance and t(R-1). Coverage is measured by ``benchmarks/coverage.py``.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .gram_terms import terms
from ...errors import FitError
from ..data import DRAW_COLUMN, FLOOR_FACTOR, plain_value

RESOLVED_SE = 3.0  # a bias is measured where it exceeds this many of one draw's standard errors
WEIGHT_FLOOR = 0.02  # log units added in quadrature to every point's standard error
NAMES = ("c1", "a", "c2", "b")
# ``solve_all``'s entries: the tied law's four (fit parametrization: log c1, a, log c2, b), then,
# when the slice varies D, the law with a D exponent in each term (c2 D^g (LM)^-b, c1 D^h L^-a)
# and the theory's tie g = b as a difference, all from the same draws and resamples.
FULL = ("log_c1", "a", "log_c2", "b", "log_c2_d", "b_d", "g", "h", "log_c1_d", "g-b")


def one_seed_reason(n_seeds: int) -> str:
    return (f"the decomposed law needs at least 2 seeds per point to tell the bias from the fluctuation; "
            f"this grid has {n_seeds}")


def checked_draws(frame: pd.DataFrame | None, floor: str) -> tuple[pd.DataFrame, list[Draw]]:
    """The points of a ``seed_grams`` frame with at least two seeds, and their draws, after the
    checks every fit of the decomposition makes (rows, the floor treatment, two seeds)."""
    if frame is None or len(frame) == 0:
        raise FitError("no grid points to fit")
    if floor not in ("quadrature", "none"):
        raise FitError(f"unknown floor treatment {floor!r}; expected one of: quadrature, none")
    if int(frame["n_seeds"].max()) < 2:
        raise FitError(one_seed_reason(int(frame["n_seeds"].max())))
    kept = frame[frame["n_seeds"] >= 2].reset_index(drop=True)
    return kept, draws_of(kept)


@dataclass
class Draw:
    """One problem draw's points: (P, R, R) Gram rows sharing one seed list, and the point data."""

    label: object
    grams: np.ndarray
    rows: np.ndarray  # row indices into the frame
    L: np.ndarray
    M: np.ndarray
    D: np.ndarray
    ref2: np.ndarray  # reference error squared (0 where unknown)

    @property
    def R(self) -> int:
        return self.grams.shape[-1]


def draws_of(frame: pd.DataFrame) -> list[Draw]:
    """Group a ``seed_grams`` frame by draw; points of a draw must share their seed list (the
    seeds' streams are common random numbers across the grid). Raises FitError otherwise."""
    labels = frame[DRAW_COLUMN].map(plain_value) if DRAW_COLUMN in frame else pd.Series([None] * len(frame))
    out = []
    seed_lists, gram_list = frame["seeds"].tolist(), frame["gram"].tolist()  # once: per-row .iloc is slow
    for label in sorted(labels.dropna().unique().tolist()) + ([None] if labels.isna().any() else []):
        rows = np.flatnonzero((labels == label).to_numpy() if label is not None else labels.isna().to_numpy())
        seeds = {tuple(seed_lists[i]) for i in rows}
        if len(seeds) > 1:  # some point lost a seed (flag or failure): keep the seeds every point has
            common = sorted(set.intersection(*(set(s) for s in seeds)))
            if len(common) < 2:
                raise FitError(f"problem draw {label}: its points share fewer than 2 seeds; the decomposed law "
                               "needs the same seeds at every point of a draw")
        else:
            common = list(next(iter(seeds)))
        grams = []
        for i in rows:
            own = list(seed_lists[i])
            keep = [own.index(s) for s in common]
            grams.append(np.asarray(gram_list[i], float)[np.ix_(keep, keep)])
        ref = frame["ref_err"].to_numpy(float)[rows] if "ref_err" in frame else np.zeros(len(rows))
        out.append(Draw(label, np.stack(grams), rows, *(frame[c].to_numpy(float)[rows] for c in ("L", "M", "D")),
                        np.where(np.isfinite(ref), ref, 0.0) ** 2))
    return out


@dataclass
class Design:
    """What stays fixed across resamples: which rows each term uses and their weights."""

    bias_used: list  # per draw (P,) bool
    bias_w: list
    bias_corr: list  # per draw (P,) log-bias correction (+var/2 of log bias^2)
    fluct_used: list
    fluct_w: list
    fluct_corr: list
    c1_column: tuple  # (M, D) of the column that gives c1
    n_floor: int  # rows below FLOOR_FACTOR x ref_err
    n_unresolved: int  # rows whose point's bias is not resolved
    n_eff: float = math.nan  # independent entries the errors behave as (``effective_entries``)
    column: list = field(default_factory=list)  # per draw (P,) int code of the point's (M, D) column
    in_c1_column: list = field(default_factory=list)  # per draw (P,) bool: the column that gives c1
    columns: list = field(default_factory=list)  # (M, D) of each column code, in code order
    varies_d: bool = False  # the slice holds two values of D or more: each term gets a D exponent


def gram_spread(d: Draw) -> tuple[np.ndarray, np.ndarray]:
    """Per point of one draw: the measured variance of its Gram entries (off-diagonal with three
    seeds or more, the diagonal with two) and what Gaussian errors with one independent entry
    give for it, (2 b^2 f^2 + f^4) or (4 b^2 f^2 + 2 f^4). Their ratio is the point's n_eff."""
    b2, f2 = terms(d.grams)
    if d.R >= 3:
        upper = np.triu_indices(d.R, 1)
        spread = d.grams[:, upper[0], upper[1]].var(axis=1, ddof=1)
        return spread, 2 * np.maximum(b2, 0) * f2 + f2**2
    spread = np.einsum("pii->pi", d.grams).var(axis=1, ddof=1)
    return spread, 4 * np.maximum(b2, 0) * f2 + 2 * f2**2


def effective_entries(draws: list[Draw]) -> float:
    """How many independent entries a point's error vectors behave as (n_eff), one number for
    the sweep: the median over points of model / spread (``gram_spread``)."""
    ratios = []
    for d in draws:
        spread, model = gram_spread(d)
        ok = (spread > 0) & (model > 0)
        ratios.extend(model[ok] / spread[ok])
    return float(np.median(ratios)) if ratios else 1.0


def standard_errors(b2, f2, R, n_eff):
    """Model standard errors of one draw's bias^2 and fluct^2 estimates at a point (Gaussian
    errors with n_eff independent entries): smooth in the point's true terms, not noisy."""
    b2 = np.maximum(b2, 0.0)
    se_b2 = np.sqrt((4 * f2 * b2 / R + 2 * f2**2 / (R * (R - 1))) / n_eff)
    se_f2 = f2 * np.sqrt(2.0 / ((R - 1) * n_eff))
    return se_b2, se_f2


def design(draws: list[Draw], floor: str = "quadrature") -> Design:
    """Choose the points and weights of both terms (module docstring). Standard errors come from
    a model of the Gram entries with the sweep's n_eff (``effective_entries``), evaluated at the
    draw-pooled terms, the bias smoothed by a first fit: a point is neither chosen nor weighted
    by its own noise."""
    est = [terms(d.grams) for d in draws]
    n_eff = effective_entries(draws)
    R = float(np.mean([d.R for d in draws]))
    keys = {}
    for g, d in enumerate(draws):
        ref2 = d.ref2 if floor == "quadrature" else np.zeros_like(d.ref2)
        for i in range(len(d.L)):
            acc = keys.setdefault((d.L[i], d.M[i], d.D[i]), [[], []])
            acc[0].append(est[g][0][i] - ref2[i])
            acc[1].append(est[g][1][i])

    def pooled_of(b2_of):
        out = {}
        for k, (b2, f2) in keys.items():
            mean_b2, mean_f2 = b2_of.get(k, np.mean(b2)), max(np.mean(f2), 0.0)
            se_b, se_f = standard_errors(mean_b2, mean_f2, R, n_eff)
            out[k] = (mean_b2, se_b / np.sqrt(len(b2)), se_b, mean_f2, se_f)
        return out

    pooled = pooled_of({})
    pooled = pooled_of(_smoothed_bias(pooled))
    out = Design([], [], [], [], [], [], (math.nan, math.nan), 0, 0, n_eff)
    for g, d in enumerate(draws):
        b2_raw = est[g][0]

        p = [pooled[(d.L[i], d.M[i], d.D[i])] for i in range(len(d.L))]
        mean_b2 = np.array([q[0] for q in p])
        se_row_b = np.array([q[2] for q in p])
        mean_f2 = np.array([q[3] for q in p])
        se_row_f = np.array([q[4] for q in p])
        resolved = (mean_b2 > 0) & (~np.isfinite(se_row_b) | (mean_b2 > RESOLVED_SE * se_row_b))
        floor_limited = resolved & (b2_raw < (FLOOR_FACTOR**2) * d.ref2) if floor == "quadrature" \
            else np.zeros(len(d.L), bool)
        out.n_floor += int(floor_limited.sum())
        out.n_unresolved += int((~resolved & ~floor_limited).sum())
        with np.errstate(all="ignore"):
            var_b = np.where(np.isfinite(se_row_b), (se_row_b / np.maximum(mean_b2, 1e-300)) ** 2, 0.0)
            var_f = np.where(np.isfinite(se_row_f), (se_row_f / np.maximum(mean_f2, 1e-300)) ** 2, 0.0)
        # log b = log(b^2) / 2: variance var_b / 4, and E log(x) ~ log E x - var / 2.
        out.bias_used.append(resolved & ~floor_limited)
        out.bias_w.append(1.0 / (np.minimum(var_b, 4.0) / 4.0 + WEIGHT_FLOOR**2))
        out.bias_corr.append(np.minimum(var_b, 1.0) / 4.0)
        out.fluct_used.append(mean_f2 > 0)
        out.fluct_w.append(1.0 / (np.minimum(var_f, 4.0) / 4.0 + WEIGHT_FLOOR**2))
        out.fluct_corr.append(np.minimum(var_f, 1.0) / 4.0)
    columns = {}
    for g, d in enumerate(draws):
        for i in np.flatnonzero(out.bias_used[g]):
            columns.setdefault((d.M[i], d.D[i]), set()).add(d.L[i])
    measured = [c for c, Ls in columns.items() if len(Ls) >= 2]
    if measured:
        out.c1_column = min(measured, key=lambda c: (c[1] / c[0], -c[0]))
    out.columns = sorted({(float(m), float(dd)) for d in draws for m, dd in zip(d.M, d.D)})
    codes = {c: i for i, c in enumerate(out.columns)}
    out.varies_d = len({c[1] for c in out.columns}) > 1
    out.column = [np.array([codes[(m, dd)] for m, dd in zip(d.M, d.D)], dtype=int) for d in draws]
    out.in_c1_column = [(d.M == out.c1_column[0]) & (d.D == out.c1_column[1]) for d in draws]
    return out


def _smoothed_bias(pooled: dict) -> dict:
    """Each point's draw-pooled bias^2 as predicted by a first fit (common slope in L, one level
    per (M, D) column) over the points resolved by their own estimate. Choosing and weighting
    points by the prediction, not by their own noisy value, keeps a lucky high value at a
    large depth from being chosen and weighted for being high (which would flatten the slope)."""
    keys = [k for k, v in pooled.items() if v[0] > 0 and (not np.isfinite(v[1]) or v[0] > RESOLVED_SE * v[1])]
    if not keys:
        return {}
    columns = {c: i for i, c in enumerate(dict.fromkeys((k[1], k[2]) for k in keys))}
    x = np.log([k[0] for k in keys])
    y = 0.5 * np.log([pooled[k][0] for k in keys])
    with np.errstate(all="ignore"):
        w = np.array([1.0 / ((pooled[k][1] / pooled[k][0]) ** 2 / 4 + WEIGHT_FLOOR**2) if np.isfinite(pooled[k][1])
                      else 1.0 for k in keys])
    (s,), alpha = within_fit(x[:, None], y, w, np.array([columns[(k[1], k[2])] for k in keys]))
    if not np.isfinite(s):
        return {}
    return {k: float(np.exp(2 * (alpha[columns[(k[1], k[2])]] + s * np.log(k[0]))))
            for k in pooled if (k[1], k[2]) in columns and columns[(k[1], k[2])] in alpha}


def within_fit(X, y, w, group) -> tuple[np.ndarray, dict]:
    """Weighted least squares y = alpha[group] + X coef: (coef, {group: alpha}); NaN coefs when
    the columns of X, each centred within its groups, are not of full rank (no group holds two
    distinct values, or two columns move together). ``X``: (n, k); ``group``: non-negative integers."""
    X = np.asarray(X, dtype=float).reshape(len(y), -1)
    group = np.asarray(group, dtype=int)
    k = X.shape[1]
    if not len(y):
        return np.full(k, np.nan), {}
    sw = np.bincount(group, w)
    present = sw > 0
    safe = np.where(present, sw, 1.0)
    mx = np.column_stack([np.bincount(group, w * X[:, j], minlength=len(sw)) / safe for j in range(k)])
    my = np.bincount(group, w * y) / safe
    # a group with one distinct x carries no slope; its weighted mean can differ from x by a
    # rounding error, which must not pass for a spread (it gave a slope of exactly 0, CI width 0).
    # Distinct x here are logs of distinct depths, widths or L*M, far apart next to 1e-9.
    dx = X - mx[group]
    dx = np.where(np.abs(dx) > 1e-9 * (1.0 + np.abs(X)), dx, 0.0)
    normal = (dx * w[:, None]).T @ dx
    if k == 1:
        if normal[0, 0] <= 0:
            return np.full(1, np.nan), {}
        coef = np.array([float(np.sum(w * dx[:, 0] * (y - my[group]))) / normal[0, 0]])
    else:
        scale = np.sqrt(np.diag(normal))
        if np.any(scale <= 0) or np.linalg.cond(normal / np.outer(scale, scale)) > 1e8:
            return np.full(k, np.nan), {}
        coef = np.linalg.solve(normal, (dx * w[:, None]).T @ (y - my[group]))
    alpha = my - mx @ coef
    return coef, {int(g): float(alpha[g]) for g in np.flatnonzero(present)}


def log_terms(d: Draw, des: Design, g: int, pick) -> tuple:
    """Draw ``g``'s log bias and log fluctuation under the seed resample ``pick``, bias-corrected,
    and the rows each term may use."""
    b2, f2 = terms(d.grams, pick)
    with np.errstate(all="ignore"):
        yb_g = 0.5 * np.log(b2 - d.ref2) + des.bias_corr[g]
        yf_g = 0.5 * np.log(f2) + des.fluct_corr[g]
    return yb_g, yf_g, des.bias_used[g] & np.isfinite(yb_g), des.fluct_used[g] & np.isfinite(yf_g)


def solve(draws: list[Draw], des: Design, chosen, picks, keep=None, memo: dict | None = None) -> np.ndarray:
    """The four parameters (log c1, a, log c2, b) of the tied law from draws ``chosen`` (indices,
    repeats allowed) with seed resamples ``picks`` (one index array per chosen draw, None: as
    observed). ``keep``: per chosen draw, (bias rows, fluct rows) masks a row must also pass (a
    paired comparison keeps a row in both sweeps' replicate or in neither). ``memo``: a dict kept
    across the calls of one bootstrap (same draws and design): a draw's terms under a seed
    resample it has met before are taken from it, not computed again (the same numbers: few
    distinct resamples of R seeds exist, 256 for R = 4, and a bootstrap draws hundreds)."""
    return solve_all(draws, des, chosen, picks, keep, memo)[:len(NAMES)]


def solve_all(draws: list[Draw], des: Design, chosen, picks, keep=None, memo: dict | None = None) -> np.ndarray:
    """``solve``'s four parameters, then those of the law with a D exponent in each term
    (``UNTIED``: log c2, b, g of c2 D^g (LM)^-b; h and log c1 of c1 D^h L^-a) and g - b, the
    theory's tie as a difference: NaN where the slice does not vary D or cannot measure them."""
    parts_b, parts_f = _parts(draws, des, chosen, picks, keep, memo)
    out = np.full(len(FULL), np.nan)
    xb, yb, wb, gb, c1b = (np.concatenate(p) for p in zip(*parts_b))
    width = _width(des)
    if len(xb):
        (s,), alpha = within_fit(xb[:, None], yb, wb, gb)
        levels = [alpha[int(k)] for k in np.unique(gb[c1b]) if int(k) in alpha]
        out[1] = -s
        out[0] = float(np.mean(levels)) if levels else math.nan
        if des.varies_d and np.isfinite(s):
            out[FULL.index("h")], out[FULL.index("log_c1_d")] = _bias_d_exponent(alpha, wb, gb, des, width)
    xf, yf, wf, gf = (np.concatenate(p) for p in zip(*parts_f))
    if len(xf):
        log_d, log_lm = xf[:, 0], xf[:, 1]
        (s,), alpha = within_fit((log_d - log_lm)[:, None], yf, wf, gf)
        out[3] = s
        out[2] = float(np.mean(list(alpha.values()))) if alpha else math.nan
        if des.varies_d:
            (g, minus_b), alpha = within_fit(xf, yf, wf, gf)
            if np.isfinite(g):
                at = FULL.index("log_c2_d")
                out[at: at + 3] = float(np.mean(list(alpha.values()))), -minus_b, g
                out[FULL.index("g-b")] = g + minus_b
    return out


def _width(des: Design) -> int:
    return 1 + max(int(c.max()) for c in des.column) if des.column else 1


def _parts(draws, des, chosen, picks, keep, memo) -> tuple[list, list]:
    """Per chosen draw, the rows each term fits: bias (log L, log bias, weight, column group,
    in c1's column) and fluctuation ((log D, log LM), log fluct, weight, draw group)."""
    parts_b, parts_f = [], []
    width = _width(des)
    for copy, (g, pick) in enumerate(zip(chosen, picks)):
        d = draws[g]
        if memo is None:
            yb_g, yf_g, ub, uf = log_terms(d, des, g, pick)
        else:
            key = (int(g), None if pick is None else tuple(int(i) for i in pick))
            if key not in memo:
                memo[key] = log_terms(d, des, g, pick)
            yb_g, yf_g, ub, uf = memo[key]
        if keep is not None:
            ub, uf = ub & keep[copy][0], uf & keep[copy][1]
        parts_b.append((np.log(d.L[ub]), yb_g[ub], des.bias_w[g][ub], copy * width + des.column[g][ub],
                        des.in_c1_column[g][ub]))
        parts_f.append((np.column_stack([np.log(d.D[uf]), np.log(d.L[uf] * d.M[uf])]), yf_g[uf], des.fluct_w[g][uf],
                        np.full(int(uf.sum()), copy)))
    return parts_b, parts_f


def _bias_d_exponent(alpha: dict, wb, gb, des: Design, width: int) -> tuple[float, float]:
    """(h, log c1) of c1 D^h L^-a: the bias levels of the (M, D) columns (the common slope a
    removed) regressed on log D within each (resample copy, M), each level weighted by its
    column's summed weight; c1 is the level of c1's column less h log D there. NaN when no M
    holds a measured level at two values of D."""
    groups = np.array(sorted(alpha))
    if not len(groups):
        return math.nan, math.nan
    weight = np.bincount(gb, wb, minlength=int(groups.max()) + 1)[groups]
    M = np.array([des.columns[k % width][0] for k in groups])
    D = np.array([des.columns[k % width][1] for k in groups])
    m_codes = {m: i for i, m in enumerate(sorted(set(M.tolist())))}
    by_m = (groups // width) * len(m_codes) + np.array([m_codes[m] for m in M])
    (h,), _ = within_fit(np.log(D)[:, None], np.array([alpha[int(k)] for k in groups]), weight, by_m)
    if not np.isfinite(h):
        return math.nan, math.nan
    c1_level = [alpha[int(k)] - h * math.log(des.c1_column[1]) for k in groups
                if des.columns[k % width] == tuple(des.c1_column)]
    return h, (float(np.mean(c1_level)) if c1_level else math.nan)


def within_variance(draws: list[Draw], des: Design, theta: np.ndarray, memo: dict | None = None) -> np.ndarray:
    """The seeds' part of the estimate's variance: a jackknife deleting one seed index at a time
    from every point of a draw, summed over draws."""
    G = len(draws)
    total = np.zeros(len(FULL))
    for g, d in enumerate(draws):
        if d.R < 3:
            return np.full(len(FULL), np.nan)
        picks = [None] * G
        deleted = []
        for k in range(d.R):
            picks[g] = np.delete(np.arange(d.R), k)
            deleted.append(solve_all(draws, des, list(range(G)), picks, memo=memo))
        deleted = np.array(deleted)
        with np.errstate(all="ignore"):
            total += (d.R - 1) / d.R * np.nansum((deleted - np.nanmean(deleted, axis=0)) ** 2, axis=0)
    return total


@dataclass
class Decomposed:
    """Estimates (``FULL``: log c1, a, log c2, b, then the D exponents' law and g - b), their
    interval sd, quantile and the replicates."""

    theta: np.ndarray
    sd: np.ndarray
    quantile: float
    samples: np.ndarray  # (B, len(FULL)) replicates rescaled to the interval's sd, fit parametrization
    method: str
    design: Design
    dof: int = 0  # degrees of freedom of the t quantile

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        return self.theta - self.quantile * self.sd, self.theta + self.quantile * self.sd


def replicate_spread(theta: np.ndarray, inner: np.ndarray, outer: np.ndarray | None, v_within: np.ndarray,
                     G: int, R: int) -> tuple[np.ndarray, float, int, np.ndarray, str]:
    """The interval rule of the module docstring, for any estimates resampled this way: (sd,
    t quantile, its degrees of freedom, the replicates rescaled to the sd, what was resampled).

    Args:
        theta: (p,) estimates. inner: (B, p) replicates with the draws as observed and seed
            indices resampled. outer: (B, p) replicates with the draws resampled too (None: one
            draw). v_within: (p,) the seeds' part of the variance (the jackknife). G: draws. R: seeds
            of a draw.
    """
    if G > 1:
        with np.errstate(all="ignore"):
            between = G / (G - 1) * (np.nanvar(outer, axis=0, ddof=1) - np.nanvar(inner, axis=0, ddof=1))
        var = np.where(between > 0, between, v_within)
        dof = G - 1
        replicates, method = outer, "draws, then seed indices shared by a draw's points"
    else:
        dof = max(R - 1, 1)
        var, replicates, method = v_within, inner, "seed indices shared by the draw's points"
    from scipy import stats  # on first use: a fit read back from the cache needs no scipy

    quantile = float(stats.t.ppf(0.975, dof))
    sd = np.where(np.isfinite(theta), np.sqrt(var), np.nan)  # a term not measured has no spread either
    with np.errstate(all="ignore"):
        spread = np.nanstd(replicates, axis=0, ddof=1)
        scaled = theta + (replicates - np.nanmean(replicates, axis=0)) * np.where(spread > 0, sd / spread, 0.0)
    measured = np.isfinite(theta)  # a term the grid does not measure is NaN in every replicate
    scaled = scaled[np.all(np.isfinite(scaled[:, measured]), axis=1)]
    return sd, quantile, dof, scaled, method


def estimate(draws: list[Draw], n_boot: int = 200, seed: int = 0, floor: str = "quadrature") -> Decomposed:
    """Point estimate and the shared-seed two-level bootstrap interval (module docstring)."""
    with warnings.catch_warnings():  # a term the grid cannot measure is NaN in every replicate
        warnings.simplefilter("ignore", RuntimeWarning)
        return _estimate(draws, n_boot, seed, floor)


def _estimate(draws: list[Draw], n_boot: int, seed: int, floor: str) -> Decomposed:
    if min(d.R for d in draws) < 2:
        raise FitError(one_seed_reason(min(d.R for d in draws)))
    des = design(draws, floor)
    G = len(draws)
    everything = list(range(G))
    theta = solve_all(draws, des, everything, [None] * G)
    if n_boot <= 0:
        return Decomposed(theta, np.full(len(FULL), np.nan), math.nan, np.empty((0, len(FULL))), "none", des, 0)
    rng = np.random.default_rng(seed)

    def seeds_of(g):
        return rng.integers(0, draws[g].R, draws[g].R)

    memo: dict = {}  # a draw's terms per seed resample, shared by every replicate below
    inner = np.array([solve_all(draws, des, everything, [seeds_of(g) for g in everything], memo=memo)
                      for _ in range(n_boot)])
    v_within = within_variance(draws, des, theta, memo)
    outer = None
    if G > 1:
        outer = []
        for _ in range(n_boot):
            chosen = rng.integers(0, G, G)
            outer.append(solve_all(draws, des, list(chosen), [seeds_of(g) for g in chosen], memo=memo))
        outer = np.array(outer)
    sd, quantile, dof, scaled, method = replicate_spread(theta, inner, outer, v_within, G, draws[0].R)
    return Decomposed(theta, sd, quantile, scaled, method, des, dof)


__all__ = ["FULL", "Decomposed", "Design", "Draw", "NAMES", "RESOLVED_SE", "WEIGHT_FLOOR", "design", "draws_of", "effective_entries", "estimate", "gram_spread",
           "log_terms", "one_seed_reason", "replicate_spread", "solve", "solve_all", "standard_errors", "within_fit"]
