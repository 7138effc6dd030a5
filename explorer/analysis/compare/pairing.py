"""Two sweeps fitted with the decomposed law on what they share, and their difference with a
paired interval (numpy only: the store side is ``sides``).

Sweeps share randomness by construction: a problem seed draws the same data, embeddings and
reference direction in every sweep, and a seed index draws the same unit streams. So the two
fits' errors move together, and the noise of their difference is far smaller than the sum of
their own noises. The comparison

- pairs the two ``seed_grams`` frames on (problem draw, L, M, D), keeping the draws and points
  both hold and, per draw, the seeds every point of both holds (``pair_frames``: what was left out
  is listed);
- fits both with one point selection: a point enters a term in both fits or in neither
  (``joint_design``);
- estimates the variance of A's estimate, B's and their difference B - A from the draws, the
  sampling's first stage: each draw is left out of both sweeps at once and the rest refitted
  (``draws_jackknife``; each draw's estimate carries its own seeds' noise, so this is the whole
  variance). Where some draw's absence leaves a parameter unmeasured, the bootstrap of the fit
  (``explorer.analysis.decomposed``: draws with replacement, then one resample of seed indices
  per chosen draw), applied to both sweeps, gives G/(G-1) (V_outer - V_inner), not below the
  joint jackknife over seed indices (``total_variance``). The 95 % interval is
  difference +- t(G-1) sd (t(R-1) with one draw, from the seeds' jackknife), in log for the
  positive constants c1, c2, whose difference is reported as the ratio B / A;
- gives the unpaired interval too: the same quantile times sqrt(sd_A^2 + sd_B^2), what two
  sweeps sharing no randomness would give;
- says "identical" when the two frames' Gram matrices are bit-identical (two names for one spec).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from ..decomposed import Design, Draw, NAMES, design, draws_of, solve, terms
from ...errors import FitError
from ...formatting import fmt
from ..data import DRAW_COLUMN, plain_value

PAIR_COLUMNS = (DRAW_COLUMN, "L", "M", "D")  # a grid point of a draw, in both sweeps
RATIO_PARAMETERS = ("c1", "c2")  # positive constants: compared by ratio, in log space
ROUNDING = 1e-9  # a difference this small relative to the estimate is rounding, not a measurement
VERDICTS = ("differs", "no difference measured", "identical", "not measured")


@dataclass
class Paired:
    """Two ``seed_grams`` frames restricted to what both hold, in the same row order."""

    a: pd.DataFrame
    b: pd.DataFrame
    left_out: list = field(default_factory=list)  # sentences: points, draws, seeds only one side has
    n_seeds: int = 0  # the fewest seeds per point over draws


def _key(frame: pd.DataFrame) -> pd.Series:
    draw = frame[DRAW_COLUMN].map(plain_value) if DRAW_COLUMN in frame else pd.Series([None] * len(frame))
    return pd.Series([(d, float(L), float(M), float(D)) for d, L, M, D in
                      zip(draw, frame["L"], frame["M"], frame["D"])], index=frame.index)


def _restrict_seeds(frame: pd.DataFrame, seeds_of_draw: dict) -> pd.DataFrame:
    out = frame.copy()
    grams, seeds = [], []
    for key, own, gram in zip(_key(frame), frame["seeds"], frame["gram"]):
        keep_seeds = seeds_of_draw[key[0]]
        keep = [list(own).index(s) for s in keep_seeds]
        grams.append(np.asarray(gram, float)[np.ix_(keep, keep)])
        seeds.append(tuple(keep_seeds))
    out["gram"], out["seeds"], out["n_seeds"] = grams, seeds, [len(s) for s in seeds]
    return out


def pair_frames(frame_a: pd.DataFrame, frame_b: pd.DataFrame, names=("A", "B")) -> Paired:
    """Keep the (draw, point) rows both frames hold and, per draw, the seeds all of them hold.

    Raises:
        FitError: no shared draw, no shared point, or fewer than 2 shared seeds in every draw.
    """
    key_a, key_b = _key(frame_a), _key(frame_b)
    draws_a, draws_b = {k[0] for k in key_a}, {k[0] for k in key_b}
    shared_draws = draws_a & draws_b
    if not shared_draws:
        raise FitError(f"{names[0]} and {names[1]} share no problem draw ({DRAW_COLUMN} {_listed(draws_a)} "
                       f"against {_listed(draws_b)}): there is nothing to pair")
    shared = set(key_a) & set(key_b)
    if not shared:
        raise FitError(f"{names[0]} and {names[1]} share no grid point (L, M, D) in their shared draws")
    left_out = []
    for name, keys, other in ((names[0], key_a, names[1]), (names[1], key_b, names[0])):
        only = sorted({k for k in keys if k not in shared}, key=str)
        if only:
            shown = ", ".join(f"{DRAW_COLUMN} {k[0]} L={fmt(k[1], 'g')} M={fmt(k[2], 'g')} D={fmt(k[3], 'g')}"
                              for k in only[:4]) + (f", ... ({len(only)} in all)" if len(only) > 4 else "")
            left_out.append(f"{len(only)} (draw, point) rows only {name} has ({other} lacks them): {shown}")
    a = frame_a[key_a.isin(shared).to_numpy()].copy()
    b = frame_b[key_b.isin(shared).to_numpy()].copy()
    a["pair_key"], b["pair_key"] = _key(a), _key(b)
    a = a.sort_values("pair_key", key=lambda s: s.map(str)).reset_index(drop=True)
    b = b.set_index(b["pair_key"].map(str)).loc[a["pair_key"].map(str)].reset_index(drop=True)
    seeds_of_draw, n_min = {}, None
    for draw in sorted({k[0] for k in a["pair_key"]}, key=str):
        rows_a = [s for k, s in zip(a["pair_key"], a["seeds"]) if k[0] == draw]
        rows_b = [s for k, s in zip(b["pair_key"], b["seeds"]) if k[0] == draw]
        every = [set(s) for s in rows_a + rows_b]
        common = sorted(set.intersection(*every))
        dropped = sorted(set.union(*every) - set(common))
        if dropped:
            left_out.append(f"{DRAW_COLUMN} {draw}: seeds {_listed(dropped)} are not at every point of both sweeps")
        seeds_of_draw[draw] = common
        n_min = len(common) if n_min is None else min(n_min, len(common))
    if all(len(s) < 2 for s in seeds_of_draw.values()):
        raise FitError(f"{names[0]} and {names[1]} share fewer than 2 seeds in every draw: the decomposed law "
                       "needs 2 to tell the bias from the fluctuation")
    small = [d for d, s in seeds_of_draw.items() if len(s) < 2]
    if small:
        left_out.append(f"{DRAW_COLUMN} {_listed(small)}: fewer than 2 shared seeds, left out")
        keep = ~a["pair_key"].map(lambda k: k[0] in small).to_numpy()
        a, b = a[keep].reset_index(drop=True), b[keep].reset_index(drop=True)
        n_min = min(len(s) for d, s in seeds_of_draw.items() if d not in small)
    a, b = _restrict_seeds(a, seeds_of_draw), _restrict_seeds(b, seeds_of_draw)
    return Paired(a.drop(columns="pair_key"), b.drop(columns="pair_key"), left_out, int(n_min))


def _listed(values) -> str:
    return ", ".join(str(v) for v in sorted(values, key=str)) or "none"


def identical(paired: Paired) -> bool:
    """True when both sides' Gram matrices and reference errors are bit-identical."""
    same_ref = np.array_equal(paired.a["ref_err"].to_numpy(float), paired.b["ref_err"].to_numpy(float),
                              equal_nan=True)
    return same_ref and all(np.array_equal(x, y) for x, y in zip(paired.a["gram"], paired.b["gram"]))


