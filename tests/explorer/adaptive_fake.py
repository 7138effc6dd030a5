"""The fake runner of the adaptive tests: ``explorer.planted_runner``'s, under its tests' name."""
from __future__ import annotations

from explorer.planted_runner import PlantedRunner as FakeRunner
from explorer.planted_runner import TermsLaw, free_law

__all__ = ["FakeRunner", "TermsLaw", "free_law"]
