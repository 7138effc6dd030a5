"""Spec loading, overrides and strict validation (one line naming the key)."""
from __future__ import annotations

import copy

import pytest

from explorer.errors import SpecError
from explorer.config.planning import plan
from explorer.config.spec import load_spec, parse_spec
from trials import REFERENCE_KINDS, ConfigError

from tests.paths import REPO_ROOT

BASE = {
    "name": "quick",
    "problem": {"d_in": 5, "d_out": 5, "samples": 10, "seed": 1},
    "model": {"activation": "tanh", "preset": "mlu"},
    "train": {"steps": 10, "lr": 1.0, "dtype": "float64"},
    "reference": {"depth": 1024, "width": 512, "replicas": 2},
    "grid": {"L": [4, 8, 16, 32], "M": [1, 4, 16], "D": [8], "alpha": [1.0], "seeds": 3},
    "resources": {"cpus_per_trial": 1, "gpus_per_trial": 0},
}


def with_changes(**sections) -> dict:
    raw = copy.deepcopy(BASE)
    for section, changes in sections.items():
        if section == "top":
            raw.update(changes)
            continue
        for key, value in changes.items():
            if value is DROP:
                raw[section].pop(key, None)
            else:
                raw[section][key] = value
    return raw


DROP = object()


def test_issue_example_spec_loads_with_its_values():
    spec = parse_spec(BASE)
    assert spec.name == "quick"
    assert spec.grid.L == (4, 8, 16, 32) and spec.grid.M == (1, 4, 16) and spec.grid.seeds == 3
    assert spec.reference.kind == "mean_ode" and spec.coupled_embeddings is False
    assert spec.resources.gpus_per_trial == 0.0 and spec.grid_points() == 12


