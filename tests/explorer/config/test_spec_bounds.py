"""Bounded inputs: a grid beyond [resources] max_points and a spec file above 1 MiB are refused
with one line, before anything is expanded (10^6 points took 79 s and 884 MB to plan; a 10 MB
spec with 1.4 M values of L ran for 200 s)."""
from __future__ import annotations

import pytest

from explorer.errors import SpecError
from explorer.config.spec import MAX_POINTS, MAX_SPEC_BYTES, load_spec


def _raw(**grid):
    return {"name": "big", "grid": {"L": [4], "M": [1], "D": [8], **grid}}


def test_a_grid_of_a_million_points_is_refused_before_it_is_expanded():
    raw = _raw(L=list(range(1, 1001)), M=list(range(1, 1001)))
    with pytest.raises(SpecError) as caught:
        load_spec(raw)
    message = str(caught.value)
    assert message.startswith("spec error: [grid]: 1,000,000 grid points (L 1000 x M 1000 x D 1) exceed the limit of 100,000")
    assert "[resources] max_points" in message and "\n" not in message


def test_problem_draws_count_as_points_and_the_limit_is_a_spec_key():
    raw = _raw(L=list(range(1, 101)), M=list(range(1, 101)), problem_seeds=list(range(11)))
    with pytest.raises(SpecError, match="110,000 grid points"):
        load_spec(raw)
    spec = load_spec(_raw(L=list(range(1, 101)), M=list(range(1, 11))), ["resources.max_points=1000"])
    assert spec.grid_points() == 1000 and spec.resources.max_points == 1000
    with pytest.raises(SpecError, match="1,001 grid points .* exceed the limit of 1,000"):
        load_spec(_raw(L=list(range(1, 78)), M=list(range(1, 14))), ["resources.max_points=1000"])
    with pytest.raises(SpecError, match=r"^spec error: \[resources\] max_points: expected a positive integer"):
        load_spec(_raw(), ["resources.max_points=0"])
    assert MAX_POINTS == 100_000 and load_spec(_raw()).resources.max_points == MAX_POINTS


def test_a_long_axis_is_checked_in_linear_time():
    # 10^5 distinct values: the old duplicate check compared each with all before it (minutes)
    spec = load_spec(_raw(L=list(range(1, 100_001))))
    assert spec.grid_points() == 100_000
    with pytest.raises(SpecError, match="value 7 is listed twice in the list"):
        load_spec(_raw(L=[*range(1, 50), 7]))


def test_a_spec_file_above_one_mebibyte_is_refused_unread(tmp_path):
    path = tmp_path / "huge.toml"
    path.write_text('name = "big"\n[grid]\nM = [1]\nD = [8]\nL = [' + ", ".join(["4"] * 400_000) + "]\n")
    assert path.stat().st_size > MAX_SPEC_BYTES == 1 << 20
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value) == f"spec error: {path}: the file is larger than 1,048,576 bytes (1 MiB); a spec is a few KiB"


def test_the_cli_refuses_a_big_grid_with_one_line(tmp_path):
    from click.testing import CliRunner

    from explorer.cli import main

    path = tmp_path / "big.toml"
    path.write_text('name = "big"\n[grid]\nL = [' + ", ".join(map(str, range(1, 1001))) + "]\nM = ["
                    + ", ".join(map(str, range(1, 1001))) + "]\nD = [8]\n")
    result = CliRunner().invoke(main, ["sweep", str(path), "--store", str(tmp_path / "store")])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "1,000,000 grid points" in result.output
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("section, key, value, named", [
    ("grid", "alpha", "[1.0, 1e300]", "[grid] alpha"),
    ("train", "lr", "1e39", "[train] lr"),
    ("model", "sigma_u", "1e39", "[model] sigma_u"),
    ("train", "divergence_bound", "1e300", "[train] divergence_bound"),
    ("grid", "alpha", "[1e-300]", "[train] dtype"),  # its step size lr / (c L M) = 1e300
])
def test_a_float32_value_past_float32s_range_is_refused_up_front_with_one_line(tmp_path, section, key, value, named):
    import numpy as np
    import torch
    from click.testing import CliRunner

    from explorer.cli import main

    # independently: torch refuses a float32 scalar past numpy's float32 max, at the first step of a trial
    assert float(np.finfo(np.float32).max) < 1e39
    with pytest.raises(RuntimeError, match="overflow"):
        torch.zeros(2, dtype=torch.float32).add_(torch.ones(2, dtype=torch.float32), alpha=1e39)
    sections = {"train": {"steps": "2", "dtype": '"float32"', "device": '"cpu"'}, "model": {},
                "grid": {"L": "[4]", "M": "[2]", "D": "[8]", "alpha": "[1.0]"}}
    sections[section][key] = value
    path = tmp_path / "f32.toml"
    path.write_text('name = "f32"\n' + "".join(f"[{name}]\n" + "".join(f"{k} = {v}\n" for k, v in body.items())
                                           for name, body in sections.items()))
    result = CliRunner().invoke(main, ["sweep", str(path), "--store", str(tmp_path / "store")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: spec error: {named}: ") and "overflows float32" in lines[0]
    assert "again" not in lines[0] and not (tmp_path / "store").exists()
    # float64 holds the same values: not refused by this rule
    path.write_text(path.read_text().replace('"float32"', '"float64"'))
    assert "overflows" not in CliRunner().invoke(main, ["sweep", str(path), "--dry-run", "--store",
                                                        str(tmp_path / "store")]).output


def test_a_float32_value_just_inside_its_range_is_kept():
    from trials import ProblemConfig, TrialConfig

    config = TrialConfig(L=1, M=1, D=2, problem=ProblemConfig(d_in=1, d_out=1, samples=2), dtype="float32",
                         alpha=3.4e38, lr=1e-30, device="cpu")
    assert config.alpha == 3.4e38
