"""examples/paper/*.toml: every key the spec layer does not know yet is marked NEW (the list in
docs/reproduce.md); without those lines each spec parses and plans."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from explorer.planning import plan
from explorer.spec import parse_spec

PAPER = sorted((Path(__file__).resolve().parents[2] / "examples" / "paper").glob("*.toml"))


def test_every_experiment_has_a_full_and_a_laptop_spec():
    names = {p.stem for p in PAPER}
    for name in ("companion-linear", "companion-nonlinear-coupled", "companion-nonlinear-uncoupled", "hidden-width-rates"):
        assert {name, f"{name}-laptop"} <= names


@pytest.mark.parametrize("path", PAPER, ids=lambda p: p.stem)
def test_parses_once_the_new_keys_are_left_out(path):
    text = "\n".join(line for line in path.read_text().splitlines() if "# NEW" not in line)
    spec = parse_spec(tomllib.loads(text))
    assert spec.name == path.stem
    assert plan(spec).trials
