"""Every version number the docs quote is the code's: a doc that says ``SCHEMA_VERSION = 2`` or
"NUMERICS_VERSION 5" says what the code has now, not what it had when the doc was written."""
from __future__ import annotations

import re

import pytest

from store import SCHEMA_VERSION
from trials.config import NUMERICS_VERSION, REFERENCE_NUMERICS_VERSION

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
VERSIONS = {"SCHEMA_VERSION": SCHEMA_VERSION, "NUMERICS_VERSION": NUMERICS_VERSION,
            "REFERENCE_NUMERICS_VERSION": REFERENCE_NUMERICS_VERSION}
QUOTED = re.compile(r"\b(REFERENCE_NUMERICS_VERSION|NUMERICS_VERSION|SCHEMA_VERSION)\b`?(?: ?=)? ?`?(\d+)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_quoted_versions_are_the_codes(doc):
    wrong = [f"{name} {value} (code: {VERSIONS[name]})" for name, value in QUOTED.findall(doc.read_text())
             if int(value) != VERSIONS[name]]
    assert not wrong, f"{doc.name} quotes {wrong}"


def test_the_check_finds_the_quotes():
    assert QUOTED.findall("schema (`SCHEMA_VERSION = 2`) and NUMERICS_VERSION 5") == [
        ("SCHEMA_VERSION", "2"), ("NUMERICS_VERSION", "5")]