# Each case: the bad input, then text the one-line message must contain (the key and the problem).
SPEC_ERRORS = {
    "unknown_top_key": (with_changes(top={"colour": "red"}), "colour: unknown key"),
    "unknown_section_key": (with_changes(train={"stepz": 5}), "[train] stepz: unknown key"),
    "unknown_grid_axis": (with_changes(grid={"K": [1, 2]}), "[grid] K: unknown key"),
    "divergence_factor_not_growth": (with_changes(train={"divergence_factor": 0.5}),
                                     "[train] divergence_factor: divergence_factor must be > 1"),
    "chaos_check_not_boolean": (with_changes(train={"chaos_check": "yes"}), "[train] chaos_check: expected true or false"),
    "depth_mup_has_no_mean_ode": (with_changes(model={"preset": "depth_mup"}),
                                  "[model] preset: preset 'depth_mup' has no Mean ODE limit"),
    "standard_has_no_mean_ode": (with_changes(model={"preset": "standard"}),
                                 "[model] preset: preset 'standard' has no depth limit"),
    "raw_has_no_mean_ode": (with_changes(train={"lr_scaling": "raw"}), "[train] lr_scaling: lr_scaling 'raw'"),
    "swept_standard_has_no_mean_ode": (with_changes(model={"preset": DROP}, grid={"preset": ["mlu", "standard"]}),
                                       "[grid] preset: preset 'standard' has no depth limit"),
    "swept_raw_has_no_mean_ode": (with_changes(grid={"lr_scaling": ["mean_field", "raw"]}),
                                  "[grid] lr_scaling: lr_scaling 'raw'"),
    "raw_has_no_joint_limit": (
        with_changes(model={"activation": "identity"}, train={"lr_scaling": "raw"},
                     reference={"kind": "joint_limit", "depth": DROP, "width": DROP, "replicas": DROP}),
        "[train] lr_scaling: reference kind joint_limit is the limit of the mean-field step"),
    "bad_lr_scaling": (with_changes(train={"lr_scaling": "sgd"}), '[train] lr_scaling: expected one of "mean_field", "raw"'),
    "missing_name": (with_changes(top={"name": None}), "name: missing"),
    "bad_name": (with_changes(top={"name": "a/b"}), "name: expected 1-128 letters"),
    "dotdot_name": (with_changes(top={"name": "a..b"}), "name: expected 1-128 letters"),
    "missing_grid_axis": (with_changes(grid={"D": DROP}), "[grid] D: missing"),
    "section_not_table": (with_changes(top={"train": 5}), "[train]: expected a table"),
    "negative_depth": (with_changes(grid={"L": [4, -1]}), "[grid] L: expected a list of positive integers, got [4, -1]"),
    "zero_width": (with_changes(grid={"M": [0]}), "[grid] M: expected a list of positive integers"),
    "float_in_int_axis": (with_changes(grid={"D": [8.5]}), "[grid] D: expected a list of positive integers"),
    "empty_axis": (with_changes(grid={"L": []}), "[grid] L: expected a non-empty list"),
    "axis_not_list": (with_changes(grid={"L": 4}), "[grid] L: expected a non-empty list of positive integers, got 4"),
    "duplicate_axis_value": (with_changes(grid={"L": [4, 4]}), "[grid] L: value 4 is listed twice"),
    "negative_alpha": (with_changes(grid={"alpha": [1.0, -2.0]}), "[grid] alpha: expected a list of positive numbers"),
    "zero_seeds": (with_changes(grid={"seeds": 0}), "[grid] seeds: expected a positive integer, got 0"),
    "bool_seeds": (with_changes(grid={"seeds": True}), "[grid] seeds: expected a positive integer, got true"),
    "string_steps": (with_changes(train={"steps": "10"}), '[train] steps: expected a positive integer, got "10"'),
    "zero_steps": (with_changes(train={"steps": 0}), "[train] steps: expected a positive integer, got 0"),
    "zero_lr": (with_changes(train={"lr": 0}), "[train] lr: expected a positive number, got 0"),
    "bad_dtype": (with_changes(train={"dtype": "float16"}), '[train] dtype: expected one of "float32", "float64"'),
    "bad_device": (with_changes(train={"device": "tpu"}), "[train] device: expected one of"),
    "bad_activation": (with_changes(model={"activation": "sigmoid"}), '[model] activation: expected one of "tanh"'),
    "bad_preset": (with_changes(model={"preset": "ntk"}), "[model] preset: expected one of"),
    "antithetic_not_bool": (with_changes(model={"antithetic": 1}), "[model] antithetic: expected true or false, got 1"),
    "antithetic_odd_M": (with_changes(model={"antithetic": True}), "[grid] M: antithetic units come in pairs"),
    "antithetic_one_odd_M": (
        with_changes(model={"antithetic": True}, grid={"M": [2, 3]}), "[grid] M: antithetic units come in pairs: M must be even, got M=3"),
    "lazy_with_alpha_one": (with_changes(model={"preset": "lazy"}), "[grid] alpha: preset 'lazy' needs alpha > 1"),
    "lazy_with_one_small_alpha": (
        with_changes(model={"preset": "lazy"}, grid={"alpha": [8.0, 1.0]}), "[grid] alpha: preset 'lazy' needs alpha > 1"),
    "name_with_newline": (with_changes(top={"name": "q\n"}), 'name: expected 1-128 letters, digits, \'_\', \'-\' or \'.\', starting with a letter or digit, no \'..\' (it names a folder in the store), got "q\\n"'),
    "zero_samples": (with_changes(problem={"samples": 0}), "[problem] samples: expected a positive integer, got 0"),
    "negative_problem_seed": (with_changes(problem={"seed": -1}), "[problem] seed: expected a non-negative integer"),
    "problem_seeds_and_seed_both": (
        with_changes(grid={"problem_seeds": [1, 2]}), "[grid] problem_seeds: also set as [problem] seed; keep one"),
    "negative_problem_seeds": (
        with_changes(problem={"seed": DROP}, grid={"problem_seeds": [1, -2]}),
        "[grid] problem_seeds: expected a list of non-negative integers"),
    "bad_reference_kind": (with_changes(reference={"kind": "exact"}), '[reference] kind: expected one of "mean_ode", "largest"'),
    "odd_reference_width": (with_changes(reference={"width": 511}), "[reference] width: reference.width must be even (antithetic pairs), got 511"),
    "odd_reference_depth": (with_changes(reference={"depth": 1023}), "[reference] depth: reference.depth must be even"),
    "one_replica": (with_changes(reference={"replicas": 1}), "[reference] replicas: reference.replicas must be at least 2"),
    "zero_reference_depth": (with_changes(reference={"depth": 0}), "[reference] depth: expected a positive integer"),
    "largest_with_resolution": (
        with_changes(reference={"kind": "largest", "width": DROP, "replicas": DROP}),
        '[reference] depth: not used with kind = "largest"'),
    "largest_uncoupled_over_D": (
        with_changes(reference={"kind": "largest", "depth": DROP, "width": DROP, "replicas": DROP},
                     problem={"coupled_embeddings": False}, grid={"D": [4, 8]}),
        "[problem] coupled_embeddings: kind = \"largest\" over several D"),
    "axis_and_scalar_both": (
        with_changes(model={"sigma_u": 2.0}, grid={"sigma_u": [1.0, 2.0]}), "[grid] sigma_u: also set as [model] sigma_u"),
    "zero_cpus": (with_changes(resources={"cpus_per_trial": 0}), "[resources] cpus_per_trial: expected a positive number"),
    "negative_gpus": (with_changes(resources={"gpus_per_trial": -0.5}), "[resources] gpus_per_trial: expected a non-negative number"),
    "fractional_gpus_above_one": (
        with_changes(resources={"gpus_per_trial": 1.5}), "[resources] gpus_per_trial: a fraction must be below 1"),
    "gpus_with_cpu_device": (
        with_changes(resources={"gpus_per_trial": 0.25}, train={"device": "cpu"}), '[resources] gpus_per_trial: 0.25 GPU per trial but [train] device = "cpu"'),
    "cuda_without_gpus": (with_changes(train={"device": "cuda"}), '[train] device: "cuda" needs [resources] gpus_per_trial > 0'),
    "zero_max_concurrent": (with_changes(resources={"max_concurrent": 0}), "[resources] max_concurrent: expected a positive integer"),
    "negative_retries": (with_changes(resources={"retries": -1}), "[resources] retries: expected a non-negative integer"),
    "bad_points_per_trial": (with_changes(resources={"points_per_trial": "many"}), '[resources] points_per_trial: expected "auto" or a positive integer'),
}


