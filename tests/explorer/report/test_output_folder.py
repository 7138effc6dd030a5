"""``--out`` writes stay in the output folder (issue 25, item 9): a link planted at
``DIR/index.html`` is replaced, not written through; a file the explorer did not write is
refused unless ``--force``; a report on a read-only store is written without saving its fits."""
from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

from explorer.cli import main
from explorer.report.output_folder import MANIFEST, OutputError, OutputFolder
from store import Store

from tests.explorer.analysis_data import law_rows, write_to_store


@pytest.fixture(scope="module")
def law_store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("out") / "store")
    law = lambda L, M, D: 1 / L + (D / (L * M)) ** 0.5  # noqa: E731
    write_to_store(law_rows(law, Ls=(2, 4, 8), Ms=(1, 4), seeds=2, steps=2, sweep="law"), store)
    return store


def _report(store, out, *extra):
    return CliRunner().invoke(main, ["report", "--sweep", "law", "--store", store.uri, "--out", str(out),
                                     "--bootstrap", "20", *extra])


@pytest.mark.slow
def test_a_link_at_index_html_is_replaced_and_its_target_unchanged(tmp_path, law_store):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    out = tmp_path / "report"
    out.mkdir()
    (out / "index.html").symlink_to(precious)
    refused = _report(law_store, out)
    assert refused.exit_code == 2 and "index.html exists and was not written by explorer" in refused.output
    assert "--force" in refused.output and len(refused.output.splitlines()) == 1
    done = _report(law_store, out, "--force", "--no-save")
    assert done.exit_code == 0, done.output
    assert precious.read_text() == "keep me"
    assert not (out / "index.html").is_symlink() and "<html" in (out / "index.html").read_text().lower()


@pytest.mark.slow
def test_a_second_report_into_the_same_folder_replaces_its_own_files(tmp_path, law_store):
    out = tmp_path / "report"
    assert _report(law_store, out, "--no-save").exit_code == 0
    assert {"index.html", "fits.csv"} <= OutputFolder(out).owned
    again = _report(law_store, out, "--no-save")
    assert again.exit_code == 0, again.output
    (out / "notes.txt").write_text("mine")
    assert _report(law_store, out, "--no-save").exit_code == 0 and (out / "notes.txt").read_text() == "mine"


def test_someone_elses_file_is_refused_before_any_work(tmp_path, law_store):
    out = tmp_path / "report"
    out.mkdir()
    (out / "fits.csv").write_text("my own table")
    done = _report(law_store, out)
    assert done.exit_code == 2 and "fits.csv exists and was not written by explorer" in done.output
    assert (out / "fits.csv").read_text() == "my own table" and not (out / "index.html").exists()


def test_a_linked_subfolder_is_never_written_through(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "charts").symlink_to(elsewhere)
    with pytest.raises(OutputError, match="charts is a symbolic link"):
        OutputFolder(out, force=True).write("charts/a.svg", "<svg/>")
    assert list(elsewhere.iterdir()) == []


def test_written_files_are_recorded_and_nothing_temporary_is_left(tmp_path):
    folder = OutputFolder(tmp_path / "o")
    folder.write("a/b.txt", "x")
    assert sorted(os.listdir(tmp_path / "o")) == [MANIFEST, "a"] and os.listdir(tmp_path / "o" / "a") == ["b.txt"]
    assert OutputFolder(tmp_path / "o").owned == {"a/b.txt"}


@pytest.mark.slow
def test_a_report_on_a_read_only_store_is_written_with_one_line_about_the_fits(tmp_path, law_store):
    if os.geteuid() == 0:  # root writes through permissions: make the store's write fail instead
        import store.files as files_module

        original = files_module.Files.put

        def read_only(self, path, data):
            raise self.write_error(path, OSError(30, "Read-only file system"))

        files_module.Files.put = read_only
    else:
        for root, dirs, _ in os.walk(law_store.files.root):
            os.chmod(root, stat.S_IRUSR | stat.S_IXUSR)
    try:
        done = _report(law_store, tmp_path / "report")
    finally:
        if os.geteuid() == 0:
            files_module.Files.put = original
        else:
            for root, dirs, _ in os.walk(law_store.files.root):
                os.chmod(root, stat.S_IRWXU)
    assert done.exit_code == 0, done.output
    notes = [line for line in done.output.splitlines() if line.startswith("note: fits not saved")]
    assert len(notes) == 1 and "Read-only file system" in notes[0]
    assert (tmp_path / "report" / "index.html").exists()