def joint_design(draws_a: list[Draw], draws_b: list[Draw], floor: str) -> tuple[Design, Design]:
    """One estimator for both sweeps: a row enters a term in both fits or in neither, with one
    weight (the harmonic mean of the two designs': their variances averaged) and one log
    correction (the mean), and c1 is read in the same (M, D) column. Otherwise a difference of
    the two designs' weights alone would show as a small difference that no resample moves."""
    des_a, des_b = design(draws_a, floor), design(draws_b, floor)
    for g in range(len(draws_a)):
        for attr in ("bias_used", "fluct_used"):
            both = getattr(des_a, attr)[g] & getattr(des_b, attr)[g]
            getattr(des_a, attr)[g] = both
            getattr(des_b, attr)[g] = both.copy()
        for attr in ("bias_w", "fluct_w"):
            wa, wb = getattr(des_a, attr)[g], getattr(des_b, attr)[g]
            getattr(des_a, attr)[g] = getattr(des_b, attr)[g] = 2.0 / (1.0 / wa + 1.0 / wb)
        for attr in ("bias_corr", "fluct_corr"):
            mean = (getattr(des_a, attr)[g] + getattr(des_b, attr)[g]) / 2
            getattr(des_a, attr)[g] = getattr(des_b, attr)[g] = mean
    columns = {}
    for g, d in enumerate(draws_a):
        for i in np.flatnonzero(des_a.bias_used[g]):
            columns.setdefault((d.M[i], d.D[i]), set()).add(d.L[i])
    measured = [c for c, Ls in columns.items() if len(Ls) >= 2]
    column = min(measured, key=lambda c: (c[1] / c[0], -c[0])) if measured else (math.nan, math.nan)
    for des in (des_a, des_b):
        des.c1_column = column
        des.in_c1_column = [(d.M == column[0]) & (d.D == column[1]) for d in draws_a]
    return des_a, des_b


