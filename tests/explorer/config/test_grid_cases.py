"""[[grid.cases]]: sub-grids in one sweep. Each case overrides the [grid] axes it names, the sweep is
the union of the cases' products (a point two cases share runs once), a point keeps the trial key a
plain grid gives it, the dry run counts each case, and overrides reach a case by its index."""
from __future__ import annotations

import itertools
import tomllib

import pytest

from explorer.config.estimate import estimate_lines
from explorer.config.planning import plan
from explorer.config.spec import load_spec, parse_spec
from explorer.errors import SpecError

SPEC = """
name = "lrwidth"
[reference]
kind = "largest"
[train]
steps = 3
[grid]
L = [4]
M = [4, 8]
D = [4]
seeds = 2
problem_seeds = [1, 2]
[[grid.cases]]
preset = ["standard"]
lr_scaling = ["raw"]
lr = [0.0625, 0.125, 0.25]
[[grid.cases]]
preset = ["mlu"]
lr_scaling = ["mean_field"]
lr = [0.5, 1.0, 2.0, 4.0]
"""
CASES = [{"preset": "standard", "lr_scaling": "raw", "lr": (0.0625, 0.125, 0.25)},
         {"preset": "mlu", "lr_scaling": "mean_field", "lr": (0.5, 1.0, 2.0, 4.0)}]


def raw() -> dict:
    return tomllib.loads(SPEC)


def points(p) -> set:
    return {(t.config.problem.seed, t.config.preset, t.config.lr_scaling, t.config.lr, t.config.M) for t in p.trials}


def test_the_sweep_is_the_union_of_each_cases_product():
    p = plan(parse_spec(raw()), schema_version=1)
    expected = {(seed, case["preset"], case["lr_scaling"], lr, M) for seed in (1, 2) for case in CASES
                for lr, M in itertools.product(case["lr"], (4, 8))}
    assert points(p) == expected and len(p.trials) == len(expected) == 28
    assert p.case_trials == (12, 16) and parse_spec(raw()).grid_points() == 28
    assert len({t.trial_key for t in p.trials}) == 28


def test_a_point_keeps_the_trial_key_a_plain_grid_gives_it():
    """Case 0 alone, written as a plain [grid] (no cases): the same keys, so stores stay valid."""
    plain = raw()
    plain["grid"].pop("cases")
    plain["grid"].update(preset=["standard"], lr_scaling=["raw"], lr=[0.0625, 0.125, 0.25])
    # the largest reference is the grid's largest L, M, D: the same in both specs
    alone = {t.trial_key: t.config for t in plan(parse_spec(plain), schema_version=1).trials}
    both = {t.trial_key: t.config for t in plan(parse_spec(raw()), schema_version=1).trials}
    assert len(alone) == 12 and set(alone) <= set(both)
    assert all(both[key] == config for key, config in alone.items())


def test_a_point_two_cases_share_runs_once_and_the_dry_run_counts_each_case():
    data = raw()
    data["grid"]["cases"][1] = {"preset": ["standard"], "lr_scaling": ["raw"], "lr": [0.25, 0.5]}
    p = plan(parse_spec(data), schema_version=1)
    assert p.case_trials == (12, 8) and len(p.trials) == 12 + 8 - 4  # lr 0.25 x 2 widths x 2 draws shared
    lines = estimate_lines(p)
    assert lines[0].startswith("sweep lrwidth: 16 trials (the union of 2 cases over ")
    assert lines[1] == "  case 0 (preset standard, lr_scaling raw, lr 0.0625 .. 0.25 (3 values)): 12 trials"
    assert lines[2] == "  case 1 (preset standard, lr_scaling raw, lr 0.25 .. 0.5 (2 values)): 8 trials"
    assert lines[3] == "  4 trials lie in more than one case: each runs once (the same trial key)"


def test_an_override_reaches_a_case_by_its_index():
    spec = parse_spec(raw(), ["grid.cases[1].lr=[8.0, 16.0]"])
    assert spec.case_axes()[1]["lr"] == (8.0, 16.0) and spec.case_axes()[0]["lr"] == (0.0625, 0.125, 0.25)
    assert plan(spec, schema_version=1).case_trials == (12, 8)
    # on a loaded spec too (its cases are kept as data), and a removal gives the [grid]'s value back
    again = load_spec(spec, ["~grid.cases[0].lr"])
    assert again.case_axes()[0]["lr"] == (1.0,) and again.case_axes()[1]["lr"] == (8.0, 16.0)
    with pytest.raises(SpecError, match=r"no case 2: the spec lists 2 case\(s\), numbered from 0"):
        parse_spec(raw(), ["grid.cases[2].lr=[1.0]"])


@pytest.mark.parametrize("case, message", [
    ({"lr_scaling": ["meanfield"]}, "spec error: [grid.cases][1] lr_scaling: expected a list of learning-rate "
                                    'scalings, got ["meanfield"]: "meanfield" is not one of "mean_field", "raw" '
                                    "(did you mean 'mean_field'?)"),
    ({"seeds": 3}, "spec error: [grid.cases][1] seeds: unknown key; expected one of: L, M, D"),
    ({}, "spec error: [grid.cases][1]: names no axis"),
])
def test_a_bad_case_is_one_line_naming_the_case(case, message):
    data = raw()
    data["grid"]["cases"][1] = case
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    assert str(info.value).startswith(message), str(info.value)
    assert len(str(info.value).splitlines()) == 1


def test_a_case_the_trials_refuse_is_named_by_its_index():
    data = raw()
    data["reference"] = {}  # mean_ode: raw SGD has no Mean ODE limit
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    assert str(info.value).startswith("spec error: [grid.cases][0] lr_scaling: "), str(info.value)
