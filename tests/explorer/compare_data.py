"""What the comparison tests share: a planted pair of sweeps that share their randomness, as
frames (``planted_pair``) and in a real store through the planted runner (``planted_store``)."""
from __future__ import annotations


import itertools

import numpy as np
import pandas as pd

from explorer.analysis.decomposition import gram_of
from explorer.analysis.planted import planted_sweeps
from explorer.sweeps.planted_runner import PlantedRunner, TermsLaw
from explorer.config.planning import plan
from explorer.config.spec import load_spec


def planted_pair(regime, rng, c1_factor: float = 1.2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two ``seed_grams`` frames of ``explorer.analysis.planted``'s law that differ only in c1
    (B's is ``c1_factor`` times A's) and share every random draw (``planted_sweeps``)."""
    a, b = planted_sweeps(regime, rng, (1.0, c1_factor))
    return a, b


def planted_pair_partly_shared(regime, rng, *, shared: float, effect_sd: float, c1_factor: float = 1.2):
    """Two frames of ``regime``'s law, B's c1 ``c1_factor`` times A's, that share each draw's bias
    and reference directions and effects, but (unlike ``planted_pair``) only part of the seeds'
    noise and of the draw's fluctuation level: B's seed noise is ``shared`` x A's plus fresh
    noise, and B's fluctuation level is A's times exp(``effect_sd`` x N(0, 1)) per draw, a
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


PLANTED_SPEC = """
name = "{name}"
[problem]
d_in = {d_in}
[train]
steps = 3
lr = {lr}
[reference]
depth = 32
width = 16
[grid]
L = [4, 8, 16, 32, 64]
M = [64, 256, 1024]
D = [8]
problem_seeds = {draws}
seeds = 4
"""


def planted_store(store, name: str, *, c1: float = 0.065, lr: float = 1.0, d_in: int = 5, draws=(1, 2, 3),
                  seed: int = 0, tmp_path=None) -> None:
    """Write a planted sweep ``name`` into ``store`` as a sweep would (``PlantedRunner``). Sweeps
    written with the same ``seed`` share their noise draw by draw and seed by seed."""
    text = PLANTED_SPEC.format(name=name, lr=lr, d_in=d_in, draws=list(draws))
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    spec = load_spec(str(path))
    runner = PlantedRunner(store, TermsLaw(c1=c1), entries=400, draw_sd=0.2, ref_err=1e-6, seed=seed,
                           term_effects=True)
    runner(spec, {t.trial_key for t in plan(spec).trials})


__all__ = ["PLANTED_SPEC", "planted_pair", "planted_pair_partly_shared", "planted_store"]
