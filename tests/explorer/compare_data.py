"""What the comparison tests share: a planted pair of sweeps that share their randomness, as
frames (``planted_pair``) and in a real store through the planted runner (``planted_store``)."""
from __future__ import annotations


import pandas as pd

from explorer.analysis.decomposed import planted_sweeps
from explorer.sweeps.adaptive import PlantedRunner, TermsLaw
from explorer.config.planning import plan
from explorer.config.spec import load_spec


def planted_pair(regime, rng, c1_factor: float = 1.2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two ``seed_grams`` frames of ``explorer.analysis.decomposed``'s law that differ only in c1
    (B's is ``c1_factor`` times A's) and share every random draw (``planted_sweeps``)."""
    a, b = planted_sweeps(regime, rng, (1.0, c1_factor))
    return a, b


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


__all__ = ["PLANTED_SPEC", "planted_pair", "planted_store"]