@dataclass
class PairedFit:
    """The two fits on the shared selection and their difference (fit parametrization: log c1,
    a, log c2, b), with the standard deviations and quantile of the 95 % intervals."""

    theta_a: np.ndarray
    theta_b: np.ndarray
    sd_a: np.ndarray
    sd_b: np.ndarray
    sd_diff: np.ndarray
    quantile: float
    dof: int
    n_draws: int
    n_boot: int
    identical: bool = False
    # unpaired over paired sd of the seeds' part alone (the jackknife over seed indices): what the
    # pairing cancels of the seeds' noise, on many more degrees of freedom than the draws' G - 1
    seeds_gain: np.ndarray = field(default_factory=lambda: np.full(4, np.nan))

    def rows(self) -> pd.DataFrame:
        """One row per parameter: estimate_a, estimate_b, difference, paired and unpaired CI, verdict."""
        out = []
        diff = self.theta_b - self.theta_a
        unpaired = np.sqrt(self.sd_a**2 + self.sd_b**2)
        for i, name in enumerate(NAMES):
            ratio = name in RATIO_PARAMETERS
            nat = np.exp if ratio else (lambda x: x)
            lo, hi = diff[i] - self.quantile * self.sd_diff[i], diff[i] + self.quantile * self.sd_diff[i]
            ulo, uhi = diff[i] - self.quantile * unpaired[i], diff[i] + self.quantile * unpaired[i]
            measured = np.isfinite(self.theta_a[i]) and np.isfinite(self.theta_b[i])
            if not measured:
                verdict = "not measured"
            elif self.identical:
                verdict, lo, hi = "identical", math.nan, math.nan
            elif not (np.isfinite(lo) and np.isfinite(hi)):
                verdict = "not measured"
            elif abs(diff[i]) <= ROUNDING * (1.0 + abs(self.theta_a[i])):
                verdict = "no difference measured"  # equal to rounding: however narrow the interval
            else:
                verdict = "differs" if lo > 0 or hi < 0 else "no difference measured"
            out.append({"parameter": name, "estimate_a": float(nat(self.theta_a[i])),
                        "estimate_b": float(nat(self.theta_b[i])), "difference": float(nat(diff[i])),
                        "ci_low": float(nat(lo)), "ci_high": float(nat(hi)),
                        "ci_low_unpaired": float(nat(ulo)), "ci_high_unpaired": float(nat(uhi)),
                        "verdict": verdict})
        return pd.DataFrame(out)


