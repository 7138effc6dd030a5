"""benchmarks/hostile_probe.py's input campaign judges real `explorer` subprocesses by its rule:
refusals of hostile inputs pass it, and a traceback, a multi-line error, a raw control character,
a printed secret or a changed store are each reported as a violation."""
from __future__ import annotations

import sys

import pytest

from tests.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

import input_campaign  # noqa: E402
from probe_tools import Budget, Outcome  # noqa: E402

pytestmark = pytest.mark.slow


def test_hostile_inputs_given_to_the_real_cli_are_refused_in_one_line_and_judged_by_the_rule(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    chosen = [
        input_campaign.Case("overrides", "train.lr=nan", ["sweep", "{spec}", "--dry-run", "--store", "{store}",
                                                          "train.lr=nan"], expect="refused"),
        input_campaign.Case("names", "../x", ["rm", "--sweep", "../x", "--store", "{store}", "--yes"],
                            expect="refused"),
        input_campaign.Case("sql", "DROP TABLE metrics", ["sql", "DROP TABLE metrics", "--store", "{store}"],
                            expect="refused"),
    ]
    campaign = input_campaign.InputCampaign(tmp_path / "work", base, Budget(300))
    campaign.run(chosen)

    assert [outcome.rc for _, outcome in campaign.results] == [2, 2, 2]
    assert campaign.violations == [], campaign.violation_lines()
    assert "| all | 3 | 0 | 0 | 3 | 0 | 0 |" in campaign.summary()

    case = chosen[0]
    broken = Outcome(1, "", f"Traceback (most recent call last):\n  boom\x1b]0;x\x07 {input_campaign.SECRET}\n", 1.0)
    found = input_campaign.violations_of(case, broken, "before", "after", tmp_path)
    assert found == ["traceback", "error in 2 lines", "raw U+0007, U+001B", "printed the URL's secret",
                     "changed the store"]
    late = Outcome(None, "", "", 60.0)
    assert input_campaign.violations_of(case, late, "same", "same", tmp_path)[0].startswith("still running")
