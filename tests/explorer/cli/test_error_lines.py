"""Every error the CLI prints is one short visible line: click's own usage errors (a bad choice,
a missing argument) included, a value of any length cut with its length said, and control or
bidi characters from a path escaped, also on the lines that are answers rather than errors."""
from __future__ import annotations

from click.testing import CliRunner

from explorer.cli import main
from explorer.formatting import ERROR_LINE_CHARS, error_line, shown_ends


def _run(*args: str):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_a_bad_choice_is_one_line_naming_the_option_and_the_help(tmp_path):
    code, out = _run("sql", "SELECT 1", "--store", str(tmp_path), "--format", "xml")
    assert code == 2 and out.count("\n") == 1
    assert out.startswith("error: Invalid value for '--format': 'xml' is not one of")
    assert "--help')" in out and "Usage:" not in out


def test_a_missing_argument_is_one_line():
    code, out = _run("sweep")
    assert code == 2 and out.count("\n") == 1 and "Missing argument 'SPEC'" in out


def test_a_folder_given_as_the_spec_is_one_line(tmp_path):
    code, out = _run("sweep", str(tmp_path))
    assert code == 2 and out.count("\n") == 1 and out.startswith("error: ")


def test_a_long_sweep_name_is_cut_in_the_error_with_its_length(tmp_path):
    name = "x" * 30_000
    code, out = _run("status", "--store", str(tmp_path), "--sweep", name)
    assert code != 0 and out.count("\n") == 1
    assert len(out) < ERROR_LINE_CHARS + 200 and "characters)" in out


def test_a_where_filter_of_thirty_thousand_characters_is_one_short_line(tmp_path):
    where = "L = " + "1 + " * 7_500 + "'"
    code, out = _run("fit", "--store", str(tmp_path), "--sweep", "s", "--where", where)
    assert code != 0 and out.count("\n") == 1 and len(out) < ERROR_LINE_CHARS + 200


def test_ls_escapes_a_store_paths_control_and_bidi_characters(tmp_path):
    store = tmp_path / "a\x1b[2Jb\u202ec"
    code, out = _run("ls", "--store", str(store))
    assert code == 0 and "\x1b" not in out and "\u202e" not in out
    assert "\\u001b" in out and "\\u202e" in out


def test_error_line_keeps_a_short_line_and_cuts_a_long_one():
    assert error_line("no sweep 'a'") == "no sweep 'a'"
    cut = error_line("y" * 5_000)
    assert cut.startswith("y" * ERROR_LINE_CHARS) and cut.endswith("... (5,000 characters)")
    assert error_line("a\u202eb") == "a\\u202eb"


def test_shown_ends_keeps_the_start_and_the_end_of_a_long_message():
    message = "store s3://b/r cannot be listed: " + "x" * 2_000 + " Could not connect to server"
    cut = shown_ends(message, 300)
    assert cut.startswith("store s3://b/r cannot be listed: ") and cut.endswith("Could not connect to server")
    assert len(cut) < 340 and f"({len(message) - 300:,} characters)" in cut
    assert shown_ends("short", 300) == "short"