def paired_solve(draws_a, draws_b, des_a, des_b, chosen, picks) -> tuple[np.ndarray, np.ndarray]:
    """Both sweeps' estimates from one resample, each row kept in both or in neither: a row whose
    resampled bias (or fluctuation) is not positive in one sweep leaves both, so that no
    replicate compares fits of different points."""
    keep = []
    for g, pick in zip(chosen, picks):
        (b2a, f2a), (b2b, f2b) = terms(draws_a[g].grams, pick), terms(draws_b[g].grams, pick)
        with np.errstate(invalid="ignore"):
            keep.append(((b2a - draws_a[g].ref2 > 0) & (b2b - draws_b[g].ref2 > 0), (f2a > 0) & (f2b > 0)))
    return solve(draws_a, des_a, chosen, picks, keep), solve(draws_b, des_b, chosen, picks, keep)


def draws_jackknife(draws_a, draws_b, des_a, des_b) -> tuple[np.ndarray, ...]:
    """Jackknife variances over problem draws, each draw left out of both sweeps at once and the
    rest refitted with the same design: of A's estimate, B's and their difference. NaN for a
    parameter that some draw's absence leaves unmeasured, and with one draw."""
    G = len(draws_a)
    if G < 2:
        return tuple(np.full(4, np.nan) for _ in range(3))
    deleted = [paired_solve(draws_a, draws_b, des_a, des_b, [h for h in range(G) if h != g], [None] * (G - 1))
               for g in range(G)]
    deleted_a, deleted_b = np.array([d[0] for d in deleted]), np.array([d[1] for d in deleted])
    return tuple((G - 1) / G * np.sum((x - x.mean(axis=0)) ** 2, axis=0)
                 for x in (deleted_a, deleted_b, deleted_b - deleted_a))


def total_variance(jackknife, outer, inner, within, G):
    """The variance of an estimate (A's, B's or their difference) over draws and seeds.

    The draws are the sampling's first stage and each draw's estimate carries its own seeds'
    noise, so the spread between draws measures the whole variance: the draws' jackknife
    (``draws_jackknife``, G - 1 degrees of freedom, the t quantile's), exact for the pooled
    slopes, which are means over draws, and free of resampling noise. Where some draw's absence
    leaves a parameter unmeasured: the bootstrap's G/(G-1) (V_outer - V_inner), but not below
    ``within``, the jackknife over seed indices (the seeds' part, which the whole cannot be
    below). With one draw: ``within``."""
    if G < 2:
        return within
    with np.errstate(all="ignore"):
        between = G / (G - 1) * (np.nanvar(outer, axis=0, ddof=1) - np.nanvar(inner, axis=0, ddof=1))
    fallback = np.fmax(np.where(between > 0, between, np.nan), within)  # fmax: a NaN side gives the other
    return np.where(np.isfinite(jackknife), jackknife, fallback)


def seeds_jackknife(draws_a, draws_b, des_a, des_b) -> tuple[np.ndarray, ...]:
    """Jackknife variances over seed indices, each index deleted from both sweeps at once:
    of A's estimate, B's and their difference."""
    G = len(draws_a)
    totals = [np.zeros(4), np.zeros(4), np.zeros(4)]
    everything = list(range(G))
    for g, d in enumerate(draws_a):
        if d.R < 3:
            return tuple(np.full(4, np.nan) for _ in range(3))
        picks = [None] * G
        deleted_a, deleted_b = [], []
        for k in range(d.R):
            picks[g] = np.delete(np.arange(d.R), k)
            one_a, one_b = paired_solve(draws_a, draws_b, des_a, des_b, everything, picks)
            deleted_a.append(one_a)
            deleted_b.append(one_b)
        deleted_a, deleted_b = np.array(deleted_a), np.array(deleted_b)
        for total, x in zip(totals, (deleted_a, deleted_b, deleted_b - deleted_a)):
            with np.errstate(all="ignore"):
                total += (d.R - 1) / d.R * np.nansum((x - np.nanmean(x, axis=0)) ** 2, axis=0)
    return tuple(totals)