@pytest.mark.parametrize("case", sorted(SPEC_ERRORS))
def test_spec_error_names_key_and_problem_in_one_line(case):
    raw, expected = SPEC_ERRORS[case]
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(SpecError) as info:
        parse_spec(raw)
    message = str(info.value)
    assert message.startswith("spec error: ")
    assert expected in message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_spec_file_errors(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "absent.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\n[grid\nL = [4]\n")
    with pytest.raises(SpecError, match="invalid TOML"):
        load_spec(bad)


def test_overrides_replace_values_and_are_validated(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n[grid]\nL = [4]\nM = [1]\nD = [8]\n')
    spec = load_spec(path, ["grid.L=[4, 8]", "--train.steps=5", "model.activation=relu", "name=other"])
    assert spec.grid.L == (4, 8) and spec.train.steps == 5 and spec.model.activation == "relu"
    assert spec.name == "other"
    with pytest.raises(SpecError, match=r"\[train\] steps: expected a positive integer, got -5"):
        load_spec(path, ["train.steps=-5"])
    with pytest.raises(SpecError, match="expected KEY=VALUE"):
        load_spec(path, ["train.steps"])
    with pytest.raises(SpecError, match="unknown key 'trian.steps'"):
        load_spec(path, ["trian.steps=5"])


def test_every_spec_key_is_documented_in_its_section_of_docs_sweeps():
    import dataclasses

    from explorer.config.spec import SECTIONS

    docs = (REPO_ROOT / "docs" / "sweeps.md").read_text()
    for section, cls in SECTIONS.items():
        start = docs.index(f"#### [{section}]")
        table = docs[start:docs.index("\n\n", docs.index("| key |", start))]
        for f in dataclasses.fields(cls):
            assert f"| `{f.name}` |" in table, f"[{section}] {f.name} is not in docs/sweeps.md"


@pytest.mark.parametrize("name", ["q\n", "quick", "a.b-c_1", "a..b", ".hidden", "-x", "a/b", "x" * 128, "x" * 129, "ünï", " q"])
def test_a_sweep_name_is_accepted_exactly_when_the_store_accepts_it(name):
    from store import InvalidNameError
    from store.layout import check_sweep

    try:
        check_sweep(name)
        store_accepts = True
    except InvalidNameError:
        store_accepts = False
    raw = with_changes(top={"name": name})
    if store_accepts:
        assert parse_spec(raw).name == name
    else:
        with pytest.raises(SpecError, match="spec error: name: expected 1-128") as info:
            parse_spec(raw)
        assert "\n" not in str(info.value)


def test_every_reference_kind_of_trials_is_a_valid_spec_value():
    for kind in REFERENCE_KINDS:
        # joint_limit is exact for identity activation only (trials/joint_limit.py)
        model = {"activation": "identity"} if kind == "joint_limit" else {}
        raw = with_changes(reference={"kind": kind, "depth": DROP, "width": DROP, "replicas": DROP}, model=model)
        assert {r.kind for r in plan(parse_spec(raw)).references} == {kind}


def test_the_trials_rules_judge_the_spec_with_the_key_named():
    # A rule only trials knows (ReferenceConfig's), reached through the spec: its message, the key.
    with pytest.raises(SpecError) as info:
        parse_spec(with_changes(reference={"width": 7}))
    assert str(info.value) == "spec error: [reference] width: reference.width must be even (antithetic pairs), got 7"
    # Every value of every axis is judged, not only the first point.
    with pytest.raises(SpecError, match=r"^spec error: \[grid\] alpha: preset 'lazy' needs alpha > 1"):
        parse_spec(with_changes(model={"preset": "lazy"}, grid={"alpha": [8.0, 16.0, 0.5]}))
    assert parse_spec(with_changes(model={"preset": "lazy"}, grid={"alpha": [8.0, 16.0]})).grid.alpha == (8.0, 16.0)


@pytest.mark.parametrize("field, key", [
    ("reference.width", "[reference] width"), ("problem.coupled_dim", "[problem] coupled_embeddings"),
    ("activation", "[model] activation"), ("seeds", "[grid] seeds"), ("L", "[grid] L"), ("lr", "[train] lr"),
])
def test_a_trials_refusal_names_the_key_of_its_field_whatever_its_message(monkeypatch, field, key):
    from explorer.config.reference_kinds import mean_ode as kind_module  # the kind that builds a ReferenceConfig

    def refuse(*args, **kwargs):
        raise ConfigError(field, "reworded: no field name in here")

    monkeypatch.setattr(kind_module, "ReferenceConfig", refuse)
    with pytest.raises(SpecError) as info:
        parse_spec(BASE)
    assert str(info.value) == f"spec error: {key}: reworded: no field name in here"


def test_a_refused_swept_setting_names_its_grid_axis():
    from explorer.config.spec_rules import key_of

    swept = parse_spec(with_changes(grid={"lr": [0.5, 1.0]}, train={"lr": DROP}))
    assert key_of(ConfigError("lr", "x"), swept) == "[grid] lr"
    assert key_of(ConfigError("lr", "x"), parse_spec(BASE)) == "[train] lr"
    draws = parse_spec(with_changes(problem={"seed": DROP}, grid={"problem_seeds": [1, 2]}))
    assert key_of(ConfigError("problem.seed", "x"), draws) == "[grid] problem_seeds"
    assert key_of(ConfigError("divergence_threshold", "x"), draws) is None  # not a spec key


def test_load_spec_takes_a_dict_or_a_spec_and_overrides_keep_defaults_as_defaults(tmp_path):
    minimal = {"name": "m", "grid": {"L": [4], "M": [1], "D": [8]}}
    spec = load_spec(minimal)
    assert load_spec(spec) is spec
    shorter = load_spec(spec, ["train.steps=5"])
    assert shorter.train.steps == 5 and shorter.problem == spec.problem
    # [problem] seed was a default, not a choice: sweeping the draws instead is not a conflict.
    assert load_spec(spec, ["grid.problem_seeds=[1, 2]"]).problem_seeds() == (1, 2)
    path = tmp_path / "m.toml"
    path.write_text('name = "m"\n[grid]\nL = [4]\nM = [1]\nD = [8]\n')
    assert load_spec(path) == spec


_LINEAR = {"model": {"activation": "identity"},
           "reference": {"kind": "joint_limit", "depth": DROP, "width": DROP, "replicas": DROP}}


@pytest.mark.parametrize("changes, message", [
    ({"problem": {"data": "uniform"}}, '[problem] data: expected one of "gaussian", "linear_target", "teacher"; got "uniform"'),
    ({"problem": {"data_seed": -1}}, "[problem] data_seed: expected a non-negative integer, got -1"),
    ({"problem": {"independent_embeddings": True, "coupled_embeddings": True}},
     "[problem] independent_embeddings: true needs coupled_embeddings = false"),
    ({"reference": {"grid": 64}}, '[reference] grid: not used with kind = "mean_ode"; remove it'),
    ({**_LINEAR, "reference": {**_LINEAR["reference"], "grid": 7}}, "[reference] grid: reference.grid must be an even integer"),
    ({**_LINEAR, "model": {"activation": "tanh"}}, "[model] activation: reference kind joint_limit is exact for activation 'identity' only"),
    ({**_LINEAR, "reference": {**_LINEAR["reference"], "depth": 64}}, '[reference] depth: not used with kind = "joint_limit"'),
])
def test_the_protocol_keys_are_validated_with_the_key_named(changes, message):
    with pytest.raises(SpecError) as info:
        parse_spec(with_changes(**changes))
    assert str(info.value).startswith(f"spec error: {message}"), str(info.value)


def test_the_protocol_keys_reach_the_problem_and_the_joint_limit_reference():
    spec = parse_spec(with_changes(problem={"data": "linear_target", "data_seed": 42, "samples": 1, "d_in": 3, "d_out": 3},
                                   **{k: v for k, v in _LINEAR.items()}))
    the_plan = plan(spec)
    assert {r.kind for r in the_plan.references} == {"joint_limit"} and len(the_plan.references) == 1
    assert the_plan.trials[0].config.problem.data_seed == 42
    uncoupled = parse_spec(with_changes(
        problem={"coupled_embeddings": False, "independent_embeddings": True},
        reference={"kind": "largest", "depth": DROP, "width": DROP, "replicas": DROP}, grid={"D": [4, 8]}))
    assert uncoupled.problem_config(1).independent_embeddings


def test_lr_scaling_and_the_standard_preset_reach_the_trials_against_the_largest_reference():
    largest = {"kind": "largest", "depth": DROP, "width": DROP, "replicas": DROP}
    spec = parse_spec(with_changes(model={"preset": "standard"}, train={"lr_scaling": "raw"}, reference=largest))
    configs = [t.config for t in plan(spec).trials]
    assert {(c.preset, c.lr_scaling) for c in configs} == {("standard", "raw")}
    default = plan(parse_spec(with_changes(reference=largest))).trials
    assert {t.config.lr_scaling for t in default} == {"mean_field"}
    # swept: each scaling its own trials and its own references
    swept = parse_spec(with_changes(grid={"lr_scaling": ["mean_field", "raw"], "preset": ["mlu", "standard"]},
                                    model={"preset": DROP}, reference=largest))
    planned = plan(swept)
    assert len(planned.trials) == 4 * spec.grid_points() and swept.grid_points() == 4 * spec.grid_points()
    by_reference = {r.ref_key: (r.config.preset, r.config.lr_scaling) for r in planned.references}
    assert set(by_reference.values()) == {(p, s) for p in ("mlu", "standard") for s in ("mean_field", "raw")}


def test_the_optimizer_is_a_train_key_and_a_grid_axis_and_a_combination_without_a_rule_is_refused():
    largest = {"kind": "largest", "depth": DROP, "width": DROP, "replicas": DROP}
    spec = parse_spec(with_changes(train={"betas": [0.8, 0.99], "weight_decay": 0.1}, reference=largest,
                                   problem={"data": "teacher", "test_samples": 16},
                                   grid={"optimizer": ["gd", "momentum", "adam"]}))
    point = spec.trial_config(spec.problem_config(1), {axis: values[-1] for axis, values in spec.axes().items()})
    assert spec.axes()["optimizer"] == ("gd", "momentum", "adam") and point.optimizer == "adam"
    assert point.betas == (0.8, 0.99) and point.weight_decay == 0.1 and point.problem.test_samples == 16
    with pytest.raises(SpecError, match=r"\[train\] optimizer: .*no mean_field rule"):
        parse_spec(with_changes(train={"optimizer": "adam"}, model={"preset": "standard"}, reference=largest))
    with pytest.raises(SpecError, match=r"\[grid\] optimizer: .*Mean ODE reference"):
        parse_spec(with_changes(grid={"optimizer": ["gd", "adam"]}))
    with pytest.raises(SpecError, match=r"\[problem\] test_samples: .*teacher"):
        parse_spec(with_changes(problem={"test_samples": 4}))
