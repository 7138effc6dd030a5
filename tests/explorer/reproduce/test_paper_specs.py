"""explorer/reproduce/paper/*.toml (package data): every spec parses with the spec layer's keys (no NEW markers left),
plans, and uses the protocol keys docs/reproduce.md maps."""
from __future__ import annotations


import pytest

from explorer.config.planning import plan
from explorer.config.spec import load_spec

from tests.paths import REPO_ROOT

PAPER = sorted((REPO_ROOT / "explorer" / "reproduce" / "paper").glob("*.toml"))


def test_every_experiment_has_a_full_and_a_laptop_spec():
    names = {p.stem for p in PAPER}
    for name in ("companion-linear", "companion-nonlinear-coupled", "companion-nonlinear-uncoupled", "hidden-width-rates"):
        assert {name, f"{name}-laptop"} <= names


@pytest.mark.parametrize("path", PAPER, ids=lambda p: p.stem)
def test_parses_and_plans_with_no_new_markers(path):
    assert "NEW" not in path.read_text()
    spec = load_spec(path)
    assert spec.name == path.stem
    if "laptop" in path.stem:  # the full grids plan too, but take seconds: the laptop ones stand for them
        the_plan = plan(spec)
        assert len(the_plan.trials) == spec.grid_points()


def test_the_protocol_keys_reach_the_trials():
    linear = plan(load_spec(PAPER[0].parent / "companion-linear-laptop.toml"))
    problem = linear.trials[0].config.problem
    assert (problem.data, problem.data_seed, problem.coupled_dim) == ("linear_target", 42, 216)
    assert {r.kind for r in linear.references} == {"joint_limit"}
    # one joint_limit reference per problem draw and D (its hidden state is written in D's embeddings)
    assert len(linear.references) == 20 * 4
    assert {r.config.grid for r in linear.references} == {128}
    uncoupled = plan(load_spec(PAPER[0].parent / "companion-nonlinear-uncoupled-laptop.toml"))
    p = uncoupled.trials[0].config.problem
    assert p.independent_embeddings and p.coupled_dim is None and p.data_seed == 1
    assert len(uncoupled.references) == 3  # the largest point of each repetition