def paired_fit(paired: Paired, n_boot: int = 200, seed: int = 0, floor: str = "quadrature") -> PairedFit:
    """Fit both sides of ``paired`` with one point selection and bootstrap their difference
    with the same resample of draws and seed indices (module docstring).

    Raises:
        FitError: fewer than 2 seeds; n_boot below 2.
    """
    if n_boot < 2:
        raise FitError(f"a paired interval needs at least 2 bootstrap resamples, got {n_boot}")
    with warnings.catch_warnings():  # a term the grid cannot measure is NaN in every replicate
        warnings.simplefilter("ignore", RuntimeWarning)
        draws_a, draws_b = draws_of(paired.a), draws_of(paired.b)
        des_a, des_b = joint_design(draws_a, draws_b, floor)
        G = len(draws_a)
        everything = list(range(G))
        theta_a, theta_b = paired_solve(draws_a, draws_b, des_a, des_b, everything, [None] * G)
        same = identical(paired)
        rng = np.random.default_rng(seed)

        def replicate(chosen):
            picks = [rng.integers(0, draws_a[g].R, draws_a[g].R) for g in chosen]
            return paired_solve(draws_a, draws_b, des_a, des_b, list(chosen), picks)

        inner = [replicate(everything) for _ in range(n_boot)]
        outer = [replicate(rng.integers(0, G, G)) for _ in range(n_boot)] if G > 1 else inner
        within = seeds_jackknife(draws_a, draws_b, des_a, des_b)
        jackknife = draws_jackknife(draws_a, draws_b, des_a, des_b)
        sds = []
        for k, pick in enumerate((lambda p: p[0], lambda p: p[1], lambda p: p[1] - p[0])):
            o, i = np.array([pick(p) for p in outer]), np.array([pick(p) for p in inner])
            sds.append(np.sqrt(total_variance(jackknife[k], o, i, within[k], G)))
    dof = G - 1 if G > 1 else max(min(d.R for d in draws_a) - 1, 1)
    with np.errstate(all="ignore"):
        gain = np.sqrt((within[0] + within[1]) / within[2])
    return PairedFit(theta_a, theta_b, sds[0], sds[1], sds[2], float(stats.t.ppf(0.975, dof)), dof, G, n_boot,
                     identical=same, seeds_gain=gain)


def verdict_line(row) -> str:
    """One line per parameter: A, B, the difference, the paired and unpaired intervals, the verdict."""
    ratio = row["parameter"] in RATIO_PARAMETERS
    what = "B/A" if ratio else "B-A"
    head = (f"{row['parameter']:<4} A {fmt(row['estimate_a'], missing='nan'):>10}  B {fmt(row['estimate_b'], missing='nan'):>10}"
            f"  {what} {fmt(row['difference'], missing='nan'):>10}")
    if row["verdict"] == "identical":
        return f"{head}  the runs are identical (bit-identical errors): no interval to give"
    if row["verdict"] == "not measured":
        return f"{head}  not measured"
    width = row["ci_high"] - row["ci_low"]
    said = "differs" if row["verdict"] == "differs" else f"no difference measured (paired interval width {fmt(width)})"
    return (f"{head}  paired [{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]  unpaired "
            f"[{fmt(row['ci_low_unpaired'])}, {fmt(row['ci_high_unpaired'])}]  {said}")


__all__ = ["PAIR_COLUMNS", "Paired", "PairedFit", "RATIO_PARAMETERS", "VERDICTS", "identical", "joint_design",
           "draws_jackknife", "pair_frames", "paired_fit", "paired_solve", "seeds_jackknife", "total_variance",
           "verdict_line"]
