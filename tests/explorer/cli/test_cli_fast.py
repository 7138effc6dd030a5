"""The CLI answers spec errors and --help without importing torch or Ray (nor the store's
pyarrow for a spec error): those imports cost seconds (4.5 s for a typo, 20 s under load)."""
from __future__ import annotations

import subprocess
import sys

import pytest

import store
from explorer.cli import store as cli_store
from explorer.report import tables

_PROBE = r"""
import sys
from click.testing import CliRunner
import explorer.cli
from explorer.config.spec import load_spec
from explorer.errors import SpecError
spec = load_spec({"name": "x", "grid": {"L": [4, 8], "M": [1], "D": [8]}, "train": {"dtype": "float32"}})
try:
    load_spec({"name": "x", "grid": {"L": [4], "M": [1], "D": [8]}, "train": {"stepz": 3}})
except SpecError as exc:
    assert "stepz" in str(exc)
from explorer.config.planning import plan
plan(spec)
result = CliRunner().invoke(explorer.cli.main, ["sweep", sys.argv[1]])
assert result.exit_code == 2 and "stepz" in result.output, result.output
result = CliRunner().invoke(explorer.cli.main, ["--help"])
assert result.exit_code == 0
print(sorted(m for m in ("torch", "ray", "pyarrow", "duckdb") if m in sys.modules))
"""


@pytest.mark.slow
def test_spec_errors_and_help_import_no_torch_ray_or_store(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[grid]\nL = [4]\nM = [1]\nD = [8]\n[train]\nstepz = 3\n')
    done = subprocess.run([sys.executable, "-c", _PROBE, str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    # plan() needs store.SCHEMA_VERSION (so pyarrow comes in); torch and Ray stay out
    assert "'torch'" not in done.stdout and "'ray'" not in done.stdout, done.stdout


@pytest.mark.slow
def test_a_spec_typo_imports_nothing_heavy(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[grid]\nL = [4]\nM = [1]\nD = [8]\n[train]\nstepz = 3\n')
    code = ("import sys\nfrom explorer.cli import main\n"
            "try:\n    main(['sweep', sys.argv[1]])\nexcept SystemExit as e:\n    code = e.code\n"
            "print(code, [m for m in ('torch', 'ray', 'pyarrow', 'duckdb', 'numpy') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "2 []", (done.stdout, done.stderr[-2000:])
    assert done.stderr.strip().startswith("error: spec error: [train] stepz: unknown key")


def test_the_cli_copies_of_store_kinds_and_table_formats_match():
    assert cli_store.DATA_KINDS == store.DATA_KINDS
    assert cli_store.FORMATS == tables.FORMATS
