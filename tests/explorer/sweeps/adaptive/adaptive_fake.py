"""What the adaptive tests share: the fake runner (``explorer.sweeps.adaptive.planted_runner``'s, under its tests'
name) and the small adaptive spec that the driver tests run for real."""
from __future__ import annotations

from explorer.sweeps.adaptive import PlantedRunner as FakeRunner
from explorer.sweeps.adaptive import TermsLaw, free_law


def small_adaptive_spec(name: str) -> str:
    """A TOML adaptive spec whose rounds take seconds and whose target is never met (the budget
    stops it), so a driver test can interrupt it mid-round."""
    return _SMALL_ADAPTIVE_SPEC.replace("{name}", name)


_SMALL_ADAPTIVE_SPEC = """
name = "{name}"
[train]
steps = 5
[reference]
depth = 32
width = 16
[grid]
L = [2, 4, 8, 16]
M = [1, 4, 16]
D = [4]
problem_seeds = [1, 2]
seeds = 2
[resources]
points_per_trial = 1
[adaptive]
halfwidth = 0.001
budget = 0.6
batch = 3
initial = 5
resamples = 40
"""

__all__ = ["FakeRunner", "TermsLaw", "free_law", "small_adaptive_spec"]
