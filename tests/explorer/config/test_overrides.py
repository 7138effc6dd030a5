"""Command-line overrides that remove a key: ``SECTION.KEY=`` (nothing after ``=``) or
``~SECTION.KEY``; the key takes its default, or leaves room for the [grid] list that replaces it."""
from __future__ import annotations


import pytest
from click.testing import CliRunner

from explorer.cli import main
from explorer.errors import SpecError
from explorer.config.planning import plan
from explorer.config.spec import load_spec

from tests.paths import REPO_ROOT

QUICK = REPO_ROOT / "examples" / "quick.toml"


@pytest.mark.parametrize("removal", ["problem.seed=", "~problem.seed", "--problem.seed=", "problem.seed= "])
def test_removing_problem_seed_lets_problem_seeds_sweep_the_draws(removal):
    spec = load_spec(QUICK, [removal, "grid.problem_seeds=[1,2]"])
    assert spec.problem_seeds() == (1, 2) and "problem.seed" not in spec.given
    p = plan(spec)
    assert {t.config.problem.seed for t in p.trials} == {1, 2} and len(p.references) == 2
    # the draw the file had (seed 1) keeps its keys: the same trials as the file alone
    alone = {t.trial_key for t in plan(load_spec(QUICK)).trials}
    assert alone <= {t.trial_key for t in p.trials}


def test_without_the_removal_the_refusal_says_how_to_remove_it():
    with pytest.raises(SpecError) as info:
        load_spec(QUICK, ["grid.problem_seeds=[1,2]"])
    assert str(info.value) == ("spec error: [grid] problem_seeds: also set as [problem] seed; keep one (the grid list "
                               "sweeps it; on the command line, problem.seed= removes the file's)")


def test_a_removed_key_takes_its_default():
    spec = load_spec(QUICK, ["train.lr=", "~reference.width"])
    assert spec.train.lr == 1.0 and spec.reference.width == 512
    assert "train.lr" not in spec.given and "reference.width" not in spec.given
    assert load_spec(QUICK, ["model.antithetic="]) == load_spec(QUICK)  # not set in the file: nothing to remove
    # a required key removed is missing, as in a file without it
    with pytest.raises(SpecError, match=r"\[grid\] L: missing"):
        load_spec(QUICK, ["grid.L="])


@pytest.mark.parametrize("bad, message", [
    ("~problem.sed", "spec error: override '~problem.sed': unknown key; did you mean 'seed'? expected one of: d_in, d_out, samples, seed,"),
    ("~nosuch.key", "spec error: override '~nosuch.key': expected SECTION.KEY= or ~SECTION.KEY"),
    ("~name", "spec error: override '~name': expected SECTION.KEY= or ~SECTION.KEY"),
    ("grid=", "spec error: override 'grid=': expected SECTION.KEY= or ~SECTION.KEY"),
])
def test_a_removal_of_an_unknown_key_is_one_line(bad, message):
    with pytest.raises(SpecError) as info:
        load_spec(QUICK, [bad])
    assert str(info.value).startswith(message), str(info.value)


def test_the_cli_takes_the_removal(tmp_path):
    done = CliRunner().invoke(main, ["sweep", str(QUICK), "problem.seed=", "grid.problem_seeds=[1,2]", "--dry-run"])
    assert done.exit_code == 0, done.output
    assert done.output.startswith("sweep quick: 24 trials (L 4 x M 3 x D 1 x problem_seeds 2;")
