"""Every metrics and trials row names the code that computed it (``code_fingerprint``), and a sweep
whose trials come from two versions of the code is named by `explorer fit` and `explorer report`
(issue 43, hole 2)."""
from __future__ import annotations

import hashlib

import pytest
from click.testing import CliRunner

import store.write as store_write
from explorer.cli import main
from store import Store, code_fingerprint, package_root

from tests.explorer.analysis_data import law_rows, write_to_store
from tests.paths import REPO_ROOT

OTHER = "0.0.9+aaaaaaaaaaaa"


def test_the_fingerprint_is_the_version_and_a_hash_of_the_three_packages_files():
    root = package_root()
    digest = hashlib.sha256()
    for package in ("trials", "store", "explorer"):
        for path in sorted(p for p in (root / package).rglob("*")
                           if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    version, _, hexdigest = code_fingerprint().partition("+")
    assert version == store_write.package_version() and hexdigest == digest.hexdigest()[:12]
    assert (root / "store" / "fingerprint.py").is_file() and root == REPO_ROOT


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A sweep of six trials: four computed by this code, two by another (``OTHER``)."""
    st = Store(tmp_path_factory.mktemp("mixed") / "store")
    law = lambda L, M, D: 1 / L + (D / (L * M)) ** 0.5  # noqa: E731
    rows = law_rows(law, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, steps=2, sweep="mixed")
    keys = sorted(rows["trial_key"].unique())
    write_to_store(rows[rows["trial_key"].isin(keys[:4])], st)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_write, "code_fingerprint", lambda: OTHER)
        write_to_store(rows[rows["trial_key"].isin(keys[4:])], st)
    write_to_store(law_rows(law, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, steps=2, sweep="one"), st)
    return st


def test_rows_record_the_code_that_wrote_them(mixed):
    got = mixed.query("SELECT sweep, code_fingerprint, count(*) AS n FROM trials GROUP BY ALL ORDER BY ALL").to_pylist()
    ours = code_fingerprint()
    assert {(r["sweep"], r["code_fingerprint"], r["n"]) for r in got} == {("mixed", OTHER, 2), ("mixed", ours, 4),
                                                                          ("one", ours, 6)}
    metrics = mixed.query("SELECT DISTINCT code_fingerprint FROM metrics WHERE sweep = 'one'").to_pylist()
    assert metrics == [{"code_fingerprint": ours}]


def test_fit_names_a_sweep_computed_by_two_codes_and_not_one_computed_by_one(mixed):
    args = ["fit", "--form", "free_rss", "--no-save", "--bootstrap", "5", "--store", mixed.uri, "--sweep"]
    done = CliRunner().invoke(main, args + ["mixed"])
    assert done.exit_code == 0, done.output
    warned = [line for line in done.output.splitlines() if "versions of the code" in line]
    assert warned == [f"warning: sweep 'mixed' holds trials computed by 2 versions of the code: {code_fingerprint()} "
                      f"(4 trials), {OTHER} (2 trials); its numbers may not be comparable (`explorer sql \"SELECT "
                      "code_fingerprint, trial_key FROM trials\"` lists them; `explorer rm` and a rerun recompute "
                      "them with one code)"]
    done = CliRunner().invoke(main, args + ["one"])
    assert done.exit_code == 0 and "versions of the code" not in done.output


@pytest.mark.slow
def test_report_names_a_sweep_computed_by_two_codes(mixed, tmp_path):
    done = CliRunner().invoke(main, ["report", "--sweep", "mixed", "--store", mixed.uri, "--out", str(tmp_path / "r"),
                                     "--form", "free_rss", "--bootstrap", "5", "--no-save"])
    assert done.exit_code == 0, done.output
    assert f"warning: sweep 'mixed' holds trials computed by 2 versions of the code: {code_fingerprint()} " in done.stderr
