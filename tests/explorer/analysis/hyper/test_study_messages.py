"""The words of a study (issue 45): a --where on an unknown column is one line naming --where, the
column and the column meant; an enum value out of its list names the allowed values and the one
meant; transfer calls the exponent of M delta (gamma that of L); the paired differences are each
group against one baseline unless --pairs says which; the command list cuts no summary."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from explorer.analysis.hyper import optima, planted_runs, transfer
from explorer.analysis.hyper.runs import axis_runs
from explorer.cli import main
from explorer.config.spec import parse_spec
from explorer.errors import FitError, SpecError
from store import Store

from tests.explorer.analysis_data import connect, law_rows, write_to_store
from tests.explorer.hyper_data import planted_metrics


def three_presets(across: str = "M") -> pd.DataFrame:
    rng = np.random.default_rng(8)
    frames = []
    for preset, drift in (("mlu", 0.0), ("completep", -0.5), ("standard", -1.0)):
        runs, _ = planted_runs(drift, Ls=(16, 64, 256), pivot=64.0, n_draws=3, rng=rng)
        runs.slices = runs.slices.rename(columns={"L": across})
        frame = planted_metrics(runs, sweep="xfer", extra={"preset": preset})
        frame["trial_key"] = frame["trial_key"] + f"-{preset}"
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def found():
    return optima(axis_runs(connect(three_presets()), "xfer", "lr"), n_boot=60)


@pytest.fixture(scope="module")
def small_root(tmp_path_factory):
    """Six trials over L and M: the columns are what a --where is checked against."""
    root = tmp_path_factory.mktemp("messages") / "results"
    write_to_store(law_rows(lambda L, M, D: 1 / L, Ls=(4, 8, 16), Ms=(4, 16), seeds=2, steps=2, sweep="xfer"),
                   Store(str(root)))
    return str(root)


@pytest.mark.parametrize("command", [["optimum"], ["transfer", "--across", "M"], ["fit"], ["coordcheck"],
                                     ["phase"], ["compare", "--by", "preset"], ["report", "--no-save"]])
def test_a_where_on_an_unknown_column_is_one_line_with_the_column_meant(small_root, command, tmp_path):
    args = command + ["--sweep", "xfer", "--store", small_root, "--where", "width = 64"]
    result = CliRunner().invoke(main, args + (["--out", str(tmp_path / "r")] if command[0] == "report" else []))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: --where 'width = 64': the rows have no column 'width'; did you mean 'M'?")
    assert "Binder" not in lines[0]
    assert not (tmp_path / "r").exists()


def test_an_enum_value_out_of_its_list_names_the_allowed_values_and_the_one_meant():
    grid = {"L": [4], "M": [4], "D": [4], "lr_scaling": ["meanfield"]}
    with pytest.raises(SpecError) as info:
        parse_spec({"name": "s", "reference": {"kind": "largest"}, "grid": grid})
    line, = str(info.value).splitlines()
    assert line.startswith("spec error: [grid] lr_scaling: ")
    assert "did you mean 'mean_field'" in line and '"mean_field", "raw"' in line
    with pytest.raises(SpecError) as info:
        parse_spec({"name": "s", "train": {"lr_scaling": "meanfield"}, "grid": {"L": [4], "M": [4], "D": [4]}})
    assert "did you mean 'mean_field'" in str(info.value) and '"mean_field", "raw"' in str(info.value)


def test_the_exponent_of_m_is_delta_and_that_of_l_gamma(found):
    law = transfer(found, ("M",))
    assert law.fits[0].parameters == ("c", "delta")
    text = "\n".join(law.lines())
    assert "log lr* = c + delta log M" in text and "gamma" not in text
    assert {r["parameter"] for r in law.store_rows()} == {"c", "delta"}
    assert set(law.differences["parameter"]) == {"delta"}
    by_l = optima(axis_runs(connect(three_presets("L")), "xfer", "lr"), n_boot=20)
    assert transfer(by_l, ("L",)).fits[0].parameters == ("c", "gamma")


def test_each_group_is_paired_with_the_first_unless_pairs_says_which(found):
    law = transfer(found, ("M",))
    fits = {f.values["preset"]: f for f in law.fits}
    baseline = law.fits[0].label
    assert len(law.fits) == 3 and len(law.differences) == 2 and set(law.differences["a"]) == {baseline}
    for _, row in law.differences.iterrows():  # B - A, from the two groups' own fits
        b = next(f for f in law.fits if f.label == row["b"])
        assert row["difference"] == pytest.approx(b.estimate[1] - law.fits[0].estimate[1])
    chosen = transfer(found, ("M",), pairs=["standard:mlu"]).differences
    assert list(zip(chosen["a"], chosen["b"])) == [(fits["standard"].label, fits["mlu"].label)]
    assert chosen["difference"].iloc[0] == pytest.approx(fits["mlu"].estimate[1] - fits["standard"].estimate[1])
    assert len(transfer(found, ("M",), pairs="all").differences) == 3
    with pytest.raises(FitError, match=r"--pairs standrd:mlu: .*did you mean 'standard'"):
        transfer(found, ("M",), pairs=["standrd:mlu"])
    with pytest.raises(FitError, match="write a pair as A:B"):
        transfer(found, ("M",), pairs=["mlu"])


@pytest.mark.slow
def test_pairs_on_the_command_line(tmp_path):
    root = str(tmp_path / "results")
    write_to_store(three_presets(), Store(root))
    result = CliRunner().invoke(main, ["transfer", "--sweep", "xfer", "--store", root, "--across", "M",
                                       "--pairs", "preset=completep:standard", "--bootstrap", "20", "--no-save"])
    assert result.exit_code == 0, result.output
    pairs = [line for line in result.output.splitlines() if "paired difference" in line]
    assert pairs == [line for line in pairs if "(preset=standard) - (preset=completep)" in line] and len(pairs) == 1


@pytest.mark.parametrize("width", [80, 100, 120])
def test_no_command_summary_is_cut_at_any_width(width):
    listing = CliRunner().invoke(main, ["--help"], terminal_width=width).output.split("Commands:\n", 1)[1]
    shown = {line.split()[0]: line.split(None, 1)[1] for line in listing.splitlines() if line.strip()}
    assert sorted(shown) == sorted(main.commands)
    for name, summary in shown.items():
        assert summary == main.commands[name].get_short_help_str(limit=10**6) and not summary.endswith("..."), name
    assert shown["transfer"] == "Whether an axis's optimum transfers across L and M."
