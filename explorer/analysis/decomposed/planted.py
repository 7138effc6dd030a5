"""Planted laws shaped like ``explorer.analysis.data.seed_grams`` frames, for the coverage harness
(``benchmarks/coverage.py``) and the tests of the decomposed fit.

Each draw g has its own bias direction u_g and reference-error direction v_g (n entries, unit
RMS) and a log effect on each term (sd ``draw_sd``). Seed s at point (L, M, D) has the error

    e_s = c1 exp(eps_b,g) L^-a u_g + ref_err v_g + c2 exp(eps_f,g) (D/(LM))^b xi_s

(a regime over several D, ``Ds``, plants c1 D^h L^-a and c2 D^g (LM)^-b, g = b unless it says)

with xi_s standard Gaussian; with ``shared`` = rho > 0 the seed's noise is a common random
number across the grid, xi_s = rho z_{g,s} + sqrt(1 - rho^2) w_{g,s,point} (the engine's unit
streams depend on the seed index only). The RMS over seeds then estimates bias^2 + fluct^2 with
bias = c1 L^-a (draw effect included) and fluct = c2 (D/(LM))^b.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .gram_terms import gram_of


@dataclass(frozen=True)
class Regime:
    """A planted law and the design it is measured on."""

    name: str
    c1: float
    c2: float
    a: float = 1.0
    b: float = 0.5
    Ls: tuple = (4, 8, 16, 32, 64, 128)
    Ms: tuple = (1, 4, 16, 64, 256, 1024)
    D: int = 8
    draws: int = 4
    seeds: int = 4
    entries: int = 50
    draw_sd: float = 0.2
    shared: float = 0.0
    ref_err: float = 1e-5
    Ds: tuple = ()  # several D: each term's D exponent is planted (g, h) and fitted
    g: float | None = None  # D exponent of the fluctuation (None: b, the theory's tie)
    h: float = 0.0  # D exponent of the bias

    @property
    def widths(self) -> tuple:
        return self.Ds or (self.D,)

    @property
    def truth(self) -> dict:
        out = {"c1": self.c1, "a": self.a, "c2": self.c2, "b": self.b}
        if len(self.widths) > 1:
            out.update(g=self.b if self.g is None else self.g, h=self.h)
        return out

    def fluct(self, L, M, D) -> float:
        if self.g is None:  # the theory's tie, written as the single-D regimes always were
            return self.c2 * (D / (L * M)) ** self.b
        return self.c2 * D**self.g * (L * M) ** (-self.b)

    def bias(self, L, D) -> float:
        return self.c1 * D**self.h * L ** (-self.a)


REGIMES = {
    "easy": Regime("easy", c1=0.8, c2=0.3, Ls=(2, 4, 8, 16, 32, 64), Ms=(1, 4, 16, 64), seeds=5, draw_sd=0.0),
    "rates": Regime("rates", c1=0.065, c2=0.205),
    "shared": Regime("shared", c1=0.065, c2=0.205, shared=0.8),
    # issue 34's D sweep: L 4..64 x M 16..256 x D 4..32, 5 draws x 8 seeds; the fluctuation's D
    # exponent planted apart from its L*M one (g = 0.15, b = 0.5: what err_out measured)
    "dexp": Regime("dexp", c1=0.065, c2=0.205, g=0.15, Ls=(4, 16, 64), Ms=(16, 64, 256), Ds=(4, 8, 16, 32),
                   draws=5, seeds=8),
}


def planted_grams(regime: Regime, rng) -> pd.DataFrame:
    """One synthetic sweep as a ``seed_grams`` frame (columns problem_seed, L, M, D, ref_err,
    n_seeds, seeds, gram, err)."""
    return planted_sweeps(regime, rng)[0]


def planted_sweeps(regime: Regime, rng, c1_scales: tuple[float, ...] = (1.0,)) -> list[pd.DataFrame]:
    """Synthetic sweeps that differ only in c1 (``regime.c1`` times each scale) and share every
    random draw: each problem draw's bias and reference directions and effects, and each seed's
    noise at each point (what shared problem seeds and seed streams give two real sweeps). One
    ``seed_grams`` frame per scale; the random stream is used the same for any number of scales."""
    rows: list[list[dict]] = [[] for _ in c1_scales]
    n, R = regime.entries, regime.seeds
    for g in range(regime.draws):
        u = rng.standard_normal(n)
        u /= np.sqrt(np.mean(u**2))
        v = rng.standard_normal(n)
        v /= np.sqrt(np.mean(v**2))
        eff_b, eff_f = np.exp(regime.draw_sd * rng.standard_normal(2))
        common = rng.standard_normal((R, n))
        for L, M, D in itertools.product(regime.Ls, regime.Ms, regime.widths):
            fluct = eff_f * regime.fluct(L, M, D)
            xi = regime.shared * common + np.sqrt(1 - regime.shared**2) * rng.standard_normal((R, n))
            for sweep_rows, scale in zip(rows, c1_scales):
                bias = scale * eff_b * regime.bias(L, D)
                gram = gram_of(bias * u + regime.ref_err * v + fluct * xi)
                sweep_rows.append({"problem_seed": g + 1, "L": L, "M": M, "D": D, "ref_err": regime.ref_err,
                                   "n_seeds": R, "seeds": tuple(range(R)), "gram": gram,
                                   "err": float(np.sqrt(np.trace(gram) / R))})
    return [pd.DataFrame(r) for r in rows]


def planted_pair_partly_shared(regime: Regime, rng, *, shared: float, effect_sd: float,
                               c1_factor: float = 1.2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two frames of ``regime``'s law, B's c1 ``c1_factor`` times A's, that share each draw's bias
    and reference directions and effects, but (unlike ``planted_sweeps``) only part of the seeds'
    noise and of the draw's fluctuation level: B's seed noise has correlation ``shared`` with
    A's, and B's fluctuation level is A's times exp(``effect_sd`` x N(0, 1)) per draw, a
    change that differs between draws (its mean over draws is no change). What two learning
    rates do to one draw's seeds: the networks move apart, by a draw-dependent amount."""
    rows: list[list[dict]] = [[], []]
    n, R = regime.entries, regime.seeds
    for g in range(regime.draws):
        u, v = (x / np.sqrt(np.mean(x**2)) for x in rng.standard_normal((2, n)))
        eff_b, eff_f = np.exp(regime.draw_sd * rng.standard_normal(2))
        levels = (eff_f, eff_f * np.exp(effect_sd * rng.standard_normal()))
        for L, M in itertools.product(regime.Ls, regime.Ms):
            noise_a = rng.standard_normal((R, n))
            noise_b = shared * noise_a + np.sqrt(1 - shared**2) * rng.standard_normal((R, n))
            for out, scale, noise, level in zip(rows, (1.0, c1_factor), (noise_a, noise_b), levels):
                bias = regime.c1 * scale * eff_b * L ** (-regime.a)
                fluct = regime.c2 * level * (regime.D / (L * M)) ** regime.b
                gram = gram_of(bias * u + regime.ref_err * v + fluct * noise)
                out.append({"problem_seed": g + 1, "L": L, "M": M, "D": regime.D, "ref_err": regime.ref_err,
                            "n_seeds": R, "seeds": tuple(range(R)), "gram": gram,
                            "err": float(np.sqrt(np.trace(gram) / R))})
    return pd.DataFrame(rows[0]), pd.DataFrame(rows[1])


def seed_errors(frame: pd.DataFrame) -> pd.Series:
    """Per-seed RMS errors of a gram frame (sqrt of the Gram diagonal), as ``grid_errors``'s seed_errs."""
    return frame["gram"].map(lambda g: np.sqrt(np.clip(np.diag(g), 0, None)))


def as_grid(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame in ``grid_errors``'s shape (err, seed_errs, ref_err, floor_limited) for the
    laws fitted to RMS errors."""
    from ..data import FLOOR_FACTOR

    out = frame[["problem_seed", "L", "M", "D", "ref_err", "err"]].copy()
    out["seed_errs"] = seed_errors(frame)
    out["floor_limited"] = out["err"] < FLOOR_FACTOR * out["ref_err"]
    return out


__all__ = ["REGIMES", "Regime", "as_grid", "planted_grams", "planted_pair_partly_shared", "planted_sweeps",
           "seed_errors"]
