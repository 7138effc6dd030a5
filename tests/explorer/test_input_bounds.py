"""Every count and every integer of a spec is bounded before anything is built (issue 25, items
4, 6, 10): seeds, replicas, resamples, points per trial and round, int64 columns, nesting depth,
the EXPLORER_* variables, bootstrap resamples, and laws that are undefined on the grid."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from explorer.bounds import INT64_MAX, MAX_NESTING, MAX_REPLICAS, MAX_RESAMPLES, MAX_SEEDS, toml_nesting
from explorer.config.env_settings import SettingError, check_environment, setting
from explorer.errors import FitError, SpecError
from explorer.config.spec import load_spec

TINY = {"name": "b", "grid": {"L": [2, 4], "M": [1, 2], "D": [4]}}
HUGE_SEED = "99999999999999999999999"


@pytest.mark.parametrize("override, message", [
    ("grid.seeds=1000000000", f"[grid] seeds: expected at most {MAX_SEEDS:,} seeds per grid point, got 1000000000"),
    ("reference.replicas=999999999", f"[reference] replicas: expected at most {MAX_REPLICAS:,} replicas"),
    (f"problem.seed={HUGE_SEED}", f"[problem] seed: expected an integer of at most 2^63 - 1 = {INT64_MAX}"),
    (f"grid.problem_seeds=[1, {HUGE_SEED}]", "[grid] problem_seeds: expected a list of non-negative integers"),
    ("adaptive.resamples=999999999999", f"[adaptive] resamples: expected an integer from 2 to {MAX_RESAMPLES:,}"),
    ("adaptive.batch=999999999999", "[adaptive] batch: expected at most 10,000,000 points per round"),
    ("resources.points_per_trial=99999999999", '[resources] points_per_trial: expected "auto" or a positive integer of at most'),
    ("resources.max_points=99999999999", "[resources] max_points: expected at most 10,000,000 points"),
])
def test_a_count_above_its_ceiling_is_one_spec_error(override, message):
    with pytest.raises(SpecError) as caught:
        load_spec(TINY, [override])
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_largest_int64_seed_is_accepted():
    assert load_spec(TINY, [f"problem.seed={INT64_MAX}"]).problem.seed == INT64_MAX


@pytest.mark.slow
@pytest.mark.parametrize("override", ["grid.seeds=1000000000", "reference.replicas=999999999", f"problem.seed={HUGE_SEED}"])
def test_the_dry_run_refuses_a_huge_count_under_a_4_gb_address_space(tmp_path, override):
    spec = tmp_path / "tiny.toml"
    spec.write_text('name = "tiny"\n[grid]\nL = [2, 4]\nM = [1, 2]\nD = [4]\n')
    script = f'ulimit -v 4000000; exec "{sys.executable}" -m explorer.cli sweep "{spec}" --dry-run "{override}"'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1 and done.stderr.startswith("error: spec error: ")


def test_a_spec_nested_ten_thousand_deep_is_one_line(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text('name = "x"\n[grid]\nL = ' + "[" * 10_000 + "]" * 10_000 + "\n")
    with pytest.raises(SpecError, match=f"nested more than {MAX_NESTING} deep"):
        load_spec(path)
    with pytest.raises(SpecError, match="nested more than"):
        load_spec(TINY, ["grid.L=" + "[" * 5_000 + "]" * 5_000])
    nested: list = []
    for _ in range(5_000):
        nested = [nested]
    with pytest.raises(SpecError, match="nested more than"):
        load_spec({"name": "x", "grid": {"L": nested}})


def test_nesting_ignores_brackets_in_strings_and_comments():
    assert toml_nesting('a = "[[[[" # [[[[\nb = [[1], [2]]\n[grid]\n') == 2
    assert toml_nesting("c = '''[[[\n'''\n") == 0


@pytest.mark.parametrize("name, value", [
    ("EXPLORER_TORCH_THREADS", "-1"), ("EXPLORER_TORCH_THREADS", "abc"), ("EXPLORER_TORCH_THREADS", "99999999999999999999"),
    ("EXPLORER_LEASE_TTL_S", "inf"), ("EXPLORER_LEASE_TTL_S", "nan"), ("EXPLORER_LEASE_TTL_S", "1e-6"),
    ("EXPLORER_LEASE_TTL_S", "1e308"),
])
def test_a_bad_environment_variable_is_one_line_naming_it(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingError) as caught:
        check_environment()
    assert str(caught.value).startswith(f"environment variable {name}=") and "expected" in str(caught.value)


def test_good_environment_values_and_defaults(monkeypatch):
    monkeypatch.setenv("EXPLORER_TORCH_THREADS", "3")
    monkeypatch.setenv("EXPLORER_LEASE_TTL_S", "20")
    assert (setting("EXPLORER_TORCH_THREADS"), setting("EXPLORER_LEASE_TTL_S")) == (3, 20.0)
    monkeypatch.delenv("EXPLORER_TORCH_THREADS")
    monkeypatch.delenv("EXPLORER_LEASE_TTL_S")
    assert (setting("EXPLORER_TORCH_THREADS"), setting("EXPLORER_LEASE_TTL_S")) == (None, None)


def test_a_driver_claims_for_the_variable_else_the_stores_heartbeat_lifetime(monkeypatch):
    from explorer.sweeps.tracking.leases import driver_ttl_s
    from store import DEFAULT_TTL_S, references

    monkeypatch.delenv("EXPLORER_LEASE_TTL_S", raising=False)
    assert driver_ttl_s() == DEFAULT_TTL_S == 60.0 and references.STALE_AFTER_S == DEFAULT_TTL_S
    assert driver_ttl_s(5.0) == 5.0
    monkeypatch.setenv("EXPLORER_LEASE_TTL_S", "20")
    assert driver_ttl_s() == 20.0 and driver_ttl_s(5.0) == 5.0


def test_every_command_refuses_a_bad_variable_first(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from explorer.cli import main

    monkeypatch.setenv("EXPLORER_LEASE_TTL_S", "inf")
    done = CliRunner().invoke(main, ["ls", "--store", str(tmp_path)])
    assert done.exit_code == 2 and done.output.startswith("error: environment variable EXPLORER_LEASE_TTL_S='inf'")


@pytest.mark.parametrize("value", ["inf", "nan", "1e308", "99999999999999999999"])
def test_s3_variables_are_bounded_above(monkeypatch, value):
    from store import Store, StoreError

    monkeypatch.setenv("EXPLORER_S3_REQUEST_TIMEOUT_S" if "." in value or value.isalpha() else "EXPLORER_S3_MAX_ATTEMPTS", value)
    with pytest.raises(StoreError, match="expected a positive (number|integer) of at most"):
        Store("s3://bucket/prefix")


def test_s3_variables_are_checked_on_a_local_store_too(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from explorer.cli import main

    monkeypatch.setenv("EXPLORER_S3_REQUEST_TIMEOUT_S", "1e308")
    done = CliRunner().invoke(main, ["ls", "--store", str(tmp_path)])
    assert done.exit_code == 2 and done.output.count("\n") == 1
    assert "EXPLORER_S3_REQUEST_TIMEOUT_S" in done.output


def _grid() -> pd.DataFrame:
    rows = [{"L": L, "M": M, "D": 8, "err": 1 / L + (8 / (L * M)) ** 0.5} for L in (2, 4, 8, 16) for M in (1, 4, 16)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("law", ["c1/0*L", "c1*sqrt(-L)"])
def test_a_law_undefined_on_the_grid_is_refused_before_fitting(law):
    from explorer.analysis.fitting import fit

    with pytest.raises(FitError, match=r"is not a finite positive number at 12 of 12 grid points .* no fit saved"):
        fit(_grid(), law, n_boot=0)


def test_the_bootstrap_count_is_bounded_before_its_array_exists():
    from click.testing import CliRunner

    from explorer.cli import main
    from explorer.analysis.fitting import fit

    with pytest.raises(FitError, match=f"n_boot must be from 0 to {MAX_RESAMPLES:,}"):
        fit(_grid(), "free", n_boot=1_000_000_000_000)
    done = CliRunner().invoke(main, ["fit", "--sweep", "x", "--bootstrap", "1000000000000"])
    assert done.exit_code == 2 and "1000000000000 is not in the range 0<=x<=100000" in done.output
    assert np.isfinite(fit(_grid(), "free", n_boot=2).r2_log)
