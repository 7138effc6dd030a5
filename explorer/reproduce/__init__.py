"""Reproducing the papers: the experiments and their claims, the verdicts, the run, and the papers' specs
(``paper/*.toml``, package data)."""

__all__: list[str] = []
