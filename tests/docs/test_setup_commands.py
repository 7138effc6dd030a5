"""The README's two set-up commands (issue 31, items 10 and 11): `make demo` and `make test`
create the environment with the pinned CPU torch before the package, `make test` runs the fast
set, .ci/run runs the same target, and the test extra stays narrow."""
from __future__ import annotations

import os
import shutil
import subprocess
import tomllib

import pytest

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


def planned(target: str, venv: str) -> list[str]:
    """The commands `make -n TARGET VENV=venv` would run, one per line."""
    # a clean environment: under `make test` itself, MAKELEVEL would add "Entering directory" lines
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    done = subprocess.run(["make", "--no-print-directory", "-n", target, f"VENV={venv}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target, runs", [("test", "/v/bin/python -m pytest -q -n 2"), ("demo", "/v/bin/explorer demo")])
def test_make_creates_the_environment_torch_first_then_runs_the_target(target, runs):
    lines = planned(target, "/v")
    torch = next(i for i, line in enumerate(lines) if "pip install" in line and "torch==2.13.0" in line)
    package = next(i for i, line in enumerate(lines) if 'pip install -q -e ".[test]"' in line)
    assert lines[0] == "python3 -m venv /v" and torch < package < lines.index(runs) == len(lines) - 1, lines


def test_the_readme_and_ci_use_the_make_targets():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "pip install torch==2.13.0" in readme  # the manual steps stay documented
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test VENV=.ci-venv" in ci and "pytest -q -n 2" not in ci


def test_the_test_extra_does_not_pull_every_moto_service():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert not [r for r in extra if r.startswith("moto[") and "server" in r.split("]")[0]], extra
