"""docs/store.md documents every stored column and every store command."""
from __future__ import annotations


import pytest

from store import COLUMNS

from tests.paths import REPO_ROOT

DOC = (REPO_ROOT / "docs" / "store.md").read_text()


@pytest.mark.parametrize("kind", sorted(COLUMNS))
def test_every_column_has_a_row_in_the_schema_tables(kind):
    missing = [c.name for c in COLUMNS[kind] if f"| `{c.name}` |" not in DOC]
    assert not missing, f"docs/store.md lacks {kind} columns {missing}"


@pytest.mark.parametrize("command", ["explorer sql", "explorer check", "explorer compact", "explorer ls", "explorer rm",
                                     "explorer check --quarantine", "explorer check --repair"])
def test_every_store_command_is_documented_with_an_example(command):
    assert f"{command} " in DOC


def test_the_security_notes_cover_the_sql_sandbox_and_store_files():
    notes = (REPO_ROOT / "docs" / "security.md").read_text()
    assert "## SQL sandbox and store files" in notes
    for needle in ("extract_statements", "validate_filter", "--quarantine", "--repair", "enable_external_access"):
        assert needle in notes
