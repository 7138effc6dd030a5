"""The test tree mirrors the packages: the tests of ``explorer/analysis/fitting/`` live in
``tests/explorer/analysis/fitting/``, so a newcomer finds a wing's tests where the wing is, and a
test file added flat beside the others is caught here instead of growing a flat folder again.

- every ``test_*.py`` under ``tests/explorer/``, ``tests/store/`` and ``tests/trials/`` sits in a
  folder that exists under the package; at the top of ``tests/explorer/`` only the files listed in
  ``EXPLORER_TOP`` (tests of explorer's own top modules, and rules across every wing);
- ``tests/`` holds only the folders and files listed here: the packages' mirrors, the whole-study
  tests (``end_to_end/``), the docs checks (``docs/``) and the benchmarks' (``benchmarks/``);
- every folder of tests is a package (``__init__.py``), so tests import each other absolutely
  (``tests.explorer.analysis_data``) and two ``test_coordcheck.py`` in two folders do not collide.
"""
from __future__ import annotations

import pathlib

from tests.paths import REPO_ROOT

MIRRORED = ("explorer", "store", "trials")
# the test files at the top of tests/explorer/, each with what it tests
EXPLORER_TOP = {
    "test_imports.py": "the import rules of every package and wing",
    "test_import_circles.py": "no import circle across the wings",
    "test_input_bounds.py": "explorer/bounds.py",
    "test_demo_fit_lines.py": "explorer/demo.py",
}
TOP_FOLDERS = {*MIRRORED, "end_to_end", "docs", "benchmarks"}
TOP_FILES = {"__init__.py", "conftest.py", "paths.py", "naive.py", "import_graph.py", "test_mirror.py"}


def misplaced(tests: pathlib.Path, root: pathlib.Path) -> list[str]:
    """The test files of ``tests/<package>/...`` whose folder ``<package>/...`` does not exist
    under ``root``, and those at the top of ``tests/explorer/`` that ``EXPLORER_TOP`` does not list."""
    bad = []
    for package in MIRRORED:
        for path in sorted((tests / package).rglob("test_*.py")):
            folder = path.parent.relative_to(tests)
            if not (root / folder).is_dir():
                bad.append(f"{path.relative_to(tests)}: no folder {folder} under the repository")
            elif package == "explorer" and folder == pathlib.Path("explorer") and path.name not in EXPLORER_TOP:
                bad.append(f"{path.relative_to(tests)}: move it to the folder of the wing it tests")
    return bad


def strays(tests: pathlib.Path) -> list[str]:
    """What sits at the top of ``tests/`` without being listed here."""
    return sorted(p.name for p in tests.iterdir() if not p.name.startswith(".") and p.name != "__pycache__"
                  and p.name not in (TOP_FOLDERS if p.is_dir() else TOP_FILES))


def test_every_test_file_sits_in_the_folder_of_what_it_tests():
    assert not misplaced(REPO_ROOT / "tests", REPO_ROOT), misplaced(REPO_ROOT / "tests", REPO_ROOT)


def test_the_top_of_tests_holds_only_the_listed_folders_and_files():
    assert not strays(REPO_ROOT / "tests"), strays(REPO_ROOT / "tests")


def test_every_folder_of_tests_is_a_package():
    folders = {p.parent for p in (REPO_ROOT / "tests").rglob("*.py")}
    assert not sorted(str(f.relative_to(REPO_ROOT)) for f in folders if not (f / "__init__.py").is_file())


def test_the_top_level_list_names_files_that_exist():
    assert {p.name for p in (REPO_ROOT / "tests" / "explorer").glob("test_*.py")} >= set(EXPLORER_TOP)


def test_the_checks_see_a_flat_file_a_folder_of_no_wing_and_a_stray(tmp_path):
    root = tmp_path
    for folder in ("explorer/sweeps", "store", "trials"):
        (root / folder).mkdir(parents=True)
    tests = root / "tests"
    for name in ("explorer/test_imports.py", "explorer/test_sweep.py", "explorer/sweeps/test_run.py",
                 "explorer/plots/test_chart.py", "store/test_schema.py", "misc/helper.py", "test_loose.py"):
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text("")
    assert misplaced(tests, root) == [
        "explorer/plots/test_chart.py: no folder explorer/plots under the repository",
        "explorer/test_sweep.py: move it to the folder of the wing it tests"]
    assert strays(tests) == ["misc", "test_loose.py"]
