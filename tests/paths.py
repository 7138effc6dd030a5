"""Where the repository is, for tests that read its files (examples, docs, the packages' sources).
One name here instead of ``Path(__file__).parents[n]`` in each test: that count breaks whenever a
test moves to another folder."""
from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# store_testkit's folder: spawned workers import it by its plain name, so tests put it on sys.path
STORE_TESTKIT = REPO_ROOT / "tests" / "store"
