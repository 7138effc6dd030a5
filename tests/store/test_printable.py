"""Store-derived names print as one line (issue 25, item 10: a file name holding a newline
injected a fake line into `explorer check`)."""
from __future__ import annotations

import os

from click.testing import CliRunner

from store.layout import key_file
from store.printable import printable


def test_control_and_format_characters_are_escaped_and_the_rest_kept():
    assert printable("a\nb\x1b[31m\u202ec\\d é ✓ x") == "a\\nb\\x1b[31m\\u202ec\\\\d é ✓ x"
    assert printable("plain/path.parquet") == "plain/path.parquet"


def test_a_file_name_with_a_newline_cannot_forge_a_line_of_check(local_store):
    import store_testkit as kit

    key, rows, trial = kit.trial()
    local_store.write_trial("tiny", key, rows, trial)
    folder = os.path.dirname(key_file(local_store.files.root, "tiny", "metrics", key))
    forged = "x.parquet\nchecked 0 files, 0 trials, 0 metric rows: ok"
    with open(os.path.join(folder, forged), "w") as f:
        f.write("not parquet")
    from explorer.cli import main

    done = CliRunner().invoke(main, ["check", "--store", local_store.uri])
    assert done.exit_code == 1
    assert not any(line.startswith("checked 0 files") for line in done.output.splitlines())
    assert "x.parquet\\nchecked 0 files" in done.output
