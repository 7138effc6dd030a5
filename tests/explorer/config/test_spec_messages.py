"""What a refused spec prints: every mistake on its own line (a near miss with "did you mean"),
values that are cut to a readable length with no control or bidi character echoed raw, and the
resource counts that Ray would refuse once the sweep had started."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from explorer.config.spec import load_spec, parse_spec
from explorer.errors import SpecError

EXPLORER = [sys.executable, "-m", "explorer.cli"]
GRID = {"L": [4], "M": [1], "D": [8]}
TWO_MISTAKES = 'name = "s"\n[train]\nlearning_rate = 0.5\n[grid]\nL = [4]\nM = [1]\nD = [8]\nsedes = 3\n'


def explorer(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*EXPLORER, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def refusal(raw: dict, overrides=()) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(raw, overrides)
    lines = str(info.value).splitlines()
    assert lines and all(line.startswith("spec error: ") for line in lines), lines
    return lines


def test_a_spec_with_two_mistakes_gets_two_lines_and_exit_2(tmp_path):
    (tmp_path / "two.toml").write_text(TWO_MISTAKES)
    done = explorer("sweep", "two.toml", "--dry-run", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith("error: spec error: [train] learning_rate: unknown key; expected one of: steps, lr,")
    assert lines[1].startswith("error: spec error: [grid] sedes: unknown key; did you mean 'seeds'? expected one of:")
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_overrides_on_the_command_line_are_reported_with_the_files_mistakes(tmp_path):
    (tmp_path / "two.toml").write_text(TWO_MISTAKES)
    done = explorer("sweep", "two.toml", "--dry-run", "gird.L=[4]", "grid.L=[4, -1]", "model.activaton=relu",
                    "train.steps", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "error: spec error: override 'gird.L=[4]': unknown key 'gird.L' (did you mean 'grid.L'?); expected name or "
        "SECTION.KEY with SECTION one of problem, model, train, reference, grid, resources, adaptive",
        "error: spec error: override 'train.steps': expected KEY=VALUE, e.g. train.steps=5 or grid.L=[4,8], or "
        "SECTION.KEY= to remove a key",
        "error: spec error: [model] activaton: unknown key; did you mean 'activation'? expected one of: activation, "
        "preset, block, sigma_u, sigma_v, antithetic",
        "error: spec error: [train] learning_rate: unknown key; expected one of: steps, lr, lr_scaling, optimizer, momentum, betas, eps, weight_decay, dtype, device, "
        "divergence_factor, divergence_bound, init_noise_limit, chaos_check",
        "error: spec error: [grid] sedes: unknown key; did you mean 'seeds'? expected one of: L, M, D, alpha, sigma_u, "
        "sigma_v, lr, preset, activation, lr_scaling, optimizer, problem_seeds, seeds, cases",
        "error: spec error: [grid] L: expected a list of positive integers, got [4, -1]",
    ]


def test_every_key_and_value_mistake_of_every_section_is_reported():
    lines = refusal({"name": "s", "colour": 1, "problem": {"samples": 0, "d_in": "5"},
                     "train": {"dtype": "float61"}, "grid": {"L": [4], "M": [1]}})
    assert lines == [
        "spec error: colour: unknown key; expected name or one of the tables [problem], [model], [train], "
        "[reference], [grid], [resources], [adaptive]",
        "spec error: [problem] d_in: expected a positive integer, got \"5\"",
        "spec error: [problem] samples: expected a positive integer, got 0",
        "spec error: [train] dtype: expected one of \"float32\", \"float64\"; got \"float61\" (did you mean 'float64'?)",
        "spec error: [grid] D: missing; embedding dimensions are required",
    ]


def test_the_rules_across_keys_are_all_reported_once_the_values_hold():
    lines = refusal({"name": "s", "reference": {"kind": "largest", "depth": 8, "width": 4},
                     "train": {"device": "cuda"}, "grid": GRID})
    assert lines == ['spec error: [reference] depth: not used with kind = "largest"; remove it',
                     'spec error: [reference] width: not used with kind = "largest"; remove it',
                     'spec error: [train] device: "cuda" needs [resources] gpus_per_trial > 0 (a trial sees only the '
                     'GPUs it holds)']
    # the trials package's rules: one line per swept axis that breaks one
    lines = refusal({"name": "s", "model": {"antithetic": True, "preset": "lazy"},
                     "grid": {"L": [4], "M": [2, 3], "D": [8], "alpha": [2.0, 1.0]}})
    assert [line.split(":")[1] for line in lines] == [" [grid] M", " [grid] alpha"], lines


def test_a_spec_with_thousands_of_mistakes_reports_the_first_twenty_and_a_count():
    lines = refusal({"name": "s", "grid": {**GRID, **{f"x{i}": 1 for i in range(5000)}}})
    assert len(lines) == 21 and lines[0].startswith("spec error: [grid] x0: unknown key;")
    assert lines[-1] == "spec error: ... and 4,980 more mistakes (fix these first)"


BIDI = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: reorders the rest of the terminal line


@pytest.mark.parametrize("raw, overrides", [
    ({"name": f"evil{BIDI}txt.exe", "grid": GRID}, ()),
    ({"name": "s", "model": {"activation": f"tanh{BIDI}\x1b]0;title\x07"}, "grid": GRID}, ()),
    ({"name": "s", "grid": {**GRID, f"L{BIDI}": [4]}}, ()),
    ({"name": "s", "grid": GRID}, (f"train.steps{BIDI}=5",)),
    ({"name": "s", "grid": GRID}, (f"trian.steps=\u2066{BIDI}",)),
], ids=["name", "value", "key", "override-key", "override-item"])
def test_no_control_or_bidi_character_is_echoed_raw(raw, overrides):
    message = "\n".join(refusal(raw, overrides))
    assert all(ch.isprintable() for ch in message if ch != "\n"), repr(message)
    assert BIDI not in message and "\x1b" not in message and "\x07" not in message
    assert "\\u202e" in message


@pytest.mark.parametrize("raw, overrides, key", [
    ({"name": "x" * 900_000, "grid": GRID}, (), "name"),
    ({"name": "s", "model": {"activation": "y" * 900_000}, "grid": GRID}, (), "[model] activation"),
    ({"name": "s", "grid": {**GRID, "z" * 900_000: 1}}, (), "[grid] \"zzz"),
    ({"name": "s", "grid": {**GRID, "M": list(range(-90_000, 0))}}, (), "[grid] M"),
    ({"name": "s", "grid": GRID}, ("w" * 900_000,), "override 'www"),
    ({"name": "s", "grid": GRID}, ("train.steps=" + "[" * 40 + "]" * 40,), "override value"),
], ids=["name", "value", "key", "list", "override", "nested-override"])
def test_an_enormous_value_is_echoed_cut_to_a_readable_length(raw, overrides, key):
    lines = refusal(raw, overrides)
    assert len(lines) == 1 and len(lines[0]) < 600, len(lines[0])
    assert lines[0].startswith(f"spec error: {key}")


def test_the_cli_escapes_a_bidi_value_and_cuts_a_huge_one(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n[grid]\nL = [4]\nM = [1]\nD = [8]\n', encoding="utf-8")
    done = explorer("sweep", str(spec), "--dry-run", f"model.activation=relu{BIDI}", "name=" + "n" * 100_000,
                    cwd=tmp_path)
    assert done.returncode == 2 and BIDI not in done.stderr and len(done.stderr) < 1000, done.stderr[:2000]
    assert 'got "relu\\u202e" (did you mean \'relu\'?)' in done.stderr


@pytest.mark.parametrize("value, ok", [
    (0.00001, False), (0.00015, False), (1e-300, False), (1.00005, False),
    (0.0001, True), (0.25, True), (1, True), (1.5, True), (3, True),
])
def test_cpus_per_trial_follows_rays_resource_precision(value, ok):
    raw = {"name": "s", "grid": GRID, "resources": {"cpus_per_trial": value}}
    if ok:
        assert parse_spec(raw).resources.cpus_per_trial == value
        return
    assert refusal(raw) == [f"spec error: [resources] cpus_per_trial: Ray counts a CPU in steps of 0.0001, and refuses "
                            f"or rounds anything finer; give a multiple of 0.0001 (at least 0.0001), got {value:g}"]


def test_gpus_per_trial_follows_rays_precision_and_whole_gpus_above_one():
    raw = {"name": "s", "grid": GRID, "resources": {"gpus_per_trial": 0.00001}}
    assert refusal(raw)[0].startswith("spec error: [resources] gpus_per_trial: Ray counts a GPU in steps of 0.0001")
    raw["resources"]["gpus_per_trial"] = 2.5
    assert refusal(raw)[0].startswith("spec error: [resources] gpus_per_trial: a fraction must be below 1")
    raw["resources"]["gpus_per_trial"] = 0.125
    assert parse_spec(raw).resources.gpus_per_trial == 0.125


def test_the_resource_rule_is_rays_own():
    """The rule's unit is Ray's: a quantity Ray refuses is refused here, and one it takes is taken."""
    ray_options = pytest.importorskip("ray._common.ray_option_utils")
    for value in (0.00001, 0.00009, 0.0001, 0.5, 2.0):
        ray_refuses = ray_options._validate_resource_quantity("num_cpus", value) is not None
        with_spec = {"name": "s", "grid": GRID, "resources": {"cpus_per_trial": value}}
        if ray_refuses:
            with pytest.raises(SpecError):
                parse_spec(with_spec)
        else:
            parse_spec(with_spec)


def test_the_dry_run_refuses_a_cpu_count_ray_would_refuse(tmp_path):
    (tmp_path / "s.toml").write_text('name = "s"\n[grid]\nL = [4]\nM = [1]\nD = [8]\n')
    done = explorer("sweep", "s.toml", "--dry-run", "resources.cpus_per_trial=0.00001", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("error: spec error: [resources] cpus_per_trial: Ray counts"), \
        done.stderr
    assert done.stderr.count("\n") == 1


def test_a_valid_spec_still_loads(tmp_path):
    assert load_spec({"name": "s", "grid": GRID}).grid.L == (4,)
